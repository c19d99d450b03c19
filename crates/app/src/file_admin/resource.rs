//! The file manager's file resource: the public FileResource plus what only the file manager
//! shows — the stored `access` (null: inherit) beside the `effective_access`, `location`,
//! `download_name`, `alt_text`, `custom_fields`, the `tags`, whether the signed-in user marked
//! it a `favorite`, and `deleted_at`.
//!
//! Pages are rendered in a fixed number of queries: the rows, then one query for the tags of
//! every row of the page and one for the user's favorites among them, never one per row.

use serde_json::{Value, json};
use vellum_storage::files::browse::{AdminFile, find_admin_file};
use vellum_storage::files::favorites::favorites_among;
use vellum_storage::files::tags::tags_of;

use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;
use crate::resources::{file_resource, timestamp};
use crate::transform_urls::FileUrls;

/// Renders `files` (a page: the caller bounds it) for `principal`, in order.
///
/// # Errors
/// The database.
pub async fn render_files(
    state: &AppState,
    principal: &Principal,
    files: &[AdminFile],
) -> Result<Vec<Value>, AppError> {
    let ids: Vec<i64> = files.iter().map(|f| f.file.id).collect();
    let mut tags = tags_of(state.db(), &ids).await?;
    let favorites = favorites_among(state.db(), principal.user_id(), &ids).await?;
    let urls = state.file_urls();
    Ok(files
        .iter()
        .map(|f| {
            let tags = tags.remove(&f.file.id).unwrap_or_default();
            admin_file_resource(&urls, f, &tags, favorites.contains(&f.file.id))
        })
        .collect())
}

/// File `id` (live or in the trash) as the file manager shows it to `principal`. No permission
/// is checked here: the caller's use case did.
///
/// # Errors
/// 404 when no such row exists; the database.
pub async fn admin_file(
    state: &AppState,
    principal: &Principal,
    id: i64,
) -> Result<Value, AppError> {
    let file = find_admin_file(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    render_files(state, principal, std::slice::from_ref(&file))
        .await?
        .pop()
        .ok_or(AppError::NotFound)
}

/// One row, given its tags (sorted) and whether it is the user's favorite. A row in the trash
/// has no `url` and no `transforms`: the public API does not serve it.
#[must_use]
pub fn admin_file_resource(
    urls: &FileUrls<'_>,
    file: &AdminFile,
    tags: &[String],
    favorite: bool,
) -> Value {
    let stored = &file.file;
    let mut out = file_resource(urls, stored);
    if let Value::Object(map) = &mut out {
        let trashed = stored.deleted_at.is_some();
        map.insert(
            "access".into(),
            stored.access.map_or(Value::Null, |a| json!(a.as_str())),
        );
        map.insert("effective_access".into(), json!(stored.effective.as_str()));
        map.insert("location".into(), json!(stored.location));
        map.insert("download_name".into(), json!(stored.download_name));
        map.insert("alt_text".into(), json!(file.alt_text));
        map.insert(
            "custom_fields".into(),
            file.custom_fields.clone().unwrap_or(Value::Null),
        );
        map.insert("tags".into(), json!(tags));
        map.insert("favorite".into(), json!(favorite));
        map.insert("deleted_at".into(), timestamp(stored.deleted_at));
        if trashed {
            map.insert("url".into(), Value::Null);
            map.insert("transforms".into(), json!({}));
        }
    }
    out
}
