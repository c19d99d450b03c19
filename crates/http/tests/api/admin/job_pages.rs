//! The web UI's jobs and webhooks pages (issue 24): the webhooks page lists webhooks and
//! creates one from its form with the signing secret shown in the answer, re-renders a refused
//! form with 422, deletes with htmx; the jobs page counts jobs per status, filters by status and
//! offers Retry and Cancel (htmx) where the status allows them and the user may manage jobs; a
//! webhook's page shows its delivery log and replays a delivery with htmx.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::json;
use vellum_http::{HttpConfig, JobsConfig};

use super::access_support::signed_in_with;
use super::pages::{assert_page, browser, form, open};
use super::{Session, admin_request};
use crate::support::{TestApp, post_item};

/// The id of the only job in the queue, read through the JSON side.
async fn only_job(app: &TestApp, session: &Session) -> String {
    let page = app.admin(Method::GET, "/jobs", Some(session), None).await;
    let jobs = page.json()["data"].as_array().unwrap().clone();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    jobs[0]["id"].as_str().unwrap().to_owned()
}

/// An htmx button's POST (no body), as `session`.
async fn htmx_post(app: &TestApp, session: &Session, path: &str) -> String {
    let res = app
        .send(browser(Method::POST, path, Some(session)).insert_header(("hx-request", "true")))
        .await;
    assert_eq!(res.status, 204, "{}", String::from_utf8_lossy(&res.body));
    res.header("hx-redirect").unwrap().to_owned()
}

#[actix_web::test]
async fn a_webhook_is_created_from_the_form_with_its_secret_shown_and_deleted_with_htmx() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/settings/webhooks").await;
    assert!(page.contains("No webhooks yet"), "{page}");
    assert!(
        page.contains(r#"href="/settings/webhooks" aria-current="page">Webhooks"#),
        "{page}"
    );
    assert!(page.contains(r#"value="item.created""#), "{page}");
    assert!(page.contains(r#"name="collections" value="articles""#));

    let res = app
        .send(form(
            "/settings/webhooks",
            Some(&root),
            &[
                ("name", "site rebuild"),
                ("url", "https://example.com/hooks/vellum"),
                ("events", "item.created"),
                ("events", "file.deleted"),
                ("collections", "articles"),
                ("enabled", "1"),
            ],
        ))
        .await;
    let page = assert_page(&res, 200);
    let secret = page
        .split(r#"<input id="secret" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{page}");
    assert!(page.contains(r#">site rebuild</a></td>"#), "{page}");
    assert!(
        page.contains(r#"<li class="tag">file.deleted</li>"#),
        "{page}"
    );
    assert!(page.contains(r#"<span class="tag state-enabled">enabled</span>"#));
    // The secret is the stored one, and the list never shows it again.
    let hooks = app
        .admin(Method::GET, "/settings/webhooks", Some(&root), None)
        .await
        .json();
    let hook = &hooks["data"][0];
    assert_eq!(hook["collections"], json!(["articles"]));
    assert_eq!(hook["enabled"], true);
    let id = hook["id"].as_i64().unwrap();
    let shown = app
        .admin(
            Method::GET,
            &format!("/settings/webhooks/{id}"),
            Some(&root),
            None,
        )
        .await
        .json();
    assert_eq!(shown["data"]["secret"], secret.as_str());
    assert!(
        !open(&app, &root, "/settings/webhooks")
            .await
            .contains(&secret)
    );

    // Unticked, "enabled" is absent from the post: the webhook starts disabled.
    let res = app
        .send(form(
            "/settings/webhooks",
            Some(&root),
            &[
                ("name", "paused"),
                ("url", "https://example.com/other"),
                ("events", "item.deleted"),
            ],
        ))
        .await;
    let page = assert_page(&res, 200);
    assert!(page.contains(r#"<span class="tag state-disabled">disabled</span>"#));

    let res = app
        .send(
            browser(
                Method::DELETE,
                &format!("/settings/webhooks/{id}"),
                Some(&root),
            )
            .insert_header(("hx-request", "true")),
        )
        .await;
    assert_eq!(res.status, 204);
    let next = res.header("hx-redirect").unwrap().to_owned();
    let page = open(&app, &root, &next).await;
    assert!(page.contains("Webhook deleted."), "{page}");
    assert!(!page.contains("site rebuild"), "{page}");
}

#[actix_web::test]
async fn a_refused_webhook_form_comes_back_with_422_its_values_and_each_problem() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = app
        .send(form(
            "/settings/webhooks",
            Some(&root),
            &[
                ("name", "internal"),
                ("url", "http://127.0.0.1:9000/hook"),
                ("collections", "tags"),
            ],
        ))
        .await;
    let page = assert_page(&res, 422);
    assert!(page.contains(r#"id="hook-url-error""#), "{page}");
    assert!(page.contains("private or reserved address"), "{page}");
    assert!(page.contains(r#"id="hook-events-error""#), "{page}");
    assert!(page.contains(r#"value="http://127.0.0.1:9000/hook""#));
    assert!(page.contains(r#"value="internal""#));
    assert!(
        page.contains(r#"name="collections" value="tags" checked"#),
        "{page}"
    );
    assert!(
        !page.contains(r#"name="enabled" value="1" checked"#),
        "the unticked box stays unticked: {page}"
    );
    assert!(!page.contains(r#"id="secret""#));
    let hooks = app
        .admin(Method::GET, "/settings/webhooks", Some(&root), None)
        .await
        .json();
    assert_eq!(hooks["data"], json!([]));
}

#[actix_web::test]
async fn the_pages_are_refused_without_their_permission_and_absent_from_the_menu() {
    let app = TestApp::new(crate::support::blog()).await;
    let nobody = signed_in_with(&app, "nobody@example.com", &["can-show-dashboard"]).await;
    for path in ["/jobs", "/settings/webhooks"] {
        let page = assert_page(
            &app.send(browser(Method::GET, path, Some(&nobody))).await,
            403,
        );
        assert!(page.contains("Forbidden."), "{path}: {page}");
    }
    let res = app
        .send(form(
            "/settings/webhooks",
            Some(&nobody),
            &[
                ("name", "x"),
                ("url", "https://example.com/"),
                ("events", "item.created"),
            ],
        ))
        .await;
    assert_page(&res, 403);
    let menu = open(&app, &nobody, "/").await;
    assert!(
        !menu.contains(r#"href="/jobs""#) && !menu.contains(r#"href="/settings/webhooks""#),
        "{menu}"
    );

    // Who may look at jobs sees them, without Retry or Cancel, and no webhooks.
    let viewer = signed_in_with(
        &app,
        "viewer@example.com",
        &["can-show-dashboard", "can-show-jobs"],
    )
    .await;
    let page = open(&app, &viewer, "/jobs").await;
    assert!(
        page.contains(r#"href="/jobs" aria-current="page">Jobs"#),
        "{page}"
    );
    assert!(!page.contains(r#"href="/settings/webhooks""#), "{page}");
}

#[actix_web::test]
async fn the_jobs_page_counts_per_status_and_retries_and_cancels_where_it_applies() {
    let app = TestApp::new(crate::support::blog()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let page = open(&app, &root, "/jobs").await;
    assert!(
        page.contains("No jobs yet. Webhook deliveries appear here."),
        "{page}"
    );
    assert!(
        page.contains(
            r#"<a href="/jobs" aria-current="page">All <span class="count">0</span></a>"#
        )
    );

    // A webhook on item.created, then an item: one delivery queued (no worker runs in tests).
    let res = app
        .send(admin_request(
            Method::POST,
            "/settings/webhooks",
            Some(&root),
            Some(json!({"name": "h", "url": "https://example.com/h", "events": ["item.created"]})),
        ))
        .await;
    assert_eq!(res.status, 201);
    post_item(&app, "tags", json!({"label": "new"})).await;
    let id = only_job(&app, &root).await;
    let short = &id[..8];

    let page = open(&app, &root, "/jobs").await;
    assert!(
        page.contains(r#"<span class="tag state-queued">queued</span>"#),
        "{page}"
    );
    assert!(page.contains("item.created → webhook"), "{page}");
    assert!(page.contains(r#"href="/jobs?status=queued">Queued <span class="count">1</span>"#));
    assert!(
        page.contains(&format!(r#"hx-post="/jobs/{id}/cancel""#)),
        "{page}"
    );
    assert!(
        !page.contains(&format!(r#"hx-post="/jobs/{id}/retry""#)),
        "{page}"
    );
    let dead = open(&app, &root, "/jobs?status=dead").await;
    assert!(dead.contains("No dead jobs"), "{dead}");
    assert!(dead.contains(r#"href="/jobs?status=dead" aria-current="page""#));

    // Cancel: the page to load next says so, and offers Retry instead.
    let next = htmx_post(&app, &root, &format!("/jobs/{id}/cancel")).await;
    assert_eq!(next, "/jobs?cancelled=1");
    let page = open(&app, &root, &next).await;
    assert!(page.contains("Job cancelled"), "{page}");
    assert!(page.contains(r#"<span class="tag state-cancelled">cancelled</span>"#));
    assert!(
        page.contains(&format!(r#"aria-label="Retry job {short}""#)),
        "{page}"
    );
    assert!(!page.contains(&format!(r#"hx-post="/jobs/{id}/cancel""#)));

    let next = htmx_post(&app, &root, &format!("/jobs/{id}/retry")).await;
    let page = open(&app, &root, &next).await;
    assert!(page.contains("Job queued again"), "{page}");
    assert!(page.contains(r#"<span class="tag state-queued">queued</span>"#));

    // Who may only look gets no buttons; a bad status is refused.
    let viewer = signed_in_with(&app, "viewer@example.com", &["can-show-jobs"]).await;
    let page = open(&app, &viewer, "/jobs").await;
    assert!(page.contains(short), "{page}");
    assert!(!page.contains("hx-post"), "{page}");
    assert_page(
        &app.send(browser(Method::GET, "/jobs?status=lost", Some(&viewer)))
            .await,
        422,
    );
}

#[actix_web::test]
async fn a_webhooks_page_shows_its_delivery_log_and_replays_with_htmx() {
    // A worker runs here; the receiver's port is closed, so every delivery fails at once.
    let config = HttpConfig {
        jobs: JobsConfig {
            concurrency: 2,
            poll_interval: Duration::from_millis(50),
            request_timeout: Duration::from_secs(2),
            backoff_base: Duration::from_secs(60),
            backoff_max: Duration::from_secs(60),
            allowed_networks: vec!["127.0.0.0/8".parse().unwrap()],
            ..JobsConfig::default()
        },
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(crate::support::blog(), config).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let res = app
        .send(admin_request(
            Method::POST,
            "/settings/webhooks",
            Some(&root),
            Some(json!({"name": "closed", "url": "http://127.0.0.1:1/hook", "events": ["item.created"]})),
        ))
        .await;
    assert_eq!(res.status, 201);
    let hook = res.json()["data"].clone();
    let path = format!("/settings/webhooks/{}", hook["id"]);
    let page = open(&app, &root, &path).await;
    assert!(page.contains("No deliveries yet"), "{page}");
    assert!(
        page.contains(&format!(r#"value="{}""#, hook["secret"].as_str().unwrap())),
        "the secret, behind a disclosure: {page}"
    );
    assert!(page.contains("<code>http://127.0.0.1:1/hook</code>"));

    post_item(&app, "tags", json!({"label": "new"})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let page = loop {
        let page = open(&app, &root, &path).await;
        if page.contains("state-failed") {
            break page;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no failed delivery: {page}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(page.contains("<code>item.created</code>"), "{page}");
    let delivery = page
        .split(&format!(r#"hx-post="{path}/deliveries/"#))
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let next = htmx_post(&app, &root, &format!("{path}/deliveries/{delivery}/replay")).await;
    assert_eq!(next, format!("{path}?replayed=1"));
    let page = open(&app, &root, &next).await;
    assert!(page.contains("Delivery queued again"), "{page}");

    // The page is refused without the permission.
    let viewer = signed_in_with(&app, "viewer@example.com", &["can-show-jobs"]).await;
    assert_page(
        &app.send(browser(Method::GET, &path, Some(&viewer))).await,
        403,
    );
}
