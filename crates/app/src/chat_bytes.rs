//! The bytes of chat rows that a delete elsewhere removes by cascade (an item or a collection
//! with its threads, a user with its uploads in progress), and the removal of blobs no row names
//! any more. Apart from [`crate::chat`] so the use cases that delete those rows (the items admin,
//! the schema editor, users) reach it without depending on chat.

use vellum_storage::chat as store;
use vellum_storage::files::delete_unused_blob;

use crate::context::AppState;
use crate::error::AppError;
use crate::telemetry::error_chain;

/// The blob keys a delete about to cascade through chat rows would leave behind (see
/// [`store::attachments::orphan_keys`]); hand them to [`forget_blobs`] once the delete is done.
///
/// # Errors
/// The database.
pub async fn orphans_of(
    state: &AppState,
    scope: store::attachments::OrphanScope,
) -> Result<Vec<String>, AppError> {
    Ok(store::attachments::orphan_keys(state.db(), scope).await?)
}

/// Removes the blobs of deleted attachments that no file or attachment names any more. Best
/// effort: a failure is logged (the bytes stay, nothing is lost).
pub async fn forget_blobs(state: &AppState, keys: Vec<String>) {
    for key in keys {
        if let Err(err) = delete_unused_blob(state.db(), state.blobs(), &key).await {
            tracing::warn!(error = %error_chain(&err), "chat: an attachment's blob stays behind");
        }
    }
}
