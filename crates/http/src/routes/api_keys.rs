//! API keys: `/settings/api-keys…`. Each handler is its extractors, one call of
//! [`vellum_app::api_keys`], and a response. `{apiKey}` is the key's id.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::api_keys;

use crate::body::read_json;
use crate::error::ApiError;
use crate::session::SignedIn;

#[utoipa::path(
    operation_id = "listApiKeys",
    tag = "admin: API keys",
    security(("session" = [])),
    params(crate::schemas::access::PageParams),
    responses(
        (status = 200, description = "A page of keys in creation order, revoked ones included; never a secret", content_type = "application/json", body = crate::schemas::access::ApiKeyPage),
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
) -> Result<HttpResponse, ApiError> {
    api_keys::revoke(&state, &user.0, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}
