//! Team chat (issue 21): threads, their members, per-user read state, messages, reactions,
//! attachments, chunked uploads in progress, and per-collection notification opt-ins.
//!
//! - `chats`: a thread, id a UUID (the spec's `{chat}`). `kind` `item` names one collection item
//!   (`item_id` unique: one thread per item, created on first use) and `direct` names its members
//!   in `chat_members`. `members_key` is the canonical member set of a direct thread
//!   (`g:1,u:2,u:7`, sorted) under a unique index, so two people starting the same conversation
//!   at once get one thread. `last_message_at` orders the hub.
//! - `chat_members`: a direct thread's chosen users and groups, one of `user_id` / `group_id` set
//!   per row. A group's members take part while they are in the group.
//! - `chat_user_states (chat_id, user_id)`: what a user has read (`last_read_id`, the highest
//!   message id seen), whether the user archived the (direct) thread, and whether the user
//!   follows an item thread (posted or was mentioned there) and so counts its unread messages.
//! - `chat_messages`: id a 64-bit sequence (it orders a thread and measures what is unread).
//!   `mentions` holds the mentioned user and group ids as JSON; `reply_to_id` goes null when
//!   the replied-to message is deleted.
//! - `chat_reactions (message_id, user_id, emoji)`: the primary key makes a toggle idempotent.
//! - `chat_attachments`: an uploaded file, first unattached (`message_id` null), then bound to
//!   the message that carries it; its bytes live in the blob store under `storage_key`.
//! - `chat_uploads`: a chunked upload in progress. `received` has one character per chunk ('1'
//!   when stored), so an interrupted client resumes with the chunks still missing; each chunk is
//!   its own object under `storage_key` (a prefix) until the upload completes.
//! - `chat_collection_notify (collection_id, user_id)`: users who follow every item thread of a
//!   collection.
//!
//! Everything cascades from its thread, its collection item and its user, so deleting any of them
//! leaves nothing behind; a deleted author leaves its messages with `user_id` null.
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::{
    big_integer, big_integer_null, big_pk_auto, boolean, integer, integer_null, pk_auto, string,
    string_null, text, timestamp_with_time_zone, timestamp_with_time_zone_null,
};

#[derive(DeriveMigrationName)]
pub struct Migration;

fn name(text: &str) -> Alias {
    Alias::new(text)
}

/// A foreign key from `table.column` to `target.id`.
fn reference(
    table: &str,
    column: &str,
    target: &str,
    on_delete: ForeignKeyAction,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(format!("fk_{table}_{column}"))
        .from(name(table), name(column))
        .to(name(target), name("id"))
        .on_delete(on_delete)
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

const CASCADE: ForeignKeyAction = ForeignKeyAction::Cascade;
const SET_NULL: ForeignKeyAction = ForeignKeyAction::SetNull;

fn tables() -> Vec<TableCreateStatement> {
    vec![
        Table::create()
            .table(name("chats"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(string(name("kind")))
            .col(integer_null(name("collection_id")))
            .col(integer_null(name("item_id")))
            .col(string_null(name("members_key")))
            .col(integer_null(name("created_by")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone_null(name("last_message_at")))
            .foreign_key(&mut reference(
                "chats",
                "collection_id",
                "collections",
                CASCADE,
            ))
            .foreign_key(&mut reference("chats", "item_id", "items", CASCADE))
            .foreign_key(&mut reference("chats", "created_by", "users", SET_NULL))
            .take(),
        Table::create()
            .table(name("chat_members"))
            .if_not_exists()
            .col(pk_auto(name("id")))
            .col(string(name("chat_id")))
            .col(integer_null(name("user_id")))
            .col(integer_null(name("group_id")))
            .foreign_key(&mut reference("chat_members", "chat_id", "chats", CASCADE))
            .foreign_key(&mut reference("chat_members", "user_id", "users", CASCADE))
            .foreign_key(&mut reference(
                "chat_members",
                "group_id",
                "groups",
                CASCADE,
            ))
            .take(),
        Table::create()
            .table(name("chat_user_states"))
            .if_not_exists()
            .col(string(name("chat_id")))
            .col(integer(name("user_id")))
            .col(big_integer(name("last_read_id")).default(0))
            .col(timestamp_with_time_zone_null(name("archived_at")))
            .col(boolean(name("following")).default(false))
            .primary_key(Index::create().col(name("chat_id")).col(name("user_id")))
            .foreign_key(&mut reference(
                "chat_user_states",
                "chat_id",
                "chats",
                CASCADE,
            ))
            .foreign_key(&mut reference(
                "chat_user_states",
                "user_id",
                "users",
                CASCADE,
            ))
            .take(),
        Table::create()
            .table(name("chat_messages"))
            .if_not_exists()
            .col(big_pk_auto(name("id")))
            .col(string(name("chat_id")))
            .col(integer_null(name("user_id")))
            .col(text(name("body")))
            .col(big_integer_null(name("reply_to_id")))
            .col(text(name("mentions")))
            .col(timestamp_with_time_zone_null(name("pinned_at")))
            .col(timestamp_with_time_zone_null(name("edited_at")))
            .col(timestamp_with_time_zone(name("created_at")))
            .foreign_key(&mut reference("chat_messages", "chat_id", "chats", CASCADE))
            .foreign_key(&mut reference(
                "chat_messages",
                "user_id",
                "users",
                SET_NULL,
            ))
            .foreign_key(&mut reference(
                "chat_messages",
                "reply_to_id",
                "chat_messages",
                SET_NULL,
            ))
            .take(),
        Table::create()
            .table(name("chat_reactions"))
            .if_not_exists()
            .col(big_integer(name("message_id")))
            .col(integer(name("user_id")))
            .col(string(name("emoji")))
            .col(timestamp_with_time_zone(name("created_at")))
            .primary_key(
                Index::create()
                    .col(name("message_id"))
                    .col(name("user_id"))
                    .col(name("emoji")),
            )
            .foreign_key(&mut reference(
                "chat_reactions",
                "message_id",
                "chat_messages",
                CASCADE,
            ))
            .foreign_key(&mut reference(
                "chat_reactions",
                "user_id",
                "users",
                CASCADE,
            ))
            .take(),
        Table::create()
            .table(name("chat_attachments"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(string(name("chat_id")))
            .col(big_integer_null(name("message_id")))
            .col(integer_null(name("user_id")))
            .col(string(name("name")))
            .col(string(name("mime_type")))
            .col(big_integer(name("size")))
            .col(string(name("storage_key")))
            .col(timestamp_with_time_zone(name("created_at")))
            .foreign_key(&mut reference(
                "chat_attachments",
                "chat_id",
                "chats",
                CASCADE,
            ))
            .foreign_key(&mut reference(
                "chat_attachments",
                "message_id",
                "chat_messages",
                CASCADE,
            ))
            .foreign_key(&mut reference(
                "chat_attachments",
                "user_id",
                "users",
                SET_NULL,
            ))
            .take(),
        Table::create()
            .table(name("chat_uploads"))
            .if_not_exists()
            .col(string(name("id")).primary_key())
            .col(string(name("chat_id")))
            .col(integer(name("user_id")))
            .col(string(name("name")))
            .col(string(name("mime_type")))
            .col(big_integer(name("size")))
            .col(big_integer(name("chunk_size")))
            .col(text(name("received")))
            .col(string(name("storage_key")))
            .col(timestamp_with_time_zone(name("created_at")))
            .col(timestamp_with_time_zone(name("expires_at")))
            .foreign_key(&mut reference("chat_uploads", "chat_id", "chats", CASCADE))
            .foreign_key(&mut reference("chat_uploads", "user_id", "users", CASCADE))
            .take(),
        Table::create()
            .table(name("chat_collection_notify"))
            .if_not_exists()
            .col(integer(name("collection_id")))
            .col(integer(name("user_id")))
            .primary_key(
                Index::create()
                    .col(name("collection_id"))
                    .col(name("user_id")),
            )
            .foreign_key(&mut reference(
                "chat_collection_notify",
                "collection_id",
                "collections",
                CASCADE,
            ))
            .foreign_key(&mut reference(
                "chat_collection_notify",
                "user_id",
                "users",
                CASCADE,
            ))
            .take(),
    ]
}

fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        index("ux_chats_item", "chats", &["item_id"], true),
        index("ux_chats_members_key", "chats", &["members_key"], true),
        index(
            "ix_chats_kind_last",
            "chats",
            &["kind", "last_message_at"],
            false,
        ),
        index("ix_chats_collection", "chats", &["collection_id"], false),
        index(
            "ux_chat_members_user",
            "chat_members",
            &["chat_id", "user_id"],
            true,
        ),
        index(
            "ux_chat_members_group",
            "chat_members",
            &["chat_id", "group_id"],
            true,
        ),
        index(
            "ix_chat_members_by_user",
            "chat_members",
            &["user_id"],
            false,
        ),
        index(
            "ix_chat_members_by_group",
            "chat_members",
            &["group_id"],
            false,
        ),
        index(
            "ix_chat_user_states_user",
            "chat_user_states",
            &["user_id"],
            false,
        ),
        index(
            "ix_chat_messages_chat",
            "chat_messages",
            &["chat_id", "id"],
            false,
        ),
        index(
            "ix_chat_messages_user",
            "chat_messages",
            &["user_id"],
            false,
        ),
        index(
            "ix_chat_messages_reply",
            "chat_messages",
            &["reply_to_id"],
            false,
        ),
        index(
            "ix_chat_reactions_user",
            "chat_reactions",
            &["user_id"],
            false,
        ),
        index(
            "ix_chat_attachments_message",
            "chat_attachments",
            &["message_id"],
            false,
        ),
        index(
            "ix_chat_attachments_chat",
            "chat_attachments",
            &["chat_id", "created_at"],
            false,
        ),
        index(
            "ix_chat_uploads_expires",
            "chat_uploads",
            &["expires_at"],
            false,
        ),
        index(
            "ix_chat_collection_notify_user",
            "chat_collection_notify",
            &["user_id"],
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
            "chat_collection_notify",
            "chat_uploads",
            "chat_attachments",
            "chat_reactions",
            "chat_messages",
            "chat_user_states",
            "chat_members",
            "chats",
        ] {
            m.drop_table(Table::drop().table(name(table)).if_exists().take())
                .await?;
        }
        Ok(())
    }
}
