//! Project settings: `GET`/`PUT /settings/project`, one call of
//! [`vellum_app::project_settings`] each.

use actix_web::{HttpRequest, HttpResponse, get, put, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::project_settings;

use super::settings_pages;
use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "showProjectSettings",
    tag = "admin: settings",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every setting (stored values, defaults for the rest; the settings page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::access::ProjectSettingsEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/settings/project")]
pub async fn show(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return settings_pages::project_page(&state, &user.0, &req).await;
    }
    let settings = project_settings::show(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": settings })))
}

#[utoipa::path(
    operation_id = "updateProjectSettings",
    tag = "admin: settings",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::ProjectSettingsUpdate),
    responses(
        (status = 200, description = "Every setting after the change, which every replica applies on its next request", content_type = "application/json", body = crate::schemas::access::ProjectSettingsEnvelope),
        (status = 204, description = "The web UI's form put by htmx (a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/settings/project")]
pub async fn update(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return settings_pages::save_project(&state, &user.0, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let settings = project_settings::update(&state, &user.0, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": settings })))
}
