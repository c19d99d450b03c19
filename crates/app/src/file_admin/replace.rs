//! `POST /files/{file}/replace`: new bytes under the same id. The form is the public upload's
//! (one `file` part, streamed into staging and sniffed the same way); the row switches to the
//! new blob in one transaction, the old content's derivative records go with it, and the cache
//! epoch moves (every replica's cached responses of the old bytes go stale) before the old blob
//! and derivatives are deleted. Until the commit every reader gets the old bytes; after it, the
//! new ones: the blob a row names never changes under its key.

use std::future::Future;

use serde_json::{Value, json};
use vellum_policy::FileAction;
use vellum_storage::files::FileKind;

use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::UploadForm;
use crate::ingest;
use crate::items::parse_id;
use crate::principal::Principal;

/// The message of a replace aimed at a folder.
pub const FOLDER_HAS_NO_CONTENT: &str = "A folder has no content to replace.";

/// Replaces the bytes of file `id` with the form's `file` part. `read_form` is called with the
/// size cap once the permission is checked and the file found, so nothing is staged for a
/// request that is refused anyway. The form's `name` and `parent_id` parts are ignored: the
/// file keeps its name, place and metadata.
///
/// # Errors
/// 403 without `can-replace-files`; 404 for an unknown or deleted file; 422 for a folder, a form
/// without a file or a file over the cap (the file keeps its old bytes and nothing is stored);
/// the form's own error; the database or blob store.
pub async fn replace<F, Fut, E>(
    state: &AppState,
    principal: &Principal,
    id: &str,
    read_form: F,
) -> Result<Value, E>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<UploadForm, E>>,
    E: From<AppError>,
{
    let actor = open(state, principal, "can-replace-files").await?;
    let grant = actor
        .role
        .authorize_file_write(FileAction::Update)
        .map_err(AppError::from)?;
    let id = parse_id(id)?;
    let file = vellum_storage::files::get_file(state.db(), id)
        .await
        .map_err(AppError::from)?
        .ok_or(AppError::NotFound)?;
    if file.kind != FileKind::File {
        return Err(AppError::invalid("file", FOLDER_HAS_NO_CONTENT).into());
    }
    let limit = actor.snapshot.settings.files_max_upload_bytes;
    let UploadForm {
        received,
        mut errors,
        ..
    } = read_form(limit).await?;
    if received.is_none() && errors.get("file").is_none() {
        errors.add("file", "The file field is required.");
    }
    let received = match (received, errors.is_empty()) {
        (Some(received), true) => received,
        (received, _) => {
            if let Some(received) = received {
                ingest::discard(state.blobs(), received).await;
            }
            return Err(AppError::Invalid(errors).into());
        }
    };
    let replaced = ingest::replace(state.db(), state.blobs(), &grant, id, received)
        .await
        .map_err(AppError::from)?;
    // Stale everywhere first, then the old bytes go: a replica that still answers from its
    // cache until it sees the epoch serves bytes that are still there.
    state.content_changed(Scope::Files).await;
    ingest::forget_replaced(state.db(), state.blobs(), &replaced).await;
    let new = &replaced.file;
    log(
        state,
        principal,
        "replaced",
        new.id,
        ["content_hash", "filesize", "mime_type", "width", "height"]
            .map(str::to_owned)
            .to_vec(),
        json!({
            "old": {"content_hash": replaced.old_hash, "filesize": file.filesize, "mime_type": file.mime_type},
            "new": {"content_hash": new.content_hash, "filesize": new.filesize, "mime_type": new.mime_type},
        }),
    )
    .await;
    Ok(super::resource::admin_file(state, principal, new.id).await?)
}
