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
use vellum_storage::files::replace::{NewContent, Replaced, replace_file_content};
use vellum_storage::files::upload::create_uploaded_files;
use vellum_storage::files::{
    NewFile, StoredFile, create_uploaded_file_queuing, delete_unused_blob,
};
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

/// Publishes a received upload and writes its `files` row under the policy's `grant`, with
/// `outbox`'s jobs in the row's transaction. On
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
    outbox: Option<&vellum_storage::jobs::Outbox<'_>>,
) -> Result<StoredFile, StorageError> {
    let Received { staged, probe } = received;
    let new = new_file(&staged, probe, upload);
    // Published before the row's transaction, so that copying new content into place (a
    // server-side copy on S3) does not hold the lock; the transaction only checks it is there.
    let created = match blobs.publish(&staged).await {
        Ok(()) => create_uploaded_file_queuing(db, grant, new, (blobs, &staged), outbox).await,
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

/// The row of an upload: what its bytes were sniffed as, what it says about itself.
fn new_file(staged: &StagedBlob, probe: Probe, upload: Upload) -> NewFile {
    NewFile {
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
    }
}

/// What a replace writes into an existing row: the sniffed description of its new bytes.
#[must_use]
pub fn new_content(received: &Received) -> NewContent {
    let Received { staged, probe } = received;
    NewContent {
        mime_type: Some(probe.mime_type.clone()),
        extension: probe.extension.clone(),
        filesize: i64::try_from(staged.blob.size).ok(),
        width: probe.width.and_then(|w| i32::try_from(w).ok()),
        height: probe.height.and_then(|h| i32::try_from(h).ok()),
    }
}

/// Publishes several received uploads and writes their rows in one transaction, all into
/// `parent_id` ([`create_uploaded_files`]): all of them or none. On failure nothing of the
/// uploads remains: every blob published here is deleted unless a row names it (identical bytes
/// another file already has stay), as [`record`] does for one; the staged copies are released in
/// every case.
///
/// # Errors
/// As [`record`].
pub async fn record_many(
    db: &Database,
    blobs: &dyn BlobStore,
    grant: &Authorized<FileWrite>,
    parent_id: Option<i64>,
    uploads: Vec<(Received, Upload)>,
) -> Result<Vec<StoredFile>, StorageError> {
    let mut staged = Vec::with_capacity(uploads.len());
    let mut rows = Vec::with_capacity(uploads.len());
    let mut failed = None;
    for (
        Received {
            staged: blob,
            probe,
        },
        upload,
    ) in uploads
    {
        rows.push(new_file(&blob, probe, upload));
        if failed.is_none()
            && let Err(err) = blobs.publish(&blob).await
        {
            failed = Some((err, staged.len()));
        }
        staged.push(blob);
    }
    let created = match failed {
        // Only the blobs before the one that failed were published.
        Some((err, published)) => {
            forget_published(db, blobs, staged.get(..published).unwrap_or_default()).await;
            Err(err)
        }
        None => {
            let files = rows.into_iter().zip(staged.iter()).collect();
            let created = create_uploaded_files(db, grant, parent_id, files, blobs).await;
            if created.is_err() {
                forget_published(db, blobs, &staged).await;
            }
            created
        }
    };
    for blob in staged {
        blobs.release(blob).await;
    }
    created
}

/// Deletes the published blobs of uploads whose rows were not written, each only when no row
/// names it ([`delete_unused_blob`]).
async fn forget_published(db: &Database, blobs: &dyn BlobStore, staged: &[StagedBlob]) {
    for blob in staged {
        if let Err(err) = delete_unused_blob(db, blobs, &blob.blob.key).await {
            tracing::warn!(error = %crate::telemetry::error_chain(&err), "could not delete the blob of a failed upload");
        }
    }
}

/// Publishes a received upload and points file `id` at it instead of its old bytes
/// ([`replace_file_content`]). On failure nothing of the upload remains (the new blob is deleted
/// unless a row names it) and the file keeps its old bytes; the staged copy is released either
/// way. The old bytes stay in the store until [`forget_replaced`], which the caller runs once
/// the caches have been told.
///
/// # Errors
/// As [`replace_file_content`], or the blob store's error publishing.
pub async fn replace(
    db: &Database,
    blobs: &dyn BlobStore,
    grant: &Authorized<FileWrite>,
    id: i64,
    received: Received,
) -> Result<Replaced, StorageError> {
    let content = new_content(&received);
    let staged = received.staged;
    let replaced = match blobs.publish(&staged).await {
        Ok(()) => replace_file_content(db, grant, id, content, blobs, &staged).await,
        Err(err) => Err(err),
    };
    if replaced.is_err() {
        forget_published(db, blobs, std::slice::from_ref(&staged)).await;
    }
    blobs.release(staged).await;
    replaced
}

/// Deletes what a committed replace left unused: the old content's derivative blobs, and the old
/// blob unless another row names it. Best effort: a failure leaves an unused blob (logged),
/// never a row without its bytes.
pub async fn forget_replaced(db: &Database, blobs: &dyn BlobStore, replaced: &Replaced) {
    for key in &replaced.derived {
        if let Err(err) = blobs.delete(key).await {
            tracing::warn!(error = %crate::telemetry::error_chain(&err), key = %key, "could not delete a derivative of replaced content");
        }
    }
    if let Some(key) = &replaced.old_key
        && let Err(err) = delete_unused_blob(db, blobs, key).await
    {
        tracing::warn!(error = %crate::telemetry::error_chain(&err), key = %key, "could not delete the blob of replaced content");
    }
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
    record(db, blobs, grant, received, upload, None).await
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
