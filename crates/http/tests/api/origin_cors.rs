//! The origin gate (`public_api_allowed_origins`), row by row of the spec's table and the
//! contract's "Further decisions", and the CORS headers derived from it.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_http::HttpConfig;
use vellum_policy::{CorsOrigins, Origin};

use crate::support::{Response, TestApp, blog};

const APP: &str = "https://app.example.com";
const ARTICLES: &str = "/api/v1/collections/articles/items";
const UNKNOWN_KEY: &str = "ek_ffffffffffffffffffffffffffffffffffffffff";

/// The blog with the gate on, plus an expired key and a key restricted to `10.0.0.0/8`.
fn gated() -> Value {
    let mut m = ungated();
    m["settings"]["public_api_allowed_origins"] = json!([APP]);
    m
}

fn ungated() -> Value {
    let mut m = blog();
    m["api_keys"].as_array_mut().unwrap().extend([
        json!({"name": "expired", "role": "editor", "expires_at": "2000-01-01T00:00:00Z"}),
        json!({"name": "office", "role": "editor", "ip_allowlist": ["10.0.0.0/8"]}),
        json!({"name": "revoked", "role": "editor"}),
    ]);
    m
}

async fn revoke(app: &TestApp, name: &str) {
    vellum_storage::keys::revoke_api_key(&app.db.conn, name)
        .await
        .unwrap();
    app.state.invalidate().await;
}

/// GET `path` with an optional `Origin` and an optional bearer secret.
async fn get(app: &TestApp, path: &str, origin: Option<&str>, secret: Option<&str>) -> Response {
    let mut req = TestApp::request(Method::GET, path);
    if let Some(origin) = origin {
        req = req.insert_header(("origin", origin.to_owned()));
    }
    if let Some(secret) = secret {
        req = req.insert_header(("authorization", format!("Bearer {secret}")));
    }
    app.send(req).await
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> Response {
    app.send(
        TestApp::request(Method::OPTIONS, path)
            .insert_header(("origin", origin.to_owned()))
            .insert_header(("access-control-request-method", "POST"))
            .insert_header((
                "access-control-request-headers",
                "authorization, content-type",
            )),
    )
    .await
}

fn message(text: &str) -> Value {
    json!({"message": text})
}

#[actix_web::test]
async fn an_allowed_origin_proceeds_anonymously_and_with_a_key() {
    let app = TestApp::new(gated()).await;
    let anonymous = get(&app, ARTICLES, Some(APP), None).await;
    assert_eq!(anonymous.status, StatusCode::OK);
    assert_eq!(anonymous.json()["meta"]["total"], 1, "acts as public");
    let editor = get(&app, ARTICLES, Some(APP), Some(app.key("editor-key"))).await;
    assert_eq!(editor.status, StatusCode::OK);
    assert_eq!(editor.json()["meta"]["total"], 2, "acts as the key's role");
    let collections = get(&app, "/api/v1/collections", Some(APP), None).await;
    assert_eq!(collections.status, StatusCode::OK);
    let write = app
        .send(
            TestApp::request(Method::POST, ARTICLES)
                .insert_header(("origin", APP))
                .insert_header(("authorization", format!("Bearer {}", app.key("editor-key"))))
                .set_json(json!({"data": {"title": "Via browser", "status": "published"}})),
        )
        .await;
    assert_eq!(write.status, StatusCode::CREATED, "{:?}", write.json());
}

#[actix_web::test]
async fn an_origin_not_in_the_list_is_403_even_with_a_valid_key() {
    let app = TestApp::new(gated()).await;
    for origin in [
        "https://evil.test",
        "http://app.example.com",
        "https://app.example.com:8443",
        "https://app.example.com.evil.test",
        "https://sub.app.example.com",
        "null",
        "garbage",
    ] {
        for secret in [
            None,
            Some(app.key("editor-key")),
            Some(app.key("admin-key")),
            Some(UNKNOWN_KEY),
        ] {
            let res = get(&app, ARTICLES, Some(origin), secret).await;
            assert_eq!(res.status, StatusCode::FORBIDDEN, "{origin} {secret:?}");
            assert_eq!(
                res.json(),
                message("Origin not allowed."),
                "{origin} {secret:?}"
            );
        }
    }
    let write = app
        .send(
            TestApp::request(Method::POST, ARTICLES)
                .insert_header(("origin", "https://evil.test"))
                .insert_header(("authorization", format!("Bearer {}", app.key("editor-key"))))
                .set_json(json!({"data": {"title": "x", "status": "published"}})),
        )
        .await;
    assert_eq!(write.status, StatusCode::FORBIDDEN);
    assert_eq!(write.json(), message("Origin not allowed."));
    assert_eq!(
        get(&app, ARTICLES, Some(APP), Some(app.key("admin-key")))
            .await
            .json()["meta"]["total"],
        2,
        "nothing written"
    );
}

#[actix_web::test]
async fn no_origin_and_no_key_is_403() {
    let app = TestApp::new(gated()).await;
    for path in [
        ARTICLES,
        "/api/v1/collections",
        "/api/v1/collections/articles",
        "/api/v1/collections/articles/items/4",
        "/api/v1/collections/nope/items",
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.json(), message("Origin required or API key."), "{path}");
    }
    let write = app
        .json(
            Method::POST,
            None,
            ARTICLES,
            json!({"data": {"title": "x"}}),
        )
        .await;
    assert_eq!(write.status, StatusCode::FORBIDDEN);
    assert_eq!(write.json(), message("Origin required or API key."));
}

#[actix_web::test]
async fn no_origin_with_a_valid_key_proceeds_then_ip_and_grants_apply() {
    let app = TestApp::new(gated()).await;
    let res = app.get_as("editor-key", ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 2);
    let res = app.get_as("office", ARTICLES).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), message("IP address not allowed."));
    let res = app.get_as("reader-key", ARTICLES).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), message("Forbidden."));
}

#[actix_web::test]
async fn no_origin_with_an_unknown_revoked_or_expired_key_is_origin_required() {
    let app = TestApp::new(gated()).await;
    revoke(&app, "revoked").await;
    let secrets = [
        UNKNOWN_KEY.to_owned(),
        "garbage".to_owned(),
        app.key("revoked").to_owned(),
        app.key("expired").to_owned(),
    ];
    for secret in &secrets {
        let res = get(&app, ARTICLES, None, Some(secret)).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{secret}");
        assert_eq!(
            res.json(),
            message("Origin required or API key."),
            "{secret}"
        );
    }
    let basic = app
        .send(
            TestApp::request(Method::GET, ARTICLES)
                .insert_header(("authorization", "Basic dXNlcjpwYXNz")),
        )
        .await;
    assert_eq!(basic.status, StatusCode::FORBIDDEN);
    assert_eq!(basic.json(), message("Origin required or API key."));
}

#[actix_web::test]
async fn an_allowed_origin_with_an_invalid_key_is_401() {
    let app = TestApp::new(gated()).await;
    revoke(&app, "revoked").await;
    let secrets = [
        UNKNOWN_KEY.to_owned(),
        "garbage".to_owned(),
        app.key("revoked").to_owned(),
        app.key("expired").to_owned(),
    ];
    for secret in &secrets {
        let res = get(&app, ARTICLES, Some(APP), Some(secret)).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{secret}");
        assert_eq!(res.json(), message("Invalid API key."), "{secret}");
        assert_eq!(
            res.header("access-control-allow-origin"),
            Some(APP),
            "a browser must be able to read the error"
        );
    }
}

#[actix_web::test]
async fn with_an_empty_list_the_gate_is_off() {
    let app = TestApp::new(ungated()).await;
    let res = app.get(ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 1);
    let res = get(&app, ARTICLES, Some("https://anything.test"), None).await;
    assert_eq!(res.status, StatusCode::OK);
    let res = get(
        &app,
        ARTICLES,
        Some("https://anything.test"),
        Some(app.key("editor-key")),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 2);
    // Invalid keys are 401 with the gate off, never the gate's message.
    revoke(&app, "revoked").await;
    for secret in [UNKNOWN_KEY, app.key("revoked"), app.key("expired")] {
        let res = get(&app, ARTICLES, None, Some(secret)).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{secret}");
        assert_eq!(res.json(), message("Invalid API key."));
    }
}

#[actix_web::test]
async fn an_allowed_origin_never_bypasses_grants() {
    let app = TestApp::new(gated()).await;
    let tags = get(&app, "/api/v1/collections/tags/items", Some(APP), None).await;
    assert_eq!(tags.status, StatusCode::FORBIDDEN);
    assert_eq!(tags.json(), message("Forbidden."));
    let reader = get(&app, ARTICLES, Some(APP), Some(app.key("reader-key"))).await;
    assert_eq!(reader.status, StatusCode::FORBIDDEN);
    assert_eq!(reader.json(), message("Forbidden."));
    let list = get(&app, ARTICLES, Some(APP), None).await.json();
    assert_eq!(list["meta"]["total"], 1, "the item filter still applies");
    assert!(
        list["data"][0]["data"].get("internal_notes").is_none(),
        "field rules still apply"
    );
    let write = app
        .send(
            TestApp::request(Method::POST, ARTICLES)
                .insert_header(("origin", APP))
                .set_json(json!({"data": {"title": "x", "status": "published"}})),
        )
        .await;
    assert_eq!(write.status, StatusCode::FORBIDDEN);
    assert_eq!(write.json(), message("Forbidden."));
}

#[actix_web::test]
async fn the_gate_applies_to_the_api_but_not_to_health_probes() {
    let app = TestApp::new(gated()).await;
    let up = app.get("/up").await;
    assert_eq!(up.status, StatusCode::OK);
    let live = app.get("/health/live").await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.json(), json!({"status": "ok"}));
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json(), crate::support::ready_body("ok", "ok"));
    let evil = get(&app, "/health/live", Some("https://evil.test"), None).await;
    assert_eq!(evil.status, StatusCode::OK);
    let api = app.get("/api/v1/does-not-exist").await;
    assert_eq!(api.status, StatusCode::FORBIDDEN);
    assert_eq!(api.json(), message("Origin required or API key."));
}

#[actix_web::test]
async fn cors_echoes_only_listed_origins() {
    let app = TestApp::new(gated()).await;
    let ok = get(&app, ARTICLES, Some(APP), None).await;
    assert_eq!(ok.header("access-control-allow-origin"), Some(APP));
    let vary: Vec<&str> = ok
        .headers
        .get_all("vary")
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        vary.iter()
            .any(|v| v.to_ascii_lowercase().contains("origin")),
        "an echoed origin varies on Origin: {vary:?}"
    );
    // A cached replay carries the same header.
    let again = get(&app, ARTICLES, Some(APP), None).await;
    assert_eq!(again.header("x-cache"), Some("hit"));
    assert_eq!(again.header("access-control-allow-origin"), Some(APP));

    let other = get(&app, ARTICLES, Some("https://evil.test"), None).await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    let other = get(
        &app,
        ARTICLES,
        Some("https://evil.test"),
        Some(app.key("editor-key")),
    )
    .await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    let keyed = get(&app, ARTICLES, None, Some(app.key("editor-key"))).await;
    assert_eq!(keyed.status, StatusCode::OK);
    let allow = keyed.header("access-control-allow-origin");
    assert!(allow.is_none() || allow == Some(APP), "{allow:?}");
    assert_ne!(allow, Some("*"));
}

#[actix_web::test]
async fn preflight_from_an_allowed_origin_is_answered() {
    let app = TestApp::new(gated()).await;
    for path in [
        ARTICLES,
        "/api/v1/collections/articles/items/4",
        "/api/v1/collections",
    ] {
        let res = preflight(&app, path, APP).await;
        assert!(res.status.is_success(), "{path}: {}", res.status);
        assert_eq!(
            res.header("access-control-allow-origin"),
            Some(APP),
            "{path}"
        );
        let methods = res
            .header("access-control-allow-methods")
            .unwrap_or_default()
            .to_ascii_uppercase();
        for method in ["GET", "POST", "PATCH", "DELETE"] {
            assert!(methods.contains(method), "{path}: {methods}");
        }
        let headers = res
            .header("access-control-allow-headers")
            .unwrap_or_default()
            .to_ascii_lowercase();
        assert!(
            headers.contains("authorization") && headers.contains("content-type"),
            "{headers}"
        );
    }
}

#[actix_web::test]
async fn preflight_from_another_origin_gets_no_allow_origin() {
    let app = TestApp::new(gated()).await;
    for origin in ["https://evil.test", "http://app.example.com"] {
        let res = preflight(&app, ARTICLES, origin).await;
        assert_eq!(res.header("access-control-allow-origin"), None, "{origin}");
        assert_eq!(res.header("access-control-allow-methods"), None, "{origin}");
    }
}

#[actix_web::test]
async fn with_an_empty_list_cors_defaults_to_any() {
    let app = TestApp::new(ungated()).await;
    let res = get(&app, ARTICLES, Some("https://anything.test"), None).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("access-control-allow-origin"), Some("*"));
    let pre = preflight(&app, ARTICLES, "https://anything.test").await;
    assert!(pre.status.is_success(), "{}", pre.status);
    assert_eq!(pre.header("access-control-allow-origin"), Some("*"));
    assert!(
        pre.header("access-control-allow-methods")
            .unwrap_or_default()
            .contains("POST")
    );
}

#[actix_web::test]
async fn with_an_empty_list_the_deployment_origins_apply() {
    let config = HttpConfig {
        cors_origins: CorsOrigins::List(vec![Origin::parse("https://admin.example.com").unwrap()]),
        ..Default::default()
    };
    let app = TestApp::with_config(ungated(), config.clone()).await;
    let res = get(&app, ARTICLES, Some("https://admin.example.com"), None).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(
        res.header("access-control-allow-origin"),
        Some("https://admin.example.com")
    );
    let other = get(&app, ARTICLES, Some("https://evil.test"), None).await;
    assert_eq!(other.status, StatusCode::OK, "CORS is not a gate");
    assert_eq!(other.header("access-control-allow-origin"), None);
    let pre = preflight(&app, ARTICLES, "https://admin.example.com").await;
    assert!(pre.status.is_success());
    assert_eq!(
        pre.header("access-control-allow-origin"),
        Some("https://admin.example.com")
    );
    let pre = preflight(&app, ARTICLES, "https://evil.test").await;
    assert_eq!(pre.header("access-control-allow-origin"), None);

    // A non-empty project list replaces the deployment's origins.
    let app = TestApp::with_config(gated(), config).await;
    let res = get(&app, ARTICLES, Some("https://admin.example.com"), None).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.header("access-control-allow-origin"), None);
    let pre = preflight(&app, ARTICLES, "https://admin.example.com").await;
    assert_eq!(pre.header("access-control-allow-origin"), None);
    let pre = preflight(&app, ARTICLES, APP).await;
    assert_eq!(pre.header("access-control-allow-origin"), Some(APP));
}
