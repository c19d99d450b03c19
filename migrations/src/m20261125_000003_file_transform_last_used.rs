//! `file_transforms.last_used_at`: when a stored transform output was last saved or served, so the
//! derivatives of one original can be kept under a byte cap by evicting the least recently used
//! (issue 27: before this, every distinct output anyone asked for was stored for good).
//!
//! The column is NOT NULL with a constant default of the Unix epoch. SQLite can only add a NOT
//! NULL column with a constant default (`CURRENT_TIMESTAMP` is refused in `ADD COLUMN`), so the
//! default is the same constant on both backends; it also means a row written by a server that
//! predates this column (a rolling upgrade) counts as never used and is the first to be evicted.
//! Existing rows are then backfilled with their `created_at`: the best guess of their last use.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::timestamp_with_time_zone;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum FileTransforms {
    Table,
    LastUsedAt,
    CreatedAt,
}

/// "Never used": the oldest possible last use, in the RFC 3339 form the SQLite driver writes
/// timestamps in (so it compares as text with them), and a literal PostgreSQL casts.
const NEVER: &str = "1970-01-01T00:00:00Z";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(FileTransforms::Table)
                .add_column(timestamp_with_time_zone(FileTransforms::LastUsedAt).default(NEVER))
                .take(),
        )
        .await?;
        let backfill = Query::update()
            .table(FileTransforms::Table)
            .value(
                FileTransforms::LastUsedAt,
                Expr::col(FileTransforms::CreatedAt),
            )
            .take();
        m.exec_stmt(backfill).await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(FileTransforms::Table)
                .drop_column(FileTransforms::LastUsedAt)
                .take(),
        )
        .await
    }
}
