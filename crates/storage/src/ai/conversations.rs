//! AI conversations: one user's, listed pinned first, pinned, renamed, deleted one by one or in
//! bulk. Every query names the owner: a conversation of another user is not found.

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::items::Page;
use crate::sql::{Sql, id_param, now};

/// A conversation as stored.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct ConversationRow {
    pub id: String,
    pub user_id: i32,
    pub title: String,
    pub pinned_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "id, user_id, title, pinned_at, created_at, updated_at";

/// Creates a conversation for `user_id`.
///
/// # Errors
/// A database error; [`StorageError::NotFound`] for an id outside the column's range.
#[instrument(skip_all, err, fields(user_id))]
pub async fn create<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    title: &str,
) -> Result<ConversationRow, StorageError> {
    let uid = id_param(user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let row = ConversationRow {
        id: uuid::Uuid::new_v4().hyphenated().to_string(),
        user_id: uid,
        title: title.to_owned(),
        pinned_at: None,
        created_at: now(),
        updated_at: now(),
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO ai_conversations (")
        .push(COLUMNS)
        .push(") VALUES (")
        .bind(row.id.clone())
        .push(", ")
        .bind(uid)
        .push(", ")
        .bind(row.title.clone())
        .push(", NULL, ")
        .bind(row.created_at)
        .push(", ")
        .bind(row.updated_at)
        .push(")");
    sql.execute(db).await?;
    Ok(row)
}

/// The user's conversation `id`, if it is theirs.
///
/// # Errors
/// A database error.
pub async fn find<C: ConnectionTrait>(
    db: &C,
    id: &str,
    user_id: i64,
) -> Result<Option<ConversationRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM ai_conversations WHERE id = ")
        .bind(id)
        .push(" AND user_id = ")
        .bind(uid);
    sql.one_as(db).await
}

/// How many conversations the user has.
///
/// # Errors
/// A database error.
pub async fn count<C: ConnectionTrait>(db: &C, user_id: i64) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM ai_conversations WHERE user_id = ")
        .bind(id_param(user_id).unwrap_or(0));
    sql.count(db).await
}

/// A page of the user's conversations: pinned first (most recently pinned first), then by last
/// activity.
///
/// # Errors
/// A database error.
pub async fn list<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    page: u64,
    per_page: u64,
) -> Result<Page<ConversationRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(Page::new(Vec::new(), 0, page, per_page));
    };
    let total = count(db, user_id).await?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM ai_conversations WHERE user_id = ")
        .bind(uid)
        .push(
            " ORDER BY CASE WHEN pinned_at IS NULL THEN 1 ELSE 0 END, pinned_at DESC, \
             updated_at DESC, id LIMIT ",
        )
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let rows = sql.all_as(db).await?;
    Ok(Page::new(rows, total, page, per_page))
}

/// Pins the conversation (now) or unpins it; answers it as it is afterwards.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn toggle_pin<C: ConnectionTrait>(
    db: &C,
    id: &str,
    user_id: i64,
) -> Result<Option<ConversationRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE ai_conversations SET pinned_at = CASE WHEN pinned_at IS NULL THEN ")
        .bind(now())
        .push(" ELSE NULL END WHERE id = ")
        .bind(id)
        .push(" AND user_id = ")
        .bind(uid);
    if sql.execute(db).await? == 0 {
        return Ok(None);
    }
    find(db, id, user_id).await
}

/// Renames the conversation; answers it as it is afterwards.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn rename<C: ConnectionTrait>(
    db: &C,
    id: &str,
    user_id: i64,
    title: &str,
) -> Result<Option<ConversationRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE ai_conversations SET title = ")
        .bind(title)
        .push(" WHERE id = ")
        .bind(id)
        .push(" AND user_id = ")
        .bind(uid);
    if sql.execute(db).await? == 0 {
        return Ok(None);
    }
    find(db, id, user_id).await
}

/// Deletes the user's conversations among `ids` (their messages cascade); answers how many went.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn delete<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    ids: &[String],
) -> Result<u64, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(0);
    };
    if ids.is_empty() {
        return Ok(0);
    }
    let backend = db.get_database_backend();
    // Messages first: SQLite enforces the cascade only with foreign keys on, and the count must
    // not depend on it.
    let mut messages = Sql::new(backend);
    messages
        .push("DELETE FROM ai_messages WHERE conversation_id IN (SELECT id FROM ai_conversations WHERE user_id = ")
        .bind(uid)
        .push(" AND id IN ");
    messages.bind_list(ids.iter().cloned());
    messages.push(")");
    messages.execute(db).await?;
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM ai_conversations WHERE user_id = ")
        .bind(uid)
        .push(" AND id IN ");
    sql.bind_list(ids.iter().cloned());
    sql.execute(db).await
}

/// Which of `ids` are the user's conversations.
///
/// # Errors
/// A database error.
pub async fn owned<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    ids: &[String],
) -> Result<Vec<String>, StorageError> {
    #[derive(FromQueryResult)]
    struct Id {
        id: String,
    }
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM ai_conversations WHERE user_id = ")
        .bind(uid)
        .push(" AND id IN ");
    sql.bind_list(ids.iter().cloned());
    Ok(sql
        .all_as::<Id, _>(db)
        .await?
        .into_iter()
        .map(|row| row.id)
        .collect())
}
