//! AI chat (issue 22): a user's conversations with the model, their messages, short-lived
//! attachments, and the per-day prompt count behind `daily_prompt_limit`.
//!
//! - `ai_conversations`: id a UUID (the spec's `{conversation}`), owned by one user (cascade:
//!   a user's conversations go with the user). `pinned_at` pins it to the top of the list.
//! - `ai_messages`: id a UUID; `seq` (a 64-bit sequence) orders a conversation, so "truncate from
//!   a message" is `seq >= that one's`. `role` is `user` or `assistant`; `incomplete` marks an
//!   answer cut short (the client or the provider went away). `attachments` holds the names of
//!   the files a prompt carried, as JSON.
//! - `ai_attachments`: an uploaded file's extracted text (not its bytes: the model only ever
//!   reads text), owned by its uploader, gone after `expires_at` (24 hours).
//! - `ai_prompt_days (user_id, day)`: prompts counted per user and UTC day, incremented in one
//!   conditional upsert so replicas cannot both let the last allowed prompt through twice, and
//!   so deleting conversations does not give prompts back.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_pk_auto, boolean, integer, string, text, timestamp_with_time_zone,
    timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

fn name(text: &str) -> Alias {
    Alias::new(text)
}

fn cascade_to(table: &str, column: &str, target: &str) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(format!("fk_{table}_{column}"))
        .from(name(table), name(column))
        .to(name(target), name("id"))
        .on_delete(ForeignKeyAction::Cascade)
        .take()
}

fn index(index_name: &str, table: &str, cols: &[&str], unique: bool) -> IndexCreateStatement {
    let mut stmt = Index::create()
        .name(index_name)
        .table(name(table))
        .if_not_exists()
        .take();
    if unique {
        stmt.unique();
    }
    for col in cols {
        stmt.col(name(col));
    }
    stmt
}

fn tables() -> Vec<TableCreateStatement> {
    vec![
        Table::create()
            .table(name("ai_conversations"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(integer(name("user_id")))
            .col(string(name("title")))
            .col(timestamp_with_time_zone_null(name("pinned_at")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone(name("updated_at")))
            .foreign_key(&mut cascade_to("ai_conversations", "user_id", "users"))
            .take(),
        Table::create()
            .table(name("ai_messages"))
            .if_not_exists()
            .col(big_pk_auto(name("seq")))
            .col(string(name("id")))
            .col(string(name("conversation_id")))
            .col(string(name("role")))
            .col(text(name("content")))
            .col(boolean(name("incomplete")).default(false))
            .col(text(name("attachments")))
            .col(timestamp_with_time_zone(name("created_at")))
            .foreign_key(&mut cascade_to(
                "ai_messages",
                "conversation_id",
                "ai_conversations",
            ))
            .take(),
        Table::create()
            .table(name("ai_attachments"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(integer(name("user_id")))
            .col(string(name("name")))
            .col(string(name("extension")))
            .col(big_integer(name("size")))
            .col(text(name("content")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone(name("expires_at")))
            .foreign_key(&mut cascade_to("ai_attachments", "user_id", "users"))
            .take(),
        Table::create()
            .table(name("ai_prompt_days"))
            .if_not_exists()
            .col(integer(name("user_id")))
            .col(string(name("day")))
            .col(integer(name("prompts")))
            .primary_key(Index::create().col(name("user_id")).col(name("day")))
            .foreign_key(&mut cascade_to("ai_prompt_days", "user_id", "users"))
            .take(),
    ]
}

fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        index(
            "ix_ai_conversations_user",
            "ai_conversations",
            &["user_id", "pinned_at", "updated_at"],
            false,
        ),
        index("ux_ai_messages_id", "ai_messages", &["id"], true),
        index(
            "ix_ai_messages_conversation",
            "ai_messages",
            &["conversation_id", "seq"],
            false,
        ),
        index(
            "ix_ai_attachments_user",
            "ai_attachments",
            &["user_id"],
            false,
        ),
        index(
            "ix_ai_attachments_expires",
            "ai_attachments",
            &["expires_at"],
            false,
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in tables() {
            m.create_table(table).await?;
        }
        for index in indexes() {
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            "ai_prompt_days",
            "ai_attachments",
            "ai_messages",
            "ai_conversations",
        ] {
            m.drop_table(Table::drop().table(name(table)).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
