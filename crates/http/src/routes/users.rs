//! The admin app's users: `GET /users`, `GET /users/create`, `POST /users`, `GET /users/{user}`,
//! `GET /users/{user}/edit`, `PUT /users/{user}`, `DELETE /users/{user}`,
//! `POST /users/{user}/restore`, `DELETE /users/{user}/force`. Each handler is its extractors,
//! one call of [`vellum_app::users`], and a response.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::{AppState, users};
use vellum_web::pages::render;
use vellum_web::pages::users::UsersPage;

use super::people_pages::{self, People};
use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listUsers",
    tag = "admin: users",
    security(("session" = [])),
    params(crate::schemas::users::AdminListParams),
    responses(
        (status = 200, description = "A page of users, newest first (the users page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::users::UserPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/users")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = users::list(&state, &signed_in.0, req.query_string()).await?;
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(page));
    }
    let view = UsersPage::new(&signed_in.0, page, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

#[utoipa::path(
    operation_id = "userCreateForm",
    tag = "admin: users",
    security(("session" = [])),
    responses(
        (status = 200, description = "What the create form offers", content_type = "application/json", body = crate::schemas::users::UserFormEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/users/create")]
pub async fn create_form(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return people_pages::form_page(&state, &signed_in.0, People::User, None, &req).await;
    }
    let form = users::create_form(&state, &signed_in.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "createUser",
    tag = "admin: users",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::users::CreateUserRequest),
    responses(
        (status = 201, description = "The new user", content_type = "application/json", body = crate::schemas::users::UserEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/users")]
pub async fn create(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return people_pages::save(&state, &signed_in.0, People::User, None, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = users::create(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "showUser",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    responses(
        (status = 200, description = "The user, deleted or not", content_type = "application/json", body = crate::schemas::users::UserEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/users/{user}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = users::show(&state, &signed_in.0, &user).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": found })))
}

#[utoipa::path(
    operation_id = "userEditForm",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    responses(
        (status = 200, description = "The user and what the edit form offers", content_type = "application/json", body = crate::schemas::users::UserEditEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/users/{user}/edit")]
pub async fn edit_form(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return people_pages::form_page(&state, &signed_in.0, People::User, Some(&user), &req)
            .await;
    }
    let form = users::edit_form(&state, &signed_in.0, &user).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "updateUser",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    request_body(content_type = "application/json", content = crate::schemas::users::UpdateUserRequest),
    responses(
        (status = 204, description = "The web UI's form put by htmx (a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The user as edited", content_type = "application/json", body = crate::schemas::users::UserEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/users/{user}")]
pub async fn update(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return people_pages::save(&state, &signed_in.0, People::User, Some(&user), &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let updated = users::update(&state, &signed_in.0, &user, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": updated })))
}

#[utoipa::path(
    operation_id = "deleteUser",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/users/{user}")]
pub async fn delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    users::delete(&state, &signed_in.0, &user).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/users?trashed=only"));
    }
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "restoreUser",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    responses(
        (status = 200, description = "The restored user", content_type = "application/json", body = crate::schemas::users::UserEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[post("/users/{user}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let restored = users::restore(&state, &signed_in.0, &user).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/users/{user}/edit?saved=1")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": restored })))
}

#[utoipa::path(
    operation_id = "forceDeleteUser",
    tag = "admin: users",
    security(("session" = [])),
    params(("user" = i64, Path, description = "User id")),
    responses(
        (status = 204, description = "Deleted for good"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/users/{user}/force")]
pub async fn force_delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    user: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    users::force_delete(&state, &signed_in.0, &user).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/users?trashed=only"));
    }
    Ok(HttpResponse::NoContent().finish())
}
