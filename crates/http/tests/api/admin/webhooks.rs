//! Webhooks and jobs (issue 24): each route with exactly its permission; an item or file write
//! delivered to a local receiver, signed (Standard Webhooks) and logged; a receiver that is down
//! gets exactly the same message when it returns; a job whose worker died is delivered by another
//! replica; repeated failures disable a webhook; dead jobs retried and queued ones cancelled;
//! replay; SSRF refusals. Runs on SQLite and, with VELLUM_TEST_POSTGRES_URL, on PostgreSQL.

use std::time::Duration;

use actix_web::http::Method;
use serde_json::{Value, json};
use vellum_http::{HttpConfig, JobsConfig};

use super::Session;
use super::access_support::{Route, assert_allowed, assert_denied, error_fields, signed_in_with};
use super::receiver::{Received, Receiver};
use crate::support::{TestApp, blog, post_item};

const WAIT: Duration = Duration::from_secs(20);

/// Jobs run here at once, retried quickly, and the local receiver is reachable.
fn config(jobs: JobsConfig) -> HttpConfig {
    HttpConfig {
        jobs,
        ..HttpConfig::default()
    }
}

fn fast_jobs() -> JobsConfig {
    JobsConfig {
        concurrency: 4,
        poll_interval: Duration::from_millis(50),
        request_timeout: Duration::from_secs(2),
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(400),
        max_attempts: 50,
        disable_after: 1000,
        allowed_networks: vec!["127.0.0.0/8".parse().unwrap()],
    }
}

async fn admin(app: &TestApp) -> Session {
    signed_in_with(
        app,
        "hooks@example.com",
        &[
            "can-manage-project-settings",
            "can-show-jobs",
            "can-manage-jobs",
        ],
    )
    .await
}

async fn create_hook(app: &TestApp, session: &Session, body: Value) -> Value {
    let res = app
        .admin(
            Method::POST,
            "/settings/webhooks",
            Some(session),
            Some(body),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json()["data"].clone()
}

/// The signature the receiver computes from the secret it was given.
fn expected_signature(secret: &str, got: &Received) -> String {
    let key = vellum_app::webhooks::signing::secret_key(secret).unwrap();
    let timestamp: i64 = got.header("webhook-timestamp").parse().unwrap();
    vellum_app::webhooks::signing::signature(&key, got.header("webhook-id"), timestamp, &got.body)
        .unwrap()
}

async fn wait_for_job(app: &TestApp, session: &Session, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let res = app
            .admin(
                Method::GET,
                &format!("/jobs?status={status}"),
                Some(session),
                None,
            )
            .await;
        assert_eq!(res.status, 200);
        let body = res.json();
        if let Some(job) = body["data"].as_array().and_then(|jobs| jobs.first()) {
            return job.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no {status} job");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[actix_web::test]
async fn every_webhook_and_job_route_is_allowed_with_its_permission_and_denied_without() {
    let app = TestApp::with_config(blog(), config(JobsConfig::default())).await;
    let outsider = signed_in_with(&app, "outsider@example.com", &["can-show-roles"]).await;
    let settings = signed_in_with(
        &app,
        "settings@example.com",
        &["can-manage-project-settings"],
    )
    .await;
    let show_jobs = signed_in_with(&app, "show@example.com", &["can-show-jobs"]).await;
    let manage_jobs = signed_in_with(&app, "manage@example.com", &["can-manage-jobs"]).await;
    let hook = create_hook(
        &app,
        &settings,
        json!({"name": "site", "url": "https://hooks.example.com/in", "events": ["item.created"]}),
    )
    .await;
    let id = hook["id"].as_i64().unwrap();
    let hook_routes = [
        Route::new(Method::GET, "/settings/webhooks", None),
        Route::new(Method::GET, format!("/settings/webhooks/{id}"), None),
        Route::new(
            Method::PUT,
            format!("/settings/webhooks/{id}"),
            Some(json!({"enabled": false})),
        ),
        Route::new(
            Method::GET,
            format!("/settings/webhooks/{id}/deliveries"),
            None,
        ),
        Route::new(
            Method::POST,
            "/settings/webhooks",
            Some(
                json!({"name": "other", "url": "https://x.example.com/", "events": ["file.uploaded"]}),
            ),
        ),
    ];
    for route in &hook_routes {
        assert_denied(&app, route, &outsider).await;
        assert_denied(&app, route, &show_jobs).await;
    }
    for (route, status) in hook_routes.iter().zip([200, 200, 200, 200, 201]) {
        assert_allowed(&app, route, &settings, status).await;
    }
    // An item write queues a delivery (no worker runs here, so it stays queued).
    post_item(&app, "articles", json!({"title": {"en": "Queued"}})).await;
    let list = Route::new(Method::GET, "/jobs", None);
    assert_denied(&app, &list, &outsider).await;
    let unknown = app
        .admin(Method::GET, "/jobs?status=exploded", Some(&show_jobs), None)
        .await;
    assert_eq!(unknown.status, 422);
    assert_eq!(error_fields(&unknown.json()), vec!["status"]);
    assert_denied(&app, &list, &manage_jobs).await;
    // Disabled above: the write queued nothing. Enable it and write again.
    assert_allowed(
        &app,
        &Route::new(
            Method::PUT,
            format!("/settings/webhooks/{id}"),
            Some(json!({"enabled": true})),
        ),
        &settings,
        200,
    )
    .await;
    post_item(&app, "articles", json!({"title": {"en": "Queued"}})).await;
    let jobs = assert_allowed(&app, &list, &show_jobs, 200).await;
    assert_eq!(jobs["data"].as_array().unwrap().len(), 1, "{jobs}");
    let job = jobs["data"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(jobs["data"][0]["status"], "queued");
    let show = Route::new(Method::GET, format!("/jobs/{job}"), None);
    assert_allowed(&app, &show, &show_jobs, 200).await;
    let cancel = Route::new(Method::POST, format!("/jobs/{job}/cancel"), None);
    let retry = Route::new(Method::POST, format!("/jobs/{job}/retry"), None);
    assert_denied(&app, &cancel, &show_jobs).await;
    assert_denied(&app, &retry, &show_jobs).await;
    let cancelled = assert_allowed(&app, &cancel, &manage_jobs, 200).await;
    assert_eq!(cancelled["data"]["status"], "cancelled");
    // Cancelling again is not possible; retrying a cancelled job is.
    let again = app
        .admin(Method::POST, &cancel.path, Some(&manage_jobs), None)
        .await;
    assert_eq!(again.status, 422);
    let retried = assert_allowed(&app, &retry, &manage_jobs, 200).await;
    assert_eq!(retried["data"]["status"], "queued");
    assert_eq!(retried["data"]["attempts"], 0);
    let delete = Route::new(Method::DELETE, format!("/settings/webhooks/{id}"), None);
    assert_denied(&app, &delete, &outsider).await;
    assert_allowed(&app, &delete, &settings, 204).await;
    let gone = app
        .admin(
            Method::GET,
            &format!("/settings/webhooks/{id}"),
            Some(&settings),
            None,
        )
        .await;
    assert_eq!(gone.status, 404);
}

#[actix_web::test]
async fn an_item_write_is_delivered_signed_and_logged() {
    let app = TestApp::with_config(blog(), config(fast_jobs())).await;
    let session = admin(&app).await;
    let receiver = Receiver::start().await;
    let hook = create_hook(
        &app,
        &session,
        json!({"name": "site", "url": receiver.url, "events": ["item.created", "item.deleted"], "collections": ["articles"]}),
    )
    .await;
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{hook}");
    // The list never shows a secret.
    let list = app
        .admin(Method::GET, "/settings/webhooks", Some(&session), None)
        .await;
    assert!(list.json()["data"][0].get("secret").is_none());

    // Another collection's write is not delivered; an article's is.
    post_item(&app, "authors", json!({"name": "Grace"})).await;
    let id = post_item(&app, "articles", json!({"title": {"en": "Hi"}})).await;
    let got = receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    let message = &got[0];
    let body: Value = serde_json::from_str(&message.body).unwrap();
    assert_eq!(body["type"], "item.created");
    assert_eq!(body["data"], json!({"collection": "articles", "id": id}));
    assert!(message.header("webhook-id").starts_with("msg_"));
    assert_eq!(message.header("content-type"), "application/json");
    assert_eq!(
        message.header("webhook-signature"),
        expected_signature(&secret, message)
    );

    let job = wait_for_job(&app, &session, "done").await;
    assert_eq!(job["attempts"], 1);
    let log = app
        .admin(
            Method::GET,
            &format!("/settings/webhooks/{}/deliveries", hook["id"]),
            Some(&session),
            None,
        )
        .await
        .json();
    assert_eq!(log["data"][0]["status"], "delivered", "{log}");
    assert_eq!(log["data"][0]["response_code"], 200);
    assert_eq!(log["data"][0]["event"], "item.created");

    // Replay: the same id and body again, signed afresh.
    let delivery = log["data"][0]["id"].as_i64().unwrap();
    let replayed = app
        .admin(
            Method::POST,
            &format!(
                "/settings/webhooks/{}/deliveries/{delivery}/replay",
                hook["id"]
            ),
            Some(&session),
            None,
        )
        .await;
    assert_eq!(replayed.status, 202);
    let got = receiver.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].header("webhook-id"), message.header("webhook-id"));
    assert_eq!(got[1].body, message.body);
    assert_eq!(
        got[1].header("webhook-signature"),
        expected_signature(&secret, &got[1])
    );
}

#[actix_web::test]
async fn a_receiver_that_is_down_gets_exactly_the_same_message_when_it_returns() {
    let app = TestApp::with_config(blog(), config(fast_jobs())).await;
    let session = admin(&app).await;
    let receiver = Receiver::start().await;
    receiver.answer(503);
    let hook = create_hook(
        &app,
        &session,
        json!({"name": "site", "url": receiver.url, "events": ["item.created"]}),
    )
    .await;
    post_item(&app, "articles", json!({"title": {"en": "Hi"}})).await;
    let failing = receiver.wait_for(3, WAIT).await;
    assert!(failing.len() >= 3);
    let failed = wait_for_job(&app, &session, "failed").await;
    assert!(
        failed["last_error"].as_str().unwrap().contains("503"),
        "{failed}"
    );
    receiver.answer(200);
    let job = wait_for_job(&app, &session, "done").await;
    let got = receiver.received();
    // Every attempt carried the same signed message: one id, one timestamp, one body.
    let first = &got[0];
    for attempt in &got {
        assert_eq!(attempt.header("webhook-id"), first.header("webhook-id"));
        assert_eq!(
            attempt.header("webhook-timestamp"),
            first.header("webhook-timestamp")
        );
        assert_eq!(
            attempt.header("webhook-signature"),
            first.header("webhook-signature")
        );
        assert_eq!(attempt.body, first.body);
    }
    assert_eq!(job["attempts"].as_u64().unwrap(), got.len() as u64);
    let log = app
        .admin(
            Method::GET,
            &format!("/settings/webhooks/{}/deliveries", hook["id"]),
            Some(&session),
            None,
        )
        .await
        .json();
    assert_eq!(log["data"][0]["status"], "delivered");
    assert_eq!(log["data"][1]["status"], "failed");
    assert_eq!(log["data"][1]["response_code"], 503);
    // The failures were counted and reset by the delivery.
    let shown = app
        .admin(
            Method::GET,
            &format!("/settings/webhooks/{}", hook["id"]),
            Some(&session),
            None,
        )
        .await
        .json();
    assert_eq!(shown["data"]["failures"], 0);
}

/// A replica that queues but runs no worker, with a webhook on `item.created` to a receiver.
async fn queuing_replica() -> (TestApp, Session, Receiver) {
    let app = TestApp::with_config(
        blog(),
        config(JobsConfig {
            concurrency: 0,
            ..fast_jobs()
        }),
    )
    .await;
    let session = admin(&app).await;
    let receiver = Receiver::start().await;
    create_hook(
        &app,
        &session,
        json!({"name": "site", "url": receiver.url, "events": ["item.created"]}),
    )
    .await;
    (app, session, receiver)
}

#[actix_web::test]
async fn a_job_whose_worker_died_is_delivered_by_another_replica() {
    let (app, session, receiver) = queuing_replica().await;
    let jobs = fast_jobs();
    for title in ["one", "two", "three"] {
        post_item(&app, "articles", json!({"title": {"en": title}})).await;
    }
    // A replica claims the jobs, and dies before their attempts end.
    let claimed = vellum_storage::jobs::claim(
        &app.db.conn,
        "webhook",
        "replica-that-dies",
        10,
        Duration::from_millis(600),
    )
    .await
    .unwrap();
    assert_eq!(claimed.len(), 3);
    // Another replica with a worker: nothing is due until the dead one's lease runs out.
    let other = vellum_app::AppState::new(app.db.conn.clone(), config(jobs))
        .await
        .unwrap();
    vellum_app::jobs::start_worker(&other);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        receiver.received().is_empty(),
        "delivered before the lease ran out"
    );
    let got = receiver.wait_for(3, WAIT).await;
    assert_eq!(got.len(), 3);
    let job = wait_for_job(&app, &session, "done").await;
    assert_eq!(job["attempts"], 2, "the dead replica's attempt counts");
    // The dead replica's late finish changes nothing.
    let late = vellum_storage::jobs::finish(
        &app.db.conn,
        &claimed[0].id,
        "replica-that-dies",
        &vellum_storage::jobs::Outcome::Failed {
            error: "late".to_owned(),
            retry_in: Duration::ZERO,
        },
    )
    .await
    .unwrap();
    assert_eq!(late, None);
    drop(other);
}

/// With Redis, a job queued on a replica that runs no worker is announced to the others: an
/// idle worker elsewhere claims it at once, long before its next poll.
#[actix_web::test]
async fn with_redis_a_queued_job_wakes_another_replicas_worker() {
    let Some(url) = std::env::var(crate::support::REDIS_ENV)
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        return; // Runs where VELLUM_TEST_REDIS_URL is set (CI).
    };
    let (app, _session, receiver) = queuing_replica().await;
    // The worker replica polls once a minute: only the announcement can wake it in time.
    let slow = config(JobsConfig {
        poll_interval: Duration::from_secs(60),
        ..fast_jobs()
    });
    let namespace = app.state.redis().unwrap().namespace().to_owned();
    let redis = vellum_http::cache::RedisBackend::new(url.trim(), 4)
        .unwrap()
        .with_namespace(&namespace);
    let blobs = std::sync::Arc::new(vellum_storage::blob::ObjectBlobStore::in_memory());
    let backends = vellum_http::Backends::redis(&slow, blobs, redis);
    let other = vellum_app::AppState::with_backends(app.db.conn.clone(), slow, backends)
        .await
        .unwrap();
    vellum_app::jobs::start_worker(&other);
    // Let its first look (nothing due) pass and its subscription settle.
    tokio::time::sleep(Duration::from_millis(800)).await;
    post_item(&app, "articles", json!({"title": {"en": "announced"}})).await;
    let got = receiver.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        got.len(),
        1,
        "delivered by the other replica well before its poll"
    );
    drop(other);
}

/// A singleton's content is an item too: its upsert delivers `item.created`, then
/// `item.updated`, queued in the write's own transaction.
#[actix_web::test]
async fn a_singleton_upsert_is_delivered_as_an_item_event() {
    let mut manifest = blog();
    manifest["collections"].as_array_mut().unwrap().push(json!({
        "slug": "site", "name": "Site", "is_singleton": true,
        "fields": [{"name": "headline", "type": "string", "settings": {}}]
    }));
    let app = TestApp::with_config(manifest, config(fast_jobs())).await;
    let session = admin(&app).await;
    let editor = signed_in_with(
        &app,
        "site@example.com",
        &["can-edit-collections", "can-create-collections"],
    )
    .await;
    let receiver = Receiver::start().await;
    create_hook(
        &app,
        &session,
        json!({"name": "site", "url": receiver.url,
               "events": ["item.created", "item.updated"], "collections": ["site"]}),
    )
    .await;
    for (headline, status) in [("Hello", 201), ("Again", 200)] {
        let res = app
            .admin(
                Method::PUT,
                "/collections/site/singleton-content",
                Some(&editor),
                Some(json!({"data": {"headline": headline}})),
            )
            .await;
        assert_eq!(res.status.as_u16(), status, "{:?}", res.json());
    }
    let got = receiver.wait_for(2, WAIT).await;
    let mut types: Vec<String> = got
        .iter()
        .map(|m| {
            serde_json::from_str::<Value>(&m.body).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    types.sort();
    assert_eq!(types, ["item.created", "item.updated"]);
}

#[actix_web::test]
async fn repeated_failures_disable_a_webhook_and_dead_jobs_can_be_retried() {
    let mut jobs = fast_jobs();
    jobs.max_attempts = 2;
    jobs.disable_after = 4;
    let app = TestApp::with_config(blog(), config(jobs)).await;
    let session = admin(&app).await;
    let receiver = Receiver::start().await;
    receiver.answer(500);
    let hook = create_hook(
        &app,
        &session,
        json!({"name": "site", "url": receiver.url, "events": ["item.created"]}),
    )
    .await;
    post_item(&app, "articles", json!({"title": {"en": "One"}})).await;
    let dead = wait_for_job(&app, &session, "dead").await;
    assert_eq!(dead["attempts"], 2);
    // Retried by hand: two more failures reach the limit and disable the webhook.
    let retried = app
        .admin(
            Method::POST,
            &format!("/jobs/{}/retry", dead["id"].as_str().unwrap()),
            Some(&session),
            None,
        )
        .await;
    assert_eq!(retried.status, 200);
    let deadline = tokio::time::Instant::now() + WAIT;
    let shown = loop {
        let shown = app
            .admin(
                Method::GET,
                &format!("/settings/webhooks/{}", hook["id"]),
                Some(&session),
                None,
            )
            .await
            .json();
        if shown["data"]["enabled"] == false {
            break shown;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never disabled: {shown}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(shown["data"]["failures"], 4);
    assert!(
        shown["data"]["disabled_reason"]
            .as_str()
            .unwrap()
            .contains("4 failed deliveries")
    );
    // A disabled webhook gets no new deliveries.
    let before = receiver.received().len();
    post_item(&app, "articles", json!({"title": {"en": "Two"}})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.received().len(), before);
}

#[actix_web::test]
async fn private_and_loopback_urls_are_refused_unless_the_operator_allows_them() {
    let app = TestApp::with_config(blog(), config(JobsConfig::default())).await;
    let session = admin(&app).await;
    for url in [
        "http://127.0.0.1:9000/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/",
        "http://[::1]/",
        "ftp://example.com/",
        "https://user:pass@example.com/",
    ] {
        let res = app
            .admin(
                Method::POST,
                "/settings/webhooks",
                Some(&session),
                Some(json!({"name": "x", "url": url, "events": ["item.created"]})),
            )
            .await;
        assert_eq!(res.status, 422, "{url}");
        assert_eq!(error_fields(&res.json()), vec!["url"], "{url}");
    }
    let bad = app
        .admin(
            Method::POST,
            "/settings/webhooks",
            Some(&session),
            Some(json!({"name": "", "url": "https://example.com/", "events": ["item.exploded"], "collections": ["nope"], "secret": "plain"})),
        )
        .await;
    assert_eq!(bad.status, 422);
    assert_eq!(
        error_fields(&bad.json()),
        vec!["collections", "events", "name", "secret"]
    );
    // A name that resolves to loopback is refused when the delivery connects.
    let mut jobs = fast_jobs();
    jobs.allowed_networks = Vec::new();
    jobs.max_attempts = 1;
    let guarded = TestApp::with_config(blog(), config(jobs)).await;
    let session = admin(&guarded).await;
    create_hook(
        &guarded,
        &session,
        json!({"name": "local", "url": "http://localhost:9/hook", "events": ["item.created"]}),
    )
    .await;
    post_item(&guarded, "articles", json!({"title": {"en": "Hi"}})).await;
    let dead = wait_for_job(&guarded, &session, "dead").await;
    assert_eq!(
        dead["last_error"],
        "the host resolves to no permitted address"
    );
}

#[actix_web::test]
async fn a_file_upload_is_delivered() {
    let app = TestApp::with_config(blog(), config(fast_jobs())).await;
    let session = admin(&app).await;
    let receiver = Receiver::start().await;
    create_hook(
        &app,
        &session,
        json!({"name": "files", "url": receiver.url, "events": ["file.uploaded", "file.deleted"]}),
    )
    .await;
    let file = app
        .upload_file(Some("admin-key"), "notes.txt", b"hello")
        .await;
    let got = receiver.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["type"], "file.uploaded");
    assert_eq!(body["data"]["id"], file["id"]);
    let _ = wait_for_job(&app, &session, "done").await;
}

#[actix_web::test]
async fn the_admin_app_queues_each_item_event_once_and_its_own_restore() {
    // No worker: every queued delivery stays visible on the jobs list.
    let app = TestApp::with_config(
        blog(),
        config(JobsConfig {
            concurrency: 0,
            ..fast_jobs()
        }),
    )
    .await;
    let session = signed_in_with(
        &app,
        "editor@example.com",
        &[
            "can-manage-project-settings",
            "can-show-jobs",
            "can-create-collections",
            "can-delete-collections",
            "can-restore-collections",
        ],
    )
    .await;
    create_hook(
        &app,
        &session,
        json!({"name": "all", "url": "https://hooks.example.com/in", "events": ["item.created", "item.deleted", "item.restored"]}),
    )
    .await;
    let created = app
        .admin(
            Method::POST,
            "/collections/articles/items",
            Some(&session),
            Some(json!({"data": {"title": "new"}})),
        )
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let id = created.json()["data"]["id"].as_i64().unwrap();
    let item = format!("/collections/articles/items/{id}");
    assert_eq!(
        app.admin(Method::DELETE, &item, Some(&session), None)
            .await
            .status,
        204
    );
    let restored = app
        .admin(
            Method::POST,
            &format!("{item}/restore"),
            Some(&session),
            None,
        )
        .await;
    assert_eq!(restored.status, 200);
    let jobs = app
        .admin(Method::GET, "/jobs?per_page=100", Some(&session), None)
        .await
        .json();
    let mut events: Vec<String> = jobs["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["payload"]["event"].as_str().unwrap().to_owned())
        .collect();
    events.sort();
    assert_eq!(events, ["item.created", "item.deleted", "item.restored"]);
    let body: Value =
        serde_json::from_str(jobs["data"][0]["payload"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        body["surrogate_keys"],
        json!([
            format!("item:articles:{id}"),
            "items:articles",
            "collection:articles"
        ])
    );
}
