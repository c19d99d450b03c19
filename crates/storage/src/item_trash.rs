//! The admin trash of items: soft-deleted items listed newest first, restored, or deleted for
//! good. Admin only: the callers checked the permission (re-exported from [`crate::items`]).

use sea_orm::ConnectionTrait;
use tracing::instrument;

use crate::StorageError;
use crate::items::{Item, ItemRow, select};
use crate::model::Collection;
use crate::paging::Page;
use crate::sql::{Sql, id_param};

/// Soft-deleted items of the collection (the admin trash), newest deletion first.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, page))]
pub async fn deleted_items<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    page: u64,
    per_page: u64,
) -> Result<Page<Item>, StorageError> {
    let backend = db.get_database_backend();
    let cid = collection.sql_id()?;
    let (page, per_page) = (page.max(1), per_page.max(1));
    let mut count = Sql::new(backend);
    count
        .push("SELECT COUNT(*) AS n FROM items WHERE collection_id = ")
        .bind(cid)
        .push(" AND deleted_at IS NOT NULL");
    let total = count.count(db).await?;
    let mut sql = select(backend);
    sql.push(" WHERE collection_id = ")
        .bind(cid)
        .push(" AND deleted_at IS NOT NULL ORDER BY deleted_at DESC, id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from((page - 1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let items = sql
        .all_as::<ItemRow, _>(db)
        .await?
        .into_iter()
        .map(Item::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::new(items, total, page, per_page))
}

/// Restores a soft-deleted item (admin only: the caller checked the restore permission).
///
/// # Errors
/// [`StorageError::NotFound`] when the item is not soft-deleted in this collection.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn restore_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    id: i64,
) -> Result<(), StorageError> {
    on_trashed_item(db, collection, id, "UPDATE items SET deleted_at = NULL").await
}

/// Runs `statement` (an UPDATE or DELETE of `items`) on the soft-deleted item `id` of the
/// collection; [`StorageError::NotFound`] when there is no such item.
async fn on_trashed_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    id: i64,
    statement: &str,
) -> Result<(), StorageError> {
    let Some(id) = id_param(id) else {
        return Err(StorageError::NotFound { what: "item" });
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(statement)
        .push(" WHERE id = ")
        .bind(id)
        .push(" AND collection_id = ")
        .bind(collection.sql_id()?)
        .push(" AND deleted_at IS NOT NULL");
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "item" });
    }
    Ok(())
}

/// Deletes a soft-deleted item for good, with its revisions, links and claims (foreign keys
/// cascade). Admin only; a live item must be soft-deleted first.
///
/// # Errors
/// [`StorageError::NotFound`] when the item is not soft-deleted in this collection.
#[instrument(skip_all, err, fields(collection = %collection.slug, item = id))]
pub async fn force_delete_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    id: i64,
) -> Result<(), StorageError> {
    on_trashed_item(db, collection, id, "DELETE FROM items").await
}
