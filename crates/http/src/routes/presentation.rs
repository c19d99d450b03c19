//! The admin app's collection presentation, relation picker and singleton upsert:
//! `PUT /collections/{collection}/list-columns`, `PUT /collections/{collection}/form-layout`,
//! `GET /collections/{collection}/items/options` and
//! `PUT /collections/{collection}/singleton-content`. Each handler is its extractors, one call of
//! `vellum_app`, and a response; [`register`] adds them (before the items routes, so the literal
//! `/items/options` wins over `/items/{item}`).

use actix_web::{HttpRequest, HttpResponse, get, put, web};
use serde_json::json;
use vellum_app::{AppState, options, presentation, singleton};

use crate::body::{read_json, read_list_input};
use crate::error::ApiError;
use crate::html;
use crate::session::SignedIn;

/// `{ "data": … }` around the rendered item (kept as rendered: no second parse).
#[derive(serde::Serialize)]
struct One<'a> {
    data: &'a vellum_app::render::Rendered,
}

/// Adds this module's routes to the admin scope.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(set_list_columns)
        .service(set_form_layout)
        .service(item_options)
        .service(singleton_content);
}

#[utoipa::path(
    operation_id = "setListColumns",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::presentation::ListColumnsRequest),
    responses(
        (status = 204, description = "The items page's column picker (htmx, a urlencoded `columns` list): saved; `HX-Redirect` names the page to load"),
        (status = 200, description = "The list's columns as stored", content_type = "application/json", body = crate::schemas::presentation::ListColumnsEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}/list-columns")]
pub async fn set_list_columns(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_list_input(payload, state.config().json_limit, &req, "columns").await?;
    let stored = presentation::set_list_columns(&state, &signed_in.0, &collection, &body).await?;
    if html::is_htmx(&req) {
        return Ok(html::htmx_redirect(&format!(
            "/collections/{collection}/items?saved_columns=1"
        )));
    }
    Ok(HttpResponse::Ok().json(json!({ "data": stored })))
}

#[utoipa::path(
    operation_id = "setFormLayout",
    tag = "admin: collections",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::presentation::FormLayoutRequest),
    responses(
        (status = 200, description = "The form layout as stored", content_type = "application/json", body = crate::schemas::presentation::FormLayoutEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}/form-layout")]
pub async fn set_form_layout(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let stored = presentation::set_form_layout(&state, &signed_in.0, &collection, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": stored })))
}

#[utoipa::path(
    operation_id = "itemOptions",
    tag = "admin: collections",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        crate::schemas::presentation::OptionsParams,
    ),
    responses(
        (status = 200, description = "A page of the items the relation field can point at, with their labels", content_type = "application/json", body = crate::schemas::presentation::ItemOptionPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items/options")]
pub async fn item_options(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = options::options(&state, &signed_in.0, &collection, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "upsertSingletonContent",
    tag = "admin: collections",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Slug of a singleton collection"),
        crate::schemas::ItemParams,
    ),
    request_body(content_type = "application/json", content = crate::schemas::ItemWriteRequest),
    responses(
        (status = 200, description = "The singleton's item, updated", content_type = "application/json", body = crate::schemas::ItemEnvelope),
        (status = 201, description = "The singleton's item, created", content_type = "application/json", body = crate::schemas::ItemEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::ItemInvalid),
    )
)]
#[put("/collections/{collection}/singleton-content")]
pub async fn singleton_content(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let query = req.query_string();
    let done = singleton::upsert(&state, &signed_in.0, &collection, query, &body).await?;
    let mut res = if done.created {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(res.json(One { data: &done.item }))
}
