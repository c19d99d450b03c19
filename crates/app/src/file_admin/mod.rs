//! The admin file manager (`/files…`, issue 29): browse (folders, search, tags, MIME family,
//! sort, trash, favorites), folders (create, rename, move, access), metadata, tags, favorites,
//! upload of many files, replace, copy, download, delete, restore, force delete, "where used"
//! and bulk actions.
//!
//! Each use case first checks the signed-in user's admin permission (`can-*-files`), then acts
//! above roles: as `super-admin`, so the files matrix (which governs API keys) does not apply
//! and private files are reachable; the admin permission is the gate. Writes reuse the storage
//! functions of the public files API where one exists (the same tree rules, MIME sniffing and
//! markup rules); every write moves the cache epoch (every replica's public cache) and records
//! one activity entry (log [`FILES_LOG`], subject `file` and its id).

mod bulk;
mod copy;
mod download;
mod replace;
mod trash;
mod upload;
mod usage;

pub use bulk::{BulkFailure, BulkOutcome, MAX_BULK_IDS, bulk};
pub use trash::{ForceOutcome, ItemRef, MAX_NAMED_ITEMS, delete, force_delete, restore};
pub use usage::{MAX_USAGE_ITEMS, Usage, UsageGroup, UsageItem, usage};
pub mod browse;
pub mod favorites;
pub mod folders;
pub mod metadata;
pub mod resource;
pub mod tags;

use std::sync::Arc;

use serde_json::{Value as Json, json};
use vellum_policy::Role;

use crate::activity::{self, Change};
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

pub use browse::{AdminFilePage, list, show};
pub use copy::copy;
pub use download::download;
pub use favorites::{favorite, unfavorite};
pub use folders::create_folder;
pub use metadata::update;
pub use replace::{FOLDER_HAS_NO_CONTENT, replace};
pub use resource::{admin_file, admin_file_resource, render_files};
pub use tags::{TagResource, add_tags, list_tags, remove_tag};
pub use upload::{MAX_FILES, StagedPart, UploadManyForm, receive_part, upload};

/// The activity log's name for file manager changes.
pub const FILES_LOG: &str = "files";

/// Checks `permission`, then answers the actor the file manager works as: `super-admin`, for
/// the signed-in user (who is recorded as the writer).
///
/// # Errors
/// 403 without the permission (checked first, so nothing is disclosed); the database.
pub async fn open(
    state: &AppState,
    principal: &Principal,
    permission: &'static str,
) -> Result<Actor, AppError> {
    principal.require(permission)?;
    let snapshot = state.snapshot().await?;
    Ok(Actor {
        role: Arc::new(Role::super_admin()),
        user_id: Some(principal.user_id()),
        snapshot,
    })
}

/// Records one file manager change by the signed-in user; `id` is the file's or folder's.
pub async fn log(
    state: &AppState,
    principal: &Principal,
    event: &str,
    id: i64,
    changed: Vec<String>,
    extra: Json,
) {
    if let Some(webhook_event) = crate::webhook_events::Event::of_file_activity(event) {
        crate::files::file_event(state, webhook_event, id).await;
    }
    let extra = if extra.is_null() { json!({}) } else { extra };
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new(FILES_LOG, event)
            .subject("file", id)
            .changed(changed)
            .extra(extra),
    )
    .await;
}
