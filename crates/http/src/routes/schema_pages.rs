//! The web UI's side of the schema editor: the collections page's new collection form, the
//! schema page and its field forms, and the dry runs a browser confirms before a change that
//! touches stored values (a field's type, a field or a collection deleted). The JSON routes in
//! [`super::schema`] call these for a browser.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};
use vellum_app::AppState;
use vellum_app::principal::Principal;
use vellum_app::schema::packs::{COLLECTION_PACKS, FIELD_PACKS};
use vellum_app::schema::{ValueChanges, collections, fields};
use vellum_web::pages::collections::CollectionsPage;
use vellum_web::pages::confirm::ConfirmPage;
use vellum_web::pages::render;
use vellum_web::pages::schema::{FieldDraft, SchemaPage};

use crate::error::ApiError;
use crate::html::{self, FormRefusal};

/// The collections page.
pub(super) async fn collections_page(
    state: &AppState,
    principal: &Principal,
) -> Result<HttpResponse, ApiError> {
    let list = collections::list(state, principal).await?;
    html::page(
        StatusCode::OK,
        render(&CollectionsPage::new(principal, list, &COLLECTION_PACKS)),
    )
}

/// The new collection form: 303 to its schema, or the collections page with the problems.
pub(super) async fn create_collection(
    state: &AppState,
    principal: &Principal,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let last = |key: &str| {
        form.iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    };
    let draft = (last("slug"), last("name"), last("is_singleton") == "true");
    let body = json!({ "slug": draft.0, "name": draft.1, "is_singleton": draft.2, "fields": [] });
    match collections::create(state, principal, &body).await {
        Ok(created) => Ok(html::see_other(&format!("/collections/{}", created.slug)).finish()),
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let list = collections::list(state, principal).await?;
            let view = CollectionsPage::new(principal, list, &COLLECTION_PACKS)
                .with_refusal(draft, refusal.errors.clone());
            refusal.page(render(&view))
        }
    }
}

/// The schema page of `slug`, with the notice a change left in the URL.
pub(super) async fn schema_page(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let found = collections::show(state, principal, slug).await?;
    let view = SchemaPage::new(principal, found, &FIELD_PACKS, req.query_string());
    html::page(StatusCode::OK, render(&view))
}

/// The add field form: 303 to the schema, or the schema page with the form as typed.
pub(super) async fn add_field(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let draft = FieldDraft::posted(form);
    match fields::add(state, principal, slug, &draft.to_json()).await {
        Ok(_) => {
            let to = format!("/collections/{slug}?added={}", draft.name);
            Ok(html::see_other(&to).finish())
        }
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let found = collections::show(state, principal, slug).await?;
            let view = SchemaPage::new(principal, found, &FIELD_PACKS, "")
                .with_refusal(draft, refusal.errors.clone());
            refusal.page(render(&view))
        }
    }
}

/// A field form put by htmx: a change that touches stored values is shown as a dry run to
/// confirm (the same form, put again with `?confirm=true`); a saved change sends the browser
/// back to the schema.
pub(super) async fn update_field(
    state: &AppState,
    principal: &Principal,
    (slug, field): (&str, &str),
    query: &str,
    form: &[(String, String)],
) -> Result<HttpResponse, ApiError> {
    let draft = FieldDraft::posted(form);
    let changed = match fields::update(state, principal, slug, field, query, &draft.to_json()).await
    {
        Ok(changed) => changed,
        Err(err) => {
            let refusal = FormRefusal::of(err.into())?;
            let found = collections::show(state, principal, slug).await?;
            let view = SchemaPage::new(principal, found, &FIELD_PACKS, "")
                .with_refusal(FieldDraft::default(), refusal.errors.clone());
            return refusal.page(render(&view));
        }
    };
    if !changed.dry_run {
        let name = changed
            .field
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(field);
        return Ok(html::htmx_redirect(&format!(
            "/collections/{slug}?saved={name}"
        )));
    }
    confirm_change(principal, (slug, field), changed.changes, &draft)
}

/// The dry run of a field change, to confirm: the same form put again with `?confirm=true`.
fn confirm_change(
    principal: &Principal,
    (slug, field): (&str, &str),
    changes: u64,
    draft: &FieldDraft,
) -> Result<HttpResponse, ApiError> {
    let page = ConfirmPage::new(
        principal,
        "collections",
        format!("Change {field}?"),
        format!(
            "{} stored value{} will be converted to the new definition. Values that cannot be are refused before anything is written.",
            changes,
            if changes == 1 { "" } else { "s" }
        ),
    )
    .posting(
        format!("/collections/{slug}/fields/{field}?confirm=true"),
        draft.fields(),
        "Convert the values".to_owned(),
        format!("/collections/{slug}"),
    )
    .with_method("put");
    html::page(StatusCode::OK, render(&page))
}

/// A deletion the schema editor confirms after its dry run.
pub(super) struct Deletion {
    /// What goes, for the title and the button ("the field subtitle").
    pub what: String,
    /// What goes with it, `{items}` standing for the count of items concerned.
    pub consequence: &'static str,
    /// The route deleted (the confirmation adds `?confirm=true`).
    pub action: String,
    /// Where "Cancel" goes, and where the browser goes once deleted.
    pub cancel: String,
    pub then: String,
}

/// A deletion sent by htmx: its dry run to confirm, or, confirmed, the browser sent on.
pub(super) fn deleted(
    principal: &Principal,
    dry_run: Option<ValueChanges>,
    deletion: Deletion,
) -> Result<HttpResponse, ApiError> {
    let Some(dry_run) = dry_run else {
        return Ok(html::htmx_redirect(&deletion.then));
    };
    let items = match dry_run.items {
        1 => "1 item".to_owned(),
        n => format!("{n} items"),
    };
    let page = ConfirmPage::new(
        principal,
        "collections",
        format!("Delete {}?", deletion.what),
        format!(
            "{} This cannot be undone.",
            deletion.consequence.replace("{items}", &items)
        ),
    )
    .posting(
        format!("{}?confirm=true", deletion.action),
        Vec::new(),
        format!("Delete {}", deletion.what),
        deletion.cancel,
    )
    .with_method("delete");
    html::page(StatusCode::OK, render(&page))
}
