//! `GET /files/{file}/download`: a file's bytes as an attachment, private files included (the
//! permission is the gate, not the files matrix). The surface streams the [`Download`] with the
//! public content's validators and ranges; the response is never stored by shared caches.

use std::time::SystemTime;

use vellum_policy::Visibility;
use vellum_storage::files::FileKind;

use super::open;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::Download;
use crate::items::parse_id;
use crate::principal::Principal;

/// What to stream for a download of file `id`, named by its `download_name` or else its
/// filename.
///
/// # Errors
/// 403 without `can-download-files`; 404 for an unknown or deleted file, a folder, a file
/// without stored bytes; the database or blob store.
pub async fn download(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<Download, AppError> {
    open(state, principal, "can-download-files").await?;
    let id = parse_id(id)?;
    let file = vellum_storage::files::get_file(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    let (Some(key), Some(hash), FileKind::File) = (
        file.storage_key.as_deref(),
        file.content_hash.as_deref(),
        file.kind,
    ) else {
        return Err(AppError::NotFound);
    };
    let size = match file.filesize.and_then(|s| u64::try_from(s).ok()) {
        Some(size) => size,
        None => state.blobs().head(key).await?.ok_or(AppError::NotFound)?,
    };
    let name = file
        .download_name
        .clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| file.filename.clone());
    Ok(Download {
        storage_key: key.to_owned(),
        size,
        mime_type: file
            .mime_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".to_owned()),
        etag: format!("\"{hash}\""),
        modified: file.updated_at.map(SystemTime::from),
        // A signed-in user's copy: never for a shared cache, whatever the file's access.
        visibility: Visibility::Private,
        download_name: Some(name),
        ranges: true,
        immutable: false,
    })
}
