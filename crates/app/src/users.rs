//! The admin app's users (`/users…`): list, show, the create and edit forms' data, create, edit,
//! soft delete, restore and force delete, each gated by its `can-*-users` permission. Creating
//! a user is also offered without a principal ([`create_as_operator`]) to `vellum-admin users
//! create` and `vellum-server --demo`, with the same validation and the same write.
//!
//! Rules kept here: emails are unique in any case; `public` is never assignable; a user cannot
//! delete itself; a new password ends the user's other sessions; a deleted user's sessions end
//! at once. Storage refuses any write that would take the last super-admin away.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use time::OffsetDateTime;
use vellum_domain::{
    EmailAddress, MAX_EMAIL_LEN, MAX_PASSWORD_CHARS, MAX_USER_NAME_LEN, check_new_password,
    parse_user_name,
};
use vellum_policy::{RoleOperation, check_role_operation};
use vellum_storage::Database;
use vellum_storage::users::{
    self as stored, EMAIL_TAKEN, MAX_LINKS, NewUser, UserChanges, UserRecord,
};

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::identity::password::PasswordHasher;
use crate::input::Input;
use crate::items::PageMeta;
use crate::listing::{PICKER_LIMIT, parse, parse_id};
use crate::principal::{Principal, SUPER_ADMIN, body_ids, names_super_admin};

/// A group as a user's memberships show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRef {
    pub id: i64,
    pub name: String,
}

/// A user as the admin app shows it: never its password hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserResource {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub email_verified_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub deleted_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The roles held directly (not through groups).
    pub roles: Vec<String>,
    pub groups: Vec<GroupRef>,
}

impl From<UserRecord> for UserResource {
    fn from(user: UserRecord) -> Self {
        Self {
            id: user.id,
            name: user.name,
            email: user.email,
            email_verified_at: user.email_verified_at,
            deleted_at: user.deleted_at,
            created_at: user.created_at,
            updated_at: user.updated_at,
            roles: user.roles,
            groups: user
                .groups
                .into_iter()
                .map(|g| GroupRef {
                    id: g.id,
                    name: g.name,
                })
                .collect(),
        }
    }
}

/// `GET /users`: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Serialize)]
pub struct UserPage {
    pub data: Vec<UserResource>,
    pub meta: PageMeta,
}

/// What the create form offers: the assignable roles and the groups (each list at most
/// [`PICKER_LIMIT`] long).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserForm {
    pub roles: Vec<String>,
    pub groups: Vec<GroupRef>,
}

/// What the edit form shows: the user and what the create form offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserEdit {
    pub user: UserResource,
    pub roles: Vec<String>,
    pub groups: Vec<GroupRef>,
}

/// `GET /users?search=&trashed=&page=&per_page=`: newest first.
///
/// # Errors
/// 403 without `can-show-users`, 422 for a bad query, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<UserPage, AppError> {
    principal.require("can-show-users")?;
    let query = parse(query)?;
    let page = stored::list_users(state.db(), &query).await?;
    Ok(UserPage {
        data: page.items.into_iter().map(UserResource::from).collect(),
        meta: PageMeta {
            current_page: page.current_page,
            last_page: page.last_page,
            per_page: page.per_page,
            total: page.total,
        },
    })
}

/// `GET /users/{user}`: a user, deleted or not.
///
/// # Errors
/// 403 without `can-show-users`, 404 for an unknown user, the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<UserResource, AppError> {
    principal.require("can-show-users")?;
    let id = parse_id(id)?;
    Ok(stored::find_user(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

/// The roles a form offers: every role but `public`, in creation order.
pub(crate) async fn assignable_roles(db: &Database) -> Result<Vec<String>, AppError> {
    Ok(vellum_storage::roles::list_roles(db)
        .await?
        .into_iter()
        .filter(|r| check_role_operation(&r.name, RoleOperation::AssignToUser).allowed)
        .take(usize::try_from(PICKER_LIMIT).unwrap_or(usize::MAX))
        .map(|r| r.name)
        .collect())
}

async fn form(db: &Database) -> Result<UserForm, AppError> {
    Ok(UserForm {
        roles: assignable_roles(db).await?,
        groups: vellum_storage::groups::group_options(db, PICKER_LIMIT)
            .await?
            .into_iter()
            .map(|g| GroupRef {
                id: g.id,
                name: g.name,
            })
            .collect(),
    })
}

/// `GET /users/create`: the create form's data.
///
/// # Errors
/// 403 without `can-create-users`, the database.
pub async fn create_form(state: &AppState, principal: &Principal) -> Result<UserForm, AppError> {
    principal.require("can-create-users")?;
    form(state.db()).await
}

/// `GET /users/{user}/edit`: the user (not deleted) and the form's data.
///
/// # Errors
/// 403 without `can-edit-users`, 404 for an unknown or deleted user, the database.
pub async fn edit_form(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<UserEdit, AppError> {
    principal.require("can-edit-users")?;
    let user = live_user(state.db(), parse_id(id)?).await?;
    let form = form(state.db()).await?;
    Ok(UserEdit {
        user: user.into(),
        roles: form.roles,
        groups: form.groups,
    })
}

async fn live_user(db: &Database, id: i64) -> Result<UserRecord, AppError> {
    stored::find_user(db, id)
        .await?
        .filter(|u| u.deleted_at.is_none())
        .ok_or(AppError::NotFound)
}

/// Reads `roles`: each must exist and be assignable. Problems are recorded on `roles`.
pub(crate) async fn read_roles(
    db: &Database,
    input: &mut Input<'_>,
) -> Result<Option<Vec<String>>, AppError> {
    let Some(names) = input.optional_strings("roles", MAX_LINKS, 255) else {
        return Ok(None);
    };
    let existing: BTreeSet<String> = vellum_storage::roles::list_roles(db)
        .await?
        .into_iter()
        .map(|r| r.name)
        .collect();
    let mut roles: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let decision = check_role_operation(name, RoleOperation::AssignToUser);
        if !decision.allowed {
            input.error("roles", format!("The {name} role cannot be assigned."));
        } else if !existing.contains(name) {
            input.error(
                "roles",
                format!("The role \"{}\" does not exist.", name.replace('\0', "")),
            );
        } else if !roles.iter().any(|r| r == name) {
            roles.push(name.to_owned());
        }
    }
    Ok(Some(roles))
}

/// Reads an array of ids of rows that must exist (`unknown` answers those that do not).
pub(crate) async fn read_ids<F, Fut>(
    input: &mut Input<'_>,
    field: &str,
    what: &str,
    unknown: F,
) -> Result<Option<Vec<i64>>, AppError>
where
    F: FnOnce(Vec<i64>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<i64>, vellum_storage::StorageError>>,
{
    let Some(ids) = input.optional_ids(field, MAX_LINKS) else {
        return Ok(None);
    };
    let ids: Vec<i64> = ids
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for id in unknown(ids.clone()).await? {
        input.error(field, format!("The {what} {id} does not exist."));
    }
    Ok(Some(ids))
}

fn read_name(input: &mut Input<'_>) -> Option<String> {
    let raw = input.required_str("name", MAX_USER_NAME_LEN)?;
    parse_user_name(raw)
        .map_err(|e| input.error("name", e.to_string()))
        .ok()
}

async fn read_email(
    db: &Database,
    input: &mut Input<'_>,
    except: Option<i64>,
) -> Result<Option<EmailAddress>, AppError> {
    let Some(raw) = input.required_str("email", MAX_EMAIL_LEN) else {
        return Ok(None);
    };
    let email = match EmailAddress::parse(raw) {
        Ok(email) => email,
        Err(e) => {
            input.error("email", e.to_string());
            return Ok(None);
        }
    };
    if stored::email_in_use(db, email.as_str(), except).await? {
        input.error("email", EMAIL_TAKEN);
        return Ok(None);
    }
    Ok(Some(email))
}

/// A new password, when one is given (absent, `null` or empty: none).
fn read_password<'a>(input: &mut Input<'a>) -> Option<&'a str> {
    let password = input.optional_str("password", MAX_PASSWORD_CHARS)??;
    if password.is_empty() {
        return None;
    }
    if let Err(e) = check_new_password(password) {
        input.error("password", e.to_string());
        return None;
    }
    Some(password)
}

/// The names of the body's keys among `fields`, for the activity log (never values).
pub(crate) fn given(body: &Json, fields: &[&str]) -> Vec<String> {
    let empty = Map::new();
    let body = body.as_object().unwrap_or(&empty);
    fields
        .iter()
        .filter(|f| body.get(**f).is_some_and(|v| !v.is_null()))
        .map(|f| (*f).to_owned())
        .collect()
}

const CREATE_FIELDS: [&str; 6] = [
    "name",
    "email",
    "password",
    "roles",
    "group_ids",
    "email_verified",
];

/// Validates a create body (every wrong field at once), hashes the password, and writes the
/// user with its roles and groups in one transaction.
async fn insert(
    db: &Database,
    hasher: &PasswordHasher,
    body: &Json,
) -> Result<UserRecord, AppError> {
    let mut input = Input::new(body)?;
    let name = read_name(&mut input);
    let email = read_email(db, &mut input, None).await?;
    let password = read_password(&mut input);
    let roles = read_roles(db, &mut input).await?.unwrap_or_default();
    let group_ids = read_ids(&mut input, "group_ids", "group", |ids| async move {
        vellum_storage::groups::unknown_group_ids(db, &ids).await
    })
    .await?
    .unwrap_or_default();
    let verified = input.optional_bool("email_verified").unwrap_or(false);
    input.finish()?;
    let (Some(name), Some(email)) = (name, email) else {
        return Err(AppError::invalid("body", "The given data was invalid."));
    };
    let hash = match password {
        Some(password) => Some(hasher.hash(password).await?),
        None => None,
    };
    let id = stored::insert_user(
        db,
        &NewUser {
            name: &name,
            email: email.as_str(),
            password_hash: hash.as_deref(),
            email_verified_at: verified.then(OffsetDateTime::now_utc),
            roles: &roles,
            group_ids: &group_ids,
        },
    )
    .await?;
    stored::find_user(db, id)
        .await?
        .ok_or_else(|| AppError::Internal("a user just created cannot be read back".into()))
}

/// `POST /users`: `{name, email, password?, roles?, group_ids?, email_verified?}`.
///
/// # Errors
/// 403 without `can-create-users`; 422 naming every wrong field (a taken email in any case,
/// a short password, `public` or an unknown role, an unknown group); the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<UserResource, AppError> {
    principal.require("can-create-users")?;
    principal.require_super_admin_if(grants_super_admin(state.db(), body).await?)?;
    let user = insert(state.db(), &state.identity().hasher, body).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("users", "created")
            .subject("user", user.id)
            .changed(given(body, &CREATE_FIELDS)),
    )
    .await;
    if !user.roles.is_empty() || !user.groups.is_empty() {
        state.invalidate().await;
    }
    Ok(user.into())
}

/// Creates a user on behalf of the operator (`vellum-admin users create`, the demo admin): the
/// same body, validation and write as [`create`], without a signed-in principal. The caller
/// notifies running servers (their epoch) itself.
///
/// # Errors
/// As [`create`], without the 403.
pub async fn create_as_operator(
    db: &Database,
    hasher: &PasswordHasher,
    body: &Json,
) -> Result<UserResource, AppError> {
    let user = insert(db, hasher, body).await?;
    activity::record_in(
        db,
        None,
        Change::new("users", "created")
            .subject("user", user.id)
            .changed(given(body, &CREATE_FIELDS))
            .extra(serde_json::json!({ "by": "operator" })),
    )
    .await;
    Ok(user.into())
}

/// What an edit body asks for, compared with the user as it is.
fn changes_of(
    user: &UserRecord,
    name: Option<String>,
    email: Option<EmailAddress>,
    roles: Option<Vec<String>>,
    group_ids: Option<Vec<i64>>,
    verified: Option<bool>,
) -> (UserChanges, Vec<String>) {
    let mut changes = UserChanges::default();
    let mut changed = Vec::new();
    if let Some(name) = name.filter(|n| *n != user.name) {
        changes.name = Some(name);
        changed.push("name".to_owned());
    }
    if let Some(email) = email.filter(|e| user.email.as_deref() != Some(e.as_str())) {
        changes.email = Some(email.as_str().to_owned());
        changed.push("email".to_owned());
    }
    let held: BTreeSet<&str> = user.roles.iter().map(String::as_str).collect();
    if let Some(roles) =
        roles.filter(|r| r.iter().map(String::as_str).collect::<BTreeSet<_>>() != held)
    {
        changes.roles = Some(roles);
        changed.push("roles".to_owned());
    }
    let member_of: BTreeSet<i64> = user.groups.iter().map(|g| g.id).collect();
    if let Some(ids) =
        group_ids.filter(|ids| ids.iter().copied().collect::<BTreeSet<_>>() != member_of)
    {
        changes.group_ids = Some(ids);
        changed.push("groups".to_owned());
    }
    if let Some(verified) = verified.filter(|v| *v != user.email_verified_at.is_some()) {
        changes.email_verified = Some(verified);
        changed.push("email_verified".to_owned());
    }
    (changes, changed)
}

/// `PUT /users/{user}`: any of `name`, `email`, `password` (absent, null or empty: unchanged),
/// `roles` (replaces the direct roles), `group_ids` (replaces the memberships),
/// `email_verified`. A new password ends the user's other sessions (all of them, unless the
/// user edits itself: then the current one is kept).
///
/// # Errors
/// 403 without `can-edit-users`; 404 for an unknown or deleted user; 422 as [`create`], or when
/// the change would take the last super-admin away; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<UserResource, AppError> {
    principal.require("can-edit-users")?;
    let db = state.db();
    let user = live_user(db, parse_id(id)?).await?;
    principal.require_super_admin_if(
        holds_super_admin(db, user.id).await? || grants_super_admin(db, body).await?,
    )?;
    let mut input = Input::new(body)?;
    let name = if input.has("name") {
        read_name(&mut input)
    } else {
        None
    };
    let email = if input.has("email") {
        read_email(db, &mut input, Some(user.id)).await?
    } else {
        None
    };
    let password = read_password(&mut input);
    let roles = read_roles(db, &mut input).await?;
    let group_ids = read_ids(&mut input, "group_ids", "group", |ids| async move {
        vellum_storage::groups::unknown_group_ids(db, &ids).await
    })
    .await?;
    let verified = input.optional_bool("email_verified");
    input.finish()?;
    let (mut changes, mut changed) = changes_of(&user, name, email, roles, group_ids, verified);
    if let Some(password) = password {
        changes.password_hash = Some(state.identity().hasher.hash(password).await?);
        changed.push("password".to_owned());
    }
    if changed.is_empty() {
        return Ok(user.into());
    }
    stored::update_user(db, user.id, &changes).await?;
    if changes.password_hash.is_some() {
        let keep = (principal.user_id() == user.id).then_some(principal.session_id.as_str());
        state.identity().sessions.delete_user(user.id, keep).await?;
    }
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("users", "updated")
            .subject("user", user.id)
            .changed(changed),
    )
    .await;
    // Roles, memberships and the verified flag decide what the account may do, and every
    // replica remembers accounts per epoch: move it.
    state.invalidate().await;
    Ok(stored::find_user(db, user.id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

/// Refuses a user acting on its own account (delete, force delete).
fn not_self(principal: &Principal, id: i64) -> Result<(), AppError> {
    if principal.user_id() == id {
        return Err(AppError::invalid(
            "user",
            "You cannot delete your own account.",
        ));
    }
    Ok(())
}

/// `DELETE /users/{user}`: soft delete; the user's sessions end at once.
///
/// # Errors
/// 403 without `can-delete-users`; 404 for an unknown or already deleted user; 422 for the
/// principal's own account or the last super-admin; the database.
pub async fn delete(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require("can-delete-users")?;
    let id = parse_id(id)?;
    not_self(principal, id)?;
    principal.require_super_admin_if(holds_super_admin(state.db(), id).await?)?;
    stored::soft_delete_user(state.db(), id).await?;
    crate::accounts::end_user_sessions(state, id).await?;
    // Their live subscriptions end on every replica (the chat and user channels they held).
    state.realtime().revoke(&id.to_string(), None).await;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("users", "deleted")
            .subject("user", id)
            .changed(["deleted_at"]),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// `POST /users/{user}/restore`: the user can sign in again. Restoring a user that is not
/// deleted changes nothing.
///
/// # Errors
/// 403 without `can-restore-users`; 404 for an unknown user; the database.
pub async fn restore(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<UserResource, AppError> {
    principal.require("can-restore-users")?;
    let id = parse_id(id)?;
    principal.require_super_admin_if(holds_super_admin(state.db(), id).await?)?;
    if stored::restore_user(state.db(), id).await? {
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("users", "restored")
                .subject("user", id)
                .changed(["deleted_at"]),
        )
        .await;
        state.invalidate().await;
    }
    Ok(stored::find_user(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?
        .into())
}

/// `DELETE /users/{user}/force`: deletes the user for good, deleted or not; its sessions end.
///
/// # Errors
/// 403 without `can-force-delete-users`; 404 for an unknown user; 422 for the principal's own
/// account or the last super-admin; the database.
pub async fn force_delete(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<(), AppError> {
    principal.require("can-force-delete-users")?;
    let id = parse_id(id)?;
    not_self(principal, id)?;
    principal.require_super_admin_if(holds_super_admin(state.db(), id).await?)?;
    let orphans = crate::chat_bytes::orphans_of(
        state,
        vellum_storage::chat::attachments::OrphanScope::Uploader(id),
    )
    .await?;
    stored::force_delete_user(state.db(), id).await?;
    // The user's chat uploads in progress went with the row: their chunks go too.
    crate::chat_bytes::forget_blobs(state, orphans).await;
    // The database's sessions went with the row; a shared store (Redis) forgets them here.
    crate::accounts::end_user_sessions(state, id).await?;
    state.realtime().revoke(&id.to_string(), None).await;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("users", "force_deleted").subject("user", id),
    )
    .await;
    state.invalidate().await;
    Ok(())
}

/// Whether user `id` holds `super-admin`, directly or through a group (deleted or not: a restore
/// would give it back).
async fn holds_super_admin(db: &Database, id: i64) -> Result<bool, AppError> {
    Ok(vellum_storage::users::holds_role(db, id, SUPER_ADMIN).await?)
}

/// Whether a create or update body would give `super-admin`: the role itself, or a group that
/// holds it.
async fn grants_super_admin(db: &Database, body: &Json) -> Result<bool, AppError> {
    Ok(names_super_admin(body)
        || vellum_storage::groups::any_holds_role(db, &body_ids(body, "group_ids"), SUPER_ADMIN)
            .await?)
}

/// A random password for a generated account (the demo admin): 24 characters of `[A-Za-z0-9]`
/// (about 142 bits).
///
/// # Errors
/// No randomness available.
pub fn generate_password() -> Result<String, AppError> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(24);
    while out.len() < 24 {
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| AppError::Internal(format!("no randomness: {e}").into()))?;
        // 248 = 4 × 62: rejecting larger bytes keeps every character equally likely.
        for b in bytes.iter().filter(|b| **b < 248) {
            if let Some(c) = ALPHABET.get(usize::from(*b) % ALPHABET.len())
                && out.len() < 24
            {
                out.push(char::from(*c));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_are_long_and_plain() {
        let a = generate_password().unwrap();
        let b = generate_password().unwrap();
        assert_eq!(a.len(), 24);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        assert!(check_new_password(&a).is_ok());
    }

    #[test]
    fn only_named_keys_are_logged() {
        let body = serde_json::json!({"name": "A", "password": "secret!!", "roles": null, "x": 1});
        assert_eq!(given(&body, &CREATE_FIELDS), ["name", "password"]);
    }
}
