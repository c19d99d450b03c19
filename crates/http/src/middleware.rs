//! Cross-cutting middleware: request ids and tracing spans, CORS for `/api/*`, and the public API
//! response cache. Each is a plain async function (`actix_web::middleware::from_fn`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use futures_util::StreamExt as _;
use tracing::Instrument as _;
use vellum_app::cache::{CachedResponse, Scope};
use vellum_app::{Actor, AppState, Snapshot};
use vellum_policy::{AllowOrigin, cors_allow_origin};
use vellum_storage::telemetry::{QueryStats, Tally, measure};

use crate::error::ApiError;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// How many database statements the request ran (issue 23).
pub const QUERY_COUNT: HeaderName = HeaderName::from_static("x-query-count");
/// Where the request's time went (db, render, total), for browsers' developer tools.
pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// A client-sent request id is kept when it is short and printable (so it can be correlated
/// across services); anything else is replaced by a fresh UUID.
fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// One span per request carrying its id, method and path (never the query: it may hold
/// filter values) and one log line when it ends; the id is returned as `x-request-id`.
pub async fn trace_request(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let id = request_id(&req);
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.path(),
    );
    let started = Instant::now();
    let tally = Arc::new(Tally::default());
    let result = measure(tally.clone(), next.call(req).instrument(span.clone())).await;
    let mut res = match result {
        Ok(res) => res.map_into_boxed_body(),
        Err(err) => {
            let _enter = span.enter();
            tracing::warn!(error = %err, "request failed");
            return Err(err);
        }
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, value);
    }
    let status = res.status().as_u16();
    let total = started.elapsed();
    let queries = tally.stats();
    timing_headers(res.headers_mut(), queries, total);
    let micros = u64::try_from(total.as_micros()).unwrap_or(u64::MAX);
    span.in_scope(|| {
        tracing::info!(
            status,
            micros,
            statements = queries.statements,
            "request finished"
        );
    });
    Ok(res)
}

/// `X-Query-Count` (statements the request ran) and `Server-Timing` with `db` (time waiting for
/// them), `render` (the rest: policy, rendering, serialization) and `total`, in milliseconds, up
/// to the response head: a streamed body's later work is not in it.
fn timing_headers(headers: &mut header::HeaderMap, queries: QueryStats, total: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let db = queries.elapsed.min(total);
    let timing = format!(
        "db;dur={:.2}, render;dur={:.2}, total;dur={:.2}",
        ms(db),
        ms(total.saturating_sub(db)),
        ms(total)
    );
    if let Ok(value) = HeaderValue::from_str(&timing) {
        headers.insert(SERVER_TIMING, value);
    }
    headers.insert(QUERY_COUNT, HeaderValue::from(queries.statements));
}

/// A request that failed on the database's storage (a full disk, an I/O error) tells the
/// readiness check, which then fails for a moment whatever its own one-page write does: that
/// write could still fit where an item's could not (security review R8).
pub async fn watch_storage(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let res = next.call(req).await?.map_into_boxed_body();
    if let Some(state) = state
        && let Some(ApiError::Unavailable(err)) = res
            .response()
            .error()
            .and_then(|e| e.as_error::<ApiError>())
        && err.is_storage_failure()
    {
        state.write_check().note_storage_failure();
    }
    Ok(res)
}

/// CORS for `/api/*` with the policy crate's decision: with a project allowlist only its
/// origins, otherwise the deployment's (default `*`). Preflights are answered here, before
/// authentication, as browsers send them without credentials.
pub async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let allow = match state.snapshot().await {
        Ok(snapshot) => cors_allow_origin(
            &snapshot.origins,
            &state.config().cors_origins,
            origin.as_deref(),
        ),
        Err(_) => None,
    };
    let preflight = req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        let mut res = HttpResponse::NoContent();
        if let Some(allow) = &allow {
            res.insert_header((
                header::ACCESS_CONTROL_ALLOW_METHODS,
                "GET, POST, PATCH, DELETE, OPTIONS",
            ));
            let headers = req
                .headers()
                .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
                .cloned()
                .unwrap_or_else(|| HeaderValue::from_static("authorization, content-type"));
            res.insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, headers));
            res.insert_header((header::ACCESS_CONTROL_MAX_AGE, "600"));
            let _ = allow;
        }
        let mut res = req.into_response(res.finish());
        decorate(res.headers_mut(), allow.as_ref());
        return Ok(res);
    }
    let mut res = next.call(req).await?.map_into_boxed_body();
    decorate(res.headers_mut(), allow.as_ref());
    Ok(res)
}

fn decorate(headers: &mut actix_web::http::header::HeaderMap, allow: Option<&AllowOrigin>) {
    match allow {
        Some(AllowOrigin::Any) => {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
        Some(AllowOrigin::Echo(origin)) => {
            if let Ok(value) = HeaderValue::from_str(origin.as_str()) {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
            }
            headers.append(header::VARY, HeaderValue::from_static("Origin"));
        }
        None => {
            headers.append(header::VARY, HeaderValue::from_static("Origin"));
        }
    }
    if allow.is_some() {
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-request-id, x-cache, x-query-count"),
        );
    }
}

/// Answers 503 when a handler takes longer than `request_timeout`: a database or store that
/// hangs (instead of refusing) must not pin connections and workers forever. File uploads are
/// exempt, since their handler reads the whole body; streamed responses are not affected either,
/// because the handler returns before their body is sent.
///
/// The request body is also watched: when no byte of it arrives for `body_read_timeout` (a
/// client that stalls or trickles, uploads included), reading it fails and the answer is 408.
/// A handler still waiting for the body when `request_timeout` ends also gets 408, not 503: the
/// client, not a dependency, is slow.
pub async fn request_timeout(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some((limit, idle)) = req.app_data::<web::Data<AppState>>().map(|state| {
        let config = state.config();
        (config.request_timeout, config.body_read_timeout)
    }) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let body = Arc::new(BodyProgress::default());
    if has_body(&req) {
        let payload = req.take_payload();
        req.set_payload(watch_body(payload, idle, Arc::clone(&body)));
    }
    let upload = req.method() == Method::POST && is_upload(req.path());
    let result = if upload || confirms_schema_change(&req) {
        next.call(req).await
    } else {
        match tokio::time::timeout(limit, next.call(req)).await {
            Ok(result) => result,
            Err(_) if body.waiting() => return Err(ApiError::BodyTimedOut.into()),
            Err(_) => return Err(ApiError::TimedOut.into()),
        }
    };
    if body.stalled.load(Ordering::Acquire) {
        // Whatever the handler made of the failed read (422, …), the cause is the client.
        return Err(ApiError::BodyTimedOut.into());
    }
    result.map(ServiceResponse::map_into_boxed_body)
}

/// The upload routes, whose handler reads the whole (streamed) body: the public upload, the file
/// manager's upload of many files and its replace. A slow but steady client is watched by
/// `body_read_timeout` instead.
fn is_upload(path: &str) -> bool {
    if path == "/api/v1/files" || path == "/files/upload" {
        return true;
    }
    path.strip_prefix("/files/")
        .and_then(|rest| rest.strip_suffix("/replace"))
        .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// A confirmed schema-editor change that rewrites stored values (`PUT|DELETE
/// /collections/{collection}/fields/{field}?confirm=true`, `DELETE
/// /collections/{collection}?confirm=true`): it runs as long as the collection needs (its work
/// is on a task of its own, `vellum_app::schema`, so it would finish anyway), and the editor
/// gets its real outcome rather than a 503 after `request_timeout`. Signed-in editors only can
/// start one (the handler checks the permission first).
fn confirms_schema_change(req: &ServiceRequest) -> bool {
    let path = req.path();
    let Some(rest) = path.strip_prefix("/collections/") else {
        return false;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let changes_values = matches!(
        (req.method(), segments.as_slice()),
        (&Method::PUT | &Method::DELETE, [_, "fields", _]) | (&Method::DELETE, [_])
    );
    changes_values && vellum_app::schema::confirmed(req.query_string())
}

/// Whether the request announces a body (GETs usually do not: nothing to watch).
fn has_body(req: &ServiceRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0")
}

/// How far reading a request body got.
#[derive(Debug, Default)]
struct BodyProgress {
    /// The handler asked for the body.
    started: AtomicBool,
    /// The body ended (or failed for another reason).
    finished: AtomicBool,
    /// No byte arrived within `body_read_timeout`.
    stalled: AtomicBool,
}

impl BodyProgress {
    fn waiting(&self) -> bool {
        self.started.load(Ordering::Acquire) && !self.finished.load(Ordering::Acquire)
    }
}

/// `payload`, failing with a timed-out I/O error when no chunk arrives for `idle`.
fn watch_body(payload: Payload, idle: Duration, progress: Arc<BodyProgress>) -> Payload {
    let stream = futures_util::stream::unfold(
        (payload, progress, false),
        move |(mut payload, progress, done)| async move {
            if done {
                return None;
            }
            progress.started.store(true, Ordering::Release);
            match tokio::time::timeout(idle, payload.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), (payload, progress, false))),
                Ok(Some(Err(err))) => {
                    progress.finished.store(true, Ordering::Release);
                    Some((Err(err), (payload, progress, true)))
                }
                Ok(None) => {
                    progress.finished.store(true, Ordering::Release);
                    None
                }
                Err(_) => {
                    progress.stalled.store(true, Ordering::Release);
                    progress.finished.store(true, Ordering::Release);
                    let err = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no request body bytes within the body read timeout",
                    );
                    Some((Err(PayloadError::Io(err)), (payload, progress, true)))
                }
            }
        },
    );
    // Fused: multipart readers poll again after the end.
    Payload::Stream {
        payload: Box::pin(stream.fuse()),
    }
}

/// The public API response cache for GET requests under `/api/v1/collections` (never file
/// bytes, which stream and carry their own validators), after
/// authentication: the key holds the role, so roles never share entries, and the stamp (the
/// snapshot's epoch and the counters of the content the answer can contain, see
/// [`vellum_app::cache::scope`]) makes the first read after a write that could change it a miss.
/// `x-cache: hit|miss` says which it was.
///
/// Entries are bounded: the key is a fixed-size digest of what the request means
/// ([`cache_key`]), and a body over [`MAX_ENTRY_BYTES`](vellum_app::cache::MAX_ENTRY_BYTES) is served
/// but not stored.
pub async fn response_cache(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    // The snapshot the actor was just checked against: its epoch is the project's part of the
    // stamp (reading it again would cost a second round trip to Redis on every request).
    let role = req
        .extensions()
        .get::<Actor>()
        .map(|a| (a.role.name.clone(), Arc::clone(&a.snapshot)));
    // Only GETs of the cached routes whose query the handler accepts have a key; the rest
    // (404s, 422s) are answered uncached.
    let cached = (req.method() == Method::GET)
        .then(|| {
            let (role, snapshot) = role.as_ref()?;
            Some((
                cache_key(role, &req)?,
                route_scopes(snapshot, &req)?,
                snapshot,
            ))
        })
        .flatten();
    let (Some(state), Some((key, scopes, snapshot))) = (state, cached) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let epoch = state.stamp(snapshot, scopes).await;
    let hit = state.cache().get(&key, epoch).await;
    state.metrics().response_cache(hit.is_some());
    if let Some(hit) = hit {
        let mut res =
            HttpResponse::build(StatusCode::from_u16(hit.status).unwrap_or(StatusCode::OK));
        res.insert_header((header::CONTENT_TYPE, hit.content_type));
        res.insert_header(("x-cache", "hit"));
        return Ok(req.into_response(res.body(hit.body)));
    }
    let res = next.call(req).await?;
    let (req, res) = res.into_parts();
    if res.status() != StatusCode::OK {
        let mut res = res.map_into_boxed_body();
        res.headers_mut().insert(
            HeaderName::from_static("x-cache"),
            HeaderValue::from_static("miss"),
        );
        return Ok(ServiceResponse::new(req, res));
    }
    let content_type = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let (head, body) = res.into_parts();
    let bytes = actix_web::body::to_bytes(body)
        .await
        .map_err(|_| actix_web::error::ErrorInternalServerError("could not buffer the response"))?;
    let response = CachedResponse {
        status: 200,
        content_type,
        body: bytes.clone(),
    };
    if response.fits() {
        state.cache().put(key, epoch, response).await;
    }
    let mut res = head.set_body(BoxBody::new(bytes));
    res.headers_mut().insert(
        HeaderName::from_static("x-cache"),
        HeaderValue::from_static("miss"),
    );
    Ok(ServiceResponse::new(req, res))
}

/// A cached route, from the request's path (percent-decoded as the router reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
enum CachedRoute<'a> {
    /// `/collections`: reads no parameter.
    Collections,
    /// `/collections/{slug}`: reads no parameter.
    Collection(&'a str),
    /// `/collections/{slug}/items`: [`vellum_app::query::ListParams`].
    Items(&'a str),
    /// `/collections/{slug}/items/{id}`: [`vellum_app::query::ReadParams`].
    Item(&'a str, i64),
}

impl<'a> CachedRoute<'a> {
    /// `None` for every other path under `/api/v1/collections` (they answer 404, uncached).
    fn of(path: &'a str) -> Option<Self> {
        let rest = path.strip_prefix("/api/v1/collections")?;
        if rest.is_empty() {
            return Some(Self::Collections);
        }
        let segments: Vec<&str> = rest.strip_prefix('/')?.split('/').collect();
        match segments.as_slice() {
            [slug] if !slug.is_empty() => Some(Self::Collection(slug)),
            [slug, "items"] if !slug.is_empty() => Some(Self::Items(slug)),
            // As the handler reads the id: `0042` and `+42` are item 42, anything else is 404.
            [slug, "items", id] if !slug.is_empty() => id
                .parse::<i64>()
                .ok()
                .filter(|id| *id > 0)
                .map(|id| Self::Item(slug, id)),
            _ => None,
        }
    }
}

/// The cache key of a GET by `role`: a digest of the route and of the parameters its handler
/// reads, parsed and written one way ([`vellum_app::query::canonical_list`] and
/// [`vellum_app::query::canonical_read`]). Unknown parameters, their order and their spelling do not
/// make new entries; the key is 64 hex digits whatever the URL's length. `None` when the request
/// is not cacheable: not a cached route, or a query its handler refuses.
fn cache_key(role: &str, req: &ServiceRequest) -> Option<String> {
    // The path as the router matched it (`%61rticles` is `articles`), not as it was sent.
    let route = CachedRoute::of(req.match_info().as_str())?;
    let params = match route {
        CachedRoute::Collections | CachedRoute::Collection(_) => String::new(),
        CachedRoute::Items(_) => vellum_app::query::canonical_list(req.query_string())?,
        CachedRoute::Item(..) => vellum_app::query::canonical_read(req.query_string())?,
    };
    Some(key_of(role, &route, &params))
}

/// The content scopes a cached route's answer depends on: none for the schema routes, the
/// collection's ([`Snapshot::scopes_of`]) for its items. `None` for an unknown collection
/// (answered 404, uncached).
fn route_scopes<'s>(snapshot: &'s Snapshot, req: &ServiceRequest) -> Option<&'s [Scope]> {
    match CachedRoute::of(req.match_info().as_str())? {
        CachedRoute::Collections | CachedRoute::Collection(_) => Some(&[]),
        CachedRoute::Items(slug) | CachedRoute::Item(slug, _) => {
            Some(snapshot.scopes_of(snapshot.collection(slug)?.id))
        }
    }
}

fn key_of(role: &str, route: &CachedRoute<'_>, params: &str) -> String {
    let mut key = vellum_app::cache::key::KeyHasher::new("response v1");
    key.part(role).debug_part(route).part(params);
    key.finish_hex()
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn key(role: &str, uri: &str) -> Option<String> {
        cache_key(role, &TestRequest::get().uri(uri).to_srv_request())
    }

    const ITEMS: &str = "/api/v1/collections/a/items";

    #[test]
    fn uploads_are_the_public_one_and_the_file_managers() {
        for path in ["/api/v1/files", "/files/upload", "/files/12/replace"] {
            assert!(is_upload(path), "{path}");
        }
        for path in [
            "/files",
            "/files/12",
            "/files//replace",
            "/files/1/2/replace",
            "/api/v1/files/1",
        ] {
            assert!(!is_upload(path), "{path}");
        }
    }

    #[test]
    fn only_confirmed_value_changes_of_the_schema_editor_outlive_the_request_timeout() {
        let confirms = |method: Method, uri: &str| {
            confirms_schema_change(
                &TestRequest::default()
                    .method(method)
                    .uri(uri)
                    .to_srv_request(),
            )
        };
        for (method, uri) in [
            (Method::PUT, "/collections/a/fields/price?confirm=true"),
            (Method::DELETE, "/collections/a/fields/price?confirm=1"),
            (Method::DELETE, "/collections/a?confirm=true"),
        ] {
            assert!(confirms(method.clone(), uri), "{method} {uri}");
        }
        for (method, uri) in [
            (Method::PUT, "/collections/a/fields/price"),
            (Method::PUT, "/collections/a/fields/price?confirm=false"),
            (Method::GET, "/collections/a/fields/price?confirm=true"),
            (Method::PUT, "/collections/a?confirm=true"),
            (Method::DELETE, "/collections/a/items/4?confirm=true"),
            (
                Method::PUT,
                "/api/v1/collections/a/fields/price?confirm=true",
            ),
        ] {
            assert!(!confirms(method.clone(), uri), "{method} {uri}");
        }
    }

    #[test]
    fn cache_keys_are_the_meaning_of_the_query() {
        let k = |query: &str| key("public", &format!("{ITEMS}?{query}")).unwrap();
        let a = k("page=2&locale=de");
        assert_eq!(a.len(), 64);
        assert_eq!(a, k("locale=de&page=2"));
        assert_eq!(
            a,
            k("locale=de&page=02&u=1&zzz=x"),
            "spelling, unknown parameters"
        );
        assert_eq!(
            a,
            k("locale=de&page=2&page=3"),
            "the first occurrence is read"
        );
        assert_ne!(
            a,
            key("editor", &format!("{ITEMS}?locale=de&page=2")).unwrap()
        );
        assert_ne!(a, k("locale=de&page=3"));
        assert_ne!(a, k("locale=de&page=2&per_page=5"));
        assert_ne!(a, k("locale=de&page=2&sort=-id"));
        assert_ne!(a, k("locale=de&page=2&include=files"));
        assert_ne!(a, k("locale=de&page=2&include_all_translations=1"));
        assert_ne!(a, k("locale=de&page=2&filter[title]=x"));
        assert_eq!(
            k("include_all_translations=yes&include=users,files"),
            k("include=files,,users&include_all_translations=true")
        );
        // A value holding `&` cannot forge another parameter.
        assert_ne!(k("filter%5Bt%5D=a%26page%3D2"), k("filter%5Bt%5D=a&page=2"));
        // Repeated parameters keep their order: the handler reads the first.
        assert_ne!(k("locale=de&locale=en"), k("locale=en&locale=de"));
        // Filter conditions keep theirs, and a long operand still makes a short key.
        assert_ne!(
            k("filter[a][_eq]=1&filter[b][_eq]=2"),
            k("filter[b][_eq]=2&filter[a][_eq]=1")
        );
        assert_eq!(k(&format!("filter[a]={}", "x".repeat(1024))).len(), 64);
    }

    #[test]
    fn only_routes_and_queries_the_handlers_answer_have_keys() {
        let items = |query: &str| key("public", &format!("{ITEMS}?{query}"));
        for refused in [
            "page=0",
            "per_page=101",
            "include_all_translations=maybe",
            "filter[a][_like]=1",
            "sort=bad%20name",
            "filter[a]=x%00",
            "locale_x=%00",
            &format!("filter[a]={}", "x".repeat(1025)),
        ] {
            assert_eq!(items(refused), None, "{refused}");
        }
        // The show route reads no list parameter: a bad one is not refused there.
        let show = |query: &str| key("public", &format!("{ITEMS}/7?{query}"));
        assert_eq!(show("page=0"), show(""));
        assert_eq!(
            show("locale=de"),
            key("public", &format!("{ITEMS}/07?locale=de"))
        );
        assert_ne!(show(""), key("public", &format!("{ITEMS}/8")));
        assert!(show("include_all_translations=maybe").is_none());
        for path in [
            "/api/v1/collections",
            "/api/v1/collections/a",
            "/api/v1/collections/a/items/1",
        ] {
            assert_eq!(
                key("public", &format!("{path}?u=1")),
                key("public", path),
                "{path}"
            );
        }
        assert_eq!(
            key("public", "/api/v1/collections/%61/items"),
            key("public", ITEMS),
            "the path as routed"
        );
        for uncached in [
            "/api/v1/collectionsx",
            "/api/v1/collections/",
            "/api/v1/collections/a/items/",
            "/api/v1/collections/a/items/0",
            "/api/v1/collections/a/items/x",
            "/api/v1/collections/a/items/1/more",
            "/api/v1/collections/a/other",
        ] {
            assert_eq!(key("public", uncached), None, "{uncached}");
        }
    }
}
