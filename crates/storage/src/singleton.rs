//! A singleton collection holds one item. The rule is enforced where items are created, inside
//! the create's transaction and under a lock that every create of the same singleton takes, so
//! two concurrent creates cannot both see an empty collection: on SQLite the write lock taken at
//! `BEGIN IMMEDIATE`, on PostgreSQL the collection's row locked `FOR UPDATE` before the items
//! are counted (under READ COMMITTED the count then sees what the winner committed).
//!
//! A soft-deleted item still counts: restoring it must never make two, and it keeps its
//! revisions. Emptying a singleton takes a force delete.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult};
use tracing::instrument;

use crate::StorageError;
use crate::error::DATA_FIELD;
use crate::model::Collection;
use crate::sql::{IdRow, Sql};

/// The singleton's item, live or soft-deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SingletonItem {
    pub id: i64,
    pub deleted: bool,
}

#[derive(FromQueryResult)]
struct ItemStateRow {
    id: i32,
    deleted: bool,
}

#[derive(FromQueryResult)]
struct SingletonRow {
    is_singleton: bool,
}

/// The collection's first item (the only one of a singleton), live or soft-deleted.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug))]
pub async fn singleton_item<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
) -> Result<Option<SingletonItem>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, (deleted_at IS NOT NULL) AS deleted FROM items WHERE collection_id = ")
        .bind(collection.sql_id()?)
        .push(" ORDER BY id LIMIT 1");
    Ok(sql
        .one_as::<ItemStateRow, _>(db)
        .await?
        .map(|row| SingletonItem {
            id: i64::from(row.id),
            deleted: row.deleted,
        }))
}

/// Refuses a create in a singleton collection that already holds an item. Must run inside the
/// create's write transaction (`tx`), before the insert.
///
/// # Errors
/// [`StorageError::Conflict`] on `data` when the singleton has its item; a database error.
pub(crate) async fn refuse_second_item<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    let mut lock = Sql::new(backend);
    lock.push("SELECT is_singleton FROM collections WHERE id = ")
        .bind(collection.sql_id()?);
    if backend == DbBackend::Postgres {
        lock.push(" FOR UPDATE");
    }
    // Checked again under the lock: a collection that stopped being a singleton since the
    // caller loaded it takes a second item.
    let singleton = lock
        .one_as::<SingletonRow, _>(tx)
        .await?
        .is_some_and(|row| row.is_singleton);
    if !singleton {
        return Ok(());
    }
    let mut sql = Sql::new(backend);
    sql.push("SELECT id FROM items WHERE collection_id = ")
        .bind(collection.sql_id()?)
        .push(" LIMIT 1");
    if sql.one_as::<IdRow, _>(tx).await?.is_some() {
        return Err(StorageError::Conflict {
            field: DATA_FIELD.to_owned(),
            message: format!(
                "The collection {} is a singleton and already has its item: update that item \
                 (admin app: PUT /collections/{}/singleton-content).",
                collection.slug, collection.slug
            ),
        });
    }
    Ok(())
}
