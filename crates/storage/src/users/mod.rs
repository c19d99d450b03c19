//! Users: in Vellum's API their only job is to hold roles (directly or through
//! [`crate::groups`]) and to appear as `MiniUser` in `include=users`; the admin app lists, creates,
//! edits, deletes and restores them ([`list_users`], [`insert_user`], [`update_user`], …).
//!
//! Every write of users, groups and their roles keeps the rules of `guard`: writes of access take
//! turns, and the last super-admin cannot be taken away.

mod admin;
pub(crate) mod guard;
pub(crate) mod links;

pub use admin::{
    EMAIL_TAKEN, GroupRef, NewUser, UserChanges, UserRecord, email_in_use, find_user,
    force_delete_user, insert_user, list_users, restore_user, soft_delete_user, update_user,
    user_options,
};
pub use guard::LAST_SUPER_ADMIN;
pub use links::MAX_LINKS;

use sea_orm::{ConnectionTrait, FromQueryResult};
use tracing::instrument;
use vellum_policy::{RoleOperation, check_role_operation};

use crate::StorageError;
use crate::error::check_name;
use crate::roles::{NameRow, refuse_unless_allowed, role_exists};
use crate::sql::{Sql, id_param, now, row_exists};

/// A user as the API shows it (`include=users`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiniUser {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
}
/// Creates a user. Sign-in credentials are the admin app's business and not stored here.
///
/// # Errors
/// [`StorageError::Conflict`] for an empty name or an email already used; a database error.
#[instrument(skip_all, err)]
pub async fn create_user<C: ConnectionTrait>(
    db: &C,
    name: &str,
    email: Option<&str>,
) -> Result<MiniUser, StorageError> {
    check_name("user", name)?;
    let at = now();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO users (name, email, created_at, updated_at) VALUES (")
        .bind(name)
        .push(", ")
        .bind(email.map(str::to_owned))
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(at)
        .push(")");
    let id = match sql.insert_returning_id(db).await {
        Ok(id) => id,
        Err(e) if e.is_unique_violation() => {
            return Err(StorageError::conflict(
                "a user with this email already exists".to_owned(),
            ));
        }
        Err(e) => return Err(e),
    };
    Ok(MiniUser {
        id,
        name: name.to_owned(),
        email: email.map(str::to_owned),
    })
}

/// The users among `ids`, in id order, in one query (a page's `include=users` is one batch, not
/// one query per item). Unknown ids are simply absent.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn users_by_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<MiniUser>, StorageError> {
    let mut wanted: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, email FROM users WHERE id IN ");
    sql.bind_list(wanted);
    sql.push(" ORDER BY id");
    Ok(sql
        .all_as::<UserRow, _>(db)
        .await?
        .into_iter()
        .map(MiniUser::from)
        .collect())
}

#[derive(FromQueryResult)]
struct UserRow {
    id: i32,
    name: String,
    email: Option<String>,
}

impl From<UserRow> for MiniUser {
    fn from(row: UserRow) -> Self {
        Self {
            id: i64::from(row.id),
            name: row.name,
            email: row.email,
        }
    }
}
/// The ids among `ids` (at most [`MAX_LINKS`] looked at) that name no user, deleted or not.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn unknown_user_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<i64>, StorageError> {
    links::unknown_ids(db, "users", ids).await
}

/// Gives a user a role directly. Assigning a role the user already has changes nothing.
///
/// # Errors
/// [`StorageError::Conflict`] when the role rules forbid it (`public` is not assignable to
/// users); [`StorageError::NotFound`] for an unknown user or role; a database error.
#[instrument(skip_all, err, fields(user_id, role))]
pub async fn assign_role<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    role: &str,
) -> Result<(), StorageError> {
    refuse_unless_allowed(check_role_operation(role, RoleOperation::AssignToUser))?;
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO user_roles (user_id, role_id) \
         SELECT u.id, r.id FROM users u, roles r WHERE u.id = ",
    )
    .bind(uid)
    .push(" AND r.name = ")
    .bind(role)
    .push(" ON CONFLICT (user_id, role_id) DO NOTHING");
    if sql.execute(db).await? == 0 {
        // Either already assigned (fine) or something is missing: only then look closer.
        if !row_exists(db, "users", uid).await? {
            return Err(StorageError::NotFound { what: "user" });
        }
        if !role_exists(db, role).await? {
            return Err(StorageError::NotFound { what: "role" });
        }
    }
    Ok(())
}
/// Whether user `user_id` holds the role named `role`, directly or through any of its groups
/// (deleted ones included: restoring the group would give the role back). One query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id, role))]
pub async fn holds_role<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    role: &str,
) -> Result<bool, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT r.id FROM roles r WHERE r.name = ")
        .bind(role)
        .push(" AND (r.id IN (SELECT ur.role_id FROM user_roles ur WHERE ur.user_id = ")
        .bind(uid)
        .push(
            ") OR r.id IN (SELECT rg.role_id FROM role_groups rg \
             JOIN group_users gu ON gu.group_id = rg.group_id WHERE gu.user_id = ",
        )
        .bind(uid)
        .push("))");
    Ok(sql.one(db).await?.is_some())
}

/// The names of every role a user holds, directly or through a group, sorted and without
/// duplicates. One query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn roles_of_user<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Vec<String>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT r.name FROM roles r WHERE r.id IN \
         (SELECT ur.role_id FROM user_roles ur WHERE ur.user_id = ",
    )
    .bind(uid)
    .push(
        ") OR r.id IN (SELECT rg.role_id FROM role_groups rg \
         JOIN group_users gu ON gu.group_id = rg.group_id WHERE gu.user_id = ",
    )
    .bind(uid)
    .push(") ORDER BY r.name");
    Ok(sql
        .all_as::<NameRow, _>(db)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect())
}
