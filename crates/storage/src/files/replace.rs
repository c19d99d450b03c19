//! Replacing a file's bytes under the same id (the admin file manager's replace).
//!
//! The row is switched from the old content-addressed blob to the new one in a single `UPDATE`,
//! so a reader sees either the old row (old key, old hash: old bytes, old `ETag`) or the new
//! one, never a mix: blobs are immutable under their key. The old blob stays until the switch is
//! committed; the caller deletes it afterwards, and only when no row names it any more
//! ([`super::delete_unused_blob`]), since identical bytes are shared.
//!
//! Derivatives are cached per content hash. The new hash has its own, so none of the old bytes
//! is ever looked up for this file again; the records of the old hash go as well: all of them
//! when no other row has the old content, otherwise the ones this file's requests produced (the
//! others still serve the files that share the content).

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{Authorized, FileAction, FileWrite};

use super::transforms::{lock_transforms, unreferenced_keys};
use super::tree::lock_tree;
use super::{FileKind, StoredFile, check_file_capability, reachable_file, reread};
use crate::StorageError;
use crate::blob::{BlobStore, StagedBlob};
use crate::sql::{Sql, begin_write, id_param, now};

/// What the new bytes are, as the upload's sniffing found them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewContent {
    pub mime_type: Option<String>,
    pub extension: Option<String>,
    pub filesize: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
}

/// What [`replace_file_content`] committed, and what the caller cleans up after the commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Replaced {
    /// The row as it now is.
    pub file: StoredFile,
    /// The blob the row named before, when it differs from the new one: delete it with
    /// [`super::delete_unused_blob`] (another row may share it).
    pub old_key: Option<String>,
    /// The content hash the row had before.
    pub old_hash: Option<String>,
    /// Derivative blobs of the old content whose records were deleted and that no record or
    /// row names: delete them.
    pub derived: Vec<String>,
}

/// Points file `id` at the staged upload `staged` (its content-addressed key and hash) with the
/// sniffed `content`, keeping every other column (name, metadata, place in the tree), and
/// deletes the old content's derivative records (see the module docs). One transaction under
/// the tree lock; the new blob is published again under the lock before the commit, as
/// [`super::create_uploaded_file`] does, so the committed row never names bytes that are gone.
/// The caller publishes first, outside the lock, and releases the staged copy afterwards.
///
/// # Errors
/// [`StorageError::NotFound`] when the row is missing or soft-deleted;
/// [`StorageError::PrivateFile`] when the capability does not reach it;
/// [`StorageError::Conflict`] (field `file`) for a folder; [`StorageError::Db`] when a query
/// fails; a blob store error when the new blob is missing and cannot be put back. Nothing is
/// written in any of these cases.
#[instrument(skip_all, err, fields(file_id = id, key = %staged.blob.key))]
pub async fn replace_file_content<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
    content: NewContent,
    blobs: &dyn BlobStore,
    staged: &StagedBlob,
) -> Result<Replaced, StorageError> {
    check_file_capability(grant, FileAction::Update)?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let current = reachable_file(&txn, grant, id).await?;
    if current.kind != FileKind::File {
        return Err(StorageError::conflict_on(
            "file",
            "A folder has no content to replace.",
        ));
    }
    let id32 = id_param(current.id).ok_or(StorageError::NotFound { what: "file" })?;
    let new_hash = staged.blob.sha256.as_str();
    let mut derived = Vec::new();
    if let Some(old_hash) = current.content_hash.as_deref()
        && old_hash != new_hash
    {
        lock_transforms(&txn, old_hash).await?;
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("SELECT COUNT(*) AS n FROM files WHERE content_hash = ")
            .bind(old_hash)
            .push(" AND id <> ")
            .bind(id32);
        let shared = sql.count(&txn).await? > 0;
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("SELECT storage_key FROM file_transforms WHERE content_hash = ")
            .bind(old_hash);
        if shared {
            sql.push(" AND file_id = ").bind(id32);
        }
        let keys: Vec<String> = sql
            .all_as::<KeyRow, _>(&txn)
            .await?
            .into_iter()
            .map(|row| row.storage_key)
            .collect();
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("DELETE FROM file_transforms WHERE content_hash = ")
            .bind(old_hash);
        if shared {
            sql.push(" AND file_id = ").bind(id32);
        }
        sql.execute(&txn).await?;
        derived = keys;
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("UPDATE files SET mime_type = ")
        .bind(content.mime_type)
        .push(", extension = ")
        .bind(content.extension)
        .push(", filesize = ")
        .bind(content.filesize)
        .push(", width = ")
        .bind(content.width)
        .push(", height = ")
        .bind(content.height)
        .push(", content_hash = ")
        .bind(new_hash)
        .push(", storage_key = ")
        .bind(staged.blob.key.as_str())
        .push(", updated_at = ")
        .bind(now())
        .push(" WHERE id = ")
        .bind(id32);
    sql.execute(&txn).await?;
    let derived = unreferenced_keys(&txn, derived).await?;
    let file = reread(&txn, id).await?;
    blobs.publish(staged).await?;
    txn.commit().await?;
    let old_key = current.storage_key.filter(|key| *key != staged.blob.key);
    Ok(Replaced {
        file,
        old_key,
        old_hash: current.content_hash,
        derived,
    })
}

/// A blob key a transform record names.
#[derive(sea_orm::FromQueryResult)]
struct KeyRow {
    storage_key: String,
}
