//! The file manager's trash, force delete, "where used" and bulk routes: `POST /files/bulk`,
//! `DELETE /files/{file}`, `POST /files/{file}/restore`, `DELETE /files/{file}/force`,
//! `GET /files/{file}/usage`. Each handler is its extractors, one call of
//! [`vellum_app::file_admin`], and a response.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde_json::json;
use vellum_app::{AppState, file_admin};

use crate::body::read_json;
use crate::error::ApiError;
use crate::html;
use crate::routes::file_pages;
use crate::session::{SignedIn, wants_json};

/// Registers the routes, the literal `/files/bulk` first.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(bulk)
        .service(delete_file)
        .service(restore)
        .service(force_delete)
        .service(usage);
}

#[utoipa::path(
    operation_id = "adminBulkFiles",
    tag = "admin: files",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::file_admin_trash::FileBulkRequest),
    responses(
        (status = 200, description = "Which ids the action applied to, and why each other did not", content_type = "application/json", body = crate::schemas::file_admin_trash::FileBulkEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/files/bulk")]
pub async fn bulk(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let outcome = file_admin::bulk(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": outcome })))
}

#[utoipa::path(
    operation_id = "adminDeleteFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 204, description = "Soft-deleted (a folder with its contents); the public API no longer serves it"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/files/{file}")]
pub async fn delete_file(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if html::is_htmx(&req) {
        return file_pages::trash(&state, &signed_in.0, &file).await;
    }
    file_admin::delete(&state, &signed_in.0, &file).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "adminRestoreFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 200, description = "The restored file or folder (what was deleted with it is restored too)", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/files/{file}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let restored = file_admin::restore(&state, &signed_in.0, &file).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/files/{file}?restored=1")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": restored })))
}

#[utoipa::path(
    operation_id = "adminForceDeleteFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 204, description = "Deleted for good with its subtree, tags, favorites and transform records; each blob no other file names is deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 409, response = crate::schemas::file_admin_trash::FileInUse),
    )
)]
#[delete("/files/{file}/force")]
pub async fn force_delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    match file_admin::force_delete(&state, &signed_in.0, &file).await? {
        file_admin::ForceOutcome::Deleted => Ok(HttpResponse::NoContent().finish()),
        file_admin::ForceOutcome::InUse { message, items } => {
            Ok(HttpResponse::Conflict().json(json!({ "message": message, "items": items })))
        }
    }
}

#[utoipa::path(
    operation_id = "adminFileUsage",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 200, description = "The items referencing the file (or anything inside the folder), per collection", content_type = "application/json", body = crate::schemas::file_admin_trash::FileUsageEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/files/{file}/usage")]
pub async fn usage(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let usage = file_admin::usage(&state, &signed_in.0, &file).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": usage })))
}
