//! Roles with their grants and the permission catalog's assignment to them.
//!
//! Roles are stored relationally (`roles`, `collection_grants`, `file_grants`) but handed out as
//! the policy crate's [`Role`], built through the manifest shape [`Role::from_json`] accepts: the
//! policy crate stays the one place that knows what a grant means, and a role read from the
//! database is checked by the same parser as one read from a manifest.
//!
//! Which operations a role allows (delete `super-admin`? assign `public` to a user?) is decided
//! by [`check_role_operation`]; this module (and [`crate::users`], [`crate::groups`]) only
//! enforces its answer.

use std::collections::{BTreeMap, HashMap};

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::{Map, Value as Json, json};
use tracing::instrument;
use vellum_policy::{
    CollectionGrant, Decision, Reason, Role, RoleOperation, SystemRole, check_role_operation,
};

use crate::StorageError;
use crate::error::check_name;
use crate::sql::{Sql, begin_write, id_param, json_out, now, parse_json};

/// Rows per multi-row `INSERT`: far below SQLite's bound-parameter limit (32766) at 7 values a
/// row, and large enough that a realistic role is one statement.
pub(crate) const INSERT_CHUNK: usize = 500;

/// A role as the role list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSummary {
    pub id: i64,
    pub name: String,
    /// One of the four roles Vellum seeds ([`SystemRole`]). `is_system` is true for all four, not
    /// only for `public` (the one the API document calls "the system role"): all four are
    /// guaranteed to exist and are recreated by [`crate::seed::seed_system`]. What each may undergo differs
    /// and is [`check_role_operation`]'s answer, not this flag's.
    pub is_system: bool,
}

/// A refusal of the role rules as a conflict whose message is the rule itself.
pub(crate) fn refuse_unless_allowed(decision: Decision) -> Result<(), StorageError> {
    if decision.allowed {
        return Ok(());
    }
    Err(StorageError::conflict(match decision.reason {
        Reason::RoleRule { rule, .. } => rule.to_owned(),
        other => Decision {
            allowed: false,
            reason: other,
        }
        .to_string(),
    }))
}

/// Whether a role named `name` exists.
pub(crate) async fn role_exists<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM roles WHERE name = ").bind(name);
    Ok(sql.one(db).await?.is_some())
}

/// The admin permissions a role holds, sorted (for the admin surfaces and `vellum-admin`).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(role))]
pub async fn role_permissions<C: ConnectionTrait>(
    db: &C,
    role: &str,
) -> Result<Vec<String>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT p.name FROM permissions p \
         JOIN role_permissions rp ON rp.permission_id = p.id \
         JOIN roles r ON r.id = rp.role_id WHERE r.name = ",
    )
    .bind(role)
    .push(" ORDER BY p.name");
    Ok(sql
        .all_as::<NameRow, _>(db)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect())
}

/// A row that is only a name.
#[derive(FromQueryResult)]
pub(crate) struct NameRow {
    pub(crate) name: String,
}

/// Which roles a load reads.
enum RoleKey<'a> {
    Name(&'a str),
    Id(i32),
    All,
}

/// A role with its files row (absent when the role never got one).
#[derive(FromQueryResult)]
struct RoleRow {
    id: i32,
    name: String,
    f_create: Option<bool>,
    f_read: Option<bool>,
    f_read_private: Option<bool>,
    f_update: Option<bool>,
    f_delete: Option<bool>,
}

/// One collection grant of a role, with the collection's slug and the rules as JSON text.
#[derive(FromQueryResult)]
struct GrantRow {
    role_id: i32,
    slug: String,
    can_create: bool,
    can_read: bool,
    can_update: bool,
    can_delete: bool,
    rules: Option<String>,
}

/// The role named `name` with both matrices, or `None`. Two queries whatever the number of
/// grants: the role with its files row, then all its collection grants.
///
/// PostgreSQL's JSONB does not keep object key order, so there an item filter written
/// `{"status": …, "views": …}` loads with its (AND-ed) conditions in another order: the same
/// filter, but not `==` to the role as saved. Compare roles with `to_json()`, whose objects
/// compare regardless of key order.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when stored grants no longer parse.
#[instrument(skip_all, err, fields(role = name))]
pub async fn load_role<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<Option<Role>, StorageError> {
    Ok(load_roles_where(db, RoleKey::Name(name)).await?.pop())
}

/// As [`load_role`], by id.
///
/// # Errors
/// As [`load_role`].
#[instrument(skip_all, err, fields(role_id = id))]
pub async fn load_role_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<Role>, StorageError> {
    match id_param(id) {
        Some(id) => Ok(load_roles_where(db, RoleKey::Id(id)).await?.pop()),
        None => Ok(None),
    }
}

/// Every role with both matrices, in creation order (as [`list_roles`]): two queries whatever
/// the number of roles and grants (every role with its files row, then every collection grant,
/// grouped by role in memory), so the project snapshot does not cost one query per role.
///
/// # Errors
/// As [`load_role`].
#[instrument(skip_all, err)]
pub async fn load_roles<C: ConnectionTrait>(db: &C) -> Result<Vec<Role>, StorageError> {
    load_roles_where(db, RoleKey::All).await
}

async fn load_roles_where<C: ConnectionTrait>(
    db: &C,
    key: RoleKey<'_>,
) -> Result<Vec<Role>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT r.id, r.name, f.can_create AS f_create, f.can_read AS f_read, \
         f.can_read_private AS f_read_private, f.can_update AS f_update, \
         f.can_delete AS f_delete \
         FROM roles r LEFT JOIN file_grants f ON f.role_id = r.id",
    );
    match key {
        RoleKey::Name(name) => sql.push(" WHERE r.name = ").bind(name),
        RoleKey::Id(id) => sql.push(" WHERE r.id = ").bind(id),
        RoleKey::All => sql.push(" ORDER BY r.id"),
    };
    let roles: Vec<RoleRow> = sql.all_as(db).await?;
    let Some(first) = roles.first() else {
        return Ok(Vec::new());
    };

    let mut sql = Sql::new(backend);
    sql.push("SELECT g.role_id, c.slug, g.can_create, g.can_read, g.can_update, g.can_delete, ")
        .push(&json_out(backend, "g.rules"))
        .push(" AS rules FROM collection_grants g JOIN collections c ON c.id = g.collection_id");
    if !matches!(key, RoleKey::All) {
        sql.push(" WHERE g.role_id = ").bind(first.id);
    }
    let mut grants: HashMap<i32, Map<String, Json>> = HashMap::new();
    for row in sql.all_as::<GrantRow, _>(db).await? {
        let mut grant = Map::new();
        for (flag, on) in [
            ("create", row.can_create),
            ("read", row.can_read),
            ("update", row.can_update),
            ("delete", row.can_delete),
        ] {
            if on {
                grant.insert(flag.into(), Json::Bool(true));
            }
        }
        let rules = parse_json(row.rules.as_deref())?;
        if !rules.is_null() {
            grant.insert("rules".into(), rules);
        }
        grants
            .entry(row.role_id)
            .or_default()
            .insert(row.slug, Json::Object(grant));
    }

    roles
        .into_iter()
        .map(|row| {
            let mut files = Map::new();
            for (flag, on) in [
                ("create", row.f_create),
                ("read", row.f_read),
                ("read_private", row.f_read_private),
                ("update", row.f_update),
                ("delete", row.f_delete),
            ] {
                if on.unwrap_or(false) {
                    files.insert(flag.into(), Json::Bool(true));
                }
            }
            let collections = grants.remove(&row.id).unwrap_or_default();
            let raw = json!({"collection_permissions": collections, "file_permissions": files});
            Role::from_json(&row.name, &raw)
                .map_err(|e| StorageError::corrupt(format!("role {}: {e}", row.name)))
        })
        .collect()
}

/// Creates or updates the role named `role.name` so its matrices are exactly `role`'s: grants on
/// collections no longer listed are removed. One transaction; returns the role's id.
///
/// The role's admin permissions are not touched: they are a separate concern of the admin app.
///
/// # Errors
/// [`StorageError::Conflict`] for an empty name or a grant on a collection that does not exist
/// (naming every such slug); nothing is written. A database error.
#[instrument(skip_all, err, fields(role = %role.name))]
pub async fn save_role<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    role: &Role,
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
        // A no-op update so RETURNING gives the id of an existing role too.
        .push(") ON CONFLICT (name) DO UPDATE SET name = excluded.name");
    let role_id = sql.insert_returning_id(&tx).await?;
    let rid = id_param(role_id).ok_or_else(|| StorageError::corrupt("role id out of range"))?;
    write_grants_in_tx(&tx, rid, role).await?;
    tx.commit().await?;
    Ok(role_id)
}

/// Makes role `rid`'s two matrices exactly `role`'s, inside the caller's transaction `tx`:
/// grants on collections no longer listed are removed.
///
/// # Errors
/// [`StorageError::Conflict`] on `collection_permissions` naming every slug that is not a
/// collection (the caller's transaction must then be rolled back); a database error.
pub(crate) async fn write_grants_in_tx<C: ConnectionTrait>(
    tx: &C,
    rid: i32,
    role: &Role,
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    let mut collection_ids: BTreeMap<String, i32> = BTreeMap::new();
    if !role.collections.is_empty() {
        let mut sql = Sql::new(backend);
        sql.push("SELECT id, slug FROM collections WHERE slug IN ");
        sql.bind_list(role.collections.keys().map(|s| s.as_str().to_owned()));
        for row in sql.all_as::<CollectionIdRow, _>(tx).await? {
            collection_ids.insert(row.slug, row.id);
        }
        let missing: Vec<String> = role
            .collections
            .keys()
            .filter(|s| !collection_ids.contains_key(s.as_str()))
            .map(|s| format!("\"{s}\""))
            .collect();
        if !missing.is_empty() {
            return Err(StorageError::conflict_on(
                "collection_permissions",
                format!("role {}: no collection {}", role.name, missing.join(", ")),
            ));
        }
    }

    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM collection_grants WHERE role_id = ")
        .bind(rid);
    sql.execute(tx).await?;

    let grants: Vec<(i32, &CollectionGrant)> = role
        .collections
        .iter()
        .filter_map(|(slug, g)| collection_ids.get(slug.as_str()).map(|id| (*id, g)))
        .collect();
    for chunk in grants.chunks(INSERT_CHUNK) {
        let mut sql = Sql::new(backend);
        sql.push(
            "INSERT INTO collection_grants \
             (role_id, collection_id, can_create, can_read, can_update, can_delete, rules) VALUES ",
        );
        for (i, (collection_id, grant)) in chunk.iter().enumerate() {
            sql.push(if i == 0 { "(" } else { ", (" })
                .bind(rid)
                .push(", ")
                .bind(*collection_id)
                .push(", ")
                .bind(grant.create)
                .push(", ")
                .bind(grant.read)
                .push(", ")
                .bind(grant.update)
                .push(", ")
                .bind(grant.delete)
                .push(", ");
            // The rules exactly as the policy crate exports them, so loading parses them back.
            match grant.to_json().get("rules") {
                Some(rules) => sql.bind_json(rules),
                None => sql.push("NULL"),
            };
            sql.push(")");
        }
        sql.execute(tx).await?;
    }

    let f = role.files;
    let mut sql = Sql::new(backend);
    sql.push(
        "INSERT INTO file_grants \
         (role_id, can_create, can_read, can_read_private, can_update, can_delete) VALUES (",
    )
    .bind(rid)
    .push(", ")
    .bind(f.create)
    .push(", ")
    .bind(f.read)
    .push(", ")
    .bind(f.read_private)
    .push(", ")
    .bind(f.update)
    .push(", ")
    .bind(f.delete)
    .push(
        ") ON CONFLICT (role_id) DO UPDATE SET can_create = excluded.can_create, \
         can_read = excluded.can_read, can_read_private = excluded.can_read_private, \
         can_update = excluded.can_update, can_delete = excluded.can_delete",
    );
    sql.execute(tx).await?;
    Ok(())
}

/// Every role, in creation order.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn list_roles<C: ConnectionTrait>(db: &C) -> Result<Vec<RoleSummary>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, is_system FROM roles ORDER BY id");
    Ok(sql
        .all_as::<RoleSummaryRow, _>(db)
        .await?
        .into_iter()
        .map(|row| RoleSummary {
            id: i64::from(row.id),
            name: row.name,
            is_system: row.is_system,
        })
        .collect())
}

/// The role with this id, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(role_id = id))]
pub async fn role_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<RoleSummary>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, is_system FROM roles WHERE id = ")
        .bind(id);
    Ok(sql
        .one_as::<RoleSummaryRow, _>(db)
        .await?
        .map(|row| RoleSummary {
            id: i64::from(row.id),
            name: row.name,
            is_system: row.is_system,
        }))
}

#[derive(FromQueryResult)]
pub(crate) struct RoleSummaryRow {
    pub(crate) id: i32,
    pub(crate) name: String,
    pub(crate) is_system: bool,
}

#[derive(FromQueryResult)]
struct CollectionIdRow {
    id: i32,
    slug: String,
}

/// Deletes a role with its grants and memberships. Its API keys are deleted with it (the schema
/// cascades): a key acts under exactly one role and must never fall back to another.
///
/// # Errors
/// [`StorageError::Conflict`] when the role rules forbid it (`super-admin`, `public`);
/// [`StorageError::NotFound`] when no role has that name; a database error.
#[instrument(skip_all, err, fields(role = name))]
pub async fn delete_role<C: ConnectionTrait>(db: &C, name: &str) -> Result<(), StorageError> {
    refuse_unless_allowed(check_role_operation(name, RoleOperation::Delete))?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM roles WHERE name = ").bind(name);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "role" });
    }
    Ok(())
}
