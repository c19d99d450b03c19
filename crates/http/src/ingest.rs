//! Storing an uploaded file: the bytes stream into the blob store (hashed and counted on the
//! way, never held whole in memory), the first bytes are kept aside to sniff the MIME type and
//! read image dimensions, then the `files` row is written. Used by `POST /files` and by the demo
//! project's sample images.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use vellum_imaging::{PROBE_BYTES, Probe, probe};
use vellum_policy::{Authorized, FileWrite};
use vellum_storage::blob::{BlobStore, StoredBlob};
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

/// An upload's bytes, stored, with what its first bytes say it is.
#[derive(Debug, Clone)]
pub struct Received {
    pub blob: StoredBlob,
    pub probe: Probe,
}

/// Streams `body` into `blobs` (at most `limit` bytes), keeping its head aside for [`probe`].
///
/// # Errors
/// [`StorageError::TooLarge`] past the limit (nothing kept), or a blob store error.
pub async fn receive(
    blobs: &dyn BlobStore,
    body: BoxStream<'_, Result<Bytes, std::io::Error>>,
    limit: Option<u64>,
) -> Result<Received, StorageError> {
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
    let blob = blobs.put_stream(body, limit).await?;
    let probe = {
        let head = head
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        with_markup(probe(&head), &head)
    };
    Ok(Received { blob, probe })
}

/// Markup the magic-number sniffer does not know (`<svg …>`, `<html>` after a BOM, any document
/// that opens with a tag) is labelled as what a browser would make of it, so it is only ever
/// served as an attachment in a sandbox: an unknown type stays `application/octet-stream`.
fn with_markup(mut probe: Probe, head: &[u8]) -> Probe {
    if probe.mime_type != "application/octet-stream" {
        return probe;
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let text = text.trim_ascii_start();
    if !text.starts_with(b"<") {
        return probe;
    }
    let window = text.get(..4096).unwrap_or(text).to_ascii_lowercase();
    let svg = window.windows(4).any(|w| w == b"<svg");
    let (mime, extension) = if svg {
        ("image/svg+xml", "svg")
    } else {
        ("text/html", "html")
    };
    probe.mime_type = mime.to_owned();
    probe.extension = Some(extension.to_owned());
    probe.width = None;
    probe.height = None;
    probe
}

/// Deletes a received blob that no file row uses (content addressing: another file may share it).
pub async fn discard(db: &DatabaseConnection, blobs: &dyn BlobStore, received: &Received) {
    let key = &received.blob.key;
    match vellum_storage::files::blob_in_use(db, key).await {
        Ok(false) => {
            if let Err(err) = blobs.delete(key).await {
                tracing::warn!(error = %crate::error::error_chain(&err), "could not delete an unused upload");
            }
        }
        Ok(true) => {}
        Err(err) => {
            tracing::warn!(error = %crate::error::error_chain(&err), "could not check an upload's blob");
        }
    }
}

/// Writes the `files` row of a received upload under the policy's `grant`; on failure the blob
/// is discarded.
///
/// # Errors
/// A database error, or [`StorageError::Conflict`] for a parent that is not a live folder the
/// grant reaches.
pub async fn record(
    db: &DatabaseConnection,
    blobs: &dyn BlobStore,
    grant: &Authorized<FileWrite>,
    received: Received,
    upload: Upload,
) -> Result<StoredFile, StorageError> {
    let new = NewFile {
        parent_id: upload.parent_id,
        filename: upload.filename,
        mime_type: Some(received.probe.mime_type.clone()),
        extension: received.probe.extension.clone(),
        filesize: i64::try_from(received.blob.size).ok(),
        width: received.probe.width.and_then(|w| i32::try_from(w).ok()),
        height: received.probe.height.and_then(|h| i32::try_from(h).ok()),
        content_hash: Some(received.blob.sha256.clone()),
        storage_key: Some(received.blob.key.clone()),
        title: upload.title,
    };
    match create_file(db, grant, new).await {
        Ok(file) => Ok(file),
        Err(err) => {
            discard(db, blobs, &received).await;
            Err(err)
        }
    }
}

/// Streams `body` into `blobs` and records the file ([`receive`] then [`record`]).
///
/// # Errors
/// As [`receive`] and [`record`].
pub async fn ingest(
    db: &DatabaseConnection,
    blobs: &dyn BlobStore,
    grant: &Authorized<FileWrite>,
    upload: Upload,
    body: BoxStream<'_, Result<Bytes, std::io::Error>>,
) -> Result<StoredFile, StorageError> {
    let received = receive(blobs, body, upload.limit).await?;
    record(db, blobs, grant, received, upload).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(bytes: &[u8]) -> String {
        with_markup(probe(bytes), bytes).mime_type
    }

    #[test]
    fn markup_the_sniffer_misses_is_labelled_active() {
        assert_eq!(sniff(b"<svg onload=alert(1)>"), "image/svg+xml");
        assert_eq!(sniff(b"\xEF\xBB\xBF \n<SVG ONLOAD=x>"), "image/svg+xml");
        assert_eq!(sniff(b"<x-foo><svg/></x-foo>"), "image/svg+xml");
        assert_eq!(sniff(b"<script>alert(1)</script>"), "text/html");
        assert_eq!(sniff(b"\xEF\xBB\xBF<!doctype html><p>"), "text/html");
        assert_eq!(sniff(b"<3 plain text"), "text/html");
    }

    #[test]
    fn other_bytes_keep_their_sniffed_type() {
        assert_eq!(
            sniff(b"plain text < with a tag later"),
            "application/octet-stream"
        );
        assert_eq!(sniff(b""), "application/octet-stream");
        assert_eq!(sniff(b"GIF89a<svg>"), "image/gif");
        assert!(sniff(b"<?xml version=\"1.0\"?><svg/>").contains("xml"));
    }
}
