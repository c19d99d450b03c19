//! The items endpoints: list, show, create, update, soft delete. Each handler is its
//! extractors, one call of [`vellum_app::items`], and a response.

use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, web};
use vellum_app::render::Rendered;
use vellum_app::{Actor, AppState, items};

use crate::body::read_body;
use crate::error::ApiError;

/// `{ "data": … }` around one rendered item.
#[derive(serde::Serialize)]
struct One<'a> {
    data: &'a Rendered,
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "listItems",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), crate::schemas::ItemListParams),
    responses(
        (status = 200, description = "A page of items", content_type = "application/json", body = crate::schemas::ItemPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/collections/{slug}/items")]
pub async fn list(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    slug: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = items::list(&state, &actor, &slug, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "showItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id"), crate::schemas::ItemParams),
    responses(
        (status = 200, description = "The item", content_type = "application/json", body = crate::schemas::ItemEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/collections/{slug}/items/{id}")]
pub async fn show(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    let data = items::show(&state, &actor, &slug, &id, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "createItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), crate::schemas::ItemParams),
    request_body(content_type = "application/json", content = crate::schemas::ItemWriteRequest),
    responses(
        (status = 201, description = "The created item, or only its id for a role that may not read it", content_type = "application/json", body = crate::schemas::ItemWriteEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::ItemInvalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/collections/{slug}/items")]
pub async fn create(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    slug: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_body(body, state.config().json_limit, &req);
    let data = items::create(&state, &actor, &slug, req.query_string(), body).await?;
    Ok(HttpResponse::Created().json(One { data: &data }))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "updateItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id"), crate::schemas::ItemParams),
    request_body(content_type = "application/json", content = crate::schemas::ItemWriteRequest),
    responses(
        (status = 200, description = "The updated item, or only its id for a role that may not read it", content_type = "application/json", body = crate::schemas::ItemWriteEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 408, response = crate::schemas::BodyTimeout),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::ItemInvalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[patch("/collections/{slug}/items/{id}")]
pub async fn update(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    let body = read_body(body, state.config().json_limit, &req);
    let data = items::update(&state, &actor, &slug, &id, req.query_string(), body).await?;
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "deleteItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[delete("/collections/{slug}/items/{id}")]
pub async fn destroy(
    state: web::Data<AppState>,
    actor: web::ReqData<Actor>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    items::delete(&state, &actor, &slug, &id).await?;
    Ok(HttpResponse::NoContent().finish())
}
