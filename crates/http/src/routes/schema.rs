//! The admin app's schema editor (issue 18): collections, fields, field order, field packs and
//! collection packs under `/collections…`. Each handler is its extractors, one call of
//! [`vellum_app::schema`], and a response.
//!
//! `GET /collections` and `POST /collections` are not in the OpenAPI description: its path key
//! `/collections` is the public API's (`GET /api/v1/collections`), and OpenAPI cannot describe
//! two path items under one key; docs/admin.md describes them.

use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::AppState;
use vellum_app::schema::{collections, fields, packs};

use super::schema_pages;
use crate::body::{is_form, read_form, read_input, read_json, read_list_input};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

/// The routes, literal segments (`/collections/packs/…`) before `/collections/{collection}…`.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(create_collection_pack)
        .service(list)
        .service(create)
        .service(show)
        .service(update)
        .service(destroy)
        .service(add_field)
        .service(update_field)
        .service(delete_field)
        .service(reorder_fields)
        .service(add_field_pack);
}

/// An answer with a body, or 204 when the use case answered none (a confirmed deletion).
fn dry_run_or_done(dry_run: Option<vellum_app::schema::ValueChanges>) -> HttpResponse {
    match dry_run {
        Some(dry_run) => HttpResponse::Ok().json(json!({ "data": dry_run })),
        None => HttpResponse::NoContent().finish(),
    }
}

#[utoipa::path(
    operation_id = "listCollectionDefinitions",
    tag = "admin: collections",
    security(("session" = [])),
    responses(
        (status = 200, description = "Every collection with its field and item counts (the collections page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::schema_admin::CollectionOverviewList),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/collections")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return schema_pages::collections_page(&state, &signed_in.0).await;
    }
    let list = collections::list(&state, &signed_in.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": list })))
}

#[utoipa::path(
    operation_id = "createCollection",
    tag = "admin: collections",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::CreateCollectionRequest),
    responses(
        (status = 201, description = "The new collection; `Location` names it", content_type = "application/json", body = crate::schemas::schema_admin::CollectionDefinitionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections")]
pub async fn create(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return schema_pages::create_collection(&state, &signed_in.0, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = collections::create(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Created()
        .insert_header(("location", format!("/collections/{}", created.slug)))
        .json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "showCollectionDefinition",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    responses(
        (status = 200, description = "The full definition", content_type = "application/json", body = crate::schemas::schema_admin::CollectionDefinitionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/collections/{collection}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return schema_pages::schema_page(&state, &signed_in.0, &collection, &req).await;
    }
    let found = collections::show(&state, &signed_in.0, &collection).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": found })))
}

#[utoipa::path(
    operation_id = "updateCollection",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::UpdateCollectionRequest),
    responses(
        (status = 200, description = "The collection as saved", content_type = "application/json", body = crate::schemas::schema_admin::CollectionDefinitionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}")]
pub async fn update(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let saved = collections::update(&state, &signed_in.0, &collection, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": saved })))
}

#[utoipa::path(
    operation_id = "deleteCollection",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), crate::schemas::schema_admin::ConfirmParams),
    responses(
        (status = 200, description = "Dry run: how many items would be deleted", content_type = "application/json", body = crate::schemas::schema_admin::ValueChangesEnvelope),
        (status = 204, description = "Deleted with its items, revisions, links and grants"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/collections/{collection}")]
pub async fn destroy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let dry_run =
        collections::delete(&state, &signed_in.0, &collection, req.query_string()).await?;
    if html::is_htmx(&req) {
        let deletion = schema_pages::Deletion {
            what: format!("the collection {collection}"),
            consequence: "Its {items}, their revisions, links and grants go with it.",
            action: format!("/collections/{collection}"),
            cancel: format!("/collections/{collection}"),
            then: "/collections".to_owned(),
        };
        return schema_pages::deleted(&signed_in.0, dry_run, deletion);
    }
    Ok(dry_run_or_done(dry_run))
}

#[utoipa::path(
    operation_id = "addField",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::FieldWrite),
    responses(
        (status = 201, description = "The collection with the field appended", content_type = "application/json", body = crate::schemas::schema_admin::CollectionDefinitionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/{collection}/fields")]
pub async fn add_field(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return schema_pages::add_field(&state, &signed_in.0, &collection, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let saved = fields::add(&state, &signed_in.0, &collection, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": saved })))
}

#[utoipa::path(
    operation_id = "updateField",
    tag = "admin: collections",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("field" = String, Path, description = "Field name"),
        crate::schemas::schema_admin::ConfirmParams,
    ),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::UpdateFieldRequest),
    responses(
        (status = 204, description = "The web UI's field form put by htmx was saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The field as saved, or (`dry_run`) how many stored values a type, translatability or relation target change would convert", content_type = "application/json", body = crate::schemas::schema_admin::FieldChangeEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}/fields/{field}")]
pub async fn update_field(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (collection, field) = path.into_inner();
    let query = req.query_string();
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        let at = (collection.as_str(), field.as_str());
        return schema_pages::update_field(&state, &signed_in.0, at, query, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let change = fields::update(&state, &signed_in.0, &collection, &field, query, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": change })))
}

#[utoipa::path(
    operation_id = "deleteField",
    tag = "admin: collections",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("field" = String, Path, description = "Field name"),
        crate::schemas::schema_admin::ConfirmParams,
    ),
    responses(
        (status = 200, description = "Dry run: how many items hold a value of the field", content_type = "application/json", body = crate::schemas::schema_admin::ValueChangesEnvelope),
        (status = 204, description = "The field and its values are removed"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/collections/{collection}/fields/{field}")]
pub async fn delete_field(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, field) = path.into_inner();
    let query = req.query_string();
    let dry_run = fields::delete(&state, &signed_in.0, &collection, &field, query).await?;
    if html::is_htmx(&req) {
        let deletion = schema_pages::Deletion {
            what: format!("the field {field}"),
            consequence: "The values {items} hold in it, its links and field rules go with it.",
            action: format!("/collections/{collection}/fields/{field}"),
            cancel: format!("/collections/{collection}"),
            then: format!("/collections/{collection}?deleted={field}"),
        };
        return schema_pages::deleted(&signed_in.0, dry_run, deletion);
    }
    Ok(dry_run_or_done(dry_run))
}

#[utoipa::path(
    operation_id = "reorderFields",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::FieldOrderRequest),
    responses(
        (status = 204, description = "The schema page's move buttons (htmx, a urlencoded `fields` list): saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The collection with its fields in the new order", content_type = "application/json", body = crate::schemas::schema_admin::CollectionDefinitionEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}/field-order")]
pub async fn reorder_fields(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_list_input(payload, state.config().json_limit, &req, "fields").await?;
    let saved = fields::reorder(&state, &signed_in.0, &collection, &body).await?;
    if html::is_htmx(&req) {
        let moved = vellum_web::paging::param(req.query_string(), "moved").unwrap_or_default();
        let to = vellum_web::links::href(
            &format!("/collections/{collection}"),
            &[("moved".to_owned(), moved)],
        );
        return Ok(html::htmx_redirect(&to));
    }
    Ok(HttpResponse::Ok().json(json!({ "data": saved })))
}

#[utoipa::path(
    operation_id = "addFieldPack",
    tag = "admin: collections",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("pack" = String, Path, description = "seo_inline, publishing, contact or social"),
    ),
    responses(
        (status = 200, description = "The fields added and those skipped (names the collection had)", content_type = "application/json", body = crate::schemas::schema_admin::FieldPackEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/{collection}/field-packs/{pack}")]
pub async fn add_field_pack(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, pack) = path.into_inner();
    let result = packs::add_field_pack(&state, &signed_in.0, &collection, &pack).await?;
    if !wants_json(&req) {
        return Ok(html::see_other(&format!("/collections/{collection}?pack={pack}")).finish());
    }
    Ok(HttpResponse::Ok().json(json!({ "data": result })))
}

#[utoipa::path(
    operation_id = "createCollectionPack",
    tag = "admin: collections",
    security(("session" = [])),
    params(("pack" = String, Path, description = "seo, categories, pages, articles or products")),
    request_body(content_type = "application/json", content = crate::schemas::schema_admin::CollectionPackRequest),
    responses(
        (status = 201, description = "The collection created, with the dependencies created or reused", content_type = "application/json", body = crate::schemas::schema_admin::CollectionPackEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/packs/{pack}")]
pub async fn create_collection_pack(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    pack: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_input(payload, state.config().json_limit, &req).await?;
    let result = packs::create_collection_pack(&state, &signed_in.0, &pack, &body).await?;
    if !wants_json(&req) {
        let to = format!("/collections/{}", result.collection.slug);
        return Ok(html::see_other(&to).finish());
    }
    Ok(HttpResponse::Created()
        .insert_header((
            "location",
            format!("/collections/{}", result.collection.slug),
        ))
        .json(json!({ "data": result })))
}
