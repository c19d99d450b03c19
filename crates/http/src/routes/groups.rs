//! The admin app's groups: `GET /groups`, `GET /groups/create`, `POST /groups`, `GET /groups/{group}`,
//! `GET /groups/{group}/edit`, `PUT /groups/{group}`, `DELETE /groups/{group}`,
//! `POST /groups/{group}/restore`, `DELETE /groups/{group}/force`. Each handler is its extractors,
//! one call of [`vellum_app::groups`], and a response.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::{AppState, groups};
use vellum_web::pages::groups::GroupsPage;
use vellum_web::pages::render;

use super::people_pages::{self, People};
use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listGroups",
    tag = "admin: groups",
    security(("session" = [])),
    params(crate::schemas::users::AdminListParams),
    responses(
        (status = 200, description = "A page of groups, newest first (the groups page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::users::GroupPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/groups")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = groups::list(&state, &signed_in.0, req.query_string()).await?;
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(page));
    }
    let view = GroupsPage::new(&signed_in.0, page, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

#[utoipa::path(
    operation_id = "groupCreateForm",
    tag = "admin: groups",
    security(("session" = [])),
    responses(
        (status = 200, description = "What the create form offers", content_type = "application/json", body = crate::schemas::users::GroupFormEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/groups/create")]
pub async fn create_form(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return people_pages::form_page(&state, &signed_in.0, People::Group, None, &req).await;
    }
    let form = groups::create_form(&state, &signed_in.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "createGroup",
    tag = "admin: groups",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::users::CreateGroupRequest),
    responses(
        (status = 201, description = "The new group", content_type = "application/json", body = crate::schemas::users::GroupEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/groups")]
pub async fn create(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return people_pages::save(&state, &signed_in.0, People::Group, None, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = groups::create(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "showGroup",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    responses(
        (status = 200, description = "The group, deleted or not", content_type = "application/json", body = crate::schemas::users::GroupEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/groups/{group}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = groups::show(&state, &signed_in.0, &group).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": found })))
}

#[utoipa::path(
    operation_id = "groupEditForm",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    responses(
        (status = 200, description = "The group and what the edit form offers", content_type = "application/json", body = crate::schemas::users::GroupEditEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/groups/{group}/edit")]
pub async fn edit_form(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return people_pages::form_page(&state, &signed_in.0, People::Group, Some(&group), &req)
            .await;
    }
    let form = groups::edit_form(&state, &signed_in.0, &group).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "updateGroup",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    request_body(content_type = "application/json", content = crate::schemas::users::UpdateGroupRequest),
    responses(
        (status = 204, description = "The web UI's form put by htmx (a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The group as edited", content_type = "application/json", body = crate::schemas::users::GroupEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/groups/{group}")]
pub async fn update(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return people_pages::save(&state, &signed_in.0, People::Group, Some(&group), &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let updated = groups::update(&state, &signed_in.0, &group, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": updated })))
}

#[utoipa::path(
    operation_id = "deleteGroup",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/groups/{group}")]
pub async fn delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    groups::delete(&state, &signed_in.0, &group).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/groups?trashed=only"));
    }
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "restoreGroup",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    responses(
        (status = 200, description = "The restored group", content_type = "application/json", body = crate::schemas::users::GroupEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[post("/groups/{group}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let restored = groups::restore(&state, &signed_in.0, &group).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/groups/{group}/edit?saved=1")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": restored })))
}

#[utoipa::path(
    operation_id = "forceDeleteGroup",
    tag = "admin: groups",
    security(("session" = [])),
    params(("group" = i64, Path, description = "Group id")),
    responses(
        (status = 204, description = "Deleted for good"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/groups/{group}/force")]
pub async fn force_delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    group: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    groups::force_delete(&state, &signed_in.0, &group).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/groups?trashed=only"));
    }
    Ok(HttpResponse::NoContent().finish())
}
