//! The folder tree's rules, checked inside a tree write's transaction: one writer at a time,
//! a parent that is a live folder, folder names unique among siblings, no cycles.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult};

use super::FileKind;
use crate::StorageError;
use crate::sql::{Sql, id_param};

/// Key of the PostgreSQL advisory lock that serializes writes to the folder tree ("VELLUMFT").
const TREE_LOCK_KEY: i64 = 0x5645_4C4C_554D_4654;

/// The `type` of a row alone.
#[derive(FromQueryResult)]
struct KindRow {
    #[sea_orm(from_alias = "type")]
    kind: String,
}

/// Serializes tree writes on PostgreSQL; see the module docs. Released at commit or rollback.
pub(crate) async fn lock_tree<C: ConnectionTrait>(txn: &C) -> Result<(), StorageError> {
    if txn.get_database_backend() == DbBackend::Postgres {
        let mut sql = Sql::new(DbBackend::Postgres);
        sql.push("SELECT pg_advisory_xact_lock(")
            .bind(TREE_LOCK_KEY)
            .push(")");
        sql.execute(txn).await?;
    }
    Ok(())
}

/// `parent` as a bound value after checking it names a live folder (`None`: the top level).
/// The live folder `parent` (`None`: the top level). A private folder is a valid parent for any
/// role allowed to create: writing into it reads nothing from it (the upload's response shows
/// only what the uploader may read), and a create-only key dropping files into a private folder
/// is what private folders are for.
pub(super) async fn live_parent<C: ConnectionTrait>(
    txn: &C,
    parent: Option<i64>,
) -> Result<Option<i32>, StorageError> {
    let Some(parent) = parent else {
        return Ok(None);
    };
    let missing = || {
        StorageError::conflict_on(
            "parent_id",
            format!("the parent folder {parent} does not exist"),
        )
    };
    let id = id_param(parent).ok_or_else(missing)?;
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT type FROM files WHERE id = ")
        .bind(id)
        .push(" AND deleted_at IS NULL");
    let row = sql.one_as::<KindRow, _>(txn).await?.ok_or_else(missing)?;
    if FileKind::parse(&row.kind)? != FileKind::Folder {
        return Err(StorageError::conflict_on(
            "parent_id",
            format!("the parent {parent} is a file, not a folder"),
        ));
    }
    Ok(Some(id))
}

pub(super) async fn check_folder_name_free<C: ConnectionTrait>(
    txn: &C,
    parent: Option<i32>,
    name: &str,
    except: Option<i32>,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT id FROM files WHERE type = 'folder' AND deleted_at IS NULL AND filename = ")
        .bind(name);
    match parent {
        Some(parent) => sql.push(" AND parent_id = ").bind(parent),
        None => sql.push(" AND parent_id IS NULL"),
    };
    if let Some(except) = except {
        sql.push(" AND id <> ").bind(except);
    }
    if sql.one(txn).await?.is_some() {
        return Err(StorageError::conflict_on(
            "name",
            format!("a folder named {name:?} already exists here"),
        ));
    }
    Ok(())
}

/// Is `folder` the row `start` or one of its ancestors? Moving `folder` under `start` would then
/// make a cycle.
pub(super) async fn is_ancestor_or_self<C: ConnectionTrait>(
    txn: &C,
    folder: i32,
    start: i32,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("WITH RECURSIVE up(id) AS (SELECT id FROM files WHERE id = ")
        .bind(start)
        .push(
            " UNION SELECT f.parent_id FROM files f JOIN up u ON f.id = u.id \
             WHERE f.parent_id IS NOT NULL) SELECT id FROM up WHERE id = ",
        )
        .bind(folder);
    Ok(sql.one(txn).await?.is_some())
}

pub(super) fn check_name(name: &str) -> Result<(), StorageError> {
    if name.trim().is_empty() {
        return Err(StorageError::conflict_on(
            "name",
            "a name must not be empty",
        ));
    }
    Ok(())
}
