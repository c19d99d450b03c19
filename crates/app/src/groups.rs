//! The admin app's groups (`/groups…`): list, show, the forms' data, create, edit, soft delete,
//! restore and force delete, each gated by its `can-*-groups` permission. Members hold the
//! group's roles (their admin permissions and matrices) while the group is not deleted; `public`
//! is never attached. Storage refuses any write that would take the last super-admin away.

use serde::Serialize;
use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_domain::{MAX_USER_NAME_LEN, parse_user_name};
use vellum_storage::Database;
use vellum_storage::groups::{
    self as stored, GROUP_NAME_TAKEN, GroupChanges, GroupRecord, NewGroup,
};
use vellum_storage::users::MiniUser;

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::items::PageMeta;
use crate::listing::{PICKER_LIMIT, parse, parse_id};
use crate::principal::{Principal, SUPER_ADMIN, names_super_admin};
use crate::users::{assignable_roles, given, read_ids, read_roles};

/// A member as a group shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Member {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
}

impl From<MiniUser> for Member {
    fn from(user: MiniUser) -> Self {
        Self {
            id: user.id,
            name: user.name,
            email: user.email,
        }
    }
}

/// A group as the admin app shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupResource {
    pub id: i64,
    pub name: String,
    #[serde(with = "time::serde::rfc3339::option")]
    pub deleted_at: Option<OffsetDateTime>,
    pub roles: Vec<String>,
    /// The first 100 members by id.
    pub users: Vec<Member>,
    /// Every member.
    pub users_count: u64,
}

impl From<GroupRecord> for GroupResource {
    fn from(group: GroupRecord) -> Self {
        Self {
            id: group.id,
            name: group.name,
            deleted_at: group.deleted_at,
            roles: group.roles,
            users: group.users.into_iter().map(Member::from).collect(),
            users_count: group.users_count,
        }
    }
}

/// `GET /groups`: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Serialize)]
pub struct GroupPage {
    pub data: Vec<GroupResource>,
    pub meta: PageMeta,
}

/// What the create form offers: the assignable roles and the users that are not deleted (each
/// list at most [`PICKER_LIMIT`] long).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupForm {
    pub roles: Vec<String>,
    pub users: Vec<Member>,
}

/// What the edit form shows: the group and what the create form offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupEdit {
    pub group: GroupResource,
    pub roles: Vec<String>,
    pub users: Vec<Member>,
}

/// `GET /groups?search=&trashed=&page=&per_page=`: newest first.
///
/// # Errors
/// 403 without `can-show-groups`, 422 for a bad query, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<GroupPage, AppError> {
    principal.require("can-show-groups")?;
    let query = parse(query)?;
    let page = stored::list_groups(state.db(), &query).await?;
    Ok(GroupPage {
        data: page.items.into_iter().map(GroupResource::from).collect(),
        meta: PageMeta {
            current_page: page.current_page,
            last_page: page.last_page,
            per_page: page.per_page,
            total: page.total,
        },
    })
}

/// `GET /groups/{group}`: a group, deleted or not.
///
/// # Errors
/// 403 without `can-show-groups`, 404 for an unknown group, the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<GroupResource, AppError> {
    principal.require("can-show-groups")?;
    let id = parse_id(id)?;
    Ok(stored::find_group(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

async fn form(db: &Database) -> Result<GroupForm, AppError> {
    Ok(GroupForm {
        roles: assignable_roles(db).await?,
        users: vellum_storage::users::user_options(db, PICKER_LIMIT)
            .await?
            .into_iter()
            .map(Member::from)
            .collect(),
    })
}

/// `GET /groups/create`: the create form's data.
///
/// # Errors
/// 403 without `can-create-groups`, the database.
pub async fn create_form(state: &AppState, principal: &Principal) -> Result<GroupForm, AppError> {
    principal.require("can-create-groups")?;
    form(state.db()).await
}

async fn live_group(db: &Database, id: i64) -> Result<GroupRecord, AppError> {
    stored::find_group(db, id)
        .await?
        .filter(|g| g.deleted_at.is_none())
        .ok_or(AppError::NotFound)
}

/// `GET /groups/{group}/edit`: the group (not deleted) and the form's data.
///
/// # Errors
/// 403 without `can-edit-groups`, 404 for an unknown or deleted group, the database.
pub async fn edit_form(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<GroupEdit, AppError> {
    principal.require("can-edit-groups")?;
    let group = live_group(state.db(), parse_id(id)?).await?;
    let form = form(state.db()).await?;
    Ok(GroupEdit {
        group: group.into(),
        roles: form.roles,
        users: form.users,
    })
}

/// Reads `name`: 1 to 255 characters without control characters, not used by another group.
async fn read_name(
    db: &Database,
    input: &mut Input<'_>,
    except: Option<i64>,
) -> Result<Option<String>, AppError> {
    let Some(raw) = input.required_str("name", MAX_USER_NAME_LEN) else {
        return Ok(None);
    };
    let name = match parse_user_name(raw) {
        Ok(name) => name,
        Err(e) => {
            input.error("name", e.to_string());
            return Ok(None);
        }
    };
    if stored::group_name_in_use(db, &name, except).await? {
        input.error("name", GROUP_NAME_TAKEN);
        return Ok(None);
    }
    Ok(Some(name))
}

async fn read_user_ids(db: &Database, input: &mut Input<'_>) -> Result<Option<Vec<i64>>, AppError> {
    read_ids(input, "user_ids", "user", |ids| async move {
        vellum_storage::users::unknown_user_ids(db, &ids).await
    })
    .await
}

/// `POST /groups`: `{name, user_ids?, roles?}`.
///
/// # Errors
/// 403 without `can-create-groups`; 422 naming every wrong field (a taken name, `public` or an
/// unknown role, an unknown user); the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<GroupResource, AppError> {
    principal.require("can-create-groups")?;
    principal.require_super_admin_if(names_super_admin(body))?;
    let db = state.db();
    let mut input = Input::new(body)?;
    let name = read_name(db, &mut input, None).await?;
    let user_ids = read_user_ids(db, &mut input).await?.unwrap_or_default();
    let roles = read_roles(db, &mut input).await?.unwrap_or_default();
    input.finish()?;
    let Some(name) = name else {
        return Err(AppError::invalid("name", "The name field is required."));
    };
    let id = stored::insert_group(
        db,
        &NewGroup {
            name: &name,
            user_ids: &user_ids,
            roles: &roles,
        },
    )
    .await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("groups", "created")
            .subject("group", id)
            .changed(given(body, &["name", "user_ids", "roles"])),
    )
    .await;
    if !user_ids.is_empty() && !roles.is_empty() {
        state.invalidate().await;
    }
    Ok(stored::find_group(db, id)
        .await?
        .ok_or_else(|| AppError::Internal("a group just created cannot be read back".into()))?
        .into())
}

/// `PUT /groups/{group}`: any of `name`, `user_ids` (replaces the members), `roles` (replaces
/// the roles).
///
/// # Errors
/// 403 without `can-edit-groups`; 404 for an unknown or deleted group; 422 as [`create`], or
/// when the change would take the last super-admin away; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<GroupResource, AppError> {
    principal.require("can-edit-groups")?;
    let db = state.db();
    let group = live_group(db, parse_id(id)?).await?;
    principal.require_super_admin_if(
        group.roles.iter().any(|r| r == SUPER_ADMIN) || names_super_admin(body),
    )?;
    let mut input = Input::new(body)?;
    let name = if input.has("name") {
        read_name(db, &mut input, Some(group.id)).await?
    } else {
        None
    };
    let user_ids = read_user_ids(db, &mut input).await?;
    let roles = read_roles(db, &mut input).await?;
    input.finish()?;
    let mut changes = GroupChanges::default();
    let mut changed = Vec::new();
    if let Some(name) = name.filter(|n| *n != group.name) {
        changes.name = Some(name);
        changed.push("name".to_owned());
    }
    if let Some(ids) = user_ids {
        // Only the first members are at hand: compare the whole set in storage's terms.
        let same = u64::try_from(ids.len()).ok() == Some(group.users_count)
            && group.users_count <= stored::MEMBERS_SHOWN
            && group.users.iter().all(|u| ids.contains(&u.id));
        if !same {
            changes.user_ids = Some(ids);
            changed.push("users".to_owned());
        }
    }
    if let Some(roles) = roles {
        let mut wanted = roles.clone();
        wanted.sort_unstable();
        let mut held = group.roles.clone();
        held.sort_unstable();
        if wanted != held {
            changes.roles = Some(roles);
            changed.push("roles".to_owned());
        }
    }
    if changed.is_empty() {
        return Ok(group.into());
    }
    stored::update_group(db, group.id, &changes).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("groups", "updated")
            .subject("group", group.id)
            .changed(changed),
    )
    .await;
    state.invalidate().await;
    Ok(stored::find_group(db, group.id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

/// `DELETE /groups/{group}`: soft delete; its members no longer hold its roles.
///
/// # Errors
/// 403 without `can-delete-groups`; 404 for an unknown or already deleted group; 422 when that
/// would take the last super-admin away; the database.
pub async fn delete(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require("can-delete-groups")?;
    let id = parse_id(id)?;
    principal.require_super_admin_if(group_holds_super_admin(state.db(), id).await?)?;
    stored::soft_delete_group(state.db(), id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("groups", "deleted")
            .subject("group", id)
            .changed(["deleted_at"]),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// `POST /groups/{group}/restore`: its members hold its roles again. Restoring a group that is
/// not deleted changes nothing.
///
/// # Errors
/// 403 without `can-restore-groups`; 404 for an unknown group; the database.
pub async fn restore(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<GroupResource, AppError> {
    principal.require("can-restore-groups")?;
    let id = parse_id(id)?;
    principal.require_super_admin_if(group_holds_super_admin(state.db(), id).await?)?;
    if stored::restore_group(state.db(), id).await? {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("groups", "restored")
                .subject("group", id)
                .changed(["deleted_at"]),
        )
        .await;
        state.invalidate().await;
    }
    Ok(stored::find_group(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

/// `DELETE /groups/{group}/force`: deletes the group for good, deleted or not.
///
/// # Errors
/// 403 without `can-force-delete-groups`; 404 for an unknown group; 422 when that would take
/// the last super-admin away; the database.
pub async fn force_delete(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<(), AppError> {
    principal.require("can-force-delete-groups")?;
    let id = parse_id(id)?;
    principal.require_super_admin_if(group_holds_super_admin(state.db(), id).await?)?;
    stored::force_delete_group(state.db(), id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("groups", "force_deleted").subject("group", id),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// Whether group `id` holds `super-admin` (deleted or not).
async fn group_holds_super_admin(db: &Database, id: i64) -> Result<bool, AppError> {
    Ok(vellum_storage::groups::any_holds_role(db, &[id], SUPER_ADMIN).await?)
}
