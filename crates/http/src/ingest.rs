//! Storing an uploaded file: the bytes stream into the blob store (hashed and counted on the
//! way, never held whole in memory), the first bytes are kept aside to sniff the MIME type and
//! read image dimensions, then the `files` row is written. Used by `POST /files` and by the demo
//! project's sample images.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use vellum_imaging::{PROBE_BYTES, probe};
use vellum_storage::blob::BlobStore;
use vellum_storage::files::{NewFile, StoredFile, create_file};
use vellum_storage::{DatabaseConnection, StorageError};

/// What an upload says about itself besides its bytes.
#[derive(Debug, Clone)]
pub struct Upload {
    pub parent_id: Option<i64>,
    pub filename: String,
    pub title: Option<String>,
    /// The project's `files_max_upload_bytes`.
    pub limit: Option<u64>,
}

/// Streams `body` into `blobs` and records the file.
///
/// # Errors
/// [`StorageError::TooLarge`] past the limit (nothing kept), a blob store or database error; when
/// the row cannot be written the blob just stored is deleted again, unless another file already
/// shares its content.
pub async fn ingest(
    db: &DatabaseConnection,
    blobs: &dyn BlobStore,
    upload: Upload,
    body: BoxStream<'_, Result<Bytes, std::io::Error>>,
) -> Result<StoredFile, StorageError> {
    let head = Arc::new(Mutex::new(Vec::with_capacity(8 * 1024)));
    let sink = Arc::clone(&head);
    let body = body
        .map(move |chunk| {
            if let Ok(bytes) = &chunk {
                let mut head = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let room = PROBE_BYTES.saturating_sub(head.len());
                if room > 0 {
                    head.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
                }
            }
            chunk
        })
        .boxed();
    let stored = blobs.put_stream(body, upload.limit).await?;
    let info = {
        let head = head
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        probe(&head)
    };
    let new = NewFile {
        parent_id: upload.parent_id,
        filename: upload.filename,
        mime_type: Some(info.mime_type),
        extension: info.extension,
        filesize: i64::try_from(stored.size).ok(),
        width: info.width.and_then(|w| i32::try_from(w).ok()),
        height: info.height.and_then(|h| i32::try_from(h).ok()),
        content_hash: Some(stored.sha256.clone()),
        storage_key: Some(stored.key.clone()),
        title: upload.title,
    };
    match create_file(db, new).await {
        Ok(file) => Ok(file),
        Err(err) => {
            // Content addressing means another file may use the same blob; only an orphan goes.
            if !vellum_storage::files::blob_in_use(db, &stored.key)
                .await
                .unwrap_or(true)
            {
                let _ = blobs.delete(&stored.key).await;
            }
            Err(err)
        }
    }
}
