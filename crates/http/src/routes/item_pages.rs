//! The web UI's side of the items admin: the list page (with the filter builder's redirect to
//! the canonical URL) and the bulk form (with its confirmation before a deletion for good).
//! The JSON routes in [`super::admin_items`] call these for a browser.

use std::future::ready;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};
use vellum_app::admin_items::{ItemScreen, MAX_BULK_IDS};
use vellum_app::principal::Principal;
use vellum_app::{AppState, admin_items};
use vellum_web::forms::FieldErrors;
use vellum_web::item_input::item_body;
use vellum_web::links::{add_filter, changed, href};
use vellum_web::pages::confirm::ConfirmPage;
use vellum_web::pages::item::ItemPage;
use vellum_web::pages::items::ItemsPage;
use vellum_web::pages::preview::PreviewPage;
use vellum_web::pages::render;
use vellum_web::pages::revisions::{self, RevisionsPage};

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The items list page; a filter builder's submission is first sent to the list's canonical URL
/// (`filter[field][op]=value`), so the address bar holds a URL that can be shared.
pub(super) async fn list(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if let Some(to) = add_filter(req.path(), req.query_string()) {
        return Ok(html::see_other(&to).finish());
    }
    let screen = admin_items::list_screen(state, principal, slug, req.query_string()).await?;
    let view = ItemsPage::new(principal, screen, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// The list's bulk form: `action`, the checked `ids`, and `back` (the list's URL, kept only when
/// it is this collection's list). A deletion for good is confirmed on a page of its own first.
/// Ends with a 303 to the list, whose URL says what was done.
pub(super) async fn bulk(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let list = format!("/collections/{slug}/items");
    let get = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let back = get("back")
        .filter(|b| *b == list || b.starts_with(&format!("{list}?")))
        .unwrap_or(&list);
    let action = get("action").unwrap_or_default();
    let ids: Vec<i64> = form
        .iter()
        .filter(|(k, _)| k == "ids")
        .filter_map(|(_, v)| v.parse().ok())
        .collect();
    if ids.is_empty() {
        return Ok(html::see_other(&done(back, action, 0, 0)).finish());
    }
    // A batch over the limit goes straight to the use case, which refuses it (422): no
    // confirmation page repeats what it would not do.
    if action == "force_delete" && get("confirm") != Some("yes") && ids.len() <= MAX_BULK_IDS {
        return confirm_force_delete(principal, &list, back, &ids);
    }
    let body = json!({ "action": action, "ids": ids });
    let outcome = admin_items::bulk(state, principal, slug, &body).await?;
    let to = done(back, action, outcome.succeeded.len(), outcome.failed.len());
    Ok(html::see_other(&to).finish())
}

/// The form of a new item (`GET …/items/new`).
pub(super) async fn new_page(
    state: &AppState,
    principal: &Principal,
    slug: &str,
) -> Result<HttpResponse, ApiError> {
    let screen = admin_items::new_screen(state, principal, slug).await?;
    let view = ItemPage::new(principal, screen, &FieldErrors::default(), None, false);
    html::page(StatusCode::OK, render(&view))
}

/// The form of an item (`GET …/items/{item}`), with "Saved." after `?saved=1`.
pub(super) async fn edit_page(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let screen = admin_items::edit_screen(state, principal, slug, id).await?;
    let saved = vellum_web::paging::param(req.query_string(), "saved").is_some();
    let view = ItemPage::new(principal, screen, &FieldErrors::default(), None, saved);
    html::page(StatusCode::OK, render(&view))
}

/// The new item form posted: 303 to the new item, or the form again with its problems.
pub(super) async fn create(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let screen = admin_items::new_screen(state, principal, slug).await?;
    let body = item_body(&screen.fields, &screen.locales.enabled, form);
    let bytes = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    let written =
        admin_items::create(state, principal, slug, "", ready(Ok::<_, ApiError>(bytes))).await;
    match written {
        Ok(rendered) => {
            let id = serde_json::from_str::<Value>(rendered.get())
                .ok()
                .and_then(|item| item.get("id").and_then(Value::as_i64))
                .unwrap_or_default();
            let to = format!("/collections/{slug}/items/{id}?saved=1");
            Ok(html::see_other(&to).finish())
        }
        Err(err) => refused(principal, screen, &body, err),
    }
}

/// The item form put by htmx (or posted as a form by any client): on success the browser is
/// sent to the item again (`HX-Redirect`), else the form comes back with its problems.
pub(super) async fn update(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let screen = admin_items::edit_screen(state, principal, slug, id).await?;
    let body = item_body(&screen.fields, &screen.locales.enabled, form);
    let bytes = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    let written = admin_items::update(
        state,
        principal,
        slug,
        id,
        "",
        ready(Ok::<_, ApiError>(bytes)),
    )
    .await;
    match written {
        Ok(_) => Ok(html::htmx_redirect(&format!(
            "/collections/{slug}/items/{id}?saved=1"
        ))),
        Err(err) => refused(principal, screen, &body, err),
    }
}

/// An item's history: its newest revisions, each compared with the one before.
pub(super) async fn revisions_page(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = format!("per_page={}", revisions::SHOWN);
    let page = admin_items::revisions(state, principal, slug, id, &query).await?;
    let collection = vellum_app::schema::collections::show(state, principal, slug).await?;
    let item_id = id.parse().unwrap_or_default();
    let restored = vellum_web::paging::param(req.query_string(), "restored").is_some();
    let view = RevisionsPage::new(principal, collection.name, slug, item_id, &page, restored);
    html::page(StatusCode::OK, render(&view))
}

/// An item as a role reads it; the role picker alone until a role is chosen.
pub(super) async fn preview_page(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let roles = admin_items::preview_roles(state, principal).await?;
    let chosen = vellum_web::paging::param(req.query_string(), "role").is_some();
    let preview = if chosen {
        Some(admin_items::preview(state, principal, slug, id, req.query_string()).await?)
    } else {
        None
    };
    let collection = vellum_app::schema::collections::show(state, principal, slug).await?;
    let item_href = format!("/collections/{slug}/items/{id}");
    let item_id = id.parse().unwrap_or_default();
    let view = PreviewPage::new(
        principal,
        collection.name,
        item_href,
        item_id,
        roles,
        preview,
    );
    html::page(StatusCode::OK, render(&view))
}

/// The form again after a refused write: each problem next to its field, the values as posted.
fn refused(
    principal: &Principal,
    screen: ItemScreen,
    body: &Value,
    err: ApiError,
) -> Result<HttpResponse, ApiError> {
    let refusal = FormRefusal::of(err)?;
    let view = ItemPage::new(principal, screen, &refusal.errors, body.get("data"), false);
    refusal.page(render(&view))
}

/// `back` with what the bulk action did in its query (the page turns it into a notice).
fn done(back: &str, action: &str, succeeded: usize, failed: usize) -> String {
    let (path, query) = back.split_once('?').unwrap_or((back, ""));
    let (succeeded, failed) = (succeeded.to_string(), failed.to_string());
    href(
        path,
        &changed(
            query,
            &["bulk_action", "bulk_done", "bulk_failed"],
            &[
                ("bulk_action", action),
                ("bulk_done", &succeeded),
                ("bulk_failed", &failed),
            ],
        ),
    )
}

fn confirm_force_delete(
    principal: &Principal,
    list: &str,
    back: &str,
    ids: &[i64],
) -> Result<HttpResponse, ApiError> {
    let count = match ids.len() {
        1 => "1 item".to_owned(),
        n => format!("{n} items"),
    };
    let mut fields = vec![
        ("action".to_owned(), "force_delete".to_owned()),
        ("back".to_owned(), back.to_owned()),
    ];
    fields.extend(ids.iter().map(|id| ("ids".to_owned(), id.to_string())));
    let page = ConfirmPage::new(
        principal,
        "collections",
        format!("Delete {count} for good?"),
        format!(
            "{count} and {} revisions will be deleted for good. This cannot be undone.",
            if ids.len() == 1 { "its" } else { "their" }
        ),
    )
    .posting(
        format!("{list}/bulk"),
        fields,
        format!("Delete {count} for good"),
        back.to_owned(),
    );
    html::page(StatusCode::OK, render(&page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_url_says_what_was_done() {
        assert_eq!(
            done(
                "/collections/a/items?trashed=1&page=2&bulk_done=9",
                "restore",
                2,
                1
            ),
            "/collections/a/items?trashed=1&bulk_action=restore&bulk_done=2&bulk_failed=1"
        );
    }
}
