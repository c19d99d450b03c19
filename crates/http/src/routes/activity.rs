//! The activity log: `GET /activity-logs`, one call of [`vellum_app::activity::list`].

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use vellum_app::AppState;
use vellum_app::activity;
use vellum_web::pages::activity::ActivityPage;
use vellum_web::pages::render;

use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listActivity",
    tag = "admin: activity log",
    security(("session" = [])),
    params(crate::schemas::access::ActivityParams),
    responses(
        (status = 200, description = "A page of entries, newest first (the activity page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::access::ActivityPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/activity-logs")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = activity::list(&state, &user.0, req.query_string()).await?;
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(page));
    }
    let view = ActivityPage::new(&user.0, page, req.query_string());
    html::page(StatusCode::OK, render(&view))
}
