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
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    ExecResult, IsolationLevel, QueryResult, Statement, TransactionError, TransactionOptions,
    TransactionTrait,
};

use crate::StorageError;

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
}

impl Database {
    pub(crate) fn new(conn: DatabaseConnection) -> Self {
        Self { conn }
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
        self.conn
            .set_metric_callback(move |info| on_query(&info.statement.sql));
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for Database {
    fn get_database_backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.conn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.conn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.conn.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.conn.query_all_raw(stmt).await
    }

    fn support_returning(&self) -> bool {
        self.conn.support_returning()
    }

    fn is_mock_connection(&self) -> bool {
        self.conn.is_mock_connection()
    }
}

#[async_trait::async_trait]
impl TransactionTrait for Database {
    type Transaction = DatabaseTransaction;

    async fn begin(&self) -> Result<DatabaseTransaction, DbErr> {
        self.conn.begin().await
    }

    async fn begin_with_config(
        &self,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<DatabaseTransaction, DbErr> {
        self.conn
            .begin_with_config(isolation_level, access_mode)
            .await
    }

    async fn begin_with_options(
        &self,
        options: TransactionOptions,
    ) -> Result<DatabaseTransaction, DbErr> {
        self.conn.begin_with_options(options).await
    }

    async fn transaction<F, T, E>(&self, callback: F) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        self.conn.transaction(callback).await
    }

    async fn transaction_with_config<F, T, E>(
        &self,
        callback: F,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(
                &'c DatabaseTransaction,
            ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        self.conn
            .transaction_with_config(callback, isolation_level, access_mode)
            .await
    }
}
