//! The file manager's trash: rows in any state (live or soft-deleted), restore of what was
//! deleted together, and force delete (issue 29). Soft delete itself is
//! [`super::soft_delete_file`].
//!
//! Restore brings back the row and every descendant stamped with the same `deleted_at` (what a
//! folder's soft delete took with it); rows deleted earlier on their own stay in the trash.
//!
//! Force delete follows one rule: it is refused while any item, live or in its collection's
//! trash, references the file or (for a folder) any row of its subtree, per the `item_files`
//! reverse index ([`crate::item_files`]); otherwise the rows go (a folder's subtree by the
//! `parent_id` cascade, tags, favorites and transform records by theirs), and after the commit
//! each blob is deleted when no remaining row names it, and each derivative when no remaining
//! file has its content (records of content another file has are handed to that file). The check is made
//! again after the delete, inside the same transaction: on PostgreSQL an item write that checked
//! the file before the delete holds a share lock on its row (see `links::live_ids`), so the
//! delete waits for it and the second check sees its reference; one that checks after finds no
//! file and is refused. On SQLite writers are serialized anyway.

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::{instrument, warn};

use super::FileKind;
use super::tree::{check_folder_name_free, live_parent, lock_tree};
use crate::StorageError;
use crate::blob::BlobStore;
use crate::item_files::{FileUse, items_using};
use crate::sql::{Sql, begin_write, id_param};

/// A row of `files` in any state, with what the trash needs of it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileState {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub kind: FileKind,
    pub filename: String,
    pub deleted_at: Option<OffsetDateTime>,
}

/// What [`force_delete_file`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum ForceDeleted {
    /// Refused: these items (at most the `limit` asked for) still reference the file or
    /// something inside the folder. Nothing was deleted.
    InUse(Vec<FileUse>),
    /// The rows are gone: `rows` counts them (a folder with its subtree); `blobs` is how many
    /// content blobs no other row named and were deleted.
    Deleted { rows: u64, blobs: u64 },
}

/// The row `id`, live or soft-deleted; `None` when there is none.
///
/// # Errors
/// A database error, or an unreadable row.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn find_any_file<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<FileState>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, parent_id, type, filename, deleted_at FROM files WHERE id = ")
        .bind(id);
    sql.one_as::<StateRow, _>(db)
        .await?
        .map(FileState::try_from)
        .transpose()
}

/// Restores the soft-deleted row `id` and every descendant deleted with it (the same
/// `deleted_at`, reached through rows that share it); answers how many rows came back.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; [`StorageError::Conflict`] on `file` when the
/// row is not in the trash, on `parent_id` when its folder is not live (restore that first), on
/// `filename` when a live folder of the same name now sits where a folder would return;
/// a database error.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn restore_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<u64, StorageError> {
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let file = find_any_file(&txn, id)
        .await?
        .ok_or(StorageError::NotFound { what: "file" })?;
    if file.deleted_at.is_none() {
        return Err(StorageError::conflict_on(
            "file",
            "The file is not in the trash.",
        ));
    }
    let id32 = id_param(file.id).ok_or(StorageError::NotFound { what: "file" })?;
    let parent = live_parent(&txn, file.parent_id).await.map_err(|_| {
        StorageError::conflict_on(
            "parent_id",
            "The folder this file was in is not live: restore or move it first.",
        )
    })?;
    if file.kind == FileKind::Folder {
        check_folder_name_free(&txn, parent, &file.filename, Some(id32))
            .await
            .map_err(|e| match e {
                StorageError::Conflict { message, .. } => {
                    StorageError::conflict_on("filename", message)
                }
                other => other,
            })?;
    }
    let mut sql = Sql::new(txn.get_database_backend());
    // A non-recursive `stamp` read in the recursive member compares timestamps in SQL, so no
    // round trip through Rust can change their text form (SQLite stores them as text).
    sql.push("WITH RECURSIVE stamp(at) AS (SELECT deleted_at FROM files WHERE id = ")
        .bind(id32)
        .push("), tree(id) AS (SELECT id FROM files WHERE id = ")
        .bind(id32)
        .push(
            " UNION SELECT f.id FROM files f JOIN tree t ON f.parent_id = t.id \
             JOIN stamp s ON f.deleted_at = s.at) \
             UPDATE files SET deleted_at = NULL WHERE id IN (SELECT id FROM tree)",
        );
    let restored = sql.execute(&txn).await?;
    txn.commit().await?;
    Ok(restored)
}

/// Force-deletes row `id` (live or soft-deleted) under the rule in the module docs; `limit`
/// caps the items a refusal names.
///
/// Blob and transform cleanup runs after the commit, each blob through
/// [`super::delete_unused_blob`] (which checks again under the tree lock); a failure there is
/// logged and leaves an orphan blob, never a row without its bytes.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; a database error (nothing is deleted).
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn force_delete_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    blobs: &dyn BlobStore,
    id: i64,
    limit: u64,
) -> Result<ForceDeleted, StorageError> {
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let file = find_any_file(&txn, id)
        .await?
        .ok_or(StorageError::NotFound { what: "file" })?;
    let id32 = id_param(file.id).ok_or(StorageError::NotFound { what: "file" })?;
    let users = items_using(&txn, file.id, limit, false).await?;
    if !users.is_empty() {
        return Ok(ForceDeleted::InUse(users));
    }
    let rows = subtree(&txn, id32).await?;
    let ids: Vec<i32> = rows.iter().map(|r| r.id).collect();
    let derived = hand_over_transforms(&txn, id32).await?;
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("DELETE FROM files WHERE id = ").bind(id32);
    sql.execute(&txn).await?;
    let late = items_using_ids(&txn, &ids, limit).await?;
    if !late.is_empty() {
        return Ok(ForceDeleted::InUse(late));
    }
    txn.commit().await?;

    let keys: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r.storage_key.as_deref())
        .collect();
    let mut freed = 0;
    for key in keys {
        match super::delete_unused_blob(db, blobs, key).await {
            Ok(true) => freed += 1,
            Ok(false) => {}
            Err(err) => warn!(key, error = %err, "a force-deleted file's blob was not deleted"),
        }
    }
    // A reader that still found one of these records re-checks the blob and renders again.
    for key in derived {
        if let Err(err) = blobs.delete(&key).await {
            warn!(key, error = %err, "a force-deleted file's derivative was not deleted");
        }
    }
    Ok(ForceDeleted::Deleted {
        rows: rows.len() as u64,
        blobs: freed,
    })
}

/// Transform records are per content but belong to the file that first asked for them (they
/// cascade with it). Before the subtree of `id` goes, records of content another file still has
/// are handed to that file (its derivatives stay valid and cached); the storage keys of the
/// others are answered, to delete once the rows (and, by cascade, the records) are gone.
async fn hand_over_transforms<C: ConnectionTrait>(
    txn: &C,
    id: i32,
) -> Result<Vec<String>, StorageError> {
    let tree = |sql: &mut Sql| {
        sql.push("WITH RECURSIVE tree(id) AS (SELECT id FROM files WHERE id = ")
            .bind(id)
            .push(" UNION SELECT f.id FROM files f JOIN tree t ON f.parent_id = t.id) ");
    };
    let survivor = "FROM files f WHERE f.content_hash = file_transforms.content_hash \
                    AND f.id NOT IN (SELECT id FROM tree)";
    let mut sql = Sql::new(txn.get_database_backend());
    tree(&mut sql);
    sql.push(&format!(
        "UPDATE file_transforms SET file_id = (SELECT MIN(f.id) {survivor}) \
         WHERE file_id IN (SELECT id FROM tree) AND EXISTS (SELECT 1 {survivor})"
    ));
    sql.execute(txn).await?;
    let mut sql = Sql::new(txn.get_database_backend());
    tree(&mut sql);
    sql.push(
        "SELECT DISTINCT storage_key FROM file_transforms WHERE file_id IN (SELECT id FROM tree)",
    );
    Ok(sql
        .all_as::<KeyRow, _>(txn)
        .await?
        .into_iter()
        .map(|row| row.storage_key)
        .collect())
}

#[derive(FromQueryResult)]
struct KeyRow {
    storage_key: String,
}

/// Ids per `IN` list: far below both backends' bind-parameter limits.
const IDS_PER_QUERY: usize = 1000;

/// Items referencing any of `ids` (rows already deleted in this transaction), up to `limit`.
async fn items_using_ids<C: ConnectionTrait>(
    txn: &C,
    ids: &[i32],
    limit: u64,
) -> Result<Vec<FileUse>, StorageError> {
    let mut found = Vec::new();
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push(
            "SELECT i.id AS item_id, i.collection_id AS collection_id, \
             CASE WHEN i.deleted_at IS NULL THEN 0 ELSE 1 END AS trashed \
             FROM items i WHERE i.id IN (SELECT item_id FROM item_files WHERE file_id IN ",
        );
        sql.bind_list(chunk.iter().copied());
        sql.push(") ORDER BY i.collection_id, i.id LIMIT ")
            .push(&limit.to_string());
        for row in sql.all_as::<UseRow, _>(txn).await? {
            found.push(FileUse {
                collection_id: i64::from(row.collection_id),
                item_id: i64::from(row.item_id),
                trashed: row.trashed != 0,
                data: None,
            });
        }
        if found.len() as u64 >= limit {
            break;
        }
    }
    found.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(found)
}

/// Row `id` and every row below it, deleted or not.
async fn subtree<C: ConnectionTrait>(txn: &C, id: i32) -> Result<Vec<SubtreeRow>, StorageError> {
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("WITH RECURSIVE tree(id) AS (SELECT id FROM files WHERE id = ")
        .bind(id)
        .push(
            " UNION SELECT f.id FROM files f JOIN tree t ON f.parent_id = t.id) \
             SELECT f.id AS id, f.storage_key AS storage_key \
             FROM files f WHERE f.id IN (SELECT id FROM tree)",
        );
    sql.all_as::<SubtreeRow, _>(txn).await
}

#[derive(FromQueryResult)]
struct SubtreeRow {
    id: i32,
    storage_key: Option<String>,
}

#[derive(FromQueryResult)]
struct UseRow {
    item_id: i32,
    collection_id: i32,
    trashed: i32,
}

#[derive(FromQueryResult)]
struct StateRow {
    id: i32,
    parent_id: Option<i32>,
    #[sea_orm(from_alias = "type")]
    kind: String,
    filename: String,
    deleted_at: Option<OffsetDateTime>,
}

impl TryFrom<StateRow> for FileState {
    type Error = StorageError;

    fn try_from(row: StateRow) -> Result<Self, StorageError> {
        Ok(FileState {
            id: i64::from(row.id),
            parent_id: row.parent_id.map(i64::from),
            kind: FileKind::parse(&row.kind)?,
            filename: row.filename,
            deleted_at: row.deleted_at,
        })
    }
}
