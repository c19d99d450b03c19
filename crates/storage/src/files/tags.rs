//! A file's tags (`file_tags`): short labels the file manager filters by. The application layer
//! normalizes them (trimmed, lower-case, bounded); here they are stored as given, once per file.
//!
//! Writes run under the tree lock, like every file manager write, so a tag is never added to a
//! row that a concurrent force delete is removing (which would fail on the foreign key instead
//! of answering 404).

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use tracing::instrument;

use super::tree::lock_tree;
use crate::StorageError;
use crate::sql::{Sql, begin_write, id_param};

/// The most tags one file may carry: a file manager label set, not a keyword index.
pub const MAX_TAGS_PER_FILE: u64 = 100;

/// The most distinct tags [`tag_counts`] answers.
pub const MAX_TAG_LIST: u64 = 1_000;

/// A tag and how many live files carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagCount {
    pub tag: String,
    pub files: u64,
}

/// Adds `tags` to the live file `id` (those it already has are left alone) and answers all of
/// its tags, sorted.
///
/// # Errors
/// [`StorageError::NotFound`] when the file is missing or in the trash;
/// [`StorageError::Conflict`] on `tags` when the file would carry more than
/// [`MAX_TAGS_PER_FILE`]; [`StorageError::Db`] when a query fails.
#[instrument(skip_all, err, fields(file_id = id, count = tags.len()))]
pub async fn add_tags<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
    tags: &[String],
) -> Result<Vec<String>, StorageError> {
    let id32 = id_param(id).ok_or(StorageError::NotFound { what: "file" })?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    require_live(&txn, id32).await?;
    let current = tags_of_one(&txn, id32).await?;
    let new: Vec<&String> = tags.iter().filter(|t| !current.contains(t)).collect();
    let count = u64::try_from(current.len() + new.len()).unwrap_or(u64::MAX);
    if count > MAX_TAGS_PER_FILE {
        return Err(StorageError::conflict_on(
            "tags",
            format!("A file may carry at most {MAX_TAGS_PER_FILE} tags."),
        ));
    }
    if !new.is_empty() {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("INSERT INTO file_tags (file_id, tag) VALUES ");
        for (i, tag) in new.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.push("(")
                .bind(id32)
                .push(", ")
                .bind(tag.as_str())
                .push(")");
        }
        sql.push(" ON CONFLICT (file_id, tag) DO NOTHING");
        sql.execute(&txn).await?;
    }
    let all = tags_of_one(&txn, id32).await?;
    txn.commit().await?;
    Ok(all)
}

/// Removes `tags` from the live file `id` in one statement; answers those it carried, sorted
/// (empty when it carried none of them).
///
/// # Errors
/// [`StorageError::NotFound`] when the file is missing or in the trash; [`StorageError::Db`].
#[instrument(skip_all, err, fields(file_id = id, count = tags.len()))]
pub async fn remove_tags<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
    tags: &[String],
) -> Result<Vec<String>, StorageError> {
    let id32 = id_param(id).ok_or(StorageError::NotFound { what: "file" })?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    require_live(&txn, id32).await?;
    let current = tags_of_one(&txn, id32).await?;
    let removed: Vec<String> = current.into_iter().filter(|t| tags.contains(t)).collect();
    if !removed.is_empty() {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("DELETE FROM file_tags WHERE file_id = ")
            .bind(id32)
            .push(" AND tag IN ");
        sql.bind_list(removed.clone());
        sql.execute(&txn).await?;
    }
    txn.commit().await?;
    Ok(removed)
}

/// The tags of each of `ids` (a page's worth: the caller bounds it), sorted, in one query;
/// files without tags are absent from the map.
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn tags_of<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<HashMap<i64, Vec<String>>, StorageError> {
    let ids: Vec<i32> = ids.iter().copied().filter_map(id_param).collect();
    let mut out: HashMap<i64, Vec<String>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT file_id, tag FROM file_tags WHERE file_id IN ");
    sql.bind_list(ids);
    sql.push(" ORDER BY file_id, tag");
    for row in sql.all_as::<TagRow, _>(db).await? {
        out.entry(i64::from(row.file_id)).or_default().push(row.tag);
    }
    Ok(out)
}

/// Every tag carried by a live file with how many carry it, by tag, at most [`MAX_TAG_LIST`].
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err)]
pub async fn tag_counts<C: ConnectionTrait>(db: &C) -> Result<Vec<TagCount>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT g.tag, COUNT(*) AS n FROM file_tags g JOIN files f ON f.id = g.file_id \
         WHERE f.deleted_at IS NULL GROUP BY g.tag ORDER BY g.tag LIMIT ",
    )
    .bind(i64::try_from(MAX_TAG_LIST).unwrap_or(i64::MAX));
    sql.all_as::<CountRow, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            Ok(TagCount {
                tag: row.tag,
                files: u64::try_from(row.n).map_err(StorageError::corrupt)?,
            })
        })
        .collect()
}

/// [`StorageError::NotFound`] unless `id` is a live row.
pub(super) async fn require_live<C: ConnectionTrait>(txn: &C, id: i32) -> Result<(), StorageError> {
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT id FROM files WHERE id = ")
        .bind(id)
        .push(" AND deleted_at IS NULL");
    if sql.one(txn).await?.is_some() {
        Ok(())
    } else {
        Err(StorageError::NotFound { what: "file" })
    }
}

async fn tags_of_one<C: ConnectionTrait>(txn: &C, id: i32) -> Result<Vec<String>, StorageError> {
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT file_id, tag FROM file_tags WHERE file_id = ")
        .bind(id)
        .push(" ORDER BY tag");
    Ok(sql
        .all_as::<TagRow, _>(txn)
        .await?
        .into_iter()
        .map(|r| r.tag)
        .collect())
}

#[derive(FromQueryResult)]
struct TagRow {
    file_id: i32,
    tag: String,
}

#[derive(FromQueryResult)]
struct CountRow {
    tag: String,
    n: i64,
}
