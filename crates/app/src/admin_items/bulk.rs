//! `POST /collections/{collection}/items/bulk`: `{"action": "delete" | "restore" |
//! "force_delete", "ids": [1..=100 positive integers]}`, each action gated by its own
//! permission. Every id is handled on its own, exactly as the single-item route would (its own
//! transaction, activity entry and epoch move); one failing does not stop the others, and the
//! answer says which succeeded and why each other failed.

use serde::Serialize;
use serde_json::Value as Json;

use super::{Target, force_delete_one, open, restore_one, soft_delete_one};
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The most ids one bulk request names.
pub const MAX_BULK_IDS: usize = 100;

/// What a bulk request does to each item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkAction {
    Delete,
    Restore,
    ForceDelete,
}

impl BulkAction {
    fn parse(raw: Option<&Json>) -> Result<Self, AppError> {
        match raw.and_then(Json::as_str) {
            Some("delete") => Ok(Self::Delete),
            Some("restore") => Ok(Self::Restore),
            Some("force_delete") => Ok(Self::ForceDelete),
            _ => Err(AppError::invalid(
                "action",
                "The action field is required and must be one of: delete, restore, force_delete.",
            )),
        }
    }

    fn permission(self) -> &'static str {
        match self {
            Self::Delete => "can-delete-collections",
            Self::Restore => "can-restore-collections",
            Self::ForceDelete => "can-force-delete-collections",
        }
    }
}

/// One id that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkFailure {
    pub id: i64,
    pub message: String,
}

/// `{"succeeded": [ids], "failed": [{id, message}]}`, each in the order of the request (ids
/// named twice count once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BulkOutcome {
    pub succeeded: Vec<i64>,
    pub failed: Vec<BulkFailure>,
}

/// The body's `ids`: 1 to [`MAX_BULK_IDS`] positive integers, repeats dropped (first kept).
/// Shared by every admin bulk route (items, files).
pub(crate) fn read_ids(body: &Json) -> Result<Vec<i64>, AppError> {
    let invalid = || {
        AppError::invalid(
            "ids",
            format!(
                "The ids field is required and must be a list of 1 to {MAX_BULK_IDS} positive integers."
            ),
        )
    };
    let list = body
        .get("ids")
        .and_then(Json::as_array)
        .ok_or_else(invalid)?;
    if list.is_empty() || list.len() > MAX_BULK_IDS {
        return Err(invalid());
    }
    let mut ids = Vec::with_capacity(list.len());
    for value in list {
        let id = value.as_i64().filter(|id| *id > 0).ok_or_else(invalid)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Runs `action` on every id of the body.
///
/// # Errors
/// 422 (`action`, `ids`), 403 without the action's permission, 404 for an unknown collection,
/// the database (a dependency failing stops the batch; the ids done before it stay done).
pub async fn bulk(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<BulkOutcome, AppError> {
    let action = BulkAction::parse(body.get("action"))?;
    let target = open(state, principal, action.permission(), slug).await?;
    let ids = read_ids(body)?;
    let mut outcome = BulkOutcome::default();
    for id in ids {
        match run(state, principal, &target, action, id).await {
            Ok(()) => outcome.succeeded.push(id),
            Err(err) => outcome.failed.push(BulkFailure {
                id,
                message: failure(err)?,
            }),
        }
    }
    Ok(outcome)
}

async fn run(
    state: &AppState,
    principal: &Principal,
    target: &Target,
    action: BulkAction,
    id: i64,
) -> Result<(), AppError> {
    match action {
        BulkAction::Delete => soft_delete_one(state, principal, target, id).await,
        BulkAction::Restore => restore_one(state, principal, target, id).await,
        BulkAction::ForceDelete => force_delete_one(state, principal, target, id).await,
    }
}

/// The message of a per-item failure; a dependency failure or a bug is not one and stops the
/// batch.
fn failure(err: AppError) -> Result<String, AppError> {
    match err {
        AppError::NotFound => Ok("Not found.".to_owned()),
        AppError::Invalid(errors) => Ok(errors
            .iter()
            .flat_map(|(_, messages)| messages.iter())
            .next()
            .cloned()
            .unwrap_or_else(|| "The item could not be changed.".to_owned())),
        AppError::Forbidden(_) => Ok("Forbidden.".to_owned()),
        other => Err(other),
    }
}
