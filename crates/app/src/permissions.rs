//! Admin permissions over the admin app (`/settings/permissions…`): list, create, rename,
//! delete and sync with the catalog.
//!
//! No name outside the policy crate's catalog may exist ([`vellum_policy::is_permission`]): a
//! create or rename to another name is 422, and `sync` upserts the whole catalog (pruning, on
//! request, rows left over from an older catalog). Each change records an activity entry and
//! moves the epoch: the signed-in users' permissions are remembered per snapshot.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_storage::permissions::{self as stored, Permission};

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;
use crate::roles::parse_id;

/// The longest name a request may send (every catalog name is far shorter).
const MAX_NAME: usize = 255;

/// A permission with the number of roles holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionResource {
    pub id: i64,
    pub name: String,
    pub roles_count: u64,
}

impl From<Permission> for PermissionResource {
    fn from(p: Permission) -> Self {
        Self {
            id: p.id,
            name: p.name,
            roles_count: p.roles_count,
        }
    }
}

/// What a sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SyncResult {
    pub created: u64,
    pub pruned: u64,
}

/// Every permission row in id order. Not paginated: only catalog names can be stored, so the
/// list is bounded by the catalog (47 names).
///
/// # Errors
/// 403 without `can-show-permissions`, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<PermissionResource>, AppError> {
    principal.require("can-show-permissions")?;
    Ok(stored::list_permissions(state.db())
        .await?
        .into_iter()
        .map(PermissionResource::from)
        .collect())
}

/// Stores the catalog permission `{name}` (one that was deleted).
///
/// # Errors
/// 403 without `can-create-permissions`; 422 when the name is missing, not in the catalog or
/// already stored; the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<PermissionResource, AppError> {
    principal.require("can-create-permissions")?;
    crate::nul::refuse_in_body(body)?;
    let name = read_name(body)?;
    let created = stored::create_permission(state.db(), &name).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("permissions", "created")
            .subject("permission", created.id)
            .changed(["name"]),
    )
    .await;
    state.invalidate().await;
    Ok(created.into())
}

/// Renames permission `id` to `{name}`, another catalog name no row uses; the roles holding it
/// keep it.
///
/// # Errors
/// 403 without `can-edit-permissions`; 404 for an unknown permission; 422 when the name is
/// missing, not in the catalog or used by another row; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<PermissionResource, AppError> {
    principal.require("can-edit-permissions")?;
    crate::nul::refuse_in_body(body)?;
    let id = parse_id(id)?;
    let before = stored::permission_by_id(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    let name = read_name(body)?;
    if name == before.name {
        return Ok(before.into());
    }
    let renamed = stored::rename_permission(state.db(), id, &name).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("permissions", "updated")
            .subject("permission", id)
            .changed(["name"]),
    )
    .await;
    state.invalidate().await;
    Ok(renamed.into())
}

/// Deletes permission `id` and removes it from every role.
///
/// # Errors
/// 403 without `can-delete-permissions`; 404 for an unknown permission; the database.
pub async fn destroy(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require("can-delete-permissions")?;
    let id = parse_id(id)?;
    let name = stored::delete_permission(state.db(), id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("permissions", "deleted")
            .subject("permission", id)
            .extra(json!({ "name": name })),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// `{prune?: bool}` (default false): makes every catalog name exist; with `prune`, deletes the
/// rows outside the catalog.
///
/// # Errors
/// 403 without `can-edit-permissions`; 422 for a `prune` that is not a boolean; the database.
pub async fn sync(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<SyncResult, AppError> {
    principal.require("can-edit-permissions")?;
    crate::nul::refuse_in_body(body)?;
    let mut input = Input::new(body)?;
    let prune = input.optional_bool("prune").unwrap_or(false);
    input.finish()?;
    let report = stored::sync_permissions(state.db(), prune).await?;
    if report.created > 0 || report.pruned > 0 {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("permissions", "synced")
                .extra(json!({ "created": report.created, "pruned": report.pruned })),
        )
        .await;
        state.invalidate().await;
    }
    Ok(SyncResult {
        created: report.created,
        pruned: report.pruned,
    })
}

fn read_name(body: &Json) -> Result<String, AppError> {
    let mut input = Input::new(body)?;
    let name = input.required_str("name", MAX_NAME);
    if let Some(name) = name
        && !vellum_policy::is_permission(name)
    {
        input.error(
            "name",
            format!("\"{name}\" is not a permission of the catalog."),
        );
    }
    input.finish()?;
    name.map(str::to_owned)
        .ok_or_else(|| AppError::invalid("name", "The name field is required."))
}
