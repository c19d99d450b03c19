//! Error envelopes: unknown routes, the JSON shape of every error (`message`, and `errors` on
//! 422), the body size limit (413) and server-side failures that must not leak details.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_http::HttpConfig;

use crate::support::{Response, TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// Asserts the ApiErrorEnvelope: JSON content type, a string `message`, and nothing but an
/// `errors` object of string arrays beside it. Returns the body.
fn envelope(res: &Response, what: &str) -> Value {
    let ct = res.header("content-type").unwrap_or_default();
    assert!(
        ct.starts_with("application/json"),
        "{what}: content-type {ct:?}, body {:?}",
        String::from_utf8_lossy(&res.body)
    );
    let body: Value = serde_json::from_slice(&res.body).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {:?}",
            String::from_utf8_lossy(&res.body)
        )
    });
    let obj = body.as_object().unwrap_or_else(|| panic!("{what}: {body}"));
    assert!(obj["message"].is_string(), "{what}: {body}");
    for key in obj.keys() {
        assert!(
            key == "message" || key == "errors",
            "{what}: unexpected key {key}: {body}"
        );
    }
    if let Some(errors) = obj.get("errors") {
        let errors = errors
            .as_object()
            .unwrap_or_else(|| panic!("{what}: {body}"));
        assert!(!errors.is_empty(), "{what}: {body}");
        for (field, messages) in errors {
            let messages = messages
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {field}: {body}"));
            assert!(!messages.is_empty(), "{what}: {field}: {body}");
            assert!(
                messages.iter().all(Value::is_string),
                "{what}: {field}: {body}"
            );
        }
    }
    body
}

fn bearer(app: &TestApp, key: &str) -> (String, String) {
    (
        "authorization".to_owned(),
        format!("Bearer {}", app.key(key)),
    )
}

#[actix_web::test]
async fn unknown_routes_are_404_not_found() {
    let app = TestApp::new(blog()).await;
    let paths = [
        "/api/v1",
        "/api/v1/",
        "/api/v1/nope",
        "/api/v1/collection",
        "/api/v1/collections/articles/items/1/extra",
        "/api/v1/collections/articles/fields",
        "/api/v2/collections",
        "/nope",
        "/health",
    ];
    for path in paths {
        for method in [Method::GET, Method::POST, Method::DELETE] {
            for key in [None, Some("admin-key")] {
                let mut req = TestApp::request(method.clone(), path);
                if let Some(key) = key {
                    req = req.insert_header(bearer(&app, key));
                }
                let res = app.send(req).await;
                assert_eq!(res.status, StatusCode::NOT_FOUND, "{method} {path} {key:?}");
                let body = envelope(&res, path);
                assert_eq!(body, json!({"message": "Not found."}), "{method} {path}");
            }
        }
    }
}

#[actix_web::test]
async fn an_unsupported_method_on_a_known_path_is_a_json_error() {
    let app = TestApp::new(blog()).await;
    for (method, path) in [
        (Method::PUT, format!("{ARTICLES}/1")),
        (Method::DELETE, ARTICLES.to_owned()),
        (Method::POST, "/api/v1/collections".to_owned()),
        (Method::PATCH, "/api/v1/collections/articles".to_owned()),
    ] {
        let res = app
            .send(TestApp::request(method.clone(), &path).insert_header(bearer(&app, "admin-key")))
            .await;
        assert!(
            matches!(
                res.status,
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ),
            "{method} {path}: {}",
            res.status
        );
        envelope(&res, &format!("{method} {path}"));
    }
}

#[actix_web::test]
async fn every_error_is_a_json_envelope() {
    let mut manifest = blog();
    manifest["api_keys"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "office", "role": "editor", "ip_allowlist": ["10.0.0.0/8"]}));
    let app = TestApp::new(manifest).await;
    let cases: Vec<(StatusCode, Response)> = vec![
        (
            StatusCode::UNAUTHORIZED,
            app.send(
                TestApp::request(Method::GET, ARTICLES)
                    .insert_header(("authorization", "Bearer nope")),
            )
            .await,
        ),
        (
            StatusCode::FORBIDDEN,
            app.get("/api/v1/collections/tags/items").await,
        ),
        (StatusCode::FORBIDDEN, app.get_as("office", ARTICLES).await),
        (
            StatusCode::FORBIDDEN,
            app.json(Method::POST, None, ARTICLES, json!({"data": {}}))
                .await,
        ),
        (
            StatusCode::NOT_FOUND,
            app.get("/api/v1/collections/nope").await,
        ),
        (
            StatusCode::NOT_FOUND,
            app.get(&format!("{ARTICLES}/999")).await,
        ),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            app.get(&format!("{ARTICLES}?per_page=101")).await,
        ),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            app.json(
                Method::POST,
                Some("editor-key"),
                ARTICLES,
                json!({"data": {"title": 1.5, "views": "x"}}),
            )
            .await,
        ),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            app.json(
                Method::POST,
                Some("editor-key"),
                ARTICLES,
                json!({"nodata": true}),
            )
            .await,
        ),
    ];
    for (status, res) in &cases {
        assert_eq!(
            res.status,
            *status,
            "{:?}",
            String::from_utf8_lossy(&res.body)
        );
        let body = envelope(res, status.as_str());
        let has_errors = body.get("errors").is_some();
        assert_eq!(
            has_errors,
            *status == StatusCode::UNPROCESSABLE_ENTITY,
            "{body}"
        );
        if *status == StatusCode::UNPROCESSABLE_ENTITY {
            assert_eq!(body["message"], "The given data was invalid.");
        }
    }
}

#[actix_web::test]
async fn malformed_query_parameters_are_422_naming_the_parameter() {
    let app = TestApp::new(blog()).await;
    for (query, param) in [
        ("page=abc", "page"),
        ("page=0", "page"),
        ("per_page=0", "per_page"),
        ("per_page=101", "per_page"),
        ("per_page=x", "per_page"),
        ("locale=fr", "locale"),
    ] {
        let res = app
            .get_as("editor-key", &format!("{ARTICLES}?{query}"))
            .await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        let body = envelope(&res, query);
        assert!(body["errors"].get(param).is_some(), "{query}: {body}");
    }
    let res = app
        .get_as(
            "editor-key",
            &format!("{ARTICLES}?filter%5Bviews%5D%5B_bogus%5D=1"),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let body = envelope(&res, "bad filter operator");
    assert!(
        body["errors"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("filter")),
        "{body}"
    );
    // Unknown parameters are ignored.
    let res = app
        .get_as("editor-key", &format!("{ARTICLES}?whatever=1&sortt=x"))
        .await;
    assert_eq!(res.status, StatusCode::OK);
}

#[actix_web::test]
async fn a_body_over_the_json_limit_is_413() {
    let config = HttpConfig {
        json_limit: 256,
        ..Default::default()
    };
    let app = TestApp::with_config(blog(), config).await;
    let small = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "Small"}}),
        )
        .await;
    assert_eq!(small.status, StatusCode::CREATED, "{:?}", small.json());
    let id = small.json()["data"]["id"].as_i64().unwrap();
    let before = app.get_as("admin-key", ARTICLES).await.json()["meta"]["total"].clone();

    let big = json!({"data": {"title": "x".repeat(1024)}});
    let res = app
        .json(Method::POST, Some("editor-key"), ARTICLES, big.clone())
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    envelope(&res, "413 on POST");
    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{ARTICLES}/{id}"),
            big,
        )
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    envelope(&res, "413 on PATCH");

    let after = app.get_as("admin-key", ARTICLES).await.json();
    assert_eq!(after["meta"]["total"], before, "nothing written");
    let item = app
        .get_as("admin-key", &format!("{ARTICLES}/{id}"))
        .await
        .json();
    assert_eq!(item["data"]["data"]["title"], "Small");
}

#[actix_web::test]
async fn a_database_failure_is_a_generic_5xx_envelope() {
    let app = TestApp::new(blog()).await;
    assert_eq!(
        app.get_as("editor-key", ARTICLES).await.status,
        StatusCode::OK
    );
    app.state.db().close_by_ref().await.unwrap();
    for res in [
        // A filter not listed before: its total is not remembered, so the database is asked.
        app.get_as(
            "editor-key",
            &format!("{ARTICLES}?filter[status][_eq]=draft"),
        )
        .await,
        app.json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "x"}}),
        )
        .await,
    ] {
        assert!(res.status.is_server_error(), "{}", res.status);
        let body = envelope(&res, "5xx");
        assert_eq!(body.as_object().unwrap().len(), 1, "no details: {body}");
        let text = body["message"].as_str().unwrap().to_ascii_lowercase();
        for leak in [
            "pool", "sqlx", "sqlite", "postgres", "closed", "select", "insert",
        ] {
            assert!(!text.contains(leak), "{text}");
        }
    }
}
