//! API keys: what is stored of them (key id, SHA-256 digest, role, limits), never the secret,
//! and the lookups authentication and the admin surfaces need.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult};
use serde_json::Value as Json;
use time::OffsetDateTime;
use tracing::instrument;
use vellum_policy::{ApiKeySecret, IpAllowlist, KeyDigest, KeyId, KeyRecord};

use crate::StorageError;
use crate::error::check_name;
use crate::sql::{IdRow, Sql, id_param, json_out, now, parse_json};

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
                StorageError::conflict("an expiry must fall within years 0 to 9999 in UTC")
            })
    })
    .transpose()
}

fn read_allowlist(text: Option<&str>) -> Result<IpAllowlist, StorageError> {
    let raw = parse_json(text)?;
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

/// A key as [`key_select`] reads it.
#[derive(FromQueryResult)]
struct KeyRow {
    id: i32,
    name: String,
    key_id: String,
    digest: String,
    role: String,
    expires_at: Option<OffsetDateTime>,
    revoked_at: Option<OffsetDateTime>,
    last_used_at: Option<OffsetDateTime>,
    created_at: Option<OffsetDateTime>,
    /// JSON text ([`json_out`]).
    ip_allowlist: Option<String>,
}

impl TryFrom<KeyRow> for ApiKeySummary {
    type Error = StorageError;

    fn try_from(row: KeyRow) -> Result<Self, StorageError> {
        Ok(ApiKeySummary {
            id: i64::from(row.id),
            name: row.name,
            key_id: KeyId::from_stored(&row.key_id),
            role: row.role,
            ip_allowlist: read_allowlist(row.ip_allowlist.as_deref())?,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
            created_at: row
                .created_at
                .ok_or_else(|| StorageError::corrupt("api key without created_at"))?,
        })
    }
}

impl TryFrom<KeyRow> for FoundKey {
    type Error = StorageError;

    fn try_from(row: KeyRow) -> Result<Self, StorageError> {
        Ok(FoundKey {
            id: i64::from(row.id),
            record: KeyRecord {
                key_id: KeyId::from_stored(&row.key_id),
                digest: KeyDigest::from_hex(&row.digest).map_err(StorageError::corrupt)?,
                role: row.role,
                ip_allowlist: read_allowlist(row.ip_allowlist.as_deref())?,
                expires_at: row.expires_at,
                revoked: row.revoked_at.is_some(),
            },
        })
    }
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
    let row = match sql.one_as::<IdRow, _>(db).await {
        Ok(row) => row,
        Err(e) if e.is_unique_violation() => {
            let taken = api_key_by_name(db, new.name).await?.is_some();
            return Err(StorageError::conflict(if taken {
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
        id: i64::from(row.id),
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
        Err(e) if e.is_unique_violation() => {
            return Err(StorageError::conflict(
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
    sql.one_as::<KeyRow, _>(db)
        .await?
        .map(FoundKey::try_from)
        .transpose()
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
    sql.one_as::<KeyRow, _>(db)
        .await?
        .map(ApiKeySummary::try_from)
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
    sql.all_as::<KeyRow, _>(db)
        .await?
        .into_iter()
        .map(ApiKeySummary::try_from)
        .collect()
}

/// One page of keys, revoked ones included, in creation order. Two queries (the total, the
/// page).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(page, per_page))]
pub async fn list_api_keys_page<C: ConnectionTrait>(
    db: &C,
    page: u64,
    per_page: u64,
) -> Result<crate::items::Page<ApiKeySummary>, StorageError> {
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM api_keys");
    let total = count.count(db).await?;
    let mut sql = key_select(backend);
    sql.push(" ORDER BY k.id LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(100))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let keys = sql
        .all_as::<KeyRow, _>(db)
        .await?
        .into_iter()
        .map(ApiKeySummary::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::items::Page::new(keys, total, page, per_page))
}

/// The key with row id `id`, or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(key = id))]
pub async fn api_key_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<ApiKeySummary>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = key_select(db.get_database_backend());
    sql.push(" WHERE k.id = ").bind(id);
    sql.one_as::<KeyRow, _>(db)
        .await?
        .map(ApiKeySummary::try_from)
        .transpose()
}

/// Revokes key `id` and answers it as it now is. Revoking again keeps the first revocation
/// time, as [`revoke_api_key`].
///
/// # Errors
/// [`StorageError::NotFound`] when no key has that id; a database error.
#[instrument(skip_all, err, fields(key = id))]
pub async fn revoke_api_key_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<ApiKeySummary, StorageError> {
    let kid = id_param(id).ok_or(StorageError::NotFound { what: "API key" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ")
        .bind(now())
        .push(") WHERE id = ")
        .bind(kid);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "API key" });
    }
    api_key_by_id(db, id)
        .await?
        .ok_or(StorageError::NotFound { what: "API key" })
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
