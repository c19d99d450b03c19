//! Request bodies read with a limit: a larger one (by `Content-Length` or as it arrives) is
//! refused with 413 before it is buffered. The use cases await the read only once the grant is
//! checked, so a role that may not write gets 403 whatever it sends.

use actix_web::{HttpRequest, web};

use crate::error::ApiError;

/// Reads a request body up to `limit` bytes; a larger one (by `Content-Length` or as it arrives)
/// is refused with 413 before it is buffered. Read after the grant check, so a role that may not
/// write gets 403 whatever it sends.
pub(crate) async fn read_body(
    mut payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
) -> Result<web::BytesMut, ApiError> {
    use futures_util::StreamExt as _;
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::PayloadTooLarge);
    }
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::invalid("data", "The request body could not be read."))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The largest body a sign-in route reads: they are open to anyone, and an email, a password
/// and a code fit many times over.
pub(crate) const SIGN_IN_BODY_LIMIT: usize = 16 * 1024;

/// An admin request's JSON body, read up to `limit` bytes. An empty body is `{}` (a route whose
/// fields are all optional); anything but JSON is 422.
pub(crate) async fn read_json(
    payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
) -> Result<serde_json::Value, ApiError> {
    let bytes = read_body(payload, limit, req).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    serde_json::from_slice(&bytes)
        .map_err(|_| ApiError::invalid("body", "The request body must be valid JSON."))
}

/// Whether the request carries an HTML form (`application/x-www-form-urlencoded`).
pub(crate) fn is_form(req: &HttpRequest) -> bool {
    req.headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| {
            m.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// An HTML form's fields in their order, a repeated name (checkboxes) once per value.
pub(crate) async fn read_form(
    payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
) -> Result<Vec<(String, String)>, ApiError> {
    let bytes = read_body(payload, limit, req).await?;
    Ok(url::form_urlencoded::parse(&bytes)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect())
}

/// A body holding one list: JSON as [`read_json`] reads it, or an HTML form whose repeated
/// `name` fields become `{name: [values]}` (what a list's form posts).
pub(crate) async fn read_list_input(
    payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
    name: &str,
) -> Result<serde_json::Value, ApiError> {
    if !is_form(req) {
        return read_json(payload, limit, req).await;
    }
    let values: Vec<serde_json::Value> = read_form(payload, limit, req)
        .await?
        .into_iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| serde_json::Value::String(v))
        .collect();
    Ok(serde_json::json!({ name: values }))
}

/// An admin request's body as JSON: a JSON body as [`read_json`] reads it, or an HTML form
/// (what the web UI's forms post without script) as an object of its fields, each a string
/// (a repeated name keeps its last value). Both go through the same use case and so the same
/// validation.
pub(crate) async fn read_input(
    payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
) -> Result<serde_json::Value, ApiError> {
    if !is_form(req) {
        return read_json(payload, limit, req).await;
    }
    let bytes = read_body(payload, limit, req).await?;
    let fields: serde_json::Map<String, serde_json::Value> = url::form_urlencoded::parse(&bytes)
        .map(|(k, v)| (k.into_owned(), serde_json::Value::String(v.into_owned())))
        .collect();
    Ok(serde_json::Value::Object(fields))
}
