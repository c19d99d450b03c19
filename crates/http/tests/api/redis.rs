//! The response cache and epoch in Redis: replicas share them, and a Redis that is gone costs
//! caching, never answers.

use std::sync::Arc;

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_http::cache::RedisBackend;
use vellum_http::{AppState, Backends, HttpConfig};
use vellum_storage::blob::ObjectBlobStore;

use crate::support::{REDIS_ENV, Response, TestApp, blog, send_to};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// Another replica of `app`'s database over `redis`.
async fn replica(app: &TestApp, redis: RedisBackend) -> AppState {
    let config = HttpConfig {
        base_url: crate::support::BASE_URL.to_owned(),
        ..HttpConfig::default()
    };
    let blobs = Arc::new(ObjectBlobStore::in_memory());
    let backends = Backends::redis(&config, blobs, redis);
    AppState::with_backends(app.db.conn.clone(), config, backends)
        .await
        .unwrap()
}

async fn get(state: &AppState, key: Option<&str>, path: &str) -> Response {
    let mut req = TestApp::request(Method::GET, path);
    if let Some(secret) = key {
        req = req.insert_header(("authorization", format!("Bearer {secret}")));
    }
    send_to(state, req).await
}

async fn create(state: &AppState, secret: &str, title: &str) -> Response {
    let req = TestApp::request(Method::POST, ARTICLES)
        .insert_header(("authorization", format!("Bearer {secret}")))
        .set_json(json!({"data": {"title": title, "status": "published"}}));
    send_to(state, req).await
}

fn titles(res: &Response) -> Vec<Value> {
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["data"]["title"].clone())
        .collect()
}

/// Port 1 on loopback refuses connections: Redis is down from the start.
#[actix_web::test]
async fn without_redis_the_api_serves_uncached_and_readiness_fails() {
    let app = TestApp::new(blog()).await;
    let state = replica(&app, RedisBackend::new("redis://127.0.0.1:1", 2).unwrap()).await;
    for _ in 0..2 {
        let res = get(&state, None, ARTICLES).await;
        assert_eq!(res.status, StatusCode::OK);
        assert_eq!(res.header("x-cache"), Some("miss"));
    }
    let editor = app.key("editor-key").to_owned();
    assert_eq!(
        create(&state, &editor, "Written while Redis is down")
            .await
            .status,
        StatusCode::CREATED
    );
    let after = get(&state, Some(&editor), ARTICLES).await;
    assert!(
        titles(&after).contains(&json!("Written while Redis is down")),
        "{:?}",
        titles(&after)
    );
    let ready = get(&state, None, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        ready.json(),
        json!({"status": "failed", "checks": {"database": "ok", "redis": "failed"}, "realtime": "redis"})
    );
    assert_eq!(
        get(&state, None, "/health/live").await.status,
        StatusCode::OK
    );
}

/// Two replicas over one database and one Redis namespace: a write through one makes the next
/// read through the other fresh, for every role.
#[actix_web::test]
async fn a_write_through_one_replica_is_fresh_on_the_other() {
    let Some(url) = std::env::var(REDIS_ENV)
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("skipped: {REDIS_ENV} is not set");
        return;
    };
    let app = TestApp::new(blog()).await;
    let namespace = format!("vellum-test-{}:", uuid::Uuid::new_v4());
    let backend = || {
        RedisBackend::new(&url, 2)
            .unwrap()
            .with_namespace(&namespace)
    };
    let a = replica(&app, backend()).await;
    let b = replica(&app, backend()).await;
    let editor = app.key("editor-key").to_owned();
    for key in [None, Some(editor.as_str())] {
        assert_eq!(get(&b, key, ARTICLES).await.status, StatusCode::OK);
        let warm = get(&b, key, ARTICLES).await;
        assert_eq!(warm.header("x-cache"), Some("hit"), "{key:?}");
        // Replica A shares B's entries.
        assert_eq!(
            get(&a, key, ARTICLES).await.header("x-cache"),
            Some("hit"),
            "{key:?}"
        );
    }
    assert_eq!(
        create(&a, &editor, "Through A").await.status,
        StatusCode::CREATED
    );
    for key in [None, Some(editor.as_str())] {
        let fresh = get(&b, key, ARTICLES).await;
        assert_eq!(fresh.header("x-cache"), Some("miss"), "{key:?}");
        assert!(titles(&fresh).contains(&json!("Through A")), "{key:?}");
    }
    let ready = get(&b, None, "/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["checks"]["redis"], "ok");
}
