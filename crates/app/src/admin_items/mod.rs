//! The admin app's collection items (`/collections/{collection}/items…`): list (with the
//! trash), export, the create form's data, create, show, update, soft delete, restore, force
//! delete, bulk actions, revisions and their restore, and the preview of an item as a role.
//!
//! Each use case first checks the signed-in user's admin permission (`can-*-collections`), then
//! acts above roles: as `super-admin`, so grants, field rules and item filters do not apply (the
//! admin permission is the gate; the collection matrices govern API keys). Writes go through the
//! public API's use cases ([`crate::items`]), so a body is validated exactly as there; every
//! write moves the cache epoch (every replica's public cache) and records one activity entry
//! (log `items`, subject `item` and its id, the collection's slug in the properties).

mod bulk;
mod export;
mod list;
mod preview;
mod query;
mod revisions;
mod screen;

use std::future::{Future, ready};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_policy::Role;
use vellum_storage::item_admin;
use vellum_storage::model::Collection;

pub(crate) use bulk::read_ids as read_bulk_ids;
pub use bulk::{BulkAction, BulkFailure, BulkOutcome, MAX_BULK_IDS, bulk};
pub use export::{EXPORT_CHUNK, EXPORT_LIMIT, Export, ExportFormat, export};
pub use list::{ListScreen, list, list_screen};
pub use preview::{Preview, PreviewExplanation, preview, preview_roles};
pub use revisions::{RevisionResource, restore_revision, revisions};
pub use screen::{ItemScreen, edit_screen, new_screen};

use crate::activity::{self, Change};
use crate::actor::Actor;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{self, parse_id};
use crate::principal::Principal;
use crate::query::parse_read;
use crate::render::{Rendered, render_item};
use crate::resources::{collection_resource, timestamp};

/// The activity log's name for item changes.
pub const ITEMS_LOG: &str = "items";

/// The collection named by the path and the actor the admin app works as: `super-admin`, for
/// the signed-in user (who is recorded as the writer).
pub(crate) struct Target {
    pub actor: Actor,
    pub collection: Arc<Collection>,
}

/// Checks `permission`, then resolves the collection.
///
/// # Errors
/// 403 without the permission (checked first, so nothing is disclosed), 404 for an unknown
/// collection, the database.
pub(crate) async fn open(
    state: &AppState,
    principal: &Principal,
    permission: &'static str,
    slug: &str,
) -> Result<Target, AppError> {
    principal.require(permission)?;
    let snapshot = state.snapshot().await?;
    let collection = snapshot
        .collection(slug)
        .cloned()
        .ok_or(AppError::NotFound)?;
    Ok(Target {
        actor: Actor {
            role: Arc::new(Role::super_admin()),
            user_id: Some(principal.user_id()),
            snapshot,
        },
        collection,
    })
}

/// Records one item change by the signed-in user.
pub(crate) async fn log(
    state: &AppState,
    principal: &Principal,
    collection: &Collection,
    event: &str,
    id: i64,
    changed: Vec<String>,
    extra: Json,
) {
    // Create, update and soft delete run the public use cases, which queue their webhooks
    // themselves; restore and force delete are the admin app's own.
    let webhook_event = match event {
        "restored" => Some(crate::webhook_events::Event::ItemRestored),
        "force_deleted" => Some(crate::webhook_events::Event::ItemDeleted),
        _ => None,
    };
    if let Some(webhook_event) = webhook_event {
        crate::items::item_event(state, webhook_event, collection, id).await;
    }
    let mut properties = json!({ "collection": collection.slug.as_str() });
    if let (Json::Object(props), Json::Object(extra)) = (&mut properties, extra) {
        props.extend(extra);
    }
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new(ITEMS_LOG, event)
            .subject("item", id)
            .changed(changed)
            .extra(properties),
    )
    .await;
}

/// `GET /collections/{collection}/items/{item}`: the item, soft-deleted or not, and when it was
/// deleted.
#[derive(Debug, Serialize)]
pub struct ShownItem {
    pub data: Rendered,
    pub meta: ShownMeta,
}

/// Whether a shown item is in the trash.
#[derive(Debug, Serialize)]
pub struct ShownMeta {
    /// RFC 3339, or null for a live item.
    pub deleted_at: Json,
}

/// What the create form needs: the collection with all its fields (types, settings,
/// translatable), each field's default value, the project's locales and the saved form layout.
#[derive(Debug, Clone, Serialize)]
pub struct ItemForm {
    pub collection: Json,
    pub defaults: serde_json::Map<String, Json>,
    pub locales: FormLocales,
    pub form_layout: Option<Json>,
}

/// The content locales a translatable field is written in.
#[derive(Debug, Clone, Serialize)]
pub struct FormLocales {
    pub enabled: Vec<String>,
    pub default: String,
}

/// `GET /collections/{collection}/items/new`.
///
/// # Errors
/// 403 without `can-create-collections`, 404 for an unknown collection, the database.
pub async fn new_form(
    state: &AppState,
    principal: &Principal,
    slug: &str,
) -> Result<ItemForm, AppError> {
    let Target { actor, collection } =
        open(state, principal, "can-create-collections", slug).await?;
    let everything = Role::super_admin().field_policy(&collection.slug);
    let defaults = collection
        .fields
        .iter()
        .filter_map(|f| {
            let value = f.def.settings.default_value.clone()?;
            Some((f.def.name.as_str().to_owned(), value))
        })
        .collect();
    Ok(ItemForm {
        collection: collection_resource(&collection, &everything),
        defaults,
        locales: FormLocales::of(&actor.snapshot.locales),
        form_layout: collection.presentation.form_layout.clone(),
    })
}

impl FormLocales {
    pub(crate) fn of(locales: &vellum_domain::ContentLocales) -> Self {
        Self {
            enabled: locales
                .enabled()
                .iter()
                .map(|l| l.as_str().to_owned())
                .collect(),
            default: locales.default_locale().as_str().to_owned(),
        }
    }
}

/// `GET /collections/{collection}/items/{item}` (`locale`, `include_all_translations`,
/// `include` as the public API).
///
/// # Errors
/// 403 without `can-show-collections`, 404 for an unknown collection or item, 422 for a bad
/// query, the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    query: &str,
) -> Result<ShownItem, AppError> {
    let Target { actor, collection } = open(state, principal, "can-show-collections", slug).await?;
    let id = parse_id(id)?;
    let read = parse_read(query, &actor.snapshot.locales)?;
    let item = item_admin::find_item(state.db(), &collection, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let deleted_at = timestamp(item.deleted_at);
    let data = render_item(state, &actor, &collection, item, &read).await?;
    Ok(ShownItem {
        data,
        meta: ShownMeta { deleted_at },
    })
}

/// The names of the fields a body's `data` sends, sorted, for the activity log (never their
/// values).
fn sent_fields(body: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = serde_json::from_slice::<Json>(body)
        .ok()
        .and_then(|v| match v {
            Json::Object(mut obj) => match obj.remove("data") {
                Some(Json::Object(data)) => Some(data.keys().cloned().collect()),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_default();
    names.sort_unstable();
    names
}

/// The `id` of a rendered item.
fn rendered_id(rendered: &Rendered) -> Result<i64, AppError> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: i64,
    }
    serde_json::from_str::<Id>(rendered.get())
        .map(|i| i.id)
        .map_err(AppError::internal)
}

/// `POST /collections/{collection}/items`: a `{"data": {...}}` body, validated as the public
/// API's create. `body` is awaited only once the permission is checked.
///
/// # Errors
/// 403, 404, 422 (query, body, values, a taken unique value), the body's own error, the
/// database.
pub async fn create<B, E>(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
    body: impl Future<Output = Result<B, E>>,
) -> Result<Rendered, E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let Target { actor, collection } =
        open(state, principal, "can-create-collections", slug).await?;
    let body = body.await?;
    let body = body.as_ref();
    let rendered =
        items::create(state, &actor, slug, query, ready(Ok::<_, AppError>(body))).await?;
    let id = rendered_id(&rendered)?;
    log(
        state,
        principal,
        &collection,
        "created",
        id,
        sent_fields(body),
        Json::Null,
    )
    .await;
    Ok(rendered)
}

/// `PUT /collections/{collection}/items/{item}`: a `{"data": {...}}` body naming the fields to
/// change (the others keep their values), validated as the public API's update. A new revision
/// is recorded.
///
/// # Errors
/// As [`create`], and 404 for an unknown or deleted item.
pub async fn update<B, E>(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    query: &str,
    body: impl Future<Output = Result<B, E>>,
) -> Result<Rendered, E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let Target { actor, collection } = open(state, principal, "can-edit-collections", slug).await?;
    let item_id = parse_id(id)?;
    let body = body.await?;
    let body = body.as_ref();
    let rendered = items::update(
        state,
        &actor,
        slug,
        id,
        query,
        ready(Ok::<_, AppError>(body)),
    )
    .await?;
    log(
        state,
        principal,
        &collection,
        "updated",
        item_id,
        sent_fields(body),
        Json::Null,
    )
    .await;
    Ok(rendered)
}

/// `DELETE /collections/{collection}/items/{item}`: soft delete (revisions and unique claims
/// are kept, so a restore cannot collide).
///
/// # Errors
/// 403 without `can-delete-collections`, 404 for an unknown or already deleted item, the
/// database.
pub async fn delete(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
) -> Result<(), AppError> {
    let target = open(state, principal, "can-delete-collections", slug).await?;
    soft_delete_one(state, principal, &target, parse_id(id)?).await
}

async fn soft_delete_one(
    state: &AppState,
    principal: &Principal,
    target: &Target,
    id: i64,
) -> Result<(), AppError> {
    items::delete(
        state,
        &target.actor,
        target.collection.slug.as_str(),
        &id.to_string(),
    )
    .await?;
    log(
        state,
        principal,
        &target.collection,
        "deleted",
        id,
        vec!["deleted_at".to_owned()],
        Json::Null,
    )
    .await;
    Ok(())
}

/// `POST /collections/{collection}/items/{item}/restore`: brings a soft-deleted item back.
///
/// # Errors
/// 403 without `can-restore-collections`, 404 for an unknown item, 422 (`item`) for an item
/// that is not deleted, the database.
pub async fn restore(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
) -> Result<ShownItem, AppError> {
    let target = open(state, principal, "can-restore-collections", slug).await?;
    let id = parse_id(id)?;
    restore_one(state, principal, &target, id).await?;
    let item = item_admin::find_item(state.db(), &target.collection, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let read = parse_read("", &target.actor.snapshot.locales)?;
    let data = render_item(state, &target.actor, &target.collection, item, &read).await?;
    Ok(ShownItem {
        data,
        meta: ShownMeta {
            deleted_at: Json::Null,
        },
    })
}

/// The message of restoring an item that is not deleted.
pub const NOT_DELETED: &str = "The item is not deleted.";

async fn restore_one(
    state: &AppState,
    principal: &Principal,
    target: &Target,
    id: i64,
) -> Result<(), AppError> {
    let collection = &target.collection;
    let item = item_admin::find_item(state.db(), collection, id)
        .await?
        .ok_or(AppError::NotFound)?;
    if item.deleted_at.is_none() {
        return Err(AppError::invalid("item", NOT_DELETED));
    }
    vellum_storage::item_trash::restore_item(state.db(), collection, id).await?;
    state
        .content_changed(Scope::Collection(collection.id))
        .await;
    log(
        state,
        principal,
        collection,
        "restored",
        id,
        vec!["deleted_at".to_owned()],
        Json::Null,
    )
    .await;
    Ok(())
}

/// `DELETE /collections/{collection}/items/{item}/force`: deletes the item for good, deleted or
/// not, with its revisions, link rows and unique claims (its unique values can be used again).
///
/// # Errors
/// 403 without `can-force-delete-collections`, 404 for an unknown item, the database.
pub async fn force_delete(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
) -> Result<(), AppError> {
    let target = open(state, principal, "can-force-delete-collections", slug).await?;
    force_delete_one(state, principal, &target, parse_id(id)?).await
}

async fn force_delete_one(
    state: &AppState,
    principal: &Principal,
    target: &Target,
    id: i64,
) -> Result<(), AppError> {
    let orphans = crate::chat_bytes::orphans_of(
        state,
        vellum_storage::chat::attachments::OrphanScope::Item(id),
    )
    .await?;
    item_admin::purge_item(state.db(), &target.collection, id).await?;
    // The item's chat thread went with it: its attachments' bytes go too.
    crate::chat_bytes::forget_blobs(state, orphans).await;
    state
        .content_changed(Scope::Collection(target.collection.id))
        .await;
    log(
        state,
        principal,
        &target.collection,
        "force_deleted",
        id,
        Vec::new(),
        Json::Null,
    )
    .await;
    Ok(())
}
