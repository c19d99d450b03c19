//! Items: list with filter, sort and pagination; show; create; partial update; soft delete;
//! revisions. The trash (restore, force delete) is [`crate::item_trash`].
//!
//! Writes take the capability the policy crate issued ([`Authorized<ItemWrite>`]) and enforce
//! what it carries: its collection and action, and the role's item filter, both on the stored
//! item (an item outside the filter is "not found", in the same statement that locks it) and on
//! the item as written (refused with [`StorageError::OutsideItemFilter`]). Every write —
//! item row, revision, link rows, `unique` claims — runs in one transaction.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::{Map, Value as Json};
use time::OffsetDateTime;
use tracing::instrument;
use vellum_domain::{
    ContentLocales, LocaleSelection, PreparedWrite, ValidationErrors, flatten_for_read,
};
use vellum_policy::{Authorized, CollectionAction, Filter, ItemRef, ItemWrite};

use crate::StorageError;
pub use crate::filter_sql::{FilterScope, SortKey};
use crate::filter_sql::{push_filter, push_order, scalar_index_hint};
use crate::jobs::{Outbox, enqueue_outbox};
use crate::links::{check_references, sync_links};
use crate::model::Collection;
pub use crate::paging::{Anchor, ListItems, Page, id_order};
use crate::paging::{is_deep, sorts_by_id};
use crate::singleton::refuse_second_item;
use crate::sql::{Sql, begin_write, id_param, json_out, now, parse_json, parse_object};
use crate::unique::{claim_unique, release_unique};

/// A stored item, `data` as stored (translatable values as locale maps).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: i64,
    pub collection_id: i64,
    pub data: Map<String, Json>,
    pub created_at: Option<OffsetDateTime>,
    pub updated_at: Option<OffsetDateTime>,
    pub deleted_at: Option<OffsetDateTime>,
    pub user_created_id: Option<i64>,
    pub user_updated_id: Option<i64>,
}

/// A stored revision: the complete `data` after a create or update.
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    pub id: i64,
    pub item_id: i64,
    pub data: Map<String, Json>,
    pub user_id: Option<i64>,
    pub created_at: Option<OffsetDateTime>,
}

const COLUMNS: &str =
    "id, collection_id, created_at, updated_at, deleted_at, user_created_id, user_updated_id";

pub(crate) fn select(backend: DbBackend) -> Sql {
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(", ")
        .push(&json_out(backend, "data"))
        .push(" AS data FROM items");
    sql
}

/// An item as [`select`] reads it (`data` as JSON text).
#[derive(FromQueryResult)]
pub(crate) struct ItemRow {
    id: i32,
    collection_id: i32,
    data: Option<String>,
    created_at: Option<OffsetDateTime>,
    updated_at: Option<OffsetDateTime>,
    deleted_at: Option<OffsetDateTime>,
    user_created_id: Option<i32>,
    user_updated_id: Option<i32>,
}

impl TryFrom<ItemRow> for Item {
    type Error = StorageError;

    fn try_from(row: ItemRow) -> Result<Self, StorageError> {
        Ok(Item {
            id: i64::from(row.id),
            collection_id: i64::from(row.collection_id),
            data: parse_object(row.data.as_deref(), "data")?,
            created_at: row.created_at,
            updated_at: row.updated_at,
            deleted_at: row.deleted_at,
            user_created_id: row.user_created_id.map(i64::from),
            user_updated_id: row.user_updated_id.map(i64::from),
        })
    }
}

/// A revision as [`revisions`] reads it.
#[derive(FromQueryResult)]
pub(crate) struct RevisionRow {
    id: i32,
    item_id: i32,
    user_id: Option<i32>,
    created_at: Option<OffsetDateTime>,
    data: Option<String>,
}

/// The [`Anchor`]s `page` (read for `query`) starts and ends at, if the list is sorted by id and
/// the page holds an item: the start lets the same page be read again with a seek, the end the
/// next one. Ids are integers, so "before the first item" is its id minus one (plus one when
/// descending).
#[must_use]
pub fn page_anchors(query: &ListItems<'_>, page: &Page<Item>) -> Option<[Anchor; 2]> {
    let descending = id_order(query.sort)?;
    let (first, last) = (page.items.first()?, page.items.last()?);
    let offset = (page.current_page - 1).saturating_mul(page.per_page);
    let before_first = if descending {
        first.id.saturating_add(1)
    } else {
        first.id.saturating_sub(1)
    };
    Some([
        Anchor {
            offset,
            id: before_first,
        },
        Anchor {
            offset: offset.saturating_add(page.items.len() as u64),
            id: last.id,
        },
    ])
}

/// The scope a role's item filter is compiled and evaluated in: the project's default locale,
/// whatever `locale` the request names. A role's filter decides which items exist for the role;
/// if it followed the request's locale, a caller could pick the locale in which a hidden item
/// passes and then read every translation of it (`include_all_translations`).
#[must_use]
pub fn role_filter_scope<'a>(scope: &FilterScope<'a>) -> FilterScope<'a> {
    FilterScope {
        locale: scope.locales.default_locale(),
        ..*scope
    }
}

/// A page of the collection's live items matching `query.filter`, and the total of matches.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn list_items<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    query: &ListItems<'_>,
) -> Result<Page<Item>, StorageError> {
    list_items_with_total(db, collection, scope, query, None, None).await
}

/// As [`list_items`], also inside the role's item filter (`role_filter`, compared in the
/// default locale: [`role_filter_scope`]), with the total of matches already known
/// (`known_total`), e.g. remembered by the caller since the last write: the `COUNT(*)`, which
/// reads every match and dominates a list over a large collection, is then skipped.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn list_items_with_total<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    query: &ListItems<'_>,
    role_filter: Option<&Filter>,
    known_total: Option<u64>,
) -> Result<Page<Item>, StorageError> {
    let backend = db.get_database_backend();
    let cid = collection.sql_id()?;
    let page = query.page.max(1);
    let per_page = query.per_page.max(1);

    // The collection id is written as a literal (an i32 read from the database, not request
    // data): SQLite can then prove that the collection's partial scalar index applies.
    let live = format!(" WHERE collection_id = {cid} AND deleted_at IS NULL");
    let role_scope = role_filter_scope(scope);
    let both;
    let hinted = match role_filter {
        Some(role) => {
            both = query.filter.clone().and(role);
            &both
        }
        None => query.filter,
    };
    let hint = scalar_index_hint(backend, collection.id, collection.schema(), hinted);
    let push_filters = |sql: &mut Sql| -> Result<(), StorageError> {
        push_filter(sql, "data", query.filter, scope)?;
        if let Some(role) = role_filter {
            push_filter(sql, "data", role, &role_scope)?;
        }
        Ok(())
    };
    let total = match known_total {
        Some(total) => total,
        None => {
            let mut count = Sql::new(backend);
            count.push("SELECT COUNT(*) AS n FROM items");
            if let Some(hint) = &hint {
                count.push(hint);
            }
            count.push(&live);
            push_filters(&mut count)?;
            count.count(db).await?
        }
    };

    let offset = (page - 1).saturating_mul(per_page);
    if offset >= total {
        return Ok(Page::new(Vec::new(), total, page, per_page));
    }
    // From a known position, only the matches after it are passed.
    let seek = id_order(query.sort).and_then(|descending| {
        let anchor = query.after.filter(|a| a.offset <= offset)?;
        let id = id_param(anchor.id)?;
        Some((anchor.offset, id, descending))
    });
    let passed = seek.map_or(offset, |(anchor_offset, ..)| offset - anchor_offset);
    let push_live = |sql: &mut Sql| {
        sql.push(&live);
        if let Some((_, id, descending)) = seek {
            sql.push(if descending {
                " AND id < "
            } else {
                " AND id > "
            })
            .bind(id);
        }
    };
    let mut sql = select(backend);
    let limit = i64::try_from(per_page).unwrap_or(i64::MAX);
    let skip = i64::try_from(passed).unwrap_or(i64::MAX);
    let deep = is_deep(passed, per_page, total.saturating_sub(offset - passed));
    match hint.filter(|_| deep && sorts_by_id(query.sort)) {
        // Deep pages: walking the table in id order would evaluate the filter on every row
        // before the offset; the narrow index yields the matching ids, and only the page's
        // rows are read.
        Some(hint) => {
            sql.push(" WHERE id IN (SELECT id FROM items").push(&hint);
            push_live(&mut sql);
            push_filters(&mut sql)?;
            push_order(&mut sql, "data", query.sort, scope)?;
            sql.push(" LIMIT ")
                .bind(limit)
                .push(" OFFSET ")
                .bind(skip)
                .push(")");
            push_order(&mut sql, "data", query.sort, scope)?;
        }
        None => {
            push_live(&mut sql);
            push_filters(&mut sql)?;
            push_order(&mut sql, "data", query.sort, scope)?;
            sql.push(" LIMIT ").bind(limit).push(" OFFSET ").bind(skip);
        }
    }
    let items = sql
        .all_as::<ItemRow, _>(db)
        .await?
        .into_iter()
        .map(Item::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::new(items, total, page, per_page))
}

/// The live item `id` of the collection, if it matches `filter` (the role's item filter, compared
/// in the default locale: an item outside it does not exist for the role).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn get_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    id: i64,
    filter: Option<&Filter>,
) -> Result<Option<Item>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = select(db.get_database_backend());
    sql.push(" WHERE id = ")
        .bind(id)
        .push(" AND collection_id = ")
        .bind(collection.sql_id()?)
        .push(" AND deleted_at IS NULL");
    if let Some(filter) = filter {
        push_filter(&mut sql, "data", filter, &role_filter_scope(scope))?;
    }
    sql.one_as::<ItemRow, _>(db)
        .await?
        .map(Item::try_from)
        .transpose()
}

/// Live items of one collection by id, in one query (batched relation expansion). Missing ids
/// are skipped; the order is by id.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection_id, count = ids.len()))]
pub async fn items_by_ids<C: ConnectionTrait>(
    db: &C,
    collection_id: i64,
    ids: &[i64],
) -> Result<Vec<Item>, StorageError> {
    let mut ids: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    ids.sort_unstable();
    ids.dedup();
    let Some(cid) = id_param(collection_id) else {
        return Ok(Vec::new());
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(ids.len());
    // Chunks keep the bind count far below SQLite's and PostgreSQL's limits.
    for chunk in ids.chunks(500) {
        let mut sql = select(db.get_database_backend());
        sql.push(" WHERE collection_id = ")
            .bind(cid)
            .push(" AND deleted_at IS NULL AND id IN ");
        sql.bind_list(chunk.iter().copied());
        sql.push(" ORDER BY id");
        for row in sql.all_as::<ItemRow, _>(db).await? {
            out.push(Item::try_from(row)?);
        }
    }
    Ok(out)
}

fn check_capability(
    grant: &Authorized<ItemWrite>,
    collection: &Collection,
    action: CollectionAction,
) -> Result<(), StorageError> {
    let write = grant.get();
    if write.collection != collection.slug || write.action != action {
        return Err(StorageError::conflict(format!(
            "a {} capability for {} cannot {} in {}",
            write.action.as_str(),
            write.collection,
            action.as_str(),
            collection.slug
        )));
    }
    Ok(())
}

/// Evaluates `decide` on a stored item as every role item filter sees it, the one view the SQL
/// of [`role_filter_scope`] also compares: translatable values flattened to the project's
/// default locale, system timestamps in RFC 3339. Write admission, relation expansion, a
/// write's response and `vellum-admin explain` all go through here, so none of them can judge
/// an item in another locale than list and show do.
pub fn with_role_view<R>(
    collection: &Collection,
    locales: &ContentLocales,
    item: &Item,
    decide: impl FnOnce(&ItemRef<'_>) -> R,
) -> R {
    role_view(
        collection,
        locales,
        item.id,
        item.created_at,
        item.updated_at,
        &item.data,
        decide,
    )
}

fn role_view<R>(
    collection: &Collection,
    locales: &ContentLocales,
    id: i64,
    created_at: Option<OffsetDateTime>,
    updated_at: Option<OffsetDateTime>,
    data: &Map<String, Json>,
    decide: impl FnOnce(&ItemRef<'_>) -> R,
) -> R {
    use time::format_description::well_known::Rfc3339;
    let flat = flatten_for_read(
        collection.schema(),
        data,
        &LocaleSelection::Flatten(locales.default_locale().clone()),
        locales,
    );
    let created = created_at.and_then(|t| t.format(&Rfc3339).ok());
    let updated = updated_at.and_then(|t| t.format(&Rfc3339).ok());
    decide(&ItemRef {
        id: Some(id),
        created_at: created.as_deref(),
        updated_at: updated.as_deref(),
        data: &flat,
    })
}

/// Whether the item as written still falls inside the capability's item filter, seen as every
/// read sees it ([`with_role_view`]). Evaluated on the item as it will be stored (id and
/// timestamps included, so a filter on them behaves as it does in SQL).
fn admits(
    grant: &Authorized<ItemWrite>,
    collection: &Collection,
    scope: &FilterScope<'_>,
    id: i64,
    created_at: Option<OffsetDateTime>,
    updated_at: OffsetDateTime,
    data: &Map<String, Json>,
) -> bool {
    if grant.get().item_filter.is_none() {
        return true;
    }
    role_view(
        collection,
        scope.locales,
        id,
        created_at,
        Some(updated_at),
        data,
        |item| grant.get().admits(item),
    )
}

/// Creates an item from a validated write, with its revision, links and `unique` claims.
///
/// # Errors
/// [`StorageError::OutsideItemFilter`] when the new item falls outside the role's item filter,
/// [`StorageError::Invalid`] when a `unique` value is taken or a link points at no live item or
/// file where its field points, [`StorageError::Conflict`] when the collection is a singleton
/// that has its item ([`crate::singleton`]), a database error otherwise; nothing is written in
/// any of these cases.
pub async fn create_item<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    write: &PreparedWrite,
    user_id: Option<i64>,
) -> Result<Item, StorageError> {
    create_item_queuing(db, collection, scope, grant, write, user_id, None).await
}

/// [`create_item`], queuing `outbox`'s jobs for the new item in the same transaction.
///
/// # Errors
/// As [`create_item`]; a failure to queue writes nothing either.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn create_item_queuing<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    write: &PreparedWrite,
    user_id: Option<i64>,
    outbox: Option<&Outbox<'_>>,
) -> Result<Item, StorageError> {
    check_capability(grant, collection, CollectionAction::Create)?;
    let tx = begin_write(db).await?;
    if collection.is_singleton {
        refuse_second_item(&tx, collection).await?;
    }
    let backend = tx.get_database_backend();
    let at = now();
    let user = user_id.and_then(id_param);
    let data = Json::Object(write.data.clone());
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO items (collection_id, data, created_at, updated_at, user_created_id, user_updated_id) VALUES (")
        .bind(collection.sql_id()?)
        .push(", ")
        .bind_json(&data)
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(user)
        .push(", ")
        .bind(user)
        .push(")");
    let id = sql.insert_returning_id(&tx).await?;
    // Checked once the id exists (a filter may name it); returning drops `tx`, rolling back.
    if !admits(grant, collection, scope, id, Some(at), at, &write.data) {
        return Err(StorageError::OutsideItemFilter {
            collection: grant.get().collection.clone(),
        });
    }
    check_references(&tx, collection, &write.data, None, None).await?;
    claim_unique(&tx, collection, id, &write.unique_checks).await?;
    sync_links(&tx, collection, id, &write.data, None).await?;
    record_revision(&tx, id, &data, user).await?;
    enqueue_outbox(&tx, outbox, id).await?;
    tx.commit().await?;
    Ok(Item {
        id,
        collection_id: collection.id,
        data: write.data.clone(),
        created_at: Some(at),
        updated_at: Some(at),
        deleted_at: None,
        user_created_id: user.map(i64::from),
        user_updated_id: user.map(i64::from),
    })
}

/// Updates item `id`: inside one transaction the stored item is locked and read (it must be
/// live and inside the capability's item filter, else [`StorageError::NotFound`]), `prepare`
/// merges the request into it (the domain crate's `prepare_write` in update mode), and the
/// result is stored with a revision, its links and `unique` claims.
///
/// # Errors
/// [`StorageError::NotFound`], [`StorageError::Invalid`] (from `prepare`, a taken `unique`
/// value, or a link the update adds to the fields it sends that points at no live item or file),
/// [`StorageError::OutsideItemFilter`] (the result leaves the filter), or a database
/// error; nothing is written in any of these cases.
pub async fn update_item<C, F>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    id: i64,
    user_id: Option<i64>,
    prepare: F,
) -> Result<Item, StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    F: FnOnce(&Item) -> Result<PreparedWrite, ValidationErrors>,
{
    update_item_queuing(db, collection, scope, grant, (id, user_id), prepare, None).await
}

/// [`update_item`] of (`id`, `user_id`), queuing `outbox`'s jobs for the item in the same
/// transaction.
///
/// # Errors
/// As [`update_item`]; a failure to queue writes nothing either.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = target.0))]
pub async fn update_item_queuing<C, F>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    target: (i64, Option<i64>),
    prepare: F,
    outbox: Option<&Outbox<'_>>,
) -> Result<Item, StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    F: FnOnce(&Item) -> Result<PreparedWrite, ValidationErrors>,
{
    let (id, user_id) = target;
    check_capability(grant, collection, CollectionAction::Update)?;
    let tx = begin_write(db).await?;
    let existing = lock_item(&tx, collection, scope, grant, id).await?;
    let write = prepare(&existing).map_err(StorageError::Invalid)?;
    let at = now();
    if !admits(
        grant,
        collection,
        scope,
        existing.id,
        existing.created_at,
        at,
        &write.data,
    ) {
        return Err(StorageError::OutsideItemFilter {
            collection: grant.get().collection.clone(),
        });
    }
    check_references(
        &tx,
        collection,
        &write.data,
        Some(&write.changed),
        Some(&existing.data),
    )
    .await?;
    let backend = tx.get_database_backend();
    let user = user_id.and_then(id_param);
    let data = Json::Object(write.data.clone());
    let mut sql = Sql::new(backend);
    sql.push("UPDATE items SET data = ")
        .bind_json(&data)
        .push(", updated_at = ")
        .bind(at)
        .push(", user_updated_id = ")
        .bind(user)
        .push(" WHERE id = ")
        .bind(id_param(existing.id).unwrap_or(0));
    sql.execute(&tx).await?;
    release_unique(&tx, existing.id, Some(&write.changed)).await?;
    claim_unique(&tx, collection, existing.id, &write.unique_checks).await?;
    sync_links(
        &tx,
        collection,
        existing.id,
        &write.data,
        Some(&write.changed),
    )
    .await?;
    record_revision(&tx, existing.id, &data, user).await?;
    enqueue_outbox(&tx, outbox, existing.id).await?;
    tx.commit().await?;
    Ok(Item {
        data: write.data,
        updated_at: Some(at),
        user_updated_id: user.map(i64::from),
        ..existing
    })
}

/// Reads the live item inside `tx` with a write lock: `FOR UPDATE` on PostgreSQL; on SQLite the
/// transaction already holds the database's write lock ([`begin_write`]).
async fn lock_item<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    id: i64,
) -> Result<Item, StorageError> {
    let not_found = StorageError::NotFound { what: "item" };
    let Some(id32) = id_param(id) else {
        return Err(not_found);
    };
    let backend = tx.get_database_backend();
    let mut sql = select(backend);
    sql.push(" WHERE id = ")
        .bind(id32)
        .push(" AND collection_id = ")
        .bind(collection.sql_id()?)
        .push(" AND deleted_at IS NULL");
    if let Some(filter) = &grant.get().item_filter {
        push_filter(&mut sql, "data", filter, &role_filter_scope(scope))?;
    }
    if backend == DbBackend::Postgres {
        sql.push(" FOR UPDATE");
    }
    match sql.one_as::<ItemRow, _>(tx).await? {
        Some(row) => Item::try_from(row),
        None => Err(not_found),
    }
}

/// Soft-deletes item `id` (it must be live and inside the capability's item filter). Revisions
/// and `unique` claims are kept, so a restore can never collide.
///
/// # Errors
/// [`StorageError::NotFound`] or a database error.
pub async fn soft_delete_item<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    id: i64,
) -> Result<(), StorageError> {
    soft_delete_item_queuing(db, collection, scope, grant, id, None).await
}

/// [`soft_delete_item`], queuing `outbox`'s jobs for the item in the same transaction.
///
/// # Errors
/// As [`soft_delete_item`]; a failure to queue deletes nothing either.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn soft_delete_item_queuing<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    grant: &Authorized<ItemWrite>,
    id: i64,
    outbox: Option<&Outbox<'_>>,
) -> Result<(), StorageError> {
    check_capability(grant, collection, CollectionAction::Delete)?;
    let tx = begin_write(db).await?;
    let item = lock_item(&tx, collection, scope, grant, id).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE items SET deleted_at = ")
        .bind(now())
        .push(" WHERE id = ")
        .bind(id_param(item.id).unwrap_or(0));
    sql.execute(&tx).await?;
    enqueue_outbox(&tx, outbox, item.id).await?;
    tx.commit().await?;
    Ok(())
}

/// How many items the collection holds, live or soft-deleted (provisioning seeds only empty
/// collections).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn count_all_items<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM items WHERE collection_id = ")
        .bind(collection.sql_id()?);
    sql.count(db).await
}

/// Every live item of the collection in id order (export; not for request paths).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn all_live_items<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
) -> Result<Vec<Item>, StorageError> {
    let mut sql = select(db.get_database_backend());
    sql.push(" WHERE collection_id = ")
        .bind(collection.sql_id()?)
        .push(" AND deleted_at IS NULL ORDER BY id");
    sql.all_as::<ItemRow, _>(db)
        .await?
        .into_iter()
        .map(Item::try_from)
        .collect()
}

/// The revisions of an item, oldest first (they survive soft deletion).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(item = item_id))]
pub async fn revisions<C: ConnectionTrait>(
    db: &C,
    item_id: i64,
) -> Result<Vec<Revision>, StorageError> {
    let Some(id) = id_param(item_id) else {
        return Ok(Vec::new());
    };
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT id, item_id, user_id, created_at, ")
        .push(&json_out(backend, "data"))
        .push(" AS data FROM item_revisions WHERE item_id = ")
        .bind(id)
        .push(" ORDER BY id");
    sql.all_as::<RevisionRow, _>(db)
        .await?
        .into_iter()
        .map(Revision::try_from)
        .collect()
}

impl TryFrom<RevisionRow> for Revision {
    type Error = StorageError;

    fn try_from(row: RevisionRow) -> Result<Self, StorageError> {
        Ok(Revision {
            id: i64::from(row.id),
            item_id: i64::from(row.item_id),
            data: match parse_json(row.data.as_deref())? {
                Json::Object(map) => map,
                _ => Map::new(),
            },
            user_id: row.user_id.map(i64::from),
            created_at: row.created_at,
        })
    }
}

async fn record_revision<C: ConnectionTrait>(
    tx: &C,
    item_id: i64,
    data: &Json,
    user: Option<i32>,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("INSERT INTO item_revisions (item_id, data, user_id, created_at) VALUES (")
        .bind(id_param(item_id).unwrap_or(0))
        .push(", ")
        .bind_json(data)
        .push(", ")
        .bind(user)
        .push(", ")
        .bind(now())
        .push(")");
    sql.execute(tx).await?;
    Ok(())
}

/// Creates an item without a policy capability, for provisioning (`vellum-admin apply` seeds
/// items as the operator, who is above roles). Same transaction, revision, links and claims as
/// [`create_item`].
///
/// # Errors
/// As [`create_item`], without the item filter.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn seed_item<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    write: &PreparedWrite,
) -> Result<Item, StorageError> {
    let grant = vellum_policy::Role::from_json("super-admin", &serde_json::json!({}))
        .map_err(StorageError::corrupt)?
        .authorize_item_write(
            &collection.slug,
            CollectionAction::Create,
            std::iter::empty(),
        )
        .map_err(|d| StorageError::conflict(format!("{d:?}")))?;
    let locales = vellum_domain::ContentLocales::single(
        vellum_domain::LocaleCode::parse("en").map_err(StorageError::corrupt)?,
    );
    let locale = locales.default_locale().clone();
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &locales,
        locale: &locale,
    };
    create_item(db, collection, &scope, &grant, write, None).await
}
