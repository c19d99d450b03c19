//! Black-box tests of the admin app (issue 17): sign-in and sessions, then one module per admin
//! area. Helpers here create accounts directly (storage and the app's own hasher) and drive the
//! JSON side of the admin routes with a session cookie.

mod access_support;
mod ai;
mod api_keys;
mod chat;
mod fake_ai;
mod file_pages;
mod files_blobs;
mod files_browse;
mod files_trash;
mod groups;
mod item_pages;
mod items;
mod items_bulk;
mod items_export;
mod items_preview;
mod job_pages;
mod pages;
mod passkeys;
mod permissions;
mod presentation;
mod receiver;
mod role_pages;
mod roles;
mod schema;
mod schema_pages;
mod sessions;
mod settings;
mod settings_pages;
mod signin;
mod smtp;
mod user_pages;
mod users;
mod webhooks;

use actix_web::http::Method;
use actix_web::test::TestRequest;
use serde_json::Value;
use vellum_http::AppState;

use crate::support::{Response, TestApp, send_to};

/// The password every test account gets.
pub const PASSWORD: &str = "correct horse battery staple";

/// A signed-in session: the cookie to send back.
#[derive(Debug, Clone)]
pub struct Session {
    pub cookie: String,
}

impl Session {
    /// The token alone (the cookie's value).
    pub fn token(&self) -> &str {
        self.cookie.trim_start_matches("vellum_session=")
    }
}

/// Creates a verified user with [`PASSWORD`] holding `roles` directly; answers its id.
pub async fn create_user(state: &AppState, email: &str, name: &str, roles: &[&str]) -> i64 {
    let db = state.db();
    let user = vellum_storage::users::create_user(db, name, Some(email))
        .await
        .unwrap();
    let hash = state.identity().hasher.hash(PASSWORD).await.unwrap();
    vellum_storage::accounts::set_password_hash(db, user.id, Some(&hash))
        .await
        .unwrap();
    vellum_storage::accounts::mark_email_verified(db, user.id, time::OffsetDateTime::now_utc())
        .await
        .unwrap();
    for role in roles {
        vellum_storage::users::assign_role(db, user.id, role)
            .await
            .unwrap();
    }
    state.invalidate().await;
    user.id
}

/// A JSON admin request (`Accept: application/json`) with an optional session and body.
pub fn admin_request(
    method: Method,
    path: &str,
    session: Option<&Session>,
    body: Option<Value>,
) -> TestRequest {
    let mut req = TestApp::request(method, path).insert_header(("accept", "application/json"));
    if let Some(session) = session {
        req = req.insert_header(("cookie", session.cookie.clone()));
    }
    if let Some(body) = body {
        req = req.set_json(body);
    }
    req
}

/// The `vellum_session=…` pair of a response's `Set-Cookie`, if it sets one.
pub fn set_cookie(res: &Response) -> Option<String> {
    let header = res.header("set-cookie")?;
    let pair = header.split(';').next()?.trim().to_owned();
    pair.starts_with("vellum_session=").then_some(pair)
}

impl TestApp {
    /// Sends a JSON admin request.
    pub async fn admin(
        &self,
        method: Method,
        path: &str,
        session: Option<&Session>,
        body: Option<Value>,
    ) -> Response {
        self.send(admin_request(method, path, session, body)).await
    }

    /// Signs in by password and answers the session (panics unless 200).
    pub async fn sign_in(&self, email: &str, password: &str) -> Session {
        sign_in_at(&self.state, email, password).await
    }

    /// Creates a user holding `roles` and signs it in.
    pub async fn signed_in(&self, email: &str, roles: &[&str]) -> Session {
        create_user(&self.state, email, email, roles).await;
        self.sign_in(email, PASSWORD).await
    }
}

/// Signs in against `state` (any replica).
pub async fn sign_in_at(state: &AppState, email: &str, password: &str) -> Session {
    let res = send_to(
        state,
        admin_request(
            Method::POST,
            "/login",
            None,
            Some(serde_json::json!({"email": email, "password": password})),
        ),
    )
    .await;
    assert_eq!(
        res.status,
        200,
        "sign-in failed: {}",
        String::from_utf8_lossy(&res.body)
    );
    Session {
        cookie: set_cookie(&res).expect("sign-in sets the session cookie"),
    }
}

/// Two more replicas of `app`'s database: sharing one Redis namespace when `redis` names a
/// server (sessions and throttles in Redis), otherwise each with in-process caches (sessions in
/// the shared database).
pub async fn replicas(
    app: &TestApp,
    config: &vellum_http::HttpConfig,
    redis: Option<&str>,
) -> (AppState, AppState) {
    use std::sync::Arc;
    use vellum_http::Backends;
    use vellum_http::cache::RedisBackend;
    let namespace = format!("vellum-test-{}:", uuid::Uuid::new_v4());
    let redis_url = redis.map(str::to_owned);
    let mut config = config.clone();
    config.base_url = crate::support::BASE_URL.to_owned();
    let make = || async {
        let blobs = Arc::new(vellum_storage::blob::ObjectBlobStore::in_memory());
        let backends = match &redis_url {
            Some(url) => Backends::redis(
                &config,
                blobs,
                RedisBackend::new(url.trim(), 4)
                    .unwrap()
                    .with_namespace(&namespace),
            ),
            None => Backends::local(&config, blobs),
        };
        AppState::with_backends(app.db.conn.clone(), config.clone(), backends)
            .await
            .unwrap()
    };
    (make().await, make().await)
}

/// Sends a JSON admin request to `state`.
pub async fn admin_at(
    state: &AppState,
    method: Method,
    path: &str,
    session: Option<&Session>,
    body: Option<Value>,
) -> Response {
    send_to(state, admin_request(method, path, session, body)).await
}

/// POSTs one `file` part (`name`, `bytes`) to `path` as `session`: status and JSON body.
pub async fn post_file(
    app: &TestApp,
    session: &Session,
    path: &str,
    name: &str,
    bytes: &[u8],
) -> (u16, Value) {
    use crate::support::{BOUNDARY, Part, multipart};
    let res = app
        .send(
            TestApp::request(Method::POST, path)
                .insert_header(("accept", "application/json"))
                .insert_header(("cookie", session.cookie.clone()))
                .insert_header((
                    "content-type",
                    format!("multipart/form-data; boundary={BOUNDARY}"),
                ))
                .set_payload(multipart(&[Part::file(
                    name,
                    "application/octet-stream",
                    bytes,
                )])),
        )
        .await;
    (res.status.as_u16(), res.json())
}
