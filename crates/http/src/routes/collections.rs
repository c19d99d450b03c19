//! `GET /collections` and `GET /collections/{slug}`.

use actix_web::{HttpResponse, get, web};
use serde_json::{Value, json};
use vellum_policy::CollectionAction;

use crate::actor::Actor;
use crate::error::ApiError;
use crate::resources::{collection_resource, collection_summary};

/// Only the collections the role may read; never an error for missing grants.
#[utoipa::path(
    operation_id = "listCollections",
    tag = "collections",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The collections the role may read (possibly none)", content_type = "application/json", body = crate::openapi::CollectionList),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/collections")]
pub async fn list(actor: Actor) -> HttpResponse {
    let data: Vec<Value> = actor
        .snapshot
        .collections
        .iter()
        .filter(|c| actor.role.may(&c.slug, CollectionAction::Read).allowed)
        .map(|c| collection_summary(c))
        .collect();
    HttpResponse::Ok().json(json!({ "data": data }))
}

#[utoipa::path(
    operation_id = "showCollection",
    tag = "collections",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug")),
    responses(
        (status = 200, description = "The collection and the fields the role may read", content_type = "application/json", body = crate::openapi::CollectionEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/collections/{slug}")]
pub async fn show(actor: Actor, slug: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let collection = actor.snapshot.collection(&slug).ok_or(ApiError::NotFound)?;
    let decision = actor.role.may(&collection.slug, CollectionAction::Read);
    if !decision.allowed {
        return Err(decision.into());
    }
    let fields = actor.role.field_policy(&collection.slug);
    Ok(HttpResponse::Ok().json(json!({ "data": collection_resource(collection, &fields) })))
}
