//! Webhooks: `/settings/webhooks…` (`can-manage-project-settings`). Each handler is its
//! extractors, one call of [`vellum_app::webhooks`], and a response.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::webhooks;

use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::session::SignedIn;

#[utoipa::path(
    operation_id = "listWebhooks",
    tag = "admin: webhooks",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every webhook, in creation order; never a secret", content_type = "application/json", body = crate::schemas::jobs::WebhookList),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/settings/webhooks")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !crate::session::wants_json(&req) {
        return super::job_pages::webhooks_page(&state, &user.0, &req).await;
    }
    let hooks = webhooks::list(&state, &user.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": hooks })))
}

#[utoipa::path(
    operation_id = "createWebhook",
    tag = "admin: webhooks",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::jobs::WebhookInput),
    responses(
        (status = 201, description = "The webhook, with its secret", content_type = "application/json", body = crate::schemas::jobs::WebhookEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/webhooks")]
pub async fn store(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return super::job_pages::create_webhook(&state, &user.0, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = webhooks::create(&state, &user.0, &body).await?;
    Ok(HttpResponse::Created()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "showWebhook",
    tag = "admin: webhooks",
    security(("session" = [])),
    params(("webhook" = i64, Path, description = "The webhook's id")),
    responses(
        (status = 200, description = "The webhook, with its secret (the webhook's page with its delivery log for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::jobs::WebhookEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/settings/webhooks/{webhook}")]
pub async fn show(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !crate::session::wants_json(&req) {
        return super::job_pages::webhook_page(&state, &user.0, &path, &req).await;
    }
    let hook = webhooks::show(&state, &user.0, &path).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "data": hook })))
}

#[utoipa::path(
    operation_id = "updateWebhook",
    tag = "admin: webhooks",
    security(("session" = [])),
    params(("webhook" = i64, Path, description = "The webhook's id")),
    request_body(content_type = "application/json", content = crate::schemas::jobs::WebhookInput),
    responses(
        (status = 200, description = "The webhook as changed (fields not named keep their values)", content_type = "application/json", body = crate::schemas::jobs::WebhookEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/settings/webhooks/{webhook}")]
pub async fn update(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let hook = webhooks::update(&state, &user.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": hook })))
}

#[utoipa::path(
    operation_id = "deleteWebhook",
    tag = "admin: webhooks",
    security(("session" = [])),
    params(("webhook" = i64, Path, description = "The webhook's id")),
    responses(
        (status = 204, description = "Deleted, with its delivery log; its queued deliveries are cancelled"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/settings/webhooks/{webhook}")]
pub async fn destroy(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    webhooks::delete(&state, &user.0, &path).await?;
    if crate::html::is_htmx(&req) {
        return Ok(crate::html::htmx_redirect("/settings/webhooks?deleted=1"));
    }
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "listWebhookDeliveries",
    tag = "admin: webhooks",
    security(("session" = [])),
    params(("webhook" = i64, Path, description = "The webhook's id"), crate::schemas::access::PageParams),
    responses(
        (status = 200, description = "The delivery log, newest first (the newest 500 attempts are kept)", content_type = "application/json", body = crate::schemas::jobs::DeliveryPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/settings/webhooks/{webhook}/deliveries")]
pub async fn deliveries(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = webhooks::deliveries(&state, &user.0, &path, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "replayWebhookDelivery",
    tag = "admin: webhooks",
    security(("session" = [])),
    params(
        ("webhook" = i64, Path, description = "The webhook's id"),
        ("delivery" = i64, Path, description = "The logged delivery's id"),
    ),
    responses(
        (status = 202, description = "Queued again: the same webhook-id and body, a fresh timestamp", content_type = "application/json", body = crate::schemas::jobs::ReplayedEnvelope),
        (status = 204, description = "The webhook page's Replay button (htmx, `HX-Request: true`): queued; `HX-Redirect` names the page to load"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/webhooks/{webhook}/deliveries/{delivery}/replay")]
pub async fn replay(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (webhook, delivery) = path.into_inner();
    let replayed = webhooks::replay(&state, &user.0, &webhook, &delivery).await?;
    if crate::html::is_htmx(&req) {
        let to = format!("/settings/webhooks/{webhook}?replayed=1");
        return Ok(crate::html::htmx_redirect(&to));
    }
    Ok(HttpResponse::Accepted().json(json!({ "data": replayed })))
}

pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(store)
        .service(deliveries)
        .service(replay)
        .service(show)
        .service(update)
        .service(destroy);
}
