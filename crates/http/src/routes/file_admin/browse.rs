//! The file manager's browse, folders, metadata, tags and favorites: `GET /files`,
//! `POST /files/folders`, `GET|PUT /files/{file}`, `GET /file-tags`, `POST /files/{file}/tags`,
//! `DELETE /files/{file}/tags/{tag}`, `POST|DELETE /files/{file}/favorite`.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::{AppState, file_admin};

use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::html;
use crate::routes::file_pages;
use crate::session::{SignedIn, wants_json};

/// Registers the routes, the literal `/files/folders` before `/files/{file}`.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(create_folder)
        .service(list_tags)
        .service(show)
        .service(update)
        .service(add_tags)
        .service(remove_tag)
        .service(favorite)
        .service(unfavorite);
}

#[utoipa::path(
    operation_id = "adminListFiles",
    tag = "admin: files",
    security(("session" = [])),
    params(crate::schemas::file_admin_browse::AdminFileListParams),
    responses(
        (status = 200, description = "A page of files and folders (folders first)", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFilePage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/files")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return file_pages::files_page(&state, &signed_in.0, &req).await;
    }
    let page = file_admin::list(&state, &signed_in.0, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "adminCreateFolder",
    tag = "admin: files",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::file_admin_browse::CreateFolderRequest),
    responses(
        (status = 201, description = "The new folder", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/files/folders")]
pub async fn create_folder(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return file_pages::create_folder(&state, &signed_in.0, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let folder = file_admin::create_folder(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": folder })))
}

#[utoipa::path(
    operation_id = "adminListFileTags",
    tag = "admin: files",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every tag carried by a live file, with its count", content_type = "application/json", body = crate::schemas::file_admin_browse::FileTagList),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/file-tags")]
pub async fn list_tags(
    state: web::Data<AppState>,
    signed_in: SignedIn,
) -> Result<HttpResponse, ApiError> {
    let tags = file_admin::list_tags(&state, &signed_in.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": tags })))
}

#[utoipa::path(
    operation_id = "adminShowFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 200, description = "The file or folder, live or in the trash", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/files/{file}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return file_pages::file_page(&state, &signed_in.0, &file, &req).await;
    }
    let data = file_admin::show(&state, &signed_in.0, &file).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": data })))
}

#[utoipa::path(
    operation_id = "adminUpdateFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    request_body(content_type = "application/json", content = crate::schemas::file_admin_browse::UpdateAdminFileRequest),
    responses(
        (status = 204, description = "The web UI's form put by htmx (a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The file or folder as updated", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/files/{file}")]
pub async fn update(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return file_pages::save_file(&state, &signed_in.0, &file, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let data = file_admin::update(&state, &signed_in.0, &file, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": data })))
}

#[utoipa::path(
    operation_id = "adminAddFileTags",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    request_body(content_type = "application/json", content = crate::schemas::file_admin_browse::AddFileTagsRequest),
    responses(
        (status = 200, description = "The file with its tags", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/files/{file}/tags")]
pub async fn add_tags(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let data = file_admin::add_tags(&state, &signed_in.0, &file, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": data })))
}

#[utoipa::path(
    operation_id = "adminRemoveFileTag",
    tag = "admin: files",
    security(("session" = [])),
    params(
        ("file" = i64, Path, description = "File or folder id"),
        ("tag" = String, Path, description = "The tag (compared trimmed and lower-cased)"),
    ),
    responses(
        (status = 204, description = "The tag is removed"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/files/{file}/tags/{tag}")]
pub async fn remove_tag(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (file, tag) = path.into_inner();
    file_admin::remove_tag(&state, &signed_in.0, &file, &tag).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "adminFavoriteFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 204, description = "Sent by htmx (`HX-Request: true`): done; `HX-Refresh` reloads the page"),
        (status = 200, description = "The file, now a favorite of the signed-in user", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[post("/files/{file}/favorite")]
pub async fn favorite(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let data = file_admin::favorite(&state, &signed_in.0, &file).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_refresh());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": data })))
}

#[utoipa::path(
    operation_id = "adminUnfavoriteFile",
    tag = "admin: files",
    security(("session" = [])),
    params(("file" = i64, Path, description = "File or folder id")),
    responses(
        (status = 204, description = "No longer a favorite of the signed-in user"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/files/{file}/favorite")]
pub async fn unfavorite(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    file: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    file_admin::unfavorite(&state, &signed_in.0, &file).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_refresh());
    }
    Ok(HttpResponse::NoContent().finish())
}
