//! Copying a file (the admin file manager's copy): a new row naming the same content-addressed
//! blob, so the bytes are stored once however many copies there are. The blob is shared like
//! the blob of two identical uploads: it goes only when no row names it
//! ([`super::delete_unused_blob`]), so neither copy's delete can take the other's bytes.

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{Authorized, FileAction, FileWrite};

use super::tree::{check_name, live_parent, lock_tree};
use super::{FileKind, StoredFile, check_file_capability, reachable_file, reread};
use crate::StorageError;
use crate::sql::{Sql, begin_write, id_param, now};

/// The columns a copy takes from its source as they are (besides `parent_id` and `filename`,
/// which the copy may change, and the timestamps, which are its own).
const COPIED: &str = "type, access, title, description, alt_text, custom_fields, location, \
     download_name, mime_type, extension, filesize, width, height, focal_point_x, focal_point_y, \
     content_hash, storage_key";

/// Copies live file `id` into `parent` (`None`: the source's folder; `Some(None)`: the top level)
/// under `filename` (`None`: the source's name), with its metadata, tags and stored access, sharing
/// its blob. One transaction under the tree lock, so the source cannot be deleted (and its blob
/// with it) between the check and the insert.
///
/// # Errors
/// [`StorageError::NotFound`] when the source is missing or soft-deleted;
/// [`StorageError::PrivateFile`] when the capability does not reach it;
/// [`StorageError::Conflict`] for a folder (field `file`), a parent that is not a live folder
/// (field `parent_id`) or an empty name (field `filename`); [`StorageError::Db`] when a query
/// fails.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn copy_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
    parent: Option<Option<i64>>,
    filename: Option<String>,
) -> Result<StoredFile, StorageError> {
    check_file_capability(grant, FileAction::Create)?;
    if let Some(name) = &filename {
        check_name(name).map_err(|_| {
            StorageError::conflict_on("filename", "The filename must not be empty.")
        })?;
    }
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let source = reachable_file(&txn, grant, id).await?;
    if source.kind != FileKind::File {
        return Err(StorageError::conflict_on(
            "file",
            "Only files can be copied, not folders.",
        ));
    }
    let source_id = id_param(source.id).ok_or(StorageError::NotFound { what: "file" })?;
    let parent = match parent {
        Some(parent) => parent,
        None => source.parent_id,
    };
    let parent = live_parent(&txn, parent).await.map_err(|err| match err {
        StorageError::Conflict { message, .. } => StorageError::conflict_on("parent_id", message),
        other => other,
    })?;
    let at = now();
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("INSERT INTO files (parent_id, filename, created_at, updated_at, ")
        .push(COPIED)
        .push(") SELECT ")
        .bind(parent)
        .push(", ")
        .bind(filename.unwrap_or(source.filename))
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(at)
        .push(", ")
        .push(COPIED)
        .push(" FROM files WHERE id = ")
        .bind(source_id);
    let id = sql.insert_returning_id(&txn).await?;
    // The tags go with the copy (favorites are a user's choice of one file and do not).
    let mut tags = Sql::new(txn.get_database_backend());
    tags.push("INSERT INTO file_tags (file_id, tag) SELECT ")
        .bind(id_param(id).ok_or(StorageError::NotFound { what: "file" })?)
        .push(", tag FROM file_tags WHERE file_id = ")
        .bind(source_id);
    tags.execute(&txn).await?;
    let copy = reread(&txn, id).await?;
    txn.commit().await?;
    Ok(copy)
}
