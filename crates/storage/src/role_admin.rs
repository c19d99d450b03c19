//! The admin app's side of roles: the paginated role list with its counts, and the writes of
//! `/settings/roles` (create, update with a rename, duplicate, delete one or many), each one
//! transaction that writes the name, both matrices and the admin permissions together.
//!
//! The role rules ([`check_role_operation`]) are enforced here as in [`crate::roles`]: a caller
//! that forgot to check them still cannot rename `public` or delete `super-admin`.

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{Role, RoleOperation, SystemRole, bulk_delete_plan, check_role_operation};

use crate::StorageError;
use crate::error::check_name;
use crate::items::Page;
use crate::roles::{
    INSERT_CHUNK, NameRow, RoleSummary, RoleSummaryRow, refuse_unless_allowed, write_grants_in_tx,
};
use crate::sql::{Sql, begin_write, id_param, now};

/// A role as the admin app's role list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleListEntry {
    pub id: i64,
    pub name: String,
    pub is_system: bool,
    /// Admin permissions assigned to the role.
    pub permissions_count: u64,
    /// Users (not deleted) holding the role directly or through a group (not deleted).
    pub users_count: u64,
}

#[derive(FromQueryResult)]
struct RoleListRow {
    id: i32,
    name: String,
    is_system: bool,
    permissions_count: i64,
    users_count: i64,
}

/// One page of roles in creation order, with their counts. Two queries (the total, the page).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(page, per_page))]
pub async fn list_roles_page<C: ConnectionTrait>(
    db: &C,
    page: u64,
    per_page: u64,
) -> Result<Page<RoleListEntry>, StorageError> {
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM roles");
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT r.id, r.name, r.is_system, \
         (SELECT COUNT(*) FROM role_permissions rp WHERE rp.role_id = r.id) AS permissions_count, \
         (SELECT COUNT(*) FROM users u WHERE u.deleted_at IS NULL AND (\
            u.id IN (SELECT ur.user_id FROM user_roles ur WHERE ur.role_id = r.id) \
            OR u.id IN (SELECT gu.user_id FROM group_users gu \
                JOIN role_groups rg ON rg.group_id = gu.group_id \
                JOIN \"groups\" g ON g.id = gu.group_id \
                WHERE g.deleted_at IS NULL AND rg.role_id = r.id))) AS users_count \
         FROM roles r ORDER BY r.id LIMIT ",
    )
    .bind(i64::try_from(per_page).unwrap_or(100))
    .push(" OFFSET ")
    .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let entries = sql
        .all_as::<RoleListRow, _>(db)
        .await?
        .into_iter()
        .map(|row| RoleListEntry {
            id: i64::from(row.id),
            name: row.name,
            is_system: row.is_system,
            permissions_count: u64::try_from(row.permissions_count).unwrap_or(0),
            users_count: u64::try_from(row.users_count).unwrap_or(0),
        })
        .collect();
    Ok(Page::new(entries, total, page, per_page))
}

fn name_taken(name: &str) -> StorageError {
    StorageError::conflict_on("name", format!("A role named \"{name}\" already exists."))
}

/// Creates the role `role` (name and both matrices) holding the admin permissions
/// `permission_ids`, in one transaction; returns its id.
///
/// # Errors
/// [`StorageError::Conflict`] on `name` (empty, or taken), on `collection_permissions` (a slug
/// that is no collection) or on `permission_ids` (an id that is no permission); nothing is
/// written. A database error.
#[instrument(skip_all, err, fields(role = %role.name))]
pub async fn create_role<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    role: &Role,
    permission_ids: &[i64],
) -> Result<i64, StorageError> {
    check_name("role", &role.name)?;
    let tx = begin_write(db).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("INSERT INTO roles (name, is_system, created_at) VALUES (")
        .bind(role.name.clone())
        .push(", ")
        .bind(SystemRole::from_name(&role.name).is_some())
        .push(", ")
        .bind(now())
        .push(")");
    let role_id = match sql.insert_returning_id(&tx).await {
        Ok(id) => id,
        Err(e) if e.is_unique_violation() => return Err(name_taken(&role.name)),
        Err(e) => return Err(e),
    };
    let rid = id_param(role_id).ok_or_else(|| StorageError::corrupt("role id out of range"))?;
    write_grants_in_tx(&tx, rid, role).await?;
    crate::permissions::set_role_permissions_in_tx(&tx, rid, permission_ids).await?;
    tx.commit().await?;
    Ok(role_id)
}

/// Sets role `id`'s name and both matrices to `role`'s and, when `permission_ids` is given, its
/// admin permissions to exactly those; one transaction. The role rules are enforced here too: a
/// rename of `public` or `super-admin`, or admin permissions for `public`, are refused.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; [`StorageError::Conflict`] for a role rule, or
/// on `name`, `collection_permissions` or `permission_ids` as [`create_role`]; nothing is
/// written. A database error.
#[instrument(skip_all, err, fields(role_id = id, role = %role.name))]
pub async fn update_role<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
    role: &Role,
    permission_ids: Option<&[i64]>,
) -> Result<(), StorageError> {
    check_name("role", &role.name)?;
    let rid = id_param(id).ok_or(StorageError::NotFound { what: "role" })?;
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT name FROM roles WHERE id = ").bind(rid);
    let current = sql
        .one_as::<NameRow, _>(&tx)
        .await?
        .ok_or(StorageError::NotFound { what: "role" })?
        .name;
    if current != role.name {
        refuse_unless_allowed(check_role_operation(&current, RoleOperation::Rename))?;
        let mut sql = Sql::new(backend);
        sql.push("UPDATE roles SET name = ")
            .bind(role.name.clone())
            .push(", is_system = ")
            .bind(SystemRole::from_name(&role.name).is_some())
            .push(" WHERE id = ")
            .bind(rid);
        match sql.execute(&tx).await {
            Ok(_) => {}
            Err(e) if e.is_unique_violation() => return Err(name_taken(&role.name)),
            Err(e) => return Err(e),
        }
    }
    write_grants_in_tx(&tx, rid, role).await?;
    if let Some(ids) = permission_ids {
        if !ids.is_empty() {
            refuse_unless_allowed(check_role_operation(
                &current,
                RoleOperation::EditPermissions,
            ))?;
        }
        crate::permissions::set_role_permissions_in_tx(&tx, rid, ids).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Copies role `source_id` into a new role `name`: both matrices and the admin permissions, not
/// its user or group memberships, nor its API keys. One transaction; returns the new id.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown source; [`StorageError::Conflict`] when the role
/// rules forbid duplicating it (`public`, `super-admin`) or on `name` (empty or taken); a
/// database error.
#[instrument(skip_all, err, fields(role_id = source_id, name))]
pub async fn duplicate_role<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    source_id: i64,
    name: &str,
) -> Result<i64, StorageError> {
    let src = id_param(source_id).ok_or(StorageError::NotFound { what: "role" })?;
    check_name("role", name)?;
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT name FROM roles WHERE id = ").bind(src);
    let source = sql
        .one_as::<NameRow, _>(&tx)
        .await?
        .ok_or(StorageError::NotFound { what: "role" })?
        .name;
    refuse_unless_allowed(check_role_operation(&source, RoleOperation::Duplicate))?;
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO roles (name, is_system, created_at) VALUES (")
        .bind(name)
        .push(", ")
        .bind(SystemRole::from_name(name).is_some())
        .push(", ")
        .bind(now())
        .push(")");
    let new_id = match sql.insert_returning_id(&tx).await {
        Ok(id) => id,
        Err(e) if e.is_unique_violation() => return Err(name_taken(name)),
        Err(e) => return Err(e),
    };
    let dst = id_param(new_id).ok_or_else(|| StorageError::corrupt("role id out of range"))?;
    for (table, columns) in [
        (
            "collection_grants",
            "collection_id, can_create, can_read, can_update, can_delete, rules",
        ),
        (
            "file_grants",
            "can_create, can_read, can_read_private, can_update, can_delete",
        ),
        ("role_permissions", "permission_id"),
    ] {
        // `table` and `columns` are the constants above, never input.
        let mut sql = Sql::new(backend);
        sql.push(&format!("INSERT INTO {table} (role_id, {columns}) SELECT "))
            .bind(dst)
            .push(&format!(", {columns} FROM {table} WHERE role_id = "))
            .bind(src);
        sql.execute(&tx).await?;
    }
    tx.commit().await?;
    Ok(new_id)
}

/// Deletes role `id` (with its grants, memberships and API keys, as [`delete_role`]); answers
/// its name.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; [`StorageError::Conflict`] when the role rules
/// forbid it (`super-admin`, `public`); a database error.
#[instrument(skip_all, err, fields(role_id = id))]
pub async fn delete_role_by_id<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<String, StorageError> {
    let rid = id_param(id).ok_or(StorageError::NotFound { what: "role" })?;
    let tx = begin_write(db).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("SELECT name FROM roles WHERE id = ").bind(rid);
    let name = sql
        .one_as::<NameRow, _>(&tx)
        .await?
        .ok_or(StorageError::NotFound { what: "role" })?
        .name;
    refuse_unless_allowed(check_role_operation(&name, RoleOperation::Delete))?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM roles WHERE id = ").bind(rid);
    sql.execute(&tx).await?;
    tx.commit().await?;
    Ok(name)
}

/// What [`delete_roles`] did: the roles deleted and those the role rules kept
/// ([`bulk_delete_plan`]: `super-admin`, `public`), each in id order. Ids of no role are in
/// neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkDelete {
    pub deleted: Vec<RoleSummary>,
    pub skipped: Vec<RoleSummary>,
}

/// Deletes the roles among `ids` that the role rules allow deleting, in one transaction.
///
/// # Errors
/// A database error; nothing is deleted.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn delete_roles<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<BulkDelete, StorageError> {
    let mut wanted: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut report = BulkDelete::default();
    if wanted.is_empty() {
        return Ok(report);
    }
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut found = Vec::new();
    for chunk in wanted.chunks(INSERT_CHUNK) {
        let mut sql = Sql::new(backend);
        sql.push("SELECT id, name, is_system FROM roles WHERE id IN ");
        sql.bind_list(chunk.iter().copied());
        found.extend(sql.all_as::<RoleSummaryRow, _>(&tx).await?);
    }
    found.sort_by_key(|row| row.id);
    let names: Vec<&str> = found.iter().map(|row| row.name.as_str()).collect();
    let (delete, _) = bulk_delete_plan(&names);
    let mut doomed: Vec<i32> = Vec::new();
    for row in &found {
        let summary = RoleSummary {
            id: i64::from(row.id),
            name: row.name.clone(),
            is_system: row.is_system,
        };
        if delete.contains(&row.name.as_str()) {
            doomed.push(row.id);
            report.deleted.push(summary);
        } else {
            report.skipped.push(summary);
        }
    }
    for chunk in doomed.chunks(INSERT_CHUNK) {
        let mut sql = Sql::new(backend);
        sql.push("DELETE FROM roles WHERE id IN ");
        sql.bind_list(chunk.iter().copied());
        sql.execute(&tx).await?;
    }
    tx.commit().await?;
    Ok(report)
}
