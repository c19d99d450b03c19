//! AI conversation messages: appended in order (`seq`), read back newest last, truncated from
//! one message on.

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession as _, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, begin_write, now};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// A message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AiMessageRow {
    pub id: String,
    pub conversation_id: String,
    pub role: Role,
    pub content: String,
    pub incomplete: bool,
    /// The names of the files the prompt carried, as JSON (`[{"id", "name"}]`).
    pub attachments: String,
    pub created_at: OffsetDateTime,
}

#[derive(FromQueryResult)]
struct Row {
    id: String,
    conversation_id: String,
    role: String,
    content: String,
    incomplete: bool,
    attachments: String,
    created_at: OffsetDateTime,
}

impl Row {
    fn into_message(self) -> AiMessageRow {
        AiMessageRow {
            id: self.id,
            conversation_id: self.conversation_id,
            role: if self.role == "user" {
                Role::User
            } else {
                Role::Assistant
            },
            content: self.content,
            incomplete: self.incomplete,
            attachments: self.attachments,
            created_at: self.created_at,
        }
    }
}

/// A message to append.
#[derive(Debug, Clone)]
pub struct NewAiMessage<'a> {
    pub conversation_id: &'a str,
    pub role: Role,
    pub content: &'a str,
    pub incomplete: bool,
    pub attachments: &'a str,
}

/// Appends a message and moves the conversation's `updated_at`, in one transaction.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn append<C: TransactionTrait + ConnectionTrait>(
    db: &C,
    message: &NewAiMessage<'_>,
) -> Result<AiMessageRow, StorageError> {
    let row = AiMessageRow {
        id: uuid::Uuid::new_v4().hyphenated().to_string(),
        conversation_id: message.conversation_id.to_owned(),
        role: message.role,
        content: message.content.to_owned(),
        incomplete: message.incomplete,
        attachments: message.attachments.to_owned(),
        created_at: now(),
    };
    let txn = begin_write(db).await?;
    let backend = txn.get_database_backend();
    let mut insert = Sql::new(backend);
    insert
        .push(
            "INSERT INTO ai_messages (id, conversation_id, role, content, incomplete, \
             attachments, created_at) VALUES (",
        )
        .bind(row.id.clone())
        .push(", ")
        .bind(row.conversation_id.clone())
        .push(", ")
        .bind(row.role.as_str())
        .push(", ")
        .bind(row.content.clone())
        .push(", ")
        .bind(row.incomplete)
        .push(", ")
        .bind(row.attachments.clone())
        .push(", ")
        .bind(row.created_at)
        .push(")");
    insert.execute(&txn).await?;
    let mut touch = Sql::new(backend);
    touch
        .push("UPDATE ai_conversations SET updated_at = ")
        .bind(row.created_at)
        .push(" WHERE id = ")
        .bind(row.conversation_id.clone());
    touch.execute(&txn).await?;
    txn.commit().await?;
    Ok(row)
}

/// The conversation's last `limit` messages, oldest first.
///
/// # Errors
/// A database error.
pub async fn recent<C: ConnectionTrait>(
    db: &C,
    conversation_id: &str,
    limit: u64,
) -> Result<Vec<AiMessageRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT id, conversation_id, role, content, incomplete, attachments, created_at \
         FROM ai_messages WHERE conversation_id = ",
    )
    .bind(conversation_id)
    .push(" ORDER BY seq DESC LIMIT ")
    .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    let mut rows: Vec<AiMessageRow> = sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(Row::into_message)
        .collect();
    rows.reverse();
    Ok(rows)
}

/// How many messages the conversation holds.
///
/// # Errors
/// A database error.
pub async fn count<C: ConnectionTrait>(db: &C, conversation_id: &str) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM ai_messages WHERE conversation_id = ")
        .bind(conversation_id);
    sql.count(db).await
}

/// Deletes message `message_id` of the conversation and every later one; answers how many
/// went (0: the message is not in the conversation).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn truncate_from<C: ConnectionTrait>(
    db: &C,
    conversation_id: &str,
    message_id: &str,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM ai_messages WHERE conversation_id = ")
        .bind(conversation_id)
        .push(" AND seq >= (SELECT m.seq FROM ai_messages m WHERE m.conversation_id = ")
        .bind(conversation_id)
        .push(" AND m.id = ")
        .bind(message_id)
        .push(")");
    sql.execute(db).await
}
