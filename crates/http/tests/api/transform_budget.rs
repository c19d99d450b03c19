//! The transform budget, single flight and failure memo (issue 27), in process
//! (`transform_workers = 0`; the worker processes are tested against the real server in
//! `apps/server/tests/transform_workers.rs`): a transform needing more than the whole memory
//! budget is 422 naming the limit; a full budget is 503 with `Retry-After`, for every key of
//! every file alike; concurrent requests for one key compute once; a failed decode is computed
//! once and then answered from the memo.

use std::time::Duration;

use actix_web::http::{Method, StatusCode};
use vellum_http::HttpConfig;

use crate::files::{file_path, id_of, project};
use crate::support::{Part, TestApp, jpeg, png};

const MIB: u64 = 1024 * 1024;

fn transform_path(id: i64, key: &str) -> String {
    format!("{}/transforms/{key}", file_path(id))
}

async fn upload(app: &TestApp, filename: &str, bytes: &[u8]) -> i64 {
    let res = app
        .upload(
            Some("admin-key"),
            &[Part::file(filename, "application/octet-stream", bytes)],
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&res.body)
    );
    id_of(&res.json()["data"])
}

fn config(memory: u64) -> HttpConfig {
    HttpConfig {
        transform_memory: memory,
        transform_queue_timeout: Duration::from_millis(200),
        ..HttpConfig::default()
    }
}

#[actix_web::test]
async fn a_transform_needing_more_than_the_whole_budget_is_422_naming_the_limit() {
    // Any transform costs at least a few MiB (decoder, encoder and resizer state).
    let app = TestApp::with_config(project(), config(MIB)).await;
    let id = upload(&app, "photo.png", &png(800, 600)).await;
    let res = app.get(&transform_path(id, "small")).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = res.json()["errors"]["file"][0].as_str().unwrap().to_owned();
    assert!(
        message.contains("the limit is 1 MiB (VELLUM_TRANSFORM_MEMORY)"),
        "{message}"
    );
    // It can never fit: the second request is answered from the memo.
    let again = app.get(&transform_path(id, "small")).await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(again.json()["errors"]["file"][0], message.as_str());
    let stats = app.state.transform_stats();
    assert_eq!((stats.computed, stats.remembered), (0, 1), "{stats:?}");
}

#[actix_web::test]
async fn a_full_budget_is_503_with_retry_after_for_every_key() {
    let app = TestApp::with_config(project(), config(64 * MIB)).await;
    let id = upload(&app, "photo.jpg", &jpeg(1000, 800)).await;
    let other = upload(&app, "other.png", &png(300, 200)).await;
    let held = app
        .state
        .hold_transform_memory(63 * MIB)
        .expect("the budget is free");
    // Distinct keys and files share the one budget: none of them fits in the last MiB.
    for path in [
        transform_path(id, "size-100"),
        transform_path(id, "size-101"),
        transform_path(other, "thumbnail"),
    ] {
        let started = std::time::Instant::now();
        let res = app.get(&path).await;
        assert_eq!(res.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert_eq!(res.header("retry-after"), Some("1"), "{path}");
        assert_eq!(
            res.json(),
            serde_json::json!({"message": "Service unavailable."})
        );
        // The queue timeout (200 ms here), not the request timeout.
        assert!(started.elapsed() < Duration::from_secs(2), "{path}");
    }
    assert_eq!(app.state.transform_stats().computed, 0);
    // Busy is not the image's fault: nothing is remembered, and a retry works once there is
    // room.
    drop(held);
    let res = app.get(&transform_path(id, "size-100")).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(app.state.transform_stats().computed, 1);
}

#[actix_web::test]
async fn concurrent_requests_for_one_key_compute_once() {
    let app = TestApp::new(project()).await;
    let id = upload(&app, "race.jpg", &jpeg(1600, 1200)).await;
    let path = transform_path(id, "size-700");
    let responses = futures_util::future::join_all(
        (0..8).map(|_| app.send(TestApp::request(Method::GET, &path))),
    )
    .await;
    for res in &responses {
        assert_eq!(res.status, StatusCode::OK);
        assert_eq!(res.body, responses[0].body);
    }
    let stats = app.state.transform_stats();
    assert_eq!(stats.computed, 1, "{stats:?}");
    assert_eq!(stats.in_flight, 0, "finished computations leave the map");
    // Later requests read the stored output.
    assert_eq!(app.get(&path).await.status, StatusCode::OK);
    assert_eq!(app.state.transform_stats().computed, 1);
}

#[actix_web::test]
async fn a_failed_decode_is_computed_once_then_answered_from_the_memo() {
    let app = TestApp::new(project()).await;
    // A valid header, then the image data cut in the middle.
    let whole = png(640, 480);
    let id = upload(&app, "cut.png", &whole[..whole.len() / 2]).await;
    let path = transform_path(id, "small");
    let first = app.get(&path).await;
    assert_eq!(first.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        first.json()["errors"]["file"][0],
        "The image could not be decoded."
    );
    let stats = app.state.transform_stats();
    assert_eq!((stats.computed, stats.remembered), (1, 0), "{stats:?}");
    for _ in 0..3 {
        let again = app.get(&path).await;
        assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(again.body, first.body);
    }
    let stats = app.state.transform_stats();
    assert_eq!((stats.computed, stats.remembered), (1, 3), "{stats:?}");
    // Another key of the same file is its own computation.
    assert_eq!(
        app.get(&transform_path(id, "thumbnail")).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(app.state.transform_stats().computed, 2);
}
