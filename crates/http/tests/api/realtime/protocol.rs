//! The Pusher protocol as a client sees it: connection, ping, refusals, subscriptions, events,
//! presence, client events and the server's bounds (frame size, queue, activity, shutdown).

use std::time::{Duration, Instant};

use serde_json::json;
use vellum_http::HttpConfig;
use vellum_http::realtime::RealtimeConfig;

use super::{Live, WAIT, Ws, authorize, chat_channel, data, join, user};
use crate::support::{TestApp, blog};

async fn app_with(realtime: RealtimeConfig) -> TestApp {
    TestApp::with_config(
        blog(),
        HttpConfig {
            realtime,
            ..HttpConfig::default()
        },
    )
    .await
}

fn close_code(frame: Option<tokio_tungstenite::tungstenite::protocol::CloseFrame>) -> u16 {
    u16::from(frame.expect("a close frame").code)
}

#[actix_web::test]
async fn a_socket_is_established_with_an_id_and_answers_pings() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let mut ws = live.socket(&app.state).await;
    let (node, local) = ws.socket_id.split_once('.').unwrap();
    assert!(
        node.bytes()
            .chain(local.bytes())
            .all(|b| b.is_ascii_digit())
    );
    let other = live.socket(&app.state).await;
    assert_ne!(ws.socket_id, other.socket_id);
    ws.send(json!({"event": "pusher:ping", "data": {}})).await;
    let pong = ws.expect("pusher:pong").await;
    assert_eq!(pong["data"], "{}");
    assert_eq!(app.state.realtime().sockets(), 2);
    other.close().await;
    ws.close().await;
    super::eventually(|| app.state.realtime().sockets() == 0).await;
}

#[actix_web::test]
async fn a_wrong_key_or_protocol_is_answered_with_its_error_and_close_code() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let key = app.state.realtime().credentials().key().to_owned();
    for (url, code) in [
        (live.url("wrong-key", "?protocol=7"), 4001),
        (live.url(&key, ""), 4008),
        (live.url(&key, "?protocol=8"), 4007),
        (live.url(&key, "?protocol=seven"), 4007),
    ] {
        let mut ws = Ws::raw(&url, None).await.unwrap();
        let error = ws.expect("pusher:error").await;
        assert_eq!(data(&error)["code"], code, "{url}: {error}");
        assert_eq!(close_code(ws.closed(WAIT).await), code, "{url}");
    }
    assert_eq!(app.state.realtime().sockets(), 0);
}

#[actix_web::test]
async fn a_foreign_origin_is_refused_before_the_upgrade() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let url = live.url(app.state.realtime().credentials().key(), "?protocol=7");
    match Ws::raw(&url, Some("https://evil.example")).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status(), 403),
        Err(other) => panic!("expected a 403, got {other}"),
        Ok(_) => panic!("a foreign origin was upgraded"),
    }
    let mut same = Ws::raw(&url, Some(crate::support::BASE_URL)).await.unwrap();
    same.expect("pusher:connection_established").await;
}

#[actix_web::test]
async fn subscriptions_need_a_valid_signature_on_a_signed_channel() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let (session, id) = user(&app.state, "ada@example.com", &["admin"]).await;
    let mut ws = live.socket(&app.state).await;
    let channel = format!("private-App.Models.User.{id}");
    join(&app.state, &mut ws, &session, &channel).await;

    // A signature for another socket, none, a public channel, a malformed message.
    let (_, other_auth) = authorize(&app.state, Some(&session), "1.1", &channel).await;
    let mut second = live.socket(&app.state).await;
    let refused = second.subscribe(&channel, &other_auth).await;
    assert_eq!(refused["event"], "pusher:subscription_error");
    assert_eq!(data(&refused)["status"], 401);
    let unsigned = second.subscribe(&channel, &json!({})).await;
    assert_eq!(data(&unsigned)["status"], 401);
    let public = second.subscribe("news", &json!({})).await;
    assert_eq!(data(&public)["status"], 403);
    second.send_text("not json").await;
    let error = second.expect("pusher:error").await;
    assert!(data(&error)["message"].as_str().unwrap().contains("JSON"));

    // Events reach the subscriber only, data as a JSON string; the sender's socket is skipped.
    let realtime = app.state.realtime();
    realtime
        .broadcast(&channel, "ChatUnreadUpdated", &json!({"count": 3}), None)
        .await;
    let event = ws.expect("ChatUnreadUpdated").await;
    assert_eq!(event["channel"], channel);
    assert_eq!(data(&event), json!({"count": 3}));
    realtime
        .broadcast(
            &channel,
            "ChatUnreadUpdated",
            &json!({"count": 4}),
            Some(&ws.socket_id),
        )
        .await;
    ws.none_of("ChatUnreadUpdated", Duration::from_millis(300))
        .await;
    second
        .none_of("ChatUnreadUpdated", Duration::from_millis(100))
        .await;

    ws.send(json!({"event": "pusher:unsubscribe", "data": {"channel": channel}}))
        .await;
    super::eventually(|| realtime.channels() == 0).await;
    realtime
        .broadcast(&channel, "ChatUnreadUpdated", &json!({"count": 5}), None)
        .await;
    ws.none_of("ChatUnreadUpdated", Duration::from_millis(300))
        .await;
}

#[actix_web::test]
async fn presence_counts_a_user_once_across_tabs() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let ada = app.signed_in("ada@example.com", &["admin"]).await;
    let bob = app.signed_in("bob@example.com", &["admin"]).await;
    let channel = &chat_channel(&app.state, &ada, 4).await;
    let mut observer = live.socket(&app.state).await;
    let roster = join(&app.state, &mut observer, &bob, channel).await;
    assert_eq!(data(&roster)["presence"]["count"], 1);

    let mut tab1 = live.socket(&app.state).await;
    let first = join(&app.state, &mut tab1, &ada, channel).await;
    let presence = &data(&first)["presence"];
    assert_eq!(presence["count"], 2, "{presence}");
    let added = observer.expect("pusher_internal:member_added").await;
    let member = data(&added);
    assert_eq!(member["user_info"]["name"], "ada@example.com");
    let ada_id = member["user_id"].clone();
    assert_eq!(
        presence["hash"][ada_id.to_string().trim_matches('"')]["name"],
        "ada@example.com"
    );

    // A second tab of the same user: no second member_added.
    let mut tab2 = live.socket(&app.state).await;
    join(&app.state, &mut tab2, &ada, channel).await;
    observer
        .none_of("pusher_internal:member_added", Duration::from_millis(300))
        .await;
    // Closing one tab removes nobody; closing the last removes the user once.
    tab1.close().await;
    observer
        .none_of("pusher_internal:member_removed", Duration::from_millis(300))
        .await;
    tab2.close().await;
    let removed = observer.expect("pusher_internal:member_removed").await;
    assert_eq!(data(&removed)["user_id"], ada_id);
    observer
        .none_of("pusher_internal:member_removed", Duration::from_millis(300))
        .await;
}

#[actix_web::test]
async fn client_events_are_refused_unless_enabled() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let ada = app.signed_in("ada@example.com", &["admin"]).await;
    let mut a = live.socket(&app.state).await;
    let mut b = live.socket(&app.state).await;
    let chat = chat_channel(&app.state, &ada, 1).await;
    join(&app.state, &mut a, &ada, &chat).await;
    join(&app.state, &mut b, &ada, &chat).await;
    a.send(json!({"event": "client-typing", "channel": chat, "data": {}}))
        .await;
    let error = a.expect("pusher:error").await;
    assert!(
        data(&error)["message"]
            .as_str()
            .unwrap()
            .contains("not enabled")
    );
    b.none_of("client-typing", Duration::from_millis(300)).await;
}

#[actix_web::test]
async fn enabled_client_events_reach_the_others_at_a_bounded_rate() {
    let app = app_with(RealtimeConfig {
        client_events: true,
        client_event_rate: 3,
        ..RealtimeConfig::default()
    })
    .await;
    let live = Live::start(&app);
    let ada = app.signed_in("ada@example.com", &["admin"]).await;
    let bob = app.signed_in("bob@example.com", &["admin"]).await;
    let mut a = live.socket(&app.state).await;
    let mut b = live.socket(&app.state).await;
    let chat = chat_channel(&app.state, &ada, 1).await;
    let other = chat_channel(&app.state, &ada, 2).await;
    join(&app.state, &mut a, &ada, &chat).await;
    join(&app.state, &mut b, &bob, &chat).await;
    // Not subscribed: refused.
    a.send(json!({"event": "client-x", "channel": other, "data": {}}))
        .await;
    a.expect("pusher:error").await;
    // Two seconds' worth may come at once (events queued behind a pause), not more.
    for n in 0..7 {
        a.send(json!({"event": "client-typing", "channel": chat, "data": {"n": n}}))
            .await;
    }
    for n in 0..6 {
        let event = b.expect("client-typing").await;
        assert_eq!(data(&event), json!({"n": n}));
        assert!(event["user_id"].is_string(), "{event}");
    }
    let limited = a.expect("pusher:error").await;
    assert_eq!(data(&limited)["code"], 4301);
    b.none_of("client-typing", Duration::from_millis(300)).await;
}

#[actix_web::test]
async fn a_frame_over_64_kib_closes_the_socket() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let mut ws = live.socket(&app.state).await;
    let big = json!({"event": "pusher:ping", "data": {"pad": "x".repeat(70 * 1024)}});
    ws.send(big).await;
    assert_eq!(close_code(ws.closed(WAIT).await), 1009);
    super::eventually(|| app.state.realtime().sockets() == 0).await;
}

#[actix_web::test]
async fn a_client_that_stops_reading_is_closed_with_4200_and_the_others_still_receive() {
    // A queue of 64 frames (2 MiB here) leaves the reading client room to lag on a loaded
    // machine; the stalled one still fills it once the kernel's buffers are full.
    let app = app_with(RealtimeConfig {
        queue: 64,
        ..RealtimeConfig::default()
    })
    .await;
    let live = Live::start(&app);
    let (ada, id) = user(&app.state, "ada@example.com", &["admin"]).await;
    let channel = format!("private-App.Models.User.{id}");
    let mut stalled = live.socket(&app.state).await;
    let mut reader = live.socket(&app.state).await;
    join(&app.state, &mut stalled, &ada, &channel).await;
    join(&app.state, &mut reader, &ada, &channel).await;
    let payload = json!({"pad": "y".repeat(32 * 1024)});
    let reading = actix_web::rt::spawn(async move {
        let mut got = 0;
        while let Some(frame) = reader.next(Duration::from_secs(3)).await {
            if frame["event"] == "Big" {
                got += 1;
            }
        }
        got
    });
    // 25 MiB: more than the kernel's socket buffers hold for a client that does not read.
    for _ in 0..800 {
        app.state
            .realtime()
            .broadcast(&channel, "Big", &payload, None)
            .await;
        actix_web::rt::time::sleep(Duration::from_millis(1)).await;
    }
    // The stalled socket was cut off; it finds its 4200 once it reads again.
    assert_eq!(
        close_code(stalled.closed(Duration::from_secs(20)).await),
        4200
    );
    let got = reading.await.unwrap();
    assert_eq!(got, 800, "the reading client missed events");
}

#[actix_web::test]
async fn a_silent_socket_is_pinged_then_closed_with_4201() {
    let app = app_with(RealtimeConfig {
        activity_timeout: Duration::from_millis(500),
        pong_timeout: Duration::from_millis(500),
        ..RealtimeConfig::default()
    })
    .await;
    let live = Live::start(&app);
    let key = app.state.realtime().credentials().key().to_owned();
    let mut ws = Ws::raw(&live.url(&key, "?protocol=7"), None).await.unwrap();
    ws.expect("pusher:connection_established").await;
    let started = Instant::now();
    ws.expect("pusher:ping").await;
    assert_eq!(close_code(ws.closed(WAIT).await), 4201);
    assert!(started.elapsed() >= Duration::from_millis(900));

    // A client that answers stays.
    let mut alive = Ws::raw(&live.url(&key, "?protocol=7"), None).await.unwrap();
    alive.expect("pusher:connection_established").await;
    for _ in 0..3 {
        alive.expect("pusher:ping").await;
        alive
            .send(json!({"event": "pusher:pong", "data": {}}))
            .await;
    }
    assert_eq!(app.state.realtime().sockets(), 1);
}

#[actix_web::test]
async fn a_stopping_server_closes_its_sockets_with_4200_and_refuses_new_ones() {
    let app = TestApp::new(blog()).await;
    let live = Live::start(&app);
    let mut ws = live.socket(&app.state).await;
    app.state.realtime().shutdown().await;
    assert_eq!(close_code(ws.closed(WAIT).await), 4200);
    let key = app.state.realtime().credentials().key().to_owned();
    let mut late = Ws::raw(&live.url(&key, "?protocol=7"), None).await.unwrap();
    let error = late.expect("pusher:error").await;
    assert_eq!(data(&error)["code"], 4200);
}

#[actix_web::test]
async fn sockets_beyond_the_limit_are_refused_with_4100() {
    let app = app_with(RealtimeConfig {
        max_connections: 2,
        max_subscriptions: 1,
        ..RealtimeConfig::default()
    })
    .await;
    let live = Live::start(&app);
    let ada = app.signed_in("ada@example.com", &["admin"]).await;
    let mut first = live.socket(&app.state).await;
    let _second = live.socket(&app.state).await;
    let key = app.state.realtime().credentials().key().to_owned();
    let mut third = Ws::raw(&live.url(&key, "?protocol=7"), None).await.unwrap();
    assert_eq!(data(&third.expect("pusher:error").await)["code"], 4100);
    let chat = chat_channel(&app.state, &ada, 1).await;
    let other = chat_channel(&app.state, &ada, 2).await;
    join(&app.state, &mut first, &ada, &chat).await;
    let (_, auth) = authorize(&app.state, Some(&ada), &first.socket_id, &other).await;
    let refused = first.subscribe(&other, &auth).await;
    assert_eq!(data(&refused)["status"], 403);
}

#[actix_web::test]
async fn one_client_address_holds_at_most_its_share_of_sockets() {
    let app = TestApp::with_config(
        blog(),
        HttpConfig {
            realtime: RealtimeConfig {
                max_connections_per_address: 2,
                ..RealtimeConfig::default()
            },
            // The test client is the proxy: X-Forwarded-For names the client.
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            ..HttpConfig::default()
        },
    )
    .await;
    let live = Live::start(&app);
    let key = app.state.realtime().credentials().key().to_owned();
    let url = live.url(&key, "?protocol=7");
    let from = |ip| [("x-forwarded-for", ip)];
    let established = |ws: Ws| async move {
        let mut ws = ws;
        ws.expect("pusher:connection_established").await;
        ws
    };
    let first = established(Ws::raw_with(&url, &from("203.0.113.7")).await.unwrap()).await;
    let _second = established(Ws::raw_with(&url, &from("203.0.113.7")).await.unwrap()).await;

    let mut third = Ws::raw_with(&url, &from("203.0.113.7")).await.unwrap();
    let error = data(&third.expect("pusher:error").await);
    assert_eq!(error["code"], 4100);
    assert_eq!(error["message"], "Too many connections from this address.");
    assert_eq!(close_code(third.closed(WAIT).await), 4100);

    // Another address, and another IPv6 /64, have their own share; one /64 is one client.
    let _other = established(Ws::raw_with(&url, &from("203.0.113.8")).await.unwrap()).await;
    let _v6 = established(Ws::raw_with(&url, &from("2001:db8:0:1::1")).await.unwrap()).await;
    let _v6b = established(Ws::raw_with(&url, &from("2001:db8:0:1::2")).await.unwrap()).await;
    let mut v6c = Ws::raw_with(&url, &from("2001:db8:0:1:abcd::3"))
        .await
        .unwrap();
    assert_eq!(data(&v6c.expect("pusher:error").await)["code"], 4100);

    // A forwarded entry that is no address counts against the proxy that sent it, not nobody.
    let _garbled = established(Ws::raw_with(&url, &from("not-an-address")).await.unwrap()).await;
    let _garbled2 = established(Ws::raw_with(&url, &from("not-an-address")).await.unwrap()).await;
    let mut garbled3 = Ws::raw_with(&url, &from("not-an-address")).await.unwrap();
    assert_eq!(data(&garbled3.expect("pusher:error").await)["code"], 4100);

    // A closed socket gives its place back.
    first.close().await;
    let mut again = None;
    for _ in 0..50 {
        let mut ws = Ws::raw_with(&url, &from("203.0.113.7")).await.unwrap();
        let frame = ws.next(WAIT).await.unwrap_or_default();
        if frame["event"] == "pusher:connection_established" {
            again = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "the closed socket's place was released");
}
