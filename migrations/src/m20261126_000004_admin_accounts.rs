//! The admin app's accounts (issue 17): users gain a password hash, a verified flag and soft
//! delete; groups gain soft delete; sign-in sessions, mailed one-time codes and the activity log
//! get their tables. Passkeys (issue 19) will add a table of their own keyed by user.
//!
//! Email uniqueness becomes case-insensitive through a unique index on `lower(email)` (an
//! expression index, which both SQLite and PostgreSQL support), so `Ada@x.org` and `ada@x.org`
//! cannot both exist while the address keeps the case it was entered in. The statement is the
//! same text on both backends, written raw because the schema builder has no expression indexes.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    integer, integer_null, json_binary, pk_auto, string, string_null, text_null,
    timestamp_with_time_zone, timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    PasswordHash,
    EmailVerifiedAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Groups {
    Table,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    /// SHA-256 (hex) of the cookie's token: the token itself is never stored.
    Id,
    UserId,
    CreatedAt,
    LastSeenAt,
    ExpiresAt,
    Ip,
    UserAgent,
}

#[derive(DeriveIden)]
enum LoginCodes {
    Table,
    UserId,
    CodeHash,
    Attempts,
    ExpiresAt,
    CreatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum ActivityLog {
    Table,
    Id,
    UserId,
    LogName,
    Event,
    SubjectType,
    SubjectId,
    Properties,
    CreatedAt,
}

const EMAIL_INDEX: &str =
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_users_email_lower ON users (lower(email))";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    #[allow(clippy::too_many_lines)]
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        use ForeignKeyAction::{Cascade, SetNull};
        // One column per statement: SQLite's ALTER TABLE adds one column at a time.
        for col in [
            text_null(Users::PasswordHash),
            timestamp_with_time_zone_null(Users::EmailVerifiedAt),
            timestamp_with_time_zone_null(Users::DeletedAt),
        ] {
            m.alter_table(Table::alter().table(Users::Table).add_column(col).take())
                .await?;
        }
        m.alter_table(
            Table::alter()
                .table(Groups::Table)
                .add_column(timestamp_with_time_zone_null(Groups::DeletedAt))
                .take(),
        )
        .await?;
        m.get_connection().execute_unprepared(EMAIL_INDEX).await?;

        m.create_table(
            Table::create()
                .table(Sessions::Table)
                .if_not_exists()
                .col(string(Sessions::Id).primary_key())
                .col(integer(Sessions::UserId))
                .col(timestamp_with_time_zone(Sessions::CreatedAt))
                .col(timestamp_with_time_zone(Sessions::LastSeenAt))
                .col(timestamp_with_time_zone(Sessions::ExpiresAt))
                .col(string_null(Sessions::Ip))
                .col(string_null(Sessions::UserAgent))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_sessions_user")
                        .from(Sessions::Table, Sessions::UserId)
                        .to(Users::Table, Users::Id)
                        .on_delete(Cascade),
                )
                .take(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_sessions_user")
                .table(Sessions::Table)
                .col(Sessions::UserId)
                .if_not_exists()
                .take(),
        )
        .await?;

        // One live code per user: asking again replaces it.
        m.create_table(
            Table::create()
                .table(LoginCodes::Table)
                .if_not_exists()
                .col(integer(LoginCodes::UserId).primary_key())
                .col(string(LoginCodes::CodeHash))
                .col(integer(LoginCodes::Attempts).default(0))
                .col(timestamp_with_time_zone(LoginCodes::ExpiresAt))
                .col(timestamp_with_time_zone(LoginCodes::CreatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_login_codes_user")
                        .from(LoginCodes::Table, LoginCodes::UserId)
                        .to(Users::Table, Users::Id)
                        .on_delete(Cascade),
                )
                .take(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(ActivityLog::Table)
                .if_not_exists()
                .col(pk_auto(ActivityLog::Id))
                // Kept when the user is force-deleted: the entry stays, without its author.
                .col(integer_null(ActivityLog::UserId))
                .col(string(ActivityLog::LogName))
                .col(string(ActivityLog::Event))
                .col(string_null(ActivityLog::SubjectType))
                .col(string_null(ActivityLog::SubjectId))
                .col(json_binary(ActivityLog::Properties))
                .col(timestamp_with_time_zone(ActivityLog::CreatedAt))
                .foreign_key(
                    ForeignKey::create()
                        .name("fk_activity_log_user")
                        .from(ActivityLog::Table, ActivityLog::UserId)
                        .to(Users::Table, Users::Id)
                        .on_delete(SetNull),
                )
                .take(),
        )
        .await?;
        for (name, cols) in [
            (
                "idx_activity_log_user",
                &[ActivityLog::UserId, ActivityLog::Id][..],
            ),
            (
                "idx_activity_log_subject",
                &[
                    ActivityLog::SubjectType,
                    ActivityLog::SubjectId,
                    ActivityLog::Id,
                ][..],
            ),
        ] {
            let mut index = Index::create()
                .name(name)
                .table(ActivityLog::Table)
                .if_not_exists()
                .take();
            for col in cols {
                index.col(*col);
            }
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ActivityLog::Table.into_iden(),
            LoginCodes::Table.into_iden(),
            Sessions::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).if_exists().take())
                .await?;
        }
        m.get_connection()
            .execute_unprepared("DROP INDEX IF EXISTS idx_users_email_lower")
            .await?;
        m.alter_table(
            Table::alter()
                .table(Groups::Table)
                .drop_column(Groups::DeletedAt)
                .take(),
        )
        .await?;
        for col in [
            Users::PasswordHash,
            Users::EmailVerifiedAt,
            Users::DeletedAt,
        ] {
            m.alter_table(Table::alter().table(Users::Table).drop_column(col).take())
                .await?;
        }
        Ok(())
    }
}
