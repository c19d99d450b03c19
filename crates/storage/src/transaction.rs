//! The transaction type of a [`crate::Database`], and the queue SQLite's writers wait in.
//!
//! SQLite has one write lock per database. Left to its busy handler, writers that find it taken
//! sleep and poll (1, 2, 5, … up to 100 ms between tries), so under 32 concurrent creates the
//! unlucky ones slept their way to a p99 of 270 ms while the lock sat free between polls
//! (issue 23). In this process every write transaction (`BEGIN IMMEDIATE`, see
//! `sql::begin_write`) first takes its turn in a fair async queue, before it takes a pooled
//! connection: the next writer starts the moment the previous one commits, and queued writers
//! hold no connection a reader could use. Other processes on the same file (the CLI, a second
//! replica) still meet the busy handler, as before. PostgreSQL has row locks and no queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sea_orm::{
    AccessMode, DatabaseTransaction, DbErr, IsolationLevel, TransactionError, TransactionOptions,
    TransactionSession, TransactionTrait,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a writer waits for its turn, as long as SQLite's busy timeout let it wait for the
/// lock before: past it the write fails as unavailable (503) instead of hanging.
pub(crate) const WRITER_WAIT: Duration = Duration::from_secs(5);

/// The queue of one SQLite database's writers in this process (clones share it).
#[derive(Debug, Clone)]
pub(crate) struct Writers(Arc<Semaphore>);

impl Writers {
    pub(crate) fn new() -> Self {
        Self(Arc::new(Semaphore::new(1)))
    }

    /// Waits for this writer's turn (tokio's semaphore is fair: first come, first served).
    pub(crate) async fn turn(&self) -> Result<OwnedSemaphorePermit, DbErr> {
        self.turn_within(WRITER_WAIT).await
    }

    async fn turn_within(&self, wait: Duration) -> Result<OwnedSemaphorePermit, DbErr> {
        match tokio::time::timeout(wait, Arc::clone(&self.0).acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(DbErr::ConnectionAcquire(
                sea_orm::error::ConnAcquireErr::Timeout,
            )),
        }
    }
}

/// An open transaction: sea-orm's, plus the writer's turn it holds until commit, rollback or
/// drop (a savepoint inside it holds none of its own).
pub struct Transaction {
    inner: DatabaseTransaction,
    _turn: Option<OwnedSemaphorePermit>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("writer", &self._turn.is_some())
            .finish_non_exhaustive()
    }
}

impl Transaction {
    pub(crate) fn new(inner: DatabaseTransaction, turn: Option<OwnedSemaphorePermit>) -> Self {
        Self { inner, _turn: turn }
    }

    /// Commits (the writer's turn passes on once the commit has finished).
    ///
    /// # Errors
    /// The database's error; the transaction is then rolled back.
    pub async fn commit(self) -> Result<(), DbErr> {
        self.inner.commit().await
    }

    /// Rolls back explicitly (dropping the transaction does too).
    ///
    /// # Errors
    /// The database's error.
    pub async fn rollback(self) -> Result<(), DbErr> {
        self.inner.rollback().await
    }

    /// Runs `callback` inside this transaction: committed when it succeeds, rolled back when
    /// it fails.
    pub(crate) async fn run<F, T, E>(self, callback: F) -> Result<T, TransactionError<E>>
    where
        F: for<'c> FnOnce(&'c Self) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
            + Send,
        T: Send,
        E: std::fmt::Display + std::fmt::Debug + Send,
    {
        match callback(&self).await {
            Ok(value) => {
                self.commit().await.map_err(TransactionError::Connection)?;
                Ok(value)
            }
            Err(err) => {
                self.rollback()
                    .await
                    .map_err(TransactionError::Connection)?;
                Err(TransactionError::Transaction(err))
            }
        }
    }
}

#[async_trait::async_trait]
impl TransactionSession for Transaction {
    async fn commit(self) -> Result<(), DbErr> {
        self.inner.commit().await
    }

    async fn rollback(self) -> Result<(), DbErr> {
        self.inner.rollback().await
    }
}

/// `ConnectionTrait` for a handle that runs every statement on its field `$field` (the pool's
/// [`crate::Database`], a [`Transaction`]).
macro_rules! delegate_connection {
    ($ty:ty, $field:ident) => {
        #[async_trait::async_trait]
        impl sea_orm::ConnectionTrait for $ty {
            fn get_database_backend(&self) -> sea_orm::DbBackend {
                self.$field.get_database_backend()
            }

            async fn execute_raw(
                &self,
                stmt: sea_orm::Statement,
            ) -> Result<sea_orm::ExecResult, sea_orm::DbErr> {
                self.$field.execute_raw(stmt).await
            }

            async fn execute_unprepared(
                &self,
                sql: &str,
            ) -> Result<sea_orm::ExecResult, sea_orm::DbErr> {
                self.$field.execute_unprepared(sql).await
            }

            async fn query_one_raw(
                &self,
                stmt: sea_orm::Statement,
            ) -> Result<Option<sea_orm::QueryResult>, sea_orm::DbErr> {
                self.$field.query_one_raw(stmt).await
            }

            async fn query_all_raw(
                &self,
                stmt: sea_orm::Statement,
            ) -> Result<Vec<sea_orm::QueryResult>, sea_orm::DbErr> {
                self.$field.query_all_raw(stmt).await
            }

            fn support_returning(&self) -> bool {
                self.$field.support_returning()
            }

            fn is_mock_connection(&self) -> bool {
                self.$field.is_mock_connection()
            }
        }
    };
}
pub(crate) use delegate_connection;

delegate_connection!(Transaction, inner);

/// Nested transactions are savepoints of the same connection: they never queue again (the
/// enclosing transaction holds or takes the lock).
#[async_trait::async_trait]
impl TransactionTrait for Transaction {
    type Transaction = Transaction;

    async fn begin(&self) -> Result<Transaction, DbErr> {
        Ok(Self::new(self.inner.begin().await?, None))
    }

    async fn begin_with_config(
        &self,
        isolation_level: Option<IsolationLevel>,
        access_mode: Option<AccessMode>,
    ) -> Result<Transaction, DbErr> {
        let tx = self
            .inner
            .begin_with_config(isolation_level, access_mode)
            .await?;
        Ok(Self::new(tx, None))
    }

    async fn begin_with_options(&self, options: TransactionOptions) -> Result<Transaction, DbErr> {
        Ok(Self::new(
            self.inner.begin_with_options(options).await?,
            None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_writer_at_a_time_in_arrival_order() {
        let writers = Writers::new();
        let first = writers.turn().await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let waiting: Vec<_> = (0..3)
            .map(|n| {
                let (writers, order) = (writers.clone(), Arc::clone(&order));
                // The test's runtime has one thread: tasks first run, and queue, in this order.
                tokio::spawn(async move {
                    let _turn = writers.turn().await.unwrap();
                    order.lock().unwrap().push(n);
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody writes before the first commits"
        );
        drop(first);
        for task in waiting {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
    }

    /// A writer that waits past its limit fails as "connection unavailable" (a 503 at the edge)
    /// instead of hanging, and leaves the queue as it was: the next writer gets its turn as soon
    /// as the current one ends.
    #[tokio::test]
    async fn a_writer_waiting_too_long_gives_up_and_the_queue_goes_on() {
        let writers = Writers::new();
        let first = writers.turn().await.unwrap();
        let late = writers.turn_within(Duration::from_millis(30)).await;
        assert!(
            matches!(
                late,
                Err(DbErr::ConnectionAcquire(
                    sea_orm::error::ConnAcquireErr::Timeout
                ))
            ),
            "{late:?}"
        );
        drop(first);
        let next = writers.turn_within(Duration::from_millis(30)).await;
        assert!(next.is_ok(), "the queue is free again");
    }
}
