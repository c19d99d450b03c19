//! The items endpoints: list, show, create, update, soft delete. Each handler resolves the
//! collection from the snapshot, asks the policy, calls the domain and storage crates, and
//! renders; every write bumps the cache epoch.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, web};
use serde_json::{Map, Value, json};
use vellum_domain::{LocaleCode, WriteContext, WriteMode, prepare_write};
use vellum_policy::CollectionAction;
use vellum_storage::items::{self, FilterScope, ListItems};
use vellum_storage::model::Collection;

use crate::actor::Actor;
use crate::error::ApiError;
use crate::query::{parse_list, parse_read};
use crate::render::{Rendered, render_item, render_items, render_written_item};
use crate::state::AppState;

/// A list's envelope, written around items already rendered to text.
#[derive(serde::Serialize)]
struct Page<'a> {
    data: &'a [Rendered],
    meta: Value,
}

/// `{ "data": … }` around one rendered item.
#[derive(serde::Serialize)]
struct One<'a> {
    data: &'a Rendered,
}

fn collection_for(actor: &Actor, slug: &str) -> Result<Arc<Collection>, ApiError> {
    actor
        .snapshot
        .collection(slug)
        .cloned()
        .ok_or(ApiError::NotFound)
}

fn require(
    actor: &Actor,
    collection: &Collection,
    action: CollectionAction,
) -> Result<(), ApiError> {
    let decision = actor.role.may(&collection.slug, action);
    if decision.allowed {
        Ok(())
    } else {
        Err(decision.into())
    }
}

fn scope<'a>(
    actor: &'a Actor,
    collection: &'a Collection,
    locale: &'a LocaleCode,
) -> FilterScope<'a> {
    FilterScope {
        schema: collection.schema(),
        locales: &actor.snapshot.locales,
        locale,
    }
}

#[utoipa::path(
    operation_id = "listItems",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), crate::openapi::ItemListParams),
    responses(
        (status = 200, description = "A page of items", content_type = "application/json", body = crate::openapi::ItemPage),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/collections/{slug}/items")]
pub async fn list(
    state: web::Data<AppState>,
    actor: Actor,
    slug: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let collection = collection_for(&actor, &slug)?;
    require(&actor, &collection, CollectionAction::Read)?;
    let fields = actor.role.field_policy(&collection.slug);
    let query = parse_list(
        req.query_string(),
        &actor.snapshot.locales,
        &collection,
        &fields,
    )?;
    let role_filter = actor.role.item_filter(&collection.slug);
    // The total depends on the collection, the query's filter and the locale it compares
    // translatable fields in, and the role's filter (always compared in the default locale);
    // sort and page do not change it. The key is a fixed-size digest of them (review R3).
    let total_key = crate::state::TotalKey::new(
        collection.id,
        &query.read.locale,
        &query.filter,
        role_filter,
    );
    let known_total = actor.snapshot.total(&total_key);
    let page = items::list_items_with_total(
        state.db(),
        &collection,
        &scope(&actor, &collection, &query.read.locale),
        &ListItems {
            filter: &query.filter,
            sort: &query.sort,
            page: query.page,
            per_page: query.per_page,
        },
        role_filter,
        known_total,
    )
    .await?;
    if known_total.is_none() {
        actor.snapshot.remember_total(total_key, page.total);
    }
    let data = render_items(&state, &actor, &collection, page.items, &query.read).await?;
    Ok(HttpResponse::Ok().json(Page {
        data: &data,
        meta: json!({
            "current_page": page.current_page,
            "last_page": page.last_page,
            "per_page": page.per_page,
            "total": page.total,
        }),
    }))
}

#[utoipa::path(
    operation_id = "showItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id"), crate::openapi::ItemParams),
    responses(
        (status = 200, description = "The item", content_type = "application/json", body = crate::openapi::ItemEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/collections/{slug}/items/{id}")]
pub async fn show(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    let collection = collection_for(&actor, &slug)?;
    require(&actor, &collection, CollectionAction::Read)?;
    let id = parse_id(&id)?;
    let query = parse_read(req.query_string(), &actor.snapshot.locales)?;
    let item = items::get_item(
        state.db(),
        &collection,
        &scope(&actor, &collection, &query.locale),
        id,
        actor.role.item_filter(&collection.slug),
    )
    .await?
    .ok_or(ApiError::NotFound)?;
    let data = render_item(&state, &actor, &collection, item, &query).await?;
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "createItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), crate::openapi::ItemParams),
    request_body(content_type = "application/json", content = crate::openapi::ItemWriteRequest),
    responses(
        (status = 201, description = "The created item, or only its id for a role that may not read it", content_type = "application/json", body = crate::openapi::ItemWriteEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 408, response = crate::openapi::BodyTimeout),
        (status = 413, response = crate::openapi::TooLarge),
        (status = 422, response = crate::openapi::ItemInvalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[post("/collections/{slug}/items")]
pub async fn create(
    state: web::Data<AppState>,
    actor: Actor,
    slug: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let collection = collection_for(&actor, &slug)?;
    require(&actor, &collection, CollectionAction::Create)?;
    let query = parse_read(req.query_string(), &actor.snapshot.locales)?;
    let data = body_data(&read_body(body, state.config().json_limit, &req).await?)?;
    let grant = actor.role.authorize_item_write(
        &collection.slug,
        CollectionAction::Create,
        data.keys().map(String::as_str),
    )?;
    let ctx = write_context(&actor, &query.locale);
    let write = prepare_write(collection.schema(), &data, WriteMode::Create, &ctx)
        .map_err(ApiError::Invalid)?;
    let item = items::create_item(
        state.db(),
        &collection,
        &scope(&actor, &collection, &query.locale),
        &grant,
        &write,
        actor.user_id,
    )
    .await?;
    state.content_changed().await;
    let data = render_written_item(&state, &actor, &collection, item, &query).await?;
    Ok(HttpResponse::Created().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "updateItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id"), crate::openapi::ItemParams),
    request_body(content_type = "application/json", content = crate::openapi::ItemWriteRequest),
    responses(
        (status = 200, description = "The updated item, or only its id for a role that may not read it", content_type = "application/json", body = crate::openapi::ItemWriteEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 408, response = crate::openapi::BodyTimeout),
        (status = 413, response = crate::openapi::TooLarge),
        (status = 422, response = crate::openapi::ItemInvalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[patch("/collections/{slug}/items/{id}")]
pub async fn update(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    let collection = collection_for(&actor, &slug)?;
    require(&actor, &collection, CollectionAction::Update)?;
    let id = parse_id(&id)?;
    let query = parse_read(req.query_string(), &actor.snapshot.locales)?;
    let data = body_data(&read_body(body, state.config().json_limit, &req).await?)?;
    let grant = actor.role.authorize_item_write(
        &collection.slug,
        CollectionAction::Update,
        data.keys().map(String::as_str),
    )?;
    let ctx = write_context(&actor, &query.locale);
    let schema = collection.schema();
    let item = items::update_item(
        state.db(),
        &collection,
        &scope(&actor, &collection, &query.locale),
        &grant,
        id,
        actor.user_id,
        |existing| {
            prepare_write(
                schema,
                &data,
                WriteMode::Update {
                    existing: &existing.data,
                },
                &ctx,
            )
        },
    )
    .await?;
    state.content_changed().await;
    let data = render_written_item(&state, &actor, &collection, item, &query).await?;
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "deleteItem",
    tag = "items",
    security((), ("bearer" = [])),
    params(("slug" = String, Path, description = "Collection slug"), ("id" = i64, Path, description = "Item id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[delete("/collections/{slug}/items/{id}")]
pub async fn destroy(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (slug, id) = path.into_inner();
    let collection = collection_for(&actor, &slug)?;
    require(&actor, &collection, CollectionAction::Delete)?;
    let id = parse_id(&id)?;
    let grant = actor.role.authorize_item_write(
        &collection.slug,
        CollectionAction::Delete,
        std::iter::empty(),
    )?;
    let locale = actor.snapshot.locales.default_locale().clone();
    items::soft_delete_item(
        state.db(),
        &collection,
        &scope(&actor, &collection, &locale),
        &grant,
        id,
    )
    .await?;
    state.content_changed().await;
    Ok(HttpResponse::NoContent().finish())
}

/// What the domain crate needs to normalize a write in the request's locale.
fn write_context<'a>(actor: &'a Actor, locale: &'a LocaleCode) -> WriteContext<'a> {
    WriteContext {
        locales: &actor.snapshot.locales,
        locale,
        hash_key: &actor.snapshot.hash_key,
    }
}

/// An `{id}` path segment: anything but a positive integer names no item (404).
fn parse_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(ApiError::NotFound)
}

/// Reads a request body up to `limit` bytes; a larger one (by `Content-Length` or as it arrives)
/// is refused with 413 before it is buffered. Read after the grant check, so a role that may not
/// write gets 403 whatever it sends.
pub(crate) async fn read_body(
    mut payload: web::Payload,
    limit: usize,
    req: &HttpRequest,
) -> Result<web::BytesMut, ApiError> {
    use futures_util::StreamExt as _;
    let declared = req
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::PayloadTooLarge);
    }
    let mut body = web::BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::invalid("data", "The request body could not be read."))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The `data` object of a create or update body.
fn body_data(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let invalid = || ApiError::invalid("data", "The data field is required and must be an object.");
    let value: Value = serde_json::from_slice(body).map_err(|_| {
        ApiError::invalid(
            "data",
            "The request body must be a JSON object with a data object.",
        )
    })?;
    if crate::nul::in_json(&value) {
        return Err(ApiError::invalid(
            "data",
            "The data must not contain NUL characters.",
        ));
    }
    match value {
        Value::Object(mut obj) => match obj.remove("data") {
            Some(Value::Object(data)) => Ok(data),
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}
