//! Hostile requests (issue 10, "Bad input"): each is answered quickly with a 4xx and the
//! contract's envelope (`{"message": …}` or `{"message": …, "errors": {…}}`), never a 5xx, a hang
//! or a panic. Slow clients (slow-loris) need a real socket: they are in
//! `apps/server/tests/hostile.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::header::{CONTENT_LENGTH, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::test;
use serde_json::{Value, json};
use vellum_http::{AppState, HttpConfig, app};
use vellum_storage::blob::ObjectBlobStore;
use vellum_storage::testing::TestDb;

use crate::files::{assert_invalid, file_path, id_of, project};
use crate::support::{Part, Response, TestApp, blog, multipart};

const ITEMS: &str = "/api/v1/collections/articles/items";

/// What "quickly" means for one hostile request in a debug build.
const QUICK: Duration = Duration::from_secs(3);

/// Asserts a 4xx whose body is exactly the contract's envelope: a non-empty `message` and, when
/// present, `errors` mapping names to non-empty lists of messages (and nothing else).
fn assert_envelope(res: &Response, what: &str) -> Value {
    assert!(
        res.status.is_client_error(),
        "{what}: status {} body {:?}",
        res.status,
        String::from_utf8_lossy(&res.body)
    );
    let content_type = res.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{what}: content-type {content_type:?}"
    );
    let body = res.json();
    let obj = body.as_object().unwrap_or_else(|| panic!("{what}: {body}"));
    assert!(
        obj["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
    for (key, value) in obj {
        match key.as_str() {
            "message" => {}
            "errors" => {
                let errors = value
                    .as_object()
                    .unwrap_or_else(|| panic!("{what}: {body}"));
                assert!(!errors.is_empty(), "{what}: {body}");
                for messages in errors.values() {
                    let messages = messages
                        .as_array()
                        .unwrap_or_else(|| panic!("{what}: {body}"));
                    assert!(
                        !messages.is_empty() && messages.iter().all(Value::is_string),
                        "{what}: {body}"
                    );
                }
            }
            other => panic!("{what}: unexpected key {other} in {body}"),
        }
    }
    body
}

/// Asserts 422 with `errors` naming `param` (maybe among others).
fn assert_names(res: &Response, param: &str, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    let body = assert_envelope(res, what);
    assert_eq!(body["message"], "The given data was invalid.", "{what}");
    assert!(body["errors"].get(param).is_some(), "{what}: {body}");
}

fn assert_quick(started: Instant, what: &str) {
    let elapsed = started.elapsed();
    assert!(elapsed < QUICK, "{what} took {elapsed:?}");
}

/// Sends `req` with its `Content-Length` removed (`None`: the body arrives as if chunked) or
/// replaced (a lying length), which `TestRequest` cannot express.
async fn send_with_length(
    state: &AppState,
    req: test::TestRequest,
    length: Option<&'static str>,
) -> Response {
    let mut req = req.to_request();
    match length {
        None => {
            req.headers_mut().remove(CONTENT_LENGTH);
        }
        Some(length) => {
            req.headers_mut()
                .insert(CONTENT_LENGTH, HeaderValue::from_static(length));
        }
    }
    let service = test::init_service(app(state.clone())).await;
    let res = test::call_service(&service, req).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = test::read_body(res).await.to_vec();
    Response {
        status,
        headers,
        body,
    }
}

fn editor_post(app: &TestApp, path: &str) -> test::TestRequest {
    app.authed(TestApp::request(Method::POST, path), Some("editor-key"))
        .insert_header(("content-type", "application/json"))
}

// ---------------------------------------------------------------------------------------------
// 1. Deeply nested JSON
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn deeply_nested_json_is_a_quick_422() {
    let app = TestApp::new(blog()).await;
    let bodies = [
        ("100k [", "[".repeat(100_000)),
        ("100k {\"a\":", "{\"a\":".repeat(100_000)),
        (
            "nested inside data",
            format!("{{\"data\":{{\"title\":{}1", "[".repeat(100_000)),
        ),
        (
            "balanced, 10k deep",
            format!(
                "{{\"data\":{{\"title\":{}1{}}}}}",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
        ),
    ];
    for (what, body) in bodies {
        let started = Instant::now();
        let res = app.send(editor_post(&app, ITEMS).set_payload(body)).await;
        assert_quick(started, what);
        assert_names(&res, "data", what);
    }
    // PATCH on an item and on a file go through the same reader.
    let started = Instant::now();
    let req = app
        .authed(
            TestApp::request(Method::PATCH, &format!("{ITEMS}/1")),
            Some("editor-key"),
        )
        .insert_header(("content-type", "application/json"))
        .set_payload("[".repeat(100_000));
    let res = app.send(req).await;
    assert_quick(started, "PATCH item");
    assert_names(&res, "data", "PATCH item");
    // Nothing was written.
    let list = app.get_as("editor-key", ITEMS).await;
    assert_eq!(list.json()["meta"]["total"], 2);
}

// ---------------------------------------------------------------------------------------------
// 2. Huge JSON bodies
// ---------------------------------------------------------------------------------------------

fn ten_megabytes_of_json() -> String {
    format!(
        "{{\"data\":{{\"title\":\"{}\"}}}}",
        "a".repeat(10 * 1024 * 1024)
    )
}

fn assert_too_large(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(
        res.json(),
        json!({"message": "The request body is too large."}),
        "{what}"
    );
}

#[actix_web::test]
async fn a_ten_megabyte_json_body_is_413_with_or_without_content_length() {
    let app = TestApp::new(blog()).await;
    let body = ten_megabytes_of_json();

    let started = Instant::now();
    let res = app
        .send(editor_post(&app, ITEMS).set_payload(body.clone()))
        .await;
    assert_quick(started, "with Content-Length");
    assert_too_large(&res, "with Content-Length");

    // Chunked: no Content-Length, so the limit is enforced as the bytes arrive.
    let started = Instant::now();
    let res = send_with_length(
        &app.state,
        editor_post(&app, ITEMS).set_payload(body.clone()),
        None,
    )
    .await;
    assert_quick(started, "chunked");
    assert_too_large(&res, "chunked");

    // A lying Content-Length (small) does not let a large body through either.
    let res = send_with_length(
        &app.state,
        editor_post(&app, ITEMS).set_payload(body.clone()),
        Some("10"),
    )
    .await;
    assert!(
        res.status == StatusCode::PAYLOAD_TOO_LARGE
            || res.status == StatusCode::UNPROCESSABLE_ENTITY,
        "lying Content-Length: {}",
        res.status
    );
    assert_envelope(&res, "lying Content-Length");

    // PATCH of a file's metadata shares the limit.
    let req = app
        .authed(
            TestApp::request(Method::PATCH, &file_path(1)),
            Some("admin-key"),
        )
        .insert_header(("content-type", "application/json"))
        .set_payload(body);
    assert_too_large(&app.send(req).await, "PATCH file");

    let list = app.get_as("editor-key", ITEMS).await;
    assert_eq!(list.json()["meta"]["total"], 2, "nothing was written");
}

#[actix_web::test]
async fn the_json_limit_is_configurable() {
    let config = HttpConfig {
        json_limit: 1024,
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(blog(), config).await;
    let small = json!({"data": {"title": "ok", "status": "draft"}}).to_string();
    let res = app.send(editor_post(&app, ITEMS).set_payload(small)).await;
    assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.json());
    let big = format!("{{\"data\":{{\"title\":\"{}\"}}}}", "a".repeat(2000));
    let res = app
        .send(editor_post(&app, ITEMS).set_payload(big.clone()))
        .await;
    assert_too_large(&res, "over a 1 KiB limit");
    let res = send_with_length(&app.state, editor_post(&app, ITEMS).set_payload(big), None).await;
    assert_too_large(&res, "chunked, 1 KiB");
}

// ---------------------------------------------------------------------------------------------
// 6. Slow bodies (slow headers need a socket: apps/server/tests/hostile.rs)
// ---------------------------------------------------------------------------------------------

/// Sends `req` with its body replaced by `first`, then one byte every `every` (forever), or
/// nothing more at all when `every` is `None`.
async fn send_slow_body(
    state: &AppState,
    req: test::TestRequest,
    first: &'static [u8],
    every: Option<Duration>,
) -> Response {
    let head = futures_util::stream::once(async move { Ok(bytes::Bytes::from_static(first)) });
    let rest = futures_util::stream::unfold((), move |()| async move {
        match every {
            Some(every) => {
                tokio::time::sleep(every).await;
                Some((Ok(bytes::Bytes::from_static(b" ")), ()))
            }
            None => std::future::pending().await,
        }
    });
    let stream = futures_util::StreamExt::chain(head, rest);
    let payload: actix_web::dev::Payload = actix_web::dev::Payload::Stream {
        payload: Box::pin(stream),
    };
    let (req, _) = req.to_request().replace_payload(payload);
    let service = test::init_service(app(state.clone())).await;
    // An error out of a middleware is answered by the server as its `error_response`.
    let res = match test::try_call_service(&service, req).await {
        Ok(res) => res.into_parts().1.map_into_boxed_body(),
        Err(err) => err.error_response(),
    };
    let status = res.status();
    let headers = res.headers().clone();
    let body = actix_web::body::to_bytes(res.into_body())
        .await
        .unwrap()
        .to_vec();
    Response {
        status,
        headers,
        body,
    }
}

fn assert_body_timed_out(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::REQUEST_TIMEOUT,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(
        res.json(),
        json!({"message": "The request body was not received in time."}),
        "{what}"
    );
}

#[actix_web::test]
async fn stalled_and_trickled_bodies_are_408() {
    let config = HttpConfig {
        body_read_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_secs(1),
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(blog(), config).await;
    let post = || editor_post(&app, ITEMS).insert_header((CONTENT_LENGTH, "1000"));

    // Nothing after the first bytes: the read timeout ends it.
    let started = Instant::now();
    let res = send_slow_body(&app.state, post(), b"{\"data\":", None).await;
    assert_body_timed_out(&res, "stalled JSON body");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    // A byte every 100 ms never trips the read timeout; the request timeout ends it, with 408
    // (the client is slow), not 503 (a dependency hangs).
    let started = Instant::now();
    let res = send_slow_body(
        &app.state,
        post(),
        b"{\"data\":",
        Some(Duration::from_millis(100)),
    )
    .await;
    assert_body_timed_out(&res, "trickled JSON body");
    assert!(started.elapsed() < QUICK, "{:?}", started.elapsed());

    // Uploads have no total time limit, but a stalled one is cut by the read timeout.
    let req = app
        .authed(
            TestApp::request(Method::POST, "/api/v1/files"),
            Some("admin-key"),
        )
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={}", crate::support::BOUNDARY),
        ))
        .insert_header((CONTENT_LENGTH, "100000"));
    let first: &'static [u8] = b"--vellum-test-boundary-7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.bin\"\r\n\r\nfirst bytes";
    let res = send_slow_body(&app.state, req, first, None).await;
    assert_body_timed_out(&res, "stalled upload");
    let files = app.get_as("admin-key", "/api/v1/files").await;
    assert_eq!(files.json()["meta"]["total"], 0, "nothing was recorded");

    // Requests without a body are not affected.
    assert_eq!(app.get(ITEMS).await.status, StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// 3. Thousands of filter keys, very long query strings
// ---------------------------------------------------------------------------------------------

/// The longest URI the `http` crate (and so actix) accepts is 65,534 bytes: longer request lines
/// never reach the app (the spawned-server test checks what the server answers then).
const MAX_URI: usize = 65_534;

#[actix_web::test]
async fn thousands_of_filter_keys_are_a_quick_422_naming_filter() {
    let app = TestApp::new(blog()).await;
    let distinct: String = (0..3000)
        .map(|i| format!("filter[f{i}][_eq]=x"))
        .collect::<Vec<_>>()
        .join("&");
    let short: String = (0..4000)
        .map(|i| format!("filter[f{i}]="))
        .collect::<Vec<_>>()
        .join("&");
    let same_field: String = (0..2500)
        .map(|i| format!("filter[title][_eq]=x{i}"))
        .collect::<Vec<_>>()
        .join("&");
    for (what, query) in [
        ("3000 distinct", distinct),
        ("4000 distinct, short", short),
        ("2500 on title", same_field),
    ] {
        assert!(ITEMS.len() + 1 + query.len() <= MAX_URI, "{what}");
        let started = Instant::now();
        let res = app.get(&format!("{ITEMS}?{query}")).await;
        assert_quick(started, what);
        assert_names(&res, "filter", what);
    }
    // 33 conditions, one over the documented cap of 32.
    let over: String = (0..33)
        .map(|i| format!("filter[views][_neq]={i}"))
        .collect::<Vec<_>>()
        .join("&");
    assert_names(&app.get(&format!("{ITEMS}?{over}")).await, "filter", "33");
    let at: String = (0..32)
        .map(|i| format!("filter[views][_neq]={i}"))
        .collect::<Vec<_>>()
        .join("&");
    assert_eq!(
        app.get(&format!("{ITEMS}?{at}")).await.status,
        StatusCode::OK,
        "32 conditions are allowed"
    );
}

#[actix_web::test]
async fn very_long_query_strings_are_answered_quickly() {
    let app = TestApp::new(blog()).await;
    // As long as a URI can be.
    let room = MAX_URI - ITEMS.len() - 1;
    let value = |prefix: &str| format!("{prefix}{}", "x".repeat(room - prefix.len()));
    let cases = [
        // Filter operands are capped at 1,024 characters (issue 28, R3).
        (
            "64 KiB filter value",
            value("filter[title][_eq]="),
            Some("filter[title][_eq]"),
        ),
        ("64 KiB sort", value("sort="), Some("sort")),
        (
            "64 KiB field name",
            value("filter[").replacen('x', "", 1) + "]",
            Some("filter"),
        ),
        (
            "64 KiB _in list",
            format!("filter[title][_in]={}", "a,".repeat((room - 20) / 2)),
            None,
        ),
        ("64 KiB locale", value("locale="), Some("locale")),
        ("64 KiB include", value("include="), None),
        ("64 KiB unknown parameter", value("zzz="), None),
        (
            "7000 parameters",
            (0..7_000)
                .map(|i| format!("p{i}=1"))
                .collect::<Vec<_>>()
                .join("&"),
            None,
        ),
    ];
    for (what, query, param) in cases {
        assert!(ITEMS.len() + 1 + query.len() <= MAX_URI, "{what}");
        let started = Instant::now();
        let res = app.get(&format!("{ITEMS}?{query}")).await;
        assert_quick(started, what);
        match param {
            Some(param) => {
                assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{what}");
                let body = assert_envelope(&res, what);
                assert!(
                    body["errors"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .any(|k| k.starts_with(param)),
                    "{what}: {body}"
                );
            }
            None => assert!(
                res.status == StatusCode::OK || res.status == StatusCode::UNPROCESSABLE_ENTITY,
                "{what}: {} {:?}",
                res.status,
                String::from_utf8_lossy(&res.body)
            ),
        }
        if res.status != StatusCode::OK {
            assert_envelope(&res, what);
        }
    }
}

/// Every operator's operand is capped at 1,024 characters (not bytes); each `_in` value counts
/// alone. Over it, 422 naming the parameter, whatever the operator (issue 28, R3: 65 KB filters
/// grew the list-totals memo to 600 MiB).
#[actix_web::test]
async fn an_over_long_filter_operand_is_a_422_naming_the_parameter() {
    use vellum_policy::MAX_OPERAND_CHARS;
    let app = TestApp::new(blog()).await;
    let over = "x".repeat(MAX_OPERAND_CHARS + 1);
    // `é`, percent-encoded: 1,024 characters in 2,048 bytes.
    let at = "%C3%A9".repeat(MAX_OPERAND_CHARS);
    for param in [
        "filter[title]",
        "filter[title][_contains]",
        "filter[title][_eq]",
        "filter[title][_neq]",
        "filter[views][_gt]",
        "filter[views][_gte]",
        "filter[created_at][_lt]",
        "filter[id][_lte]",
        "filter[status][_in]",
    ] {
        let res = app.get(&format!("{ITEMS}?{param}={over}")).await;
        assert_names(&res, param, param);
        let expected = if param.ends_with("[_in]") {
            "must not list a value longer than 1024 characters"
        } else {
            "must not be longer than 1024 characters"
        };
        assert_eq!(res.json()["errors"][param], json!([expected]), "{param}");
        // At the cap (in characters: 2,048 bytes here) the filter is answered. Operands on
        // numbers and instants must be numbers and instants (issue 18): written long.
        let at = match param {
            "filter[views][_gt]" | "filter[views][_gte]" | "filter[id][_lte]" => {
                format!("{}1", "0".repeat(MAX_OPERAND_CHARS - 1))
            }
            "filter[created_at][_lt]" => {
                let head = "2999-01-01T00:00:00.";
                format!("{head}{}Z", "0".repeat(MAX_OPERAND_CHARS - head.len() - 1))
            }
            _ => at.clone(),
        };
        let res = app.get(&format!("{ITEMS}?{param}={at}")).await;
        assert_eq!(
            res.status,
            StatusCode::OK,
            "{param} at the cap: {:?}",
            res.json()
        );
    }
    let res = app
        .get(&format!(
            "{ITEMS}?filter[status][_in]=draft,{over},published"
        ))
        .await;
    assert_names(&res, "filter[status][_in]", "_in value");
    assert_eq!(
        res.json()["errors"]["filter[status][_in]"],
        json!(["must not list a value longer than 1024 characters"])
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Absurd page and per_page
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn absurd_page_and_per_page_are_422_naming_the_parameter() {
    let app = TestApp::new(blog()).await;
    let cases = [
        ("per_page=1e99", "per_page"),
        ("per_page=-1", "per_page"),
        ("per_page=0", "per_page"),
        // docs/api.md: per_page is 1 to 100; above is refused, not clamped.
        ("per_page=101", "per_page"),
        ("per_page=18446744073709551616", "per_page"),
        ("per_page=1.5", "per_page"),
        ("per_page=NaN", "per_page"),
        ("per_page=%00", "per_page"),
        ("per_page=", "per_page"),
        ("page=99999999999999999999", "page"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=1e3", "page"),
        ("page=%FF", "page"),
    ];
    for path in [ITEMS, "/api/v1/files"] {
        for (query, param) in cases {
            let what = format!("{path}?{query}");
            let res = app.get_as("admin-key", &what).await;
            assert_names(&res, param, &what);
        }
    }
    // The largest page that parses is an empty page, not an overflow.
    for query in [
        "page=18446744073709551615&per_page=100",
        "page=9223372036854775807",
    ] {
        let res = app.get(&format!("{ITEMS}?{query}")).await;
        assert_eq!(res.status, StatusCode::OK, "{query}: {:?}", res.json());
        assert_eq!(res.json()["data"], json!([]), "{query}");
    }
    let res = app
        .get_as("admin-key", "/api/v1/files?page=18446744073709551615")
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
}

// ---------------------------------------------------------------------------------------------
// 5. Invalid UTF-8 in paths and queries
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn invalid_utf8_in_paths_is_a_404_envelope() {
    let app = TestApp::new(blog()).await;
    let paths = [
        "/api/v1/collections/%FF%FE/items",
        "/api/v1/collections/%FF%FE",
        "/api/v1/collections/%C3%28/items/1",
        "/api/v1/collections/articles/items/%FF",
        "/api/v1/files/%FF",
        "/api/v1/files/%FF/content",
        "/api/v1/files/1/transforms/%FF%FE",
        "/api/v1/%FF",
        "/%FF",
        "/api/v1/collections/%00/items",
        "/api/v1/collections/..%2F..%2Fetc/items",
    ];
    for path in paths {
        let res = app.get_as("admin-key", path).await;
        assert_eq!(
            res.status,
            StatusCode::NOT_FOUND,
            "{path}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        assert_eq!(res.json(), json!({"message": "Not found."}), "{path}");
    }
    // Writes too.
    let req = editor_post(&app, "/api/v1/collections/%FF%FE/items")
        .set_payload(json!({"data": {"title": "x"}}).to_string());
    let res = app.send(req).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json(), json!({"message": "Not found."}));
}

#[actix_web::test]
async fn invalid_utf8_in_queries_is_answered_cleanly() {
    let app = TestApp::new(blog()).await;
    // A filter value that is not UTF-8 decodes lossily: it matches nothing.
    let res = app
        .get(&format!("{ITEMS}?filter%5Btitle%5D%5B_eq%5D=%FF"))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    assert_eq!(res.json()["data"], json!([]));
    let cases = [
        ("sort=%C3%28", "sort"),
        ("sort=-%FF", "sort"),
        ("filter%5B%FF%5D=x", "filter[\u{FFFD}]"),
        ("filter%5Btitle%5D%5B%FF%5D=x", "filter[title][\u{FFFD}]"),
        ("locale=%FF%FE", "locale"),
        ("include_all_translations=%FF", "include_all_translations"),
        ("page=%C3%28", "page"),
    ];
    for (query, param) in cases {
        let what = format!("{ITEMS}?{query}");
        let res = app.get(&what).await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{what}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        let body = assert_envelope(&res, &what);
        let errors = body["errors"].as_object().unwrap();
        assert!(
            errors.contains_key(param) || errors.keys().any(|k| k.starts_with("filter")),
            "{what}: {body}"
        );
    }
    // Unknown parameters and `include` tokens that are not UTF-8 are ignored.
    for query in ["%FF=%FE", "include=%FF%FE", "search=%FF"] {
        let res = app.get(&format!("{ITEMS}?{query}")).await;
        assert_eq!(res.status, StatusCode::OK, "{query}");
    }
    let res = app.get("/api/v1/files?search=%FF%FE").await;
    assert_eq!(res.status, StatusCode::OK);
    let res = app.get("/api/v1/files?parent_id=%FF").await;
    assert_names(&res, "parent_id", "files parent_id");
}

// ---------------------------------------------------------------------------------------------
// 7. Path traversal in uploaded file names
// ---------------------------------------------------------------------------------------------

/// Every file under `dir`, recursively.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// An app over the files project whose blobs live in `<root>/a/b/store` on disk.
async fn app_on_disk(
    root: &Path,
) -> (TestDb, AppState, std::collections::BTreeMap<String, String>) {
    let db = TestDb::new().await.unwrap();
    vellum_storage::seed::seed_system(&db.conn).await.unwrap();
    let report = vellum_manifest::apply(&db.conn, &project()).await.unwrap();
    let store = root.join("a").join("b").join("store");
    std::fs::create_dir_all(&store).unwrap();
    let blobs = Arc::new(ObjectBlobStore::local(&store).unwrap());
    let config = HttpConfig {
        base_url: crate::support::BASE_URL.to_owned(),
        ..HttpConfig::default()
    };
    let state = AppState::with_blobs(db.conn.clone(), config, blobs)
        .await
        .unwrap();
    (db, state, report.api_keys)
}

async fn upload_raw(state: &AppState, secret: &str, parts: &[Part]) -> Response {
    let req = TestApp::request(Method::POST, "/api/v1/files")
        .insert_header(("authorization", format!("Bearer {secret}")))
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={}", crate::support::BOUNDARY),
        ))
        .set_payload(multipart(parts));
    crate::support::send_to(state, req).await
}

#[actix_web::test]
async fn traversal_in_upload_names_never_escapes_the_blob_store() {
    let root = tempfile::tempdir().unwrap();
    let (_db, state, keys) = app_on_disk(root.path()).await;
    let secret = keys["admin-key"].clone();
    let store = root.path().join("a").join("b").join("store");
    // (part file name, `name` part, expected stored filename)
    let cases: [(&str, Option<&str>, &str); 10] = [
        ("../../etc/passwd", None, "passwd"),
        // On the wire a quoted file name escapes `\` as `\\`; a lone `\` escapes the next
        // character (`..\..\x` is `....x`, harmless).
        ("..\\\\..\\\\x", None, "x"),
        ("..\\..\\x", None, "....x"),
        ("/etc/passwd", None, "passwd"),
        ("C:\\\\Windows\\\\win.ini", None, "win.ini"),
        ("ok.txt", Some("../../../../tmp/owned"), "owned"),
        ("ok.txt", Some("..\\..\\owned.bat"), "owned.bat"),
        ("ok.txt", Some("nul\u{0}byte.txt"), "nulbyte.txt"),
        ("..%2F..%2Fetc%2Fpasswd", None, "..%2F..%2Fetc%2Fpasswd"),
        ("ok.txt", Some("ctl\u{1}\u{7f}\n.txt"), "ctl.txt"),
    ];
    for (i, (part_name, name, expected)) in cases.into_iter().enumerate() {
        let bytes = format!("file number {i}").into_bytes();
        let mut parts = vec![Part::file(part_name, "application/octet-stream", &bytes)];
        if let Some(name) = name {
            parts.push(Part::text("name", name));
        }
        let what = format!("{part_name:?} / {name:?}");
        let res = upload_raw(&state, &secret, &parts).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{what}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        let file = res.json()["data"].clone();
        assert_eq!(file["filename"], expected, "{what}");
        // Served under its id, with its bytes; no name in Content-Disposition unless set.
        let content = crate::support::send_to(
            &state,
            TestApp::request(Method::GET, &format!("{}/content", file_path(id_of(&file)))),
        )
        .await;
        assert_eq!(content.status, StatusCode::OK, "{what}");
        assert_eq!(content.body, bytes, "{what}");
    }
    // Control characters in a part's header make the form invalid (httparse refuses them).
    for part_name in ["nul\u{0}byte.txt", "a\u{1}b.txt", "a\rb.txt"] {
        let parts = [Part::file(
            part_name,
            "application/octet-stream",
            b"refused bytes",
        )];
        let res = upload_raw(&state, &secret, &parts).await;
        assert_invalid(&res, &["file"], &format!("{part_name:?}"));
    }
    // Names that are nothing but directories, or that are too long, are refused.
    let refused: [(&str, Option<&str>, &str); 5] = [
        ("../", None, "name"),
        ("..", None, "name"),
        ("ok.txt", Some("../../"), "name"),
        (&"n".repeat(10_000), None, "name"),
        ("ok.txt", Some(&"../".repeat(5_000)), "name"),
    ];
    for (part_name, name, field) in refused {
        let mut parts = vec![Part::file(
            part_name,
            "application/octet-stream",
            b"refused bytes",
        )];
        if let Some(name) = name {
            parts.push(Part::text("name", name));
        }
        let what = format!("{part_name:.40?} / {name:.40?}");
        let res = upload_raw(&state, &secret, &parts).await;
        assert_invalid(&res, &[field], &what);
    }
    // Only content-addressed blobs, all inside the store; the refused upload's blob is gone.
    let files = tree(root.path());
    assert_eq!(files.len(), 10, "{files:#?}");
    for path in &files {
        let relative = path
            .strip_prefix(&store)
            .unwrap_or_else(|_| panic!("{} is outside the blob store", path.display()));
        let relative = relative.to_string_lossy().replace('\\', "/");
        assert!(relative.starts_with("sha256/"), "{relative}");
        assert!(!relative.contains(".."), "{relative}");
    }
}

#[actix_web::test]
async fn download_names_are_plain_and_sanitized_in_content_disposition() {
    let root = tempfile::tempdir().unwrap();
    let (_db, state, keys) = app_on_disk(root.path()).await;
    let secret = keys["admin-key"].clone();
    let res = upload_raw(
        &state,
        &secret,
        &[Part::file(
            "doc.bin",
            "application/octet-stream",
            b"some bytes",
        )],
    )
    .await;
    let id = id_of(&res.json()["data"]);
    let patch = |name: Value| {
        TestApp::request(Method::PATCH, &file_path(id))
            .insert_header(("authorization", format!("Bearer {secret}")))
            .set_json(json!({"download_name": name}))
    };
    for bad in [
        "../../etc/passwd",
        "..\\x.bat",
        "/abs.txt",
        "a\u{0}b",
        "a\r\nSet-Cookie: x=1",
    ] {
        let res = crate::support::send_to(&state, patch(json!(bad))).await;
        assert_invalid(&res, &["download_name"], bad);
    }
    let res = crate::support::send_to(&state, patch(json!("we\"ird; ü.txt"))).await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let content = crate::support::send_to(
        &state,
        TestApp::request(Method::GET, &format!("{}/content", file_path(id))),
    )
    .await;
    assert_eq!(
        content.header("content-disposition"),
        Some("attachment; filename=\"we_ird; _.txt\"; filename*=UTF-8''we%22ird%3B%20%C3%BC.txt")
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Markup uploads: see files_content.rs (`html_and_svg_uploads_are_never_served_inline`) for
// the content headers; transforms of them are never rendered.
// ---------------------------------------------------------------------------------------------

#[actix_web::test]
async fn markup_uploads_are_never_transformed() {
    let app = TestApp::new(project()).await;
    let cases: [(&str, &str, &[u8]); 4] = [
        ("image.png", "image/png", b"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>"),
        ("photo.jpg", "text/html", b"<html><body><script>alert(1)</script></body></html>"),
        ("icon.svg", "image/svg+xml", b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(2)</script></svg>"),
        ("x.gif", "image/gif", b"GIF89a<script>alert(3)</script>"),
    ];
    for (filename, client_type, bytes) in cases {
        let res = app
            .upload(
                Some("admin-key"),
                &[Part::file(filename, client_type, bytes)],
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{filename}");
        let file = res.json()["data"].clone();
        // A GIF header followed by markup is a (broken) GIF: it may list transforms, which
        // then fail to decode; the others are not images at all.
        if !filename.ends_with(".gif") {
            assert_eq!(file["transforms"], json!({}), "{filename}: {file}");
        }
        for key in ["thumbnail", "small", "size-64"] {
            let path = format!("{}/transforms/{key}", file_path(id_of(&file)));
            let res = app.get(&path).await;
            assert!(
                res.status == StatusCode::NOT_FOUND
                    || res.status == StatusCode::UNPROCESSABLE_ENTITY,
                "{filename} {key}: {}",
                res.status
            );
            assert_envelope(&res, &path);
        }
    }
}

/// NUL characters: PostgreSQL's text and jsonb cannot hold them, so a NUL anywhere a value
/// reaches SQL must be answered before it gets there (4xx, or simply no match), never a 5xx.
#[actix_web::test]
async fn nul_characters_never_reach_the_database() {
    let app = TestApp::new(blog()).await;
    for path in [
        "/api/v1/collections/articles/items?filter[title][_eq]=%00",
        "/api/v1/collections/articles/items?filter[title][_in]=a,%00",
        "/api/v1/collections/articles/items?filter[title]=x%00y",
        "/api/v1/collections/articles/items?filter[status][_neq]=%00",
        "/api/v1/collections/articles/items?locale=%00",
        "/api/v1/collections/articles/items?sort=%00",
        "/api/v1/files?search=%00",
        "/api/v1/collections/articles/items/1?locale=%00",
    ] {
        let res = app.get_as("admin-key", path).await;
        assert!(
            res.status == StatusCode::OK || res.status.is_client_error(),
            "{path}: {} {}",
            res.status,
            String::from_utf8_lossy(&res.body)
        );
        if path.contains("filter") || path.contains("search") {
            assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{path}");
        }
    }
    for body in [
        json!({"data": {"title": "a\u{0}b", "status": "draft"}}),
        json!({"data": {"title": {"en": "ok", "de": "\u{0}"}, "status": "draft"}}),
        json!({"data": {"title": "ok", "status": "draft", "body": "x\u{0}"}}),
        json!({"data": {"title": "ok", "status": "draft", "\u{0}": 1}}),
    ] {
        let res = app
            .json(
                Method::POST,
                Some("admin-key"),
                "/api/v1/collections/articles/items",
                body.clone(),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            String::from_utf8_lossy(&res.body)
        );
        assert!(res.json()["errors"]["data"].is_array(), "{body}");
    }
    let patch = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            "/api/v1/collections/articles/items/1",
            json!({"data": {"title": "\u{0}"}}),
        )
        .await;
    assert_eq!(patch.status, StatusCode::UNPROCESSABLE_ENTITY);
    let file = app.upload_file(Some("admin-key"), "a.txt", b"a").await;
    let id = file["id"].as_i64().unwrap();
    let patch = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &format!("/api/v1/files/{id}"),
            json!({"title": "x\u{0}"}),
        )
        .await;
    assert_eq!(patch.status, StatusCode::UNPROCESSABLE_ENTITY);
}
