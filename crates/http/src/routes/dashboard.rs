//! The admin dashboard: `GET /`, one call of [`vellum_app::dashboard::show`].

use actix_web::{HttpResponse, get, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::dashboard;

use crate::error::ApiError;
use crate::session::SignedIn;

#[utoipa::path(
    operation_id = "showDashboard",
    tag = "admin: dashboard",
    security(("session" = [])),
    responses(
        (status = 200, description = "How many collections, items, files and users the project has", content_type = "application/json", body = crate::schemas::access::DashboardEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/")]
pub async fn show(state: web::Data<AppState>, user: SignedIn) -> Result<HttpResponse, ApiError> {
    let counts = dashboard::show(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": counts })))
}
