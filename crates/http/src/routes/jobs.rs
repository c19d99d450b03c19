//! The jobs admin: `/jobs…` (`can-show-jobs` to look, `can-manage-jobs` to retry and cancel).
//! Each handler is its extractors, one call of [`vellum_app::jobs`], and a response.

use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::jobs;

use crate::error::ApiError;
use crate::session::SignedIn;

#[utoipa::path(
    operation_id = "listJobs",
    tag = "admin: jobs",
    security(("session" = [])),
    params(crate::schemas::jobs::JobParams),
    responses(
        (status = 200, description = "A page of jobs, newest first", content_type = "application/json", body = crate::schemas::jobs::JobPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/jobs")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !crate::session::wants_json(&req) {
        return super::job_pages::jobs_page(&state, &user.0, &req).await;
    }
    let page = jobs::list(&state, &user.0, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "showJob",
    tag = "admin: jobs",
    security(("session" = [])),
    params(("job" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job", content_type = "application/json", body = crate::schemas::jobs::JobEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/jobs/{job}")]
pub async fn show(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let job = jobs::show(&state, &user.0, &path).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": job })))
}

#[utoipa::path(
    operation_id = "retryJob",
    tag = "admin: jobs",
    security(("session" = [])),
    params(("job" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "Queued again, due now, with fresh attempts", content_type = "application/json", body = crate::schemas::jobs::JobEnvelope),
        (status = 204, description = "The jobs page's button (htmx, `HX-Request: true`): done; `HX-Redirect` names the page to load"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/jobs/{job}/retry")]
pub async fn retry(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let job = jobs::retry(&state, &user.0, &path).await?;
    if crate::html::is_htmx(&req) {
        return Ok(crate::html::htmx_redirect("/jobs?retried=1"));
    }
    Ok(HttpResponse::Ok().json(json!({ "data": job })))
}

#[utoipa::path(
    operation_id = "cancelJob",
    tag = "admin: jobs",
    security(("session" = [])),
    params(("job" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "Cancelled: it will not run", content_type = "application/json", body = crate::schemas::jobs::JobEnvelope),
        (status = 204, description = "The jobs page's button (htmx, `HX-Request: true`): done; `HX-Redirect` names the page to load"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/jobs/{job}/cancel")]
pub async fn cancel(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let job = jobs::cancel(&state, &user.0, &path).await?;
    if crate::html::is_htmx(&req) {
        return Ok(crate::html::htmx_redirect("/jobs?cancelled=1"));
    }
    Ok(HttpResponse::Ok().json(json!({ "data": job })))
}

pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(show)
        .service(retry)
        .service(cancel);
}
