//! Answering a browser (admin contract, "One route, two representations"): a page rendered by
//! `vellum-web` with the headers every page carries, the HTML form of an error response, the
//! redirects a form post ends with, and the UI's embedded static files.

use actix_web::body::{BoxBody, to_bytes_limited};
use actix_web::dev::ServiceResponse;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, get, web};
use vellum_web::WebError;
use vellum_web::forms::FieldErrors;
use vellum_web::pages::error::ErrorPage;

use crate::error::ApiError;

/// What a page may load: only this origin's scripts, styles and images (`data:`/`blob:` for
/// previews made in the page), no framing, forms only to this origin.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The headers of every page: never cached (it shows one user's data), not framed, not sniffed;
/// `Vary: Accept` because the same URL answers JSON to a client that prefers it.
fn page_headers(res: &mut HttpResponseBuilder) {
    res.insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::VARY, "Accept"));
}

/// A rendered page with `status`.
///
/// # Errors
/// 500 when the template failed at run time.
pub(crate) fn page(
    status: StatusCode,
    rendered: Result<String, WebError>,
) -> Result<HttpResponse, ApiError> {
    let html = rendered.map_err(ApiError::internal)?;
    let mut res = HttpResponse::build(status);
    page_headers(&mut res);
    Ok(res.body(html))
}

/// A 303 to `location`: where a form post that succeeded sends the browser.
pub(crate) fn see_other(location: &str) -> HttpResponseBuilder {
    let mut res = HttpResponse::SeeOther();
    res.insert_header((header::LOCATION, location.to_owned()))
        .insert_header((header::CACHE_CONTROL, "no-store"));
    res
}

/// Where htmx sends the browser after a request that changed something (`HX-Redirect`, 204):
/// htmx follows it with a full page load, so the page shows the new state.
pub(crate) fn htmx_redirect(location: &str) -> HttpResponse {
    HttpResponse::NoContent()
        .insert_header(("HX-Redirect", location.to_owned()))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// Where a saved form goes: `to`, by `HX-Redirect` after an update (htmx put it) or by a 303
/// after a creation (a plain form post).
pub(crate) fn saved(updated: bool, to: &str) -> HttpResponse {
    if updated {
        htmx_redirect(to)
    } else {
        see_other(to).finish()
    }
}

/// Tells htmx to load the page again (`HX-Refresh`, 204): a small change (a favorite) shown
/// in place.
pub(crate) fn htmx_refresh() -> HttpResponse {
    HttpResponse::NoContent()
        .insert_header(("HX-Refresh", "true"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish()
}

/// Whether htmx sent the request (`HX-Request: true`).
pub(crate) fn is_htmx(req: &HttpRequest) -> bool {
    req.headers()
        .get("hx-request")
        .is_some_and(|v| v.as_bytes() == b"true")
}

/// What a form shows for a refused submission: the status, the problems per field, and a
/// notice (a throttled sign-in); `Err` for errors a form does not show (they become an error
/// page or the JSON envelope as usual).
pub(crate) struct FormRefusal {
    pub status: StatusCode,
    pub errors: FieldErrors,
    pub notice: Option<String>,
    pub retry_after: Option<u64>,
}

impl FormRefusal {
    /// The refusal a form shows for `err`: a 422's problems, or a 429's wait.
    ///
    /// # Errors
    /// `err` itself for every other error.
    pub(crate) fn of(err: ApiError) -> Result<Self, ApiError> {
        match err {
            ApiError::Invalid(errors) => Ok(Self {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                errors: FieldErrors::from_map(errors.into_map()),
                notice: None,
                retry_after: None,
            }),
            ApiError::Throttled { retry_after } => Ok(Self {
                status: StatusCode::TOO_MANY_REQUESTS,
                errors: FieldErrors::default(),
                notice: Some(format!(
                    "Too many attempts. Try again in {}.",
                    wait(retry_after)
                )),
                retry_after: Some(retry_after),
            }),
            other => Err(other),
        }
    }

    /// The form page rendered for this refusal, with its status (and `Retry-After`).
    pub(crate) fn page(
        &self,
        rendered: Result<String, WebError>,
    ) -> Result<HttpResponse, ApiError> {
        let mut res = page(self.status, rendered)?;
        if let Some(seconds) = self.retry_after
            && let Ok(value) = header::HeaderValue::from_str(&seconds.to_string())
        {
            res.headers_mut().insert(header::RETRY_AFTER, value);
        }
        Ok(res)
    }
}

/// "N seconds" or "N minutes", for people.
fn wait(seconds: u64) -> String {
    match seconds {
        0..=1 => "a second".to_owned(),
        2..=90 => format!("{seconds} seconds"),
        _ => format!("{} minutes", seconds.div_ceil(60)),
    }
}

/// The largest error body turned into a page; error envelopes are far smaller.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A browser's copy of an error response: the JSON envelope (403, 404, 422, 429, 5xx) becomes
/// the error page with the same status and headers. A response that is already HTML, or not an
/// error, is passed through.
pub(crate) async fn error_page(res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || !is_json {
        return res;
    }
    let (req, res) = res.into_parts();
    let (head, body) = res.into_parts();
    let body = to_bytes_limited(body, ERROR_BODY_LIMIT)
        .await
        .ok()
        .and_then(Result::ok)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(serde_json::Value::Null);
    let rendered = vellum_web::pages::render(&ErrorPage::new(status.as_u16(), &body));
    let Ok(mut page) = page(status, rendered) else {
        return ServiceResponse::new(req, HttpResponse::build(status).finish());
    };
    // A 413 or 408 closes the connection (the rest of the body may be on its way): so does
    // its page.
    if head.head().connection_type() == actix_http::ConnectionType::Close {
        page.head_mut()
            .set_connection_type(actix_http::ConnectionType::Close);
    }
    for name in [header::RETRY_AFTER, header::ALLOW] {
        if let Some(value) = head.headers().get(&name) {
            page.headers_mut().insert(name, value.clone());
        }
    }
    ServiceResponse::new(req, page.map_into_boxed_body())
}

/// A static file of the UI (`/assets/NAME?v=HASH`): cached for a year when the URL names the
/// file's current version (a new build changes the URL), revalidated by ETag otherwise.
#[get("/assets/{name:.+}")]
pub(crate) async fn asset(req: HttpRequest, name: web::Path<String>) -> HttpResponse {
    let Some(asset) = vellum_web::assets::get(&name) else {
        return HttpResponse::NotFound()
            .content_type("text/plain; charset=utf-8")
            .body("Not found.");
    };
    let etag = format!("\"{}\"", asset.version);
    let versioned = req.query_string() == format!("v={}", asset.version);
    let cache = if versioned {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut res = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    res.insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::ETAG, etag))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if fresh {
        return res.finish();
    }
    res.content_type(asset.content_type)
        .body(asset.bytes.into_owned())
}
