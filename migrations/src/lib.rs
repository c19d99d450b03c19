//! Vellum's database schema, as sea-orm migrations shared by SQLite and PostgreSQL.
//!
//! [`Migrator`] lists every migration in order. The pending ones are applied by `vellum-admin
//! migrate`, by `vellum-server` on start, and by every other `vellum-admin` subcommand before it
//! works on the database (the last two through `vellum_storage::migrate`), so none of them runs
//! against an outdated schema.
//!
//! Migrations are written with the schema builder so both backends share them; a migration branches
//! on the backend only where the SQL truly differs, and says why in a comment. This crate must never
//! depend on other Vellum crates (the schema is history and must not change when domain types do),
//! and a migration that has been released is never edited, only followed by a new one.

pub use sea_orm_migration::{DbErr, MigratorTrait};
use sea_orm_migration::{MigrationTrait, async_trait::async_trait};

mod m20261123_000001_initial_schema;
mod m20261123_000002_item_unique_values;
mod m20261125_000003_file_transform_last_used;
mod m20261126_000004_admin_accounts;
mod m20261126_000005_collection_admin;
mod m20261127_000006_file_manager;
mod m20261127_000007_item_files;
mod m20261128_000008_passkeys;
mod m20261129_000009_realtime;
mod m20261130_000010_team_chat;
mod m20261201_000011_ai_chat;
mod m20261202_000012_jobs_webhooks;

/// The ordered list of Vellum's migrations.
#[derive(Debug, Clone, Copy, Default)]
pub struct Migrator;

#[async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261123_000001_initial_schema::Migration),
            Box::new(m20261123_000002_item_unique_values::Migration),
            Box::new(m20261125_000003_file_transform_last_used::Migration),
            Box::new(m20261126_000004_admin_accounts::Migration),
            Box::new(m20261126_000005_collection_admin::Migration),
            Box::new(m20261127_000006_file_manager::Migration),
            Box::new(m20261127_000007_item_files::Migration),
            Box::new(m20261128_000008_passkeys::Migration),
            Box::new(m20261129_000009_realtime::Migration),
            Box::new(m20261130_000010_team_chat::Migration),
            Box::new(m20261201_000011_ai_chat::Migration),
            Box::new(m20261202_000012_jobs_webhooks::Migration),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm_migration::sea_orm::Database;

    #[tokio::test]
    async fn up_on_a_fresh_sqlite_database_leaves_nothing_pending() {
        let db = Database::connect("sqlite::memory:").await.unwrap();
        Migrator::up(&db, None).await.unwrap();
        assert!(
            Migrator::get_pending_migrations(&db)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
