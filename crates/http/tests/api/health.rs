//! The unauthenticated probes (`/up`, `/health/live`, `/health/ready`) and the `x-request-id`
//! every response carries.

use actix_web::http::header::HeaderValue;
use actix_web::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{Response, TestApp, blog};

fn gated() -> serde_json::Value {
    let mut m = blog();
    m["settings"]["public_api_allowed_origins"] = json!(["https://app.example.com"]);
    m
}

fn assert_json(res: &Response) {
    let ct = res.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("application/json"), "{ct}");
}

/// A request id the server made up: non-empty, short, printable.
fn assert_generated(id: &str, sent: &[u8]) {
    assert!(!id.is_empty() && id.len() <= 128, "{id:?}");
    assert!(id.bytes().all(|b| b.is_ascii_graphic()), "{id:?}");
    assert_ne!(id.as_bytes(), sent);
}

#[actix_web::test]
async fn the_probes_answer() {
    let app = TestApp::new(blog()).await;
    let up = app.get("/up").await;
    assert_eq!(up.status, StatusCode::OK);
    let live = app.get("/health/live").await;
    assert_eq!(live.status, StatusCode::OK);
    assert_json(&live);
    assert_eq!(live.json(), json!({"status": "ok"}));
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_json(&ready);
    assert_eq!(ready.json(), crate::support::ready_body("ok", "ok"));
    for path in ["/up", "/health/live", "/health/ready"] {
        let again = app.get(path).await;
        assert_eq!(again.status, StatusCode::OK, "{path}");
        assert_eq!(
            again.header("x-cache"),
            None,
            "probes are never cached: {path}"
        );
    }
}

#[actix_web::test]
async fn the_probes_ignore_the_gate_and_credentials() {
    let app = TestApp::new(gated()).await;
    assert_eq!(
        app.get("/api/v1/collections").await.status,
        StatusCode::FORBIDDEN,
        "the gate is on"
    );
    for path in ["/up", "/health/live", "/health/ready"] {
        let plain = app.get(path).await;
        assert_eq!(plain.status, StatusCode::OK, "{path}");
        let odd = app
            .send(
                TestApp::request(Method::GET, path)
                    .insert_header(("origin", "https://evil.test"))
                    .insert_header((
                        "authorization",
                        "Bearer ek_ffffffffffffffffffffffffffffffffffffffff",
                    )),
            )
            .await;
        assert_eq!(odd.status, StatusCode::OK, "{path}");
        assert_eq!(odd.body, plain.body, "{path}");
    }
    assert_eq!(
        app.get("/health/ready").await.json(),
        crate::support::ready_body("ok", "ok")
    );
}

#[actix_web::test]
async fn ready_is_503_when_the_database_is_gone() {
    let app = TestApp::new(blog()).await;
    assert_eq!(app.get("/health/ready").await.status, StatusCode::OK);
    // The state's connection is the pool the server uses; closing it is the database going away.
    app.state.db().close_by_ref().await.unwrap();
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_json(&ready);
    assert_eq!(ready.json(), crate::support::ready_body("failed", "failed"));
    assert!(ready.header("x-request-id").is_some());
    // Liveness does not depend on the database.
    assert_eq!(app.get("/health/live").await.status, StatusCode::OK);
    assert_eq!(app.get("/up").await.status, StatusCode::OK);
}

#[actix_web::test]
async fn every_response_has_a_request_id() {
    let app = TestApp::new(gated()).await;
    let key = app.key("editor-key").to_owned();
    let responses = [
        app.get("/up").await,
        app.get("/health/live").await,
        app.get("/health/ready").await,
        app.get("/nope").await,
        app.get("/api/v1/collections").await,
        app.get_as("editor-key", "/api/v1/collections").await,
        app.get_as("editor-key", "/api/v1/collections").await,
        app.get_as("editor-key", "/api/v1/collections/nope").await,
        app.get_as("reader-key", "/api/v1/collections/articles/items")
            .await,
        app.get_as(
            "editor-key",
            "/api/v1/collections/articles/items?per_page=0",
        )
        .await,
        app.send(
            TestApp::request(Method::GET, "/api/v1/collections")
                .insert_header(("origin", "https://app.example.com"))
                .insert_header(("authorization", "Bearer nope")),
        )
        .await,
        app.send(
            TestApp::request(Method::OPTIONS, "/api/v1/collections")
                .insert_header(("origin", "https://app.example.com"))
                .insert_header(("access-control-request-method", "GET")),
        )
        .await,
        app.json(
            Method::POST,
            Some("editor-key"),
            "/api/v1/collections/articles/items",
            json!({"data": {"title": "Id", "status": "published"}}),
        )
        .await,
        app.send(
            TestApp::request(Method::DELETE, "/api/v1/collections/articles/items/999")
                .insert_header(("authorization", format!("Bearer {key}"))),
        )
        .await,
    ];
    let mut ids: Vec<String> = Vec::new();
    for res in &responses {
        let id = res
            .header("x-request-id")
            .unwrap_or_else(|| panic!("no x-request-id on a {} response", res.status));
        assert_generated(id, b"");
        ids.push(id.to_owned());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), responses.len(), "generated ids are unique");
}

#[actix_web::test]
async fn a_sane_request_id_is_echoed() {
    let app = TestApp::new(blog()).await;
    for sent in ["abc-123", "trace_ID.9:7/x", &"a".repeat(128)] {
        for path in ["/health/live", "/api/v1/collections", "/api/v1/nope"] {
            let res = app
                .send(
                    TestApp::request(Method::GET, path)
                        .insert_header(("x-request-id", sent.to_owned())),
                )
                .await;
            assert_eq!(res.header("x-request-id"), Some(sent), "{path}");
        }
    }
    // Also on a cached replay.
    let res = app
        .send(
            TestApp::request(Method::GET, "/api/v1/collections")
                .insert_header(("x-request-id", "replayed-1")),
        )
        .await;
    assert_eq!(res.header("x-cache"), Some("hit"));
    assert_eq!(res.header("x-request-id"), Some("replayed-1"));
}

#[actix_web::test]
async fn an_insane_request_id_is_replaced() {
    let app = TestApp::new(blog()).await;
    let long = "a".repeat(129);
    let insane: [&[u8]; 5] = [
        long.as_bytes(),
        b"has space",
        b"tab\there",
        b"caf\xc3\xa9",
        b"",
    ];
    for sent in insane {
        for path in ["/health/live", "/api/v1/collections"] {
            let res = app
                .send(
                    TestApp::request(Method::GET, path)
                        .insert_header(("x-request-id", HeaderValue::from_bytes(sent).unwrap())),
                )
                .await;
            assert_eq!(res.status, StatusCode::OK);
            let id = res
                .header("x-request-id")
                .unwrap_or_else(|| panic!("{sent:?} {path}"));
            assert_generated(id, sent);
        }
    }
}
