//! Vellum's persistence: sea-orm repositories on SQLite and PostgreSQL, and the blob store.
//!
//! Today it opens connections, applies the schema ([`migrate`]) and gives tests a fresh database
//! on either backend (`testing::TestDb`, feature `testing`). Planned (issue 5): entities and their mapping to and
//! from `vellum-domain` types (`From` / `TryFrom`, owned here), repositories whose write paths take a
//! capability issued by `vellum-policy`, the `unique` checks the domain crate reports, compilation
//! of policy filters to SQL, and the local blob store under `VELLUM_FILES_DIR`.
//!
//! This crate must never know about HTTP (no actix-web, no status codes) and must never decide
//! access on its own: it enforces the decisions `vellum-policy` hands it. Every multi-row write runs
//! in one transaction.

use sea_orm::{Database, DatabaseConnection, DbErr};
use vellum_migration::{Migrator, MigratorTrait};

#[cfg(feature = "testing")]
pub mod testing;

/// Everything that can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The database could not be reached or the URL was not understood. The URL itself is left out
    /// of the message on purpose: it may carry a password.
    #[error("could not connect to the database")]
    Connect(#[source] DbErr),
    /// Applying the schema failed.
    #[error("could not migrate the database")]
    Migrate(#[source] DbErr),
}

/// Applies every pending migration (idempotent: nothing happens when the schema is current).
///
/// # Errors
/// [`StorageError::Migrate`] when a migration fails; it runs in its own transaction where the
/// backend supports transactional DDL (PostgreSQL), so a failure leaves the previous schema.
pub async fn migrate(db: &DatabaseConnection) -> Result<(), StorageError> {
    Migrator::up(db, None).await.map_err(StorageError::Migrate)
}

/// Opens a connection pool to `url`: `sqlite://…` (the embedded default) or `postgres://…`.
///
/// # Errors
///
/// [`StorageError::Connect`] when the URL is malformed, names an unsupported backend, or the
/// database does not answer.
pub async fn connect(url: &str) -> Result<DatabaseConnection, StorageError> {
    Database::connect(url).await.map_err(StorageError::Connect)
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
    async fn unknown_scheme_is_a_connect_error() {
        let err = connect("nosuchdb://localhost/x").await.unwrap_err();
        assert!(matches!(err, StorageError::Connect(_)), "{err:?}");
    }
}
