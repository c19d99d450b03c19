//! Streaming a [`Download`] (a file's bytes or a transform output) with its validators: `ETag`,
//! `Last-Modified`, `If-None-Match` (304), one `bytes=` `Range` (206, 416), `Cache-Control` by
//! visibility (and for a year when the answer is immutable), and the headers that keep active content (HTML, SVG, PDF) from running inline.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use futures_util::TryStreamExt as _;
use serde_json::json;
use vellum_app::files::Download;
use vellum_app::{AppError, AppState};
use vellum_policy::Visibility;

use crate::error::ApiError;

/// Whether a request's `If-None-Match` names `etag` (or `*`).
fn not_modified(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// A single `bytes=` range resolved against `size`: `Ok(None)` for no (or an ignorable) Range
/// header, `Err(())` when it cannot be satisfied (416).
fn byte_range(req: &HttpRequest, size: u64) -> Result<Option<std::ops::Range<u64>>, ()> {
    let Some(raw) = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    let Some(spec) = raw.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None); // several ranges: the whole content is a valid answer
    }
    let Some((start, end)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (start, end) = (start.trim(), end.trim());
    let range = match (start.parse::<u64>(), end.parse::<u64>()) {
        (Ok(s), Ok(e)) if s <= e => s..e.saturating_add(1).min(size),
        (Ok(s), Err(_)) if end.is_empty() => s..size,
        (Err(_), Ok(n)) if start.is_empty() && n > 0 => size.saturating_sub(n)..size,
        _ => return Ok(None),
    };
    if range.start >= size || range.is_empty() {
        return Err(());
    }
    Ok(Some(range))
}

/// Types a browser would execute or render as a document: never served inline.
fn is_active(mime: &str) -> bool {
    let mime = mime.to_ascii_lowercase();
    mime.contains("html")
        || mime.contains("xml")
        || mime.contains("javascript")
        || mime.starts_with("text/")
        || mime == "application/pdf"
}

/// Serves what `resolve` answers. When the blob it names is gone by the time it is opened (a
/// replace committed and deleted the old bytes between the row's read and the blob's), it
/// resolves once more: the row then names the new bytes, so the answer is wholly the old
/// content or wholly the new one, with the `ETag` of what is sent.
pub(crate) async fn serve_resolved<F, Fut>(
    state: &AppState,
    req: &HttpRequest,
    resolve: F,
) -> Result<HttpResponse, ApiError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Download, AppError>>,
{
    serve_resolved_forgetting(state, req, resolve, || {}).await
}

/// As [`serve_resolved`], calling `forget` before resolving again: a remembered answer
/// (`vellum_app::files::forget_served`) must not name the missing blob a second time.
pub(crate) async fn serve_resolved_forgetting<F, Fut>(
    state: &AppState,
    req: &HttpRequest,
    resolve: F,
    forget: impl FnOnce(),
) -> Result<HttpResponse, ApiError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Download, AppError>>,
{
    match serve(state, req, resolve().await?).await {
        Err(ApiError::NotFound) => {
            forget();
            serve(state, req, resolve().await?).await
        }
        other => other,
    }
}

pub(crate) async fn serve(
    state: &AppState,
    req: &HttpRequest,
    out: Download,
) -> Result<HttpResponse, ApiError> {
    let builder = |status: StatusCode| -> HttpResponseBuilder {
        let mut res = HttpResponse::build(status);
        res.insert_header((header::ETAG, out.etag.clone()));
        res.insert_header((
            header::CACHE_CONTROL,
            match (out.visibility, out.immutable) {
                (Visibility::Public, false) => "public, max-age=300",
                (Visibility::Private, false) => "private, no-cache",
                // A current signed transform URL: its bytes never change under it.
                (Visibility::Public, true) => "public, max-age=31536000, immutable",
                (Visibility::Private, true) => "private, max-age=31536000, immutable",
            },
        ));
        if let Some(modified) = out.modified {
            res.insert_header((header::LAST_MODIFIED, header::HttpDate::from(modified)));
        }
        res.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
        if out.ranges {
            res.insert_header((header::ACCEPT_RANGES, "bytes"));
        }
        res
    };
    if not_modified(req, &out.etag) {
        return Ok(builder(StatusCode::NOT_MODIFIED).finish());
    }
    let range = if out.ranges {
        match byte_range(req, out.size) {
            Ok(range) => range,
            Err(()) => {
                return Ok(builder(StatusCode::RANGE_NOT_SATISFIABLE)
                    .insert_header((header::CONTENT_RANGE, format!("bytes */{}", out.size)))
                    .json(json!({"message": "The requested range cannot be satisfied."})));
            }
        }
    } else {
        None
    };
    // A HEAD answers what the GET would, headers and length included, without opening the
    // bytes (actix writes no body for HEAD but keeps the declared length).
    let (span, total, stream) = if req.method() == Method::HEAD {
        (range.clone().unwrap_or(0..out.size), out.size, None)
    } else {
        let blob = state.blobs().get(&out.storage_key, range.clone()).await?;
        (blob.range, blob.size, Some(blob.stream))
    };
    let mut res = builder(if range.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    });
    if range.is_some() {
        res.insert_header((
            header::CONTENT_RANGE,
            format!(
                "bytes {}-{}/{}",
                span.start,
                span.end.saturating_sub(1),
                total
            ),
        ));
    }
    res.insert_header((header::CONTENT_TYPE, out.mime_type.as_str()));
    // Stored bytes go out as stored: the admin app's compression would drop `Content-Length`
    // (a download's progress, a resumable client's size check) and spend CPU on files that are
    // mostly compressed already.
    res.insert_header((header::CONTENT_ENCODING, "identity"));
    let disposition = match (out.download_name.as_deref(), is_active(&out.mime_type)) {
        (Some(name), _) => Some(format!(
            "attachment; filename=\"{}\"; filename*=UTF-8''{}",
            ascii_name(name),
            percent(name)
        )),
        (None, true) => Some("attachment".to_owned()),
        (None, false) => None,
    };
    if let Some(disposition) = disposition.and_then(|d| HeaderValue::from_str(&d).ok()) {
        res.insert_header((header::CONTENT_DISPOSITION, disposition));
    }
    if is_active(&out.mime_type) {
        res.insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"));
    }
    let length = span.end.saturating_sub(span.start);
    let res = res.no_chunking(length);
    Ok(match stream {
        Some(stream) => res.streaming(
            stream.map_err(|e| actix_web::error::ErrorInternalServerError(e.to_string())),
        ),
        None => res.streaming(futures_util::stream::empty::<
            Result<bytes::Bytes, actix_web::Error>,
        >()),
    })
}

/// The name for the plain `filename=` parameter (RFC 6266's fallback for old clients): ASCII
/// only, with quotes, backslashes, control characters (CR, LF) and path separators replaced, so
/// the quoted string cannot end early, split the header or name a directory.
fn ascii_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() && !matches!(c, '"' | '\\' | '/') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// RFC 5987 `value-chars` for `filename*=UTF-8''…`: every byte but the `attr-char`s
/// (letters, digits and `!#$&+-.^_`|~`) percent-encoded, so the value is one token.
fn percent(name: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn ranges() {
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::RANGE, v.to_owned()))
                .to_http_request()
        };
        assert_eq!(byte_range(&req("bytes=0-9"), 100), Ok(Some(0..10)));
        assert_eq!(byte_range(&req("bytes=90-"), 100), Ok(Some(90..100)));
        assert_eq!(byte_range(&req("bytes=-10"), 100), Ok(Some(90..100)));
        assert_eq!(byte_range(&req("bytes=95-200"), 100), Ok(Some(95..100)));
        assert_eq!(byte_range(&req("bytes=100-"), 100), Err(()));
        assert_eq!(byte_range(&req("bytes=0-1,5-6"), 100), Ok(None));
        assert_eq!(byte_range(&req("items=0-1"), 100), Ok(None));
        assert_eq!(byte_range(&req("bytes=9-2"), 100), Ok(None));
        assert_eq!(
            byte_range(&TestRequest::default().to_http_request(), 100),
            Ok(None)
        );
    }

    #[test]
    fn attachment_names_are_safe_in_both_parameters() {
        assert_eq!(ascii_name("a\"b\\c/d\r\ne.txt"), "a_b_c_d__e.txt");
        assert_eq!(ascii_name("résumé ü.pdf"), "r_sum_ _.pdf");
        assert_eq!(percent("a b\"c/d;é*.txt"), "a%20b%22c%2Fd%3B%C3%A9%2A.txt");
        assert_eq!(percent("plain-name_1.TXT"), "plain-name_1.TXT");
    }

    #[test]
    fn etags_match_strong_weak_and_star() {
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::IF_NONE_MATCH, v.to_owned()))
                .to_http_request()
        };
        assert!(not_modified(&req("\"abc\""), "\"abc\""));
        assert!(not_modified(&req("W/\"abc\", \"x\""), "\"abc\""));
        assert!(not_modified(&req("*"), "\"abc\""));
        assert!(!not_modified(&req("\"abd\""), "\"abc\""));
    }
}
