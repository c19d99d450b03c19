//! Sign-in by password and by mailed code, throttling, and the cross-site rules.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::json;

use super::{PASSWORD, create_user, set_cookie};
use crate::support::TestApp;

#[actix_web::test]
async fn password_sign_in_sets_the_contract_cookie_and_shows_the_account() {
    let app = TestApp::new(json!({})).await;
    let id = create_user(&app.state, "Ada@Example.com", "Ada", &["admin"]).await;
    // Email comparison ignores case.
    let res = app
        .admin(
            Method::POST,
            "/login",
            None,
            Some(json!({"email": "ada@example.COM", "password": PASSWORD})),
        )
        .await;
    assert_eq!(res.status, 200, "{:?}", String::from_utf8_lossy(&res.body));
    let cookie_header = res.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie_header.contains("; Path=/; HttpOnly; SameSite=Lax; Max-Age=604800"),
        "{cookie_header}"
    );
    assert!(
        !cookie_header.contains("Secure"),
        "http base URL: no Secure"
    );
    let body = res.json();
    assert_eq!(body["data"]["id"], id);
    assert_eq!(body["data"]["email"], "Ada@Example.com");
    assert_eq!(body["data"]["roles"], json!(["admin"]));
    assert_eq!(body["data"]["permissions"].as_array().unwrap().len(), 47);
    assert!(body["data"]["email_verified_at"].is_string());
    let session = super::Session {
        cookie: set_cookie(&res).unwrap(),
    };
    let account = app
        .admin(Method::GET, "/account", Some(&session), None)
        .await;
    assert_eq!(account.status, 200);
    assert_eq!(account.json(), body);
    // Without a session: 401 for JSON, 303 to /login for a browser.
    let anonymous = app.admin(Method::GET, "/account", None, None).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.json(), json!({"message": "Unauthenticated."}));
    let browser = app
        .send(TestApp::request(Method::GET, "/account").insert_header(("accept", "text/html")))
        .await;
    assert_eq!(browser.status, 303);
    assert_eq!(browser.header("location"), Some("/login"));
}

const BAD_CREDENTIALS: &str = r#"{"message":"The given data was invalid.","errors":{"email":["These credentials do not match our records."]}}"#;

async fn login(
    app: &TestApp,
    email: &str,
    password: &str,
    ip: [u8; 4],
) -> crate::support::Response {
    let req = super::admin_request(
        Method::POST,
        "/login",
        None,
        Some(json!({"email": email, "password": password})),
    )
    .peer_addr(std::net::SocketAddr::from((ip, 40000)));
    app.send(req).await
}

#[actix_web::test]
async fn unknown_email_wrong_password_deleted_and_passwordless_accounts_get_one_answer() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["admin"]).await;
    vellum_storage::users::create_user(app.state.db(), "No Password", Some("np@example.com"))
        .await
        .unwrap();
    for (email, password) in [
        ("nobody@example.com", PASSWORD),
        ("ada@example.com", "wrong password"),
        ("np@example.com", PASSWORD),
        ("not an email", PASSWORD),
    ] {
        let res = login(&app, email, password, [10, 0, 0, 1]).await;
        assert_eq!(res.status, 422, "{email}");
        assert_eq!(
            String::from_utf8_lossy(&res.body),
            BAD_CREDENTIALS,
            "{email}"
        );
        assert!(res.header("set-cookie").is_none());
    }
}

#[actix_web::test]
async fn missing_wrong_typed_and_oversized_fields_are_422_naming_the_field() {
    let app = TestApp::new(json!({})).await;
    let rows = [
        (json!({}), vec!["email", "password"]),
        (json!({"email": "a@b.c"}), vec!["password"]),
        (json!({"email": 5, "password": "x"}), vec!["email"]),
        (
            json!({"email": "a@b.c", "password": "x".repeat(1025)}),
            vec!["password"],
        ),
        (
            json!({"email": format!("{}@b.c", "a".repeat(300)), "password": "x"}),
            vec!["email"],
        ),
        (json!(["not", "an", "object"]), vec!["body"]),
    ];
    for (body, fields) in rows {
        let res = app
            .admin(Method::POST, "/login", None, Some(body.clone()))
            .await;
        assert_eq!(res.status, 422, "{body}");
        let errors = res.json()["errors"].clone();
        let mut named: Vec<String> = errors.as_object().unwrap().keys().cloned().collect();
        named.sort();
        assert_eq!(named, fields, "{body}");
    }
    let res = app
        .send(
            TestApp::request(Method::POST, "/login")
                .insert_header(("accept", "application/json"))
                .insert_header(("content-type", "application/json"))
                .set_payload(vec![b'x'; 20_000]),
        )
        .await;
    assert_eq!(res.status, 413, "sign-in bodies are small");
}

#[actix_web::test]
async fn the_sixth_failure_in_a_row_gets_429_and_other_users_are_not_slowed() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["admin"]).await;
    create_user(&app.state, "bob@example.com", "Bob", &["admin"]).await;
    for _ in 0..5 {
        let res = login(&app, "ada@example.com", "wrong", [10, 0, 0, 1]).await;
        assert_eq!(res.status, 422);
    }
    let res = login(&app, "ada@example.com", "wrong", [10, 0, 0, 1]).await;
    assert_eq!(res.status, 429);
    assert_eq!(res.json(), json!({"message": "Too many requests."}));
    let retry: u64 = res.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=900).contains(&retry), "{retry}");
    // Locked for this account even with the right password, from anywhere.
    assert_eq!(
        login(&app, "ADA@example.com", PASSWORD, [10, 0, 0, 9])
            .await
            .status,
        429
    );
    // Bob, from another address, signs in as usual.
    assert_eq!(
        login(&app, "bob@example.com", PASSWORD, [10, 0, 0, 2])
            .await
            .status,
        200
    );
}

#[actix_web::test]
async fn credential_stuffing_from_one_address_is_refused_without_hashing() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "bob@example.com", "Bob", &["admin"]).await;
    let mut refused_at = None;
    for i in 0..40 {
        let res = login(
            &app,
            &format!("victim{i}@example.com"),
            "hunter2",
            [203, 0, 113, 7],
        )
        .await;
        if res.status == 429 {
            refused_at = Some(i);
            break;
        }
        assert_eq!(res.status, 422);
    }
    assert_eq!(
        refused_at,
        Some(30),
        "the address's 31st failure is refused"
    );
    // A refused attempt does not hash: it answers well under one argon2 verification.
    let started = std::time::Instant::now();
    for i in 0..20 {
        let res = login(&app, &format!("more{i}@example.com"), "x", [203, 0, 113, 7]).await;
        assert_eq!(res.status, 429);
    }
    let per_attempt = started.elapsed() / 20;
    // Other users from other addresses are unaffected.
    assert_eq!(
        login(&app, "bob@example.com", PASSWORD, [198, 51, 100, 1])
            .await
            .status,
        200
    );
    eprintln!("refused attempt: {per_attempt:?}");
}

#[actix_web::test]
async fn cross_site_state_changes_with_a_session_are_refused() {
    let app = TestApp::new(json!({})).await;
    let session = app.signed_in("ada@example.com", &["admin"]).await;
    let refused = r#"{"message":"Cross-site request refused."}"#;
    for (header, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "http://evil.test"),
        ("origin", "null"),
    ] {
        let req = super::admin_request(
            Method::POST,
            "/account/sessions/revoke",
            Some(&session),
            None,
        )
        .insert_header((header, value));
        let res = app.send(req).await;
        assert_eq!(res.status, 403, "{header}: {value}");
        assert_eq!(String::from_utf8_lossy(&res.body), refused);
    }
    // Same origin, a direct navigation, or a script without either header: allowed.
    for (header, value) in [
        ("sec-fetch-site", "same-origin"),
        ("sec-fetch-site", "none"),
        ("origin", crate::support::BASE_URL),
    ] {
        let req = super::admin_request(
            Method::POST,
            "/account/sessions/revoke",
            Some(&session),
            None,
        )
        .insert_header((header, value));
        assert_eq!(app.send(req).await.status, 200, "{header}: {value}");
    }
    let res = app
        .admin(
            Method::POST,
            "/account/sessions/revoke",
            Some(&session),
            None,
        )
        .await;
    assert_eq!(res.status, 200);
    // GETs never change state and are not refused; the session survived every refusal.
    let req = super::admin_request(Method::GET, "/account", Some(&session), None)
        .insert_header(("sec-fetch-site", "cross-site"));
    assert_eq!(app.send(req).await.status, 200);
}

#[actix_web::test]
async fn sign_in_by_mailed_code_once_within_five_tries() {
    use vellum_http::HttpConfig;
    let mut smtp = super::smtp::SmtpSink::start().await;
    let mut config = HttpConfig::default();
    config.identity.smtp_url = Some(smtp.url.clone());
    let app = TestApp::with_config(json!({}), config).await;
    let id = create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;

    // Unknown addresses get the same 202 and no mail.
    let res = app
        .admin(
            Method::POST,
            "/login/code",
            None,
            Some(json!({"email": "nobody@example.com"})),
        )
        .await;
    assert_eq!(res.status, 202);
    let unknown_body = res.body.clone();
    assert!(!smtp.any_within(Duration::from_millis(300)).await);

    let res = app
        .admin(
            Method::POST,
            "/login/code",
            None,
            Some(json!({"email": "Ada@Example.com"})),
        )
        .await;
    assert_eq!(res.status, 202);
    assert_eq!(res.body, unknown_body);
    let mail = smtp.next().await;
    assert_eq!(mail.to, ["Ada@Example.com"]);
    let code = super::smtp::code_in(&mail);
    assert_eq!(code.len(), 6);

    let verify = |code: String| {
        let app = &app;
        async move {
            app.admin(
                Method::POST,
                "/login/code/verify",
                None,
                Some(json!({"email": "ada@example.com", "code": code})),
            )
            .await
        }
    };
    let wrong = if code == "000000" { "000001" } else { "000000" };
    let res = verify(wrong.to_owned()).await;
    assert_eq!(res.status, 422);
    assert_eq!(
        res.json()["errors"]["code"][0],
        "The code is invalid or has expired."
    );
    let res = verify(code.clone()).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.json()["data"]["id"], id);
    assert!(set_cookie(&res).is_some());
    // Single use.
    assert_eq!(verify(code).await.status, 422);
}

#[actix_web::test]
async fn five_wrong_tries_void_a_code() {
    use sea_orm::ConnectionTrait as _;
    use vellum_http::HttpConfig;
    let mut smtp = super::smtp::SmtpSink::start().await;
    let mut config = HttpConfig::default();
    config.identity.smtp_url = Some(smtp.url.clone());
    let app = TestApp::with_config(json!({}), config).await;
    create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    app.admin(
        Method::POST,
        "/login/code",
        None,
        Some(json!({"email": "ada@example.com"})),
    )
    .await;
    let code = super::smtp::code_in(&smtp.next().await);
    let wrong = if code == "111111" { "111112" } else { "111111" };
    let count = || async {
        app.db
            .conn
            .query_one_raw(sea_orm::Statement::from_string(
                app.db.conn.get_database_backend(),
                "SELECT COUNT(*) AS n FROM login_codes",
            ))
            .await
            .unwrap()
            .unwrap()
            .try_get::<i64>("", "n")
            .unwrap()
    };
    for tries in 1..=5 {
        assert_eq!(count().await, 1, "still live before try {tries}");
        let res = app
            .admin(
                Method::POST,
                "/login/code/verify",
                None,
                Some(json!({"email": "ada@example.com", "code": wrong})),
            )
            .await;
        assert_eq!(res.status, 422);
    }
    assert_eq!(count().await, 0, "the fifth wrong try voided the code");
    // The right code is now useless (and the account's sixth failure in a row is throttled).
    let res = app
        .admin(
            Method::POST,
            "/login/code/verify",
            None,
            Some(json!({"email": "ada@example.com", "code": code})),
        )
        .await;
    assert_eq!(res.status, 429);
}

#[actix_web::test]
async fn a_code_expires_after_ten_minutes() {
    use sea_orm::ConnectionTrait as _;
    use vellum_http::HttpConfig;
    let mut smtp = super::smtp::SmtpSink::start().await;
    let mut config = HttpConfig::default();
    config.identity.smtp_url = Some(smtp.url.clone());
    let app = TestApp::with_config(json!({}), config).await;
    create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    app.admin(
        Method::POST,
        "/login/code",
        None,
        Some(json!({"email": "ada@example.com"})),
    )
    .await;
    let code = super::smtp::code_in(&smtp.next().await);
    let row: Option<String> = app
        .db
        .conn
        .query_one_raw(sea_orm::Statement::from_string(
            app.db.conn.get_database_backend(),
            "SELECT code_hash FROM login_codes",
        ))
        .await
        .unwrap()
        .map(|r| r.try_get("", "code_hash").unwrap());
    let stored = row.unwrap();
    assert!(!stored.contains(&code), "stored hashed");
    // Move the expiry into the past (as ten minutes passing would).
    app.db
        .conn
        .execute_unprepared("UPDATE login_codes SET expires_at = '2000-01-01T00:00:00Z'")
        .await
        .unwrap();
    let res = app
        .admin(
            Method::POST,
            "/login/code/verify",
            None,
            Some(json!({"email": "ada@example.com", "code": code})),
        )
        .await;
    assert_eq!(res.status, 422);
}

/// A writer collecting every log line, for [`no_password_code_or_session_token_reaches_a_log_line`].
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[actix_web::test]
async fn no_password_code_or_session_token_reaches_a_log_line() {
    use vellum_http::HttpConfig;
    let captured = Captured::default();
    let writer = captured.clone();
    // No timestamps: their microseconds are six digits, like the mailed code, and matched it
    // about once in sixty runs.
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .without_time()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut smtp = super::smtp::SmtpSink::start().await;
    let mut config = HttpConfig::default();
    config.identity.smtp_url = Some(smtp.url.clone());
    let app = TestApp::with_config(json!({}), config).await;
    create_user(&app.state, "ada@example.com", "Ada", &["admin"]).await;
    assert_eq!(
        login(&app, "ada@example.com", "wrong-secret-pw", [10, 0, 0, 1])
            .await
            .status,
        422
    );
    let session = app.sign_in("ada@example.com", PASSWORD).await;
    app.admin(Method::GET, "/account", Some(&session), None)
        .await;
    app.admin(
        Method::POST,
        "/login/code",
        None,
        Some(json!({"email": "ada@example.com"})),
    )
    .await;
    let code = super::smtp::code_in(&smtp.next().await);
    let res = app
        .admin(
            Method::POST,
            "/login/code/verify",
            None,
            Some(json!({"email": "ada@example.com", "code": code})),
        )
        .await;
    assert_eq!(res.status, 200);
    let second = set_cookie(&res).unwrap();
    app.admin(Method::POST, "/logout", Some(&session), None)
        .await;

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("signed_in") || logs.len() > 1000,
        "the capture works: {logs}"
    );
    for secret in [
        PASSWORD,
        "wrong-secret-pw",
        code.as_str(),
        session.token(),
        second.trim_start_matches("vellum_session="),
    ] {
        // A secret counts where it stands alone: the code is six digits, which can also occur
        // inside a longer number (a pointer, a byte count) without being the code.
        let alone = logs.match_indices(secret).find(|&(at, _)| {
            let before = logs[..at].chars().next_back();
            let after = logs[at + secret.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric())
                && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        });
        if let Some((at, _)) = alone {
            let from = logs.floor_char_boundary(at.saturating_sub(200));
            let to = logs.ceil_char_boundary(at + 200);
            panic!("a secret reached the log: {secret}: {}", &logs[from..to]);
        }
    }
}

/// Without `VELLUM_SMTP_URL` the mail goes to the log at `info`, naming the recipient and body
/// (admin contract; development only).
#[actix_web::test]
async fn without_smtp_the_code_mail_is_logged() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["reader"]).await;
    let res = app
        .admin(
            Method::POST,
            "/login/code",
            None,
            Some(json!({"email": "ada@example.com"})),
        )
        .await;
    assert_eq!(res.status, 202);
    let mut logged = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        if logged.contains("Your sign-in code is") {
            break;
        }
    }
    assert!(logged.contains("to=ada@example.com"), "{logged}");
    assert!(logged.contains("Your sign-in code is "), "{logged}");
}
