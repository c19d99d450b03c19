//! `POST /files`: the form's rules (a file, a clean name, a parent folder) and storing it. The
//! surface reads its transport's form (multipart for HTTP) into an [`UploadForm`], streaming the
//! `file` part through [`receive_file_part`]; [`upload`] does the rest.

use std::future::Future;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use serde_json::Value;
use vellum_domain::ValidationErrors;
use vellum_policy::FileAction;
use vellum_storage::StorageError;

use super::patch::clean_filename;
use super::{MAX_NAME, written_file};
use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::ingest::{self, Received, Upload};
use crate::outbox::Pending;
use crate::webhook_events::Event;

/// The form of an upload as the surface read it: the staged `file` part, the text parts, and
/// what was wrong with them (reported together with the form's other problems).
#[derive(Debug, Default)]
pub struct UploadForm {
    pub received: Option<Received>,
    /// The file name the `file` part itself carries.
    pub part_name: Option<String>,
    /// The `name` part, which wins over `part_name`.
    pub name: Option<String>,
    pub parent_id: Option<i64>,
    pub errors: ValidationErrors,
}

impl UploadForm {
    /// The `parent_id` part: a folder id, or empty / `null` for the root.
    pub fn set_parent_id(&mut self, raw: &str) {
        if let Some(parent_id) = parse_parent_id(raw, &mut self.errors) {
            self.parent_id = parent_id;
        }
    }
}

/// A `parent_id` form part: `Some(None)` for the root (empty or `null`), `Some(Some(id))` for a
/// folder id, `None` (with the error recorded) for anything else.
pub fn parse_parent_id(raw: &str, errors: &mut ValidationErrors) -> Option<Option<i64>> {
    match raw.trim() {
        "" | "null" => Some(None),
        raw => match raw.parse::<i64>() {
            Ok(id) if id > 0 => Some(Some(id)),
            _ => {
                errors.add(
                    "parent_id",
                    "The parent_id field must be a folder id or null.",
                );
                None
            }
        },
    }
}

/// Streams the `file` part into the blob store's staging area (at most `limit` bytes, the
/// project's `files_max_upload_bytes`). Answers whether the form may go on being read: a part
/// past the limit or cut off ends the form, with its error recorded.
///
/// # Errors
/// A blob store outage.
pub async fn receive_file_part(
    state: &AppState,
    form: &mut UploadForm,
    part_name: Option<String>,
    body: BoxStream<'_, Result<Bytes, std::io::Error>>,
    limit: u64,
) -> Result<bool, AppError> {
    form.part_name = part_name;
    match ingest::receive(state.blobs(), body, Some(limit)).await {
        Ok(received) => {
            form.received = Some(received);
            Ok(true)
        }
        Err(StorageError::TooLarge { limit }) => {
            form.errors.add(
                "file",
                format!("The file may not be larger than {limit} bytes."),
            );
            Ok(false)
        }
        Err(StorageError::Io { .. }) => {
            form.errors.add("file", "The upload was interrupted.");
            Ok(false)
        }
        Err(other) => Err(other.into()),
    }
}

/// Uploads a file. `read_form` is called with the size limit once the grant is checked, so a
/// role that may not upload is refused before a byte is stored; a refused form leaves nothing
/// behind.
///
/// # Errors
/// 403 without the files `create` grant, 422 for the form (no file, no name, too large, a parent
/// that is not a live folder), the form's own error, the database or blob store.
pub async fn upload<F, Fut, E>(state: &AppState, actor: &Actor, read_form: F) -> Result<Value, E>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<UploadForm, E>>,
    E: From<AppError>,
{
    let grant = actor
        .role
        .authorize_file_write(FileAction::Create)
        .map_err(AppError::from)?;
    let limit = actor.snapshot.settings.files_max_upload_bytes;
    let UploadForm {
        received,
        part_name,
        name,
        parent_id,
        mut errors,
    } = read_form(limit).await?;
    let filename = name
        .as_deref()
        .or(part_name.as_deref())
        .map(clean_filename)
        .unwrap_or_default();
    if received.is_none() && errors.get("file").is_none() {
        errors.add("file", "The file field is required.");
    }
    if filename.is_empty() && received.is_some() {
        errors.add("name", "The file needs a name.");
    }
    if filename.chars().count() > MAX_NAME {
        errors.add(
            "name",
            format!("The name must not be longer than {MAX_NAME} characters."),
        );
    }
    let received = match (received, errors.is_empty()) {
        (Some(received), true) => received,
        (received, _) => {
            if let Some(received) = received {
                ingest::discard(state.blobs(), received).await;
            }
            return Err(AppError::Invalid(errors).into());
        }
    };
    let upload = Upload {
        parent_id,
        filename,
        title: None,
        limit: Some(limit),
    };
    let pending = Pending::of(&actor.snapshot, Event::FileUploaded, None);
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    let file = ingest::record(
        state.db(),
        state.blobs(),
        &grant,
        received,
        upload,
        outbox.as_ref(),
    )
    .await
    .map_err(|err| match err {
        StorageError::Conflict { message, .. } => AppError::invalid("parent_id", message),
        other => other.into(),
    })?;
    super::written(state, pending.as_ref()).await;
    Ok(written_file(state, actor, &file))
}
