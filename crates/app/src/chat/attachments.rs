//! Chat attachments: uploaded first (one request, or chunked: init, chunks in any order and
//! again after a failure, complete), then sent with a message; downloaded by whoever may see
//! the thread. Any file type; each at most the project's `chat_max_upload_bytes` (null: the
//! server's ceiling, [`SERVER_CEILING`]).
//!
//! Bytes are content-addressed blobs shared with the file manager (saving an attachment to the
//! files is a new row on the same blob, see [`super::keep`]), so a blob goes only when no file
//! and no attachment names it ([`forget_blobs`]). A chunked upload keeps each chunk as its own
//! object (`chat-uploads/<id>/<index>`) until `complete` streams them, in order, through the
//! same staging as a single upload (an S3 multipart upload on a bucket) and deletes them.
//!
//! Bounds: a chunk is [`CHUNK_SIZE`] (the last one shorter), so a chunk request holds at most
//! that much; a user has at most [`MAX_UPLOADS_IN_PROGRESS`] chunked uploads going and at most
//! [`MAX_UNSENT`] attachments not yet sent per thread; an upload not completed within
//! [`UPLOAD_LIFETIME`] is swept with its chunks.

use std::time::SystemTime;

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt as _};
use serde::Serialize;
use serde_json::Value as Json;
use time::{Duration, OffsetDateTime};
use vellum_policy::Visibility;
use vellum_storage::chat::{self as store, AttachmentRow, NewAttachment, UploadRow};

use super::resource::AttachmentResource;
use super::{Opened, open};
use crate::chat_bytes::forget_blobs;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::{Download, clean_filename};
use crate::ingest::{self, Received};
use crate::input::Input;
use crate::principal::Principal;
use crate::telemetry::error_chain;

/// The upload cap when `chat_max_upload_bytes` is null: 2 GiB.
pub const SERVER_CEILING: u64 = 2 * 1024 * 1024 * 1024;
/// Bytes per chunk of a chunked upload (the last one may be shorter): S3's smallest part.
pub const CHUNK_SIZE: u64 = 5 * 1024 * 1024;
/// Chunked uploads one user may have going at once.
pub const MAX_UPLOADS_IN_PROGRESS: u64 = 5;
/// Uploaded attachments one user may hold unsent in one thread.
pub const MAX_UNSENT: u64 = 20;
/// How long a chunked upload may take.
pub const UPLOAD_LIFETIME: Duration = Duration::hours(24);
/// Expired uploads one new upload sweeps, at most.
const SWEEP_BATCH: u64 = 10;
/// The longest attachment name, in characters.
const MAX_NAME: usize = 255;

/// The project's cap on one attachment.
pub(crate) async fn upload_limit(state: &AppState) -> Result<u64, AppError> {
    let snapshot = state.snapshot().await?;
    Ok(snapshot
        .settings
        .chat_max_upload_bytes
        .map_or(SERVER_CEILING, |cap| cap.min(SERVER_CEILING)))
}

async fn room_for_one_more(state: &AppState, opened: &Opened, user: i64) -> Result<(), AppError> {
    if store::attachments::unsent_count(state.db(), &opened.chat.id, user).await? >= MAX_UNSENT {
        return Err(AppError::invalid(
            "file",
            format!("Send or remove your {MAX_UNSENT} waiting attachments first."),
        ));
    }
    Ok(())
}

/// Records received bytes as an unsent attachment of the user.
async fn record(
    state: &AppState,
    opened: &Opened,
    user: i64,
    name: &str,
    received: Received,
) -> Result<AttachmentResource, AppError> {
    let new = NewAttachment {
        chat_id: &opened.chat.id,
        user_id: user,
        name,
        mime_type: &received.probe.mime_type,
        size: received.staged.blob.size,
    };
    let recorded = store::attachments::insert_attachment(
        state.db(),
        state.blobs(),
        &received.staged,
        &new,
        OffsetDateTime::now_utc(),
    )
    .await;
    let key = received.staged.blob.key.clone();
    state.blobs().release(received.staged).await;
    match recorded {
        Ok(row) => Ok(AttachmentResource::from(row)),
        Err(err) => {
            forget_blobs(state, vec![key]).await;
            Err(err.into())
        }
    }
}

fn check_name(name: &str) -> Result<String, AppError> {
    let name = clean_filename(name);
    if name.is_empty() {
        return Err(AppError::invalid("file", "The file needs a name."));
    }
    if name.chars().count() > MAX_NAME {
        return Err(AppError::invalid(
            "file",
            format!("The name may not be longer than {MAX_NAME} characters."),
        ));
    }
    Ok(name)
}

/// `POST /chat/{chat}/attachments` (multipart, one `file` part): stores one attachment, to be
/// sent with a message (`attachment_ids`). `read_part` is given the cap once access is checked
/// and streams the part (name and bytes) into [`ingest::receive`].
///
/// # Errors
/// As [`super::open`]; 422 without a file, past the cap, or with too many unsent attachments;
/// the blob store or database.
pub async fn upload<F, Fut>(
    state: &AppState,
    principal: &Principal,
    id: &str,
    read_part: F,
) -> Result<AttachmentResource, AppError>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<(String, Received), AppError>>,
{
    let opened = open(state, principal, id).await?;
    let user = principal.user_id();
    room_for_one_more(state, &opened, user).await?;
    let limit = upload_limit(state).await?;
    let (name, received) = read_part(limit).await?;
    let name = match check_name(&name) {
        Ok(name) => name,
        Err(err) => {
            ingest::discard(state.blobs(), received).await;
            return Err(err);
        }
    };
    record(state, &opened, user, &name, received).await
}

/// A chunked upload's state: which chunks the server holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UploadStatus {
    pub id: String,
    pub name: String,
    pub size: i64,
    pub chunk_size: i64,
    pub chunks: u64,
    /// Indexes (from 0) of the chunks still to send, in order.
    pub missing: Vec<u64>,
    pub expires_at: Json,
}

impl From<&UploadRow> for UploadStatus {
    fn from(row: &UploadRow) -> Self {
        Self {
            id: row.id.clone(),
            name: row.name.clone(),
            size: row.size,
            chunk_size: row.chunk_size,
            chunks: row.received.len() as u64,
            missing: row
                .received
                .bytes()
                .enumerate()
                .filter(|(_, b)| *b != b'1')
                .map(|(i, _)| i as u64)
                .collect(),
            expires_at: crate::resources::timestamp(Some(row.expires_at)),
        }
    }
}

/// Deletes up to a batch of expired uploads with their chunks.
async fn sweep(state: &AppState) -> Result<(), AppError> {
    let now = OffsetDateTime::now_utc();
    for expired in store::attachments::expired_uploads(state.db(), now, SWEEP_BATCH).await? {
        discard_upload(state, &expired).await?;
    }
    Ok(())
}

fn chunk_key(row: &UploadRow, index: u64) -> String {
    format!("{}/{index}", row.storage_key)
}

async fn discard_upload(state: &AppState, row: &UploadRow) -> Result<(), AppError> {
    store::attachments::delete_upload(state.db(), &row.id).await?;
    for index in 0..row.received.len() as u64 {
        if let Err(err) = state.blobs().delete(&chunk_key(row, index)).await {
            tracing::warn!(error = %error_chain(&err), "chat: a chunk stays behind");
        }
    }
    Ok(())
}

/// `POST /chat/{chat}/uploads` `{"name", "size"}`: starts a chunked upload of `size` bytes.
///
/// # Errors
/// As [`super::open`]; 422 for a bad body, a size past the cap, too many uploads going or too
/// many unsent attachments; the database.
pub async fn start_upload(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<UploadStatus, AppError> {
    let opened = open(state, principal, id).await?;
    let user = principal.user_id();
    let mut input = Input::new(body)?;
    let name = input.required_str("name", MAX_NAME);
    let size = input.raw("size").and_then(Json::as_u64).filter(|s| *s > 0);
    if size.is_none() {
        input.error("size", "The size must be a positive number of bytes.");
    }
    input.finish()?;
    let name = check_name(name.unwrap_or_default()).map_err(|_| {
        AppError::invalid("name", "The file needs a name of at most 255 characters.")
    })?;
    let size = size.unwrap_or_default();
    let limit = upload_limit(state).await?;
    if size > limit {
        return Err(AppError::invalid(
            "size",
            format!("The file may not be larger than {limit} bytes."),
        ));
    }
    room_for_one_more(state, &opened, user).await?;
    sweep(state).await?;
    if store::attachments::uploads_in_progress(state.db(), user).await? >= MAX_UPLOADS_IN_PROGRESS {
        return Err(AppError::invalid(
            "size",
            format!("Finish one of your {MAX_UPLOADS_IN_PROGRESS} uploads in progress first."),
        ));
    }
    let upload_id = uuid::Uuid::new_v4().to_string();
    let now = OffsetDateTime::now_utc();
    let row = UploadRow {
        storage_key: format!("chat-uploads/{upload_id}"),
        id: upload_id,
        chat_id: opened.chat.id.clone(),
        user_id: i32::try_from(user).map_err(|_| AppError::NotFound)?,
        name,
        mime_type: "application/octet-stream".to_owned(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        chunk_size: i64::try_from(CHUNK_SIZE).unwrap_or(i64::MAX),
        received: "0".repeat(usize::try_from(size.div_ceil(CHUNK_SIZE)).unwrap_or(0)),
        created_at: now,
        expires_at: now + UPLOAD_LIFETIME,
    };
    store::attachments::insert_upload(state.db(), &row).await?;
    Ok(UploadStatus::from(&row))
}

/// The user's upload `upload` in the opened thread, not expired.
async fn find_upload(
    state: &AppState,
    opened: &Opened,
    principal: &Principal,
    upload: &str,
) -> Result<UploadRow, AppError> {
    let row = store::attachments::find_upload(state.db(), &opened.chat.id, upload)
        .await?
        .filter(|row| i64::from(row.user_id) == principal.user_id())
        .filter(|row| row.expires_at > OffsetDateTime::now_utc())
        .ok_or(AppError::NotFound)?;
    Ok(row)
}

/// `GET /chat/{chat}/uploads/{upload}`: which chunks are still missing.
///
/// # Errors
/// As [`super::open`]; 404 for an unknown, expired or someone else's upload; the database.
pub async fn upload_status(
    state: &AppState,
    principal: &Principal,
    id: &str,
    upload: &str,
) -> Result<UploadStatus, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find_upload(state, &opened, principal, upload).await?;
    Ok(UploadStatus::from(&row))
}

/// The byte length chunk `index` of `row` must have.
fn chunk_len(row: &UploadRow, index: u64) -> Option<u64> {
    let size = u64::try_from(row.size).ok()?;
    let chunk = u64::try_from(row.chunk_size).ok()?;
    let start = index.checked_mul(chunk)?;
    (start < size).then(|| chunk.min(size - start))
}

/// The longest body a chunk request may carry.
#[must_use]
pub fn max_chunk_bytes() -> usize {
    usize::try_from(CHUNK_SIZE).unwrap_or(usize::MAX)
}

/// `PUT /chat/{chat}/uploads/{upload}/chunks/{index}` (the raw bytes): stores one chunk; sending
/// a chunk again replaces it.
///
/// # Errors
/// As [`upload_status`]; 404 for an index past the end; 422 when the body is not exactly the
/// chunk's length; the blob store or database.
pub async fn upload_chunk(
    state: &AppState,
    principal: &Principal,
    id: &str,
    upload: &str,
    index: &str,
    bytes: Bytes,
) -> Result<UploadStatus, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find_upload(state, &opened, principal, upload).await?;
    let index: u64 = index.parse().map_err(|_| AppError::NotFound)?;
    let expected = chunk_len(&row, index).ok_or(AppError::NotFound)?;
    if bytes.len() as u64 != expected {
        return Err(AppError::invalid(
            "chunk",
            format!("Chunk {index} must be exactly {expected} bytes."),
        ));
    }
    state
        .blobs()
        .put_bytes(&chunk_key(&row, index), bytes)
        .await?;
    store::attachments::mark_chunk(state.db(), &row.id, index).await?;
    let row = find_upload(state, &opened, principal, upload).await?;
    Ok(UploadStatus::from(&row))
}

/// `POST /chat/{chat}/uploads/{upload}/complete`: once every chunk is there, joins them into
/// an attachment (to be sent with a message) and forgets the upload.
///
/// # Errors
/// As [`upload_status`]; 422 while chunks are missing (with their indexes) or with too many
/// unsent attachments; the blob store or database.
pub async fn complete_upload(
    state: &AppState,
    principal: &Principal,
    id: &str,
    upload: &str,
) -> Result<AttachmentResource, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find_upload(state, &opened, principal, upload).await?;
    let status = UploadStatus::from(&row);
    if !status.missing.is_empty() {
        let list: Vec<String> = status.missing.iter().take(20).map(u64::to_string).collect();
        return Err(AppError::invalid(
            "chunks",
            format!("Chunks still missing: {}.", list.join(", ")),
        ));
    }
    let user = principal.user_id();
    room_for_one_more(state, &opened, user).await?;
    let blobs = state.blobs_arc();
    let keys: Vec<String> = (0..status.chunks).map(|i| chunk_key(&row, i)).collect();
    let body: BoxStream<'static, Result<Bytes, std::io::Error>> = stream::iter(keys)
        .then(move |key| {
            let blobs = std::sync::Arc::clone(&blobs);
            async move { blobs.get(&key, None).await }
        })
        .map(|got| match got {
            Ok(blob) => blob
                .stream
                .map(|chunk| chunk.map_err(std::io::Error::other))
                .boxed(),
            Err(err) => stream::once(async move { Err(std::io::Error::other(err)) }).boxed(),
        })
        .flatten()
        .boxed();
    let limit = u64::try_from(row.size).unwrap_or(u64::MAX);
    let received = ingest::receive(state.blobs(), body, Some(limit)).await?;
    let attachment = record(state, &opened, user, &row.name, received).await?;
    discard_upload(state, &row).await?;
    Ok(attachment)
}

/// `GET /chat/{chat}/attachments/{attachment}`: the bytes as a download, for whoever may see
/// the thread.
///
/// # Errors
/// As [`super::open`]; 404 for an unknown attachment; the database or blob store.
pub async fn download(
    state: &AppState,
    principal: &Principal,
    id: &str,
    attachment: &str,
) -> Result<Download, AppError> {
    let opened = open(state, principal, id).await?;
    let row = attachment_of(state, &opened, attachment).await?;
    let hash = row
        .storage_key
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok(Download {
        size: u64::try_from(row.size).unwrap_or(0),
        mime_type: row.mime_type.clone(),
        etag: format!("\"{hash}\""),
        modified: Some(SystemTime::from(row.created_at)),
        visibility: Visibility::Private,
        download_name: Some(row.name.clone()),
        ranges: true,
        immutable: false,
        storage_key: row.storage_key,
    })
}

/// Attachment `attachment` of the opened thread.
pub(crate) async fn attachment_of(
    state: &AppState,
    opened: &Opened,
    attachment: &str,
) -> Result<AttachmentRow, AppError> {
    if uuid::Uuid::parse_str(attachment).is_err() {
        return Err(AppError::NotFound);
    }
    store::attachments::find_attachment(state.db(), &opened.chat.id, attachment)
        .await?
        .ok_or(AppError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: i64) -> UploadRow {
        UploadRow {
            id: "u".into(),
            chat_id: "c".into(),
            user_id: 1,
            name: "n".into(),
            mime_type: "application/octet-stream".into(),
            size,
            chunk_size: 10,
            received: "0".repeat(usize::try_from(size).unwrap().div_ceil(10)),
            storage_key: "chat-uploads/u".into(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn chunks_have_fixed_lengths_and_the_last_one_the_rest() {
        let upload = row(25);
        assert_eq!(chunk_len(&upload, 0), Some(10));
        assert_eq!(chunk_len(&upload, 2), Some(5));
        assert_eq!(chunk_len(&upload, 3), None);
        assert_eq!(chunk_len(&upload, u64::MAX), None);
        assert_eq!(chunk_len(&row(20), 1), Some(10));
    }

    #[test]
    fn the_status_lists_missing_chunks() {
        let mut upload = row(25);
        upload.received = "101".into();
        let status = UploadStatus::from(&upload);
        assert_eq!(status.chunks, 3);
        assert_eq!(status.missing, vec![1]);
    }
}
