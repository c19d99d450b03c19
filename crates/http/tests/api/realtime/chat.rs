//! Team chat's events over real sockets: what a thread's members hear on `presence-chat.{id}`
//! (messages, edits, deletes, reactions, the sender's own socket left out), what each user hears
//! on its own channel (unread counts, new conversations, mention bells), and that losing access
//! ends the subscription at once.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::{Value, json};

use super::{Live, authorize, data, join, user};
use crate::admin::{Session, admin_at};
use crate::support::{TestApp, blog, send_to};

async fn post_as(
    app: &TestApp,
    session: &Session,
    path: &str,
    body: Value,
    socket: Option<&str>,
) -> Value {
    let mut req = crate::admin::admin_request(Method::POST, path, Some(session), Some(body));
    if let Some(socket) = socket {
        req = req.insert_header(("x-socket-id", socket.to_owned()));
    }
    let res = send_to(&app.state, req).await;
    assert!(
        res.status.is_success(),
        "{path}: {}",
        String::from_utf8_lossy(&res.body)
    );
    res.json()
}

#[actix_web::test]
async fn members_hear_messages_reactions_and_unread_counts_the_sender_socket_excepted() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let (ada, ada_id) = user(&app.state, "ada@example.com", &["admin"]).await;
    let (bob, bob_id) = user(&app.state, "bob@example.com", &["admin"]).await;
    let (carl, carl_id) = user(&app.state, "carl@example.com", &["admin"]).await;
    let mut bob_private = live.socket(&app.state).await;
    join(
        &app.state,
        &mut bob_private,
        &bob,
        &format!("private-App.Models.User.{bob_id}"),
    )
    .await;

    // A new conversation reaches Bob's own channel.
    let started = post_as(
        &app,
        &ada,
        "/chat/threads",
        json!({"kind": "direct", "user_ids": [bob_id, carl_id]}),
        None,
    )
    .await;
    let chat = started["data"]["id"].as_str().unwrap().to_owned();
    let upserted = bob_private.expect("ThreadUpserted").await;
    assert_eq!(data(&upserted)["thread"]["id"], chat.as_str());
    let channel = format!("presence-chat.{chat}");

    let mut ada_ws = live.socket(&app.state).await;
    let mut bob_ws = live.socket(&app.state).await;
    join(&app.state, &mut ada_ws, &ada, &channel).await;
    join(&app.state, &mut bob_ws, &bob, &channel).await;
    // An outsider cannot subscribe.
    let (dan, _) = user(&app.state, "dan@example.com", &["admin"]).await;
    let (status, _) = authorize(&app.state, Some(&dan), "1.2", &channel).await;
    assert_eq!(status, 403);

    let posted = post_as(
        &app,
        &ada,
        &format!("/chat/{chat}/messages"),
        json!({"body": "hi @bob@example.com", "mentioned_user_ids": [bob_id]}),
        Some(&ada_ws.socket_id),
    )
    .await;
    let created = bob_ws.expect("MessageCreated").await;
    assert_eq!(data(&created)["message"], posted["data"]);
    ada_ws
        .none_of("MessageCreated", Duration::from_millis(300))
        .await;
    let unread = bob_private.expect("ChatUnreadUpdated").await;
    assert_eq!(data(&unread), json!({"chat_id": chat, "unread": 1}));
    let bell = bob_private
        .expect("Illuminate\\Notifications\\Events\\BroadcastNotificationCreated")
        .await;
    assert_eq!(data(&bell)["type"], "chat.mention");
    assert_eq!(data(&bell)["author"]["id"], ada_id);

    let message = posted["data"]["id"].as_i64().unwrap();
    post_as(
        &app,
        &bob,
        &format!("/chat/{chat}/messages/{message}/reactions"),
        json!({"emoji": "🎉"}),
        Some(&bob_ws.socket_id),
    )
    .await;
    let toggled = ada_ws.expect("ReactionToggled").await;
    assert_eq!(data(&toggled)["user_id"], bob_id);
    assert_eq!(data(&toggled)["added"], true);
    let res = admin_at(
        &app.state,
        Method::DELETE,
        &format!("/chat/{chat}/messages/{message}"),
        Some(&ada),
        None,
    )
    .await;
    assert_eq!(res.status, 204);
    let deleted = bob_ws.expect("MessageDeleted").await;
    assert_eq!(
        data(&deleted),
        json!({"chat_id": chat, "message_id": message})
    );

    // Reading tells the reader's other tabs.
    post_as(&app, &bob, &format!("/chat/{chat}/read"), json!({}), None).await;
    let read = bob_private.expect("ChatUnreadUpdated").await;
    assert_eq!(data(&read)["unread"], 0);

    // Taken out of the conversation: Carl's subscription ends at once.
    let mut carl_ws = live.socket(&app.state).await;
    join(&app.state, &mut carl_ws, &carl, &channel).await;
    let res = admin_at(
        &app.state,
        Method::PUT,
        &format!("/chat/{chat}/participants"),
        Some(&ada),
        Some(json!({"user_ids": [bob_id]})),
    )
    .await;
    assert_eq!(res.status, 200);
    let error = carl_ws.expect("pusher:subscription_error").await;
    assert_eq!(data(&error)["status"], 403);
    let (status, _) = authorize(&app.state, Some(&carl), "1.2", &channel).await;
    assert_eq!(status, 403);
}
