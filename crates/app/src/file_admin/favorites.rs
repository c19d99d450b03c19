//! Favorites (`can-favorite-files`): each user's own shortcut list; `GET /files?favorites=1`
//! shows it from anywhere in the tree.

use serde_json::{Value, json};
use vellum_storage::files::favorites::{add_favorite, remove_favorite};

use super::resource::admin_file;
use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::parse_id;
use crate::principal::Principal;

/// Marks the live file `id` a favorite of the signed-in user (again is harmless); answers it.
///
/// # Errors
/// 403 without `can-favorite-files`, 404 (a missing or trashed file), the database.
pub async fn favorite(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<Value, AppError> {
    open(state, principal, "can-favorite-files").await?;
    let id = parse_id(id)?;
    add_favorite(state.db(), principal.user_id(), id).await?;
    state.content_changed(Scope::Files).await;
    log(state, principal, "favorited", id, Vec::new(), json!({})).await;
    admin_file(state, principal, id).await
}

/// Unmarks file `id` for the signed-in user (not a favorite: nothing to do, still 204).
///
/// # Errors
/// 403 without `can-favorite-files`, 404 (no such file), the database.
pub async fn unfavorite(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    open(state, principal, "can-favorite-files").await?;
    let id = parse_id(id)?;
    if remove_favorite(state.db(), principal.user_id(), id).await? {
        state.content_changed(Scope::Files).await;
        log(state, principal, "unfavorited", id, Vec::new(), json!({})).await;
    }
    Ok(())
}
