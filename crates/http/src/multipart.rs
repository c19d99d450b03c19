//! The multipart forms of `POST /files` (one file) and of the admin's `POST /files/upload` (many
//! files) and `POST /files/{file}/replace`, read as they arrive: each `file` part streams to the
//! blob store (through a small channel, as multipart fields cannot cross threads), the short text
//! parts are collected, unknown parts are drained. The forms' rules are
//! [`vellum_app::files::upload`]'s and [`vellum_app::file_admin::upload`]'s.

use std::future::Future;

use actix_multipart::{Field, Multipart};
use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use vellum_app::file_admin::{UploadManyForm, receive_part};
use vellum_app::files::{UploadForm, receive_file_part};
use vellum_app::{AppError, AppState};
use vellum_domain::ValidationErrors;

use crate::error::ApiError;

/// Reads the upload form, streaming its `file` part (at most `limit` bytes) into staging.
pub(crate) async fn read_upload(
    state: &AppState,
    mut multipart: Multipart,
    limit: u64,
) -> Result<UploadForm, ApiError> {
    let mut form = UploadForm::default();
    while let Some(field) = multipart.next().await {
        let Ok(mut field) = field else {
            form.errors
                .add("file", "The upload is not a valid multipart form.");
            break;
        };
        match field.name().unwrap_or_default() {
            "file" if form.received.is_none() => {
                let part_name = part_file_name(&field);
                let go_on = stream_part(field, |body| {
                    receive_file_part(state, &mut form, part_name, body, limit)
                })
                .await?;
                if !go_on {
                    return Ok(form);
                }
            }
            "name" => form.name = Some(text_part(&mut field, "name", &mut form.errors).await),
            "parent_id" => {
                let raw = text_part(&mut field, "parent_id", &mut form.errors).await;
                form.set_parent_id(&raw);
            }
            // Unknown parts (and a second `file`) are drained and ignored.
            _ => while let Some(Ok(_)) = field.next().await {},
        }
    }
    Ok(form)
}

/// Reads the many-file upload form: each `file` part streams into staging (at most `limit`
/// bytes each) before the next is read. Reading stops at the first part that fails (too large,
/// cut off, one too many): the request is refused whatever follows. On a blob store outage the
/// parts already staged are released before the error is returned.
pub(crate) async fn read_uploads(
    state: &AppState,
    mut multipart: Multipart,
    limit: u64,
) -> Result<UploadManyForm, ApiError> {
    let mut form = UploadManyForm::default();
    while let Some(field) = multipart.next().await {
        let Ok(mut field) = field else {
            form.errors
                .add("file", "The upload is not a valid multipart form.");
            break;
        };
        match field.name().unwrap_or_default() {
            "file" => {
                let part_name = part_file_name(&field);
                let read = stream_part(field, |body| {
                    receive_part(state, &mut form, part_name, body, limit)
                })
                .await;
                match read {
                    Ok(true) => {}
                    Ok(false) => return Ok(form),
                    Err(err) => {
                        form.discard(state).await;
                        return Err(err.into());
                    }
                }
            }
            "parent_id" => {
                let raw = text_part(&mut field, "parent_id", &mut form.errors).await;
                form.set_parent_id(&raw);
            }
            _ => while let Some(Ok(_)) = field.next().await {},
        }
    }
    Ok(form)
}

/// The file name a part's `Content-Disposition` carries.
fn part_file_name(field: &Field) -> Option<String> {
    field
        .content_disposition()
        .and_then(|cd| cd.get_filename())
        .map(str::to_owned)
}

/// Runs `receive` over the bytes of `field`, forwarded through a channel of four chunks: the
/// field stays on this task while the receiver may hand its stream to the blob store.
async fn stream_part<R, Fut>(mut field: Field, receive: R) -> Result<bool, AppError>
where
    R: FnOnce(BoxStream<'static, Result<Bytes, std::io::Error>>) -> Fut,
    Fut: Future<Output = Result<bool, AppError>>,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let forward = async move {
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()));
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                break;
            }
        }
    };
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    })
    .boxed();
    let (_, go_on) = futures_util::join!(forward, receive(body));
    go_on
}

/// A short text part, at most 4 KiB.
async fn text_part(field: &mut Field, name: &str, errors: &mut ValidationErrors) -> String {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        match chunk {
            Ok(chunk) if bytes.len() + chunk.len() <= 4096 => bytes.extend_from_slice(&chunk),
            _ => {
                errors.add(name, format!("The {name} field is too long or unreadable."));
                return String::new();
            }
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|_| {
        errors.add(name, format!("The {name} field must be UTF-8 text."));
        String::new()
    })
}

/// Reads a chat attachment form: its first `file` part streams into staging (at most `limit`
/// bytes) and is answered with its name; other parts are drained.
pub(crate) async fn read_attachment(
    state: &AppState,
    mut multipart: Multipart,
    limit: u64,
) -> Result<(String, vellum_app::ingest::Received), AppError> {
    while let Some(field) = multipart.next().await {
        let Ok(mut field) = field else {
            break;
        };
        if field.name() != Some("file") {
            while let Some(Ok(_)) = field.next().await {}
            continue;
        }
        let name = part_file_name(&field).unwrap_or_default();
        let mut received = None;
        let stored = stream_part(field, |body| async {
            match vellum_app::ingest::receive(state.blobs(), body, Some(limit)).await {
                Ok(got) => {
                    received = Some(got);
                    Ok(true)
                }
                Err(vellum_storage::StorageError::TooLarge { limit }) => Err(AppError::invalid(
                    "file",
                    format!("The file may not be larger than {limit} bytes."),
                )),
                Err(vellum_storage::StorageError::Io { .. }) => {
                    Err(AppError::invalid("file", "The upload was interrupted."))
                }
                Err(other) => Err(other.into()),
            }
        })
        .await;
        stored?;
        return received
            .map(|got| (name, got))
            .ok_or_else(|| AppError::invalid("file", "The upload was interrupted."));
    }
    Err(AppError::invalid("file", "A file is required."))
}

/// Reads a form's first `file` part into memory (at most `limit` bytes: an AI attachment is
/// small and read whole by its parser anyway) and answers it with its name; other parts are
/// drained.
pub(crate) async fn read_small_file(
    mut multipart: Multipart,
    limit: u64,
) -> Result<(String, Bytes), AppError> {
    while let Some(field) = multipart.next().await {
        let Ok(mut field) = field else {
            return Err(AppError::invalid(
                "file",
                "The upload is not a valid multipart form.",
            ));
        };
        if field.name() != Some("file") {
            while let Some(Ok(_)) = field.next().await {}
            continue;
        }
        let name = part_file_name(&field).unwrap_or_default();
        let mut bytes = bytes::BytesMut::new();
        while let Some(chunk) = field.next().await {
            let chunk =
                chunk.map_err(|_| AppError::invalid("file", "The upload was interrupted."))?;
            if (bytes.len() + chunk.len()) as u64 > limit {
                return Err(AppError::invalid(
                    "file",
                    format!(
                        "The file may not be greater than {} kilobytes.",
                        limit / 1024
                    ),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        return Ok((name, bytes.freeze()));
    }
    Err(AppError::invalid("file", "A file is required."))
}
