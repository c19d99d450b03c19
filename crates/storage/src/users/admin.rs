//! Users as the admin app manages them: listed and shown with their direct roles and their
//! groups, created and edited with both in one transaction, soft-deleted, restored and deleted
//! for good. Every write of access runs under [`guard`](super::guard)'s rules.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use super::MiniUser;
use super::guard::{Before, lock_access};
use super::links::{USER_GROUPS, USER_ROLES, assignable_role_ids, existing_ids, replace_links};
use crate::StorageError;
use crate::items::Page;
use crate::listing::ListQuery;
use crate::sql::{IdRow, Sql, begin_write, id_param, now};

/// The answer to an email that another user has (in any case).
pub const EMAIL_TAKEN: &str = "The email has already been taken.";

/// A group as a user's memberships show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRef {
    pub id: i64,
    pub name: String,
}

/// A user with its direct roles and its groups. Never its password hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
    pub email_verified_at: Option<OffsetDateTime>,
    pub deleted_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    /// The roles held directly (not through groups), in creation order.
    pub roles: Vec<String>,
    /// Every group the user is a member of (deleted ones too: the membership is kept), in id
    /// order.
    pub groups: Vec<GroupRef>,
}

#[derive(FromQueryResult)]
struct UserRow {
    id: i32,
    name: String,
    email: Option<String>,
    email_verified_at: Option<OffsetDateTime>,
    deleted_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

const USER_COLUMNS: &str = "SELECT u.id, u.name, u.email, u.email_verified_at, u.deleted_at, \
                            u.created_at, u.updated_at FROM users u";

#[derive(FromQueryResult)]
struct OwnedName {
    owner: i32,
    name: String,
}

#[derive(FromQueryResult)]
struct OwnedGroup {
    owner: i32,
    id: i32,
    name: String,
}

/// The rows with their roles and groups: two queries whatever the number of rows.
async fn with_links<C: ConnectionTrait>(
    db: &C,
    rows: Vec<UserRow>,
) -> Result<Vec<UserRecord>, StorageError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let ids: Vec<i32> = rows.iter().map(|r| r.id).collect();
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT ur.user_id AS owner, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id \
         WHERE ur.user_id IN ",
    );
    sql.bind_list(ids.iter().copied());
    sql.push(" ORDER BY ur.user_id, r.id");
    let mut roles: HashMap<i32, Vec<String>> = HashMap::new();
    for row in sql.all_as::<OwnedName, _>(db).await? {
        roles.entry(row.owner).or_default().push(row.name);
    }
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT gu.user_id AS owner, g.id, g.name FROM group_users gu \
         JOIN \"groups\" g ON g.id = gu.group_id WHERE gu.user_id IN ",
    );
    sql.bind_list(ids.iter().copied());
    sql.push(" ORDER BY gu.user_id, g.id");
    let mut groups: HashMap<i32, Vec<GroupRef>> = HashMap::new();
    for row in sql.all_as::<OwnedGroup, _>(db).await? {
        groups.entry(row.owner).or_default().push(GroupRef {
            id: i64::from(row.id),
            name: row.name,
        });
    }
    Ok(rows
        .into_iter()
        .map(|row| UserRecord {
            id: i64::from(row.id),
            roles: roles.remove(&row.id).unwrap_or_default(),
            groups: groups.remove(&row.id).unwrap_or_default(),
            name: row.name,
            email: row.email,
            email_verified_at: row.email_verified_at,
            deleted_at: row.deleted_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
        .collect())
}

/// One page of users, newest first (by id), with the number matching. Four queries.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(page = query.page, per_page = query.per_page))]
pub async fn list_users<C: ConnectionTrait>(
    db: &C,
    query: &ListQuery,
) -> Result<Page<UserRecord>, StorageError> {
    let backend = db.get_database_backend();
    let filter = |sql: &mut Sql| {
        sql.push(" WHERE 1 = 1");
        query.trashed.push(sql, "u.deleted_at");
        query.push_search(sql, &["u.name", "u.email"]);
    };
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM users u");
    filter(&mut count);
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push(USER_COLUMNS);
    filter(&mut sql);
    sql.push(" ORDER BY u.id DESC");
    query.push_page(&mut sql);
    let rows = sql.all_as::<UserRow, _>(db).await?;
    let users = with_links(db, rows).await?;
    Ok(Page::new(users, total, query.page, query.per_page))
}

/// The user `id` (deleted or not) with its roles and groups, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id = id))]
pub async fn find_user<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<UserRecord>, StorageError> {
    let Some(uid) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(USER_COLUMNS).push(" WHERE u.id = ").bind(uid);
    let rows = sql.all_as::<UserRow, _>(db).await?;
    Ok(with_links(db, rows).await?.pop())
}

/// Whether a user other than `except` has this email, in any case (deleted users too: the
/// address stays theirs until they are deleted for good).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn email_in_use<C: ConnectionTrait>(
    db: &C,
    email: &str,
    except: Option<i64>,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM users WHERE lower(email) = lower(")
        .bind(email)
        .push(")");
    if let Some(uid) = except.and_then(id_param) {
        sql.push(" AND id <> ").bind(uid);
    }
    Ok(sql.one_as::<IdRow, _>(db).await?.is_some())
}

/// Users that are not deleted, in id order, at most `limit` (the admin forms' member picker).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn user_options<C: ConnectionTrait>(
    db: &C,
    limit: u64,
) -> Result<Vec<MiniUser>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, email FROM users WHERE deleted_at IS NULL ORDER BY id LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    Ok(sql
        .all_as::<super::UserRow, _>(db)
        .await?
        .into_iter()
        .map(MiniUser::from)
        .collect())
}

/// What creating a user needs; the caller has validated and hashed.
#[derive(Debug, Clone, Copy)]
pub struct NewUser<'a> {
    pub name: &'a str,
    pub email: &'a str,
    /// The PHC string; `None` for an account without a password (it signs in by code).
    pub password_hash: Option<&'a str>,
    pub email_verified_at: Option<OffsetDateTime>,
    /// Role names: each must exist and be assignable (never `public`).
    pub roles: &'a [String],
    pub group_ids: &'a [i64],
}

/// Creates a user with its roles and memberships in one transaction; answers its id.
///
/// # Errors
/// [`StorageError::Conflict`] on `email` ([`EMAIL_TAKEN`]), on `roles` (unknown or `public`) or
/// on `group_ids` (unknown); nothing is written. A database error.
#[instrument(skip_all, err)]
pub async fn insert_user<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    new: &NewUser<'_>,
) -> Result<i64, StorageError> {
    let tx = begin_write(db).await?;
    lock_access(&tx).await?;
    let role_ids = assignable_role_ids(&tx, new.roles, "roles").await?;
    let group_ids = existing_ids(&tx, "\"groups\"", new.group_ids, "group_ids", "group").await?;
    let at = now();
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push(
        "INSERT INTO users (name, email, password_hash, email_verified_at, created_at, updated_at) \
         VALUES (",
    )
    .bind(new.name)
    .push(", ")
    .bind(new.email)
    .push(", ")
    .bind(new.password_hash.map(str::to_owned))
    .push(", ")
    .bind(new.email_verified_at.map(crate::sql::stamp))
    .push(", ")
    .bind(at)
    .push(", ")
    .bind(at)
    .push(")");
    let id = sql.insert_returning_id(&tx).await.map_err(email_conflict)?;
    let uid = id_param(id).ok_or_else(|| StorageError::corrupt("user id out of range"))?;
    replace_links(&tx, USER_ROLES, uid, &role_ids).await?;
    replace_links(&tx, USER_GROUPS, uid, &group_ids).await?;
    tx.commit().await?;
    Ok(id)
}

fn email_conflict(err: StorageError) -> StorageError {
    if err.is_unique_violation() {
        StorageError::conflict_on("email", EMAIL_TAKEN)
    } else {
        err
    }
}

/// An edit of a user: `None` leaves a part alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserChanges {
    pub name: Option<String>,
    pub email: Option<String>,
    /// A new PHC string.
    pub password_hash: Option<String>,
    /// `true` marks the email verified now (unless it already is), `false` unverified.
    pub email_verified: Option<bool>,
    /// Replaces the roles held directly.
    pub roles: Option<Vec<String>>,
    /// Replaces the memberships.
    pub group_ids: Option<Vec<i64>>,
}

/// Applies `changes` to the user `id`, which must not be deleted, in one transaction.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or deleted user; [`StorageError::Conflict`] as
/// [`insert_user`], or on `roles`/`group_ids` when it would take away the last super-admin; a
/// database error.
#[instrument(skip_all, err, fields(user_id = id))]
pub async fn update_user<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
    changes: &UserChanges,
) -> Result<(), StorageError> {
    let uid = id_param(id).ok_or(StorageError::NotFound { what: "user" })?;
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT id FROM users WHERE deleted_at IS NULL AND id = ")
        .bind(uid);
    if sql.one_as::<IdRow, _>(&tx).await?.is_none() {
        return Err(StorageError::NotFound { what: "user" });
    }
    let role_ids = match &changes.roles {
        Some(names) => Some(assignable_role_ids(&tx, names, "roles").await?),
        None => None,
    };
    let group_ids = match &changes.group_ids {
        Some(ids) => Some(existing_ids(&tx, "\"groups\"", ids, "group_ids", "group").await?),
        None => None,
    };
    let at = now();
    let mut sql = Sql::new(backend);
    sql.push("UPDATE users SET updated_at = ").bind(at);
    if let Some(name) = &changes.name {
        sql.push(", name = ").bind(name.clone());
    }
    if let Some(email) = &changes.email {
        sql.push(", email = ").bind(email.clone());
    }
    if let Some(hash) = &changes.password_hash {
        sql.push(", password_hash = ").bind(hash.clone());
    }
    match changes.email_verified {
        Some(true) => {
            sql.push(", email_verified_at = COALESCE(email_verified_at, ")
                .bind(at)
                .push(")");
        }
        Some(false) => {
            sql.push(", email_verified_at = NULL");
        }
        None => {}
    }
    sql.push(" WHERE id = ").bind(uid);
    sql.execute(&tx).await.map_err(email_conflict)?;
    if let Some(role_ids) = &role_ids {
        replace_links(&tx, USER_ROLES, uid, role_ids).await?;
    }
    if let Some(group_ids) = &group_ids {
        replace_links(&tx, USER_GROUPS, uid, group_ids).await?;
    }
    if role_ids.is_some() || group_ids.is_some() {
        let field = if role_ids.is_some() {
            "roles"
        } else {
            "group_ids"
        };
        before.keep_a_super_admin(&tx, field).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Soft-deletes the user `id` (it can no longer sign in).
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or already deleted user; a conflict on `user` when
/// it is the last super-admin; a database error.
#[instrument(skip_all, err, fields(user_id = id))]
pub async fn soft_delete_user<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<(), StorageError> {
    let uid = id_param(id).ok_or(StorageError::NotFound { what: "user" })?;
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let at = now();
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE users SET deleted_at = ")
        .bind(at)
        .push(", updated_at = ")
        .bind(at)
        .push(" WHERE deleted_at IS NULL AND id = ")
        .bind(uid);
    if sql.execute(&tx).await? == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    before.keep_a_super_admin(&tx, "user").await?;
    tx.commit().await?;
    Ok(())
}

/// Restores the soft-deleted user `id`; answers whether it was deleted (restoring a user that
/// is not deleted changes nothing).
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown user; a database error.
#[instrument(skip_all, err, fields(user_id = id))]
pub async fn restore_user<C: ConnectionTrait>(db: &C, id: i64) -> Result<bool, StorageError> {
    let uid = id_param(id).ok_or(StorageError::NotFound { what: "user" })?;
    let at = now();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE users SET deleted_at = NULL, updated_at = ")
        .bind(at)
        .push(" WHERE deleted_at IS NOT NULL AND id = ")
        .bind(uid);
    if sql.execute(db).await? > 0 {
        return Ok(true);
    }
    if crate::sql::row_exists(db, "users", uid).await? {
        Ok(false)
    } else {
        Err(StorageError::NotFound { what: "user" })
    }
}

/// Deletes the user `id` for good, deleted or not, with its roles, memberships, sessions and
/// codes; items, revisions and activity entries keep their rows without it.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown user; a conflict on `user` when it is the last
/// super-admin; a database error.
#[instrument(skip_all, err, fields(user_id = id))]
pub async fn force_delete_user<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<(), StorageError> {
    let uid = id_param(id).ok_or(StorageError::NotFound { what: "user" })?;
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM users WHERE id = ").bind(uid);
    if sql.execute(&tx).await? == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    before.keep_a_super_admin(&tx, "user").await?;
    tx.commit().await?;
    Ok(())
}
