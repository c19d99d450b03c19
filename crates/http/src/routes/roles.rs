//! Roles: `/settings/roles…`. Each handler is its extractors, one call of
//! [`vellum_app::roles`], and a response. `{role}` is the role's id.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::roles;

use super::role_pages;
use crate::body::{is_form, read_form, read_input, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listRoles",
    tag = "admin: roles",
    security(("session" = [])),
    params(crate::schemas::access::PageParams),
    responses(
        (status = 200, description = "A page of roles in creation order", content_type = "application/json", body = crate::schemas::access::RolePage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/settings/roles")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return role_pages::list_page(&state, &user.0, &req).await;
    }
    let page = roles::list(&state, &user.0, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "createRolePage",
    tag = "admin: roles",
    security(("session" = [])),
    responses(
        (status = 200, description = "The create page's data: the permissions and collections to choose from", content_type = "application/json", body = crate::schemas::access::RoleFormEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/settings/roles/create")]
pub async fn create_page(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return role_pages::editor(&state, &user.0, None, &req).await;
    }
    let form = roles::create_form(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "storeRole",
    tag = "admin: roles",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::RoleWrite),
    responses(
        (status = 201, description = "The role, its grants synced; caches flushed on every replica", content_type = "application/json", body = crate::schemas::access::RoleEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/roles")]
pub async fn store(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return role_pages::save(&state, &user.0, None, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let role = roles::store(&state, &user.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": role })))
}

#[utoipa::path(
    operation_id = "bulkRoleAction",
    tag = "admin: roles",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::RoleBulkAction),
    responses(
        (status = 200, description = "What was deleted and what was skipped (`super-admin`, `public`)", content_type = "application/json", body = crate::schemas::access::RoleBulkEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/roles/bulk-actions")]
pub async fn bulk(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let result = roles::bulk(&state, &user.0, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": result })))
}

#[utoipa::path(
    operation_id = "duplicateRole",
    tag = "admin: roles",
    security(("session" = [])),
    params(("role" = i64, Path, description = "The role's id")),
    request_body(content_type = "application/json", content = crate::schemas::access::RoleDuplicate),
    responses(
        (status = 201, description = "The copy (permissions and both matrices, no memberships); `Location` is its edit page. A browser gets 303 there.", content_type = "application/json", body = crate::schemas::access::RoleEnvelope,
            headers(("Location" = String, description = "`/settings/roles/{id}/edit` of the copy"))),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/roles/{role}/duplicate")]
pub async fn duplicate(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_input(payload, state.config().json_limit, &req).await?;
    let role = roles::duplicate(&state, &user.0, &path, &body).await?;
    let location = format!("/settings/roles/{}/edit", role.id);
    if !wants_json(&req) {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, location))
            .finish());
    }
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .json(json!({ "data": role })))
}

#[utoipa::path(
    operation_id = "editRolePage",
    tag = "admin: roles",
    security(("session" = [])),
    params(("role" = i64, Path, description = "The role's id")),
    responses(
        (status = 200, description = "The edit page's data: the role with its permission ids and matrices, and the options", content_type = "application/json", body = crate::schemas::access::RoleEditEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/settings/roles/{role}/edit")]
pub async fn edit(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return role_pages::editor(&state, &user.0, Some(&path), &req).await;
    }
    let page = roles::edit(&state, &user.0, &path).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": page })))
}

#[utoipa::path(
    operation_id = "updateRole",
    tag = "admin: roles",
    security(("session" = [])),
    params(("role" = i64, Path, description = "The role's id")),
    request_body(content_type = "application/json", content = crate::schemas::access::RoleWrite),
    responses(
        (status = 204, description = "The web UI's editor put by htmx (a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The role, its grants synced; caches flushed on every replica", content_type = "application/json", body = crate::schemas::access::RoleEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/settings/roles/{role}")]
pub async fn update(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return role_pages::save(&state, &user.0, Some(&path), &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let role = roles::update(&state, &user.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": role })))
}

#[utoipa::path(
    operation_id = "deleteRole",
    tag = "admin: roles",
    security(("session" = [])),
    params(("role" = i64, Path, description = "The role's id")),
    responses(
        (status = 204, description = "Deleted, with its grants, memberships and API keys"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/settings/roles/{role}")]
pub async fn destroy(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    roles::destroy(&state, &user.0, &path).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/settings/roles?deleted=1"));
    }
    Ok(HttpResponse::NoContent().finish())
}
