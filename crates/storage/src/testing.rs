//! A fresh, migrated database per test, on SQLite by default and on PostgreSQL when
//! `VELLUM_TEST_POSTGRES_URL` is set: the same tests then run on both backends, never share state
//! and need no `#[serial]`.
//!
//! SQLite databases live in a temporary directory removed on drop. PostgreSQL gets a database
//! named `vellum_test_<uuid>` created from the given URL and dropped (`WITH (FORCE)`) on drop.

use sea_orm::{ConnectionTrait, DbBackend};

use crate::{Database, StorageError, connect, migrate};

/// Environment variable naming a PostgreSQL server URL for the tests.
pub const POSTGRES_ENV: &str = "VELLUM_TEST_POSTGRES_URL";

/// A test database; see the module docs.
#[derive(Debug)]
pub struct TestDb {
    pub conn: Database,
    url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

impl TestDb {
    /// A fresh migrated database on the backend the environment selects.
    ///
    /// # Errors
    /// When the database cannot be created, reached or migrated.
    pub async fn new() -> Result<Self, StorageError> {
        let db = Self::empty().await?;
        migrate(&db.conn).await?;
        Ok(db)
    }

    /// A fresh database on the backend the environment selects, not migrated: for tests of
    /// binaries that must migrate it themselves (pass them [`TestDb::url`]).
    ///
    /// # Errors
    /// When the database cannot be created or reached.
    pub async fn empty() -> Result<Self, StorageError> {
        match std::env::var(POSTGRES_ENV) {
            Ok(url) if !url.trim().is_empty() => Self::postgres_empty(url.trim()).await,
            _ => Self::sqlite_empty().await,
        }
    }

    /// The database's URL, for a process under test.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A fresh migrated SQLite database in a temporary directory.
    ///
    /// # Errors
    /// When the directory or database cannot be created or migrated.
    pub async fn sqlite() -> Result<Self, StorageError> {
        let db = Self::sqlite_empty().await?;
        migrate(&db.conn).await?;
        Ok(db)
    }

    async fn sqlite_empty() -> Result<Self, StorageError> {
        let dir = tempfile::tempdir()
            .map_err(|e| StorageError::Connect(sea_orm::DbErr::Custom(e.to_string())))?;
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("test.db").display());
        let conn = connect(&url).await?;
        Ok(Self {
            conn,
            url,
            cleanup: Cleanup::Sqlite(dir),
        })
    }

    /// A fresh migrated database on the PostgreSQL server at `admin_url`.
    ///
    /// # Errors
    /// When the server cannot be reached or the database cannot be created or migrated.
    pub async fn postgres(admin_url: &str) -> Result<Self, StorageError> {
        let db = Self::postgres_empty(admin_url).await?;
        migrate(&db.conn).await?;
        Ok(db)
    }

    async fn postgres_empty(admin_url: &str) -> Result<Self, StorageError> {
        let name = format!("vellum_test_{}", uuid::Uuid::new_v4().simple());
        let admin = connect(admin_url).await?;
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .map_err(StorageError::Connect)?;
        admin.close().await?;
        let mut url = url::Url::parse(admin_url)
            .map_err(|e| StorageError::Connect(sea_orm::DbErr::Custom(e.to_string())))?;
        url.set_path(&format!("/{name}"));
        let conn = connect(url.as_str()).await?;
        Ok(Self {
            conn,
            url: url.to_string(),
            cleanup: Cleanup::Postgres {
                admin_url: admin_url.to_owned(),
                name,
            },
        })
    }

    #[must_use]
    pub fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Cleanup::Postgres { admin_url, name } = &self.cleanup {
            // Drop runs outside any runtime guarantee, so the async cleanup gets its own thread
            // and runtime; FORCE ends the pool's connections still open.
            let (admin_url, name) = (admin_url.clone(), name.clone());
            let handle = std::thread::spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    if let Ok(admin) = connect(&admin_url).await {
                        let _ = admin
                            .execute_unprepared(&format!(
                                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                            ))
                            .await;
                        let _ = admin.close().await;
                    }
                });
            });
            let _ = handle.join();
        }
    }
}
