//! Passkeys over JSON (issue 19; admin contract, "Passkeys"): every route's session rule, the
//! creation options (a discoverable credential: resident key required), ceremonies that are
//! single-use and bound to the user who started them, credentials that do not verify, the
//! per-address bound on anonymous sign-in starts, list and delete. A real credential's whole
//! path (register, usernameless sign-in, remove) runs in Chromium with a virtual authenticator
//! (`tests/browser/test_passkeys.py`).

use actix_web::http::Method;
use serde_json::{Value, json};

use super::{Session, admin_at, replicas};
use crate::support::TestApp;

async fn post(app: &TestApp, path: &str, s: Option<&Session>, body: Value) -> (u16, Value) {
    let res = app.admin(Method::POST, path, s, Some(body)).await;
    let body = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    (res.status.as_u16(), body)
}

/// A registration-shaped credential that cannot verify (random attestation bytes).
fn bogus_credential() -> Value {
    json!({
        "id": "AAAA", "rawId": "AAAA", "type": "public-key",
        "response": {"attestationObject": "AAAA", "clientDataJSON": "AAAA"},
        "clientExtensionResults": {}
    })
}

/// An assertion-shaped credential that cannot verify.
fn bogus_assertion() -> Value {
    json!({
        "id": "AAAA", "rawId": "AAAA", "type": "public-key",
        "response": {"authenticatorData": "AAAA", "clientDataJSON": "AAAA", "signature": "AAAA", "userHandle": "AAAAAAAAAAAAAAAAAAAAAA"},
        "clientExtensionResults": {}
    })
}

#[actix_web::test]
async fn account_routes_need_a_session() {
    let app = TestApp::new(json!({})).await;
    for (method, path) in [
        (Method::POST, "/account/passkeys/options"),
        (Method::POST, "/account/passkeys"),
        (Method::GET, "/account/passkeys"),
        (Method::DELETE, "/account/passkeys/1"),
    ] {
        let res = app.admin(method.clone(), path, None, Some(json!({}))).await;
        assert_eq!(res.status, 401, "{method} {path}");
        assert_eq!(res.json(), json!({"message": "Unauthenticated."}));
    }
}

#[actix_web::test]
async fn registration_options_ask_for_a_discoverable_credential_bound_to_this_site() {
    let app = TestApp::new(json!({})).await;
    let me = app.signed_in("ada@example.com", &[]).await;
    let (status, body) = post(&app, "/account/passkeys/options", Some(&me), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(data["ceremony"].as_str().map(str::len), Some(43), "{body}");
    let options = &data["options"]["publicKey"];
    assert_eq!(options["rp"]["id"], "cms.test", "{body}");
    assert_eq!(options["user"]["name"], "ada@example.com");
    assert_eq!(
        options["authenticatorSelection"]["residentKey"], "required",
        "{body}"
    );
    assert_eq!(
        options["authenticatorSelection"]["requireResidentKey"],
        true
    );
    assert_eq!(
        options["authenticatorSelection"]["userVerification"],
        "required"
    );
    assert!(
        options["challenge"].as_str().is_some_and(|c| c.len() >= 43),
        "{body}"
    );
    // Two starts: two ceremonies, two challenges.
    let (_, again) = post(&app, "/account/passkeys/options", Some(&me), json!({})).await;
    assert_ne!(again["data"]["ceremony"], data["ceremony"]);
    assert_ne!(
        again["data"]["options"]["publicKey"]["challenge"],
        options["challenge"]
    );
}

#[actix_web::test]
async fn a_registration_needs_its_own_live_ceremony_and_a_credential_that_verifies() {
    let app = TestApp::new(json!({})).await;
    let ada = app.signed_in("ada@example.com", &[]).await;
    let bo = app.signed_in("bo@example.com", &[]).await;
    let (_, started) = post(&app, "/account/passkeys/options", Some(&ada), json!({})).await;
    let ceremony = started["data"]["ceremony"].clone();

    // Missing fields.
    let (status, body) = post(&app, "/account/passkeys", Some(&ada), json!({})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["errors"]["ceremony"].is_array(), "{body}");
    // Someone else's ceremony: refused, and spent.
    let (status, body) = post(
        &app,
        "/account/passkeys",
        Some(&bo),
        json!({"ceremony": ceremony, "credential": bogus_credential()}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["errors"]["ceremony"].is_array() || body["errors"]["credential"].is_array(),
        "{body}"
    );
    let (status, body) = post(
        &app,
        "/account/passkeys",
        Some(&ada),
        json!({"ceremony": ceremony, "credential": bogus_credential()}),
    )
    .await;
    assert_eq!(status, 422, "a ceremony is taken once: {body}");
    assert_eq!(
        body["errors"]["ceremony"][0],
        "The passkey request has expired; start again."
    );

    // A fresh ceremony with a credential that does not verify.
    let (_, started) = post(&app, "/account/passkeys/options", Some(&ada), json!({})).await;
    let (status, body) = post(
        &app,
        "/account/passkeys",
        Some(&ada),
        json!({"ceremony": started["data"]["ceremony"], "credential": bogus_credential(), "name": "x"}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["errors"]["credential"][0],
        "The passkey could not be verified."
    );
    // Nothing was stored.
    let res = app
        .admin(Method::GET, "/account/passkeys", Some(&ada), None)
        .await;
    assert_eq!(res.json(), json!({"data": []}));
    let res = app
        .admin(Method::DELETE, "/account/passkeys/1", Some(&ada), None)
        .await;
    assert_eq!(res.status, 404);
    let res = app
        .admin(Method::DELETE, "/account/passkeys/nope", Some(&ada), None)
        .await;
    assert_eq!(res.status, 404);
}

#[actix_web::test]
async fn a_sign_in_ceremony_is_anonymous_single_use_and_refuses_what_does_not_verify() {
    let app = TestApp::new(json!({})).await;
    let (status, body) = post(&app, "/login/passkey/options", None, json!({})).await;
    assert_eq!(status, 200, "{body}");
    let options = &body["data"]["options"]["publicKey"];
    assert_eq!(options["rpId"], "cms.test", "{body}");
    assert_eq!(options["userVerification"], "required");
    assert_eq!(
        options["allowCredentials"],
        json!([]),
        "usernameless: {body}"
    );
    let ceremony = body["data"]["ceremony"].clone();

    let (status, body) = post(
        &app,
        "/login/passkey",
        None,
        json!({"ceremony": ceremony, "credential": bogus_assertion()}),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["errors"]["credential"][0],
        "The passkey could not be verified."
    );
    let res = app
        .admin(
            Method::POST,
            "/login/passkey",
            None,
            Some(json!({"ceremony": ceremony, "credential": bogus_assertion()})),
        )
        .await;
    assert_eq!(res.status, 422);
    assert_eq!(
        res.json()["errors"]["ceremony"][0],
        "The passkey request has expired; start again."
    );
    assert!(res.header("set-cookie").is_none());
    // Not an object, no credential.
    let (status, _) = post(&app, "/login/passkey", None, json!([1])).await;
    assert_eq!(status, 422);
    let (status, body) = post(&app, "/login/passkey", None, json!({"ceremony": "x"})).await;
    assert_eq!(status, 422, "{body}");
}

#[actix_web::test]
async fn anonymous_sign_in_starts_are_bounded_per_address() {
    let app = TestApp::new(json!({})).await;
    let mut refused = None;
    for n in 0..70 {
        let res = app
            .admin(
                Method::POST,
                "/login/passkey/options",
                None,
                Some(json!({})),
            )
            .await;
        if res.status == 429 {
            refused = Some((n, res));
            break;
        }
        assert_eq!(res.status, 200);
    }
    let (n, res) = refused.expect("refused within 70 starts");
    assert_eq!(n, 60, "the 61st start from one address is refused");
    assert!(res.header("retry-after").is_some());
    assert_eq!(res.json(), json!({"message": "Too many requests."}));
}

#[actix_web::test]
async fn the_sign_in_page_offers_passkeys_when_the_base_url_can_be_a_relying_party() {
    let app = TestApp::new(json!({})).await;
    let res = app
        .send(TestApp::request(Method::GET, "/login").insert_header(("accept", "text/html")))
        .await;
    let page = String::from_utf8_lossy(&res.body).into_owned();
    assert!(page.contains("Sign in with a passkey"), "{page}");
    assert!(page.contains("/assets/passkeys.js?v="), "{page}");
}

/// A ceremony started on one replica is finished on another (database, and Redis when
/// `VELLUM_TEST_REDIS_URL` names a server), once.
#[actix_web::test]
async fn a_ceremony_started_on_one_replica_is_finished_on_another() {
    ceremony_across_replicas(None).await;
    if let Ok(url) = std::env::var(crate::support::REDIS_ENV)
        && !url.trim().is_empty()
    {
        ceremony_across_replicas(Some(url.trim())).await;
    }
}

async fn ceremony_across_replicas(redis: Option<&str>) {
    let app = TestApp::new(json!({})).await;
    let (a, b) = replicas(&app, &vellum_http::HttpConfig::default(), redis).await;
    let started = admin_at(
        &a,
        Method::POST,
        "/login/passkey/options",
        None,
        Some(json!({})),
    )
    .await;
    assert_eq!(started.status, 200, "{redis:?}");
    let ceremony = started.json()["data"]["ceremony"].clone();
    let finish = json!({"ceremony": ceremony, "credential": bogus_assertion()});
    let on_b = admin_at(
        &b,
        Method::POST,
        "/login/passkey",
        None,
        Some(finish.clone()),
    )
    .await;
    assert_eq!(on_b.status, 422);
    assert_eq!(
        on_b.json()["errors"]["credential"][0],
        "The passkey could not be verified.",
        "B found A's ceremony ({redis:?})"
    );
    let again = admin_at(&a, Method::POST, "/login/passkey", None, Some(finish)).await;
    assert_eq!(
        again.json()["errors"]["ceremony"][0],
        "The passkey request has expired; start again.",
        "taken once across replicas ({redis:?})"
    );
}
