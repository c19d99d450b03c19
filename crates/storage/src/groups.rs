//! Groups of users that roles can be attached to, so their members hold the role (unless the
//! group is soft-deleted); the admin app lists, creates, edits, deletes and restores them.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;
use vellum_policy::{RoleOperation, check_role_operation};

use crate::StorageError;
use crate::error::check_name;
use crate::items::Page;
use crate::listing::ListQuery;
use crate::roles::{refuse_unless_allowed, role_exists};
use crate::sql::{IdRow, Sql, begin_write, id_param, now, row_exists};
use crate::users::guard::{Before, lock_access};
use crate::users::links::{
    GROUP_ROLES, GROUP_USERS, assignable_role_ids, existing_ids, replace_links,
};
use crate::users::{GroupRef, MiniUser};

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

/// How many members a group shows ([`GroupRecord::users`]); `users_count` counts them all.
pub const MEMBERS_SHOWN: u64 = 100;

/// The answer to a group name already used.
pub const GROUP_NAME_TAKEN: &str = "The name has already been taken.";

/// A group as the admin app shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    pub id: i64,
    pub name: String,
    pub deleted_at: Option<OffsetDateTime>,
    /// The roles attached to the group, in creation order. A deleted group gives none of them.
    pub roles: Vec<String>,
    /// The first [`MEMBERS_SHOWN`] members by id (deleted users too: the membership is kept).
    pub users: Vec<MiniUser>,
    /// Every member.
    pub users_count: u64,
}

#[derive(FromQueryResult)]
struct GroupRow {
    id: i32,
    name: String,
    deleted_at: Option<OffsetDateTime>,
}

#[derive(FromQueryResult)]
struct OwnedName {
    owner: i32,
    name: String,
}

#[derive(FromQueryResult)]
struct Member {
    owner: i32,
    id: i32,
    name: String,
    email: Option<String>,
}

#[derive(FromQueryResult)]
struct OwnedCount {
    owner: i32,
    n: i64,
}

/// The rows with their roles, first members and member counts: three queries whatever the
/// number of rows (the members through a window, so a page never reads more than
/// [`MEMBERS_SHOWN`] per group).
async fn with_links<C: ConnectionTrait>(
    db: &C,
    rows: Vec<GroupRow>,
) -> Result<Vec<GroupRecord>, StorageError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let ids: Vec<i32> = rows.iter().map(|r| r.id).collect();
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT rg.group_id AS owner, r.name FROM role_groups rg \
         JOIN roles r ON r.id = rg.role_id WHERE rg.group_id IN ",
    );
    sql.bind_list(ids.iter().copied());
    sql.push(" ORDER BY rg.group_id, r.id");
    let mut roles: HashMap<i32, Vec<String>> = HashMap::new();
    for row in sql.all_as::<OwnedName, _>(db).await? {
        roles.entry(row.owner).or_default().push(row.name);
    }
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT m.owner, m.id, m.name, m.email FROM (SELECT gu.group_id AS owner, u.id, u.name, \
         u.email, ROW_NUMBER() OVER (PARTITION BY gu.group_id ORDER BY u.id) AS rn \
         FROM group_users gu JOIN users u ON u.id = gu.user_id WHERE gu.group_id IN ",
    );
    sql.bind_list(ids.iter().copied());
    sql.push(") m WHERE m.rn <= ")
        .bind(i64::try_from(MEMBERS_SHOWN).unwrap_or(i64::MAX))
        .push(" ORDER BY m.owner, m.id");
    let mut members: HashMap<i32, Vec<MiniUser>> = HashMap::new();
    for row in sql.all_as::<Member, _>(db).await? {
        members.entry(row.owner).or_default().push(MiniUser {
            id: i64::from(row.id),
            name: row.name,
            email: row.email,
        });
    }
    let mut sql = Sql::new(backend);
    sql.push("SELECT group_id AS owner, COUNT(*) AS n FROM group_users WHERE group_id IN ");
    sql.bind_list(ids.iter().copied());
    sql.push(" GROUP BY group_id");
    let counts: HashMap<i32, i64> = sql
        .all_as::<OwnedCount, _>(db)
        .await?
        .into_iter()
        .map(|row| (row.owner, row.n))
        .collect();
    Ok(rows
        .into_iter()
        .map(|row| GroupRecord {
            id: i64::from(row.id),
            roles: roles.remove(&row.id).unwrap_or_default(),
            users: members.remove(&row.id).unwrap_or_default(),
            users_count: counts
                .get(&row.id)
                .and_then(|n| u64::try_from(*n).ok())
                .unwrap_or(0),
            name: row.name,
            deleted_at: row.deleted_at,
        })
        .collect())
}

/// One page of groups, newest first (by id), with the number matching. Five queries.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(page = query.page, per_page = query.per_page))]
pub async fn list_groups<C: ConnectionTrait>(
    db: &C,
    query: &ListQuery,
) -> Result<Page<GroupRecord>, StorageError> {
    let backend = db.get_database_backend();
    let filter = |sql: &mut Sql| {
        sql.push(" WHERE 1 = 1");
        query.trashed.push(sql, "g.deleted_at");
        query.push_search(sql, &["g.name"]);
    };
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM \"groups\" g");
    filter(&mut count);
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push("SELECT g.id, g.name, g.deleted_at FROM \"groups\" g");
    filter(&mut sql);
    sql.push(" ORDER BY g.id DESC");
    query.push_page(&mut sql);
    let rows = sql.all_as::<GroupRow, _>(db).await?;
    let groups = with_links(db, rows).await?;
    Ok(Page::new(groups, total, query.page, query.per_page))
}

/// The group `id` (deleted or not) with its roles and members, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(group_id = id))]
pub async fn find_group<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<GroupRecord>, StorageError> {
    let Some(gid) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT g.id, g.name, g.deleted_at FROM \"groups\" g WHERE g.id = ")
        .bind(gid);
    let rows = sql.all_as::<GroupRow, _>(db).await?;
    Ok(with_links(db, rows).await?.pop())
}

/// Whether a group other than `except` (deleted or not) is named `name`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn group_name_in_use<C: ConnectionTrait>(
    db: &C,
    name: &str,
    except: Option<i64>,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM \"groups\" WHERE name = ")
        .bind(name);
    if let Some(gid) = except.and_then(id_param) {
        sql.push(" AND id <> ").bind(gid);
    }
    Ok(sql.one_as::<IdRow, _>(db).await?.is_some())
}

/// Groups that are not deleted, in id order, at most `limit` (the admin forms' group picker).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn group_options<C: ConnectionTrait>(
    db: &C,
    limit: u64,
) -> Result<Vec<GroupRef>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT id, name, deleted_at FROM \"groups\" WHERE deleted_at IS NULL ORDER BY id LIMIT ",
    )
    .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    Ok(sql
        .all_as::<GroupRow, _>(db)
        .await?
        .into_iter()
        .map(|row| GroupRef {
            id: i64::from(row.id),
            name: row.name,
        })
        .collect())
}

/// The ids among `ids` (at most [`crate::users::MAX_LINKS`] looked at) that name no group,
/// deleted or not.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn unknown_group_ids<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<i64>, StorageError> {
    crate::users::links::unknown_ids(db, "\"groups\"", ids).await
}

/// Whether any of the groups `ids` holds the role named `role` (deleted groups included: restoring
/// one would give it back). One query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(role, count = ids.len()))]
pub async fn any_holds_role<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
    role: &str,
) -> Result<bool, StorageError> {
    let ids: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    if ids.is_empty() {
        return Ok(false);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT rg.group_id AS id FROM role_groups rg JOIN roles r ON r.id = rg.role_id WHERE r.name = ")
        .bind(role)
        .push(" AND rg.group_id IN ");
    sql.bind_list(ids);
    Ok(sql.one(db).await?.is_some())
}

/// What creating a group needs; the caller has validated.
#[derive(Debug, Clone, Copy)]
pub struct NewGroup<'a> {
    pub name: &'a str,
    pub user_ids: &'a [i64],
    /// Role names: each must exist and be assignable (never `public`).
    pub roles: &'a [String],
}

/// [`check_name`], as a conflict on `name`.
fn check_group_name(name: &str) -> Result<(), StorageError> {
    check_name("group", name).map_err(|err| match err {
        StorageError::Conflict { message, .. } => StorageError::conflict_on("name", message),
        other => other,
    })
}

fn name_conflict(err: StorageError) -> StorageError {
    if err.is_unique_violation() {
        StorageError::conflict_on("name", GROUP_NAME_TAKEN)
    } else {
        err
    }
}

/// Creates a group with its members and roles in one transaction; answers its id.
///
/// # Errors
/// [`StorageError::Conflict`] on `name` ([`GROUP_NAME_TAKEN`]), on `roles` (unknown or
/// `public`) or on `user_ids` (unknown); nothing is written. A database error.
#[instrument(skip_all, err)]
pub async fn insert_group<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    new: &NewGroup<'_>,
) -> Result<i64, StorageError> {
    check_group_name(new.name)?;
    let tx = begin_write(db).await?;
    lock_access(&tx).await?;
    let role_ids = assignable_role_ids(&tx, new.roles, "roles").await?;
    let user_ids = existing_ids(&tx, "users", new.user_ids, "user_ids", "user").await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("INSERT INTO \"groups\" (name) VALUES (")
        .bind(new.name)
        .push(")");
    let id = sql.insert_returning_id(&tx).await.map_err(name_conflict)?;
    let gid = id_param(id).ok_or_else(|| StorageError::corrupt("group id out of range"))?;
    replace_links(&tx, GROUP_USERS, gid, &user_ids).await?;
    replace_links(&tx, GROUP_ROLES, gid, &role_ids).await?;
    tx.commit().await?;
    Ok(id)
}

/// An edit of a group: `None` leaves a part alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupChanges {
    pub name: Option<String>,
    /// Replaces the members.
    pub user_ids: Option<Vec<i64>>,
    /// Replaces the roles.
    pub roles: Option<Vec<String>>,
}

/// Applies `changes` to the group `id`, which must not be deleted, in one transaction.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or deleted group; [`StorageError::Conflict`] as
/// [`insert_group`], or on `roles`/`user_ids` when it would take away the last super-admin; a
/// database error.
#[instrument(skip_all, err, fields(group_id = id))]
pub async fn update_group<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
    changes: &GroupChanges,
) -> Result<(), StorageError> {
    let gid = id_param(id).ok_or(StorageError::NotFound { what: "group" })?;
    if let Some(name) = &changes.name {
        check_group_name(name)?;
    }
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT id FROM \"groups\" WHERE deleted_at IS NULL AND id = ")
        .bind(gid);
    if sql.one_as::<IdRow, _>(&tx).await?.is_none() {
        return Err(StorageError::NotFound { what: "group" });
    }
    let role_ids = match &changes.roles {
        Some(names) => Some(assignable_role_ids(&tx, names, "roles").await?),
        None => None,
    };
    let user_ids = match &changes.user_ids {
        Some(ids) => Some(existing_ids(&tx, "users", ids, "user_ids", "user").await?),
        None => None,
    };
    if let Some(name) = &changes.name {
        let mut sql = Sql::new(backend);
        sql.push("UPDATE \"groups\" SET name = ")
            .bind(name.clone())
            .push(" WHERE id = ")
            .bind(gid);
        sql.execute(&tx).await.map_err(name_conflict)?;
    }
    if let Some(user_ids) = &user_ids {
        replace_links(&tx, GROUP_USERS, gid, user_ids).await?;
    }
    if let Some(role_ids) = &role_ids {
        replace_links(&tx, GROUP_ROLES, gid, role_ids).await?;
    }
    if role_ids.is_some() || user_ids.is_some() {
        let field = if role_ids.is_some() {
            "roles"
        } else {
            "user_ids"
        };
        before.keep_a_super_admin(&tx, field).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Soft-deletes the group `id`: its members no longer hold its roles.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or already deleted group; a conflict on `group`
/// when that would take away the last super-admin; a database error.
#[instrument(skip_all, err, fields(group_id = id))]
pub async fn soft_delete_group<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<(), StorageError> {
    let gid = id_param(id).ok_or(StorageError::NotFound { what: "group" })?;
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE \"groups\" SET deleted_at = ")
        .bind(now())
        .push(" WHERE deleted_at IS NULL AND id = ")
        .bind(gid);
    if sql.execute(&tx).await? == 0 {
        return Err(StorageError::NotFound { what: "group" });
    }
    before.keep_a_super_admin(&tx, "group").await?;
    tx.commit().await?;
    Ok(())
}

/// Restores the soft-deleted group `id`; answers whether it was deleted.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown group; a database error.
#[instrument(skip_all, err, fields(group_id = id))]
pub async fn restore_group<C: ConnectionTrait>(db: &C, id: i64) -> Result<bool, StorageError> {
    let gid = id_param(id).ok_or(StorageError::NotFound { what: "group" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE \"groups\" SET deleted_at = NULL WHERE deleted_at IS NOT NULL AND id = ")
        .bind(gid);
    if sql.execute(db).await? > 0 {
        return Ok(true);
    }
    if row_exists(db, "\"groups\"", gid).await? {
        Ok(false)
    } else {
        Err(StorageError::NotFound { what: "group" })
    }
}

/// Deletes the group `id` for good, deleted or not, with its memberships and role links.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown group; a conflict on `group` when that would take
/// away the last super-admin; a database error.
#[instrument(skip_all, err, fields(group_id = id))]
pub async fn force_delete_group<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<(), StorageError> {
    let gid = id_param(id).ok_or(StorageError::NotFound { what: "group" })?;
    let tx = begin_write(db).await?;
    let before = Before::take(&tx).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM \"groups\" WHERE id = ").bind(gid);
    if sql.execute(&tx).await? == 0 {
        return Err(StorageError::NotFound { what: "group" });
    }
    before.keep_a_super_admin(&tx, "group").await?;
    tx.commit().await?;
    Ok(())
}
