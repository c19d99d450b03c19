//! Admin permissions: `/settings/permissions…`. Each handler is its extractors, one call of
//! [`vellum_app::permissions`], and a response. `{permission}` is the permission's id.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::permissions;
use vellum_web::pages::permissions::PermissionsPage;
use vellum_web::pages::render;

use crate::body::{read_input, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listPermissions",
    tag = "admin: permissions",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every permission row in id order (bounded by the catalog)", content_type = "application/json", body = crate::schemas::access::PermissionList),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/settings/permissions")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let list = permissions::list(&state, &user.0).await?;
    if !wants_json(&req) {
        let view = PermissionsPage::new(&user.0, list, req.query_string());
        return html::page(StatusCode::OK, render(&view));
    }
    Ok(HttpResponse::Ok().json(json!({ "data": list })))
}

#[utoipa::path(
    operation_id = "createPermission",
    tag = "admin: permissions",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::PermissionWrite),
    responses(
        (status = 201, description = "The permission", content_type = "application/json", body = crate::schemas::access::PermissionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/permissions")]
pub async fn store(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let permission = permissions::create(&state, &user.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": permission })))
}

#[utoipa::path(
    operation_id = "syncPermissions",
    tag = "admin: permissions",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::PermissionSync),
    responses(
        (status = 200, description = "Every catalog name exists; with `prune`, no other does", content_type = "application/json", body = crate::schemas::access::PermissionSyncEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/permissions/sync")]
pub async fn sync(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_input(payload, state.config().json_limit, &req).await?;
    let result = permissions::sync(&state, &user.0, &body).await?;
    if !wants_json(&req) {
        let to = format!("/settings/permissions?created={}", result.created);
        return Ok(html::see_other(&to).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": result })))
}

#[utoipa::path(
    operation_id = "updatePermission",
    tag = "admin: permissions",
    security(("session" = [])),
    params(("permission" = i64, Path, description = "The permission's id")),
    request_body(content_type = "application/json", content = crate::schemas::access::PermissionWrite),
    responses(
        (status = 200, description = "The renamed permission", content_type = "application/json", body = crate::schemas::access::PermissionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/settings/permissions/{permission}")]
pub async fn update(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let permission = permissions::update(&state, &user.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": permission })))
}

#[utoipa::path(
    operation_id = "deletePermission",
    tag = "admin: permissions",
    security(("session" = [])),
    params(("permission" = i64, Path, description = "The permission's id")),
    responses(
        (status = 204, description = "Deleted and removed from every role"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/settings/permissions/{permission}")]
pub async fn destroy(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    permissions::destroy(&state, &user.0, &path).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/settings/permissions?deleted=1"));
    }
    Ok(HttpResponse::NoContent().finish())
}
