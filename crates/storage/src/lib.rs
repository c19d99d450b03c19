//! Vellum's persistence: async repositories on SQLite and PostgreSQL (through sea-orm), and the
//! blob store for files' bytes.
//!
//! One module per thing stored ([`collections`], [`items`], [`links`], [`files`], [`roles`],
//! [`keys`], [`users`], [`groups`], [`project`], [`blob`]; [`role_admin`], [`permissions`],
//! [`item_admin`], [`activity`] and [`dashboard`] serve the admin app; [`seed`] fills a new database); each function is generic over `sea_orm::ConnectionTrait`, so it runs on
//! the pool or inside a caller's transaction. The policy crate's filters are compiled to SQL here
//! with the evaluator's exact semantics; `unique` values are claimed under a unique index so
//! concurrent writers cannot both win. `testing::TestDb` (feature `testing`) gives each test a
//! fresh database on either backend.
//!
//! This crate must never know about HTTP (no actix-web, no status codes) and must never decide
//! access on its own: item writes take the `Authorized<ItemWrite>` capability `vellum-policy`
//! issued and enforce what it carries. Every multi-row write runs in one transaction.

use sea_orm::ConnectOptions;
use vellum_migration::{Migrator, MigratorTrait};

pub mod accounts;
pub mod activity;
pub mod ai;
pub mod blob;
pub mod chat;
pub mod collections;
pub mod dashboard;
mod database;
mod error;
pub mod field_changes;
pub mod files;
mod filter_sql;
pub mod groups;
pub mod item_admin;
pub mod item_files;
pub mod item_trash;
pub mod items;
pub mod jobs;
pub mod keys;
pub mod links;
pub mod listing;
pub mod model;
pub mod paging;
pub mod passkeys;
pub mod permissions;
mod pool;
pub mod project;
pub mod realtime;
pub mod role_admin;
pub mod roles;
pub mod seed;
pub mod sessions;
pub mod singleton;
mod sql;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
mod transaction;
mod unique;
pub mod users;
pub mod webhooks;

pub use database::{Backend, Database};
pub use error::{DATA_FIELD, StorageError};
pub use transaction::Transaction;

/// Applies every pending migration (idempotent: nothing happens when the schema is current).
///
/// # Errors
/// [`StorageError::Migrate`] when a migration fails; it runs in its own transaction where the
/// backend supports transactional DDL (PostgreSQL), so a failure leaves the previous schema.
#[tracing::instrument(skip_all, err)]
pub async fn migrate(db: &Database) -> Result<(), StorageError> {
    let pending = pending_migrations(db).await?;
    Migrator::up(db.connection(), None)
        .await
        .map_err(StorageError::Migrate)?;
    // A table derived from item data starts empty: fill it from the items that predate it.
    if pending.iter().any(|name| name == item_files::MIGRATION) {
        item_files::backfill(db, &collections::list_collections(db).await?).await?;
    }
    Ok(())
}

/// Refreshes the planner's statistics of the item tables after a bulk load (a manifest's
/// items). PostgreSQL plans from them, and until autovacuum gets to a freshly loaded table it
/// believes it nearly empty: a list of 10,000 articles scanned and sorted all of them on every
/// page (200 req/s instead of 6,000, issue 23). SQLite plans without them (and its `INDEXED BY`
/// hints must not be second-guessed), so there it does nothing.
///
/// # Errors
/// A database error.
#[tracing::instrument(skip_all, err)]
pub async fn refresh_statistics<C: sea_orm::ConnectionTrait>(db: &C) -> Result<(), StorageError> {
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        db.execute_unprepared("ANALYZE items, item_links, item_files")
            .await?;
    }
    Ok(())
}

/// The names of the migrations not yet applied, in the order [`migrate`] would apply them.
///
/// # Errors
/// [`StorageError::Migrate`] when the migration table cannot be read.
#[tracing::instrument(skip_all, err)]
pub async fn pending_migrations(db: &Database) -> Result<Vec<String>, StorageError> {
    Ok(Migrator::get_pending_migrations(db.connection())
        .await
        .map_err(StorageError::Migrate)?
        .iter()
        .map(|m| m.name().to_owned())
        .collect())
}

/// How the connection pool is sized and how long it waits (`VELLUM_DB_*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    /// The most connections open at once; `None` picks per backend: 4 per core for a SQLite
    /// file (clamped to 4..=32), the driver's default (10) for PostgreSQL.
    pub max_connections: Option<u32>,
    /// How long opening one connection may take. An unreachable database fails start-up, and
    /// requests, within this instead of the driver's default 30 s.
    pub connect_timeout: std::time::Duration,
    /// How long a request waits for a free (or new) connection before it gets 503.
    pub acquire_timeout: std::time::Duration,
    /// SQLite only: checkpoint the write-ahead log from a background task this often, instead of
    /// in whichever request's commit crossed SQLite's 1,000-page mark (a checkpoint syncs the
    /// database file, which put tens of milliseconds into that request). `None` keeps SQLite's
    /// automatic checkpoints (the CLI, tests).
    pub checkpoint_interval: Option<std::time::Duration>,
    /// SQLite only: KiB of page cache per connection.
    pub sqlite_cache_kib: u32,
    /// SQLite only: bytes of the file each connection memory-maps (0: none).
    pub sqlite_mmap: u64,
}

/// SQLite's page cache per connection by default (see [`connect_with`] on memory).
pub const DEFAULT_SQLITE_CACHE_KIB: u32 = 2048;
/// SQLite's memory map per connection by default: none (see [`connect_with`] on memory).
pub const DEFAULT_SQLITE_MMAP: u64 = 0;

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_connections: None,
            connect_timeout: std::time::Duration::from_secs(5),
            acquire_timeout: std::time::Duration::from_secs(5),
            checkpoint_interval: None,
            sqlite_cache_kib: DEFAULT_SQLITE_CACHE_KIB,
            sqlite_mmap: DEFAULT_SQLITE_MMAP,
        }
    }
}

/// Opens a connection pool to `url` with the default [`PoolOptions`].
///
/// # Errors
///
/// As [`connect_with`].
pub async fn connect(url: &str) -> Result<Database, StorageError> {
    connect_with(url, &PoolOptions::default()).await
}

/// Opens a connection pool to `url`: `sqlite://…` (the embedded default) or `postgres://…`.
///
/// # Errors
///
/// [`StorageError::Connect`] when the URL is malformed, names an unsupported backend, or the
/// database does not answer.
#[tracing::instrument(skip_all, err)]
pub async fn connect_with(url: &str, pool: &PoolOptions) -> Result<Database, StorageError> {
    use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
    // Checked here because the driver's own error for an unknown scheme quotes the whole URL,
    // password included, and errors end up in logs.
    let scheme = url.split_once(':').map_or("", |(s, _)| s);
    if !matches!(scheme, "sqlite" | "postgres" | "postgresql") {
        return Err(StorageError::Connect(sea_orm::DbErr::Custom(format!(
            "unsupported database URL scheme \"{scheme}\": use sqlite://… or postgres://…"
        ))));
    }
    create_sqlite_dir(url)?;
    let mut options = ConnectOptions::new(url);
    options
        .connect_timeout(pool.connect_timeout)
        .acquire_timeout(pool.acquire_timeout);
    // sea-orm gives SQLite a single connection unless told otherwise, which serializes every
    // request behind one query at a time. In WAL mode readers run in parallel (writers still
    // take turns through `BEGIN IMMEDIATE` and the busy timeout), so a file database gets a
    // few connections per core. An in-memory database must stay on one: each connection
    // would open its own empty database.
    let in_memory = url.contains(":memory:") || url.contains("mode=memory");
    if scheme == "sqlite" && in_memory {
        options.max_connections(1);
    } else if let Some(max) = pool.max_connections {
        options.max_connections(max.max(1));
    } else if scheme == "sqlite" {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        options.max_connections(u32::try_from(cores * 4).unwrap_or(16).clamp(4, 32));
    }
    // Statements are traced by the repositories with their ids; sqlx's own per-statement INFO
    // lines would flood the log and may carry bound values.
    options.sqlx_logging(false);
    let background_checkpoints =
        scheme == "sqlite" && !in_memory && pool.checkpoint_interval.is_some();
    let (cache_kib, mmap) = (pool.sqlite_cache_kib, pool.sqlite_mmap);
    options.map_sqlx_sqlite_opts(move |o| {
        // WAL: readers and the writer stop blocking each other, which a server with concurrent
        // requests needs. NORMAL is durable across application crashes in WAL mode.
        //
        // Memory (issue 23): every connection has its own page cache, and memory-mapped pages
        // count in the process's RSS once per connection that touched them; with 64 MiB
        // caches and a 256 MiB map, RSS went from 45 to 150 MiB as soon as a few query shapes
        // had run on the 8 connections. A 2 MiB cache per connection holds the hot index and
        // table pages of ordinary lists; the rest is read through the kernel's page cache,
        // which all connections (and every process) share and which is not the server's RSS.
        o.journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(transaction::WRITER_WAIT)
            .pragma("cache_size", format!("-{cache_kib}"))
            .pragma("mmap_size", mmap.to_string())
            .pragma(
                "wal_autocheckpoint",
                if background_checkpoints { "0" } else { "1000" },
            )
            .foreign_keys(true)
    });
    // A connection that comes back inside a transaction is closed, never reused (see `pool`).
    options
        .map_sqlx_sqlite_pool_opts(|o| o.after_release(pool::release_clean))
        .map_sqlx_postgres_pool_opts(|o| o.after_release(pool::release_clean));
    let db = sea_orm::Database::connect(options)
        .await
        .map(Database::new)
        .map_err(StorageError::Connect)?;
    if background_checkpoints && let Some(every) = pool.checkpoint_interval {
        tokio::spawn(checkpoints(db.clone(), every));
    }
    Ok(db)
}

/// Checkpoints the write-ahead log every `every` until the pool closes. PASSIVE: it copies what
/// no reader still needs and never waits for, or blocks, a writer.
async fn checkpoints(db: Database, every: std::time::Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if db.connection().get_sqlite_connection_pool().is_closed() {
            return;
        }
        let statement = sea_orm::Statement::from_string(
            sea_orm::DbBackend::Sqlite,
            "PRAGMA wal_checkpoint(PASSIVE)",
        );
        if let Err(err) = sea_orm::ConnectionTrait::execute_raw(&db, statement).await {
            tracing::warn!(error = %err, "the write-ahead log checkpoint failed");
        }
    }
}

/// How long a successful [`WriteCheck::check`] is trusted before the next one writes again.
const WRITE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a storage failure of a real request ([`WriteCheck::note_storage_failure`]) fails
/// [`WriteCheck::check`] by itself.
const STORAGE_FAILURE_HOLD: std::time::Duration = std::time::Duration::from_secs(3);

/// The readiness probe's database write check, and what it remembers: one per application
/// state (per pool), so tests' databases never share it.
#[derive(Debug, Default)]
pub struct WriteCheck {
    /// When the last check committed its write; held while a check writes, so concurrent
    /// checks wait for the one in flight.
    last_success: tokio::sync::Mutex<Option<std::time::Instant>>,
    /// When a request last failed on the database's storage. Not behind the async lock: a
    /// failing request marks it without waiting for a check that may be stuck on the same disk.
    storage_failed_at: std::sync::Mutex<Option<std::time::Instant>>,
}

impl WriteCheck {
    /// Proves that a write can commit now.
    ///
    /// A read (`ping`) kept succeeding while every write failed on a full disk (security review
    /// R8), so the check commits a real, empty write: on SQLite it rewrites `user_version` with
    /// its own value inside `BEGIN IMMEDIATE` (one page appended to the WAL: it fails when the
    /// disk is full, the file read-only, or the write lock cannot be had); on PostgreSQL it
    /// commits a transaction that took a transaction id (it fails on a read-only server, for
    /// instance a standby after a failover). A success is reused for [`WRITE_CHECK_INTERVAL`]
    /// and concurrent checks wait for the one in flight, so an unauthenticated probe cannot be
    /// turned into a stream of writes. Failures are never reused: the next check tries again.
    ///
    /// One page can still fit where an item's write does not (SQLite reuses the WAL's space
    /// after a checkpoint), so a request that failed on the database's storage
    /// ([`WriteCheck::note_storage_failure`]) fails the check for [`STORAGE_FAILURE_HOLD`] after
    /// it, whatever the probe's write does: while writes keep failing, readiness keeps failing;
    /// once they stop (space is back, or no traffic comes), the probe alone decides again.
    ///
    /// # Errors
    /// [`StorageError::StorageFailing`] during the hold, else the write's error
    /// ([`StorageError::is_unavailable`] tells an outage from a bug).
    #[tracing::instrument(skip_all, err)]
    pub async fn check(&self, db: &Database) -> Result<(), StorageError> {
        if self.failing() {
            return Err(StorageError::StorageFailing);
        }
        let mut last_success = self.last_success.lock().await;
        if last_success.is_some_and(|at| at.elapsed() < WRITE_CHECK_INTERVAL) {
            return Ok(());
        }
        commit_empty_write(db).await?;
        *last_success = Some(std::time::Instant::now());
        Ok(())
    }

    /// Records that a request failed on the database's storage (see
    /// [`StorageError::is_storage_failure`]):
    /// [`WriteCheck::check`] fails for the next [`STORAGE_FAILURE_HOLD`].
    pub fn note_storage_failure(&self) {
        *self.failed_at() = Some(std::time::Instant::now());
    }

    fn failing(&self) -> bool {
        self.failed_at()
            .is_some_and(|at| at.elapsed() < STORAGE_FAILURE_HOLD)
    }

    fn failed_at(&self) -> std::sync::MutexGuard<'_, Option<std::time::Instant>> {
        // A plain store: a panic elsewhere cannot leave it inconsistent.
        self.storage_failed_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn commit_empty_write(db: &Database) -> Result<(), StorageError> {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    let tx = sql::begin_write(db).await?;
    match tx.get_database_backend() {
        DbBackend::Postgres => {
            tx.execute_unprepared("SELECT txid_current()").await?;
        }
        backend => {
            let version: i32 = tx
                .query_one_raw(Statement::from_string(backend, "PRAGMA user_version"))
                .await?
                .ok_or_else(|| StorageError::corrupt("PRAGMA user_version returned no row"))?
                .try_get_by_index(0)?;
            tx.execute_unprepared(&format!("PRAGMA user_version = {version}"))
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The default database is `sqlite://./data/vellum.db?mode=rwc`: SQLite creates the file but
/// not its directory, so a first run on a fresh checkout would fail. The directory of a SQLite
/// file URL is created when missing.
fn create_sqlite_dir(url: &str) -> Result<(), StorageError> {
    let Some(rest) = url.strip_prefix("sqlite://") else {
        return Ok(());
    };
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.contains(":memory:") {
        return Ok(());
    }
    match std::path::Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::create_dir_all(dir)
            .map_err(|e| StorageError::Connect(sea_orm::DbErr::Custom(e.to_string()))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connects_to_in_memory_sqlite() {
        let db = connect("sqlite::memory:").await.unwrap();
        db.ping().await.unwrap();
    }

    #[tokio::test]
    async fn the_directory_of_a_sqlite_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/v.db");
        let db = connect(&format!("sqlite://{}?mode=rwc", file.display()))
            .await
            .unwrap();
        db.ping().await.unwrap();
        assert!(file.exists());
    }

    #[tokio::test]
    async fn unknown_scheme_is_a_connect_error() {
        let err = connect("mysql://user:hunter2@localhost/x")
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Connect(_)), "{err:?}");
        let chain = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(chain.contains("unsupported database URL scheme"), "{chain}");
        assert!(!chain.contains("hunter2"), "the password leaked: {chain}");
    }

    #[tokio::test]
    async fn the_connect_timeout_is_configurable() {
        // A listener that accepts but never answers: the driver waits for the server's greeting.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let options = PoolOptions {
            connect_timeout: std::time::Duration::from_millis(300),
            acquire_timeout: std::time::Duration::from_millis(300),
            ..PoolOptions::default()
        };
        let started = std::time::Instant::now();
        let err = connect_with(
            &format!("postgres://nobody:pw@127.0.0.1:{port}/x"),
            &options,
        )
        .await
        .unwrap_err();
        assert!(matches!(err, StorageError::Connect(_)), "{err:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
    }

    #[tokio::test]
    async fn an_unreachable_server_fails_within_seconds() {
        let started = std::time::Instant::now();
        let err = connect("postgres://nobody:pw@127.0.0.1:1/x")
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Connect(_)), "{err:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
}
