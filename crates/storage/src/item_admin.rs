//! The admin app's item queries: the trash with filter and sort, the ids an export writes, items
//! by id deleted or not, deletion for good, and revisions a page at a time.
//!
//! These act above roles (the application layer checked an admin permission), so none takes a
//! policy capability or a role's item filter.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult};
use tracing::instrument;
use vellum_policy::Filter;

use crate::StorageError;
use crate::filter_sql::{FilterScope, SortKey, push_filter, push_order, scalar_index_hint};
use crate::items::{Item, ItemRow, ListItems, Page, Revision, RevisionRow, select};
use crate::model::Collection;
use crate::sql::{Sql, id_param, json_out};

/// Which items of a collection an admin query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    /// Live items (not soft-deleted).
    Live,
    /// Soft-deleted items only (the trash).
    Trashed,
}

impl Shelf {
    fn condition(self) -> &'static str {
        match self {
            Self::Live => " AND deleted_at IS NULL",
            Self::Trashed => " AND deleted_at IS NOT NULL",
        }
    }
}

#[derive(FromQueryResult)]
struct IdRow {
    id: i32,
}

/// A page of the collection's soft-deleted items matching `query` (filter, sort, page), with
/// the total of matches. Live items are listed by [`crate::items::list_items`].
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn list_trashed<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    query: &ListItems<'_>,
) -> Result<Page<Item>, StorageError> {
    let backend = db.get_database_backend();
    let cid = collection.sql_id()?;
    let (page, per_page) = (query.page.max(1), query.per_page.max(1));
    let mut count = Sql::new(backend);
    count
        .push("SELECT COUNT(*) AS n FROM items WHERE collection_id = ")
        .bind(cid)
        .push(Shelf::Trashed.condition());
    push_filter(&mut count, "data", query.filter, scope)?;
    let total = count.count(db).await?;
    let offset = (page - 1).saturating_mul(per_page);
    if offset >= total {
        return Ok(Page::new(Vec::new(), total, page, per_page));
    }
    let mut sql = select(backend);
    sql.push(" WHERE collection_id = ")
        .bind(cid)
        .push(Shelf::Trashed.condition());
    push_filter(&mut sql, "data", query.filter, scope)?;
    push_order(&mut sql, "data", query.sort, scope)?;
    sql.push(" LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(offset).unwrap_or(i64::MAX));
    let items = sql
        .all_as::<ItemRow, _>(db)
        .await?
        .into_iter()
        .map(Item::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::new(items, total, page, per_page))
}

/// What an export writes: how many items on `shelf` match `filter`, and the ids of the first
/// `limit` of them in `sort` order. Only ids are held (at most `limit` of them); the rows are
/// read afterwards a chunk at a time ([`items_in_order`]), so an export never holds its whole
/// result.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, limit))]
pub async fn matching_ids<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    scope: &FilterScope<'_>,
    filter: &Filter,
    sort: &[SortKey],
    shelf: Shelf,
    limit: u64,
) -> Result<(u64, Vec<i64>), StorageError> {
    let backend = db.get_database_backend();
    let cid = collection.sql_id()?;
    // A literal collection id lets SQLite prove the partial scalar index applies (as the list).
    let live = format!(" WHERE collection_id = {cid}{}", shelf.condition());
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM items");
    if shelf == Shelf::Live
        && let Some(hint) = scalar_index_hint(backend, collection.id, collection.schema(), filter)
    {
        count.push(&hint);
    }
    count.push(&live);
    push_filter(&mut count, "data", filter, scope)?;
    let total = count.count(db).await?;
    if total == 0 || limit == 0 {
        return Ok((total, Vec::new()));
    }
    let mut sql = Sql::new(backend);
    sql.push("SELECT id FROM items").push(&live);
    push_filter(&mut sql, "data", filter, scope)?;
    push_order(&mut sql, "data", sort, scope)?;
    sql.push(" LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    let ids = sql
        .all_as::<IdRow, _>(db)
        .await?
        .into_iter()
        .map(|row| i64::from(row.id))
        .collect();
    Ok((total, ids))
}

/// The items of the collection with these ids, deleted or not, in the order of `ids` (an id
/// that names no item of the collection is skipped). One query; callers pass a chunk.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, count = ids.len()))]
pub async fn items_in_order<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    ids: &[i64],
) -> Result<Vec<Item>, StorageError> {
    let params: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    if params.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = select(db.get_database_backend());
    sql.push(" WHERE collection_id = ")
        .bind(collection.sql_id()?)
        .push(" AND id IN ");
    sql.bind_list(params);
    let mut found: HashMap<i64, Item> = HashMap::with_capacity(ids.len());
    for row in sql.all_as::<ItemRow, _>(db).await? {
        let item = Item::try_from(row)?;
        found.insert(item.id, item);
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// The item `id` of the collection, deleted or not.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn find_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    id: i64,
) -> Result<Option<Item>, StorageError> {
    Ok(items_in_order(db, collection, &[id]).await?.pop())
}

/// Deletes the item `id` of the collection for good, deleted or not: its revisions, link rows
/// and `unique` claims go with it (foreign keys cascade), so its unique values are free again.
///
/// # Errors
/// [`StorageError::NotFound`] when the collection has no such item; a database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn purge_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    id: i64,
) -> Result<(), StorageError> {
    let Some(id) = id_param(id) else {
        return Err(StorageError::NotFound { what: "item" });
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM items WHERE id = ")
        .bind(id)
        .push(" AND collection_id = ")
        .bind(collection.sql_id()?);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "item" });
    }
    Ok(())
}

fn revision_select(backend: DbBackend, item_id: i32) -> Sql {
    let mut sql = Sql::new(backend);
    sql.push("SELECT id, item_id, user_id, created_at, ")
        .push(&json_out(backend, "data"))
        .push(" AS data FROM item_revisions WHERE item_id = ")
        .bind(item_id);
    sql
}

/// A page of an item's revisions, newest first.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(item = item_id, page))]
pub async fn revision_page<C: ConnectionTrait>(
    db: &C,
    item_id: i64,
    page: u64,
    per_page: u64,
) -> Result<Page<Revision>, StorageError> {
    let (page, per_page) = (page.max(1), per_page.max(1));
    let Some(id) = id_param(item_id) else {
        return Ok(Page::new(Vec::new(), 0, page, per_page));
    };
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count
        .push("SELECT COUNT(*) AS n FROM item_revisions WHERE item_id = ")
        .bind(id);
    let total = count.count(db).await?;
    let mut sql = revision_select(backend, id);
    sql.push(" ORDER BY id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from((page - 1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let revisions = sql
        .all_as::<RevisionRow, _>(db)
        .await?
        .into_iter()
        .map(Revision::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::new(revisions, total, page, per_page))
}

/// The revision `revision_id` of item `item_id`, if it is one of that item's.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(item = item_id, revision = revision_id))]
pub async fn find_revision<C: ConnectionTrait>(
    db: &C,
    item_id: i64,
    revision_id: i64,
) -> Result<Option<Revision>, StorageError> {
    let (Some(item), Some(revision)) = (id_param(item_id), id_param(revision_id)) else {
        return Ok(None);
    };
    let mut sql = revision_select(db.get_database_backend(), item);
    sql.push(" AND id = ").bind(revision);
    sql.one_as::<RevisionRow, _>(db)
        .await?
        .map(Revision::try_from)
        .transpose()
}
