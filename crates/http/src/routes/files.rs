//! The files endpoints: list, upload, show, update, soft delete, content and transforms. Each
//! handler is its extractors, one call of [`vellum_app::files`], and a response; bytes stream
//! through [`crate::download`].

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, route, web};
use serde_json::json;
use vellum_app::{Actor, AppState, files};

use crate::body::read_body;
use crate::download::serve_resolved_forgetting;
use crate::error::ApiError;
use crate::multipart::read_upload;

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "listFiles",
    tag = "files",
    security((), ("bearer" = [])),
    params(crate::schemas::FileListParams),
    responses(
        (status = 200, description = "A page of a folder's entries (or of search results)", content_type = "application/json", body = crate::schemas::FilePage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/files")]
pub async fn list(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = files::list(&state, &actor, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "showFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 200, description = "The file or folder", content_type = "application/json", body = crate::schemas::FileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/files/{id}")]
pub async fn show(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let file = files::show(&state, &actor, &id).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": file })))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "uploadFile",
    tag = "files",
    security((), ("bearer" = [])),
    request_body(content_type = "multipart/form-data", content = crate::schemas::UploadFileForm),
    responses(
        (status = 201, description = "The uploaded file, or only its id for a role that may not read it", content_type = "application/json", body = crate::schemas::FileWriteEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/files")]
pub async fn upload(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    multipart: Multipart,
) -> Result<HttpResponse, ApiError> {
    let read = |limit| read_upload(&state, multipart, limit);
    let file = files::upload(&state, &actor, read).await?;
    Ok(HttpResponse::Created().json(json!({ "data": file })))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "updateFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    request_body(content_type = "application/json", content = crate::schemas::UpdateFileRequest),
    responses(
        (status = 200, description = "The updated file, or only its id for a role that may not read it", content_type = "application/json", body = crate::schemas::FileWriteEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[patch("/files/{id}")]
pub async fn update(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(body, state.config().json_limit, &req);
    let file = files::update(&state, &actor, &id, body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": file })))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "deleteFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[delete("/files/{id}")]
pub async fn destroy(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    files::delete(&state, &actor, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "fileContent",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 200, description = "The original bytes, as the file's own MIME type (ETag, Last-Modified, Cache-Control)", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 206, description = "One requested byte range", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 416, description = "The requested range is not satisfiable (`Content-Range: bytes */size`)", content_type = "application/json", body = crate::schemas::ErrorBody),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
// HEAD answers the GET's status and headers without the bytes (`crate::download::serve`).
#[route("/files/{id}/content", method = "GET", method = "HEAD")]
pub async fn content(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    id: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    serve_resolved_forgetting(
        &state,
        &req,
        || files::content(&state, &actor, &id),
        || files::forget_content(&state, &id),
    )
    .await
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "fileTransform",
    tag = "files",
    security((), ("bearer" = [])),
    params(
        ("id" = i64, Path, description = "File id"),
        ("key" = String, Path, description = "`thumbnail`, `small`, `medium`, `large` or `size-N` (N from 1 to 4096; with signed transform URLs on, a `size-N` needs a signature)"),
        ("v" = Option<String>, Query, description = "Signed transform URLs only: the output's version, as the `transforms` value carries it (16 hex digits)"),
        ("s" = Option<String>, Query, description = "Signed transform URLs only: the URL's signature, as the `transforms` value carries it"),
    ),
    responses(
        (status = 200, description = "The transformed image, in the source format (`Cache-Control: …, max-age=31536000, immutable` for a signed URL whose version is current)", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, description = "Forbidden (origin gate, IP allowlist, grant), or `Invalid signature.`", content_type = "application/json", body = crate::schemas::ErrorBody),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
// HEAD computes a transform that is not stored yet, as GET does: its length and validators
// are the output's (`docs/api.md`, "Files").
#[route("/files/{id}/transforms/{key}", method = "GET", method = "HEAD")]
pub async fn transform(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, key) = path.into_inner();
    serve_resolved_forgetting(
        &state,
        &req,
        || files::transform(&state, &actor, &id, &key, req.query_string()),
        || files::forget_transform(&state, &id, &key),
    )
    .await
}
