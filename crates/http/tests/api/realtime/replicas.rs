//! Two replicas of one project, each serving its own sockets: presence, events and revocations
//! cross between them over Redis pub/sub (`VELLUM_TEST_REDIS_URL`) or PostgreSQL `NOTIFY`
//! (`VELLUM_TEST_POSTGRES_URL` without Redis). A replica that dies loses its members through
//! its lease. Skipped when the service is not configured.

use std::time::Duration;

use serde_json::json;
use vellum_http::realtime::RealtimeConfig;
use vellum_http::{AppState, HttpConfig};

use super::{Live, data, join, user};
use crate::admin::replicas;
use crate::support::{REDIS_ENV, TestApp, blog};

fn config() -> HttpConfig {
    HttpConfig {
        realtime: RealtimeConfig {
            lease: Duration::from_secs(1),
            heartbeat: Duration::from_millis(200),
            ..RealtimeConfig::default()
        },
        ..HttpConfig::default()
    }
}

/// Waits until both replicas receive from their transport.
async fn connected(a: &AppState, b: &AppState) {
    super::eventually(|| a.realtime().healthy() && b.realtime().healthy()).await;
}

async fn across(a: AppState, b: AppState, backend: &str) {
    assert_eq!(a.realtime().backend(), backend);
    connected(&a, &b).await;
    let live_a = Live::serve(&a);
    let live_b = Live::serve(&b);
    let (ada, ada_id) = user(&a, "ada@example.com", &["admin"]).await;
    let (bob, _) = user(&a, "bob@example.com", &["admin"]).await;
    let channel = &super::chat_channel(&a, &ada, 5).await;
    let second = super::chat_channel(&a, &ada, 4).await;

    let mut ada_ws = live_a.socket(&a).await;
    join(&a, &mut ada_ws, &ada, channel).await;
    // Bob on the other replica sees Ada in the roster, and Ada sees Bob arrive.
    let mut bob_ws = live_b.socket(&b).await;
    let roster = join(&b, &mut bob_ws, &bob, channel).await;
    assert_eq!(data(&roster)["presence"]["count"], 2, "{roster}");
    ada_ws.expect("pusher_internal:member_added").await;

    // Ada's second tab on replica B: nobody hears of it.
    let mut ada_tab = live_b.socket(&b).await;
    join(&b, &mut ada_tab, &ada, channel).await;
    bob_ws
        .none_of("pusher_internal:member_added", Duration::from_millis(500))
        .await;

    // An event published on A reaches B's sockets, except the one excluded.
    a.realtime()
        .broadcast(
            channel,
            "MessageCreated",
            &json!({"id": 1}),
            Some(&ada_tab.socket_id),
        )
        .await;
    let event = bob_ws.expect("MessageCreated").await;
    assert_eq!(data(&event), json!({"id": 1}));
    ada_ws.expect("MessageCreated").await;
    ada_tab
        .none_of("MessageCreated", Duration::from_millis(300))
        .await;

    // Revoking Ada on B ends her subscription on A too; her tab on A leaving with it.
    b.realtime().revoke(&ada_id.to_string(), None).await;
    ada_ws.expect("pusher:subscription_error").await;
    ada_tab.expect("pusher:subscription_error").await;
    let removed = bob_ws.expect("pusher_internal:member_removed").await;
    assert_eq!(data(&removed)["user_id"], ada_id.to_string());

    // Replica B dies without a word: A removes Bob once B's lease runs out.
    join(&a, &mut ada_ws, &ada, &second).await;
    let mut bob_b = live_b.socket(&b).await;
    join(&b, &mut bob_b, &bob, &second).await;
    ada_ws.expect("pusher_internal:member_added").await;
    b.realtime().kill();
    let started = std::time::Instant::now();
    let removed = ada_ws.expect("pusher_internal:member_removed").await;
    assert_eq!(removed["channel"], second.as_str());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[actix_web::test]
async fn replicas_share_presence_and_events_over_redis() {
    let Ok(url) = std::env::var(REDIS_ENV) else {
        eprintln!("skipped: {REDIS_ENV} is not set");
        return;
    };
    let app = TestApp::new(blog()).await;
    let (a, b) = replicas(&app, &config(), Some(url.trim())).await;
    across(a, b, "redis").await;
}

#[actix_web::test]
async fn replicas_share_presence_and_events_over_postgres_notify() {
    if std::env::var(vellum_storage::testing::POSTGRES_ENV).is_err() {
        eprintln!("skipped: PostgreSQL is not configured");
        return;
    }
    let app = TestApp::new(blog()).await;
    let (a, b) = replicas(&app, &config(), None).await;
    across(a, b, "postgres").await;
}
