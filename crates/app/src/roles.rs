//! Roles over the admin app (`/settings/roles…`): the list, the create and edit pages' data,
//! store, update, duplicate, delete and the bulk delete.
//!
//! A role's two matrices are read through [`Role::from_json`], the parser the manifest uses, so
//! field rules and item filters are validated identically on every surface; grants must also
//! name collections and fields that exist. What a role may undergo (renaming `public`, deleting
//! `super-admin`, …) is [`check_role_operation`]'s answer: breaking a role rule is 403, like
//! the spec's duplicate and delete of system roles. Every write stores the name, both matrices
//! and the admin permissions in one transaction, records an activity entry and moves the epoch,
//! so every replica drops its snapshot (roles, API key lookups, signed-in users' permissions).

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use vellum_domain::ValidationErrors;
use vellum_policy::{FilterField, PolicyError, Role, RoleOperation, check_role_operation};
use vellum_storage::permissions as perms;
use vellum_storage::role_admin::{self, RoleListEntry};
use vellum_storage::roles as stored;

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::snapshot::Snapshot;

/// The longest role name.
pub const MAX_NAME: usize = 255;
/// The most permission ids one request may name.
pub const MAX_PERMISSION_IDS: usize = 1000;
/// The most collections one role's `collection_permissions` may name.
pub const MAX_GRANTS: usize = 1000;
/// The most role ids one bulk action may name.
pub const MAX_BULK_IDS: usize = 100;

/// A role as the list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleListItem {
    pub id: i64,
    pub name: String,
    pub is_system: bool,
    pub permissions_count: u64,
    pub users_count: u64,
}

impl From<RoleListEntry> for RoleListItem {
    fn from(entry: RoleListEntry) -> Self {
        Self {
            id: entry.id,
            name: entry.name,
            is_system: entry.is_system,
            permissions_count: entry.permissions_count,
            users_count: entry.users_count,
        }
    }
}

/// A role with what its edit page sets: admin permission ids and both matrices, in the
/// manifest's shape (only `true` flags are written; absent means deny).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleResource {
    pub id: i64,
    pub name: String,
    pub is_system: bool,
    pub permission_ids: Vec<i64>,
    pub collection_permissions: Json,
    pub file_permissions: Json,
}

/// A permission the form offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PermissionOption {
    pub id: i64,
    pub name: String,
}

/// A collection the form offers a grant row for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CollectionOption {
    pub id: i64,
    pub slug: String,
    pub name: String,
}

/// What the create page shows: the permission catalog as stored and every collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleForm {
    pub permissions: Vec<PermissionOption>,
    pub collections: Vec<CollectionOption>,
}

/// What the edit page shows: the role and the form's options.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleEdit {
    pub role: RoleResource,
    pub permissions: Vec<PermissionOption>,
    pub collections: Vec<CollectionOption>,
}

/// What a bulk delete did, by role name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkResult {
    pub deleted: Vec<String>,
    pub skipped: Vec<String>,
}

/// A page of roles in creation order (`page`, `per_page` from `query`).
///
/// # Errors
/// 403 without `can-show-roles`, 422 for a bad page, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<Paginated<RoleListItem>, AppError> {
    principal.require("can-show-roles")?;
    let paging = Paging::parse(query)?;
    let page = role_admin::list_roles_page(state.db(), paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, RoleListItem::from))
}

/// The create page's data.
///
/// # Errors
/// 403 without `can-create-roles`, the database.
pub async fn create_form(state: &AppState, principal: &Principal) -> Result<RoleForm, AppError> {
    principal.require("can-create-roles")?;
    form(state).await
}

/// The edit page's data: role `id` and the form's options.
///
/// # Errors
/// 403 without `can-edit-roles`, 404 for an unknown role, the database.
pub async fn edit(state: &AppState, principal: &Principal, id: &str) -> Result<RoleEdit, AppError> {
    principal.require("can-edit-roles")?;
    let role = resource(state, parse_id(id)?).await?;
    let RoleForm {
        permissions,
        collections,
    } = form(state).await?;
    Ok(RoleEdit {
        role,
        permissions,
        collections,
    })
}

/// A collection and its fields, for the role editor's field rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionFields {
    pub slug: String,
    pub name: String,
    /// The field names, in the collection's order.
    pub fields: Vec<String>,
}

/// Every collection with its field names (the role editor lists a field rule row per field).
///
/// # Errors
/// 403 without `can-show-roles`, the database.
pub async fn collection_fields(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<CollectionFields>, AppError> {
    principal.require("can-show-roles")?;
    let snapshot = state.snapshot().await?;
    Ok(snapshot
        .collections
        .iter()
        .map(|c| CollectionFields {
            slug: c.slug.to_string(),
            name: c.name.clone(),
            fields: c.fields.iter().map(|f| f.def.name.to_string()).collect(),
        })
        .collect())
}

/// Creates a role from `{name, permission_ids?, collection_permissions?, file_permissions?}`.
///
/// # Errors
/// 403 without `can-create-roles`; 422 naming every wrong field (a taken name, an unknown
/// permission id, collection or field, a malformed grant); the database.
pub async fn store(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<RoleResource, AppError> {
    principal.require("can-create-roles")?;
    crate::nul::refuse_in_body(body)?;
    let snapshot = state.snapshot().await?;
    let mut input = Input::new(body)?;
    let name = read_name(&mut input);
    let ids = input.optional_ids("permission_ids", MAX_PERMISSION_IDS);
    let role = read_matrices(&mut input, name.unwrap_or_default(), None, &snapshot);
    input.finish()?;
    let role = role.ok_or_else(|| AppError::invalid("name", "The name field is required."))?;
    let ids = ids.unwrap_or_default();
    let id = role_admin::create_role(state.db(), &role, &ids).await?;
    let changed = [
        "name",
        "permission_ids",
        "collection_permissions",
        "file_permissions",
    ]
    .into_iter()
    .filter(|key| *key == "name" || body.get(key).is_some());
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("roles", "created")
            .subject("role", id)
            .changed(changed),
    )
    .await;
    state.invalidate().await;
    resource(state, id).await
}

/// Updates role `id` from the store body. `name` is required; a field left out keeps its current
/// value, a field given replaces it (`permission_ids: []` removes every admin permission).
///
/// # Errors
/// 403 without `can-edit-roles`, or for a role rule (renaming `public` or `super-admin`, admin
/// permissions for `public`); 404 for an unknown role; 422 as [`store`]; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<RoleResource, AppError> {
    principal.require("can-edit-roles")?;
    crate::nul::refuse_in_body(body)?;
    let id = parse_id(id)?;
    let before = resource(state, id).await?;
    let current = Role::from_json(
        &before.name,
        &json!({
            "collection_permissions": before.collection_permissions,
            "file_permissions": before.file_permissions,
        }),
    )
    .map_err(AppError::internal)?;
    let snapshot = state.snapshot().await?;
    let mut input = Input::new(body)?;
    let name = read_name(&mut input);
    let ids = input.optional_ids("permission_ids", MAX_PERMISSION_IDS);
    let role = read_matrices(
        &mut input,
        name.unwrap_or_default(),
        Some(&current),
        &snapshot,
    );
    input.finish()?;
    let role = role.ok_or_else(|| AppError::invalid("name", "The name field is required."))?;
    if role.name != before.name {
        forbid_unless(&before.name, RoleOperation::Rename)?;
    }
    let ids = ids.map(|mut ids| {
        ids.sort_unstable();
        ids.dedup();
        ids
    });
    if ids.as_ref().is_some_and(|ids| !ids.is_empty()) {
        forbid_unless(&before.name, RoleOperation::EditPermissions)?;
    }
    role_admin::update_role(state.db(), id, &role, ids.as_deref()).await?;
    let after = resource(state, id).await?;
    let mut changed = Vec::new();
    if after.name != before.name {
        changed.push("name");
    }
    if after.permission_ids != before.permission_ids {
        changed.push("permission_ids");
    }
    if after.collection_permissions != before.collection_permissions {
        changed.push("collection_permissions");
    }
    if after.file_permissions != before.file_permissions {
        changed.push("file_permissions");
    }
    if !changed.is_empty() {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("roles", "updated")
                .subject("role", id)
                .changed(changed),
        )
        .await;
        state.invalidate().await;
    }
    Ok(after)
}

/// Copies role `id` into a new role named by `{name}`: admin permissions and both matrices, not
/// its user or group memberships.
///
/// # Errors
/// 403 without `can-create-roles`, or for `public` and `super-admin`; 404 for an unknown role;
/// 422 for a missing or taken name; the database.
pub async fn duplicate(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<RoleResource, AppError> {
    principal.require("can-create-roles")?;
    crate::nul::refuse_in_body(body)?;
    let id = parse_id(id)?;
    let source = stored::role_by_id(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    forbid_unless(&source.name, RoleOperation::Duplicate)?;
    let mut input = Input::new(body)?;
    let name = read_name(&mut input);
    input.finish()?;
    let name = name.ok_or_else(|| AppError::invalid("name", "The name field is required."))?;
    let new_id = role_admin::duplicate_role(state.db(), id, &name).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("roles", "duplicated")
            .subject("role", new_id)
            .changed([
                "name",
                "permission_ids",
                "collection_permissions",
                "file_permissions",
            ])
            .extra(json!({ "source_id": id })),
    )
    .await;
    state.invalidate().await;
    resource(state, new_id).await
}

/// Deletes role `id` with its grants, memberships and API keys.
///
/// # Errors
/// 403 without `can-delete-roles`, or for `super-admin` and `public`; 404 for an unknown role;
/// the database.
pub async fn destroy(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require("can-delete-roles")?;
    let id = parse_id(id)?;
    let role = stored::role_by_id(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    forbid_unless(&role.name, RoleOperation::Delete)?;
    let name = role_admin::delete_role_by_id(state.db(), id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("roles", "deleted")
            .subject("role", id)
            .extra(json!({ "name": name })),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// `{action: "delete", ids: [..]}`: deletes the roles among `ids` the role rules allow and
/// skips `super-admin` and `public`. Ids of no role are ignored (a concurrent delete is not an
/// error). Authorized "in the request validator": `can-delete-roles`, before the body is read.
///
/// # Errors
/// 403 without `can-delete-roles`; 422 for another action or missing, empty or malformed ids;
/// the database.
pub async fn bulk(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<BulkResult, AppError> {
    principal.require("can-delete-roles")?;
    crate::nul::refuse_in_body(body)?;
    let mut input = Input::new(body)?;
    if let Some(action) = input.required_str("action", 32)
        && action != "delete"
    {
        input.error(
            "action",
            "The selected action is invalid; the only action is delete.",
        );
    }
    let ids = required_ids(&mut input, "ids", MAX_BULK_IDS);
    input.finish()?;
    let report = role_admin::delete_roles(state.db(), &ids).await?;
    for role in &report.deleted {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("roles", "deleted")
                .subject("role", role.id)
                .extra(json!({ "name": role.name, "bulk": true })),
        )
        .await;
    }
    if !report.deleted.is_empty() {
        state.invalidate().await;
    }
    Ok(BulkResult {
        deleted: report.deleted.into_iter().map(|r| r.name).collect(),
        skipped: report.skipped.into_iter().map(|r| r.name).collect(),
    })
}

/// An id from the path; anything but a positive integer is no role.
pub(crate) fn parse_id(raw: &str) -> Result<i64, AppError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(AppError::NotFound)
}

/// 403 unless the role rules allow `operation` on the role named `role`.
fn forbid_unless(role: &str, operation: RoleOperation) -> Result<(), AppError> {
    let decision = check_role_operation(role, operation);
    if decision.allowed {
        Ok(())
    } else {
        Err(decision.into())
    }
}

/// Role `id` with its permission ids and matrices.
async fn resource(state: &AppState, id: i64) -> Result<RoleResource, AppError> {
    let db = state.db();
    let summary = stored::role_by_id(db, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let role = stored::load_role_by_id(db, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let permission_ids = perms::role_permission_ids(db, id).await?;
    let (collection_permissions, file_permissions) = match role.to_json() {
        Json::Object(mut matrices) => (
            matrices
                .remove("collection_permissions")
                .unwrap_or_else(|| Json::Object(Map::new())),
            matrices
                .remove("file_permissions")
                .unwrap_or_else(|| Json::Object(Map::new())),
        ),
        _ => (Json::Object(Map::new()), Json::Object(Map::new())),
    };
    Ok(RoleResource {
        id: summary.id,
        name: summary.name,
        is_system: summary.is_system,
        permission_ids,
        collection_permissions,
        file_permissions,
    })
}

async fn form(state: &AppState) -> Result<RoleForm, AppError> {
    let permissions = perms::list_permissions(state.db())
        .await?
        .into_iter()
        .map(|p| PermissionOption {
            id: p.id,
            name: p.name,
        })
        .collect();
    let snapshot = state.snapshot().await?;
    let collections = snapshot
        .collections
        .iter()
        .map(|c| CollectionOption {
            id: c.id,
            slug: c.slug.to_string(),
            name: c.name.clone(),
        })
        .collect();
    Ok(RoleForm {
        permissions,
        collections,
    })
}

/// `name`: required, at most [`MAX_NAME`] characters, without leading or trailing spaces.
fn read_name(input: &mut Input<'_>) -> Option<String> {
    let name = input.required_str("name", MAX_NAME)?;
    if name.trim() != name {
        input.error("name", "The name field must not start or end with spaces.");
        return None;
    }
    Some(name.to_owned())
}

/// A required array of 1 to `max` positive ids.
fn required_ids(input: &mut Input<'_>, field: &str, max: usize) -> Vec<i64> {
    if input.raw(field).is_none_or(Json::is_null) {
        input.error(field, format!("The {field} field is required."));
        return Vec::new();
    }
    let ids = input.optional_ids(field, max).unwrap_or_default();
    if ids.is_empty()
        && input
            .raw(field)
            .and_then(Json::as_array)
            .is_some_and(Vec::is_empty)
    {
        input.error(
            field,
            format!("The {field} field must have at least 1 item."),
        );
    }
    ids
}

/// The role named `name` with the body's `collection_permissions` and `file_permissions`
/// (each left out: `current`'s, or none), parsed by [`Role::from_json`] and checked against the
/// project's collections and fields. Problems are recorded in `input`; `None` when there were
/// any.
fn read_matrices(
    input: &mut Input<'_>,
    name: String,
    current: Option<&Role>,
    snapshot: &Snapshot,
) -> Option<Role> {
    let current_json = current.map(Role::to_json);
    let pick = |input: &Input<'_>, key: &str| -> Json {
        match input.raw(key) {
            Some(value) => value.clone(),
            None => current_json
                .as_ref()
                .and_then(|c| c.get(key).cloned())
                .unwrap_or(Json::Null),
        }
    };
    let collections = pick(input, "collection_permissions");
    let files = pick(input, "file_permissions");
    if collections
        .as_object()
        .is_some_and(|m| m.len() > MAX_GRANTS)
    {
        input.error(
            "collection_permissions",
            format!(
                "The collection_permissions field must not name more than {MAX_GRANTS} collections."
            ),
        );
        return None;
    }
    let raw = json!({"collection_permissions": collections, "file_permissions": files});
    let role = match Role::from_json(&name, &raw) {
        Ok(role) => role,
        Err(PolicyError::InvalidGrant { path, message }) => {
            input.error(&path, message);
            return None;
        }
        Err(other) => {
            input.error("collection_permissions", other.to_string());
            return None;
        }
    };
    let mut errors = ValidationErrors::new();
    check_grants(&role, snapshot, &mut errors);
    if errors.is_empty() {
        Some(role)
    } else {
        for (path, messages) in errors.iter() {
            for message in messages {
                input.error(path, message.clone());
            }
        }
        None
    }
}

/// Grants must name collections and fields that exist: a typo in `rules.fields` would otherwise
/// leave the real field readable, and one in `item_filter` would hide every item, both silently
/// (the manifest refuses the same).
fn check_grants(role: &Role, snapshot: &Snapshot, errors: &mut ValidationErrors) {
    for (slug, grant) in &role.collections {
        let at = format!("collection_permissions.{slug}");
        let Some(collection) = snapshot.collection(slug.as_str()) else {
            errors.add(&at, format!("No collection has the slug \"{slug}\"."));
            continue;
        };
        let schema = collection.schema();
        for field in grant.fields.keys() {
            if schema.field(field.as_str()).is_none() {
                errors.add(
                    format!("{at}.rules.fields.{field}"),
                    format!("The collection \"{slug}\" has no field \"{field}\"."),
                );
            }
        }
        if let Some(filter) = &grant.item_filter {
            for field in filter.fields() {
                if let FilterField::Data(name) = field
                    && schema.field(name.as_str()).is_none()
                {
                    errors.add(
                        format!("{at}.rules.item_filter.{name}"),
                        format!("The collection \"{slug}\" has no field \"{name}\"."),
                    );
                }
            }
        }
    }
}
