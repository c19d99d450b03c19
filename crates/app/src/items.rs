//! The items use cases: list, show, create, update, soft delete. Each resolves the collection
//! from the actor's snapshot, asks the policy once, calls the domain and storage crates, and
//! renders; every write bumps the cache epoch.
//!
//! Paths and query strings arrive as the caller received them (a surface does not parse them),
//! so every surface refuses the same input with the same errors.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use vellum_domain::{LocaleCode, WriteContext, WriteMode, prepare_write};
use vellum_policy::{Authorized, CollectionAction, Filter, ItemGrant, ItemWrite};
use vellum_storage::items::{self as stored, FilterScope, ListItems};
use vellum_storage::model::Collection;

use crate::actor::Actor;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::list_memo::{ListKey, list_page};
use crate::outbox::Pending;
use crate::query::{parse_list, parse_read};
use crate::render::{Rendered, render_item, render_items, render_written_item};
use crate::webhook_events::{Event, Subject};

/// A page of items, rendered: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Serialize)]
pub struct ItemPage {
    pub data: Vec<Rendered>,
    pub meta: PageMeta,
}

/// The paging part of a list's envelope.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PageMeta {
    pub current_page: u64,
    pub last_page: u64,
    pub per_page: u64,
    pub total: u64,
}

/// A page of `slug`'s items as the actor may see them; `query` is the raw query string
/// (`filter`, `sort`, `page`, `per_page`, `locale`, `include`).
///
/// # Errors
/// 404 for an unknown collection, 403 without `read`, 422 for a bad query, the database.
pub async fn list(
    state: &AppState,
    actor: &Actor,
    slug: &str,
    query: &str,
) -> Result<ItemPage, AppError> {
    let collection = collection_for(actor, slug)?;
    require(actor, &collection, CollectionAction::Read)?;
    let fields = actor.role.field_policy(&collection.slug);
    let query = parse_list(query, &actor.snapshot.locales, &collection, &fields)?;
    let role_filter = actor.role.item_filter(&collection.slug);
    // The role's filter is always compared in the default locale; sort and page do not change
    // the total. Positions in the list are remembered under the same key.
    let filter = (&query.read.locale, &query.filter);
    let key = list_key(state, actor, &collection, filter, role_filter).await;
    let page = list_page(
        state.db(),
        &actor.snapshot.lists,
        key,
        &collection,
        &scope(actor, &collection, &query.read.locale),
        ListItems {
            filter: &query.filter,
            sort: &query.sort,
            page: query.page,
            per_page: query.per_page,
            after: None,
        },
        role_filter,
    )
    .await?;
    let meta = PageMeta {
        current_page: page.current_page,
        last_page: page.last_page,
        per_page: page.per_page,
        total: page.total,
    };
    let data = render_items(state, actor, &collection, page.items, &query.read).await?;
    Ok(ItemPage { data, meta })
}

/// One item as the actor may see it; `id` is the path segment as received.
///
/// # Errors
/// 404 for an unknown collection or item (or one the item filter hides), 403 without `read`,
/// 422 for a bad query, the database.
pub async fn show(
    state: &AppState,
    actor: &Actor,
    slug: &str,
    id: &str,
    query: &str,
) -> Result<Rendered, AppError> {
    let collection = collection_for(actor, slug)?;
    require(actor, &collection, CollectionAction::Read)?;
    let id = parse_id(id)?;
    let query = parse_read(query, &actor.snapshot.locales)?;
    let item = stored::get_item(
        state.db(),
        &collection,
        &scope(actor, &collection, &query.locale),
        id,
        actor.role.item_filter(&collection.slug),
    )
    .await?
    .ok_or(AppError::NotFound)?;
    render_item(state, actor, &collection, item, &query).await
}

/// Creates an item from a `{"data": {...}}` body. `body` is awaited only once the grant is
/// checked, so a role that may not create is refused before its body is read.
///
/// # Errors
/// 404, 403 (grant, field rules, item filter), 422 (query, body, values), the body's own error,
/// the database.
pub async fn create<B, E>(
    state: &AppState,
    actor: &Actor,
    slug: &str,
    query: &str,
    body: impl Future<Output = Result<B, E>>,
) -> Result<Rendered, E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let collection = collection_for(actor, slug)?;
    let grant = authorize(actor, &collection, CollectionAction::Create)?;
    let query = parse_read(query, &actor.snapshot.locales)?;
    let (data, grant) = read_data(grant, body).await?;
    let ctx = write_context(actor, &query.locale);
    let write = prepare_write(collection.schema(), &data, WriteMode::Create, &ctx)
        .map_err(AppError::Invalid)?;
    let pending = Pending::of(
        &actor.snapshot,
        Event::ItemCreated,
        Some(collection.slug.as_str()),
    );
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    let item = stored::create_item_queuing(
        state.db(),
        &collection,
        &scope(actor, &collection, &query.locale),
        &grant,
        &write,
        actor.user_id,
        outbox.as_ref(),
    )
    .await
    .map_err(AppError::from)?;
    written(state, &collection, pending.as_ref()).await;
    Ok(render_written_item(state, actor, &collection, item, &query).await?)
}

/// Updates the item `id` with a `{"data": {...}}` body (only the fields it names). `body` is
/// awaited only once the grant is checked.
///
/// # Errors
/// As [`create`], and 404 for an item the actor's write cannot reach.
pub async fn update<B, E>(
    state: &AppState,
    actor: &Actor,
    slug: &str,
    id: &str,
    query: &str,
    body: impl Future<Output = Result<B, E>>,
) -> Result<Rendered, E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let collection = collection_for(actor, slug)?;
    let grant = authorize(actor, &collection, CollectionAction::Update)?;
    let id = parse_id(id)?;
    let query = parse_read(query, &actor.snapshot.locales)?;
    let (data, grant) = read_data(grant, body).await?;
    let ctx = write_context(actor, &query.locale);
    let schema = collection.schema();
    let pending = Pending::of(
        &actor.snapshot,
        Event::ItemUpdated,
        Some(collection.slug.as_str()),
    );
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    let item = stored::update_item_queuing(
        state.db(),
        &collection,
        &scope(actor, &collection, &query.locale),
        &grant,
        (id, actor.user_id),
        |existing| {
            let mode = WriteMode::Update {
                existing: &existing.data,
            };
            prepare_write(schema, &data, mode, &ctx)
        },
        outbox.as_ref(),
    )
    .await
    .map_err(AppError::from)?;
    written(state, &collection, pending.as_ref()).await;
    Ok(render_written_item(state, actor, &collection, item, &query).await?)
}

/// Soft-deletes the item `id`.
///
/// # Errors
/// 404 (collection, or an item the write cannot reach), 403 without `delete`, the database.
pub async fn delete(state: &AppState, actor: &Actor, slug: &str, id: &str) -> Result<(), AppError> {
    let collection = collection_for(actor, slug)?;
    let grant = authorize(actor, &collection, CollectionAction::Delete)?;
    let id = parse_id(id)?;
    let grant = grant.for_fields(std::iter::empty())?;
    let locale = actor.snapshot.locales.default_locale().clone();
    let pending = Pending::of(
        &actor.snapshot,
        Event::ItemDeleted,
        Some(collection.slug.as_str()),
    );
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    stored::soft_delete_item_queuing(
        state.db(),
        &collection,
        &scope(actor, &collection, &locale),
        &grant,
        id,
        outbox.as_ref(),
    )
    .await?;
    written(state, &collection, pending.as_ref()).await;
    Ok(())
}

/// After an item write committed with its deliveries: stale what can show the collection, and
/// wake the job workers when deliveries were queued.
pub(crate) async fn written(state: &AppState, collection: &Collection, pending: Option<&Pending>) {
    state
        .content_changed(Scope::Collection(collection.id))
        .await;
    crate::outbox::queued(state, pending);
}

/// Queues the webhooks of an item event.
pub(crate) async fn item_event(state: &AppState, event: Event, collection: &Collection, id: i64) {
    crate::outbox::emit(
        state,
        event,
        Subject::Item {
            collection: collection.slug.as_str(),
            id,
        },
    )
    .await;
}

fn collection_for(actor: &Actor, slug: &str) -> Result<Arc<Collection>, AppError> {
    actor
        .snapshot
        .collection(slug)
        .cloned()
        .ok_or(AppError::NotFound)
}

fn require(
    actor: &Actor,
    collection: &Collection,
    action: CollectionAction,
) -> Result<(), AppError> {
    let decision = actor.role.may(&collection.slug, action);
    if decision.allowed {
        Ok(())
    } else {
        Err(decision.into())
    }
}

fn authorize<'a>(
    actor: &'a Actor,
    collection: &Collection,
    action: CollectionAction,
) -> Result<ItemGrant<'a>, AppError> {
    Ok(actor.role.authorize_item_action(&collection.slug, action)?)
}

/// The memo key of a list of `collection` as `actor` reads it: the collection, the stamp of
/// the content it can reach (which every write of that content moves), the `locale` the
/// `filter` compares translatable fields in, the filter and the role's item filter.
pub(crate) async fn list_key(
    state: &AppState,
    actor: &Actor,
    collection: &Collection,
    (locale, filter): (&LocaleCode, &Filter),
    role_filter: Option<&Filter>,
) -> ListKey {
    let scopes = actor.snapshot.scopes_of(collection.id);
    let stamp = state.stamp(&actor.snapshot, scopes).await;
    ListKey::new(collection.id, stamp, locale, filter, role_filter)
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

/// What the domain crate needs to normalize a write in the request's locale.
fn write_context<'a>(actor: &'a Actor, locale: &'a LocaleCode) -> WriteContext<'a> {
    WriteContext {
        locales: &actor.snapshot.locales,
        locale,
        hash_key: &actor.snapshot.hash_key,
    }
}

/// An `{id}` path segment: anything but a positive integer names no item (404).
pub(crate) fn parse_id(raw: &str) -> Result<i64, AppError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(AppError::NotFound)
}

/// Reads a write's body (only now: the grant was checked) and finishes the authorization with
/// the field rules for the fields its `data` names.
async fn read_data<B, E>(
    grant: ItemGrant<'_>,
    body: impl Future<Output = Result<B, E>>,
) -> Result<(Map<String, Value>, Authorized<ItemWrite>), E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let data = body_data(body.await?.as_ref())?;
    let grant = grant
        .for_fields(data.keys().map(String::as_str))
        .map_err(AppError::from)?;
    Ok((data, grant))
}

/// The `data` object of a create or update body.
fn body_data(body: &[u8]) -> Result<Map<String, Value>, AppError> {
    let invalid = || AppError::invalid("data", "The data field is required and must be an object.");
    let value: Value = serde_json::from_slice(body).map_err(|_| {
        AppError::invalid(
            "data",
            "The request body must be a JSON object with a data object.",
        )
    })?;
    if crate::nul::in_json(&value) {
        return Err(AppError::invalid(
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
