//! `POST /broadcasting/auth`: who may subscribe to which channel, and revocation when a user is
//! deleted.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::json;

use super::{Live, authorize, chat_channel, data, join, user};
use crate::admin::admin_at;
use crate::support::{TestApp, blog, send_to};

#[actix_web::test]
async fn a_user_may_sign_its_own_private_channel_only() {
    let app = TestApp::new(blog()).await;
    let (ada, ada_id) = user(&app.state, "ada@example.com", &["reader"]).await;
    let (_, bob_id) = user(&app.state, "bob@example.com", &["reader"]).await;
    let own = format!("private-App.Models.User.{ada_id}");
    let (status, body) = authorize(&app.state, Some(&ada), "12.34", &own).await;
    assert_eq!(status, 200, "{body}");
    let expected = app.state.realtime().credentials().sign("12.34", &own, None);
    assert_eq!(body, json!({"auth": expected}));
    for channel in [
        format!("private-App.Models.User.{bob_id}"),
        format!("private-App.Models.User.0{ada_id}"),
        "private-App.Models.User.".to_owned(),
        "private-anything".to_owned(),
        "news".to_owned(),
        "presence-other.1".to_owned(),
    ] {
        let (status, body) = authorize(&app.state, Some(&ada), "12.34", &channel).await;
        assert_eq!(status, 403, "{channel}: {body}");
        assert_eq!(body, json!({"message": "Forbidden."}));
    }
}

#[actix_web::test]
async fn a_chat_channel_carries_the_member_and_needs_the_chat_permission() {
    let app = TestApp::new(blog()).await;
    let (ada, ada_id) = user(&app.state, "ada@example.com", &["admin"]).await;
    let (reader, _) = user(&app.state, "rita@example.com", &["reader"]).await;
    let chat = chat_channel(&app.state, &ada, 5).await;
    let (status, body) = authorize(&app.state, Some(&ada), "1.2", &chat).await;
    assert_eq!(status, 200, "{body}");
    let channel_data = body["channel_data"].as_str().unwrap();
    let member: serde_json::Value = serde_json::from_str(channel_data).unwrap();
    assert_eq!(
        member,
        json!({"user_id": ada_id, "user_info": {"id": ada_id, "name": "ada@example.com"}})
    );
    let signed = app
        .state
        .realtime()
        .credentials()
        .sign("1.2", &chat, Some(channel_data));
    assert_eq!(body["auth"], signed);
    let (status, _) = authorize(&app.state, Some(&reader), "1.2", &chat).await;
    assert_eq!(status, 403);
    for bad in [
        "presence-chat.",
        "presence-chat.x",
        "presence-chat.0",
        "presence-chat.9",
        "presence-chat.00000000-0000-4000-8000-000000000000",
    ] {
        let (status, _) = authorize(&app.state, Some(&ada), "1.2", bad).await;
        assert_eq!(status, 403, "{bad}");
    }
}

#[actix_web::test]
async fn bad_input_is_422_and_no_session_is_401_in_json() {
    let app = TestApp::new(blog()).await;
    let (ada, _) = user(&app.state, "ada@example.com", &["admin"]).await;
    let chat = chat_channel(&app.state, &ada, 1).await;
    let (status, body) = authorize(&app.state, Some(&ada), "abc", "").await;
    assert_eq!(status, 422);
    assert!(body["errors"]["socket_id"].is_array(), "{body}");
    assert!(body["errors"]["channel_name"].is_array(), "{body}");
    let (status, body) = authorize(&app.state, None, "1.2", "presence-chat.1").await;
    assert_eq!(
        (status, body),
        (401, json!({"message": "Unauthenticated."}))
    );
    // pusher-js posts a form and accepts anything: still JSON, never a redirect to /login.
    let res = send_to(
        &app.state,
        TestApp::request(Method::POST, "/broadcasting/auth")
            .insert_header(("accept", "*/*"))
            .insert_header(("content-type", "application/x-www-form-urlencoded"))
            .set_payload("socket_id=1.2&channel_name=presence-chat.1"),
    )
    .await;
    assert_eq!(res.status, 401);
    let res = send_to(
        &app.state,
        TestApp::request(Method::POST, "/broadcasting/auth")
            .insert_header(("accept", "*/*"))
            .insert_header(("cookie", ada.cookie.clone()))
            .insert_header(("content-type", "application/x-www-form-urlencoded"))
            .set_payload(format!("socket_id=1.2&channel_name={chat}")),
    )
    .await;
    assert_eq!(res.status, 200);
    assert!(res.json()["channel_data"].is_string());
    // A cross-site post with the cookie is refused like every admin write.
    let res = send_to(
        &app.state,
        TestApp::request(Method::POST, "/broadcasting/auth")
            .insert_header(("cookie", ada.cookie.clone()))
            .insert_header(("sec-fetch-site", "cross-site"))
            .set_json(json!({"socket_id": "1.2", "channel_name": "presence-chat.1"})),
    )
    .await;
    assert_eq!(res.status, 403);
}

#[actix_web::test]
async fn deleting_a_user_ends_their_live_subscriptions() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let (admin, _) = user(&app.state, "root@example.com", &["super-admin"]).await;
    let (ada, ada_id) = user(&app.state, "ada@example.com", &["admin"]).await;
    let (bob, _) = user(&app.state, "bob@example.com", &["admin"]).await;
    let mut ada_ws = live.socket(&app.state).await;
    let mut bob_ws = live.socket(&app.state).await;
    let private = format!("private-App.Models.User.{ada_id}");
    join(&app.state, &mut ada_ws, &ada, &private).await;
    let chat = chat_channel(&app.state, &ada, 3).await;
    join(&app.state, &mut ada_ws, &ada, &chat).await;
    join(&app.state, &mut bob_ws, &bob, &chat).await;

    let res = admin_at(
        &app.state,
        Method::DELETE,
        &format!("/users/{ada_id}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(res.status, 204);
    let mut revoked = Vec::new();
    for _ in 0..2 {
        let error = ada_ws.expect("pusher:subscription_error").await;
        assert_eq!(data(&error)["status"], 403);
        revoked.push(error["channel"].as_str().unwrap().to_owned());
    }
    revoked.sort();
    let mut expected = vec![chat.clone(), private.clone()];
    expected.sort();
    assert_eq!(revoked, expected);
    let removed = bob_ws.expect("pusher_internal:member_removed").await;
    assert_eq!(data(&removed)["user_id"], ada_id.to_string());
    app.state
        .realtime()
        .broadcast(&private, "ChatUnreadUpdated", &json!({}), None)
        .await;
    ada_ws
        .none_of("ChatUnreadUpdated", Duration::from_millis(300))
        .await;
}
