//! Prometheus metrics (issue 24): requests to the public app are counted under their route
//! pattern and status, cache lookups, the pool and the sockets are reported, and `/metrics` is
//! served only by the metrics listener's own app, never by the public one.

use actix_web::http::StatusCode;
use actix_web::test;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use vellum_http::HttpConfig;

use crate::socket::Live;
use crate::support::{TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// A test app whose requests are counted, as `vellum-server` with `VELLUM_METRICS_ADDR`.
async fn counted() -> TestApp {
    let config = HttpConfig {
        metrics: true,
        ..HttpConfig::default()
    };
    TestApp::with_config(blog(), config).await
}

/// `GET /metrics` of the metrics listener's app over `app`'s state: its status, content type
/// and body.
async fn scrape(app: &TestApp) -> (StatusCode, String, String) {
    let service = test::init_service(vellum_http::metrics::app(app.state.clone())).await;
    let res = test::call_service(
        &service,
        test::TestRequest::get().uri("/metrics").to_request(),
    )
    .await;
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    (status, content_type, body)
}

/// The value of the sample written exactly as `series` (name and labels).
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.parse().ok())
}

#[actix_web::test]
async fn a_public_request_is_counted_under_its_route_pattern_and_status() {
    let app = counted().await;
    assert_eq!(app.get(ARTICLES).await.status, StatusCode::OK);
    assert_eq!(app.get(ARTICLES).await.status, StatusCode::OK);
    let missing = app.get("/api/v1/collections/nope/items").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get("/no/such/page/12345").await.status,
        StatusCode::NOT_FOUND
    );

    let (status, content_type, body) = scrape(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    let items = r#"method="GET",route="/api/v1/collections/{slug}/items""#;
    assert_eq!(
        sample(
            &body,
            &format!("vellum_http_requests_total{{{items},status=\"200\"}}")
        ),
        Some(2.0),
        "{body}"
    );
    assert_eq!(
        sample(
            &body,
            &format!("vellum_http_requests_total{{{items},status=\"404\"}}")
        ),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(
            &body,
            &format!("vellum_http_request_duration_seconds_count{{{items}}}")
        ),
        Some(3.0),
        "{body}"
    );
    assert_eq!(
        sample(
            &body,
            r#"vellum_http_requests_total{method="GET",route="unmatched",status="404"}"#
        ),
        Some(1.0),
        "{body}"
    );
    // Paths never become labels: an item id or a slug would be a series each.
    assert!(!body.contains("/articles/"), "{body}");
    assert!(!body.contains("/no/such/page"), "{body}");
    // The second read was the cache's and the first a miss; the unknown collection has no
    // content to stamp, so it skips the cache (answered 404 uncached), and the page outside the
    // API has no cache.
    assert_eq!(
        sample(&body, "vellum_response_cache_hits_total"),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(&body, "vellum_response_cache_misses_total"),
        Some(1.0),
        "{body}"
    );
    // The pool is read at scrape time, on SQLite and PostgreSQL alike.
    let max = sample(&body, "vellum_db_pool_max_connections").unwrap();
    assert!(max >= 1.0, "{body}");
    let idle = sample(&body, r#"vellum_db_pool_connections{state="idle"}"#).unwrap();
    assert!(idle >= 1.0 && idle <= max, "{body}");
    assert_eq!(sample(&body, "vellum_realtime_sockets"), Some(0.0));
}

/// The job queue's depth is counted in the database at scrape time, by status.
#[actix_web::test]
async fn the_job_queue_depth_is_reported_by_status() {
    let app = counted().await;
    let (_, _, body) = scrape(&app).await;
    assert_eq!(
        sample(&body, r#"vellum_jobs{status="queued"}"#),
        Some(0.0),
        "{body}"
    );
    // A queue no worker serves: the jobs stay queued while the test looks.
    let payload = serde_json::json!({});
    let job = vellum_storage::jobs::NewJob {
        queue: "metrics-test",
        payload: &payload,
        max_attempts: 1,
    };
    vellum_storage::jobs::enqueue_all(app.state.db(), &[job.clone(), job])
        .await
        .unwrap();
    let (_, _, body) = scrape(&app).await;
    assert_eq!(
        sample(&body, r#"vellum_jobs{status="queued"}"#),
        Some(2.0),
        "{body}"
    );
    assert_eq!(
        sample(&body, r#"vellum_jobs{status="dead"}"#),
        Some(0.0),
        "{body}"
    );
}

#[actix_web::test]
async fn metrics_are_not_served_by_the_public_app() {
    let app = counted().await;
    let res = app.get("/metrics").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json(), serde_json::json!({"message": "Not found."}));
    // And the metrics app serves nothing else.
    let service = test::init_service(vellum_http::metrics::app(app.state.clone())).await;
    for uri in [ARTICLES, "/health/ready", "/metrics/"] {
        let res =
            test::call_service(&service, test::TestRequest::get().uri(uri).to_request()).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{uri}");
    }
    let res = test::call_service(
        &service,
        test::TestRequest::post().uri("/metrics").to_request(),
    )
    .await;
    assert_ne!(res.status(), StatusCode::OK);
}

#[actix_web::test]
async fn without_metrics_configured_requests_are_not_counted() {
    let app = TestApp::new(blog()).await;
    assert_eq!(app.get(ARTICLES).await.status, StatusCode::OK);
    let (status, _, body) = scrape(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("vellum_db_pool_max_connections "), "{body}");
    assert!(!body.contains("vellum_http_requests_total{"), "{body}");
}

/// The real thing: the public server and the metrics listener on two ports. A request to the
/// public port shows up on the metrics port; the public port answers `/metrics` 404.
#[actix_web::test]
async fn the_metrics_listener_is_a_second_port() {
    let app = counted().await;
    let public = Live::start(&app);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = listener.local_addr().unwrap();
    let server = vellum_http::metrics::serve(app.state.clone(), listener).unwrap();
    let handle = server.handle();
    actix_web::rt::spawn(server);

    let (head, _) = get(public.addr, "/api/v1/collections/authors/items/1").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, _) = get(public.addr, "/metrics").await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, body) = get(metrics_addr, "/metrics").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let show = r#"vellum_http_requests_total{method="GET",route="/api/v1/collections/{slug}/items/{id}",status="200"}"#;
    assert_eq!(sample(&body, show), Some(1.0), "{body}");
    assert_eq!(
        sample(
            &body,
            r#"vellum_http_requests_total{method="GET",route="unmatched",status="404"}"#
        ),
        Some(1.0),
        "{body}"
    );
    handle.stop(false).await;
}

/// One HTTP/1.1 GET on a fresh connection: the response's head and body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: metrics.test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut raw),
    )
    .await
    .unwrap()
    .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}
