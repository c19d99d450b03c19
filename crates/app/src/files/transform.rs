//! `GET /files/{id}/transforms/{key}`: the output of a preset, computed once per (content,
//! variant) off the async executor (see [`crate::transforms`]), kept as a derived blob and
//! evicted least recently used past the original's derivative cap.

use std::time::SystemTime;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use vellum_imaging::{FocalPoint, ImagingError, Preset};
use vellum_storage::files::{NewTransform, StoredFile, StoredTransform};

use super::{Download, permitted, readable_file};
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::parse_id;
use crate::resources::is_transformable;
use crate::served::{Entry, Served};
use crate::telemetry::error_chain;
use crate::transform_urls::{Signed, variant_of, version};
use crate::transforms::Failure;

/// The output of preset `key` of file `id`, computed if it is not stored yet. `query` is the
/// request's query string: with signed transform URLs on, its `v` and `s` (see
/// [`crate::transform_urls`]) decide whether the answer is immutable and whether a `size-N`
/// other than the presets may be asked for; with them off it is ignored.
///
/// # Errors
/// [`AppError::InvalidSignature`] (a signature that does not verify, or half of one), 404 (an
/// unknown key, an unsigned `size-N` while signing is on, no such file, not a transformable
/// image), 403, 422 (an image too large or too costly, or undecodable), [`AppError::Busy`] when
/// the transform budget is full, the database or blob store.
pub async fn transform(
    state: &AppState,
    actor: &Actor,
    id: &str,
    key: &str,
    query: &str,
) -> Result<Download, AppError> {
    let file_id = parse_id(id)?;
    // Checked first: no lookup is spent on a forged URL. A valid signature is no grant: the
    // role's permission is still decided below, on every path.
    let signed = match state.url_signer().map(|s| s.check(file_id, key, query)) {
        None | Some(Signed::No) => None,
        Some(Signed::Yes(version)) => Some(version),
        Some(Signed::Invalid) => return Err(AppError::InvalidSignature),
    };
    let preset = Preset::parse(key).ok_or(AppError::NotFound)?;
    // Only a URL the server wrote may ask for a size of its own choosing.
    if state.url_signer().is_some() && signed.is_none() && matches!(preset, Preset::Size(_)) {
        return Err(AppError::NotFound);
    }
    let served = Served::Transform(file_id, key.to_owned());
    let epoch = state
        .stamp(&actor.snapshot, &[crate::cache::Scope::Files])
        .await;
    if let Some(entry) = state.served_files().get(&served, epoch)
        && !entry
            .transform
            .as_ref()
            .is_some_and(|t| t.needs_touch(time::OffsetDateTime::now_utc()))
    {
        let mut download = permitted(actor, &entry.download)?;
        download.immutable = signed.is_some() && signed == entry.version;
        return Ok(download);
    }
    let file = readable_file(state, actor, id).await?;
    let (Some(source_key), Some(hash), true) = (
        file.storage_key.as_deref(),
        file.content_hash.as_deref(),
        is_transformable(&file),
    ) else {
        return Err(AppError::NotFound);
    };
    let (preset, variant, focal) = variant_of(&file, preset);
    let stored = match stored_transform(state, hash, &variant).await? {
        Some(stored) => stored,
        None => compute_transform(state, &file, source_key, hash, &variant, preset, focal)
            .await
            .map_err(|failure| failure_error(state, failure))?,
    };
    let mut download = Download {
        size: stored
            .filesize
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or_default(),
        etag: format!("\"{hash}-{variant}\""),
        storage_key: stored.storage_key.clone(),
        mime_type: stored.mime_type.clone(),
        modified: file.updated_at.map(SystemTime::from),
        visibility: file.effective,
        download_name: None,
        ranges: false,
        immutable: false,
    };
    let current = version(hash, &variant);
    // The touch a served entry will next need is decided from the row as just read (or
    // written): an entry whose output needs one is skipped, and its read touches it.
    state.served_files().put(
        served,
        Entry {
            epoch,
            download: download.clone(),
            transform: Some(stored),
            version: Some(current.clone()),
        },
    );
    // A stale version (new bytes, a moved focal point) still gets the current output, but not
    // for a year: its URL no longer names what is sent.
    download.immutable = signed.as_deref() == Some(current.as_str());
    Ok(download)
}

/// A stored output whose blob is still there. Its use is recorded at most once a minute (the
/// row says when it was last touched), which is what least-recently-used eviction reads.
async fn stored_transform(
    state: &AppState,
    hash: &str,
    variant: &str,
) -> Result<Option<StoredTransform>, AppError> {
    match vellum_storage::files::find_transform(state.db(), hash, variant).await? {
        Some(mut t) if state.blobs().head(&t.storage_key).await?.is_some() => {
            let now = time::OffsetDateTime::now_utc();
            if t.needs_touch(now) {
                match vellum_storage::files::touch_transform(state.db(), hash, variant, now).await {
                    Ok(_) => t.last_used_at = now,
                    // Only the eviction order suffers: serve the output all the same.
                    Err(err) => tracing::warn!(
                        error = %error_chain(&err),
                        "could not record a transform's use"
                    ),
                }
            }
            Ok(Some(t))
        }
        _ => Ok(None),
    }
}

/// Computes an output once per (content, variant): the first request starts the computation as
/// a task of its own (see [`crate::transforms`]) and concurrent requests join it; a recent
/// failure of the same computation is answered from the memo without running it again.
async fn compute_transform(
    state: &AppState,
    file: &StoredFile,
    source_key: &str,
    hash: &str,
    variant: &str,
    preset: Preset,
    focal: FocalPoint,
) -> Result<StoredTransform, Failure> {
    let key = format!("{hash}/{variant}");
    let transforms = state.transforms();
    if let Some(failure) = transforms.remembered(&key) {
        return Err(failure);
    }
    // The derivatives of one original may take this many bytes; the least recently used go.
    let cap = state.config().derivative_cap.bytes_for(
        file.filesize
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0),
    );
    let flight = transforms.join_or_start(&key, || {
        let (state, file_id) = (state.clone(), file.id);
        let (source_key, hash, variant) =
            (source_key.to_owned(), hash.to_owned(), variant.to_owned());
        async move {
            let run = async {
                // A computation that finished just before this one started left its output.
                if let Some(stored) = stored_transform(&state, &hash, &variant).await? {
                    return Ok(Ok(stored));
                }
                let slot = match state.transforms().slot().await {
                    Ok(slot) => slot,
                    Err(failure) => return Ok(Err(failure)),
                };
                let blob = state.blobs().get(&source_key, None).await?;
                let source: Vec<u8> = blob
                    .stream
                    .try_fold(
                        Vec::with_capacity(usize::try_from(blob.size).unwrap_or(0)),
                        |mut acc, chunk| async move {
                            acc.extend_from_slice(&chunk);
                            Ok(acc)
                        },
                    )
                    .await?;
                let out = match state.transforms().render(slot, source, preset, focal).await {
                    Ok(out) => out,
                    Err(failure) => return Ok(Err(failure)),
                };
                let storage_key = format!("derived/{hash}/{}", variant.replace('@', "-"));
                let filesize = i64::try_from(out.bytes.len()).ok();
                state
                    .blobs()
                    .put_bytes(&storage_key, Bytes::from(out.bytes))
                    .await?;
                let recorded = vellum_storage::files::record_transform(
                    state.db(),
                    &NewTransform {
                        file_id,
                        content_hash: &hash,
                        key: &variant,
                        storage_key: &storage_key,
                        mime_type: out.mime_type,
                        filesize,
                        width: i32::try_from(out.width).ok(),
                        height: i32::try_from(out.height).ok(),
                    },
                    cap,
                    time::OffsetDateTime::now_utc(),
                )
                .await?;
                // The evicted rows are committed; their blobs go now (a reader that still found
                // a row re-checks the blob and renders again).
                for evicted in &recorded.evicted {
                    if let Err(err) = state.blobs().delete(evicted).await {
                        tracing::warn!(error = %error_chain(&err), key = %evicted, "could not delete an evicted derivative");
                    }
                }
                Ok(Ok(recorded.transform))
            };
            run.await.unwrap_or_else(|err: AppError| {
                // Logged here: the computation has no request of its own to carry the error.
                tracing::error!(
                    error = %error_chain(&err),
                    "computing a transform failed"
                );
                if matches!(err, AppError::Unavailable(_)) {
                    Err(Failure::Unavailable)
                } else {
                    Err(Failure::Internal)
                }
            })
        }
    })?;
    flight.await
}

/// The error of a transform that produced no output.
fn failure_error(state: &AppState, failure: Failure) -> AppError {
    const MIB: u64 = 1024 * 1024;
    match failure {
        Failure::Imaging(err) => imaging_error(err),
        Failure::TooCostly { needed, limit } => AppError::invalid(
            "file",
            format!(
                "The image is too costly to transform: it needs about {} MiB of memory; \
                 the limit is {} MiB (VELLUM_TRANSFORM_MEMORY).",
                needed.div_ceil(MIB),
                limit / MIB
            ),
        ),
        Failure::TimedOut { limit } => AppError::invalid(
            "file",
            format!(
                "The image is too costly to transform: it took longer than {} s \
                 (VELLUM_TRANSFORM_TIMEOUT).",
                limit.as_secs_f64()
            ),
        ),
        Failure::Crashed => AppError::invalid(
            "file",
            format!(
                "The image is too costly to transform: it exceeded the transform worker's \
                 limits (VELLUM_TRANSFORM_WORKER_MEMORY is {} MiB).",
                state.config().transform_worker_memory / MIB
            ),
        ),
        Failure::Internal => AppError::internal(std::io::Error::other(
            "the transform computation failed (see the log above)",
        )),
        Failure::Busy { retry_after } => AppError::Busy { retry_after },
        Failure::Unavailable => AppError::Busy { retry_after: 1 },
    }
}

fn imaging_error(err: ImagingError) -> AppError {
    match err {
        ImagingError::Unsupported { .. } => AppError::NotFound,
        ImagingError::TooManyPixels { width, height, max } => AppError::invalid(
            "file",
            format!(
                "The image is too large to transform ({width}x{height} pixels; the limit is {max})."
            ),
        ),
        ImagingError::TooComplex { what } => AppError::invalid(
            "file",
            format!("The image is too costly to transform: {what}."),
        ),
        ImagingError::Corrupt(_) => AppError::invalid("file", "The image could not be decoded."),
        err @ ImagingError::Encode(_) => AppError::internal(err),
    }
}
