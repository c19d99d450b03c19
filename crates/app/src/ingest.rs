//! Storing an uploaded file: the bytes stream into the blob store's staging area (hashed and
//! counted on the way, never held whole in memory), the first bytes are kept aside to sniff the
//! MIME type and read image dimensions, then the blob is published and the `files` row written.
//! Used by `POST /files` and by the demo project's sample images.
//!
//! Identical uploads share one content-addressed blob, so cleaning up after a failed upload must
//! remove only what that request wrote (review finding R12: a refused upload used to delete the
//! blob of a concurrent accepted one). A refused form ([`discard`]) never published and releases
//! only its staged copy; an upload whose row cannot be written deletes the blob only through
//! [`delete_unused_blob`], which re-checks under the lock rows are written under. The protocol is
//! described in [`vellum_storage::blob`].

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use vellum_imaging::{PROBE_BYTES, Probe, probe};
use vellum_policy::{Authorized, FileWrite};
use vellum_storage::blob::{BlobStore, StagedBlob};
use vellum_storage::files::{NewFile, StoredFile, create_uploaded_file, delete_unused_blob};
use vellum_storage::{Database, StorageError};

/// What an upload says about itself besides its bytes.
#[derive(Debug, Clone)]
pub struct Upload {
    pub parent_id: Option<i64>,
    pub filename: String,
    pub title: Option<String>,
    /// The project's `files_max_upload_bytes`.
    pub limit: Option<u64>,
}

/// An upload's bytes, staged (not yet published), with what its first bytes say it is. Hand it
/// to [`record`] or [`discard`]: either releases the staged copy.
#[derive(Debug, Clone)]
pub struct Received {
    pub staged: StagedBlob,
    pub probe: Probe,
}

/// Streams `body` into `blobs`' staging area (at most `limit` bytes), keeping its head aside for
/// [`probe`].
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
    let staged = blobs.stage(body, limit).await?;
    let probe = {
        let head = head
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        with_markup(probe(&head), &head)
    };
    Ok(Received { staged, probe })
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

/// Drops an upload that was refused before anything was published (an invalid form): only its
/// own staged copy goes. The blob its bytes would have made may be another upload's.
pub async fn discard(blobs: &dyn BlobStore, received: Received) {
    blobs.release(received.staged).await;
}

/// Publishes a received upload and writes its `files` row under the policy's `grant`. On
/// failure nothing of the upload remains: the blob is deleted unless a row names it (checked
/// under the lock rows are written under); either way the staged copy is released.
///
/// # Errors
/// A database or blob store error, or [`StorageError::Conflict`] for a parent that is not a live
/// folder the grant reaches.
pub async fn record(
    db: &Database,
    blobs: &dyn BlobStore,
    grant: &Authorized<FileWrite>,
    received: Received,
    upload: Upload,
) -> Result<StoredFile, StorageError> {
    let Received { staged, probe } = received;
    let new = NewFile {
        parent_id: upload.parent_id,
        filename: upload.filename,
        mime_type: Some(probe.mime_type),
        extension: probe.extension,
        filesize: i64::try_from(staged.blob.size).ok(),
        width: probe.width.and_then(|w| i32::try_from(w).ok()),
        height: probe.height.and_then(|h| i32::try_from(h).ok()),
        content_hash: Some(staged.blob.sha256.clone()),
        storage_key: Some(staged.blob.key.clone()),
        title: upload.title,
    };
    // Published before the row's transaction, so that copying new content into place (a
    // server-side copy on S3) does not hold the lock; the transaction only checks it is there.
    let created = match blobs.publish(&staged).await {
        Ok(()) => create_uploaded_file(db, grant, new, blobs, &staged).await,
        Err(err) => {
            blobs.release(staged).await;
            return Err(err);
        }
    };
    if created.is_err()
        && let Err(err) = delete_unused_blob(db, blobs, &staged.blob.key).await
    {
        tracing::warn!(error = %crate::telemetry::error_chain(&err), "could not delete the blob of a failed upload");
    }
    blobs.release(staged).await;
    created
}

/// Streams `body` into `blobs` and records the file ([`receive`] then [`record`]).
///
/// # Errors
/// As [`receive`] and [`record`].
pub async fn ingest(
    db: &Database,
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
