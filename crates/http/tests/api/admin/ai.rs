//! AI chat (issue 22) over the JSON API, against a scripted provider ([`FakeAi`]): the gate
//! (`can-use-ai`, a verified email), conversations (owned, 25 a page pinned first, rename, pin,
//! truncate, delete, bulk delete), the streamed answer (events, headers, what is stored), a
//! provider failing mid-stream, refusing, hanging, tool calls that run as the user, attachments
//! (csv, txt, xlsx, pdf; bombs and garbage refused in time), and the limits.

use std::io::Write as _;
use std::time::{Duration, Instant};

use actix_web::http::Method;
use serde_json::{Value, json};
use vellum_http::{AiConfig, HttpConfig};

use super::access_support::role_with;
use super::fake_ai::FakeAi;
use super::{PASSWORD, Session, create_user};
use crate::support::{TestApp, blog};

const AI: [&str; 1] = ["can-use-ai"];

fn config_for(fake: &FakeAi, idle: Duration) -> HttpConfig {
    HttpConfig {
        ai: AiConfig {
            base_url: Some(fake.base_url()),
            model: Some("fake-model".to_owned()),
            api_key: Some("sk-test-secret".to_owned()),
            idle_timeout: idle,
            ..AiConfig::default()
        },
        ..HttpConfig::default()
    }
}

async fn app_with(fake: &FakeAi, manifest: Value) -> TestApp {
    TestApp::with_config(manifest, config_for(fake, Duration::from_secs(5))).await
}

/// A verified user whose one role holds `permissions`.
async fn user(app: &TestApp, email: &str, permissions: &[&str]) -> (Session, i64) {
    let role = format!("holds-{email}");
    role_with(app, &role, permissions).await;
    let id = create_user(&app.state, email, email, &[&role]).await;
    (app.sign_in(email, PASSWORD).await, id)
}

/// The events of an SSE body and whether it ended with `[DONE]`; checks every block is a
/// `data:` line or a comment.
fn events(body: &[u8]) -> (Vec<Value>, bool) {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut done = false;
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        assert!(!done, "nothing follows [DONE]: {text}");
        if block.starts_with(':') {
            continue;
        }
        let data = block
            .strip_prefix("data: ")
            .unwrap_or_else(|| panic!("not a data line: {block:?}"));
        if data == "[DONE]" {
            done = true;
        } else {
            out.push(serde_json::from_str(data).unwrap());
        }
    }
    (out, done)
}

/// The concatenated deltas of `events`.
fn answer(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "delta")
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

async fn chat(app: &TestApp, session: &Session, body: Value) -> crate::support::Response {
    app.admin(Method::POST, "/ai/chat", Some(session), Some(body))
        .await
}

async fn upload(app: &TestApp, session: &Session, name: &str, bytes: &[u8]) -> (u16, Value) {
    super::post_file(app, session, "/ai/attachments", name, bytes).await
}

#[actix_web::test]
async fn every_ai_route_needs_can_use_ai_and_a_verified_email() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (outsider, _) = user(&app, "out@example.com", &["can-show-chat"]).await;
    // A user with the permission whose email is not verified.
    role_with(&app, "ai-only", &AI).await;
    let db = app.state.db();
    let unverified = vellum_storage::users::create_user(db, "Una", Some("una@example.com"))
        .await
        .unwrap();
    let hash = app.state.identity().hasher.hash(PASSWORD).await.unwrap();
    vellum_storage::accounts::set_password_hash(db, unverified.id, Some(&hash))
        .await
        .unwrap();
    vellum_storage::users::assign_role(db, unverified.id, "ai-only")
        .await
        .unwrap();
    app.state.invalidate().await;
    let una = app.sign_in("una@example.com", PASSWORD).await;
    let some = "00000000-0000-4000-8000-000000000000";
    let routes = [
        (Method::GET, "/ai".to_owned(), None),
        (Method::GET, format!("/ai/{some}"), None),
        (Method::GET, "/ai/status".to_owned(), None),
        (Method::GET, "/ai/conversations".to_owned(), None),
        (
            Method::POST,
            "/ai/conversations".to_owned(),
            Some(json!({})),
        ),
        (Method::GET, format!("/ai/conversations/{some}"), None),
        (
            Method::PATCH,
            format!("/ai/conversations/{some}"),
            Some(json!({"title": "x"})),
        ),
        (Method::DELETE, format!("/ai/conversations/{some}"), None),
        (Method::POST, format!("/ai/conversations/{some}/pin"), None),
        (
            Method::POST,
            format!("/ai/conversations/{some}/truncate"),
            Some(json!({"from_message_id": some})),
        ),
        (
            Method::POST,
            "/ai/conversations/bulk-destroy".to_owned(),
            Some(json!({"ids": [some]})),
        ),
        (
            Method::POST,
            "/ai/chat".to_owned(),
            Some(json!({"message": "hi"})),
        ),
    ];
    for (method, path, body) in routes {
        let res = app.admin(method.clone(), &path, None, body.clone()).await;
        assert_eq!(res.status, 401, "{method} {path} anonymous");
        for (who, session) in [("outsider", &outsider), ("unverified", &una)] {
            let res = app
                .admin(method.clone(), &path, Some(session), body.clone())
                .await;
            assert_eq!(res.status, 403, "{method} {path} as {who}");
            assert_eq!(res.json(), json!({"message": "Forbidden."}));
        }
    }
    let (status, _) = upload(&app, &una, "a.txt", b"hello").await;
    assert_eq!(status, 403);
    assert!(fake.requests().is_empty(), "nothing reached the provider");
}

#[actix_web::test]
async fn without_a_provider_status_says_so_and_chat_answers_503() {
    let app = TestApp::new(blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let res = app.admin(Method::GET, "/ai/status", Some(&ada), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json(), json!({"configured": false}));
    let res = chat(&app, &ada, json!({"message": "hi"})).await;
    assert_eq!(res.status, 503);
    assert_eq!(
        res.json(),
        json!({"message": "AI provider not configured."})
    );
    let res = app.admin(Method::GET, "/ai", Some(&ada), None).await;
    assert_eq!(res.json()["configured"], false);
}

#[actix_web::test]
async fn status_probes_the_provider_without_showing_its_address_or_key() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let res = app.admin(Method::GET, "/ai/status", Some(&ada), None).await;
    assert_eq!(
        res.json(),
        json!({"configured": true, "model": "fake-model", "reachable": true})
    );
    let text = String::from_utf8_lossy(&res.body).into_owned();
    assert!(!text.contains("127.0.0.1") && !text.contains("sk-test"));
}

#[actix_web::test]
async fn a_prompt_streams_its_answer_and_both_are_stored() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, ada_id) = user(&app, "ada@example.com", &AI).await;
    let res = chat(&app, &ada, json!({"message": "Say hello\nplease"})).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("text/event-stream"));
    assert_eq!(res.header("content-encoding"), Some("identity"));
    assert_eq!(res.header("x-accel-buffering"), Some("no"));
    assert_eq!(res.header("cache-control"), Some("no-cache"));
    let (events, done) = events(&res.body);
    assert!(done, "ends with [DONE]");
    assert_eq!(events[0]["type"], "conversation");
    let conversation = events[0]["conversation_id"].as_str().unwrap().to_owned();
    assert_eq!(answer(&events), "Hello, world");
    assert!(events.iter().all(|e| e["type"] != "error"));

    // The provider got the model, the key, streaming, and the prompt after a system message.
    let sent = &fake.requests()[0];
    assert_eq!(sent["model"], "fake-model");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(
        sent["messages"].as_array().unwrap().last().unwrap()["content"],
        "Say hello\nplease"
    );
    assert!(
        sent.get("tools").is_none(),
        "no content tools without can-show-collections"
    );

    let res = app
        .admin(
            Method::GET,
            &format!("/ai/conversations/{conversation}"),
            Some(&ada),
            None,
        )
        .await;
    let shown = res.json()["data"].clone();
    assert_eq!(shown["title"], "Say hello");
    let messages = shown["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (
            messages[0]["role"].as_str(),
            messages[0]["content"].as_str()
        ),
        (Some("user"), Some("Say hello\nplease"))
    );
    assert_eq!(
        (
            messages[1]["role"].as_str(),
            messages[1]["content"].as_str()
        ),
        (Some("assistant"), Some("Hello, world"))
    );
    assert_eq!(messages[1]["incomplete"], false);

    // The conversation continues: the history goes with the next prompt.
    let res = chat(
        &app,
        &ada,
        json!({"message": "again", "conversation_id": conversation}),
    )
    .await;
    let (events, _) = self::events(&res.body);
    assert_eq!(events[0]["conversation_id"], conversation.as_str());
    let sent = &fake.requests()[1];
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);

    let logged = vellum_storage::activity::list(
        &app.db.conn,
        &vellum_storage::activity::ActivityFilter::default(),
        1,
        50,
    )
    .await
    .unwrap();
    let prompts: Vec<_> = logged
        .items
        .iter()
        .filter(|a| a.log_name == "ai" && a.event == "ai_prompt")
        .collect();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[0].user_id, Some(ada_id));
    assert_eq!(
        prompts[1].properties["conversation_id"],
        conversation.as_str()
    );
    assert!(
        !logged
            .items
            .iter()
            .any(|a| a.properties.to_string().contains("Say hello")),
        "prompts are not logged"
    );
}

#[actix_web::test]
async fn provider_failures_end_the_stream_with_an_error_and_keep_the_partial_answer() {
    let fake = FakeAi::start().await;
    let app = TestApp::with_config(blog(), config_for(&fake, Duration::from_secs(1))).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;

    // An error chunk mid-stream: the partial text is stored, marked incomplete.
    let res = chat(&app, &ada, json!({"message": "[fail]"})).await;
    let (events, done) = events(&res.body);
    assert!(done);
    assert_eq!(answer(&events), "partial");
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(error["message"], "The AI provider reported an error.");
    let conversation = events[0]["conversation_id"].as_str().unwrap().to_owned();
    let shown = app
        .admin(
            Method::GET,
            &format!("/ai/conversations/{conversation}"),
            Some(&ada),
            None,
        )
        .await
        .json();
    let last = shown["data"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["content"].as_str(), last["incomplete"].as_bool()),
        (Some("partial"), Some(true))
    );

    // A refusal (HTTP 500): an error event, no assistant message.
    let res = chat(&app, &ada, json!({"message": "[refuse]"})).await;
    let (events, done) = self::events(&res.body);
    assert!(done);
    assert_eq!(
        events.last().unwrap()["message"],
        "The AI provider refused the request."
    );
    let id = events[0]["conversation_id"].as_str().unwrap();
    let shown = app
        .admin(
            Method::GET,
            &format!("/ai/conversations/{id}"),
            Some(&ada),
            None,
        )
        .await
        .json();
    assert_eq!(
        shown["data"]["messages"].as_array().unwrap().len(),
        1,
        "only the prompt"
    );

    // A provider that never sends a byte of its answer: an error after the idle timeout.
    let started = Instant::now();
    let res = chat(&app, &ada, json!({"message": "[hang]"})).await;
    let (events, done) = self::events(&res.body);
    assert!(done);
    assert_eq!(
        events.last().unwrap()["message"],
        "The AI provider did not answer in time."
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[actix_web::test]
async fn tools_read_content_as_the_user_and_never_beyond() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (reader, _) = user(
        &app,
        "reader@example.com",
        &["can-use-ai", "can-show-collections"],
    )
    .await;
    let res = chat(
        &app,
        &reader,
        json!({"message": "[tool:get_item:{\"collection\": \"articles\", \"id\": 4}]"}),
    )
    .await;
    let (events, done) = events(&res.body);
    assert!(done);
    let said = answer(&events);
    assert!(said.starts_with("Tool said: "), "{said}");
    assert!(said.contains("Hello"), "the item's data came back: {said}");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "a tool round, then the answer");
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["list_collections", "search_items", "get_item"]);
    let second = requests[1]["messages"].as_array().unwrap();
    let call = &second[second.len() - 2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        "{\"collection\": \"articles\", \"id\": 4}"
    );
    assert_eq!(second.last().unwrap()["role"], "tool");
    assert_eq!(second.last().unwrap()["tool_call_id"], "call_1");

    // Search answers ids and labels (the items admin's picker); an unknown collection is
    // "Not found." to the model.
    let res = chat(
        &app,
        &reader,
        json!({"message": "[tool:search_items:{\"collection\": \"articles\"}]"}),
    )
    .await;
    let said = answer(&events_of(&res.body));
    assert!(said.contains("\"total\":2"), "{said}");
    assert!(
        said.contains("\"id\":4") && said.contains("\"id\":5"),
        "{said}"
    );
    assert!(said.contains("\"label\":"), "{said}");
    let res = chat(
        &app,
        &reader,
        json!({"message": "[tool:get_item:{\"collection\": \"nope\", \"id\": 1}]"}),
    )
    .await;
    assert!(answer(&events_of(&res.body)).contains("Not found."));

    // Without the items admin's read, no tools are offered, and a tool call the model makes
    // anyway is refused.
    let (plain, _) = user(&app, "plain@example.com", &AI).await;
    let before = fake.requests().len();
    let res = chat(
        &app,
        &plain,
        json!({"message": "[tool:get_item:{\"collection\": \"articles\", \"id\": 4}]"}),
    )
    .await;
    let said = answer(&events_of(&res.body));
    assert!(said.contains("You may not read this."), "{said}");
    assert!(!said.contains("Hello"), "{said}");
    assert!(fake.requests()[before].get("tools").is_none());
}

fn events_of(body: &[u8]) -> Vec<Value> {
    events(body).0
}

#[actix_web::test]
async fn conversations_are_private_listed_pinned_first_and_managed() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let (bob, _) = user(&app, "bob@example.com", &AI).await;
    let mut ids = Vec::new();
    for i in 0..27 {
        let res = app
            .admin(
                Method::POST,
                "/ai/conversations",
                Some(&ada),
                Some(json!({"title": format!("c{i}")})),
            )
            .await;
        assert_eq!(res.status, 201);
        ids.push(res.json()["data"]["id"].as_str().unwrap().to_owned());
    }
    let res = app
        .admin(
            Method::POST,
            "/ai/conversations",
            Some(&ada),
            Some(json!({})),
        )
        .await;
    assert_eq!(res.json()["data"]["title"], "New conversation");
    let res = app
        .admin(
            Method::POST,
            "/ai/conversations",
            Some(&ada),
            Some(json!({"title": "x".repeat(121)})),
        )
        .await;
    assert_eq!(res.status, 422);

    // Pin the oldest: it comes first.
    let res = app
        .admin(
            Method::POST,
            &format!("/ai/conversations/{}/pin", ids[0]),
            Some(&ada),
            None,
        )
        .await;
    assert_eq!(res.json()["data"]["pinned"], true);
    assert!(res.json()["data"]["pinned_at"].is_string());
    let page = app
        .admin(Method::GET, "/ai/conversations", Some(&ada), None)
        .await
        .json();
    assert_eq!(page["meta"]["per_page"], 25);
    assert_eq!(page["meta"]["total"], 28);
    assert_eq!(page["meta"]["last_page"], 2);
    assert_eq!(page["data"].as_array().unwrap().len(), 25);
    assert_eq!(page["data"][0]["id"], ids[0].as_str());
    let page2 = app
        .admin(Method::GET, "/ai/conversations?page=2", Some(&ada), None)
        .await
        .json();
    assert_eq!(page2["data"].as_array().unwrap().len(), 3);
    assert_eq!(
        app.admin(Method::GET, "/ai/conversations?page=0", Some(&ada), None)
            .await
            .status,
        422
    );
    // Unpin toggles back.
    let res = app
        .admin(
            Method::POST,
            &format!("/ai/conversations/{}/pin", ids[0]),
            Some(&ada),
            None,
        )
        .await;
    assert!(res.json()["data"]["pinned_at"].is_null());

    // Bob sees none of them and cannot touch them.
    let bob_page = app
        .admin(Method::GET, "/ai/conversations", Some(&bob), None)
        .await
        .json();
    assert_eq!(bob_page["meta"]["total"], 0);
    for (method, path, body) in [
        (Method::GET, format!("/ai/conversations/{}", ids[1]), None),
        (Method::GET, format!("/ai/{}", ids[1]), None),
        (
            Method::PATCH,
            format!("/ai/conversations/{}", ids[1]),
            Some(json!({"title": "mine"})),
        ),
        (
            Method::POST,
            format!("/ai/conversations/{}/pin", ids[1]),
            None,
        ),
        (
            Method::DELETE,
            format!("/ai/conversations/{}", ids[1]),
            None,
        ),
    ] {
        let res = app.admin(method.clone(), &path, Some(&bob), body).await;
        assert_eq!(res.status, 404, "{method} {path}");
    }
    let res = chat(
        &app,
        &bob,
        json!({"message": "hi", "conversation_id": ids[1]}),
    )
    .await;
    assert_eq!(res.status, 404);
    let res = app
        .admin(
            Method::POST,
            "/ai/conversations/bulk-destroy",
            Some(&bob),
            Some(json!({"ids": [ids[1]]})),
        )
        .await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"]["ids.0"].is_array());

    // Rename.
    let res = app
        .admin(
            Method::PATCH,
            &format!("/ai/conversations/{}", ids[1]),
            Some(&ada),
            Some(json!({"title": "  Renamed  "})),
        )
        .await;
    assert_eq!(res.json()["data"]["title"], "Renamed");
    let res = app
        .admin(
            Method::PATCH,
            &format!("/ai/conversations/{}", ids[1]),
            Some(&ada),
            Some(json!({"title": ""})),
        )
        .await;
    assert_eq!(res.status, 422);

    // Bulk delete: 1 to 100 ids, all owned, else nothing happens.
    for body in [
        json!({}),
        json!({"ids": []}),
        json!({"ids": ["nope"]}),
        json!({"ids": (0..101).map(|_| uuid::Uuid::new_v4().to_string()).collect::<Vec<_>>()}),
    ] {
        let res = app
            .admin(
                Method::POST,
                "/ai/conversations/bulk-destroy",
                Some(&ada),
                Some(body.clone()),
            )
            .await;
        assert_eq!(res.status, 422, "{body}");
    }
    let res = app
        .admin(
            Method::POST,
            "/ai/conversations/bulk-destroy",
            Some(&ada),
            Some(json!({"ids": [ids[2], ids[3]]})),
        )
        .await;
    assert_eq!(res.json(), json!({"data": {"deleted": 2}}));
    let res = app
        .admin(
            Method::DELETE,
            &format!("/ai/conversations/{}", ids[4]),
            Some(&ada),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    let page = app
        .admin(Method::GET, "/ai/conversations", Some(&ada), None)
        .await
        .json();
    assert_eq!(page["meta"]["total"], 25);
}

#[actix_web::test]
async fn truncate_deletes_a_message_and_everything_after_it() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let res = chat(&app, &ada, json!({"message": "one"})).await;
    let conversation = events_of(&res.body)[0]["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    chat(
        &app,
        &ada,
        json!({"message": "two", "conversation_id": conversation}),
    )
    .await;
    let path = format!("/ai/conversations/{conversation}");
    let messages =
        app.admin(Method::GET, &path, Some(&ada), None).await.json()["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 4);
    let second_prompt = messages[2]["id"].as_str().unwrap().to_owned();
    let res = app
        .admin(
            Method::POST,
            &format!("{path}/truncate"),
            Some(&ada),
            Some(json!({"from_message_id": second_prompt})),
        )
        .await;
    assert_eq!(res.json(), json!({"data": {"deleted": 2}}));
    let messages =
        app.admin(Method::GET, &path, Some(&ada), None).await.json()["data"]["messages"].clone();
    let contents: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["one", "Hello, world"]);
    for body in [
        json!({}),
        json!({"from_message_id": "nope"}),
        json!({"from_message_id": second_prompt}),
    ] {
        let res = app
            .admin(
                Method::POST,
                &format!("{path}/truncate"),
                Some(&ada),
                Some(body.clone()),
            )
            .await;
        assert_eq!(res.status, 422, "{body}");
    }
}

#[actix_web::test]
async fn the_limits_of_a_prompt_are_enforced() {
    let fake = FakeAi::start().await;
    let mut manifest = blog();
    manifest["settings"]["daily_prompt_limit"] = json!(3);
    let app = app_with(&fake, manifest).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let res = chat(&app, &ada, json!({"message": "x".repeat(20_001)})).await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"]["message"].is_array());
    let res = chat(&app, &ada, json!({"message": "x".repeat(20_000)})).await;
    assert_eq!(res.status, 200);
    let six: Vec<String> = (0..6).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let res = chat(&app, &ada, json!({"message": "hi", "attachment_ids": six})).await;
    assert_eq!(res.status, 422);
    let res = chat(
        &app,
        &ada,
        json!({"message": "hi", "attachment_ids": [uuid::Uuid::new_v4().to_string()]}),
    )
    .await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"]["attachment_ids.0"].is_array());
    let res = chat(&app, &ada, json!({"message": "   "})).await;
    assert_eq!(res.status, 422);
    // Refused prompts did not count: two more go through, the fourth of the day is refused.
    for _ in 0..2 {
        assert_eq!(chat(&app, &ada, json!({"message": "hi"})).await.status, 200);
    }
    let res = chat(&app, &ada, json!({"message": "hi"})).await;
    assert_eq!(res.status, 429);
    assert_eq!(
        res.json(),
        json!({"message": "Daily prompt limit reached."})
    );
    let retry: u64 = res.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry));
    // Another user has a day of their own.
    let (bob, _) = user(&app, "bob@example.com", &AI).await;
    assert_eq!(chat(&app, &bob, json!({"message": "hi"})).await.status, 200);
}

#[actix_web::test]
async fn the_31st_request_in_a_minute_is_refused() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    // Chat requests and uploads share the limit; a refused body counts too.
    for i in 0..30 {
        let status = match i % 3 {
            0 => chat(&app, &ada, json!({"message": "hi"}))
                .await
                .status
                .as_u16(),
            1 => chat(&app, &ada, json!({})).await.status.as_u16(),
            _ => upload(&app, &ada, "n.txt", b"notes").await.0,
        };
        assert!(matches!(status, 200 | 201 | 422), "request {i}: {status}");
    }
    let res = chat(&app, &ada, json!({"message": "hi"})).await;
    assert_eq!(res.status, 429);
    assert_eq!(res.json(), json!({"message": "Too many requests."}));
    assert!(res.header("retry-after").unwrap().parse::<u64>().unwrap() <= 60);
    assert_eq!(upload(&app, &ada, "n.txt", b"notes").await.0, 429);
    let (bob, _) = user(&app, "bob@example.com", &AI).await;
    assert_eq!(chat(&app, &bob, json!({"message": "hi"})).await.status, 200);
}

/// A minimal xlsx: one sheet with shared strings and numbers.
fn xlsx(rows: &[[&str; 2]]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default();
    let mut put = |name: &str, text: String| {
        zip.start_file(name, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    };
    put("[Content_Types].xml", r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#.to_owned());
    put("_rels/.rels", r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.to_owned());
    put("xl/workbook.xml", r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Prices" sheetId="1" r:id="rId1"/></sheets></workbook>"#.to_owned());
    put("xl/_rels/workbook.xml.rels", r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#.to_owned());
    let mut sheet = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    );
    for (r, [a, b]) in rows.iter().enumerate() {
        let n = r + 1;
        sheet.push_str(&format!(r#"<row r="{n}"><c r="A{n}" t="inlineStr"><is><t>{a}</t></is></c><c r="B{n}"><v>{b}</v></c></row>"#));
    }
    sheet.push_str("</sheetData></worksheet>");
    put("xl/worksheets/sheet1.xml", sheet);
    zip.finish().unwrap();
    out.into_inner()
}

/// A one-page PDF saying `text` (built with lopdf, as a writer would).
fn pdf(text: &str) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica", "Encoding" => "WinAnsiEncoding",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let content = Content {
        operations: vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 24.into()]),
            Operation::new("Td", vec![100.into(), 600.into()]),
            Operation::new("Tj", vec![Object::string_literal(text)]),
            Operation::new("ET", vec![]),
        ],
    };
    let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content_id, "Resources" => resources_id,
        "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1,
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[actix_web::test]
async fn attachments_become_text_the_prompt_carries() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let (bob, _) = user(&app, "bob@example.com", &AI).await;
    let (status, txt) = upload(&app, &ada, "notes.txt", b"The launch is on Friday.").await;
    assert_eq!(status, 201, "{txt}");
    assert_eq!(txt["data"]["extension"], "txt");
    assert_eq!(txt["data"]["characters"], 24);
    assert!(txt["data"]["expires_at"].is_string());
    let (status, csv) = upload(&app, &ada, "prices.CSV", b"item,price\nbook,12\n").await;
    assert_eq!(status, 201, "{csv}");
    let (status, sheet) = upload(
        &app,
        &ada,
        "sheet.xlsx",
        &xlsx(&[["apples", "3"], ["pears", "4.5"]]),
    )
    .await;
    assert_eq!(status, 201, "{sheet}");
    let (status, doc) = upload(&app, &ada, "memo.pdf", &pdf("Quarterly memo")).await;
    assert_eq!(status, 201, "{doc}");

    let ids: Vec<&str> = [&txt, &csv, &sheet, &doc]
        .iter()
        .map(|v| v["data"]["id"].as_str().unwrap())
        .collect();
    let res = chat(
        &app,
        &ada,
        json!({"message": "[echo] summarise", "attachment_ids": ids}),
    )
    .await;
    assert_eq!(res.status, 200);
    let said = answer(&events_of(&res.body));
    for expected in [
        "The launch is on Friday.",
        "book,12",
        "Prices",
        "apples\t3",
        "pears\t4.5",
        "Quarterly memo",
        "Attached file \"memo.pdf\"",
    ] {
        assert!(said.contains(expected), "{expected:?} missing from {said}");
    }
    // The stored prompt names its files; their text is not kept in the conversation.
    let conversation = events_of(&res.body)[0]["conversation_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = app
        .admin(
            Method::GET,
            &format!("/ai/conversations/{conversation}"),
            Some(&ada),
            None,
        )
        .await
        .json();
    let prompt = &shown["data"]["messages"][0];
    assert_eq!(prompt["content"], "[echo] summarise");
    assert_eq!(prompt["attachments"][3]["name"], "memo.pdf");

    // Another user cannot use them.
    let res = chat(
        &app,
        &bob,
        json!({"message": "hi", "attachment_ids": [ids[0]]}),
    )
    .await;
    assert_eq!(res.status, 422);
}

#[actix_web::test]
async fn unsupported_oversized_and_hostile_files_are_refused_in_time() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let (status, body) = upload(&app, &ada, "photo.png", b"\x89PNG....").await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"]["file"][0],
        "The file must be a file of type: csv, txt, xlsx, pdf."
    );
    let big = vec![b'a'; 5 * 1024 * 1024 + 1];
    let (status, body) = upload(&app, &ada, "big.txt", &big).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"]["file"][0],
        "The file may not be greater than 5120 kilobytes."
    );
    let (status, _) = upload(&app, &ada, "exact.txt", &vec![b'a'; 5 * 1024 * 1024]).await;
    assert_eq!(status, 201);

    // An xlsx zip bomb: 60 MiB of one sheet in well under a MiB.
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file(
            "xl/worksheets/sheet1.xml",
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated),
        )
        .unwrap();
        let zeros = vec![b'0'; 1024 * 1024];
        for _ in 0..60 {
            zip.write_all(&zeros).unwrap();
        }
        zip.finish().unwrap();
    }
    let bomb = out.into_inner();
    assert!(bomb.len() < 1024 * 1024, "{}", bomb.len());
    let started = Instant::now();
    let (status, body) = upload(&app, &ada, "bomb.xlsx", &bomb).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["errors"]["file"][0],
        "The spreadsheet expands to more data than allowed."
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // Malformed PDFs: truncated, garbage, a real one cut in half, deep nesting.
    let real = pdf("Hello");
    let mut nested = b"%PDF-1.7\n1 0 obj\n".to_vec();
    nested.extend(std::iter::repeat_n(b'[', 200_000));
    nested.extend_from_slice(b"\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF");
    for (name, bytes) in [
        ("empty.pdf", b"%PDF-".to_vec()),
        (
            "garbage.pdf",
            (0..4096_u32).map(|i| (i * 7919 % 251) as u8).collect(),
        ),
        ("half.pdf", real[..real.len() / 2].to_vec()),
        ("nested.pdf", nested),
    ] {
        let started = Instant::now();
        let (status, body) = upload(&app, &ada, name, &bytes).await;
        assert_eq!(status, 422, "{name}: {body}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: {:?}",
            started.elapsed()
        );
    }
    // The server still answers.
    let (status, _) = upload(&app, &ada, "ok.txt", b"fine").await;
    assert_eq!(status, 201);
}

#[actix_web::test]
async fn a_client_that_goes_away_stops_the_provider_within_a_second_and_keeps_the_partial_answer() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, _) = user(&app, "ada@example.com", &AI).await;
    let live = crate::socket::Live::start(&app);
    let mut stream = tokio::net::TcpStream::connect(live.addr).await.unwrap();
    let body = json!({"message": "[slow]"}).to_string();
    let request = format!(
        "POST /ai/chat HTTP/1.1\r\nhost: {}\r\ncookie: {}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\naccept-encoding: gzip\r\ncontent-length: {}\r\n\r\n{body}",
        live.addr,
        ada.cookie,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Read until three fragments have arrived, each as its own chunk, uncompressed.
    let mut seen = Vec::new();
    let mut buf = [0_u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    while !String::from_utf8_lossy(&seen).contains("t2 ") {
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&seen)
        );
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the stream ended early");
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("content-encoding: identity"), "{text}");
    assert!(text.contains("\"type\":\"conversation\""), "{text}");
    let conversation = text
        .split("\"conversation_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    drop(stream);
    let left = Instant::now();
    let hung_up = loop {
        if let Some(at) = fake.hung_up_at() {
            break at;
        }
        assert!(
            left.elapsed() < Duration::from_secs(3),
            "the provider was never dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = hung_up.saturating_duration_since(left);
    assert!(
        took < Duration::from_secs(1),
        "the provider was dropped {took:?} after the client"
    );
    // The partial answer is stored, marked incomplete.
    let path = format!("/ai/conversations/{conversation}");
    let last = loop {
        let shown = app.admin(Method::GET, &path, Some(&ada), None).await.json();
        let messages = shown["data"]["messages"].as_array().unwrap().clone();
        if messages.len() == 2 {
            break messages[1].clone();
        }
        assert!(
            left.elapsed() < Duration::from_secs(3),
            "no answer stored: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(last["incomplete"], true);
    let content = last["content"].as_str().unwrap();
    assert!(content.starts_with("t0 t1 t2 "), "{content}");
    assert!(!content.contains("t99"), "{content}");
}

#[actix_web::test]
async fn a_user_keeps_at_most_1000_conversations() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, ada_id) = user(&app, "ada@example.com", &AI).await;
    let mut last = String::new();
    for i in 0..999 {
        last = vellum_storage::ai::conversations::create(&app.db.conn, ada_id, &format!("c{i}"))
            .await
            .unwrap()
            .id;
    }
    let res = app
        .admin(
            Method::POST,
            "/ai/conversations",
            Some(&ada),
            Some(json!({})),
        )
        .await;
    assert_eq!(res.status, 201, "the 1000th");
    for res in [
        app.admin(
            Method::POST,
            "/ai/conversations",
            Some(&ada),
            Some(json!({})),
        )
        .await,
        chat(&app, &ada, json!({"message": "hi"})).await,
    ] {
        assert_eq!(res.status, 422);
        assert!(res.json()["errors"]["conversation_id"].is_array());
    }
    // An existing conversation goes on; after a delete there is room again.
    assert_eq!(
        chat(
            &app,
            &ada,
            json!({"message": "hi", "conversation_id": last})
        )
        .await
        .status,
        200
    );
    let res = app
        .admin(
            Method::DELETE,
            &format!("/ai/conversations/{last}"),
            Some(&ada),
            None,
        )
        .await;
    assert_eq!(res.status, 204);
    assert_eq!(chat(&app, &ada, json!({"message": "hi"})).await.status, 200);
}

#[actix_web::test]
async fn expired_attachments_are_refused_and_swept() {
    let fake = FakeAi::start().await;
    let app = app_with(&fake, blog()).await;
    let (ada, ada_id) = user(&app, "ada@example.com", &AI).await;
    let expired = vellum_storage::ai::attachments::insert(
        &app.db.conn,
        &vellum_storage::ai::NewAiAttachment {
            user_id: ada_id,
            name: "old.txt",
            extension: "txt",
            size: 3,
            content: "old",
            expires_at: time::OffsetDateTime::now_utc() - Duration::from_secs(1),
        },
    )
    .await
    .unwrap();
    let (_, fresh) = upload(&app, &ada, "new.txt", b"new").await;
    let fresh = fresh["data"]["id"].as_str().unwrap().to_owned();
    let res = chat(
        &app,
        &ada,
        json!({"message": "hi", "attachment_ids": [fresh, expired.id]}),
    )
    .await;
    assert_eq!(res.status, 422);
    assert!(res.json()["errors"]["attachment_ids.1"].is_array());
    // The janitor's sweep deletes the expired one only.
    vellum_app::llm::sweep(&app.db.conn).await.unwrap();
    let now = time::OffsetDateTime::now_utc() - Duration::from_secs(3600);
    let left = vellum_storage::ai::attachments::live(
        &app.db.conn,
        ada_id,
        &[fresh.clone(), expired.id.clone()],
        now,
    )
    .await
    .unwrap();
    let ids: Vec<&str> = left.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, [fresh.as_str()]);
}
