//! Roles with their grants, the permission catalog, API keys, and the minimal users and groups
//! the access model needs (users live here rather than in their own module because their only
//! job in Vellum's API is to hold roles and to appear as `MiniUser` in `include=users`).
//!
//! Roles are stored relationally (`roles`, `collection_grants`, `file_grants`) but handed out as
//! the policy crate's [`Role`], built through the manifest shape [`Role::from_json`] accepts: the
//! policy crate stays the one place that knows what a grant means, and a role read from the
//! database is checked by the same parser as one read from a manifest.
//!
//! Which operations a role allows (delete `super-admin`? assign `public` to a user?) is decided
//! by [`check_role_operation`]; this module only enforces its answer.

use std::collections::BTreeMap;

use sea_orm::{
    ConnectionTrait, DbBackend, QueryResult, SqlErr, TransactionSession, TransactionTrait,
};
use serde_json::{Map, Value as Json, json};
use time::OffsetDateTime;
use tracing::instrument;
use vellum_policy::{
    ApiKeySecret, CollectionGrant, Decision, IpAllowlist, KeyDigest, KeyId, KeyRecord, PERMISSIONS,
    Reason, Role, RoleOperation, SystemRole, check_role_operation,
};

use crate::StorageError;
use crate::sql::{Sql, begin_write, get_id, get_json, get_time, id_param, json_out, now};

/// Rows per multi-row `INSERT`: far below SQLite's bound-parameter limit (32766) at 7 values a
/// row, and large enough that a realistic role is one statement.
const INSERT_CHUNK: usize = 500;

/// A role as the role list shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleSummary {
    pub id: i64,
    pub name: String,
    /// One of the four roles Vellum seeds ([`SystemRole`]). `is_system` is true for all four, not
    /// only for `public` (the one the API document calls "the system role"): all four are
    /// guaranteed to exist and are recreated by [`seed_system`]. What each may undergo differs
    /// and is [`check_role_operation`]'s answer, not this flag's.
    pub is_system: bool,
}

fn is_unique_violation(err: &StorageError) -> bool {
    matches!(err, StorageError::Db(e)
        if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))))
}

/// A refusal of the role rules as a conflict whose message is the rule itself.
fn refuse_unless_allowed(decision: Decision) -> Result<(), StorageError> {
    if decision.allowed {
        return Ok(());
    }
    Err(StorageError::Conflict(match decision.reason {
        Reason::RoleRule { rule, .. } => rule.to_owned(),
        other => Decision {
            allowed: false,
            reason: other,
        }
        .to_string(),
    }))
}

fn check_name(what: &str, name: &str) -> Result<(), StorageError> {
    if name.trim().is_empty() || name.trim() != name {
        return Err(StorageError::Conflict(format!(
            "a {what} name must be non-empty without leading or trailing spaces"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Seeding

/// Makes the database hold what every Vellum project has: the whole permission catalog, the four
/// seeded roles and the fingerprint secret ([`crate::project::hash_key`]). Idempotent: a second
/// run changes nothing.
///
/// A seeded role receives its catalog permissions ([`SystemRole::permissions`]) when this call
/// creates it. Later runs leave role permissions alone, so an operator who trimmed `admin` does
/// not see the change silently undone by the next `apply`. Permission names outside the catalog
/// are removed: the contract says none may exist.
///
/// # Errors
/// A database error; the transaction is rolled back and nothing changes.
#[instrument(skip_all, err)]
pub async fn seed_system<C: ConnectionTrait + TransactionTrait>(
    db: &C,
) -> Result<(), StorageError> {
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();

    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM permissions WHERE name NOT IN ");
    sql.bind_list(PERMISSIONS);
    sql.execute(&tx).await?;

    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO permissions (name) VALUES ");
    for (i, name) in PERMISSIONS.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(*name)
            .push(")");
    }
    sql.push(" ON CONFLICT (name) DO NOTHING");
    sql.execute(&tx).await?;

    let at = now();
    let mut sql = Sql::new(backend);
    sql.push("INSERT INTO roles (name, is_system, created_at) VALUES ");
    for (i, role) in SystemRole::ALL.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .bind(role.name())
            .push(", ")
            .bind(true)
            .push(", ")
            .bind(at)
            .push(")");
    }
    // RETURNING after DO NOTHING yields only the rows inserted: the roles this call created.
    sql.push(" ON CONFLICT (name) DO NOTHING RETURNING name");
    let created: Vec<String> = sql
        .all(&tx)
        .await?
        .iter()
        .map(|row| row.try_get::<String>("", "name"))
        .collect::<Result<_, _>>()?;

    // A custom role created under a seeded name before the first seed becomes the seeded role.
    let mut sql = Sql::new(backend);
    sql.push("UPDATE roles SET is_system = ")
        .bind(true)
        .push(" WHERE is_system = ")
        .bind(false)
        .push(" AND name IN ");
    sql.bind_list(SystemRole::ALL.map(SystemRole::name));
    sql.execute(&tx).await?;

    for role in SystemRole::ALL {
        let permissions = role.permissions();
        if permissions.is_empty() || !created.iter().any(|c| c == role.name()) {
            continue;
        }
        let mut sql = Sql::new(backend);
        // The WHERE clause also keeps SQLite's parser from reading `ON CONFLICT` as a join.
        sql.push(
            "INSERT INTO role_permissions (role_id, permission_id) \
             SELECT r.id, p.id FROM roles r, permissions p WHERE r.name = ",
        )
        .bind(role.name())
        .push(" AND p.name IN ");
        sql.bind_list(permissions.iter().copied());
        sql.push(" ON CONFLICT (role_id, permission_id) DO NOTHING");
        sql.execute(&tx).await?;
    }

    crate::project::hash_key(&tx).await?;
    tx.commit().await?;
    Ok(())
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
    sql.all(db)
        .await?
        .iter()
        .map(|row| Ok(row.try_get::<String>("", "name")?))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Roles

enum RoleKey<'a> {
    Name(&'a str),
    Id(i32),
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
    load_role_where(db, RoleKey::Name(name)).await
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
        Some(id) => load_role_where(db, RoleKey::Id(id)).await,
        None => Ok(None),
    }
}

async fn load_role_where<C: ConnectionTrait>(
    db: &C,
    key: RoleKey<'_>,
) -> Result<Option<Role>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT r.id, r.name, f.can_create AS f_create, f.can_read AS f_read, \
         f.can_read_private AS f_read_private, f.can_update AS f_update, \
         f.can_delete AS f_delete \
         FROM roles r LEFT JOIN file_grants f ON f.role_id = r.id WHERE ",
    );
    match key {
        RoleKey::Name(name) => sql.push("r.name = ").bind(name),
        RoleKey::Id(id) => sql.push("r.id = ").bind(id),
    };
    let Some(row) = sql.one(db).await? else {
        return Ok(None);
    };
    let role_id = get_id(&row, "id")?;
    let name: String = row.try_get("", "name")?;
    let mut files = Map::new();
    for (flag, col) in [
        ("create", "f_create"),
        ("read", "f_read"),
        ("read_private", "f_read_private"),
        ("update", "f_update"),
        ("delete", "f_delete"),
    ] {
        if row.try_get::<Option<bool>>("", col)?.unwrap_or(false) {
            files.insert(flag.into(), Json::Bool(true));
        }
    }

    let mut sql = Sql::new(backend);
    sql.push("SELECT c.slug, g.can_create, g.can_read, g.can_update, g.can_delete, ")
        .push(&json_out(backend, "g.rules"))
        .push(
            " AS rules FROM collection_grants g JOIN collections c ON c.id = g.collection_id \
         WHERE g.role_id = ",
        )
        .bind(id_param(role_id).unwrap_or(0));
    let mut collections = Map::new();
    for row in sql.all(db).await? {
        let slug: String = row.try_get("", "slug")?;
        let mut grant = Map::new();
        for (flag, col) in [
            ("create", "can_create"),
            ("read", "can_read"),
            ("update", "can_update"),
            ("delete", "can_delete"),
        ] {
            if row.try_get::<bool>("", col)? {
                grant.insert(flag.into(), Json::Bool(true));
            }
        }
        let rules = get_json(&row, "rules")?;
        if !rules.is_null() {
            grant.insert("rules".into(), rules);
        }
        collections.insert(slug, Json::Object(grant));
    }
    let raw = json!({"collection_permissions": collections, "file_permissions": files});
    Role::from_json(&name, &raw)
        .map(Some)
        .map_err(|e| StorageError::corrupt(format!("role {name}: {e}")))
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
    let backend = tx.get_database_backend();

    let mut collection_ids: BTreeMap<String, i32> = BTreeMap::new();
    if !role.collections.is_empty() {
        let mut sql = Sql::new(backend);
        sql.push("SELECT id, slug FROM collections WHERE slug IN ");
        sql.bind_list(role.collections.keys().map(|s| s.as_str().to_owned()));
        for row in sql.all(&tx).await? {
            collection_ids.insert(row.try_get("", "slug")?, row.try_get("", "id")?);
        }
        let missing: Vec<String> = role
            .collections
            .keys()
            .filter(|s| !collection_ids.contains_key(s.as_str()))
            .map(|s| format!("\"{s}\""))
            .collect();
        if !missing.is_empty() {
            return Err(StorageError::Conflict(format!(
                "role {}: no collection {}",
                role.name,
                missing.join(", ")
            )));
        }
    }

    let mut sql = Sql::new(backend);
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

    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM collection_grants WHERE role_id = ")
        .bind(rid);
    sql.execute(&tx).await?;

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
        sql.execute(&tx).await?;
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
    sql.execute(&tx).await?;
    tx.commit().await?;
    Ok(role_id)
}

/// Every role, in creation order.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn list_roles<C: ConnectionTrait>(db: &C) -> Result<Vec<RoleSummary>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, name, is_system FROM roles ORDER BY id");
    sql.all(db)
        .await?
        .iter()
        .map(|row| {
            Ok(RoleSummary {
                id: get_id(row, "id")?,
                name: row.try_get("", "name")?,
                is_system: row.try_get("", "is_system")?,
            })
        })
        .collect()
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

// ---------------------------------------------------------------------------------------------
// API keys

/// What creating a key needs. The secret is borrowed only to derive what is stored: its key id
/// and SHA-256 digest.
#[derive(Debug, Clone, Copy)]
pub struct NewApiKey<'a> {
    pub name: &'a str,
    pub role: &'a str,
    pub secret: &'a ApiKeySecret,
    pub ip_allowlist: &'a IpAllowlist,
    /// May lie in the past (the contract accepts it; the key then never authenticates).
    pub expires_at: Option<OffsetDateTime>,
}

/// A key as the admin surfaces show it. Holds neither the secret nor its digest.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKeySummary {
    pub id: i64,
    pub name: String,
    pub key_id: KeyId,
    pub role: String,
    pub ip_allowlist: IpAllowlist,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    pub last_used_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
}

/// A key found by its key id: what [`KeyRecord::check`] needs, and the row id for
/// [`touch_api_key`].
#[derive(Debug, Clone, PartialEq)]
pub struct FoundKey {
    pub id: i64,
    pub record: KeyRecord,
}

/// Both backends store microseconds; truncating here makes the value returned on create equal
/// the one read back.
fn to_micros(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000)
        .unwrap_or(t)
}

/// An expiry as stored: in UTC, to the microsecond. The PostgreSQL driver converts to UTC itself
/// and panics when an offset pushes the instant past year 9999, so that case is refused here.
fn expiry(t: Option<OffsetDateTime>) -> Result<Option<OffsetDateTime>, StorageError> {
    t.map(|t| {
        t.checked_to_offset(time::UtcOffset::UTC)
            .map(to_micros)
            .ok_or_else(|| {
                StorageError::Conflict("an expiry must fall within years 0 to 9999 in UTC".into())
            })
    })
    .transpose()
}

fn read_allowlist(row: &QueryResult) -> Result<IpAllowlist, StorageError> {
    let raw = get_json(row, "ip_allowlist")?;
    let entries: Vec<&str> = match &raw {
        Json::Null => Vec::new(),
        Json::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| StorageError::corrupt("ip_allowlist entry is not a string"))
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(StorageError::corrupt(format!(
                "ip_allowlist is not an array: {other}"
            )));
        }
    };
    IpAllowlist::parse(entries).map_err(StorageError::corrupt)
}

fn key_select(backend: DbBackend) -> Sql {
    let mut sql = Sql::new(backend);
    sql.push(
        "SELECT k.id, k.name, k.key_id, k.digest, r.name AS role, k.expires_at, k.revoked_at, \
         k.last_used_at, k.created_at, ",
    )
    .push(&json_out(backend, "k.ip_allowlist"))
    .push(" AS ip_allowlist FROM api_keys k JOIN roles r ON r.id = k.role_id");
    sql
}

fn summary_from_row(row: &QueryResult) -> Result<ApiKeySummary, StorageError> {
    Ok(ApiKeySummary {
        id: get_id(row, "id")?,
        name: row.try_get("", "name")?,
        key_id: KeyId::from_stored(&row.try_get::<String>("", "key_id")?),
        role: row.try_get("", "role")?,
        ip_allowlist: read_allowlist(row)?,
        expires_at: get_time(row, "expires_at")?,
        revoked_at: get_time(row, "revoked_at")?,
        last_used_at: get_time(row, "last_used_at")?,
        created_at: get_time(row, "created_at")?
            .ok_or_else(|| StorageError::corrupt("api key without created_at"))?,
    })
}

/// Stores a new key under `role`: its key id, the SHA-256 digest of the secret (hex) and its
/// limits. The secret itself is never stored; the caller shows it once.
///
/// # Errors
/// [`StorageError::NotFound`] when the role does not exist; [`StorageError::Conflict`] when the
/// name is empty or taken, or another key has the same key id (the first 12 characters after
/// `ek_`, which only a chosen secret can repeat); a database error.
#[instrument(skip_all, err, fields(name = new.name, role = new.role))]
pub async fn create_api_key<C: ConnectionTrait>(
    db: &C,
    new: NewApiKey<'_>,
) -> Result<ApiKeySummary, StorageError> {
    check_name("key", new.name)?;
    let backend = db.get_database_backend();
    let key_id = new.secret.key_id();
    let created_at = now();
    let expires_at = expiry(new.expires_at)?;
    let mut sql = Sql::new(backend);
    sql.push(
        "INSERT INTO api_keys \
         (name, key_id, digest, role_id, ip_allowlist, expires_at, created_at) SELECT ",
    )
    .bind(new.name)
    .push(", ")
    .bind(key_id.as_str())
    .push(", ")
    .bind(new.secret.digest().to_hex())
    .push(", r.id, ")
    .bind_json(&Json::from(new.ip_allowlist.entries()))
    .push(", ")
    .bind(expires_at)
    .push(", ")
    .bind(created_at)
    .push(" FROM roles r WHERE r.name = ")
    .bind(new.role)
    .push(" RETURNING id");
    let row = match sql.one(db).await {
        Ok(row) => row,
        Err(e) if is_unique_violation(&e) => {
            let taken = api_key_by_name(db, new.name).await?.is_some();
            return Err(StorageError::Conflict(if taken {
                format!("an API key named \"{}\" already exists", new.name)
            } else {
                "another API key has the same key id (the first 12 characters after ek_); \
                 use a different secret"
                    .to_owned()
            }));
        }
        Err(e) => return Err(e),
    };
    let row = row.ok_or(StorageError::NotFound { what: "role" })?;
    Ok(ApiKeySummary {
        id: get_id(&row, "id")?,
        name: new.name.to_owned(),
        key_id,
        role: new.role.to_owned(),
        ip_allowlist: new.ip_allowlist.clone(),
        expires_at,
        revoked_at: None,
        last_used_at: None,
        created_at,
    })
}

/// Sets what a key may do (role, IP allowlist, expiry) without touching its secret, for a
/// manifest that changed them. Returns whether anything changed.
///
/// # Errors
/// [`StorageError::NotFound`] when no key has that name or the role does not exist; a database
/// error.
#[instrument(skip_all, err, fields(name, role))]
pub async fn update_api_key<C: ConnectionTrait>(
    db: &C,
    name: &str,
    role: &str,
    ip_allowlist: &IpAllowlist,
    expires_at: Option<OffsetDateTime>,
) -> Result<bool, StorageError> {
    let current = api_key_by_name(db, name)
        .await?
        .ok_or(StorageError::NotFound { what: "API key" })?;
    let expires_at = expiry(expires_at)?;
    if current.role == role
        && current.ip_allowlist.entries() == ip_allowlist.entries()
        && current.expires_at == expires_at
    {
        return Ok(false);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE api_keys SET role_id = (SELECT r.id FROM roles r WHERE r.name = ")
        .bind(role)
        .push("), ip_allowlist = ")
        .bind_json(&Json::from(ip_allowlist.entries()))
        .push(", expires_at = ")
        .bind(expires_at)
        .push(" WHERE id = ")
        .bind(id_param(current.id).unwrap_or(0))
        .push(" AND EXISTS (SELECT 1 FROM roles r WHERE r.name = ")
        .bind(role)
        .push(")");
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "role" });
    }
    Ok(true)
}

/// Replaces the secret of key `id` by the one whose key id and digest are given, for a manifest
/// that names another secret for an existing key: afterwards the previous secret no longer finds
/// the key (its key id is gone from the index) nor matches its digest. Revocation, role, limits
/// and usage are left as they are. Returns whether anything changed (false when the key already
/// has this digest), so applying the same manifest twice rotates once.
///
/// Takes what is stored, never the secret itself. Run it inside the caller's transaction when
/// other changes to the key must land together with it.
///
/// # Errors
/// [`StorageError::NotFound`] when no key has that id; [`StorageError::Conflict`] when another
/// key already has this key id (the first 12 characters after `ek_`, which only a chosen secret
/// can repeat); a database error.
#[instrument(skip_all, err, fields(key = id))]
pub async fn rotate_api_key_secret<C: ConnectionTrait>(
    db: &C,
    id: i64,
    key_id: &KeyId,
    digest: &KeyDigest,
) -> Result<bool, StorageError> {
    let Some(id) = id_param(id) else {
        return Err(StorageError::NotFound { what: "API key" });
    };
    let digest = digest.to_hex();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE api_keys SET key_id = ")
        .bind(key_id.as_str())
        .push(", digest = ")
        .bind(digest.as_str())
        .push(" WHERE id = ")
        .bind(id)
        .push(" AND digest <> ")
        .bind(digest.as_str());
    match sql.execute(db).await {
        Ok(0) => {}
        Ok(_) => return Ok(true),
        // Nothing is queried after a unique violation: on PostgreSQL it has aborted the caller's
        // transaction.
        Err(e) if is_unique_violation(&e) => {
            return Err(StorageError::Conflict(
                "another API key has the same key id (the first 12 characters after ek_); \
                 use a different secret"
                    .to_owned(),
            ));
        }
        Err(e) => return Err(e),
    }
    let mut exists = Sql::new(db.get_database_backend());
    exists
        .push("SELECT 1 AS one FROM api_keys WHERE id = ")
        .bind(id);
    match exists.one(db).await? {
        Some(_) => Ok(false),
        None => Err(StorageError::NotFound { what: "API key" }),
    }
}

/// The key with this key id, for authentication: one lookup on the unique `key_id` index, never
/// a scan. Revoked and expired keys are returned too, so [`KeyRecord::check`] can tell why a key
/// fails; the caller compares the digest (in constant time) through that check.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when the stored digest or allowlist is broken.
#[instrument(skip_all, err, fields(key_id = key_id.as_str()))]
pub async fn find_api_key<C: ConnectionTrait>(
    db: &C,
    key_id: &KeyId,
) -> Result<Option<FoundKey>, StorageError> {
    let mut sql = key_select(db.get_database_backend());
    sql.push(" WHERE k.key_id = ").bind(key_id.as_str());
    let Some(row) = sql.one(db).await? else {
        return Ok(None);
    };
    let digest: String = row.try_get("", "digest")?;
    Ok(Some(FoundKey {
        id: get_id(&row, "id")?,
        record: KeyRecord {
            key_id: KeyId::from_stored(&row.try_get::<String>("", "key_id")?),
            digest: KeyDigest::from_hex(&digest).map_err(StorageError::corrupt)?,
            role: row.try_get("", "role")?,
            ip_allowlist: read_allowlist(&row)?,
            expires_at: get_time(&row, "expires_at")?,
            revoked: get_time(&row, "revoked_at")?.is_some(),
        },
    }))
}

/// The key named `name`, or `None` (so `apply` can skip keys that already exist).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(name))]
pub async fn api_key_by_name<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<Option<ApiKeySummary>, StorageError> {
    let mut sql = key_select(db.get_database_backend());
    sql.push(" WHERE k.name = ").bind(name);
    sql.one(db)
        .await?
        .as_ref()
        .map(summary_from_row)
        .transpose()
}

/// Every key, revoked ones included, in creation order.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn list_api_keys<C: ConnectionTrait>(db: &C) -> Result<Vec<ApiKeySummary>, StorageError> {
    let mut sql = key_select(db.get_database_backend());
    sql.push(" ORDER BY k.id");
    sql.all(db).await?.iter().map(summary_from_row).collect()
}

/// Revokes the key named `name`. Revoking again keeps the first revocation time, so the audit
/// trail says when the key actually stopped working.
///
/// # Errors
/// [`StorageError::NotFound`] when no key has that name; a database error.
#[instrument(skip_all, err, fields(name))]
pub async fn revoke_api_key<C: ConnectionTrait>(db: &C, name: &str) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ")
        .bind(now())
        .push(") WHERE name = ")
        .bind(name);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "API key" });
    }
    Ok(())
}

/// Records that key `id` authenticated at `at`: one UPDATE by primary key. A key deleted in the
/// meantime is not an error; the request it authenticated has already been served.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(key = id))]
pub async fn touch_api_key<C: ConnectionTrait>(
    db: &C,
    id: i64,
    at: OffsetDateTime,
) -> Result<(), StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE api_keys SET last_used_at = ")
        .bind(to_micros(at))
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(db).await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Users and groups

/// A user as the API shows it (`include=users`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiniUser {
    pub id: i64,
    pub name: String,
    pub email: Option<String>,
}

/// A group of users that roles can be attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: i64,
    pub name: String,
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
        Err(e) if is_unique_violation(&e) => {
            return Err(StorageError::Conflict(
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
    sql.all(db)
        .await?
        .iter()
        .map(|row| {
            Ok(MiniUser {
                id: get_id(row, "id")?,
                name: row.try_get("", "name")?,
                email: row.try_get("", "email")?,
            })
        })
        .collect()
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
        Err(e) if is_unique_violation(&e) => Err(StorageError::Conflict(format!(
            "a group named \"{name}\" already exists"
        ))),
        Err(e) => Err(e),
    }
}

/// Whether a row with this id exists in `table` (a constant of this module, never input).
async fn exists<C: ConnectionTrait>(db: &C, table: &str, id: i32) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM ")
        .push(table)
        .push(" WHERE id = ")
        .bind(id);
    Ok(sql.one(db).await?.is_some())
}

async fn role_exists<C: ConnectionTrait>(db: &C, name: &str) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM roles WHERE name = ").bind(name);
    Ok(sql.one(db).await?.is_some())
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
        if !exists(db, "users", uid).await? {
            return Err(StorageError::NotFound { what: "user" });
        }
        if !role_exists(db, role).await? {
            return Err(StorageError::NotFound { what: "role" });
        }
    }
    Ok(())
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
        if !exists(db, "\"groups\"", gid).await? {
            return Err(StorageError::NotFound { what: "group" });
        }
        if !exists(db, "users", uid).await? {
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
        if !exists(db, "\"groups\"", gid).await? {
            return Err(StorageError::NotFound { what: "group" });
        }
        if !role_exists(db, role).await? {
            return Err(StorageError::NotFound { what: "role" });
        }
    }
    Ok(())
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
    sql.all(db)
        .await?
        .iter()
        .map(|row| Ok(row.try_get::<String>("", "name")?))
        .collect()
}
