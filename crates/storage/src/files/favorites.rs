//! Per-user favorites (`file_favorites`): a user's shortcut list in the file manager. Nobody
//! else sees them; the browse filter and the resource's `favorite` flag read them per user.

use std::collections::HashSet;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use tracing::instrument;

use super::tags::require_live;
use super::tree::lock_tree;
use crate::StorageError;
use crate::sql::{Sql, begin_write, id_param, now};

/// Marks the live file `file` as a favorite of `user` (again is a no-op).
///
/// # Errors
/// [`StorageError::NotFound`] when the file is missing or in the trash; [`StorageError::Db`].
#[instrument(skip_all, err, fields(user_id = user, file_id = file))]
pub async fn add_favorite<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    user: i64,
    file: i64,
) -> Result<(), StorageError> {
    let file = id_param(file).ok_or(StorageError::NotFound { what: "file" })?;
    let user = id_param(user).ok_or(StorageError::NotFound { what: "user" })?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    require_live(&txn, file).await?;
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("INSERT INTO file_favorites (user_id, file_id, created_at) VALUES (")
        .bind(user)
        .push(", ")
        .bind(file)
        .push(", ")
        .bind(now())
        .push(") ON CONFLICT (user_id, file_id) DO NOTHING");
    sql.execute(&txn).await?;
    txn.commit().await?;
    Ok(())
}

/// Unmarks `file` for `user`; answers whether it was a favorite. A file in the trash can be
/// unmarked too (it stays out of the favorites view meanwhile).
///
/// # Errors
/// [`StorageError::NotFound`] when no such file exists; [`StorageError::Db`].
#[instrument(skip_all, err, fields(user_id = user, file_id = file))]
pub async fn remove_favorite<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    user: i64,
    file: i64,
) -> Result<bool, StorageError> {
    let file = id_param(file).ok_or(StorageError::NotFound { what: "file" })?;
    let Some(user) = id_param(user) else {
        return Ok(false);
    };
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let mut exists = Sql::new(txn.get_database_backend());
    exists.push("SELECT id FROM files WHERE id = ").bind(file);
    if exists.one(&txn).await?.is_none() {
        return Err(StorageError::NotFound { what: "file" });
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("DELETE FROM file_favorites WHERE user_id = ")
        .bind(user)
        .push(" AND file_id = ")
        .bind(file);
    let removed = sql.execute(&txn).await? > 0;
    txn.commit().await?;
    Ok(removed)
}

/// Which of `ids` (a page's worth: the caller bounds it) are favorites of `user`, in one query.
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err, fields(user_id = user, count = ids.len()))]
pub async fn favorites_among<C: ConnectionTrait>(
    db: &C,
    user: i64,
    ids: &[i64],
) -> Result<HashSet<i64>, StorageError> {
    let ids: Vec<i32> = ids.iter().copied().filter_map(id_param).collect();
    let Some(user) = id_param(user) else {
        return Ok(HashSet::new());
    };
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT file_id FROM file_favorites WHERE user_id = ")
        .bind(user)
        .push(" AND file_id IN ");
    sql.bind_list(ids);
    Ok(sql
        .all_as::<FavoriteRow, _>(db)
        .await?
        .into_iter()
        .map(|r| i64::from(r.file_id))
        .collect())
}

#[derive(FromQueryResult)]
struct FavoriteRow {
    file_id: i32,
}
