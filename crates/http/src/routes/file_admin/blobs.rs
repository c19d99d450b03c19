//! The file manager's routes that move bytes: `POST /files/upload` (many files),
//! `POST /files/{file}/replace`, `POST /files/{file}/copy` and `GET|HEAD /files/{file}/download`.
//! Each handler is its extractors, one call of [`vellum_app::file_admin`], and a response; bytes
//! stream through [`crate::multipart`] and [`crate::download`].

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, post, route, web};
use serde_json::json;
use vellum_app::{AppState, file_admin};

use crate::body::read_json;
use crate::download::serve_resolved;
use crate::error::ApiError;
use crate::html;
use crate::multipart::{read_upload, read_uploads};
use crate::routes::file_pages;
use crate::session::{SignedIn, wants_json};

/// Registers the routes; `/files/upload` is literal and must come before `/files/{file}`.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(upload)
        .service(replace)
        .service(copy)
        .service(download);
}

#[utoipa::path(
    operation_id = "adminUploadFiles",
    tag = "admin: files",
    security(("session" = [])),
    request_body(content_type = "multipart/form-data", content = crate::schemas::file_admin_blobs::UploadFilesForm),
    responses(
        (status = 201, description = "Every file of the form, in the order of its parts (all or none are stored)", content_type = "application/json", body = crate::schemas::file_admin_blobs::UploadedFilesEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/files/upload")]
pub async fn upload(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    multipart: Multipart,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let read = |limit| read_uploads(&state, multipart, limit);
    let files = file_admin::upload(&state, &signed_in.0, read).await?;
    if !wants_json(&req) {
        return Ok(file_pages::uploaded(&files));
    }
    Ok(HttpResponse::Created().json(json!({ "data": files })))
}

#[utoipa::path(
    operation_id = "adminReplaceFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File id")),
    request_body(content_type = "multipart/form-data", content = crate::schemas::file_admin_blobs::ReplaceFileForm),
    responses(
        (status = 200, description = "The file with its new bytes (same id, name and metadata)", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/files/{file}/replace")]
pub async fn replace(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    multipart: Multipart,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let read = |limit| read_upload(&state, multipart, limit);
    let replaced = file_admin::replace(&state, &signed_in.0, &file, read).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/files/{file}?replaced=1")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": replaced })))
}

#[utoipa::path(
    operation_id = "adminCopyFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File id")),
    request_body(content_type = "application/json", content = crate::schemas::file_admin_blobs::CopyFileRequest),
    responses(
        (status = 201, description = "The copy: a new file sharing the source's stored bytes", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/files/{file}/copy")]
pub async fn copy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let copy = file_admin::copy(&state, &signed_in.0, &file, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": copy })))
}

#[utoipa::path(
    operation_id = "adminDownloadFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File id")),
    responses(
        (status = 200, description = "The bytes as an attachment (`Content-Disposition: attachment; filename=…; filename*=UTF-8''…`), with ETag, Last-Modified and `Cache-Control: private, no-cache`", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 206, description = "One requested byte range", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 416, description = "The requested range is not satisfiable (`Content-Range: bytes */size`)", content_type = "application/json", body = crate::schemas::ErrorBody),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
// HEAD answers the GET's status and headers without the bytes (`crate::download::serve`).
#[route("/files/{file}/download", method = "GET", method = "HEAD")]
pub async fn download(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    serve_resolved(&state, &req, || {
        file_admin::download(&state, &signed_in.0, &file)
    })
    .await
}
