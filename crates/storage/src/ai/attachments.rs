//! AI attachments: the text extracted from an uploaded file, owned by its uploader, gone after
//! its lifetime.

use sea_orm::{ConnectionTrait, FromQueryResult};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param, now};

/// An attachment as stored.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct AiAttachmentRow {
    pub id: String,
    pub user_id: i32,
    pub name: String,
    pub extension: String,
    pub size: i64,
    pub content: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

/// An attachment to store.
#[derive(Debug, Clone)]
pub struct NewAiAttachment<'a> {
    pub user_id: i64,
    pub name: &'a str,
    pub extension: &'a str,
    pub size: u64,
    pub content: &'a str,
    pub expires_at: OffsetDateTime,
}

/// Stores an attachment.
///
/// # Errors
/// A database error; [`StorageError::NotFound`] for a user id outside the column's range.
#[instrument(skip_all, err)]
pub async fn insert<C: ConnectionTrait>(
    db: &C,
    new: &NewAiAttachment<'_>,
) -> Result<AiAttachmentRow, StorageError> {
    let uid = id_param(new.user_id).ok_or(StorageError::NotFound { what: "user" })?;
    let row = AiAttachmentRow {
        id: uuid::Uuid::new_v4().hyphenated().to_string(),
        user_id: uid,
        name: new.name.to_owned(),
        extension: new.extension.to_owned(),
        size: i64::try_from(new.size).unwrap_or(i64::MAX),
        content: new.content.to_owned(),
        created_at: now(),
        expires_at: crate::sql::stamp(new.expires_at),
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO ai_attachments (id, user_id, name, extension, size, content, created_at, \
         expires_at) VALUES (",
    )
    .bind(row.id.clone())
    .push(", ")
    .bind(uid)
    .push(", ")
    .bind(row.name.clone())
    .push(", ")
    .bind(row.extension.clone())
    .push(", ")
    .bind(row.size)
    .push(", ")
    .bind(row.content.clone())
    .push(", ")
    .bind(row.created_at)
    .push(", ")
    .bind(row.expires_at)
    .push(")");
    sql.execute(db).await?;
    Ok(row)
}

/// The user's attachments among `ids` that have not expired at `at`.
///
/// # Errors
/// A database error.
pub async fn live<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    ids: &[String],
    at: OffsetDateTime,
) -> Result<Vec<AiAttachmentRow>, StorageError> {
    let Some(uid) = id_param(user_id) else {
        return Ok(Vec::new());
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT id, user_id, name, extension, size, content, created_at, expires_at \
         FROM ai_attachments WHERE user_id = ",
    )
    .bind(uid)
    .push(" AND expires_at > ")
    .bind(crate::sql::stamp(at))
    .push(" AND id IN ");
    sql.bind_list(ids.iter().cloned());
    sql.push(" ORDER BY created_at, id");
    sql.all_as(db).await
}

/// How many attachments the user holds that have not expired at `at`.
///
/// # Errors
/// A database error.
pub async fn live_count<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
    at: OffsetDateTime,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM ai_attachments WHERE user_id = ")
        .bind(id_param(user_id).unwrap_or(0))
        .push(" AND expires_at > ")
        .bind(crate::sql::stamp(at));
    sql.count(db).await
}

/// Deletes attachments expired at `at`; answers how many went. One statement, so replicas
/// sweeping at the same time delete each row once and never fail on each other.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn delete_expired<C: ConnectionTrait>(
    db: &C,
    at: OffsetDateTime,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM ai_attachments WHERE expires_at <= ")
        .bind(crate::sql::stamp(at));
    sql.execute(db).await
}
