//! API keys: `/settings/api-keys…`. Each handler is its extractors, one call of
//! [`vellum_app::api_keys`], and a response. `{apiKey}` is the key's id.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::api_keys;

use super::settings_pages;
use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "listApiKeys",
    tag = "admin: API keys",
    security(("session" = [])),
    params(crate::schemas::access::PageParams),
    responses(
        (status = 200, description = "A page of keys in creation order, revoked ones included; never a secret (the API keys page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::access::ApiKeyPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/settings/api-keys")]
pub async fn list(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return settings_pages::keys_page(&state, &user.0, &req).await;
    }
    let page = api_keys::list(&state, &user.0, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "createApiKey",
    tag = "admin: API keys",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::access::NewApiKey),
    responses(
        (status = 201, description = "The key and its secret, shown this once", content_type = "application/json", body = crate::schemas::access::CreatedApiKeyEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/settings/api-keys")]
pub async fn store(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return settings_pages::create_key(&state, &user.0, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = api_keys::create(&state, &user.0, &body).await?;
    Ok(HttpResponse::Created()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "revokeApiKey",
    tag = "admin: API keys",
    security(("session" = [])),
    params(("apiKey" = i64, Path, description = "The key's id")),
    responses(
        (status = 204, description = "Revoked: refused (401) from now on, on every replica"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/settings/api-keys/{apiKey}")]
pub async fn revoke(
    state: web::Data<AppState>,
    user: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    api_keys::revoke(&state, &user.0, &path).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect("/settings/api-keys?revoked=1"));
    }
    Ok(HttpResponse::NoContent().finish())
}
