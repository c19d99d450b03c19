//! Groups of users that roles can be attached to, so their members hold the role.

use sea_orm::ConnectionTrait;
use tracing::instrument;
use vellum_policy::{RoleOperation, check_role_operation};

use crate::StorageError;
use crate::error::check_name;
use crate::roles::{refuse_unless_allowed, role_exists};
use crate::sql::{Sql, id_param, row_exists};

/// A group of users that roles can be attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: i64,
    pub name: String,
}
/// Creates a group.
///
/// # Errors
/// [`StorageError::Conflict`] for an empty or taken name; a database error.
#[instrument(skip_all, err)]
pub async fn create_group<C: ConnectionTrait>(db: &C, name: &str) -> Result<Group, StorageError> {
    check_name("group", name)?;
    let mut sql = Sql::new(db.get_database_backend());
    // Quoted: GROUPS is a keyword (window frames) on both backends.
    sql.push("INSERT INTO \"groups\" (name) VALUES (")
        .bind(name)
        .push(")");
    match sql.insert_returning_id(db).await {
        Ok(id) => Ok(Group {
            id,
            name: name.to_owned(),
        }),
        Err(e) if e.is_unique_violation() => Err(StorageError::conflict(format!(
            "a group named \"{name}\" already exists"
        ))),
        Err(e) => Err(e),
    }
}
/// Adds a user to a group; adding a member again changes nothing.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown group or user; a database error.
#[instrument(skip_all, err, fields(group_id, user_id))]
pub async fn add_user_to_group<C: ConnectionTrait>(
    db: &C,
    group_id: i64,
    user_id: i64,
) -> Result<(), StorageError> {
    let gid = id_param(group_id).ok_or(StorageError::NotFound { what: "group" })?;
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO group_users (group_id, user_id) \
         SELECT g.id, u.id FROM \"groups\" g, users u WHERE g.id = ",
    )
    .bind(gid)
    .push(" AND u.id = ")
    .bind(uid)
    .push(" ON CONFLICT (group_id, user_id) DO NOTHING");
    if sql.execute(db).await? == 0 {
        if !row_exists(db, "\"groups\"", gid).await? {
            return Err(StorageError::NotFound { what: "group" });
        }
        if !row_exists(db, "users", uid).await? {
            return Err(StorageError::NotFound { what: "user" });
        }
    }
    Ok(())
}

/// Attaches a role to a group, so its members hold the role. `public` is refused here as well:
/// through a group it would reach users, which the role rules forbid.
///
/// # Errors
/// [`StorageError::Conflict`] for `public`; [`StorageError::NotFound`] for an unknown group or
/// role; a database error.
#[instrument(skip_all, err, fields(group_id, role))]
pub async fn attach_role_to_group<C: ConnectionTrait>(
    db: &C,
    group_id: i64,
    role: &str,
) -> Result<(), StorageError> {
    refuse_unless_allowed(check_role_operation(role, RoleOperation::AssignToUser))?;
    let gid = id_param(group_id).ok_or(StorageError::NotFound { what: "group" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO role_groups (role_id, group_id) \
         SELECT r.id, g.id FROM roles r, \"groups\" g WHERE r.name = ",
    )
    .bind(role)
    .push(" AND g.id = ")
    .bind(gid)
    .push(" ON CONFLICT (role_id, group_id) DO NOTHING");
    if sql.execute(db).await? == 0 {
        if !row_exists(db, "\"groups\"", gid).await? {
            return Err(StorageError::NotFound { what: "group" });
        }
        if !role_exists(db, role).await? {
            return Err(StorageError::NotFound { what: "role" });
        }
    }
    Ok(())
}
