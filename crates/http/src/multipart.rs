//! The multipart form of `POST /files`, read as it arrives: the `file` part streams to the blob
//! store (through a small channel, as multipart fields cannot cross threads), the short text
//! parts are collected, unknown parts are drained. The form's rules are
//! [`vellum_app::files::upload`]'s.

use actix_multipart::Multipart;
use bytes::Bytes;
use futures_util::StreamExt as _;
use vellum_app::AppState;
use vellum_app::files::{UploadForm, receive_file_part};
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
                let part_name = field
                    .content_disposition()
                    .and_then(|cd| cd.get_filename())
                    .map(str::to_owned);
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
                let receive = receive_file_part(state, &mut form, part_name, body, limit);
                let (_, go_on) = futures_util::join!(forward, receive);
                if !go_on? {
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

/// A short text part, at most 4 KiB.
async fn text_part(
    field: &mut actix_multipart::Field,
    name: &str,
    errors: &mut ValidationErrors,
) -> String {
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
