//! The admin app's singleton upsert: `PUT /collections/{collection}/singleton-content` with
//! `{"data": {...}}`. 404 unless the collection is a singleton. Gated by `can-edit-collections`,
//! and also `can-create-collections` when the item does not exist yet (the spec's row names no
//! permission; these are the ones its item routes use for the same writes).
//!
//! - Missing item: it is created from `data` (the domain's create rules: defaults, required).
//! - Existing item: only the fields `data` names change, each replaced whole: a list (tags,
//!   relations, blocks, files) is the list sent, not merged element by element; a translatable
//!   field's sent locales merge into its stored ones, as every update does.
//! - Read-only fields (`settings.readonly`) and the system keys (`id`, `created_at`, …) are
//!   dropped from `data` rather than refused, so a form can send back the whole item; any other
//!   unknown key is still a 422, like a typo anywhere else.
//! - A soft-deleted item still holds the singleton (storage refuses a second item,
//!   `vellum_storage::singleton`): the upsert is a 422 until it is restored or force-deleted.
//!
//! The write acts with full access (`super-admin`'s role: no grants, field rules or item filter
//! apply), records an activity row and moves the content epoch.

use serde_json::{Map, Value as Json};
use vellum_domain::{WriteContext, WriteMode, prepare_write};
use vellum_policy::{Authorized, CollectionAction, ItemWrite, Role};
use vellum_storage::StorageError;
use vellum_storage::items::{self as stored, FilterScope, Item};
use vellum_storage::model::Collection;
use vellum_storage::singleton::singleton_item;

use crate::activity::{self, Change};
use crate::actor::Actor;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::outbox::Pending;
use crate::principal::Principal;
use crate::query::{ReadQuery, parse_read};
use crate::render::{Rendered, render_written_item};
use crate::webhook_events::Event;

/// The item keys that are not fields: dropped from an upsert's `data`.
const SYSTEM_KEYS: [&str; 7] = [
    "id",
    "collection_id",
    "created_at",
    "updated_at",
    "deleted_at",
    "user_created_id",
    "user_updated_id",
];

/// What an upsert did.
#[derive(Debug)]
pub struct Upserted {
    /// The item was created (rather than updated).
    pub created: bool,
    pub item: Rendered,
}

/// `PUT /collections/{collection}/singleton-content`; `query` may carry `locale` (the locale
/// plain values of translatable fields are written in) and `include_all_translations`.
///
/// # Errors
/// 403 without the permissions above; 404 for an unknown or non-singleton collection; 422 for
/// a bad body or query, invalid values, or an item in the trash; the database.
pub async fn upsert(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
    body: &Json,
) -> Result<Upserted, AppError> {
    principal.require("can-edit-collections")?;
    let snapshot = state.snapshot().await?;
    let collection = snapshot
        .collection(slug)
        .filter(|c| c.is_singleton)
        .cloned()
        .ok_or(AppError::NotFound)?;
    let query = parse_read(query, &snapshot.locales)?;
    let data = writable_data(&collection, body)?;
    let actor = Actor {
        role: std::sync::Arc::new(Role::super_admin()),
        user_id: Some(principal.user_id()),
        snapshot,
    };
    let write = Write {
        state,
        actor: &actor,
        collection: &collection,
        query: &query,
        data: &data,
    };
    let (created, item) = match singleton_item(state.db(), &collection).await? {
        Some(found) if found.deleted => return Err(in_trash()),
        Some(found) => (false, write.update(found.id).await?),
        None => {
            principal.require("can-create-collections")?;
            let grant = write.grant(CollectionAction::Create)?;
            match write.create(&grant).await {
                Ok(item) => (true, item),
                // Another request created it since: this one updates it.
                Err(StorageError::Conflict { .. }) => {
                    match singleton_item(state.db(), &collection).await? {
                        Some(found) if !found.deleted => (false, write.update(found.id).await?),
                        _ => return Err(in_trash()),
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
    };
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("items", if created { "created" } else { "updated" })
            .subject("item", item.id)
            .changed(data.keys().cloned())
            .extra(serde_json::json!({ "collection": collection.slug.as_str() })),
    )
    .await;
    state
        .content_changed(Scope::Collection(collection.id))
        .await;
    let item = render_written_item(state, &actor, &collection, item, &query).await?;
    Ok(Upserted { created, item })
}

fn in_trash() -> AppError {
    AppError::invalid(
        "data",
        "The singleton's item is in the trash: restore it, or force-delete it, first.",
    )
}

/// `data` of the body without read-only fields and system keys.
fn writable_data(collection: &Collection, body: &Json) -> Result<Map<String, Json>, AppError> {
    let Some(Json::Object(data)) = body.get("data") else {
        return Err(AppError::invalid(
            "data",
            "The data field is required and must be an object.",
        ));
    };
    if crate::nul::in_json(body) {
        return Err(AppError::invalid(
            "data",
            "The data must not contain NUL characters.",
        ));
    }
    let schema = collection.schema();
    Ok(data
        .iter()
        .filter(|(key, _)| !SYSTEM_KEYS.contains(&key.as_str()))
        .filter(|(key, _)| schema.field(key).is_none_or(|f| !f.settings.readonly))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect())
}

/// One upsert's write, with what create and update share.
struct Write<'a> {
    state: &'a AppState,
    actor: &'a Actor,
    collection: &'a Collection,
    query: &'a ReadQuery,
    data: &'a Map<String, Json>,
}

impl Write<'_> {
    fn grant(&self, action: CollectionAction) -> Result<Authorized<ItemWrite>, AppError> {
        Ok(self
            .actor
            .role
            .authorize_item_action(&self.collection.slug, action)?
            .for_fields(self.data.keys().map(String::as_str))?)
    }

    fn context(&self) -> WriteContext<'_> {
        WriteContext {
            locales: &self.actor.snapshot.locales,
            locale: &self.query.locale,
            hash_key: &self.actor.snapshot.hash_key,
        }
    }

    fn scope(&self) -> FilterScope<'_> {
        FilterScope {
            schema: self.collection.schema(),
            locales: &self.actor.snapshot.locales,
            locale: &self.query.locale,
        }
    }

    /// Creates the item; a [`StorageError::Conflict`] says another request created it first.
    async fn create(&self, grant: &Authorized<ItemWrite>) -> Result<Item, StorageError> {
        let write = prepare_write(
            self.collection.schema(),
            self.data,
            WriteMode::Create,
            &self.context(),
        )
        .map_err(StorageError::Invalid)?;
        let pending = self.pending(Event::ItemCreated);
        let item = stored::create_item_queuing(
            self.state.db(),
            self.collection,
            &self.scope(),
            grant,
            &write,
            self.actor.user_id,
            pending.as_ref().map(|p| p.outbox(self.state)).as_ref(),
        )
        .await?;
        crate::outbox::queued(self.state, pending.as_ref());
        Ok(item)
    }

    /// The webhook deliveries of `event` on this singleton.
    fn pending(&self, event: Event) -> Option<Pending> {
        Pending::of(
            &self.actor.snapshot,
            event,
            Some(self.collection.slug.as_str()),
        )
    }

    async fn update(&self, id: i64) -> Result<Item, AppError> {
        let grant = self.grant(CollectionAction::Update)?;
        let ctx = self.context();
        let schema = self.collection.schema();
        let pending = self.pending(Event::ItemUpdated);
        let item = stored::update_item_queuing(
            self.state.db(),
            self.collection,
            &self.scope(),
            &grant,
            (id, self.actor.user_id),
            |existing| {
                let mode = WriteMode::Update {
                    existing: &existing.data,
                };
                prepare_write(schema, self.data, mode, &ctx)
            },
            pending.as_ref().map(|p| p.outbox(self.state)).as_ref(),
        )
        .await?;
        crate::outbox::queued(self.state, pending.as_ref());
        Ok(item)
    }
}
