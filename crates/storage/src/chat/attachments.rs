//! Chat attachments and chunked uploads in progress.
//!
//! An attachment is uploaded first (`message_id` null, its bytes already in the blob store) and
//! then sent with a message, which binds it. A chunked upload keeps one character per chunk in
//! `received` ('1' when stored), so a client whose connection broke asks which chunks are
//! missing and sends only those.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use super::at;
use crate::StorageError;
use crate::blob::{BlobStore, StagedBlob};
use crate::files::tree::lock_tree;
use crate::files::{NewFile, StoredFile, create_file};
use crate::sql::{Sql, begin_write, id_param};
use vellum_policy::{Authorized, FileWrite};

/// An uploaded attachment.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct AttachmentRow {
    pub id: String,
    pub chat_id: String,
    pub message_id: Option<i64>,
    pub user_id: Option<i32>,
    pub name: String,
    pub mime_type: String,
    pub size: i64,
    pub storage_key: String,
    pub created_at: OffsetDateTime,
}

/// An attachment to record (its bytes are staged).
#[derive(Debug, Clone)]
pub struct NewAttachment<'a> {
    pub chat_id: &'a str,
    pub user_id: i64,
    pub name: &'a str,
    pub mime_type: &'a str,
    pub size: u64,
}

const COLUMNS: &str = "SELECT id, chat_id, message_id, user_id, name, mime_type, size, \
     storage_key, created_at FROM chat_attachments";

/// Records an uploaded attachment, not yet sent, whose bytes are `staged`: the blob is
/// published (again) under the lock every blob cleanup takes, so a concurrent cleanup of the
/// same content cannot remove it between its publication and this row (the protocol of
/// [`crate::blob`]). The caller releases `staged` afterwards.
///
/// # Errors
/// A blob store or database error.
#[instrument(skip_all, err, fields(size = new.size))]
pub async fn insert_attachment<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    blobs: &dyn BlobStore,
    staged: &StagedBlob,
    new: &NewAttachment<'_>,
    now: OffsetDateTime,
) -> Result<AttachmentRow, StorageError> {
    let id = uuid::Uuid::new_v4().to_string();
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    blobs.publish(staged).await?;
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push(
        "INSERT INTO chat_attachments (id, chat_id, user_id, name, mime_type, size, storage_key, \
         created_at) VALUES (",
    )
    .bind(id.as_str())
    .push(", ")
    .bind(new.chat_id)
    .push(", ")
    .bind(id_param(new.user_id))
    .push(", ")
    .bind(new.name)
    .push(", ")
    .bind(new.mime_type)
    .push(", ")
    .bind(i64::try_from(new.size).unwrap_or(i64::MAX))
    .push(", ")
    .bind(staged.blob.key.as_str())
    .push(", ")
    .bind(at(now))
    .push(")");
    sql.execute(&txn).await?;
    let row = find_attachment(&txn, new.chat_id, &id)
        .await?
        .ok_or_else(|| StorageError::corrupt("an attachment just stored cannot be read"))?;
    txn.commit().await?;
    Ok(row)
}

/// Attachment `id` of thread `chat_id`.
///
/// # Errors
/// A database error.
pub async fn find_attachment<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: &str,
) -> Result<Option<AttachmentRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS)
        .push(" WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND id = ")
        .bind(id);
    sql.one_as::<AttachmentRow, _>(db).await
}

/// The attachments of each of the messages, oldest first.
///
/// # Errors
/// A database error.
pub async fn attachments_of<C: ConnectionTrait>(
    db: &C,
    message_ids: &[i64],
) -> Result<HashMap<i64, Vec<AttachmentRow>>, StorageError> {
    let mut found: HashMap<i64, Vec<AttachmentRow>> = HashMap::new();
    if message_ids.is_empty() {
        return Ok(found);
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(COLUMNS).push(" WHERE message_id IN ");
    sql.bind_list(message_ids.iter().copied());
    sql.push(" ORDER BY created_at, id");
    for row in sql.all_as::<AttachmentRow, _>(db).await? {
        if let Some(message) = row.message_id {
            found.entry(message).or_default().push(row);
        }
    }
    Ok(found)
}

/// How many attachments the user uploaded to the thread and has not sent yet.
///
/// # Errors
/// A database error.
pub async fn unsent_count<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    user_id: i64,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM chat_attachments WHERE message_id IS NULL AND chat_id = ")
        .bind(chat_id)
        .push(" AND user_id = ")
        .bind(id_param(user_id).unwrap_or(0));
    sql.count(db).await
}

/// The blob keys of a thread's attachments (all of them) or of one message's, for removing
/// their bytes once the rows are gone.
///
/// # Errors
/// A database error.
pub async fn storage_keys<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    message_id: Option<i64>,
) -> Result<Vec<String>, StorageError> {
    #[derive(FromQueryResult)]
    struct Key {
        storage_key: String,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT storage_key FROM chat_attachments WHERE chat_id = ")
        .bind(chat_id);
    if let Some(message) = message_id {
        sql.push(" AND message_id = ").bind(message);
    }
    Ok(sql
        .all_as::<Key, _>(db)
        .await?
        .into_iter()
        .map(|key| key.storage_key)
        .collect())
}

/// A chunked upload in progress.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct UploadRow {
    pub id: String,
    pub chat_id: String,
    pub user_id: i32,
    pub name: String,
    pub mime_type: String,
    pub size: i64,
    pub chunk_size: i64,
    /// One character per chunk: '1' stored, '0' missing.
    pub received: String,
    /// The prefix its chunks are stored under (`<prefix>/<index>`).
    pub storage_key: String,
    pub created_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
}

const UPLOAD_COLUMNS: &str = "SELECT id, chat_id, user_id, name, mime_type, size, chunk_size, \
     received, storage_key, created_at, expires_at FROM chat_uploads";

/// Records a chunked upload just started.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn insert_upload<C: ConnectionTrait>(
    db: &C,
    upload: &UploadRow,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO chat_uploads (id, chat_id, user_id, name, mime_type, size, chunk_size, \
         received, storage_key, created_at, expires_at) VALUES (",
    )
    .bind(upload.id.as_str())
    .push(", ")
    .bind(upload.chat_id.as_str())
    .push(", ")
    .bind(upload.user_id)
    .push(", ")
    .bind(upload.name.as_str())
    .push(", ")
    .bind(upload.mime_type.as_str())
    .push(", ")
    .bind(upload.size)
    .push(", ")
    .bind(upload.chunk_size)
    .push(", ")
    .bind(upload.received.as_str())
    .push(", ")
    .bind(upload.storage_key.as_str())
    .push(", ")
    .bind(at(upload.created_at))
    .push(", ")
    .bind(at(upload.expires_at))
    .push(")");
    sql.execute(db).await?;
    Ok(())
}

/// Upload `id` of thread `chat_id`.
///
/// # Errors
/// A database error.
pub async fn find_upload<C: ConnectionTrait>(
    db: &C,
    chat_id: &str,
    id: &str,
) -> Result<Option<UploadRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(UPLOAD_COLUMNS)
        .push(" WHERE chat_id = ")
        .bind(chat_id)
        .push(" AND id = ")
        .bind(id);
    sql.one_as::<UploadRow, _>(db).await
}

/// Marks chunk `index` of an upload received. Written as one `UPDATE` of one character on the
/// backend, so two chunks arriving at once on two replicas do not overwrite each other.
///
/// # Errors
/// [`StorageError::NotFound`] when the upload is gone; a database error.
pub async fn mark_chunk<C: ConnectionTrait>(
    db: &C,
    id: &str,
    index: u64,
) -> Result<(), StorageError> {
    let position = i32::try_from(index).map_err(|_| StorageError::NotFound { what: "chunk" })?;
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE chat_uploads SET received = substr(received, 1, ")
        .bind(position)
        .push(") || '1' || substr(received, ")
        .bind(position.saturating_add(2))
        .push(") WHERE id = ")
        .bind(id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "upload" });
    }
    Ok(())
}

/// Forgets an upload (finished or abandoned).
///
/// # Errors
/// A database error.
pub async fn delete_upload<C: ConnectionTrait>(db: &C, id: &str) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("DELETE FROM chat_uploads WHERE id = ").bind(id);
    sql.execute(db).await?;
    Ok(())
}

/// How many uploads the user has in progress (expired ones included until swept).
///
/// # Errors
/// A database error.
pub async fn uploads_in_progress<C: ConnectionTrait>(
    db: &C,
    user_id: i64,
) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM chat_uploads WHERE user_id = ")
        .bind(id_param(user_id).unwrap_or(0));
    sql.count(db).await
}

/// Uploads that expired before `now`, at most `limit`, oldest first.
///
/// # Errors
/// A database error.
pub async fn expired_uploads<C: ConnectionTrait>(
    db: &C,
    now: OffsetDateTime,
    limit: u64,
) -> Result<Vec<UploadRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(UPLOAD_COLUMNS)
        .push(" WHERE expires_at < ")
        .bind(at(now))
        .push(" ORDER BY expires_at LIMIT ")
        .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    sql.all_as::<UploadRow, _>(db).await
}

/// Saves attachment `id` of thread `chat_id` to the file manager as a new file in `parent_id`
/// (`None`: the top level) named `filename`: a row on the attachment's own blob (no bytes are
/// copied). Under the lock blob cleanups take, and only while the attachment still exists, so
/// the blob cannot go between the check and the row.
///
/// # Errors
/// [`StorageError::NotFound`] for an unknown attachment; as [`crate::files::create_file`] for
/// the parent folder and the name; a database error.
#[instrument(skip_all, err)]
pub async fn save_as_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    chat_id: &str,
    id: &str,
    parent_id: Option<i64>,
    filename: &str,
) -> Result<StoredFile, StorageError> {
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let attachment = find_attachment(&txn, chat_id, id)
        .await?
        .ok_or(StorageError::NotFound { what: "attachment" })?;
    let hash = attachment.storage_key.rsplit('/').next().map(str::to_owned);
    let extension = filename
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .filter(|ext| !ext.is_empty() && ext.len() <= 16);
    let file = create_file(
        &txn,
        grant,
        NewFile {
            parent_id,
            filename: filename.to_owned(),
            mime_type: Some(attachment.mime_type.clone()),
            extension,
            filesize: Some(attachment.size),
            width: None,
            height: None,
            content_hash: hash,
            storage_key: Some(attachment.storage_key.clone()),
            title: None,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(file)
}

/// Whose chat rows a delete is about to remove by cascade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanScope {
    /// The item's thread (an item deleted for good).
    Item(i64),
    /// Every item thread of the collection (a collection deleted).
    Collection(i64),
    /// The user's uploads in progress (a user deleted for good; the user's attachments stay
    /// with their messages).
    Uploader(i64),
}

/// The blob keys that rows under `scope` name: attachments and the chunks of uploads in
/// progress. Read before the delete; once it is done, the caller removes those no row names any
/// more ([`crate::files::delete_unused_blob`]), so the bytes do not outlive their rows.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn orphan_keys<C: ConnectionTrait>(
    db: &C,
    scope: OrphanScope,
) -> Result<Vec<String>, StorageError> {
    #[derive(FromQueryResult)]
    struct Key {
        storage_key: String,
    }
    #[derive(FromQueryResult)]
    struct Chunks {
        storage_key: String,
        received: String,
    }
    let (chat_filter, id) = match scope {
        OrphanScope::Item(id) => ("c.item_id = ", id),
        OrphanScope::Collection(id) => ("c.collection_id = ", id),
        OrphanScope::Uploader(id) => ("", id),
    };
    let id = id_param(id).unwrap_or(0);
    let mut keys = Vec::new();
    if !chat_filter.is_empty() {
        let mut sql = Sql::new(db.get_database_backend());
        sql.push(
            "SELECT DISTINCT a.storage_key FROM chat_attachments a JOIN chats c ON c.id = a.chat_id \
             WHERE ",
        )
        .push(chat_filter)
        .bind(id);
        keys.extend(
            sql.all_as::<Key, _>(db)
                .await?
                .into_iter()
                .map(|k| k.storage_key),
        );
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT u.storage_key, u.received FROM chat_uploads u JOIN chats c ON c.id = u.chat_id WHERE ");
    if chat_filter.is_empty() {
        sql.push("u.user_id = ").bind(id);
    } else {
        sql.push(chat_filter).bind(id);
    }
    for upload in sql.all_as::<Chunks, _>(db).await? {
        keys.extend((0..upload.received.len()).map(|i| format!("{}/{i}", upload.storage_key)));
    }
    Ok(keys)
}
