//! The web UI's side of the admin routes (issue 19): the same route answers a page when the
//! request does not prefer JSON. Sign-in forms posted without script (303 on success, the page
//! again with the problem next to its field on 422, the wait on 429), the dashboard and account
//! pages, the menu limited to what the user may open, error pages, the page headers, and the
//! embedded assets. The browser suite (`tests/browser`) drives the same pages in Chromium.

use actix_web::http::Method;
use actix_web::test::TestRequest;
use serde_json::json;

use super::access_support::signed_in_with;
use super::{PASSWORD, Session, create_user, set_cookie};
use crate::support::{Response, TestApp};

pub(super) const HTML: &str = "text/html,application/xhtml+xml,*/*;q=0.8";

/// A browser's request: `Accept` as Chromium sends it, the session cookie, same-origin.
pub(super) fn browser(method: Method, path: &str, session: Option<&Session>) -> TestRequest {
    let mut req = TestApp::request(method, path)
        .insert_header(("accept", HTML))
        .insert_header(("sec-fetch-site", "same-origin"));
    if let Some(s) = session {
        req = req.insert_header(("cookie", s.cookie.clone()));
    }
    req
}

/// A browser posting an HTML form.
pub(super) fn form(path: &str, session: Option<&Session>, fields: &[(&str, &str)]) -> TestRequest {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    browser(Method::POST, path, session)
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload(body)
}

/// A form as htmx sends it: urlencoded, with `HX-Request`, as `method` (htmx puts and deletes).
pub(super) fn htmx_form(
    method: Method,
    path: &str,
    session: &Session,
    fields: &[(&str, &str)],
) -> TestRequest {
    let body: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    browser(method, path, Some(session))
        .insert_header(("hx-request", "true"))
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload(body)
}

/// The page at `path` as `session`'s browser gets it, which must be a 200 page.
pub(super) async fn open(app: &TestApp, session: &Session, path: &str) -> String {
    assert_page(
        &app.send(browser(Method::GET, path, Some(session))).await,
        200,
    )
}

pub(super) fn text(res: &Response) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

pub(super) fn assert_page(res: &Response, status: u16) -> String {
    let body = text(res);
    assert_eq!(res.status, status, "{body}");
    assert_eq!(res.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(res.header("cache-control"), Some("no-store"));
    let csp = res.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(res.header("x-frame-options"), Some("DENY"));
    assert!(body.starts_with("<!doctype html>"), "{body}");
    body
}

#[actix_web::test]
async fn a_browser_without_a_session_is_sent_to_the_sign_in_page() {
    let app = TestApp::new(json!({})).await;
    for path in ["/", "/account", "/users"] {
        let res = app.send(browser(Method::GET, path, None)).await;
        assert_eq!(res.status, 303, "{path}");
        assert_eq!(res.header("location"), Some("/login"), "{path}");
    }
    let page = assert_page(&app.send(browser(Method::GET, "/login", None)).await, 200);
    assert!(
        page.contains(r#"<form method="post" action="/login""#),
        "{page}"
    );
    assert!(page.contains(r#"autocomplete="current-password""#));
    let code = assert_page(
        &app.send(browser(Method::GET, "/login?method=code", None))
            .await,
        200,
    );
    assert!(code.contains(r#"action="/login/code""#), "{code}");
    // JSON clients get the methods instead.
    let res = app.admin(Method::GET, "/login", None, None).await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.json(),
        json!({"data": {"methods": ["password", "code", "passkey"]}})
    );
}

#[actix_web::test]
async fn the_password_form_signs_in_with_a_303_or_shows_the_error_next_to_the_field() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "ada@example.com", "Ada", &["super-admin"]).await;
    let wrong = app
        .send(form(
            "/login",
            None,
            &[("email", "ada@example.com"), ("password", "nope")],
        ))
        .await;
    let page = assert_page(&wrong, 422);
    assert!(set_cookie(&wrong).is_none());
    assert!(
        page.contains(r#"id="email-error">These credentials do not match our records."#),
        "{page}"
    );
    assert!(
        page.contains(r#"value="ada@example.com""#),
        "the typed address is kept: {page}"
    );

    let ok = app
        .send(form(
            "/login",
            None,
            &[("email", "ada@example.com"), ("password", PASSWORD)],
        ))
        .await;
    assert_eq!(ok.status, 303, "{}", text(&ok));
    assert_eq!(ok.header("location"), Some("/"));
    let session = Session {
        cookie: set_cookie(&ok).expect("a session cookie"),
    };
    let dashboard = assert_page(
        &app.send(browser(Method::GET, "/", Some(&session))).await,
        200,
    );
    assert!(dashboard.contains("<h1>Dashboard</h1>"), "{dashboard}");
    assert!(
        dashboard.contains("<title>Dashboard · Vellum</title>"),
        "{dashboard}"
    );
    assert!(
        dashboard.contains(r#"href="/" aria-current="page">Dashboard"#),
        "{dashboard}"
    );
    // Signed in, the sign-in page sends the browser on.
    let again = app
        .send(browser(Method::GET, "/login", Some(&session)))
        .await;
    assert_eq!(
        (again.status.as_u16(), again.header("location")),
        (303, Some("/"))
    );
    // The same session works for JSON.
    let account = app
        .admin(Method::GET, "/account", Some(&session), None)
        .await;
    assert_eq!(account.json()["data"]["email"], "ada@example.com");
}

#[actix_web::test]
async fn a_throttled_form_shows_the_wait_with_429_and_retry_after() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "bo@example.com", "Bo", &[]).await;
    let mut last = None;
    for _ in 0..8 {
        let res = app
            .send(form(
                "/login",
                None,
                &[("email", "bo@example.com"), ("password", "bad")],
            ))
            .await;
        if res.status == 429 {
            last = Some(res);
            break;
        }
        assert_eq!(res.status, 422);
    }
    let res = last.expect("throttled within 8 failures");
    let page = assert_page(&res, 429);
    assert!(res.header("retry-after").is_some());
    assert!(page.contains("Too many attempts. Try again in"), "{page}");
}

#[actix_web::test]
async fn the_code_forms_ask_for_the_address_then_the_code() {
    let app = TestApp::new(json!({})).await;
    create_user(&app.state, "cy@example.com", "Cy", &[]).await;
    let sent = app
        .send(form("/login/code", None, &[("email", "cy@example.com")]))
        .await;
    let page = assert_page(&sent, 200);
    assert!(page.contains(r#"action="/login/code/verify""#), "{page}");
    assert!(page.contains("a sign-in code is on its way"), "{page}");
    let bad = app
        .send(form("/login/code", None, &[("email", "not an address")]))
        .await;
    let page = assert_page(&bad, 422);
    assert!(page.contains(r#"id="email-error""#), "{page}");
    let wrong = app
        .send(form(
            "/login/code/verify",
            None,
            &[("email", "cy@example.com"), ("code", "000000")],
        ))
        .await;
    let page = assert_page(&wrong, 422);
    assert!(
        page.contains(r#"id="code-error">The code is invalid or has expired."#),
        "{page}"
    );
    assert!(
        page.contains(r#"name="email" value="cy@example.com""#),
        "{page}"
    );
}

#[actix_web::test]
async fn the_menu_lists_only_the_areas_the_user_may_open() {
    let app = TestApp::new(json!({})).await;
    let viewer = signed_in_with(
        &app,
        "viewer@example.com",
        &["can-show-dashboard", "can-show-files"],
    )
    .await;
    let page = assert_page(
        &app.send(browser(Method::GET, "/", Some(&viewer))).await,
        200,
    );
    for shown in [r#"href="/files""#, "Dashboard"] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    for hidden in [
        r#"href="/users""#,
        r#"href="/settings/roles""#,
        r#"href="/settings/api-keys""#,
        "People",
    ] {
        assert!(!page.contains(hidden), "{hidden}: {page}");
    }
    // Without the dashboard's permission the page is a 403 error page.
    let none = signed_in_with(&app, "none@example.com", &[]).await;
    let res = app.send(browser(Method::GET, "/", Some(&none))).await;
    let page = assert_page(&res, 403);
    assert!(
        page.contains("Not allowed") && page.contains("Forbidden."),
        "{page}"
    );
}

#[actix_web::test]
async fn the_account_page_lists_sessions_and_signs_out_the_others() {
    let app = TestApp::new(json!({})).await;
    let me = app.signed_in("dee@example.com", &[]).await;
    let other = app.sign_in("dee@example.com", PASSWORD).await;
    let page = assert_page(
        &app.send(browser(Method::GET, "/account", Some(&me))).await,
        200,
    );
    assert!(
        page.contains("<title>Your account · Vellum</title>"),
        "{page}"
    );
    assert_eq!(
        page.matches("<h2").count(),
        3,
        "profile, sessions, passkeys: {page}"
    );
    assert!(page.contains("dee@example.com"), "{page}");
    assert_eq!(page.matches("<tr><td>").count(), 2, "{page}");
    assert_eq!(page.matches("this session").count(), 1, "{page}");
    assert!(page.contains("Sign out everywhere else"), "{page}");

    let res = app
        .send(form("/account/sessions/revoke", Some(&me), &[]))
        .await;
    assert_eq!(res.status, 303, "{}", text(&res));
    assert_eq!(res.header("location"), Some("/account?ended=1"));
    let page = assert_page(
        &app.send(browser(Method::GET, "/account?ended=1", Some(&me)))
            .await,
        200,
    );
    assert!(page.contains("Signed out of 1 other session."), "{page}");
    assert!(page.contains("This is your only session."), "{page}");
    let gone = app.send(browser(Method::GET, "/", Some(&other))).await;
    assert_eq!(gone.header("location"), Some("/login"));

    // Signing out by form: 303 to the sign-in page, the cookie cleared, the session gone.
    let out = app.send(form("/logout", Some(&me), &[])).await;
    assert_eq!(
        (out.status.as_u16(), out.header("location")),
        (303, Some("/login"))
    );
    assert!(
        out.header("set-cookie")
            .is_some_and(|c| c.contains("Max-Age=0")),
        "{:?}",
        out.headers
    );
    let after = app.send(browser(Method::GET, "/account", Some(&me))).await;
    assert_eq!(after.header("location"), Some("/login"));
}

#[actix_web::test]
async fn a_cross_site_form_post_is_refused_with_an_error_page() {
    let app = TestApp::new(json!({})).await;
    let me = app.signed_in("eve@example.com", &[]).await;
    let res = app
        .send(
            TestApp::request(Method::POST, "/account/sessions/revoke")
                .insert_header(("accept", HTML))
                .insert_header(("sec-fetch-site", "cross-site"))
                .insert_header(("cookie", me.cookie.clone())),
        )
        .await;
    let page = assert_page(&res, 403);
    assert!(page.contains("Cross-site request refused."), "{page}");
}

#[actix_web::test]
async fn unknown_pages_and_json_errors_become_error_pages_for_a_browser() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = app
        .send(browser(Method::GET, "/collections/nope", Some(&root)))
        .await;
    let page = assert_page(&res, 404);
    assert!(page.contains("Not found."), "{page}");
    // JSON clients keep the envelope.
    let res = app
        .admin(Method::GET, "/collections/nope", Some(&root), None)
        .await;
    assert_eq!(
        (res.status.as_u16(), res.json()),
        (404, json!({"message": "Not found."}))
    );
}

#[actix_web::test]
async fn assets_are_embedded_and_cached_by_version() {
    let app = TestApp::new(json!({})).await;
    let page = text(&app.send(browser(Method::GET, "/login", None)).await);
    let css = page
        .split('"')
        .find(|s| s.starts_with("/assets/app.css?v="))
        .expect("the page links its stylesheet")
        .to_owned();
    let res = app.get(&css).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("text/css; charset=utf-8"));
    assert_eq!(
        res.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    let etag = res.header("etag").unwrap().to_owned();
    let stale = app.get("/assets/app.css?v=000000000000").await;
    assert_eq!(stale.header("cache-control"), Some("no-cache"));
    let not_modified = app
        .send(
            TestApp::request(Method::GET, "/assets/app.css").insert_header(("if-none-match", etag)),
        )
        .await;
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    let js = page
        .split('"')
        .find(|s| s.starts_with("/assets/htmx-"))
        .expect("htmx is linked");
    assert_eq!(
        app.get(js).await.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    for missing in ["/assets/nope.js", "/assets/../Cargo.toml", "/assets/"] {
        assert_eq!(app.get(missing).await.status, 404, "{missing}");
    }
}

#[actix_web::test]
async fn the_users_page_lists_searches_pages_and_shows_its_empty_states() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    for n in 0..17 {
        create_user(
            &app.state,
            &format!("user{n:02}@example.com"),
            &format!("User {n:02}"),
            &[],
        )
        .await;
    }
    let page = assert_page(
        &app.send(browser(Method::GET, "/users", Some(&root))).await,
        200,
    );
    assert!(page.contains("<title>Users · Vellum</title>"), "{page}");
    assert!(page.contains("18 users"), "{page}");
    assert_eq!(
        page.matches("<tr>").count(),
        16,
        "a header and 15 rows: {page}"
    );
    assert!(
        page.contains(r#"href="/users?page=2" rel="next""#),
        "{page}"
    );
    assert!(
        page.contains(r#"href="/users" aria-current="page">Users"#),
        "{page}"
    );

    let searched = assert_page(
        &app.send(browser(
            Method::GET,
            "/users?search=user%2003&page=1",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(searched.contains("1 user<"), "{searched}");
    assert!(
        searched.contains(r#"value="user 03""#),
        "the search is kept: {searched}"
    );
    let none = assert_page(
        &app.send(browser(
            Method::GET,
            "/users?search=%3Cnobody%3E",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(
        none.contains("No users match “&#60;nobody&#62;”"),
        "escaped: {none}"
    );
    let trash = assert_page(
        &app.send(browser(Method::GET, "/users?trashed=only", Some(&root)))
            .await,
        200,
    );
    assert!(trash.contains("No deleted users"), "{trash}");
    // A bad query is the error page with the problem; JSON keeps the envelope.
    let bad = app
        .send(browser(Method::GET, "/users?trashed=nope", Some(&root)))
        .await;
    let page = assert_page(&bad, 422);
    assert!(
        page.contains("The trashed field must be one of: with, only."),
        "{page}"
    );
    let res = app
        .admin(Method::GET, "/users?per_page=2", Some(&root), None)
        .await;
    assert_eq!(res.json()["meta"]["per_page"], 2);
}

#[actix_web::test]
async fn the_groups_page_lists_and_searches_groups() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let empty = assert_page(
        &app.send(browser(Method::GET, "/groups", Some(&root))).await,
        200,
    );
    assert!(empty.contains("<title>Groups · Vellum</title>"), "{empty}");
    assert!(empty.contains("No groups yet"), "{empty}");
    for name in ["Editors", "Reviewers"] {
        let res = app
            .admin(
                Method::POST,
                "/groups",
                Some(&root),
                Some(json!({"name": name, "roles": ["super-admin"]})),
            )
            .await;
        assert_eq!(res.status, 201, "{:?}", String::from_utf8_lossy(&res.body));
    }
    let page = assert_page(
        &app.send(browser(Method::GET, "/groups", Some(&root))).await,
        200,
    );
    assert!(page.contains("2 groups"), "{page}");
    assert!(
        page.contains(">Editors</a></td><td>super-admin</td><td>0</td>"),
        "{page}"
    );
    assert!(
        page.contains(r#"href="/groups" aria-current="page">Groups"#),
        "{page}"
    );
    let searched = assert_page(
        &app.send(browser(Method::GET, "/groups?search=review", Some(&root)))
            .await,
        200,
    );
    assert!(
        searched.contains("1 group<") && searched.contains("Reviewers"),
        "{searched}"
    );
    assert!(!searched.contains("Editors"), "{searched}");
}

#[actix_web::test]
async fn the_activity_page_lists_and_filters_entries() {
    let app = TestApp::new(json!({})).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = assert_page(
        &app.send(browser(Method::GET, "/activity-logs", Some(&root)))
            .await,
        200,
    );
    assert!(page.contains("<title>Activity · Vellum</title>"), "{page}");
    assert!(
        page.contains("<td>auth</td><td>signed_in</td><td>user "),
        "the sign-in is listed: {page}"
    );
    assert!(
        page.contains(r#"href="/activity-logs" aria-current="page">Activity"#),
        "{page}"
    );
    let none = assert_page(
        &app.send(browser(
            Method::GET,
            "/activity-logs?log_name=nothing-here",
            Some(&root),
        ))
        .await,
        200,
    );
    assert!(none.contains("No activity matches these filters"), "{none}");
    assert!(
        none.contains(r#"value="nothing-here""#),
        "the filter is kept: {none}"
    );
    let bad = app
        .send(browser(
            Method::GET,
            "/activity-logs?user_id=abc",
            Some(&root),
        ))
        .await;
    let page = assert_page(&bad, 422);
    assert!(
        page.contains("The user_id field must be a positive integer."),
        "{page}"
    );
}
