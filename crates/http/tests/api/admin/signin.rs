//! Sign-in by password and by mailed code, throttling, and the cross-site rules.

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
