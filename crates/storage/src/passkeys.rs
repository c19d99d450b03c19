//! Admin users' passkeys (WebAuthn credentials) and the WebAuthn ceremonies in progress.
//!
//! The credential itself is opaque here: the application layer stores webauthn-rs's serialized
//! `Passkey` and reads it back; this module keeps it with its owner, its id (base64url, unique)
//! and the user handle a usernameless sign-in names the user by.

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param, stamp};

/// A user registers at most this many passkeys: a handful of devices, not a key store.
pub const MAX_PASSKEYS_PER_USER: u64 = 20;

/// Ceremonies in progress at most (started and neither finished nor expired); past it a new
/// one is refused until some expire, so anonymous sign-in starts cannot grow the table.
pub const MAX_LIVE_CEREMONIES: u64 = 10_000;

/// One stored passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRow {
    pub id: i64,
    pub user_id: i64,
    pub user_handle: String,
    pub credential_id: String,
    pub name: String,
    /// The serialized credential (JSON).
    pub credential: String,
    pub created_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
}

/// A passkey to store.
#[derive(Debug, Clone)]
pub struct NewPasskey<'a> {
    pub user_id: i64,
    pub user_handle: &'a str,
    pub credential_id: &'a str,
    pub name: &'a str,
    pub credential: &'a str,
}

#[derive(FromQueryResult)]
struct Row {
    id: i32,
    user_id: i32,
    user_handle: String,
    credential_id: String,
    name: String,
    credential: String,
    created_at: OffsetDateTime,
    last_used_at: Option<OffsetDateTime>,
}

impl From<Row> for PasskeyRow {
    fn from(row: Row) -> Self {
        Self {
            id: i64::from(row.id),
            user_id: i64::from(row.user_id),
            user_handle: row.user_handle,
            credential_id: row.credential_id,
            name: row.name,
            credential: row.credential,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        }
    }
}

const COLUMNS: &str = "SELECT p.id, p.user_id, p.user_handle, p.credential_id, p.name, \
     p.credential, p.created_at, p.last_used_at FROM passkeys p";

/// Stores a passkey for a live user.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown or deleted user; [`StorageError::Conflict`] on
/// `credential` when the credential is already registered, or on `passkeys` when the user has
/// [`MAX_PASSKEYS_PER_USER`]; a database error.
#[instrument(skip_all, err, fields(user_id = new.user_id))]
pub async fn insert_passkey<C: ConnectionTrait>(
    db: &C,
    new: &NewPasskey<'_>,
    now: OffsetDateTime,
) -> Result<PasskeyRow, StorageError> {
    let uid = id_param(new.user_id).ok_or(StorageError::NotFound { what: "user" })?;
    if count_for_user(db, uid).await? >= MAX_PASSKEYS_PER_USER {
        return Err(StorageError::conflict_on(
            "passkeys",
            format!("An account may have at most {MAX_PASSKEYS_PER_USER} passkeys."),
        ));
    }
    if find_by_credential_id(db, new.credential_id)
        .await?
        .is_some()
    {
        return Err(StorageError::conflict_on(
            "credential",
            "This passkey is already registered.",
        ));
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO passkeys (user_id, user_handle, credential_id, name, credential, created_at) \
         SELECT id, ",
    )
    .bind(new.user_handle)
    .push(", ")
    .bind(new.credential_id)
    .push(", ")
    .bind(new.name)
    .push(", ")
    .bind(new.credential)
    .push(", ")
    .bind(stamp(now))
    .push(" FROM users WHERE deleted_at IS NULL AND id = ")
    .bind(uid);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    find_by_credential_id(db, new.credential_id)
        .await?
        .ok_or(StorageError::NotFound { what: "passkey" })
}

async fn count_for_user<C: ConnectionTrait>(db: &C, uid: i32) -> Result<u64, StorageError> {
    #[derive(FromQueryResult)]
    struct Count {
        n: i64,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM passkeys WHERE user_id = ")
        .bind(uid);
    let n = sql.one_as::<Count, _>(db).await?.map_or(0, |c| c.n);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// A user's passkeys, oldest first.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn passkeys_of_user<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Vec<PasskeyRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS)
        .push(" WHERE p.user_id = ")
        .bind(uid)
        .push(" ORDER BY p.id");
    Ok(sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(PasskeyRow::from)
        .collect())
}

/// The passkeys of the live user a usernameless sign-in names by `user_handle`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn passkeys_of_handle<C: ConnectionTrait>(
    db: &C,
    user_handle: &str,
) -> Result<Vec<PasskeyRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS)
        .push(" JOIN users u ON u.id = p.user_id WHERE u.deleted_at IS NULL AND p.user_handle = ")
        .bind(user_handle)
        .push(" ORDER BY p.id LIMIT ")
        .bind(i64::try_from(MAX_PASSKEYS_PER_USER).unwrap_or(i64::MAX));
    Ok(sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(PasskeyRow::from)
        .collect())
}

async fn find_by_credential_id<C: ConnectionTrait>(
    db: &C,
    credential_id: &str,
) -> Result<Option<PasskeyRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS)
        .push(" WHERE p.credential_id = ")
        .bind(credential_id);
    Ok(sql.one_as::<Row, _>(db).await?.map(PasskeyRow::from))
}

/// Records a use: the credential as updated by the sign-in (its counter) and when.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(passkey_id = id))]
pub async fn record_use<C: ConnectionTrait>(
    db: &C,
    id: i64,
    credential: &str,
    at: OffsetDateTime,
) -> Result<(), StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE passkeys SET credential = ")
        .bind(credential)
        .push(", last_used_at = ")
        .bind(stamp(at))
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(db).await?;
    Ok(())
}

/// Deletes the user's passkey `id`; answers whether it existed.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id, passkey_id = id))]
pub async fn delete_passkey<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    id: i64,
) -> Result<bool, StorageError> {
    let (Some(uid), Some(id)) = (id_param(user_id), id_param(id)) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM passkeys WHERE user_id = ")
        .bind(uid)
        .push(" AND id = ")
        .bind(id);
    Ok(sql.execute(db).await? > 0)
}

/// Stores a ceremony's state until `expires_at`, first removing expired ones.
///
/// # Errors
/// [`StorageError::Conflict`] on `ceremony` when [`MAX_LIVE_CEREMONIES`] are in progress; a
/// database error.
#[instrument(skip_all, err)]
pub async fn put_ceremony<C: ConnectionTrait>(
    db: &C,
    id: &str,
    state: &str,
    now: OffsetDateTime,
    expires_at: OffsetDateTime,
) -> Result<(), StorageError> {
    #[derive(FromQueryResult)]
    struct Count {
        n: i64,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM webauthn_ceremonies WHERE expires_at <= ")
        .bind(stamp(now));
    sql.execute(db).await?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM webauthn_ceremonies");
    let live = sql.one_as::<Count, _>(db).await?.map_or(0, |c| c.n);
    if u64::try_from(live).unwrap_or(0) >= MAX_LIVE_CEREMONIES {
        return Err(StorageError::conflict_on(
            "ceremony",
            "Too many passkey ceremonies are in progress.",
        ));
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO webauthn_ceremonies (id, state, expires_at) VALUES (")
        .bind(id)
        .push(", ")
        .bind(state)
        .push(", ")
        .bind(stamp(expires_at))
        .push(")");
    sql.execute(db).await?;
    Ok(())
}

/// Takes a ceremony's state: answers it once (and removes it) while it has not expired.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn take_ceremony<C: ConnectionTrait>(
    db: &C,
    id: &str,
    now: OffsetDateTime,
) -> Result<Option<String>, StorageError> {
    #[derive(FromQueryResult)]
    struct State {
        state: String,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM webauthn_ceremonies WHERE id = ")
        .bind(id)
        .push(" AND expires_at > ")
        .bind(stamp(now))
        .push(" RETURNING state");
    let taken = sql.one_as::<State, _>(db).await?.map(|s| s.state);
    if taken.is_none() {
        // An expired one is gone too.
        let mut sql = Sql::new(db.get_database_backend());
        sql.push("DELETE FROM webauthn_ceremonies WHERE id = ")
            .bind(id);
        sql.execute(db).await?;
    }
    Ok(taken)
}
