//! The admin app's collection items: `/collections/{collection}/items` (list, create),
//! `…/items/export`, `…/items/new`, `…/items/bulk`, `…/items/{item}` (show, update, delete),
//! `…/restore`, `…/force`, `…/revisions`, `…/revisions/{revision}/restore` and
//! `…/preview-as-role`. Each handler is its extractors, one call of
//! [`vellum_app::admin_items`], and a response.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use futures_util::TryStreamExt as _;
use serde_json::json;
use vellum_app::render::Rendered;
use vellum_app::{AppState, admin_items};

use super::item_pages;
use crate::body::{is_form, read_body, read_form, read_json};
use crate::error::ApiError;
use crate::html;
use crate::session::{SignedIn, wants_json};

/// Registers the routes, literal segments (`export`, `new`, `bulk`) before `{item}`.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(export)
        .service(new_form)
        .service(create)
        .service(bulk)
        .service(show)
        .service(update)
        .service(delete_item)
        .service(restore)
        .service(force_delete)
        .service(revisions)
        .service(restore_revision)
        .service(preview);
}

/// `{ "data": … }` around one rendered item.
#[derive(serde::Serialize)]
struct One<'a> {
    data: &'a Rendered,
}

/// `{ "data": … }` written straight from the resource (a rendered item inside keeps its bytes).
#[derive(serde::Serialize)]
struct Data<T> {
    data: T,
}

#[utoipa::path(
    operation_id = "adminListItems",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), crate::schemas::admin_items::AdminItemListParams),
    responses(
        (status = 200, description = "A page of items (or of the trash)", content_type = "application/json", body = crate::schemas::ItemPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return item_pages::list(&state, &signed_in.0, &collection, &req).await;
    }
    let page = admin_items::list(&state, &signed_in.0, &collection, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "adminExportItems",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), crate::schemas::admin_items::AdminItemExportParams),
    responses(
        (status = 200, description = "The matching items (at most 5,000), streamed as an attachment",
            content((String = "text/csv"), (Vec<crate::schemas::CollectionItemResource> = "application/json")),
            headers(
                ("X-Export-Rows" = u64, description = "Rows in the file: the matches, at most 5,000"),
                ("X-Export-Total-Matched" = u64, description = "Every item the query matched"),
                ("X-Export-Truncated" = bool, description = "`true` when matches were left out"),
                ("Content-Disposition" = String, description = "`attachment; filename=\"<collection>.<csv|json>\"`"),
            )),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items/export")]
pub async fn export(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let export = admin_items::export(&state, &signed_in.0, &collection, req.query_string()).await?;
    let disposition = format!("attachment; filename=\"{}\"", export.filename);
    Ok(HttpResponse::Ok()
        .content_type(export.format.content_type())
        .insert_header((header::CONTENT_DISPOSITION, disposition))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Export-Rows", export.rows.to_string()))
        .insert_header(("X-Export-Total-Matched", export.total_matched.to_string()))
        .insert_header(("X-Export-Truncated", export.truncated.to_string()))
        .streaming(export.body.map_err(ApiError::from)))
}

#[utoipa::path(
    operation_id = "adminItemCreateForm",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    responses(
        (status = 200, description = "What the create form needs", content_type = "application/json", body = crate::schemas::admin_items::ItemFormEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/collections/{collection}/items/new")]
pub async fn new_form(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !wants_json(&req) {
        return item_pages::new_page(&state, &signed_in.0, &collection).await;
    }
    let form = admin_items::new_form(&state, &signed_in.0, &collection).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": form })))
}

#[utoipa::path(
    operation_id = "adminCreateItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), crate::schemas::ItemParams),
    request_body(content_type = "application/json", content = crate::schemas::ItemWriteRequest),
    responses(
        (status = 201, description = "The new item", content_type = "application/json", body = crate::schemas::admin_items::AdminItemWritten),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::ItemInvalid),
    )
)]
#[post("/collections/{collection}/items")]
pub async fn create(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return item_pages::create(&state, &signed_in.0, &collection, &form).await;
    }
    let body = read_body(payload, state.config().json_limit, &req);
    let query = req.query_string();
    let data = admin_items::create(&state, &signed_in.0, &collection, query, body).await?;
    Ok(HttpResponse::Created().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "adminBulkItems",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::admin_items::BulkItemsRequest),
    responses(
        (status = 200, description = "Which ids the action applied to, and why each other did not", content_type = "application/json", body = crate::schemas::admin_items::BulkItemsEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/{collection}/items/bulk")]
pub async fn bulk(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    collection: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return item_pages::bulk(&state, &signed_in.0, &collection, &form).await;
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let outcome = admin_items::bulk(&state, &signed_in.0, &collection, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": outcome })))
}

#[utoipa::path(
    operation_id = "adminShowItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id"), crate::schemas::ItemParams),
    responses(
        (status = 200, description = "The item, live or in the trash", content_type = "application/json", body = crate::schemas::admin_items::AdminItemEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items/{item}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    if !wants_json(&req) {
        return item_pages::edit_page(&state, &signed_in.0, &collection, &item, &req).await;
    }
    let shown =
        admin_items::show(&state, &signed_in.0, &collection, &item, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(shown))
}

#[utoipa::path(
    operation_id = "adminUpdateItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id"), crate::schemas::ItemParams),
    request_body(content_type = "application/json", content = crate::schemas::ItemWriteRequest),
    responses(
        (status = 200, description = "The item as updated (a new revision is recorded)", content_type = "application/json", body = crate::schemas::admin_items::AdminItemWritten),
        (status = 204, description = "The web UI's form put by htmx (`HX-Request: true`, a urlencoded body) was saved; `HX-Redirect` names the page to load"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::ItemInvalid),
    )
)]
#[put("/collections/{collection}/items/{item}")]
pub async fn update(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    if is_form(&req) {
        let form = read_form(payload, state.config().json_limit, &req).await?;
        return item_pages::update(&state, &signed_in.0, &collection, &item, &form).await;
    }
    let body = read_body(payload, state.config().json_limit, &req);
    let query = req.query_string();
    let data = admin_items::update(&state, &signed_in.0, &collection, &item, query, body).await?;
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "adminDeleteItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/collections/{collection}/items/{item}")]
pub async fn delete_item(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    admin_items::delete(&state, &signed_in.0, &collection, &item).await?;
    if html::is_htmx(&req) {
        let to =
            format!("/collections/{collection}/items?bulk_action=delete&bulk_done=1&bulk_failed=0");
        return Ok(html::htmx_redirect(&to));
    }
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "adminRestoreItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id")),
    responses(
        (status = 200, description = "The restored item", content_type = "application/json", body = crate::schemas::admin_items::AdminItemEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/{collection}/items/{item}/restore")]
pub async fn restore(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    let restored = admin_items::restore(&state, &signed_in.0, &collection, &item).await?;
    Ok(HttpResponse::Ok().json(restored))
}

#[utoipa::path(
    operation_id = "adminForceDeleteItem",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id")),
    responses(
        (status = 204, description = "Deleted for good, with its revisions, links and unique claims"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/collections/{collection}/items/{item}/force")]
pub async fn force_delete(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    admin_items::force_delete(&state, &signed_in.0, &collection, &item).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "adminListItemRevisions",
    tag = "admin: items",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("item" = i64, Path, description = "Item id"),
        ("page" = Option<i64>, Query, minimum = 1, description = "1-based page"),
        ("per_page" = Option<i64>, Query, minimum = 1, maximum = 100),
    ),
    responses(
        (status = 200, description = "A page of revisions, newest first (the history page, each revision compared with the one before, for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::admin_items::ItemRevisionPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items/{item}/revisions")]
pub async fn revisions(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    if !wants_json(&req) {
        return item_pages::revisions_page(&state, &signed_in.0, &collection, &item, &req).await;
    }
    let query = req.query_string();
    let page = admin_items::revisions(&state, &signed_in.0, &collection, &item, query).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "adminRestoreItemRevision",
    tag = "admin: items",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("item" = i64, Path, description = "Item id"),
        ("revision" = i64, Path, description = "Revision id (one of this item's)"),
        crate::schemas::ItemParams,
    ),
    responses(
        (status = 200, description = "The item with the revision's values, written as a new update (a new revision); a client that does not prefer JSON gets 303 to the history page", content_type = "application/json", body = crate::schemas::admin_items::AdminItemWritten),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::ItemInvalid),
    )
)]
#[post("/collections/{collection}/items/{item}/revisions/{revision}/restore")]
pub async fn restore_revision(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, item, revision) = path.into_inner();
    let query = req.query_string();
    let data =
        admin_items::restore_revision(&state, &signed_in.0, &collection, &item, &revision, query)
            .await?;
    if !wants_json(&req) {
        let to = format!("/collections/{collection}/items/{item}/revisions?restored=1");
        return Ok(html::see_other(&to).finish());
    }
    Ok(HttpResponse::Ok().json(One { data: &data }))
}

#[utoipa::path(
    operation_id = "adminPreviewItemAsRole",
    tag = "admin: items",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug"), ("item" = i64, Path, description = "Item id"), crate::schemas::admin_items::PreviewParams),
    responses(
        (status = 200, description = "The item as the role's public API renders it, and why (the preview page, with a role picker, for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::admin_items::ItemPreviewEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/collections/{collection}/items/{item}/preview-as-role")]
pub async fn preview(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    if !wants_json(&req) {
        return item_pages::preview_page(&state, &signed_in.0, &collection, &item, &req).await;
    }
    let query = req.query_string();
    let preview = admin_items::preview(&state, &signed_in.0, &collection, &item, query).await?;
    Ok(HttpResponse::Ok().json(Data { data: preview }))
}
