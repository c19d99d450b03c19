//! `POST /files/bulk`: `{"action": "move" | "delete" | "restore" | "force_delete" | "tag" |
//! "untag", "ids": [1..=100 positive integers], "parent_id": folder id or null (move),
//! "tags": [...] (tag, untag)}`, each action gated by its own permission (move:
//! `can-edit-files`; tag, untag: `can-tag-files`; delete, restore, force delete: as their
//! single routes). Every id is handled
//! on its own, exactly as its single route would (its own transaction, activity entry and epoch
//! move); one failing does not stop the others, and the answer says which were done and why each
//! other failed (`status` is the status the single route would have answered).

use serde::Serialize;
use serde_json::Value as Json;
use vellum_policy::FileAction;
use vellum_storage::files::{FileKind, FilePatch};

use super::tags::parse_tags;
use super::trash::{ForceOutcome, delete_one, force_delete_one, restore_one};
use super::{log, open};
use crate::actor::Actor;
use crate::admin_items::read_bulk_ids as read_ids;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The most ids one bulk request names (the admin items bulk's bound).
pub use crate::admin_items::MAX_BULK_IDS;

/// What a bulk request does to each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BulkAction {
    /// Into the folder `parent_id` (`None`: the top level).
    Move,
    Delete,
    Restore,
    ForceDelete,
    /// Adds the body's `tags` (as `POST /files/{file}/tags`).
    Tag,
    /// Removes the body's `tags` (a file without one of them is left as it is).
    Untag,
}

impl BulkAction {
    fn parse(body: &Json) -> Result<Self, AppError> {
        match body.get("action").and_then(Json::as_str) {
            Some("move") => Ok(Self::Move),
            Some("delete") => Ok(Self::Delete),
            Some("restore") => Ok(Self::Restore),
            Some("force_delete") => Ok(Self::ForceDelete),
            Some("tag") => Ok(Self::Tag),
            Some("untag") => Ok(Self::Untag),
            _ => Err(unknown_action()),
        }
    }

    fn permission(self) -> &'static str {
        match self {
            Self::Move => "can-edit-files",
            Self::Delete => "can-delete-files",
            Self::Restore => "can-restore-files",
            Self::ForceDelete => "can-force-delete-files",
            Self::Tag | Self::Untag => "can-tag-files",
        }
    }
}

fn unknown_action() -> AppError {
    AppError::invalid(
        "action",
        "The action field is required and must be one of: move, delete, restore, force_delete, tag, untag.",
    )
}

/// `parent_id` of a move: required, a positive id or null (the top level).
fn read_parent(body: &Json) -> Result<Option<i64>, AppError> {
    let invalid = || {
        AppError::invalid(
            "parent_id",
            "The parent_id field is required for a move and must be a folder id or null.",
        )
    };
    match body.get("parent_id") {
        Some(Json::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .filter(|id| *id > 0)
            .map(Some)
            .ok_or_else(invalid),
        None => Err(invalid()),
    }
}

/// One id that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkFailure {
    pub id: i64,
    /// What the single route would have answered: 404, 409 or 422.
    pub status: u16,
    pub message: String,
}

/// `{"done": [ids], "failed": [{id, status, message}]}`, each in the order of the request (ids
/// named twice count once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BulkOutcome {
    pub done: Vec<i64>,
    pub failed: Vec<BulkFailure>,
}

/// Runs the body's action on every id.
///
/// # Errors
/// 422 (`action`, `ids`, `parent_id`: a move's folder must be live), 403 without the action's
/// permission (checked after the action is known, before anything else is read), the database
/// (a dependency failing stops the batch; the ids done before it stay done).
pub async fn bulk(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<BulkOutcome, AppError> {
    let action = BulkAction::parse(body)?;
    let actor = open(state, principal, action.permission()).await?;
    let ids = read_ids(body)?;
    let parent = match action {
        BulkAction::Move => read_parent(body)?,
        _ => None,
    };
    let tags = match action {
        BulkAction::Tag | BulkAction::Untag => parse_tags(body)?,
        _ => Vec::new(),
    };
    if let Some(parent) = parent {
        let folder = vellum_storage::files::get_file(state.db(), parent).await?;
        if folder.is_none_or(|f| f.kind != FileKind::Folder) {
            return Err(AppError::invalid(
                "parent_id",
                format!("The parent_id field must be a live folder; {parent} is not one."),
            ));
        }
    }
    let mut outcome = BulkOutcome::default();
    for id in ids {
        match run(state, principal, &actor, action, (parent, &tags), id).await {
            Ok(()) => outcome.done.push(id),
            Err(Refusal::InUse(message)) => outcome.failed.push(BulkFailure {
                id,
                status: 409,
                message,
            }),
            Err(Refusal::Error(err)) => outcome.failed.push(failure(id, err)?),
        }
    }
    Ok(outcome)
}

enum Refusal {
    InUse(String),
    Error(AppError),
}

impl From<AppError> for Refusal {
    fn from(err: AppError) -> Self {
        Self::Error(err)
    }
}

async fn run(
    state: &AppState,
    principal: &Principal,
    actor: &Actor,
    action: BulkAction,
    (parent, tags): (Option<i64>, &[String]),
    id: i64,
) -> Result<(), Refusal> {
    match action {
        BulkAction::Tag => Ok(tag_one(state, principal, id, tags).await?),
        BulkAction::Untag => Ok(untag_one(state, principal, id, tags).await?),
        BulkAction::Move => Ok(move_one(state, principal, actor, id, parent).await?),
        BulkAction::Delete => Ok(delete_one(state, principal, actor, id).await?),
        BulkAction::Restore => Ok(restore_one(state, principal, id).await?),
        BulkAction::ForceDelete => match force_delete_one(state, principal, actor, id).await? {
            ForceOutcome::Deleted => Ok(()),
            ForceOutcome::InUse { message, .. } => Err(Refusal::InUse(message)),
        },
    }
}

/// Adds `tags` to one live file, as `POST /files/{file}/tags` does.
async fn tag_one(
    state: &AppState,
    principal: &Principal,
    id: i64,
    tags: &[String],
) -> Result<(), AppError> {
    let all = vellum_storage::files::tags::add_tags(state.db(), id, tags).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "tagged",
        id,
        vec!["tags".to_owned()],
        serde_json::json!({ "added": tags, "tags": all }),
    )
    .await;
    Ok(())
}

/// Removes `tags` from one live file; a tag it does not carry is skipped (one entry for the
/// tags it did carry, none when it carried none).
async fn untag_one(
    state: &AppState,
    principal: &Principal,
    id: i64,
    tags: &[String],
) -> Result<(), AppError> {
    let removed = vellum_storage::files::tags::remove_tags(state.db(), id, tags).await?;
    if !removed.is_empty() {
        state.content_changed(Scope::Files).await;
        log(
            state,
            principal,
            "untagged",
            id,
            vec!["tags".to_owned()],
            serde_json::json!({ "removed": removed }),
        )
        .await;
    }
    Ok(())
}

/// Moves one live file or folder (a folder with its contents) into `parent`.
async fn move_one(
    state: &AppState,
    principal: &Principal,
    actor: &Actor,
    id: i64,
    parent: Option<i64>,
) -> Result<(), AppError> {
    let grant = actor.role.authorize_file_write(FileAction::Update)?;
    let patch = FilePatch {
        parent_id: Some(parent),
        ..FilePatch::default()
    };
    vellum_storage::files::update_file(state.db(), &grant, id, patch).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "moved",
        id,
        vec!["parent_id".to_owned()],
        serde_json::json!({ "parent_id": parent }),
    )
    .await;
    Ok(())
}

/// The per-id failure an error stands for; a dependency failure or a bug is not one and stops
/// the batch.
fn failure(id: i64, err: AppError) -> Result<BulkFailure, AppError> {
    let (status, message) = match err {
        AppError::NotFound => (404, "Not found.".to_owned()),
        AppError::Invalid(errors) => (
            422,
            errors
                .iter()
                .flat_map(|(_, messages)| messages.iter())
                .next()
                .cloned()
                .unwrap_or_else(|| "The file could not be changed.".to_owned()),
        ),
        other => return Err(other),
    };
    Ok(BulkFailure {
        id,
        status,
        message,
    })
}
