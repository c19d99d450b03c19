//! Admin sign-in sessions kept in the database (the store used without Redis). A row is keyed by
//! the SHA-256 of the cookie's token, so a database leak gives no usable session; the token is
//! hashed by the caller ([`vellum_app::accounts`]), this module never sees it.
//!
//! Rows are bounded: a user keeps at most [`MAX_SESSIONS_PER_USER`] (the oldest give way), and
//! expired rows are removed by [`purge_expired`], which the server runs on sign-in.

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param, stamp};

/// A user signing in from many browsers keeps at most this many sessions; each new one beyond
/// ends the oldest.
pub const MAX_SESSIONS_PER_USER: u64 = 50;

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// The hex SHA-256 of the token.
    pub id: String,
    pub user_id: i64,
    pub created_at: OffsetDateTime,
    pub last_seen_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

#[derive(FromQueryResult)]
struct Row {
    id: String,
    user_id: i32,
    created_at: OffsetDateTime,
    last_seen_at: OffsetDateTime,
    expires_at: OffsetDateTime,
    ip: Option<String>,
    user_agent: Option<String>,
}

impl From<Row> for SessionRow {
    fn from(row: Row) -> Self {
        Self {
            id: row.id,
            user_id: i64::from(row.user_id),
            created_at: row.created_at,
            last_seen_at: row.last_seen_at,
            expires_at: row.expires_at,
            ip: row.ip,
            user_agent: row.user_agent,
        }
    }
}

const COLUMNS: &str =
    "SELECT id, user_id, created_at, last_seen_at, expires_at, ip, user_agent FROM sessions";

/// Stores a new session, then ends the user's oldest sessions beyond [`MAX_SESSIONS_PER_USER`].
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown user; a database error.
#[instrument(skip_all, err, fields(user_id = session.user_id))]
pub async fn insert_session<C: ConnectionTrait>(
    db: &C,
    session: &SessionRow,
) -> Result<(), StorageError> {
    let uid = id_param(session.user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO sessions (id, user_id, created_at, last_seen_at, expires_at, ip, user_agent) \
         SELECT ",
    )
    .bind(session.id.clone())
    .push(", id, ")
    .bind(stamp(session.created_at))
    .push(", ")
    .bind(stamp(session.last_seen_at))
    .push(", ")
    .bind(stamp(session.expires_at))
    .push(", ")
    .bind(session.ip.clone())
    .push(", ")
    .bind(session.user_agent.clone())
    .push(" FROM users WHERE id = ")
    .bind(uid);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "user" });
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM sessions WHERE user_id = ")
        .bind(uid)
        .push(" AND id NOT IN (SELECT id FROM sessions WHERE user_id = ")
        .bind(uid)
        .push(" ORDER BY created_at DESC, id LIMIT ")
        .bind(i64::try_from(MAX_SESSIONS_PER_USER).unwrap_or(i64::MAX))
        .push(")");
    sql.execute(db).await?;
    Ok(())
}

/// The session with this id (token hash), or `None`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn find_session<C: ConnectionTrait>(
    db: &C,
    id: &str,
) -> Result<Option<SessionRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS).push(" WHERE id = ").bind(id);
    Ok(sql.one_as::<Row, _>(db).await?.map(SessionRow::from))
}

/// Every session of a user, newest first.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn user_sessions<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<Vec<SessionRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS)
        .push(" WHERE user_id = ")
        .bind(uid)
        .push(" ORDER BY created_at DESC, id");
    Ok(sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(SessionRow::from)
        .collect())
}

/// Records that the session was used at `at`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn touch_session<C: ConnectionTrait>(
    db: &C,
    id: &str,
    at: OffsetDateTime,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE sessions SET last_seen_at = ")
        .bind(stamp(at))
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(db).await?;
    Ok(())
}

/// Ends one session; ending one that is gone is not an error.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn delete_session<C: ConnectionTrait>(db: &C, id: &str) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM sessions WHERE id = ").bind(id);
    sql.execute(db).await?;
    Ok(())
}

/// Ends every session of a user except `keep` (the current one, for "sign out everywhere
/// else"); answers how many ended.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(user_id))]
pub async fn delete_user_sessions<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    keep: Option<&str>,
) -> Result<u64, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(0);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM sessions WHERE user_id = ").bind(uid);
    if let Some(keep) = keep {
        sql.push(" AND id <> ").bind(keep);
    }
    sql.execute(db).await
}

/// Removes sessions past their absolute expiry, or idle since before `idle_since`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn purge_expired<C: ConnectionTrait>(
    db: &C,
    now: OffsetDateTime,
    idle_since: OffsetDateTime,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM sessions WHERE expires_at <= ")
        .bind(stamp(now))
        .push(" OR last_seen_at < ")
        .bind(stamp(idle_since));
    sql.execute(db).await
}
