//! The storage-owned handle on the connection pool.
//!
//! Upper crates hold a [`Database`] and pass it to the repositories; they never name a sea-orm
//! type, so the ORM stays an implementation detail of this crate (and of `vellum-manifest`, which
//! writes through the same repositories inside one transaction). The handle implements sea-orm's
//! `ConnectionTrait` and `TransactionTrait` by delegation, so every repository function, generic
//! over those traits, runs on it as it runs on a transaction.

use std::future::Future;
use std::pin::Pin;

use sea_orm::{
    AccessMode, DatabaseConnection, DbBackend, DbErr, IsolationLevel, SqliteTransactionMode,
    TransactionError, TransactionOptions, TransactionTrait,
};

use crate::StorageError;
use crate::transaction::{Transaction, Writers};

/// Which database a [`Database`] talks to, for the few callers that must know (reports,
/// benchmarks); queries never branch on it outside this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The name used in URLs and reports: `sqlite` or `postgres`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// A pool of connections to the project's database (cheap to clone: clones share the pool).
#[derive(Debug, Clone)]
pub struct Database {
    conn: DatabaseConnection,
    /// SQLite's queue of write transactions (see `transaction`); `None` on PostgreSQL.
    writers: Option<Writers>,
}

impl Database {
    pub(crate) fn new(mut conn: DatabaseConnection) -> Self {
        conn.set_metric_callback(|info| crate::telemetry::record(info.elapsed));
        let writers = (conn.get_database_backend() == DbBackend::Sqlite).then(Writers::new);
        Self { conn, writers }
    }

    /// The pool as sea-orm sees it, for this crate's migrations.
    pub(crate) fn connection(&self) -> &DatabaseConnection {
        &self.conn
    }

    /// Which database this is.
    #[must_use]
    pub fn backend(&self) -> Backend {
        match self.conn.get_database_backend() {
            DbBackend::Postgres => Backend::Postgres,
            // Only SQLite and PostgreSQL URLs are accepted by `connect`.
            _ => Backend::Sqlite,
        }
    }

    /// Checks that a connection can be had and answers (a read: see
    /// [`crate::WriteCheck::check`] for whether writes commit).
    ///
    /// # Errors
    /// [`StorageError::Unavailable`] when the database does not answer.
    pub async fn ping(&self) -> Result<(), StorageError> {
        Ok(self.conn.ping().await?)
    }

    /// How many connections the pool holds open, how many of those are idle, and its maximum;
    /// `None` once the pool is gone (a handle that was never connected).
    #[must_use]
    pub fn pool_usage(&self) -> Option<crate::telemetry::PoolUsage> {
        use sea_orm::DatabaseConnectionType as Kind;
        let usage = |size: u32, idle: usize, max: u32| crate::telemetry::PoolUsage {
            open: size,
            idle: u32::try_from(idle).unwrap_or(u32::MAX),
            max,
        };
        match &self.conn.inner {
            Kind::SqlxSqlitePoolConnection(_) => {
                let pool = self.conn.get_sqlite_connection_pool();
                Some(usage(
                    pool.size(),
                    pool.num_idle(),
                    pool.options().get_max_connections(),
                ))
            }
            Kind::SqlxPostgresPoolConnection(_) => {
                let pool = self.conn.get_postgres_connection_pool();
                Some(usage(
                    pool.size(),
                    pool.num_idle(),
                    pool.options().get_max_connections(),
                ))
            }
            _ => None,
        }
    }

    /// Closes every connection of the pool; clones of this handle stop working too.
    ///
    /// # Errors
    /// A database error while closing.
    pub async fn close(self) -> Result<(), StorageError> {
        Ok(self.conn.close().await?)
    }

    /// As [`Database::close`], through a shared handle (an outage in a test, say).
    ///
    /// # Errors
    /// A database error while closing.
    pub async fn close_by_ref(&self) -> Result<(), StorageError> {
        Ok(self.conn.close_by_ref().await?)
    }

    /// A handle on a pool a test built itself (with options `connect` does not offer).
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn from_sea_orm(conn: DatabaseConnection) -> Self {
        Self::new(conn)
    }

    /// The sea-orm pool underneath, for this crate's own tests that stage what no repository
    /// can do (a connection returned to the pool inside a transaction).
    #[cfg(feature = "testing")]
    #[must_use]
    pub fn sea_orm_connection(&self) -> &DatabaseConnection {
        &self.conn
    }

    /// Calls `on_query` with the SQL text of every statement this handle runs (clones made
    /// before keep counting nothing), for tests that bound the number of queries a request makes.
    #[cfg(feature = "testing")]
    pub fn on_query(&mut self, on_query: impl Fn(&str) + Send + Sync + 'static) {
        self.conn.set_metric_callback(move |info| {
            crate::telemetry::record(info.elapsed);
            on_query(&info.statement.sql);
        });
    }
}

crate::transaction::delegate_connection!(Database, conn);

#[async_trait::async_trait]
impl TransactionTrait for Database {
    type Transaction = Transaction;

    async fn begin(&self) -> Result<Transaction, DbErr> {
        Ok(Transaction::new(self.conn.begin().await?, None))
    }

    async fn begin_with_config(
        &self,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<Transaction, DbErr> {
        let tx = self
            .conn
            .begin_with_config(isolation_level, access_mode)
            .await?;
        Ok(Transaction::new(tx, None))
    }

    async fn begin_with_options(&self, options: TransactionOptions) -> Result<Transaction, DbErr> {
        // A write transaction takes its turn before it takes a connection: waiting writers hold
        // no connection that readers could use, and they are served in arrival order.
        let turn = match (&self.writers, options.sqlite_transaction_mode) {
            (Some(writers), Some(SqliteTransactionMode::Immediate)) => Some(writers.turn().await?),
            _ => None,
        };
        Ok(Transaction::new(
            self.conn.begin_with_options(options).await?,
            turn,
        ))
    }

    async fn transaction<F, T, E>(&self, callback: F) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c Transaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        let tx = self.begin().await.map_err(TransactionError::Connection)?;
        tx.run(callback).await
    }

    async fn transaction_with_config<F, T, E>(
        &self,
        callback: F,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c Transaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        let tx = self
            .begin_with_config(isolation_level, access_mode)
            .await
            .map_err(TransactionError::Connection)?;
        tx.run(callback).await
    }
}
