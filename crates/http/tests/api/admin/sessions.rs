//! Sessions: fixation, expiry, sign-out here and everywhere, replicas, forged cookies, deleted
//! users.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::json;
use vellum_http::HttpConfig;

use super::{PASSWORD, Session, admin_at, create_user, replicas, set_cookie, sign_in_at};
use crate::support::TestApp;

const UNAUTHENTICATED: &str = r#"{"message":"Unauthenticated."}"#;

async fn status_of(app: &TestApp, session: &Session) -> u16 {
    app.admin(Method::GET, "/account", Some(session), None)
        .await
        .status
        .as_u16()
}

#[actix_web::test]
async fn every_sign_in_gets_a_new_id_and_ends_the_session_it_came_with() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    let first = app.sign_in("ada@example.com", PASSWORD).await;
    // Signing in again with the first cookie: a new id, and the old one is over.
    let res = app
        .admin(
            Method::POST,
            "/login",
            Some(&first),
            Some(json!({"email": "ada@example.com", "password": PASSWORD})),
        )
        .await;
    assert_eq!(res.status, 200);
    let second = Session {
        cookie: set_cookie(&res).unwrap(),
    };
    assert_ne!(first.cookie, second.cookie);
    assert_eq!(status_of(&app, &first).await, 401);
    assert_eq!(status_of(&app, &second).await, 200);
    // A token planted by an attacker before sign-in is never promoted: it was never stored.
    let planted = Session {
        cookie: format!("vellum_session={}", "A".repeat(43)),
    };
    let res = app
        .admin(
            Method::POST,
            "/login",
            Some(&planted),
            Some(json!({"email": "ada@example.com", "password": PASSWORD})),
        )
        .await;
    assert_ne!(set_cookie(&res).unwrap(), planted.cookie);
    assert_eq!(status_of(&app, &planted).await, 401);
}

#[actix_web::test]
async fn forged_malformed_and_signed_out_cookies_are_401() {
    let app = TestApp::new(json!({})).await;
    let session = app.signed_in("ada@example.com", &["reader"]).await;
    for cookie in [
        format!("vellum_session={}", "x".repeat(43)),
        "vellum_session=short".to_owned(),
        format!("vellum_session={}", "é".repeat(20)),
        format!("vellum_session={}", "a".repeat(5000)),
    ] {
        let res = app
            .admin(Method::GET, "/account", Some(&Session { cookie }), None)
            .await;
        assert_eq!(res.status, 401);
        assert_eq!(String::from_utf8_lossy(&res.body), UNAUTHENTICATED);
    }
    let res = app
        .admin(Method::POST, "/logout", Some(&session), None)
        .await;
    assert_eq!(res.status, 204);
    assert!(res.body.is_empty());
    assert!(res.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(status_of(&app, &session).await, 401);
    assert_eq!(
        app.admin(Method::POST, "/logout", Some(&session), None)
            .await
            .status,
        401
    );
}

#[actix_web::test]
async fn idle_and_absolute_expiry() {
    let mut config = HttpConfig::default();
    config.identity.session_idle = Duration::from_millis(1500);
    let app = TestApp::with_config(json!({}), config).await;
    let session = app.signed_in("ada@example.com", &["reader"]).await;
    assert_eq!(status_of(&app, &session).await, 200);
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert_eq!(status_of(&app, &session).await, 401, "idle too long");

    let mut config = HttpConfig::default();
    config.identity.session_lifetime = Duration::from_millis(1500);
    let app = TestApp::with_config(json!({}), config).await;
    let session = app.signed_in("bob@example.com", &["reader"]).await;
    for _ in 0..3 {
        assert_eq!(status_of(&app, &session).await, 200);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        status_of(&app, &session).await,
        401,
        "past the absolute expiry"
    );
}

/// Two replicas with their sessions in the shared database, and (when a Redis server is given)
/// two sharing Redis: both kinds run whatever the environment.
#[actix_web::test]
async fn sessions_work_on_every_replica_and_sign_out_everywhere_reaches_them_all() {
    replicas_share_sessions(None).await;
    if let Ok(url) = std::env::var(crate::support::REDIS_ENV)
        && !url.trim().is_empty()
    {
        replicas_share_sessions(Some(url.trim())).await;
    }
}

async fn replicas_share_sessions(redis: Option<&str>) {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["admin"]).await;
    // Replicas share the epoch only through Redis; without it each learns of an ended session
    // within its snapshot's lifetime (as of every project change), shortened here.
    let shared = redis.is_some();
    let config = HttpConfig {
        snapshot_ttl: Duration::from_millis(300),
        ..HttpConfig::default()
    };
    let (a, b) = replicas(&app, &config, redis).await;
    let on_a = sign_in_at(&a, "ada@example.com", PASSWORD).await;
    let on_b = sign_in_at(&b, "ada@example.com", PASSWORD).await;
    let third = sign_in_at(&a, "ada@example.com", PASSWORD).await;
    // A cookie from one replica works on the other.
    for (state, session) in [(&b, &on_a), (&a, &on_b)] {
        assert_eq!(
            admin_at(state, Method::GET, "/account", Some(session), None)
                .await
                .status,
            200
        );
    }
    let listed = admin_at(&a, Method::GET, "/account/sessions", Some(&on_a), None).await;
    assert_eq!(listed.status, 200);
    let sessions = listed.json()["data"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 3);
    assert_eq!(sessions.iter().filter(|s| s["current"] == true).count(), 1);
    assert!(
        !listed.json().to_string().contains(on_a.token()),
        "tokens are never listed"
    );
    // Sign out of every other session on A: B's session and the third end at once, everywhere.
    let res = admin_at(
        &a,
        Method::POST,
        "/account/sessions/revoke",
        Some(&on_a),
        None,
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json(), json!({"data": {"revoked": 2}}));
    if !shared {
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
    for state in [&a, &b] {
        assert_eq!(
            admin_at(state, Method::GET, "/account", Some(&on_b), None)
                .await
                .status,
            401
        );
        assert_eq!(
            admin_at(state, Method::GET, "/account", Some(&third), None)
                .await
                .status,
            401
        );
        assert_eq!(
            admin_at(state, Method::GET, "/account", Some(&on_a), None)
                .await
                .status,
            200
        );
    }
}

#[actix_web::test]
async fn a_deleted_user_is_signed_out_and_cannot_sign_in() {
    use sea_orm::ConnectionTrait as _;
    let app = TestApp::new(json!({})).await;
    let id = create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    let session = app.sign_in("ada@example.com", PASSWORD).await;
    app.db
        .conn
        .execute_unprepared(&format!(
            "UPDATE users SET deleted_at = '2026-01-01T00:00:00Z' WHERE id = {id}"
        ))
        .await
        .unwrap();
    app.state.invalidate().await;
    assert_eq!(status_of(&app, &session).await, 401);
    let res = app
        .admin(
            Method::POST,
            "/login",
            None,
            Some(json!({"email": "ada@example.com", "password": PASSWORD})),
        )
        .await;
    assert_eq!(res.status, 422);
}

/// "Last seen" is written at most once a minute: a burst of requests leaves the stored session
/// untouched (reads do not turn into writes).
#[actix_web::test]
async fn reads_do_not_write_last_seen() {
    let app = TestApp::new(json!({})).await;
    let id = create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    let session = app.sign_in("ada@example.com", PASSWORD).await;
    let stored = || async {
        app.state
            .identity()
            .sessions
            .list_user(id)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.last_seen_at)
            .collect::<Vec<_>>()
    };
    let before = stored().await;
    assert_eq!(before.len(), 1);
    for _ in 0..20 {
        assert_eq!(status_of(&app, &session).await, 200);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(stored().await, before);
}
