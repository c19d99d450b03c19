//! The admin dashboard: `GET /`, one call of [`vellum_app::dashboard::show`].

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::dashboard;
use vellum_web::pages::dashboard::DashboardPage;
use vellum_web::pages::render;

use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "showDashboard",
    tag = "admin: dashboard",
    security(("session" = [])),
    responses(
        (status = 200, description = "How many collections, items, files and users the project has (the dashboard page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::access::DashboardEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/")]
pub async fn show(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let counts = dashboard::show(&state, &user.0).await?;
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(json!({ "data": counts })));
    }
    let view = DashboardPage::new(&user.0, counts);
    html::page(StatusCode::OK, render(&view))
}
