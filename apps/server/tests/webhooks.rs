//! Webhook delivery across a killed replica and a receiver that is down for a minute, black-box
//! (issue 24): replica A queues an item's delivery and starts sending it; the receiver holds the
//! request and A is killed (SIGKILL) mid-delivery. Replica B, started afterwards on the same
//! database, takes the job over once A's lease runs out; the receiver answers 503 for a whole
//! minute, then 200. Every request the receiver saw carried exactly the same signed message,
//! the job ends `done`, and nothing is delivered after that.
//!
//! Runs on SQLite (a shared file), or on PostgreSQL with `VELLUM_TEST_POSTGRES_URL`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

#[path = "../../../crates/http/tests/api/admin/receiver.rs"]
mod receiver;
mod support;

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use support::{Admin, ServerConfig, notes_manifest};
use vellum_storage::testing::TestDb;

/// A real minute, as the issue asks.
const DOWN: Duration = Duration::from_secs(60);
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn replica(name: &str, db: &TestDb) -> ServerConfig {
    ServerConfig::new(name, db.url())
        .env("VELLUM_JOB_POLL_MS", "100")
        .env("VELLUM_JOB_BACKOFF_BASE_MS", "500")
        .env("VELLUM_JOB_BACKOFF_MAX_SECS", "5")
        .env("VELLUM_JOB_MAX_ATTEMPTS", "100")
        .env("VELLUM_WEBHOOK_TIMEOUT_SECS", "2")
        .env("VELLUM_WEBHOOK_ALLOWED_NETWORKS", "127.0.0.0/8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_survives_a_killed_replica_and_a_receiver_down_for_a_minute() {
    let db = TestDb::new().await.unwrap();
    let admin = Admin {
        database_url: db.url().to_owned(),
        redis_url: None,
    };
    let keys = admin.apply(&notes_manifest()).await;
    let key = keys["writer-key"].clone();
    let receiver = receiver::Receiver::start().await;
    // Holds the first request open: replica A dies mid-delivery.
    receiver.answer(0);
    vellum_storage::webhooks::create(
        &db.conn,
        &vellum_storage::webhooks::WebhookSettings {
            name: "site".to_owned(),
            url: receiver.url.clone(),
            events: json!(["item.created"]).to_string(),
            collections: "[]".to_owned(),
            secret: SECRET.to_owned(),
            enabled: true,
        },
    )
    .await
    .unwrap();

    let mut a = replica("replica A", &db).start().await;
    let created = a
        .json(
            Method::POST,
            "/api/v1/collections/notes/items",
            Some(&key),
            &json!({"data": {"title": "hello"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let id = created.json()["data"]["id"].as_i64().unwrap();
    let first = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(first.len(), 1, "replica A never sent the delivery");
    a.kill();

    // The receiver is down for a minute; replica B takes the job once A's lease runs out.
    receiver.answer(503);
    let _b = replica("replica B", &db).start().await;
    let down_since = Instant::now();
    let second = receiver.wait_for(2, Duration::from_secs(30)).await;
    assert!(
        second.len() >= 2,
        "replica B never retried the dead replica's job"
    );
    tokio::time::sleep(DOWN.saturating_sub(down_since.elapsed())).await;
    let during = receiver.received().len();
    assert!(during >= 4, "only {during} attempts in a minute");
    receiver.answer(200);
    let deadline = Instant::now() + Duration::from_secs(30);
    let job = loop {
        let page = vellum_storage::jobs::list(
            &db.conn,
            Some(vellum_storage::jobs::JobStatus::Done),
            1,
            10,
        )
        .await
        .unwrap();
        if let Some(job) = page.items.into_iter().next() {
            break job;
        }
        assert!(Instant::now() < deadline, "the delivery never succeeded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Nothing arrives after the success: at least once, not more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = receiver.received();
    eprintln!(
        "webhook: {} requests, the job's {} attempts, {:?} after the receiver came back",
        got.len(),
        job.attempts,
        down_since.elapsed().saturating_sub(DOWN)
    );
    assert_eq!(usize::try_from(job.attempts).unwrap(), got.len());
    let message = &got[0];
    let body: serde_json::Value = serde_json::from_str(&message.body).unwrap();
    assert_eq!(body["type"], "item.created");
    assert_eq!(body["data"], json!({"collection": "notes", "id": id}));
    let key_bytes = vellum_app::webhooks::signing::secret_key(SECRET).unwrap();
    let timestamp: i64 = message.header("webhook-timestamp").parse().unwrap();
    assert_eq!(
        message.header("webhook-signature"),
        vellum_app::webhooks::signing::signature(
            &key_bytes,
            message.header("webhook-id"),
            timestamp,
            &message.body
        )
        .unwrap()
    );
    for attempt in &got {
        assert_eq!(attempt.header("webhook-id"), message.header("webhook-id"));
        assert_eq!(
            attempt.header("webhook-timestamp"),
            message.header("webhook-timestamp")
        );
        assert_eq!(
            attempt.header("webhook-signature"),
            message.header("webhook-signature")
        );
        assert_eq!(attempt.body, message.body);
    }
}
