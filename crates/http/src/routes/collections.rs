//! `GET /collections` and `GET /collections/{slug}`.

use actix_web::{HttpResponse, get, web};
use serde_json::json;
use vellum_app::{Actor, collections};

use crate::error::ApiError;

/// Only the collections the role may read; never an error for missing grants.
#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "listCollections",
    tag = "collections",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The collections the role may read (possibly none)", content_type = "application/json", body = crate::schemas::CollectionList),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/collections")]
pub async fn list(actor: web::ReqData<Actor>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "data": collections::list(&actor) }))
}

#[utoipa::path(
    context_path = "/api/v1",
    operation_id = "showCollection",
    tag = "collections",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug")),
    responses(
        (status = 200, description = "The collection and the fields the role may read", content_type = "application/json", body = crate::schemas::CollectionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::Forbidden),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[get("/collections/{slug}")]
pub async fn show(
    actor: web::ReqData<Actor>,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let collection = collections::show(&actor, &slug)?;
    Ok(HttpResponse::Ok().json(json!({ "data": collection })))
}
