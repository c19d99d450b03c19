//! What the realtime server (issue 20) keeps in the database: its signing credentials on every
//! backend, and on PostgreSQL the fan-out between replicas that share no Redis.
//!
//! Fan-out: [`publish`] stores an event and `NOTIFY`s its id only (a `NOTIFY` payload must stay
//! under 8,000 bytes; an event may not), every replica's [`EventListener`] hears the id and reads
//! the event with [`events`]. Rows live a minute ([`prune_events`]); a listener that lost its
//! connection catches up from the last id it saw ([`events_after`]).
//!
//! Presence: each replica (a *node*) holds a lease ([`renew_lease`]) and one row per channel and
//! user with that user's socket count on the node. Whether a join is the user's first socket, or
//! a leave the last, is decided across every node under an advisory lock on the channel and user,
//! so two tabs on two replicas never both count as first. [`reap_expired`] removes the rows of
//! nodes whose lease ran out (a killed replica) and says which users left with them.
//!
//! Everything but [`credentials`] is PostgreSQL only; callers check the backend first.

use std::time::Duration;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionTrait};
use serde_json::Value as Json;
use tracing::instrument;

use crate::sql::{Sql, json_out, parse_json};
use crate::{Backend, Database, StorageError};

/// The `settings` row holding the realtime key and secret (not a setting: never listed).
const CREDENTIALS_KEY: &str = "realtime_credentials";

/// The `LISTEN` channel of the fan-out.
pub const NOTIFY_CHANNEL: &str = "vellum_realtime";

/// The realtime app key (public: clients connect with it) and signing secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub key: String,
    pub secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// The project's realtime credentials, generated on first use (an insert-if-absent then a read,
/// so replicas starting together agree) when the operator did not configure them.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] when the stored row is not the expected JSON.
#[instrument(skip_all, err)]
pub async fn credentials<C: ConnectionTrait>(db: &C) -> Result<Credentials, StorageError> {
    if let Some(found) = read_credentials(db).await? {
        return Ok(found);
    }
    let key: Vec<u8> = uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(10)
        .copied()
        .collect();
    let key = hex::encode(key);
    let mut secret = Vec::with_capacity(32);
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let value = serde_json::json!({"key": key, "secret": hex::encode(secret)});
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO settings (key, value) VALUES (")
        .bind(CREDENTIALS_KEY)
        .push(", ")
        .bind_json(&value)
        .push(") ON CONFLICT (key) DO NOTHING");
    sql.execute(db).await?;
    read_credentials(db).await?.ok_or_else(|| {
        StorageError::corrupt("the realtime credentials just written cannot be read")
    })
}

async fn read_credentials<C: ConnectionTrait>(db: &C) -> Result<Option<Credentials>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(&json_out(backend, "value"))
        .push(" AS value FROM settings WHERE key = ")
        .bind(CREDENTIALS_KEY);
    let Some(row) = sql.one_as::<TextRow, _>(db).await? else {
        return Ok(None);
    };
    let value = parse_json(row.value.as_deref())?;
    let field = |name: &str| value.get(name).and_then(Json::as_str).map(str::to_owned);
    match (field("key"), field("secret")) {
        (Some(key), Some(secret)) if !key.is_empty() && !secret.is_empty() => {
            Ok(Some(Credentials { key, secret }))
        }
        _ => Err(StorageError::corrupt(
            "the stored realtime credentials are malformed",
        )),
    }
}

#[derive(FromQueryResult)]
struct TextRow {
    value: Option<String>,
}

/// Stores `body` and notifies every listener of its id.
///
/// # Errors
/// A database error.
pub async fn publish(db: &Database, body: &str) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("WITH e AS (INSERT INTO realtime_events (body, created_at) VALUES (")
        .bind(body)
        .push(", now()) RETURNING id) SELECT pg_notify(")
        .bind(NOTIFY_CHANNEL)
        .push(", id::text) FROM e");
    sql.execute(db).await?;
    Ok(())
}

#[derive(FromQueryResult)]
struct EventRow {
    id: i64,
    body: String,
}

/// The stored events among `ids`, oldest first (a pruned one is missing).
///
/// # Errors
/// A database error.
pub async fn events(db: &Database, ids: &[i64]) -> Result<Vec<(i64, String)>, StorageError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, body FROM realtime_events WHERE id IN ");
    sql.bind_list(ids.iter().copied());
    sql.push(" ORDER BY id");
    let rows = sql.all_as::<EventRow, _>(db).await?;
    Ok(rows.into_iter().map(|r| (r.id, r.body)).collect())
}

/// Up to `limit` events after `after`, oldest first: a listener's catch-up after a gap.
///
/// # Errors
/// A database error.
pub async fn events_after(
    db: &Database,
    after: i64,
    limit: u64,
) -> Result<Vec<(i64, String)>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id, body FROM realtime_events WHERE id > ")
        .bind(after)
        .push(" ORDER BY id LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    let rows = sql.all_as::<EventRow, _>(db).await?;
    Ok(rows.into_iter().map(|r| (r.id, r.body)).collect())
}

#[derive(FromQueryResult)]
struct MaxRow {
    n: Option<i64>,
}

/// The newest event's id (0 without any): where a new listener starts.
///
/// # Errors
/// A database error.
pub async fn last_event_id(db: &Database) -> Result<i64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT MAX(id) AS n FROM realtime_events");
    Ok(sql
        .one_as::<MaxRow, _>(db)
        .await?
        .and_then(|r| r.n)
        .unwrap_or(0))
}

/// Removes events older than `age`; answers how many.
///
/// # Errors
/// A database error.
pub async fn prune_events(db: &Database, age: Duration) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM realtime_events WHERE created_at < now() - make_interval(secs => ")
        .bind(age.as_secs_f64())
        .push(")");
    sql.execute(db).await
}

/// A `LISTEN` on [`NOTIFY_CHANNEL`] over a connection of its own.
pub struct EventListener {
    inner: sea_orm::sqlx::postgres::PgListener,
}

impl std::fmt::Debug for EventListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventListener").finish_non_exhaustive()
    }
}

fn listener_error(err: sea_orm::sqlx::Error) -> StorageError {
    StorageError::Io {
        op: "listening for realtime events",
        source: std::io::Error::other(err),
    }
}

/// Starts listening.
///
/// # Errors
/// Not PostgreSQL, or the connection or `LISTEN` failed.
pub async fn listen(db: &Database) -> Result<EventListener, StorageError> {
    if db.backend() != Backend::Postgres {
        return Err(StorageError::Io {
            op: "listening for realtime events",
            source: std::io::Error::other("LISTEN needs PostgreSQL"),
        });
    }
    let pool = db.connection().get_postgres_connection_pool();
    let mut inner = sea_orm::sqlx::postgres::PgListener::connect_with(pool)
        .await
        .map_err(listener_error)?;
    inner.listen(NOTIFY_CHANNEL).await.map_err(listener_error)?;
    Ok(EventListener { inner })
}

impl EventListener {
    /// The next notified event id; `Ok(None)` when the connection was lost (the next call
    /// reconnects, and notifications in between are lost: catch up with [`events_after`]).
    ///
    /// # Errors
    /// Reconnecting failed.
    pub async fn next(&mut self) -> Result<Option<i64>, StorageError> {
        loop {
            match self.inner.try_recv().await.map_err(listener_error)? {
                None => return Ok(None),
                Some(note) => {
                    if let Ok(id) = note.payload().parse::<i64>() {
                        return Ok(Some(id));
                    }
                }
            }
        }
    }
}

#[derive(FromQueryResult)]
struct SumRow {
    n: i64,
}

/// Locks the pair (channel, user) until the transaction ends: joins and leaves of one user on
/// one channel are decided one at a time across every node.
async fn lock_member<C: ConnectionTrait>(
    tx: &C,
    channel: &str,
    user: &str,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("SELECT pg_advisory_xact_lock(hashtext(")
        .bind(channel)
        .push("), hashtext(")
        .bind(user)
        .push("))");
    sql.execute(tx).await?;
    Ok(())
}

async fn member_sockets<C: ConnectionTrait>(
    tx: &C,
    channel: &str,
    user: &str,
) -> Result<i64, StorageError> {
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push(
        "SELECT COALESCE(SUM(sockets), 0)::bigint AS n FROM realtime_presence WHERE channel = ",
    )
    .bind(channel)
    .push(" AND user_id = ")
    .bind(user);
    Ok(sql.one_as::<SumRow, _>(tx).await?.map_or(0, |r| r.n))
}

/// Counts `sockets` more sockets of `user` on `channel` at `node`; answers whether the user had
/// none anywhere before (its first socket: `member_added`).
///
/// # Errors
/// A database error.
pub async fn presence_join(
    db: &Database,
    node: &str,
    channel: &str,
    user: &str,
    user_info: &str,
    sockets: i32,
) -> Result<bool, StorageError> {
    let tx = db.begin().await?;
    lock_member(&tx, channel, user).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("INSERT INTO realtime_presence (node, channel, user_id, sockets, user_info) VALUES (")
        .bind(node)
        .push(", ")
        .bind(channel)
        .push(", ")
        .bind(user)
        .push(", ")
        .bind(sockets)
        .push(", ")
        .bind(user_info)
        .push(
            ") ON CONFLICT (node, channel, user_id) DO UPDATE SET sockets = \
         realtime_presence.sockets + EXCLUDED.sockets, user_info = EXCLUDED.user_info",
        );
    sql.execute(&tx).await?;
    let total = member_sockets(&tx, channel, user).await?;
    tx.commit().await?;
    Ok(total == i64::from(sockets))
}

/// One socket of `user` on `channel` at `node` less; answers whether it was the user's last
/// anywhere (`member_removed`). A leave the node no longer holds (its rows were reaped) is no
/// last.
///
/// # Errors
/// A database error.
pub async fn presence_leave(
    db: &Database,
    node: &str,
    channel: &str,
    user: &str,
) -> Result<bool, StorageError> {
    let tx = db.begin().await?;
    lock_member(&tx, channel, user).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE realtime_presence SET sockets = sockets - 1 WHERE node = ")
        .bind(node)
        .push(" AND channel = ")
        .bind(channel)
        .push(" AND user_id = ")
        .bind(user);
    let held = sql.execute(&tx).await? > 0;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM realtime_presence WHERE sockets <= 0 AND node = ")
        .bind(node)
        .push(" AND channel = ")
        .bind(channel)
        .push(" AND user_id = ")
        .bind(user);
    sql.execute(&tx).await?;
    let total = member_sockets(&tx, channel, user).await?;
    tx.commit().await?;
    Ok(held && total == 0)
}

#[derive(FromQueryResult)]
struct MemberRow {
    user_id: String,
    user_info: String,
}

/// The members of `channel` on every node: user id and `user_info` (JSON text).
///
/// # Errors
/// A database error.
pub async fn presence_members(
    db: &Database,
    channel: &str,
) -> Result<Vec<(String, String)>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT user_id, MAX(user_info) AS user_info FROM realtime_presence WHERE channel = ")
        .bind(channel)
        .push(" GROUP BY user_id HAVING SUM(sockets) > 0 ORDER BY MIN(user_id)");
    let rows = sql.all_as::<MemberRow, _>(db).await?;
    Ok(rows.into_iter().map(|r| (r.user_id, r.user_info)).collect())
}

#[derive(FromQueryResult)]
struct InsertedRow {
    inserted: bool,
}

/// Extends `node`'s lease by `lease`; answers whether the lease was new (first call, or the
/// node's lease had expired and was reaped: its presence rows are gone and must be restored).
///
/// # Errors
/// A database error.
pub async fn renew_lease(db: &Database, node: &str, lease: Duration) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO realtime_nodes (node, expires_at) VALUES (")
        .bind(node)
        .push(", now() + make_interval(secs => ")
        .bind(lease.as_secs_f64())
        .push(
            ")) ON CONFLICT (node) DO UPDATE SET expires_at = EXCLUDED.expires_at \
             RETURNING (xmax = 0) AS inserted",
        );
    Ok(sql
        .one_as::<InsertedRow, _>(db)
        .await?
        .is_some_and(|r| r.inserted))
}

#[derive(FromQueryResult)]
struct PairRow {
    channel: String,
    user_id: String,
}

/// Removes the leases that ran out and every presence row without a lease; answers the
/// (channel, user) pairs that have no socket left anywhere (each to get `member_removed`).
///
/// # Errors
/// A database error.
pub async fn reap_expired(db: &Database) -> Result<Vec<(String, String)>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM realtime_nodes WHERE expires_at < now()");
    sql.execute(db).await?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "DELETE FROM realtime_presence WHERE node NOT IN (SELECT node FROM realtime_nodes) \
         RETURNING channel, user_id",
    );
    let mut pairs: Vec<(String, String)> = sql
        .all_as::<PairRow, _>(db)
        .await?
        .into_iter()
        .map(|r| (r.channel, r.user_id))
        .collect();
    pairs.sort();
    pairs.dedup();
    let mut gone = Vec::new();
    for (channel, user) in pairs {
        if member_sockets(db, &channel, &user).await? == 0 {
            gone.push((channel, user));
        }
    }
    Ok(gone)
}

/// Removes `node`'s lease and presence rows (a replica stopping after its sockets closed);
/// answers the pairs left with no socket anywhere.
///
/// # Errors
/// A database error.
pub async fn drop_node(db: &Database, node: &str) -> Result<Vec<(String, String)>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM realtime_nodes WHERE node = ")
        .bind(node);
    sql.execute(db).await?;
    reap_expired(db).await
}
