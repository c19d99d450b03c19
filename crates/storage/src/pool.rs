//! Connection hygiene: a pooled connection goes back to the pool only when no transaction is
//! left open on it; otherwise it is closed and the pool opens a fresh one when needed.
//!
//! Why (security review R8): when a write fails on a full SQLite disk, SQLite rolls the
//! transaction back by itself, the `ROLLBACK` the driver sends next fails ("no transaction is
//! active"), and the driver, which only forgets a transaction when its `COMMIT` or `ROLLBACK`
//! succeeds, keeps counting one. Reused as is, that connection turned every later
//! `BEGIN IMMEDIATE` into a `SAVEPOINT`; the first of those that failed left a real transaction
//! open that nobody committed, so writes answered 201 afterwards were never written, the other
//! connections waited on its write lock, and reads on it saw an old snapshot, until a restart.
//!
//! The driver's count is the state that decides between `BEGIN` and `SAVEPOINT`, so it is the
//! state checked. SQLite's own flag (`sqlite3_get_autocommit`) is reachable only through
//! `unsafe` FFI, which this workspace forbids; a connection whose count is zero cannot hold a
//! transaction it did not start through the driver, and nothing in Vellum sends a bare `BEGIN`.

use futures_util::future::BoxFuture;
use sea_orm::sqlx::pool::PoolConnectionMetadata;
use sea_orm::sqlx::{Connection, Error};

/// sqlx's `after_release` hook: `Ok(true)` keeps the connection, `Ok(false)` closes it.
///
/// A transaction dropped without `COMMIT` or `ROLLBACK` (a handler's `?`) queues its rollback;
/// the hook waits for the queue (a ping is answered after every queued command) before deciding,
/// so the common "dropped on error" path keeps its connection when the rollback succeeds. The
/// check itself reads a counter: a clean release costs nothing.
pub(crate) fn release_clean<C: Connection>(
    conn: &mut C,
    _meta: PoolConnectionMetadata,
) -> BoxFuture<'_, Result<bool, Error>> {
    Box::pin(async move {
        if !conn.is_in_transaction() {
            return Ok(true);
        }
        conn.ping().await?;
        if conn.is_in_transaction() {
            tracing::warn!(
                "a database connection came back to the pool inside a transaction (its COMMIT \
                 or ROLLBACK failed); it is closed instead of reused"
            );
            return Ok(false);
        }
        Ok(true)
    })
}
