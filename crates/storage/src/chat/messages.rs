//! Chat messages: post (with its attachments, in one transaction that also moves the thread's
//! activity, the author's read mark and the recipients' archive), read a page, edit, delete,
//! pin, and reactions.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use super::attachments::{AttachmentRow, attachments_of};
use super::{Person, at, states};
use crate::StorageError;
use crate::sql::{Sql, begin_write, id_param};

/// A message to post.
#[derive(Debug, Clone)]
pub struct NewMessage<'a> {
    pub chat_id: &'a str,
    pub user_id: i64,
    pub body: &'a str,
    pub reply_to_id: Option<i64>,
    /// The mentioned user and group ids as JSON (`{"users": [...], "groups": [...]}`).
    pub mentions: &'a str,
    /// Uploaded attachments of the author in this thread, not yet sent.
    pub attachment_ids: &'a [String],
    /// Users who follow the thread from now on (item threads: the author and the mentioned).
    pub follow: &'a [i64],
    /// The author's name, for the answer (read from the account already).
    pub author_name: &'a str,
    /// The activity entry (log, event, properties) recorded in the same transaction, with the
    /// new message as its subject: one commit for the message and its audit line.
    pub activity: Option<(&'a str, &'a str, serde_json::Value)>,
}

/// One emoji's reactions on a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactionSummary {
    pub emoji: String,
    /// Who reacted, by id, oldest first.
    pub user_ids: Vec<i64>,
}

/// The message a reply quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quoted {
    pub id: i64,
    pub author: Option<Person>,
    pub body: String,
}

/// A message as stored, with its author, the quoted message, reactions and attachments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub id: i64,
    pub chat_id: String,
    pub author: Option<Person>,
    pub body: String,
    pub reply_to: Option<Quoted>,
    /// JSON text as written by [`NewMessage::mentions`].
    pub mentions: String,
    pub pinned_at: Option<OffsetDateTime>,
    pub edited_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub reactions: Vec<ReactionSummary>,
    pub attachments: Vec<AttachmentRow>,
}

#[derive(FromQueryResult)]
struct Row {
    id: i64,
    chat_id: String,
    user_id: Option<i32>,
    author_name: Option<String>,
    body: String,
    reply_to_id: Option<i64>,
    reply_user_id: Option<i32>,
    reply_author_name: Option<String>,
    reply_body: Option<String>,
    mentions: String,
    pinned_at: Option<OffsetDateTime>,
    edited_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
}

const SELECT: &str = "SELECT m.id, m.chat_id, m.user_id, u.name AS author_name, m.body, \
     m.reply_to_id, r.user_id AS reply_user_id, ru.name AS reply_author_name, r.body AS reply_body, \
     m.mentions, m.pinned_at, m.edited_at, m.created_at FROM chat_messages m \
     LEFT JOIN users u ON u.id = m.user_id LEFT JOIN chat_messages r ON r.id = m.reply_to_id \
     LEFT JOIN users ru ON ru.id = r.user_id";

fn person(id: Option<i32>, name: Option<String>) -> Option<Person> {
    Some(Person {
        id: i64::from(id?),
        name: name.unwrap_or_default(),
    })
}

/// Reads the rows of `sql` (a [`SELECT`]) with their reactions and attachments.
async fn complete<C: ConnectionTrait>(db: &C, sql: Sql) -> Result<Vec<MessageRow>, StorageError> {
    let rows = sql.all_as::<Row, _>(db).await?;
    let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
    let mut reactions = reactions_of(db, &ids).await?;
    let mut attachments = attachments_of(db, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| MessageRow {
            reply_to: row.reply_to_id.map(|id| Quoted {
                id,
                author: person(row.reply_user_id, row.reply_author_name),
                body: row.reply_body.unwrap_or_default(),
            }),
            reactions: reactions.remove(&row.id).unwrap_or_default(),
            attachments: attachments.remove(&row.id).unwrap_or_default(),
            id: row.id,
            chat_id: row.chat_id,
            author: person(row.user_id, row.author_name),
            body: row.body,
            mentions: row.mentions,
            pinned_at: row.pinned_at,
            edited_at: row.edited_at,
            created_at: row.created_at,
        })
        .collect())
}

async fn reactions_of<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<HashMap<i64, Vec<ReactionSummary>>, StorageError> {
    #[derive(FromQueryResult)]
    struct Reaction {
        message_id: i64,
        user_id: i32,
        emoji: String,
    }
    let mut found: HashMap<i64, Vec<ReactionSummary>> = HashMap::new();
    if ids.is_empty() {
        return Ok(found);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT message_id, user_id, emoji FROM chat_reactions WHERE message_id IN ");
    sql.bind_list(ids.iter().copied());
    sql.push(" ORDER BY message_id, created_at, user_id");
    for reaction in sql.all_as::<Reaction, _>(db).await? {
        let list = found.entry(reaction.message_id).or_default();
        let user = i64::from(reaction.user_id);
        match list.iter_mut().find(|r| r.emoji == reaction.emoji) {
            Some(summary) => summary.user_ids.push(user),
            None => list.push(ReactionSummary {
                emoji: reaction.emoji,
                user_ids: vec![user],
            }),
        }
    }
    Ok(found)
}

/// Posts a message: inserts it, binds its attachments, moves the thread's `last_message_at`,
/// marks it read for its author, makes `follow` follow the thread and brings the thread back
/// from the archive of everyone else. All or nothing.
///
/// # Errors
/// [`StorageError::Conflict`] on `reply_to_id` when the quoted message is not in this thread,
/// on `attachment_ids` when an attachment is not the author's unsent upload in this thread;
/// a database error.
#[instrument(skip_all, err, fields(user_id = new.user_id))]
pub async fn insert_message<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    new: &NewMessage<'_>,
    now: OffsetDateTime,
) -> Result<MessageRow, StorageError> {
    #[derive(FromQueryResult)]
    struct NewId {
        id: i64,
    }
    let uid = id_param(new.user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let txn = begin_write(db).await?;
    if let Some(reply) = new.reply_to_id
        && find_message(&txn, new.chat_id, reply).await?.is_none()
    {
        return Err(StorageError::conflict_on(
            "reply_to_id",
            "The message replied to is not in this conversation.",
        ));
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push(
        "INSERT INTO chat_messages (chat_id, user_id, body, reply_to_id, mentions, created_at) \
         VALUES (",
    )
    .bind(new.chat_id)
    .push(", ")
    .bind(uid)
    .push(", ")
    .bind(new.body)
    .push(", ")
    .bind(new.reply_to_id)
    .push(", ")
    .bind(new.mentions)
    .push(", ")
    .bind(at(now))
    .push(") RETURNING id");
    let id = sql
        .one_as::<NewId, _>(&txn)
        .await?
        .ok_or_else(|| StorageError::corrupt("INSERT returned no row"))?
        .id;
    if !new.attachment_ids.is_empty() {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("UPDATE chat_attachments SET message_id = ")
            .bind(id)
            .push(" WHERE message_id IS NULL AND chat_id = ")
            .bind(new.chat_id)
            .push(" AND user_id = ")
            .bind(uid)
            .push(" AND id IN ");
        sql.bind_list(new.attachment_ids.iter().map(String::as_str));
        if usize::try_from(sql.execute(&txn).await?).ok() != Some(new.attachment_ids.len()) {
            return Err(StorageError::conflict_on(
                "attachment_ids",
                "An attachment is unknown, not yours, or already sent.",
            ));
        }
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("UPDATE chats SET last_message_at = ")
        .bind(at(now))
        .push(" WHERE id = ")
        .bind(new.chat_id);
    sql.execute(&txn).await?;
    states::mark_read(&txn, new.chat_id, new.user_id, id).await?;
    states::follow(&txn, new.chat_id, new.follow).await?;
    states::unarchive_for_others(&txn, new.chat_id, new.user_id).await?;
    if let Some((log_name, event, properties)) = &new.activity {
        crate::activity::record(
            &txn,
            &crate::activity::NewActivity {
                user_id: Some(new.user_id),
                log_name,
                event,
                subject_type: Some("chat_message"),
                subject_id: Some(id.to_string()),
                properties: properties.clone(),
            },
        )
        .await?;
    }
    // A plain message is answered from what was written; a reply or attachments are read back
    // (the quote and the attachment rows).
    let message = if new.reply_to_id.is_none() && new.attachment_ids.is_empty() {
        MessageRow {
            id,
            chat_id: new.chat_id.to_owned(),
            author: Some(Person {
                id: new.user_id,
                name: new.author_name.to_owned(),
            }),
            body: new.body.to_owned(),
            reply_to: None,
            mentions: new.mentions.to_owned(),
            pinned_at: None,
            edited_at: None,
            created_at: at(now),
            reactions: Vec::new(),
            attachments: Vec::new(),
        }
    } else {
        find_message(&txn, new.chat_id, id)
            .await?
            .ok_or_else(|| StorageError::corrupt("a message just posted cannot be read"))?
    };
    txn.commit().await?;
    Ok(message)
}

/// Message `id` of thread `chat_id`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(id))]
pub async fn find_message<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: i64,
) -> Result<Option<MessageRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(SELECT)
        .push(" WHERE m.chat_id = ")
        .bind(chat_id)
        .push(" AND m.id = ")
        .bind(id);
    Ok(complete(db, sql).await?.pop())
}

/// At most `limit` messages of the thread before message `before` (the newest without it),
/// oldest first; `pinned` keeps pinned messages only.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(before, limit))]
pub async fn list_messages<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    before: Option<i64>,
    limit: u64,
    pinned: bool,
) -> Result<Vec<MessageRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(SELECT).push(" WHERE m.chat_id = ").bind(chat_id);
    if let Some(before) = before {
        sql.push(" AND m.id < ").bind(before);
    }
    if pinned {
        sql.push(" AND m.pinned_at IS NOT NULL");
    }
    sql.push(" ORDER BY m.id DESC LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    let mut messages = complete(db, sql).await?;
    messages.reverse();
    Ok(messages)
}

/// The id of the thread's newest message (0 without messages).
///
/// # Errors
/// A database error.
pub async fn latest_id<C: ConnectionTrait>(db: &C, chat_id: &str) -> Result<i64, StorageError> {
    #[derive(FromQueryResult)]
    struct Latest {
        id: Option<i64>,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT MAX(id) AS id FROM chat_messages WHERE chat_id = ")
        .bind(chat_id);
    Ok(sql
        .one_as::<Latest, _>(db)
        .await?
        .and_then(|row| row.id)
        .unwrap_or(0))
}

/// Replaces a message's body and mentions and stamps it edited.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown message; a database error.
#[instrument(skip_all, err, fields(id))]
pub async fn update_message<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: i64,
    body: &str,
    mentions: &str,
    now: OffsetDateTime,
) -> Result<MessageRow, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE chat_messages SET body = ")
        .bind(body)
        .push(", mentions = ")
        .bind(mentions)
        .push(", edited_at = ")
        .bind(at(now))
        .push(" WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND id = ")
        .bind(id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "message" });
    }
    find_message(db, chat_id, id)
        .await?
        .ok_or(StorageError::NotFound { what: "message" })
}

/// Deletes a message with its reactions and attachment rows (replies keep their text and lose
/// the quote). The caller removes the attachments' bytes, read from the message first.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown message; a database error.
#[instrument(skip_all, err, fields(id))]
pub async fn delete_message<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: i64,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM chat_messages WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND id = ")
        .bind(id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "message" });
    }
    Ok(())
}

/// Pins the message (now) or unpins it.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown message; a database error.
#[instrument(skip_all, err, fields(id))]
pub async fn set_pinned<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: i64,
    pinned_at: Option<OffsetDateTime>,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE chat_messages SET pinned_at = ")
        .bind(pinned_at.map(at))
        .push(" WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND id = ")
        .bind(id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "message" });
    }
    Ok(())
}

/// Adds the user's `emoji` reaction to the message, or takes it back when present; `true` when
/// added. A user holds at most `max_per_user` distinct reactions on one message.
///
/// # Errors
/// [`StorageError::Conflict`] on `emoji` past `max_per_user`; a database error.
#[instrument(skip_all, err, fields(message_id, user_id))]
pub async fn toggle_reaction<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    message_id: i64,
    user_id: i64,
    emoji: &str,
    max_per_user: u64,
    now: OffsetDateTime,
) -> Result<bool, StorageError> {
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let txn = begin_write(db).await?;
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("DELETE FROM chat_reactions WHERE message_id = ")
        .bind(message_id)
        .push(" AND user_id = ")
        .bind(uid)
        .push(" AND emoji = ")
        .bind(emoji);
    if sql.execute(&txn).await? > 0 {
        txn.commit().await?;
        return Ok(false);
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM chat_reactions WHERE message_id = ")
        .bind(message_id)
        .push(" AND user_id = ")
        .bind(uid);
    if sql.count(&txn).await? >= max_per_user {
        return Err(StorageError::conflict_on(
            "emoji",
            format!("A message takes at most {max_per_user} different reactions from one person."),
        ));
    }
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("INSERT INTO chat_reactions (message_id, user_id, emoji, created_at) VALUES (")
        .bind(message_id)
        .push(", ")
        .bind(uid)
        .push(", ")
        .bind(emoji)
        .push(", ")
        .bind(at(now))
        .push(") ON CONFLICT DO NOTHING");
    sql.execute(&txn).await?;
    txn.commit().await?;
    Ok(true)
}
