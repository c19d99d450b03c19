//! Delete, restore and force delete of one file or folder (`DELETE /files/{file}`,
//! `POST /files/{file}/restore`, `DELETE /files/{file}/force`).
//!
//! The force delete rule: refused while any item, live or in its collection's trash, references
//! the file or anything inside the folder (the answer names them, so an editor can detach them
//! or force-delete the items first); otherwise the rows, their tags, favorites and transform
//! records go, and each blob goes when no other row names it (blobs are content-addressed and
//! shared by identical uploads and copies). A file is never detached from items silently: an
//! item's value would point at nothing.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_policy::FileAction;
use vellum_storage::files::trash::{self, ForceDeleted};
use vellum_storage::item_files::FileUse;

use super::{log, open};
use crate::actor::Actor;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::parse_id;
use crate::principal::Principal;

/// The most referencing items a refused force delete names.
pub const MAX_NAMED_ITEMS: u64 = 50;

/// An item that references a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemRef {
    /// The collection's slug.
    pub collection: String,
    pub id: i64,
}

/// What a force delete answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForceOutcome {
    Deleted,
    /// Refused (the HTTP layer answers 409): these items reference the file or the folder's
    /// contents; `message` says so for people.
    InUse {
        message: String,
        items: Vec<ItemRef>,
    },
}

/// `DELETE /files/{file}`: soft-deletes a file, or a folder with its contents (one timestamp,
/// so a restore brings back what went together); the public API stops serving them at once.
///
/// # Errors
/// 403 without `can-delete-files`, 404 for an unknown or already deleted id, the database.
pub async fn delete(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    let actor = open(state, principal, "can-delete-files").await?;
    delete_one(state, principal, &actor, parse_id(id)?).await
}

pub(super) async fn delete_one(
    state: &AppState,
    principal: &Principal,
    actor: &Actor,
    id: i64,
) -> Result<(), AppError> {
    let grant = actor.role.authorize_file_write(FileAction::Delete)?;
    vellum_storage::files::soft_delete_file(state.db(), &grant, id).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "deleted",
        id,
        vec!["deleted_at".to_owned()],
        Json::Null,
    )
    .await;
    Ok(())
}

/// `POST /files/{file}/restore`: restores a file or folder from the trash with what was
/// deleted together with it; answers the restored row.
///
/// # Errors
/// 403 without `can-restore-files`; 404 for an unknown id; 422 on `file` when it is not in the
/// trash, on `parent_id` when its folder is not live, on `filename` when a live folder of the
/// same name took its place; the database.
pub async fn restore(state: &AppState, principal: &Principal, id: &str) -> Result<Json, AppError> {
    open(state, principal, "can-restore-files").await?;
    let id = parse_id(id)?;
    restore_one(state, principal, id).await?;
    super::resource::admin_file(state, principal, id).await
}

pub(super) async fn restore_one(
    state: &AppState,
    principal: &Principal,
    id: i64,
) -> Result<(), AppError> {
    let restored = trash::restore_file(state.db(), id).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "restored",
        id,
        vec!["deleted_at".to_owned()],
        json!({ "rows": restored }),
    )
    .await;
    Ok(())
}

/// `DELETE /files/{file}/force`: deletes a file or folder for good, live or in the trash, under
/// the rule in the module docs.
///
/// # Errors
/// 403 without `can-force-delete-files`, 404 for an unknown id, the database.
pub async fn force_delete(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ForceOutcome, AppError> {
    let actor = open(state, principal, "can-force-delete-files").await?;
    force_delete_one(state, principal, &actor, parse_id(id)?).await
}

pub(super) async fn force_delete_one(
    state: &AppState,
    principal: &Principal,
    actor: &Actor,
    id: i64,
) -> Result<ForceOutcome, AppError> {
    match trash::force_delete_file(state.db(), state.blobs(), id, MAX_NAMED_ITEMS).await? {
        ForceDeleted::InUse(users) => {
            let items = item_refs(actor, &users);
            Ok(ForceOutcome::InUse {
                message: in_use_message(&items),
                items,
            })
        }
        ForceDeleted::Deleted { rows, blobs } => {
            state.content_changed(Scope::Files).await;
            log(
                state,
                principal,
                "force_deleted",
                id,
                Vec::new(),
                json!({ "rows": rows, "blobs_deleted": blobs }),
            )
            .await;
            Ok(ForceOutcome::Deleted)
        }
    }
}

fn item_refs(actor: &Actor, users: &[FileUse]) -> Vec<ItemRef> {
    users
        .iter()
        .map(|u| ItemRef {
            collection: actor
                .snapshot
                .collection_by_id(u.collection_id)
                .map_or_else(|| u.collection_id.to_string(), |c| c.slug.to_string()),
            id: u.item_id,
        })
        .collect()
}

/// "The file is still used by 2 items (articles 4, articles 5). …"
fn in_use_message(items: &[ItemRef]) -> String {
    let at_least = if items.len() as u64 >= MAX_NAMED_ITEMS {
        "at least "
    } else {
        ""
    };
    let count = items.len();
    let noun = if count == 1 { "item" } else { "items" };
    let named = items
        .iter()
        .map(|i| format!("{} {}", i.collection, i.id))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "The file is still used by {at_least}{count} {noun} ({named}), in the trash or not: \
         remove it from them, or force-delete them, first."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_items() {
        let items = [ItemRef {
            collection: "articles".into(),
            id: 4,
        }];
        assert_eq!(
            in_use_message(&items),
            "The file is still used by 1 item (articles 4), in the trash or not: remove it from \
             them, or force-delete them, first."
        );
    }
}
