//! The admin file manager's upload of many files at once: every row in one transaction, so a
//! request either adds all its files or none.

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{Authorized, FileAction, FileWrite};

use super::tree::{live_parent, lock_tree};
use super::{NewFile, StoredFile, check_file_capability, insert_row, reread};
use crate::StorageError;
use crate::blob::{BlobStore, StagedBlob};
use crate::sql::begin_write;

/// Records several uploads whose bytes `blobs` holds staged, all under `parent_id`, in one
/// transaction: when one row cannot be written none is. Each row names its staged blob's
/// content-addressed key, and each blob is published again under the tree lock before the
/// commit, for the reason [`super::create_uploaded_file`] gives (a concurrent
/// [`super::delete_unused_blob`] of identical bytes is undone from the staged copy). The caller
/// publishes first, outside the lock, and releases the staged copies afterwards, whatever the
/// outcome.
///
/// # Errors
/// [`StorageError::Conflict`] when the parent is not a live folder or a name is empty;
/// [`StorageError::Db`] when a query fails; a blob store error when a blob is missing and
/// cannot be put back. Nothing is written in any of these cases.
#[instrument(skip_all, err, fields(parent_id = parent_id, count = files.len()))]
pub async fn create_uploaded_files<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    parent_id: Option<i64>,
    files: Vec<(NewFile, &StagedBlob)>,
    blobs: &dyn BlobStore,
) -> Result<Vec<StoredFile>, StorageError> {
    check_file_capability(grant, FileAction::Create)?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let parent = live_parent(&txn, parent_id).await?;
    let mut ids = Vec::with_capacity(files.len());
    for (mut new, staged) in files {
        new.parent_id = parent_id;
        new.storage_key = Some(staged.blob.key.clone());
        new.content_hash = Some(staged.blob.sha256.clone());
        ids.push((insert_row(&txn, parent, new).await?, staged));
    }
    let mut written = Vec::with_capacity(ids.len());
    for (id, staged) in ids {
        written.push(reread(&txn, id).await?);
        blobs.publish(staged).await?;
    }
    txn.commit().await?;
    Ok(written)
}
