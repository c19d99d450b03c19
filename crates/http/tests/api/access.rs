//! Who a request acts as: anonymous (`public`), a bearer API key (its role), and every way a key
//! is refused (unknown, malformed, revoked, expired, other schemes, IP allowlist, proxies).

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use std::net::SocketAddr;
use vellum_http::HttpConfig;

use crate::support::{Response, TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";
const FIXED: &str = "ek_0123456789abcdef0123456789abcdef";

/// The blog with extra keys: a fixed secret, an expired and a future-expiring key, and keys
/// restricted to `10.0.0.0/8` and to `::1`.
fn manifest() -> Value {
    let mut m = blog();
    let keys = m["api_keys"].as_array_mut().unwrap();
    keys.extend([
        json!({"name": "fixed", "role": "editor", "secret": FIXED}),
        json!({"name": "expired", "role": "editor", "expires_at": "2000-01-01T00:00:00Z"}),
        json!({"name": "future", "role": "editor", "expires_at": "2999-01-01T00:00:00Z"}),
        json!({"name": "office", "role": "editor", "ip_allowlist": ["10.0.0.0/8"]}),
        json!({"name": "office-reader", "role": "reader", "ip_allowlist": ["10.0.0.0/8"]}),
        json!({"name": "local6", "role": "editor", "ip_allowlist": ["::1/128"]}),
    ]);
    m
}

fn invalid_key() -> Value {
    json!({"message": "Invalid API key."})
}

fn ip_not_allowed() -> Value {
    json!({"message": "IP address not allowed."})
}

async fn with_authorization(app: &TestApp, value: &str, path: &str) -> Response {
    app.send(TestApp::request(Method::GET, path).insert_header(("authorization", value.to_owned())))
        .await
}

async fn from_peer(
    app: &TestApp,
    key: &str,
    peer: &str,
    path: &str,
    xff: Option<&str>,
) -> Response {
    let secret = app.key(key).to_owned();
    let mut req = TestApp::request(Method::GET, path)
        .peer_addr(peer.parse::<SocketAddr>().unwrap())
        .insert_header(("authorization", format!("Bearer {secret}")));
    if let Some(xff) = xff {
        req = req.insert_header(("x-forwarded-for", xff.to_owned()));
    }
    app.send(req).await
}

#[actix_web::test]
async fn no_authorization_acts_as_public() {
    let app = TestApp::new(manifest()).await;
    let res = app.get(ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    assert_eq!(
        body["meta"]["total"], 1,
        "public sees only published articles: {body}"
    );
    assert_eq!(body["data"][0]["data"]["title"], "Hello");
    assert!(body["data"][0]["data"].get("internal_notes").is_none());
    let tags = app.get("/api/v1/collections/tags/items").await;
    assert_eq!(tags.status, StatusCode::FORBIDDEN);
    assert_eq!(tags.json(), json!({"message": "Forbidden."}));
    let collections = app.get("/api/v1/collections").await.json();
    let slugs: Vec<&str> = collections["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["authors", "articles"]);
}

#[actix_web::test]
async fn a_valid_key_acts_as_its_role() {
    let app = TestApp::new(manifest()).await;
    let res = app.get_as("editor-key", ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(
        res.json()["meta"]["total"],
        2,
        "the editor has no item filter"
    );
    let fixed = with_authorization(&app, &format!("Bearer {FIXED}"), ARTICLES).await;
    assert_eq!(fixed.status, StatusCode::OK);
    assert_eq!(fixed.json()["meta"]["total"], 2);
    // The scheme is case-insensitive and surrounding blanks are ignored.
    let lower = with_authorization(&app, &format!("bearer  {FIXED} "), ARTICLES).await;
    assert_eq!(lower.status, StatusCode::OK);
    let future = app.get_as("future", ARTICLES).await;
    assert_eq!(future.status, StatusCode::OK);
    assert_eq!(future.json()["meta"]["total"], 2);
}

#[actix_web::test]
async fn unknown_and_malformed_keys_are_401_never_public() {
    let app = TestApp::new(manifest()).await;
    let wrong_tail = format!("{}X", &FIXED[..FIXED.len() - 1]);
    let tokens = [
        "ek_ffffffffffffffffffffffffffffffffffffffff".to_owned(),
        wrong_tail,
        format!("{FIXED}0"),
        "garbage".to_owned(),
        "ek_short".to_owned(),
        "ek_0123456789abcdef0123456789abcdef!!".to_owned(),
    ];
    for token in &tokens {
        for path in [
            ARTICLES,
            "/api/v1/collections",
            "/api/v1/collections/articles/items/1",
        ] {
            let res = with_authorization(&app, &format!("Bearer {token}"), path).await;
            assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{token} {path}");
            assert_eq!(res.json(), invalid_key(), "{token} {path}");
        }
    }
    // A header that is not visible ASCII is a presented, invalid key as well.
    let res = app
        .send(TestApp::request(Method::GET, ARTICLES).insert_header((
            "authorization",
            actix_web::http::header::HeaderValue::from_bytes(b"Bearer ek_\xff\xfe").unwrap(),
        )))
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(res.json(), invalid_key());
    // A bare `Bearer` with no token presents an (empty) key too.
    for value in ["Bearer", "Bearer ", "Bearer    "] {
        let res = with_authorization(&app, value, ARTICLES).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{value:?}");
        assert_eq!(res.json(), invalid_key());
    }
    // Writes are refused the same way, and nothing is written.
    let secret = "ek_ffffffffffffffffffffffffffffffffffffffff";
    let res = app
        .send(
            TestApp::request(Method::POST, ARTICLES)
                .insert_header(("authorization", format!("Bearer {secret}")))
                .set_json(json!({"data": {"title": "x", "status": "published"}})),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(res.json(), invalid_key());
    assert_eq!(
        app.get_as("admin-key", ARTICLES).await.json()["meta"]["total"],
        2
    );
}

/// Statements a request ran, from `X-Query-Count`.
fn statements(res: &Response) -> u64 {
    res.header("x-query-count")
        .and_then(|v| v.parse().ok())
        .expect("every response says what it cost")
}

/// Issue 24: generated keys are checksummed (`ek_`, 32 random base62 characters, their CRC32 in 6
/// base62 digits). One character changed anywhere, in the key id, the random tail or the
/// checksum, is refused as `Invalid API key.` before any statement runs for it.
#[actix_web::test]
async fn a_mistyped_generated_key_is_401_without_a_database_lookup() {
    let config = HttpConfig {
        cache: false,
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(manifest(), config).await;
    let good = app.key("editor-key").to_owned();
    assert_eq!(good.len(), 3 + 38, "{good}");
    assert!(
        good[3..].bytes().all(|b| b.is_ascii_alphanumeric()),
        "{good}"
    );
    let res = with_authorization(&app, &format!("Bearer {good}"), ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 2);
    for at in [3, 10, 20, 34, 36, good.len() - 1] {
        let mut typo = good.clone().into_bytes();
        typo[at] = if typo[at] == b'x' { b'y' } else { b'x' };
        let typo = String::from_utf8(typo).unwrap();
        let res = with_authorization(&app, &format!("Bearer {typo}"), ARTICLES).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{typo}");
        assert_eq!(res.json(), invalid_key(), "{typo}");
        assert_eq!(statements(&res), 0, "no lookup for {typo}");
    }
    // The control: an unknown key of a legacy shape (40 hex digits) is looked up, once, so the
    // zeros above are the checksum's doing, not a warm memo.
    let legacy = format!("ek_{}", "e".repeat(40));
    let res = with_authorization(&app, &format!("Bearer {legacy}"), ARTICLES).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(res.json(), invalid_key());
    assert_eq!(statements(&res), 1, "the legacy key is looked up");
    // The good key still works afterwards.
    let res = with_authorization(&app, &format!("Bearer {good}"), ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
}

#[actix_web::test]
async fn other_authorization_schemes_are_401() {
    let app = TestApp::new(manifest()).await;
    for value in [
        "Basic dXNlcjpwYXNz".to_owned(),
        format!("Token {FIXED}"),
        FIXED.to_owned(),
        format!("Bearer{FIXED}"),
        String::new(),
    ] {
        let res = with_authorization(&app, &value, ARTICLES).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{value:?}");
        assert_eq!(res.json(), invalid_key(), "{value:?}");
    }
}

#[actix_web::test]
async fn a_revoked_key_is_401() {
    let app = TestApp::new(manifest()).await;
    assert_eq!(
        app.get_as("editor-key", ARTICLES).await.status,
        StatusCode::OK
    );
    vellum_storage::keys::revoke_api_key(&app.db.conn, "editor-key")
        .await
        .unwrap();
    app.state.invalidate().await;
    for path in [
        ARTICLES,
        "/api/v1/collections",
        "/api/v1/collections/articles",
    ] {
        let res = app.get_as("editor-key", path).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(res.json(), invalid_key());
    }
    let res = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "x", "status": "published"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.get_as("admin-key", ARTICLES).await.json()["meta"]["total"],
        2
    );
    // Other keys keep working.
    assert_eq!(app.get_as("fixed", ARTICLES).await.status, StatusCode::OK);
}

#[actix_web::test]
async fn an_expired_key_is_401() {
    let app = TestApp::new(manifest()).await;
    for path in [
        ARTICLES,
        "/api/v1/collections",
        "/api/v1/collections/articles/items/1",
    ] {
        let res = app.get_as("expired", path).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(res.json(), invalid_key());
    }
}

#[actix_web::test]
async fn the_ip_allowlist_refuses_other_addresses() {
    let app = TestApp::new(manifest()).await;
    let res = app.get_as("office", ARTICLES).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
    let res = from_peer(&app, "office", "10.1.2.3:5000", ARTICLES, None).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 2);
    let res = from_peer(&app, "office", "11.0.0.1:5000", ARTICLES, None).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
    // The allowlist is checked before the role's grants.
    let res = app.get_as("office-reader", ARTICLES).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
    let res = from_peer(&app, "office-reader", "10.9.9.9:5000", ARTICLES, None).await;
    assert_eq!(res.json(), json!({"message": "Forbidden."}));
    // IPv6 entries.
    let res = from_peer(&app, "local6", "[::1]:5000", ARTICLES, None).await;
    assert_eq!(res.status, StatusCode::OK);
    let res = app.get_as("local6", ARTICLES).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
}

#[actix_web::test]
async fn x_forwarded_for_counts_only_behind_a_trusted_proxy() {
    let untrusted = TestApp::new(manifest()).await;
    let res = from_peer(
        &untrusted,
        "office",
        "127.0.0.1:5000",
        ARTICLES,
        Some("10.1.2.3"),
    )
    .await;
    assert_eq!(
        res.status,
        StatusCode::FORBIDDEN,
        "the header is ignored without trusted proxies"
    );
    assert_eq!(res.json(), ip_not_allowed());

    let config = HttpConfig {
        trusted_proxies: vec!["127.0.0.0/8".parse().unwrap()],
        ..Default::default()
    };
    let app = TestApp::with_config(manifest(), config).await;
    let res = from_peer(&app, "office", "127.0.0.1:5000", ARTICLES, Some("10.1.2.3")).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["meta"]["total"], 2);
    let res = from_peer(&app, "office", "127.0.0.1:5000", ARTICLES, Some("8.8.8.8")).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
    // A client-supplied left-most entry cannot smuggle an allowed address in.
    let res = from_peer(
        &app,
        "office",
        "127.0.0.1:5000",
        ARTICLES,
        Some("10.1.2.3, 8.8.8.8"),
    )
    .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
    // A peer that is not a trusted proxy is the client, whatever it forwards.
    let res = from_peer(&app, "office", "8.8.4.4:5000", ARTICLES, Some("10.1.2.3")).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), ip_not_allowed());
}

/// Security review 2026-11, A5: behind a trusted proxy, the right-most `X-Forwarded-For` entry
/// that is not a trusted proxy is the client even when it is not a bare address. It used to be
/// skipped, so the client-written `10.1.2.3` to its left passed the key's allowlist.
#[actix_web::test]
async fn a_forwarded_entry_that_is_not_a_bare_address_is_never_skipped() {
    let config = HttpConfig {
        trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
        ..Default::default()
    };
    let app = TestApp::with_config(manifest(), config).await;
    let proxy = "127.0.0.1:5000";
    let res = from_peer(&app, "office", proxy, ARTICLES, None).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "the proxy itself");
    for xff in [
        "10.1.2.3, 8.8.8.8",
        "10.1.2.3, 8.8.8.8:443",
        "10.1.2.3, unknown",
        "10.1.2.3, [2001:db8::1]",
        "10.1.2.3, [2001:db8::1]:8080",
        "10.1.2.3, fe80::1%eth0",
        "10.1.2.3, _hidden",
        "10.1.2.3, ",
    ] {
        let res = from_peer(&app, "office", proxy, ARTICLES, Some(xff)).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{xff}");
        assert_eq!(res.json(), ip_not_allowed(), "{xff}");
    }
    for xff in [
        "10.1.2.3",
        "8.8.8.8, 10.1.2.3:1234",
        "8.8.8.8, 10.1.2.3, 127.0.0.1",
    ] {
        let res = from_peer(&app, "office", proxy, ARTICLES, Some(xff)).await;
        assert_eq!(res.status, StatusCode::OK, "{xff}");
        assert_eq!(res.json()["meta"]["total"], 2, "{xff}");
    }
    // Bracketed IPv6 with a port is normalised, not refused, for a key that allows it.
    let res = from_peer(&app, "local6", proxy, ARTICLES, Some("8.8.8.8, [::1]:443")).await;
    assert_eq!(res.status, StatusCode::OK);
    // A key without an allowlist takes any client, unknown ones included.
    let res = from_peer(&app, "fixed", proxy, ARTICLES, Some("10.1.2.3, unknown")).await;
    assert_eq!(res.status, StatusCode::OK);
}

#[actix_web::test]
async fn a_key_whose_role_has_no_grants_is_forbidden() {
    let app = TestApp::new(manifest()).await;
    for path in [
        ARTICLES,
        "/api/v1/collections/articles/items/1",
        "/api/v1/collections/articles",
        "/api/v1/collections/tags/items",
    ] {
        let res = app.get_as("reader-key", path).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(res.json(), json!({"message": "Forbidden."}));
    }
    let collections = app.get_as("reader-key", "/api/v1/collections").await;
    assert_eq!(collections.status, StatusCode::OK);
    assert_eq!(collections.json(), json!({"data": []}));
    let post = app
        .json(
            Method::POST,
            Some("reader-key"),
            ARTICLES,
            json!({"data": {"title": "x"}}),
        )
        .await;
    assert_eq!(post.status, StatusCode::FORBIDDEN);
    let patch = app
        .json(
            Method::PATCH,
            Some("reader-key"),
            &format!("{ARTICLES}/1"),
            json!({"data": {"views": 1}}),
        )
        .await;
    assert_eq!(patch.status, StatusCode::FORBIDDEN);
    let delete = app
        .delete(Some("reader-key"), &format!("{ARTICLES}/1"))
        .await;
    assert_eq!(delete.status, StatusCode::FORBIDDEN);
    assert_eq!(
        app.get_as("admin-key", ARTICLES).await.json()["meta"]["total"],
        2
    );
}

#[actix_web::test]
async fn the_super_admin_reads_everything_including_hidden_fields() {
    let app = TestApp::new(manifest()).await;
    let res = app.get_as("admin-key", ARTICLES).await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    assert_eq!(body["meta"]["total"], 2);
    assert_eq!(body["data"][0]["data"]["internal_notes"], "secret");
    assert_eq!(body["data"][1]["data"]["internal_notes"], "wip");
    let draft_id = body["data"][1]["id"].as_i64().unwrap();
    let show = app
        .get_as("admin-key", &format!("{ARTICLES}/{draft_id}"))
        .await
        .json();
    assert_eq!(show["data"]["data"]["title"], "Draft");
    assert_eq!(show["data"]["data"]["internal_notes"], "wip");
    assert_eq!(
        app.get_as("admin-key", "/api/v1/collections/tags/items")
            .await
            .json()["meta"]["total"],
        2
    );
    let collections = app.get_as("admin-key", "/api/v1/collections").await.json();
    assert_eq!(collections["data"].as_array().unwrap().len(), 3);
    let fields = app
        .get_as("admin-key", "/api/v1/collections/articles")
        .await
        .json();
    let names: Vec<&str> = fields["data"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"internal_notes"), "{names:?}");
}
