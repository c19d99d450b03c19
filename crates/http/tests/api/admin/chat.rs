//! Team chat (issue 21) over the JSON API: the permission gate, direct threads (dedupe by
//! members, members only), item threads (access follows the item's read), messages (author-only
//! edits, mentions, bounds, escaping), reactions, pins, read state and unread counts, archive,
//! participants, attachments (single and chunked, resumable), and the activity log.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::access_support::{role_with, signed_in_with};
use super::{PASSWORD, Session, create_user};
use crate::support::{TestApp, blog};

const CHAT_AND_ITEMS: [&str; 2] = ["can-show-chat", "can-show-collections"];

/// A signed-in user whose one role holds `permissions`: its session and id.
async fn member(app: &TestApp, email: &str, permissions: &[&str]) -> (Session, i64) {
    let role = format!("holds-{email}");
    role_with(app, &role, permissions).await;
    let id = create_user(&app.state, email, email, &[&role]).await;
    (app.sign_in(email, PASSWORD).await, id)
}

/// Starts a direct thread of `session` with `users`; answers status and thread.
async fn start_direct(
    app: &TestApp,
    session: &Session,
    users: &[i64],
    groups: &[i64],
) -> (u16, Value) {
    let res = app
        .admin(
            Method::POST,
            "/chat/threads",
            Some(session),
            Some(json!({"kind": "direct", "user_ids": users, "group_ids": groups})),
        )
        .await;
    (res.status.as_u16(), res.json())
}

async fn post(app: &TestApp, session: &Session, chat: &str, body: Value) -> (u16, Value) {
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/messages"),
            Some(session),
            Some(body),
        )
        .await;
    (res.status.as_u16(), res.json())
}

struct People {
    ada: Session,
    bob: Session,
    carl: Session,
    ada_id: i64,
    bob_id: i64,
    carl_id: i64,
}

async fn people(app: &TestApp) -> People {
    let (ada, ada_id) = member(app, "ada@example.com", &CHAT_AND_ITEMS).await;
    let (bob, bob_id) = member(app, "bob@example.com", &CHAT_AND_ITEMS).await;
    let (carl, carl_id) = member(app, "carl@example.com", &CHAT_AND_ITEMS).await;
    People {
        ada,
        bob,
        carl,
        ada_id,
        bob_id,
        carl_id,
    }
}

#[actix_web::test]
async fn every_chat_route_needs_can_show_chat() {
    let app = TestApp::new(blog()).await;
    let outsider = signed_in_with(&app, "out@example.com", &["can-show-collections"]).await;
    for (method, path, body) in [
        (Method::GET, "/chat", None),
        (Method::GET, "/chat/threads", None),
        (Method::GET, "/chat/unread-count", None),
        (Method::GET, "/chat/options/users", None),
        (
            Method::POST,
            "/chat/threads",
            Some(json!({"kind": "direct", "user_ids": [1]})),
        ),
        (Method::GET, "/collections/articles/items/4/chat", None),
    ] {
        let res = app
            .admin(method.clone(), path, Some(&outsider), body.clone())
            .await;
        assert_eq!(res.status, 403, "{method} {path}");
        let res = app.admin(method.clone(), path, None, body).await;
        assert_eq!(res.status, 401, "{method} {path} without a session");
    }
}

#[actix_web::test]
async fn a_direct_thread_is_deduplicated_by_its_members_creator_included() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let ada_id = p.ada_id;
    let (status, first) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    assert_eq!(status, 201, "{first}");
    let thread = &first["data"];
    assert_eq!(thread["kind"], "direct");
    assert_eq!(thread["title"], "bob@example.com");
    let members: Vec<i64> = thread["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert!(
        members.contains(&ada_id) && members.contains(&p.bob_id),
        "{thread}"
    );
    // Bob starting the same conversation gets the same thread, not a new one.
    let (status, again) = start_direct(&app, &p.bob, &[ada_id], &[]).await;
    assert_eq!(status, 200);
    assert_eq!(again["data"]["id"], thread["id"]);
    // Another member set is another thread; nobody alone; unknown people are 422.
    let (status, three) = start_direct(&app, &p.ada, &[p.bob_id, p.carl_id], &[]).await;
    assert_eq!(status, 201);
    assert_ne!(three["data"]["id"], thread["id"]);
    let (status, alone) = start_direct(&app, &p.ada, &[], &[]).await;
    assert_eq!(status, 422, "{alone}");
    let (status, unknown) = start_direct(&app, &p.ada, &[99_999], &[]).await;
    assert_eq!(status, 422);
    assert!(unknown["errors"]["user_ids"].is_array(), "{unknown}");
}

#[actix_web::test]
async fn a_direct_thread_is_its_members_alone_group_members_included() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    for session in [&p.carl, &root] {
        let res = app
            .admin(Method::GET, &format!("/chat/{chat}"), Some(session), None)
            .await;
        assert_eq!(
            res.status, 404,
            "an outsider does not learn the thread exists"
        );
        let (status, _) = post(&app, session, &chat, json!({"body": "hi"})).await;
        assert_eq!(status, 404);
    }
    // Carl joins through a group; then the group is taken out and so is Carl.
    let group = vellum_storage::groups::create_group(&app.db.conn, "team")
        .await
        .unwrap()
        .id;
    vellum_storage::groups::add_user_to_group(&app.db.conn, group, p.carl_id)
        .await
        .unwrap();
    app.state.invalidate().await;
    let res = app
        .admin(
            Method::PUT,
            &format!("/chat/{chat}/participants"),
            Some(&p.ada),
            Some(json!({"user_ids": [p.bob_id], "group_ids": [group]})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.json());
    let res = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.carl), None)
        .await;
    assert_eq!(res.status, 200);
    // Only the creator takes people out.
    let res = app
        .admin(
            Method::PUT,
            &format!("/chat/{chat}/participants"),
            Some(&p.bob),
            Some(json!({"user_ids": [], "group_ids": []})),
        )
        .await;
    assert_eq!(res.status, 403);
    let res = app
        .admin(
            Method::PUT,
            &format!("/chat/{chat}/participants"),
            Some(&p.ada),
            Some(json!({"user_ids": [p.bob_id]})),
        )
        .await;
    assert_eq!(res.status, 200);
    let res = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.carl), None)
        .await;
    assert_eq!(res.status, 404);
}

#[actix_web::test]
async fn only_the_author_edits_or_deletes_and_both_are_logged() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let (status, posted) = post(
        &app,
        &p.ada,
        &chat,
        json!({"body": "  hello <b>world</b>  "}),
    )
    .await;
    assert_eq!(status, 201, "{posted}");
    let message = &posted["data"];
    assert_eq!(message["body"], "hello <b>world</b>");
    assert_eq!(message["html"], "hello &lt;b&gt;world&lt;/b&gt;");
    let path = format!("/chat/{chat}/messages/{}", message["id"]);
    let res = app
        .admin(
            Method::PUT,
            &path,
            Some(&p.bob),
            Some(json!({"body": "hacked"})),
        )
        .await;
    assert_eq!(res.status, 403);
    let res = app.admin(Method::DELETE, &path, Some(&p.bob), None).await;
    assert_eq!(res.status, 403);
    let res = app
        .admin(
            Method::PUT,
            &path,
            Some(&p.ada),
            Some(json!({"body": "hello"})),
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["body"], "hello");
    assert!(res.json()["data"]["edited_at"].is_string());
    let res = app.admin(Method::DELETE, &path, Some(&p.ada), None).await;
    assert_eq!(res.status, 204);
    let res = app.admin(Method::DELETE, &path, Some(&p.ada), None).await;
    assert_eq!(res.status, 404);

    let logged = vellum_storage::activity::list(
        &app.db.conn,
        &vellum_storage::activity::ActivityFilter::default(),
        1,
        50,
    )
    .await
    .unwrap();
    let chat_entries: Vec<_> = logged
        .items
        .iter()
        .filter(|a| a.log_name == "chat")
        .collect();
    let posted = chat_entries
        .iter()
        .find(|a| a.event == "chat_message")
        .unwrap();
    assert_eq!(posted.properties["chat_id"], chat.as_str());
    assert_eq!(posted.properties["body_preview"], "hello <b>world</b>");
    assert_eq!(posted.properties["attachment_count"], 0);
    assert_eq!(posted.properties["mention_count"], 0);
    assert!(posted.properties["reply_to_id"].is_null());
    let deleted = chat_entries
        .iter()
        .find(|a| a.event == "chat_message_deleted")
        .unwrap();
    assert_eq!(deleted.properties["message_id"], message["id"]);
    assert_eq!(deleted.properties["body_preview"], "hello");
}

#[actix_web::test]
async fn bodies_and_mentions_are_checked() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, one_to_one) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let one_to_one = one_to_one["data"]["id"].as_str().unwrap().to_owned();
    let (_, group_chat) = start_direct(&app, &p.ada, &[p.bob_id, p.carl_id], &[]).await;
    let group_chat = group_chat["data"]["id"].as_str().unwrap().to_owned();
    for bad in [
        json!({"body": ""}),
        json!({"body": "x".repeat(10_001)}),
        json!({"body": "bell\u{7}"}),
        json!({"body": 5}),
        json!({"body": "hi", "reply_to_id": 999_999}),
        json!({"body": "hi", "attachment_ids": ["00000000-0000-4000-8000-000000000000"]}),
    ] {
        let (status, body) = post(&app, &p.ada, &one_to_one, bad.clone()).await;
        assert_eq!(status, 422, "{bad}: {body}");
    }
    let (status, body) = post(
        &app,
        &p.ada,
        &one_to_one,
        json!({"body": "@bob", "mentioned_user_ids": [p.bob_id]}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["errors"]["mentioned_user_ids"].is_array());
    let (status, body) = post(
        &app,
        &p.ada,
        &group_chat,
        json!({"body": "hi @bob@example.com", "mentioned_user_ids": [p.bob_id]}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["mentions"]["users"][0]["id"], p.bob_id);
    assert!(
        body["data"]["html"]
            .as_str()
            .unwrap()
            .contains("<span class=\"mention\">@bob@example.com</span>")
    );
    // A reply quotes its message.
    let reply = post(
        &app,
        &p.bob,
        &group_chat,
        json!({"body": "yes", "reply_to_id": body["data"]["id"]}),
    )
    .await;
    assert_eq!(reply.0, 201);
    assert_eq!(reply.1["data"]["reply_to"]["id"], body["data"]["id"]);
    // Someone outside the thread cannot be mentioned.
    let outsider = create_user(&app.state, "dan@example.com", "Dan", &[]).await;
    let (status, _) = post(
        &app,
        &p.ada,
        &group_chat,
        json!({"body": "hi", "mentioned_user_ids": [outsider]}),
    )
    .await;
    assert_eq!(status, 422);
}

#[actix_web::test]
async fn unread_counts_read_marks_and_the_archive() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    for text in ["one", "two"] {
        assert_eq!(
            post(&app, &p.bob, &chat, json!({"body": text})).await.0,
            201
        );
    }
    let unread = app
        .admin(Method::GET, "/chat/unread-count", Some(&p.ada), None)
        .await
        .json();
    assert_eq!(unread["data"]["total"], 2, "{unread}");
    assert_eq!(unread["data"]["private"], 2);
    assert_eq!(unread["data"]["chats"][&chat], 2);
    let bobs = app
        .admin(Method::GET, "/chat/unread-count", Some(&p.bob), None)
        .await
        .json();
    assert_eq!(
        bobs["data"]["total"], 0,
        "the author has read its own messages"
    );
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/read"),
            Some(&p.ada),
            Some(json!({})),
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["unread"], 0);
    let unread = app
        .admin(Method::GET, "/chat/unread-count", Some(&p.ada), None)
        .await
        .json();
    assert_eq!(unread["data"]["total"], 0);

    // Archive: gone from the private tab, listed with archived=1, back on a new message.
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/archive"),
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert!(res.json()["data"]["archived_at"].is_string());
    let ids = |page: Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let private = app
        .admin(Method::GET, "/chat/threads?tab=private", Some(&p.ada), None)
        .await;
    assert!(!ids(private.json()).contains(&chat));
    let archived = app
        .admin(Method::GET, "/chat/threads?archived=1", Some(&p.ada), None)
        .await;
    assert_eq!(ids(archived.json()), vec![chat.clone()]);
    assert_eq!(
        post(&app, &p.bob, &chat, json!({"body": "back"})).await.0,
        201
    );
    let private = app
        .admin(Method::GET, "/chat/threads?tab=private", Some(&p.ada), None)
        .await;
    assert_eq!(ids(private.json()), vec![chat.clone()]);
}

#[actix_web::test]
async fn item_threads_follow_the_item_read_and_refuse_the_archive() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let chat_only = signed_in_with(&app, "chatter@example.com", &["can-show-chat"]).await;
    let res = app
        .admin(
            Method::GET,
            "/collections/articles/items/4/chat",
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert!(res.json()["data"].is_null(), "a GET starts nothing");
    let res = app
        .admin(
            Method::POST,
            "/collections/articles/items/4/chat/messages",
            Some(&p.ada),
            Some(json!({"body": "first"})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.json());
    let chat = res.json()["data"]["chat_id"].as_str().unwrap().to_owned();
    let res = app
        .admin(
            Method::GET,
            "/collections/articles/items/4/chat",
            Some(&p.bob),
            None,
        )
        .await;
    assert_eq!(res.json()["data"]["thread"]["id"], chat.as_str());
    assert_eq!(res.json()["data"]["thread"]["item"]["id"], 4);
    assert_eq!(res.json()["data"]["messages"][0]["body"], "first");
    let res = app
        .admin(
            Method::GET,
            &format!("/chat/{chat}"),
            Some(&chat_only),
            None,
        )
        .await;
    assert_eq!(res.status, 403, "the item's read is needed");
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/archive"),
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 422);
    let res = app
        .admin(
            Method::POST,
            "/collections/articles/items/999/chat/messages",
            Some(&p.ada),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(res.status, 404);
    // The collection tab lists it for users who may read items.
    let res = app
        .admin(
            Method::GET,
            "/chat/threads?tab=collection",
            Some(&p.bob),
            None,
        )
        .await;
    assert_eq!(res.json()["data"][0]["id"], chat.as_str());
    // Follow the collection: Bob counts its threads' unread messages.
    let res = app
        .admin(
            Method::PUT,
            "/collections/articles/chat/notify",
            Some(&p.bob),
            Some(json!({})),
        )
        .await;
    assert_eq!(res.json()["data"]["notify"], true);
    let unread = app
        .admin(Method::GET, "/chat/unread-count", Some(&p.bob), None)
        .await
        .json();
    assert_eq!(unread["data"]["collection"], 1, "{unread}");
    // A deleted item takes its thread out of reach.
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = app
        .admin(
            Method::DELETE,
            "/collections/articles/items/4",
            Some(&root),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let res = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.ada), None)
        .await;
    assert_eq!(res.status, 404);
}

#[actix_web::test]
async fn reactions_toggle_and_pins_toggle() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let (_, posted) = post(&app, &p.ada, &chat, json!({"body": "vote"})).await;
    let message = format!("/chat/{chat}/messages/{}", posted["data"]["id"]);
    let react = |session: Session, emoji: &'static str| {
        let app = &app;
        let path = format!("{message}/reactions");
        async move {
            app.admin(
                Method::POST,
                &path,
                Some(&session),
                Some(json!({"emoji": emoji})),
            )
            .await
        }
    };
    let res = react(p.bob.clone(), "👍").await;
    assert_eq!(res.json()["data"]["added"], true);
    assert_eq!(
        res.json()["data"]["reactions"],
        json!([{"emoji": "👍", "count": 1, "user_ids": [p.bob_id]}])
    );
    let res = react(p.bob.clone(), "👍").await;
    assert_eq!(res.json()["data"]["added"], false);
    assert_eq!(res.json()["data"]["reactions"], json!([]));
    for bad in ["", "a b", "<b>", "0123456789012345678901234567890123"] {
        let res = react(p.bob.clone(), bad).await;
        assert_eq!(res.status, 422, "{bad:?}");
    }
    let res = app
        .admin(Method::POST, &format!("{message}/pin"), Some(&p.bob), None)
        .await;
    assert!(res.json()["data"]["pinned_at"].is_string());
    let view = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.ada), None)
        .await
        .json();
    assert_eq!(view["data"]["open"]["pinned"][0]["body"], "vote");
    let res = app
        .admin(Method::POST, &format!("{message}/pin"), Some(&p.bob), None)
        .await;
    assert!(res.json()["data"]["pinned_at"].is_null());
}

async fn upload(
    app: &TestApp,
    session: &Session,
    chat: &str,
    name: &str,
    bytes: &[u8],
) -> (u16, Value) {
    super::post_file(
        app,
        session,
        &format!("/chat/{chat}/attachments"),
        name,
        bytes,
    )
    .await
}

#[actix_web::test]
async fn attachments_are_sent_with_a_message_and_read_by_members_only() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let (status, attachment) = upload(&app, &p.ada, &chat, "notes.txt", b"hello chat").await;
    assert_eq!(status, 201, "{attachment}");
    let id = attachment["data"]["id"].as_str().unwrap().to_owned();
    // Bob cannot send Ada's upload.
    let (status, _) = post(&app, &p.bob, &chat, json!({"attachment_ids": [id]})).await;
    assert_eq!(status, 422);
    let (status, sent) = post(&app, &p.ada, &chat, json!({"attachment_ids": [id]})).await;
    assert_eq!(status, 201, "{sent}");
    assert_eq!(sent["data"]["attachments"][0]["name"], "notes.txt");
    // A message with an attachment may lose its text; one without may not.
    let path = format!("/chat/{chat}/messages/{}", sent["data"]["id"]);
    let res = app
        .admin(Method::PUT, &path, Some(&p.ada), Some(json!({"body": ""})))
        .await;
    assert_eq!(res.status, 200, "{}", res.json());
    let (_, plain) = post(&app, &p.ada, &chat, json!({"body": "text"})).await;
    let plain_path = format!("/chat/{chat}/messages/{}", plain["data"]["id"]);
    let res = app
        .admin(
            Method::PUT,
            &plain_path,
            Some(&p.ada),
            Some(json!({"body": " "})),
        )
        .await;
    assert_eq!(res.status, 422);
    let url = sent["data"]["attachments"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = app.admin(Method::GET, &url, Some(&p.bob), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(&res.body[..], b"hello chat");
    let res = app.admin(Method::GET, &url, Some(&p.carl), None).await;
    assert_eq!(res.status, 404);
    // The project cap applies.
    vellum_storage::project::set_setting(&app.db.conn, "chat_max_upload_bytes", json!(4))
        .await
        .unwrap();
    app.state.invalidate().await;
    let (status, body) = upload(&app, &p.ada, &chat, "big.bin", b"12345").await;
    assert_eq!(status, 422, "{body}");
}

#[actix_web::test]
async fn a_chunked_upload_resumes_with_the_missing_chunks() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    // No project cap (null): the server's ceiling applies, so a file past the 10 MiB default fits.
    vellum_storage::project::set_setting(&app.db.conn, "chat_max_upload_bytes", Value::Null)
        .await
        .unwrap();
    app.state.invalidate().await;
    let chunk = usize::try_from(vellum_app::chat::CHUNK_SIZE).unwrap();
    let bytes: Vec<u8> = (0..chunk * 2 + 100).map(|i| (i % 251) as u8).collect();
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/uploads"),
            Some(&p.ada),
            Some(json!({"name": "video.bin", "size": bytes.len()})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.json());
    let upload = res.json()["data"].clone();
    assert_eq!(upload["missing"], json!([0, 1, 2]));
    let base = format!("/chat/{chat}/uploads/{}", upload["id"].as_str().unwrap());
    let put = |index: usize, body: Vec<u8>| {
        let app = &app;
        let path = format!("{base}/chunks/{index}");
        let cookie = p.ada.cookie.clone();
        async move {
            app.send(
                TestApp::request(Method::PUT, &path)
                    .insert_header(("accept", "application/json"))
                    .insert_header(("cookie", cookie))
                    .insert_header(("content-type", "application/octet-stream"))
                    .set_payload(body),
            )
            .await
        }
    };
    assert_eq!(put(0, bytes[..chunk].to_vec()).await.status, 200);
    assert_eq!(put(2, bytes[chunk * 2..].to_vec()).await.status, 200);
    assert_eq!(
        put(1, bytes[..10].to_vec()).await.status,
        422,
        "a chunk has its exact length"
    );
    assert_eq!(put(3, vec![0]).await.status, 404);
    let res = app
        .admin(
            Method::POST,
            &format!("{base}/complete"),
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 422, "a chunk is missing");
    let status = app
        .admin(Method::GET, &base, Some(&p.ada), None)
        .await
        .json();
    assert_eq!(status["data"]["missing"], json!([1]));
    let res = app.admin(Method::GET, &base, Some(&p.bob), None).await;
    assert_eq!(res.status, 404, "an upload is its uploader's");
    assert_eq!(put(1, bytes[chunk..chunk * 2].to_vec()).await.status, 200);
    let res = app
        .admin(
            Method::POST,
            &format!("{base}/complete"),
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.json());
    let attachment = res.json()["data"].clone();
    assert_eq!(attachment["size"], bytes.len());
    let res = app
        .admin(
            Method::GET,
            attachment["url"].as_str().unwrap(),
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.body.len(), bytes.len());
    assert!(res.body[..] == bytes[..], "the joined bytes are the file");
    let res = app.admin(Method::GET, &base, Some(&p.ada), None).await;
    assert_eq!(res.status, 404, "a completed upload is gone");
    // A size past the cap is refused up front.
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/uploads"),
            Some(&p.ada),
            Some(json!({"name": "huge.bin", "size": 100_000_000_000_u64})),
        )
        .await;
    assert_eq!(res.status, 422);
}

#[actix_web::test]
async fn the_pickers_show_names_only_and_items_only_to_readers() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let chat_only = signed_in_with(&app, "chatter@example.com", &["can-show-chat"]).await;
    let res = app
        .admin(
            Method::GET,
            "/chat/options/users?search=BOB",
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.json()["data"],
        json!([{"type": "user", "id": p.bob_id, "label": "bob@example.com"}])
    );
    let res = app
        .admin(
            Method::GET,
            "/chat/options/collections",
            Some(&chat_only),
            None,
        )
        .await;
    assert_eq!(res.json()["data"], json!([]));
    let res = app
        .admin(
            Method::GET,
            "/chat/options/items?collection=authors",
            Some(&chat_only),
            None,
        )
        .await;
    assert_eq!(res.status, 403);
    let res = app
        .admin(
            Method::GET,
            "/chat/options/item-picker?collection=articles",
            Some(&p.ada),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.json()["fields"],
        json!([{"name": "cover", "type": "image"}])
    );
    let res = app
        .admin(Method::GET, "/chat/options/nope", Some(&p.ada), None)
        .await;
    assert_eq!(res.status, 404);
}

#[actix_web::test]
async fn an_attachment_is_saved_to_the_files_or_added_to_a_field_with_the_users_permissions() {
    let app = TestApp::new(blog()).await;
    let (writer, _) = member(
        &app,
        "writer@example.com",
        &[
            "can-show-chat",
            "can-show-collections",
            "can-create-files",
            "can-edit-collections",
        ],
    )
    .await;
    let (reader, reader_id) = member(&app, "reader@example.com", &CHAT_AND_ITEMS).await;
    let (_, started) = start_direct(&app, &writer, &[reader_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let png = crate::support::png(4, 3);
    let (_, uploaded) = upload(&app, &writer, &chat, "cover.png", &png).await;
    let attachment = uploaded["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(uploaded["data"]["mime_type"], "image/png");
    let (status, _) = post(
        &app,
        &writer,
        &chat,
        json!({"attachment_ids": [attachment]}),
    )
    .await;
    assert_eq!(status, 201);
    let base = format!("/chat/{chat}/attachments/{attachment}");

    // The reader may see the thread, not create files or edit items.
    let res = app
        .admin(
            Method::POST,
            &format!("{base}/save"),
            Some(&reader),
            Some(json!({})),
        )
        .await;
    assert_eq!(res.status, 403);
    let res = app
        .admin(
            Method::POST,
            &format!("{base}/add-to-field"),
            Some(&reader),
            Some(json!({"collection": "articles", "item_id": 4, "field": "cover"})),
        )
        .await;
    assert_eq!(res.status, 403);

    let res = app
        .admin(
            Method::POST,
            &format!("{base}/save"),
            Some(&writer),
            Some(json!({"filename": "kept.png"})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.json());
    let file = res.json()["data"].clone();
    assert_eq!(file["filename"], "kept.png");
    assert_eq!(file["mime_type"], "image/png");
    assert_eq!(file["filesize"], png.len(), "{file}");

    let res = app
        .admin(
            Method::POST,
            &format!("{base}/add-to-field"),
            Some(&writer),
            Some(json!({"collection": "articles", "item_id": 4, "field": "title"})),
        )
        .await;
    assert_eq!(res.status, 422, "a text field holds no files");
    let res = app
        .admin(
            Method::POST,
            &format!("{base}/add-to-field"),
            Some(&writer),
            Some(json!({"collection": "articles", "item_id": 4, "field": "cover"})),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.json());
    let added = res.json()["data"].clone();
    assert_eq!(
        added["item"]["data"]["cover"], added["file"]["id"],
        "{added}"
    );
    // The bytes stay while a file names them, after the message is gone.
    let messages = app
        .admin(
            Method::GET,
            &format!("/chat/{chat}/messages"),
            Some(&writer),
            None,
        )
        .await
        .json();
    let message = messages["data"][0]["id"].clone();
    let res = app
        .admin(
            Method::DELETE,
            &format!("/chat/{chat}/messages/{message}"),
            Some(&writer),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let key = crate::support::blob_key(&png);
    assert!(app.state.blobs().head(&key).await.unwrap().is_some());
}

#[actix_web::test]
async fn a_message_carries_at_most_ten_attachments() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = (0..11)
        .map(|i| format!("00000000-0000-4000-8000-{i:012}"))
        .collect();
    let (status, body) = post(
        &app,
        &p.ada,
        &chat,
        json!({"body": "x", "attachment_ids": ids}),
    )
    .await;
    assert_eq!(status, 422);
    assert!(body["errors"]["attachment_ids"].is_array(), "{body}");
}

#[actix_web::test]
async fn deleting_an_item_or_an_uploader_for_good_takes_their_chat_bytes() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = app
        .admin(
            Method::POST,
            "/chat/threads",
            Some(&p.ada),
            Some(json!({"kind": "item", "collection": "articles", "item_id": 5})),
        )
        .await;
    let chat = res.json()["data"]["id"].as_str().unwrap().to_owned();
    let bytes = b"only in this thread";
    let (_, uploaded) = upload(&app, &p.ada, &chat, "notes.txt", bytes).await;
    let id = uploaded["data"]["id"].clone();
    assert_eq!(
        post(&app, &p.ada, &chat, json!({"attachment_ids": [id]}))
            .await
            .0,
        201
    );
    // Bob has an upload in progress elsewhere.
    let (_, direct) = start_direct(&app, &p.bob, &[p.ada_id], &[]).await;
    let direct = direct["data"]["id"].as_str().unwrap().to_owned();
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{direct}/uploads"),
            Some(&p.bob),
            Some(json!({"name": "part.bin", "size": 10})),
        )
        .await;
    let upload_id = res.json()["data"]["id"].as_str().unwrap().to_owned();
    let res = app
        .send(
            TestApp::request(
                Method::PUT,
                &format!("/chat/{direct}/uploads/{upload_id}/chunks/0"),
            )
            .insert_header(("accept", "application/json"))
            .insert_header(("cookie", p.bob.cookie.clone()))
            .set_payload(vec![7_u8; 10]),
        )
        .await;
    assert_eq!(res.status, 200);
    let chunk = format!("chat-uploads/{upload_id}/0");
    assert!(app.state.blobs().head(&chunk).await.unwrap().is_some());

    let key = crate::support::blob_key(bytes);
    assert!(app.state.blobs().head(&key).await.unwrap().is_some());
    let res = app
        .admin(
            Method::DELETE,
            "/collections/articles/items/5/force",
            Some(&root),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    assert!(
        app.state.blobs().head(&key).await.unwrap().is_none(),
        "the thread's bytes are gone"
    );

    let res = app
        .admin(
            Method::DELETE,
            &format!("/users/{}/force", p.bob_id),
            Some(&root),
            None,
        )
        .await;
    assert_eq!(res.status, 204, "{}", res.json());
    assert!(
        app.state.blobs().head(&chunk).await.unwrap().is_none(),
        "the chunks are gone"
    );
}

#[actix_web::test]
async fn the_item_pages_chat_form_opens_the_items_thread() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let form = |session: &Session| {
        TestApp::request(Method::POST, "/chat/threads")
            .insert_header(("cookie", session.cookie.clone()))
            .insert_header(("content-type", "application/x-www-form-urlencoded"))
            .set_payload("kind=item&collection=articles&item_id=4")
    };
    let res = app.send(form(&p.ada)).await;
    assert_eq!(res.status, 303);
    let location = res.header("location").unwrap().to_owned();
    let res = app.send(form(&p.bob)).await;
    assert_eq!(
        res.header("location"),
        Some(location.as_str()),
        "one thread per item"
    );
    let page = app
        .send(
            TestApp::request(Method::GET, &location)
                .insert_header(("cookie", p.ada.cookie.clone()))
                .insert_header(("accept", "text/html")),
        )
        .await;
    assert_eq!(page.status, 200);
    let html = String::from_utf8_lossy(&page.body);
    assert!(
        html.contains("Articles: #4"),
        "the thread is titled by its item: {html}"
    );
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let item_page = app
        .send(
            TestApp::request(Method::GET, "/collections/articles/items/4")
                .insert_header(("cookie", root.cookie.clone()))
                .insert_header(("accept", "text/html")),
        )
        .await;
    assert_eq!(item_page.status, 200);
    assert!(String::from_utf8_lossy(&item_page.body).contains("Chat about it"));
}

#[actix_web::test]
async fn members_leave_and_the_creator_deletes() {
    let app = TestApp::new(blog()).await;
    let p = people(&app).await;
    let (_, started) = start_direct(&app, &p.ada, &[p.bob_id, p.carl_id], &[]).await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        post(&app, &p.bob, &chat, json!({"body": "bye"})).await.0,
        201
    );
    let res = app
        .admin(
            Method::POST,
            &format!("/chat/{chat}/leave"),
            Some(&p.bob),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let res = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.bob), None)
        .await;
    assert_eq!(res.status, 404, "gone for who left");
    let res = app
        .admin(
            Method::DELETE,
            &format!("/chat/{chat}"),
            Some(&p.carl),
            None,
        )
        .await;
    assert_eq!(res.status, 403, "only the creator deletes");
    let res = app
        .admin(Method::DELETE, &format!("/chat/{chat}"), Some(&p.ada), None)
        .await;
    assert_eq!(res.status, 204);
    let res = app
        .admin(Method::GET, &format!("/chat/{chat}"), Some(&p.carl), None)
        .await;
    assert_eq!(res.status, 404);
    // The last one out deletes a conversation; an item thread is neither left nor deleted.
    let (_, pair) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    let pair = pair["data"]["id"].as_str().unwrap().to_owned();
    for who in [&p.bob, &p.ada] {
        let res = app
            .admin(
                Method::POST,
                &format!("/chat/{pair}/leave"),
                Some(who),
                None,
            )
            .await;
        assert_eq!(res.status, 204);
    }
    let (status, again) = start_direct(&app, &p.ada, &[p.bob_id], &[]).await;
    assert_eq!(status, 201, "a new thread: the old one is gone");
    assert_ne!(again["data"]["id"], pair.as_str());
    let res = app
        .admin(
            Method::POST,
            "/collections/articles/items/4/chat/messages",
            Some(&p.ada),
            Some(json!({"body": "x"})),
        )
        .await;
    let item_chat = res.json()["data"]["chat_id"].as_str().unwrap().to_owned();
    for (method, path) in [
        (Method::POST, format!("/chat/{item_chat}/leave")),
        (Method::DELETE, format!("/chat/{item_chat}")),
    ] {
        let res = app.admin(method, &path, Some(&p.ada), None).await;
        assert_eq!(res.status, 422, "{path}");
    }
}
