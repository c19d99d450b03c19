//! Collections in the schema editor: `GET /collections`, `POST /collections`,
//! `GET|PUT|DELETE /collections/{collection}`.

use serde::Serialize;
use serde_json::Value as Json;
use vellum_manifest::collection as manifest;
use vellum_storage::collections as stored;

use super::{
    CollectionDefinition, ValueChanges, confirmed, defs, input_with, load, manifest_error, save,
};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;

/// The longest collection name.
const MAX_NAME: usize = 255;

/// A collection in the list: its summary with how many fields and live items it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollectionOverview {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub is_singleton: bool,
    pub fields_count: u64,
    pub items_count: u64,
}

/// `GET /collections`: every collection, in creation order.
///
/// # Errors
/// 403 without `can-show-collections`; the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<CollectionOverview>, AppError> {
    principal.require("can-show-collections")?;
    let counts = stored::live_item_counts(state.db()).await?;
    Ok(stored::list_collections(state.db())
        .await?
        .into_iter()
        .map(|c| CollectionOverview {
            id: c.id,
            slug: c.slug.to_string(),
            name: c.name.clone(),
            is_singleton: c.is_singleton,
            fields_count: u64::try_from(c.fields.len()).unwrap_or(0),
            items_count: counts.get(&c.id).copied().unwrap_or(0),
        })
        .collect())
}

/// `GET /collections/{collection}`: the full definition.
///
/// # Errors
/// 403 without `can-show-collections`; 404 for an unknown collection; the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    slug: &str,
) -> Result<CollectionDefinition, AppError> {
    principal.require("can-show-collections")?;
    Ok(CollectionDefinition::from(&load(state.db(), slug).await?))
}

/// `POST /collections`: the manifest's collection shape (`slug`, `name`, `is_singleton`,
/// `fields`, `display_field`, `display_template`), checked exactly as `vellum-admin apply`
/// checks a manifest's collection.
///
/// # Errors
/// 403 without `can-create-collections`; 422 at the manifest path of the first problem (or at
/// `slug` when the collection exists); the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<CollectionDefinition, AppError> {
    principal.require("can-create-collections")?;
    Input::new(body)?;
    let input = manifest::check_collection(body, "").map_err(manifest_error)?;
    let saved = manifest::create_collection(state.db(), &input)
        .await
        .map_err(manifest_error)?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", "created")
            .subject("collection", &saved.slug)
            .changed(body.as_object().into_iter().flat_map(|o| o.keys().cloned())),
    )
    .await;
    state.invalidate().await;
    Ok(CollectionDefinition::from(&saved))
}

/// `PUT /collections/{collection}`: any of `name`, `is_singleton`, `display_field`,
/// `display_template` (null clears the last two; both must name the collection's fields).
///
/// # Errors
/// 403 without `can-edit-collections`; 404; 422 naming every wrong key (a singleton needs at
/// most one item); the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<CollectionDefinition, AppError> {
    principal.require("can-edit-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let mut input = Input::new(body)?;
    let name = if input.has("name") {
        input.required_str("name", MAX_NAME).map(str::to_owned)
    } else {
        None
    };
    let is_singleton = input.optional_bool("is_singleton");
    let display_field = input
        .optional_str("display_field", MAX_NAME)
        .map(|v| v.map(str::to_owned).filter(|s| !s.is_empty()));
    let display_template = input
        .optional_str("display_template", 2 * MAX_NAME)
        .map(|v| v.map(str::to_owned).filter(|s| !s.is_empty()));
    // Every problem at once (the manifest reports the first; the rules are the domain's).
    let display = vellum_domain::check_display(
        collection.schema(),
        display_field
            .clone()
            .unwrap_or_else(|| collection.presentation.display_field.clone())
            .as_deref(),
        display_template
            .clone()
            .unwrap_or_else(|| collection.presentation.display_template.clone())
            .as_deref(),
    );
    for (key, messages) in display.iter() {
        for m in messages {
            input.error(key, m.clone());
        }
    }
    if is_singleton == Some(true) && !collection.is_singleton {
        let items = stored::live_item_counts(db)
            .await?
            .get(&collection.id)
            .copied()
            .unwrap_or(0);
        if items > 1 {
            input.error(
                "is_singleton",
                format!("The collection holds {items} items; a singleton holds at most one."),
            );
        }
    }
    input.finish()?;
    let mut next = input_with(&collection, defs(&collection));
    next.name = name.unwrap_or_else(|| collection.name.clone());
    next.is_singleton = is_singleton.unwrap_or(collection.is_singleton);
    next.display_field = display_field;
    next.display_template = display_template;
    let saved = save(db, &next).await?;
    let changed: Vec<String> = body
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys().cloned())
        .collect();
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", "updated")
            .subject("collection", &saved.slug)
            .changed(changed),
    )
    .await;
    state.invalidate().await;
    Ok(CollectionDefinition::from(&saved))
}

/// `DELETE /collections/{collection}`: a dry run (how many items would go) unless
/// `?confirm=true`, which deletes the collection with its items, revisions, links and grants.
/// Refused while another collection's relation field targets it.
///
/// # Errors
/// 403 without `can-delete-collections`; 404; 422 naming the fields that target it; the
/// database.
pub async fn delete(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<Option<ValueChanges>, AppError> {
    let (state, principal) = (state.clone(), principal.clone());
    let (slug, query) = (slug.to_owned(), query.to_owned());
    super::detached(async move { delete_now(&state, &principal, &slug, &query).await }).await
}

async fn delete_now(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<Option<ValueChanges>, AppError> {
    principal.require("can-delete-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let targeting: Vec<String> = stored::list_collections(db)
        .await?
        .iter()
        .filter(|c| c.id != collection.id)
        .flat_map(|c| {
            c.fields
                .iter()
                .filter(|f| targets(&f.def.settings.to_json(), collection.id))
                .map(move |f| format!("{}.{}", c.slug, f.def.name))
        })
        .collect();
    if !targeting.is_empty() {
        return Err(AppError::invalid(
            "collection",
            format!(
                "Relation fields of other collections target this collection: {}. Change or \
                 delete them first.",
                targeting.join(", ")
            ),
        ));
    }
    let items = vellum_storage::items::count_all_items(db, &collection).await?;
    if !confirmed(query) {
        return Ok(Some(ValueChanges {
            dry_run: true,
            confirm_required: true,
            items,
        }));
    }
    let orphans = crate::chat_bytes::orphans_of(
        state,
        vellum_storage::chat::attachments::OrphanScope::Collection(collection.id),
    )
    .await?;
    stored::delete_collection(db, slug).await?;
    // Its item threads went with it: their attachments' bytes go too.
    crate::chat_bytes::forget_blobs(state, orphans).await;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", "deleted")
            .subject("collection", slug)
            .extra(serde_json::json!({ "items": items })),
    )
    .await;
    state.invalidate().await;
    Ok(None)
}

/// Whether stored field settings point at collection `id`.
fn targets(settings: &Json, id: i64) -> bool {
    settings.get("related_collection_id").and_then(Json::as_i64) == Some(id)
        || settings
            .get("allowed_collection_ids")
            .and_then(Json::as_array)
            .is_some_and(|ids| ids.iter().any(|v| v.as_i64() == Some(id)))
}
