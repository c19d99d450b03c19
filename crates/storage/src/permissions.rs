//! The admin permission rows (`permissions`) and their assignment to roles (`role_permissions`).
//!
//! Only names of the policy crate's catalog ([`PERMISSIONS`]) may exist: every write here refuses
//! another name, and [`sync_permissions`] can prune rows that predate a catalog change. Which
//! permission a route needs, and what holding it means, is decided above this crate
//! ([`vellum_policy::AdminPermissions`]); this module only stores the assignment.

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use tracing::instrument;
use vellum_policy::{PERMISSIONS, is_permission};

use crate::StorageError;
use crate::sql::{IdRow, Sql, begin_write, id_param};

/// A permission row with the number of roles holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub id: i64,
    pub name: String,
    pub roles_count: u64,
}

#[derive(FromQueryResult)]
struct PermissionRow {
    id: i32,
    name: String,
    roles_count: i64,
}

impl From<PermissionRow> for Permission {
    fn from(row: PermissionRow) -> Self {
        Self {
            id: i64::from(row.id),
            name: row.name,
            roles_count: u64::try_from(row.roles_count).unwrap_or(0),
        }
    }
}

fn permission_select(sql: &mut Sql) {
    sql.push(
        "SELECT p.id, p.name, \
         (SELECT COUNT(*) FROM role_permissions rp WHERE rp.permission_id = p.id) AS roles_count \
         FROM permissions p",
    );
}

/// Every permission row, in id order (the seeded catalog order). Bounded: only catalog names
/// can be stored, so there are at most [`PERMISSIONS`]`.len()` rows (plus any that predate a
/// catalog change until [`sync_permissions`] prunes them).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn list_permissions<C: ConnectionTrait>(db: &C) -> Result<Vec<Permission>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    permission_select(&mut sql);
    sql.push(" ORDER BY p.id");
    Ok(sql
        .all_as::<PermissionRow, _>(db)
        .await?
        .into_iter()
        .map(Permission::from)
        .collect())
}

/// The permission with this id, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(permission_id = id))]
pub async fn permission_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<Permission>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    permission_select(&mut sql);
    sql.push(" WHERE p.id = ").bind(id);
    Ok(sql
        .one_as::<PermissionRow, _>(db)
        .await?
        .map(Permission::from))
}

/// Refuses a name outside the catalog, on the field `name`.
fn check_catalog(name: &str) -> Result<(), StorageError> {
    if is_permission(name) {
        Ok(())
    } else {
        Err(StorageError::conflict_on(
            "name",
            format!("\"{name}\" is not a permission of the catalog."),
        ))
    }
}

fn taken(name: &str) -> StorageError {
    StorageError::conflict_on("name", format!("The permission \"{name}\" already exists."))
}

/// Stores the catalog permission `name`.
///
/// # Errors
/// [`StorageError::Conflict`] on `name` when it is not a catalog name or is already stored; a
/// database error.
#[instrument(skip_all, err, fields(name))]
pub async fn create_permission<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<Permission, StorageError> {
    check_catalog(name)?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO permissions (name) VALUES (")
        .bind(name)
        .push(")");
    match sql.insert_returning_id(db).await {
        Ok(id) => Ok(Permission {
            id,
            name: name.to_owned(),
            roles_count: 0,
        }),
        Err(e) if e.is_unique_violation() => Err(taken(name)),
        Err(e) => Err(e),
    }
}

/// Renames permission `id` to another catalog name that no row uses. The roles holding it keep
/// holding it under the new name.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; [`StorageError::Conflict`] on `name` when the
/// name is not a catalog name or another row has it; a database error.
#[instrument(skip_all, err, fields(permission_id = id, name))]
pub async fn rename_permission<C: ConnectionTrait>(
    db: &C,
    id: i64,
    name: &str,
) -> Result<Permission, StorageError> {
    let pid = id_param(id).ok_or(StorageError::NotFound { what: "permission" })?;
    check_catalog(name)?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE permissions SET name = ")
        .bind(name)
        .push(" WHERE id = ")
        .bind(pid);
    match sql.execute(db).await {
        Ok(0) => return Err(StorageError::NotFound { what: "permission" }),
        Ok(_) => {}
        Err(e) if e.is_unique_violation() => return Err(taken(name)),
        Err(e) => return Err(e),
    }
    permission_by_id(db, id)
        .await?
        .ok_or(StorageError::NotFound { what: "permission" })
}

/// Deletes permission `id` and removes it from every role, in one transaction. Answers its name.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown id; a database error.
#[instrument(skip_all, err, fields(permission_id = id))]
pub async fn delete_permission<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    id: i64,
) -> Result<String, StorageError> {
    let pid = id_param(id).ok_or(StorageError::NotFound { what: "permission" })?;
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT name FROM permissions WHERE id = ")
        .bind(pid);
    let name = sql
        .one_as::<crate::roles::NameRow, _>(&tx)
        .await?
        .ok_or(StorageError::NotFound { what: "permission" })?
        .name;
    // Explicit rather than left to the foreign key's cascade, which SQLite applies only with
    // `foreign_keys` on.
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM role_permissions WHERE permission_id = ")
        .bind(pid);
    sql.execute(&tx).await?;
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM permissions WHERE id = ").bind(pid);
    sql.execute(&tx).await?;
    tx.commit().await?;
    Ok(name)
}

/// What [`sync_permissions`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncReport {
    /// Catalog names that had no row and got one.
    pub created: u64,
    /// Rows outside the catalog that were deleted (with `prune` only).
    pub pruned: u64,
}

/// Makes every catalog name exist (an upsert of the whole catalog); with `prune`, also deletes
/// the rows whose name is not in the catalog, and their assignments. One transaction.
///
/// # Errors
/// A database error; nothing changes.
#[instrument(skip_all, err, fields(prune))]
pub async fn sync_permissions<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    prune: bool,
) -> Result<SyncReport, StorageError> {
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO permissions (name) VALUES ");
    for (i, name) in PERMISSIONS.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(*name)
            .push(")");
    }
    // RETURNING after DO NOTHING yields only the rows inserted.
    sql.push(" ON CONFLICT (name) DO NOTHING RETURNING id");
    let created = sql.all_as::<IdRow, _>(&tx).await?.len();
    let mut pruned = 0;
    if prune {
        let mut sql = Sql::new(backend);
        sql.push(
            "DELETE FROM role_permissions WHERE permission_id IN \
             (SELECT id FROM permissions WHERE name NOT IN ",
        );
        sql.bind_list(PERMISSIONS);
        sql.push(")");
        sql.execute(&tx).await?;
        let mut sql = Sql::new(backend);
        sql.push("DELETE FROM permissions WHERE name NOT IN ");
        sql.bind_list(PERMISSIONS);
        pruned = sql.execute(&tx).await?;
    }
    tx.commit().await?;
    Ok(SyncReport {
        created: u64::try_from(created).unwrap_or(u64::MAX),
        pruned,
    })
}

/// The ids of the permissions role `role_id` holds, ascending.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(role_id))]
pub async fn role_permission_ids<C: ConnectionTrait>(
    db: &C,
    role_id: i64,
) -> Result<Vec<i64>, StorageError> {
    let Some(rid) = id_param(role_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT permission_id AS id FROM role_permissions WHERE role_id = ")
        .bind(rid)
        .push(" ORDER BY permission_id");
    Ok(sql
        .all_as::<IdRow, _>(db)
        .await?
        .into_iter()
        .map(|row| i64::from(row.id))
        .collect())
}

/// Makes role `rid` hold exactly the permissions `ids`, inside the caller's transaction `tx`.
///
/// # Errors
/// [`StorageError::Conflict`] on `permission_ids` naming every id that is not a permission row
/// (the caller's transaction must then be rolled back); a database error.
pub(crate) async fn set_role_permissions_in_tx<C: ConnectionTrait>(
    tx: &C,
    rid: i32,
    ids: &[i64],
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    let mut wanted: Vec<i64> = ids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let valid: Vec<i32> = wanted.iter().filter_map(|id| id_param(*id)).collect();
    let mut found: Vec<i64> = Vec::new();
    // Chunked so any number of ids stays far below SQLite's bound-parameter limit.
    for chunk in valid.chunks(500) {
        let mut sql = Sql::new(backend);
        sql.push("SELECT id FROM permissions WHERE id IN ");
        sql.bind_list(chunk.iter().copied());
        found.extend(
            sql.all_as::<IdRow, _>(tx)
                .await?
                .into_iter()
                .map(|row| i64::from(row.id)),
        );
    }
    let missing: Vec<String> = wanted
        .iter()
        .filter(|id| !found.contains(id))
        .map(ToString::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(StorageError::conflict_on(
            "permission_ids",
            format!("No permission has the id {}.", missing.join(", ")),
        ));
    }
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM role_permissions WHERE role_id = ")
        .bind(rid);
    sql.execute(tx).await?;
    // Every id is a permission row here, so there are no more of them than rows: one statement.
    if found.is_empty() {
        return Ok(());
    }
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO role_permissions (role_id, permission_id) VALUES ");
    for (i, pid) in found.iter().filter_map(|id| id_param(*id)).enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(rid)
            .push(", ")
            .bind(pid)
            .push(")");
    }
    sql.execute(tx).await?;
    Ok(())
}
