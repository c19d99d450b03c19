//! `POST /files/upload`: many files at once, all or none. Each `file` part streams into the blob
//! store's staging area as it arrives (one part at a time, so a request holds one part's small
//! buffers whatever its size), capped by the project's `files_max_upload_bytes`; only once the
//! whole form is read and valid are the blobs published and the rows written, in one
//! transaction ([`ingest::record_many`]). A refused form releases its staged copies and
//! publishes nothing.

use std::future::Future;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};
use vellum_domain::ValidationErrors;
use vellum_policy::FileAction;
use vellum_storage::StorageError;

use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::{MAX_NAME, clean_filename, parse_parent_id};
use crate::ingest::{self, Received, Upload};
use crate::principal::Principal;

/// Most `file` parts one request may carry.
pub const MAX_FILES: usize = 100;

/// One `file` part, staged.
#[derive(Debug)]
pub struct StagedPart {
    /// The name the part carries, cleaned of directories and control characters.
    pub name: String,
    pub received: Received,
}

/// The many-file form as the surface read it. Hand it to [`upload`], or to [`Self::discard`]
/// when the surface cannot finish reading it: either releases the staged copies.
#[derive(Debug, Default)]
pub struct UploadManyForm {
    pub files: Vec<StagedPart>,
    /// How many `file` parts were seen, the one being read included: its index is the `<n>`
    /// of its `file.<n>` error.
    pub seen: usize,
    pub parent_id: Option<i64>,
    pub errors: ValidationErrors,
}

impl UploadManyForm {
    /// The `parent_id` part: a folder id, or empty / `null` for the top level.
    pub fn set_parent_id(&mut self, raw: &str) {
        if let Some(parent_id) = parse_parent_id(raw, &mut self.errors) {
            self.parent_id = parent_id;
        }
    }

    /// Releases every staged copy: for a form that will not be recorded.
    pub async fn discard(self, state: &AppState) {
        for part in self.files {
            ingest::discard(state.blobs(), part.received).await;
        }
    }
}

/// Streams the next `file` part into staging (at most `limit` bytes). Answers whether the form
/// may go on being read: a part past the limit, cut off or beyond [`MAX_FILES`] ends it with its
/// error recorded (the request is refused whatever follows).
///
/// # Errors
/// A blob store outage.
pub async fn receive_part(
    state: &AppState,
    form: &mut UploadManyForm,
    part_name: Option<String>,
    body: BoxStream<'_, Result<Bytes, std::io::Error>>,
    limit: u64,
) -> Result<bool, AppError> {
    let index = form.seen;
    form.seen += 1;
    if index >= MAX_FILES {
        form.errors.add(
            "file",
            format!("At most {MAX_FILES} files may be uploaded at once."),
        );
        return Ok(false);
    }
    let name = part_name.as_deref().map(clean_filename).unwrap_or_default();
    match ingest::receive(state.blobs(), body, Some(limit)).await {
        Ok(received) => {
            form.files.push(StagedPart { name, received });
            Ok(true)
        }
        Err(StorageError::TooLarge { limit }) => {
            form.errors.add(
                format!("file.{index}"),
                format!("The file {name:?} may not be larger than {limit} bytes."),
            );
            Ok(false)
        }
        Err(StorageError::Io { .. }) => {
            form.errors.add(
                format!("file.{index}"),
                format!("The upload of {name:?} was interrupted."),
            );
            Ok(false)
        }
        Err(other) => Err(other.into()),
    }
}

/// Uploads every file of the form into its `parent_id` folder (the top level without one).
/// `read_form` is called with the size cap once the permission is checked, so a user who may
/// not upload is refused before a byte is stored. Answers the files in the order of the parts.
///
/// # Errors
/// 403 without `can-create-files`; 422 for the form (no file, more than [`MAX_FILES`], a file
/// over the cap or without a name, a parent that is not a live folder), with nothing stored;
/// the form's own error; the database or blob store.
pub async fn upload<F, Fut, E>(
    state: &AppState,
    principal: &Principal,
    read_form: F,
) -> Result<Vec<Value>, E>
where
    F: FnOnce(u64) -> Fut,
    Fut: Future<Output = Result<UploadManyForm, E>>,
    E: From<AppError>,
{
    let actor = open(state, principal, "can-create-files").await?;
    let grant = actor
        .role
        .authorize_file_write(FileAction::Create)
        .map_err(AppError::from)?;
    let limit = actor.snapshot.settings.files_max_upload_bytes;
    let mut form = read_form(limit).await?;
    if form.seen == 0 && form.errors.get("file").is_none() {
        form.errors.add("file", "At least one file is required.");
    }
    for (index, part) in form.files.iter().enumerate() {
        if part.name.is_empty() {
            form.errors
                .add(format!("file.{index}"), "The file needs a name.");
        } else if part.name.chars().count() > MAX_NAME {
            form.errors.add(
                format!("file.{index}"),
                format!("The name must not be longer than {MAX_NAME} characters."),
            );
        }
    }
    if !form.errors.is_empty() {
        let errors = std::mem::take(&mut form.errors);
        form.discard(state).await;
        return Err(AppError::Invalid(errors).into());
    }
    let parent_id = form.parent_id;
    let uploads = form
        .files
        .into_iter()
        .map(|part| {
            let upload = Upload {
                parent_id,
                filename: part.name,
                title: None,
                limit: Some(limit),
            };
            (part.received, upload)
        })
        .collect();
    let files = ingest::record_many(state.db(), state.blobs(), &grant, parent_id, uploads)
        .await
        .map_err(|err| match err {
            StorageError::Conflict { message, .. } => AppError::invalid("parent_id", message),
            other => other.into(),
        })?;
    state.content_changed(Scope::Files).await;
    for file in &files {
        log(
            state,
            principal,
            "uploaded",
            file.id,
            Vec::new(),
            json!({"filename": file.filename, "parent_id": file.parent_id}),
        )
        .await;
    }
    // New rows: no alt text, custom fields or tags yet; one query for the page's favorites.
    let files: Vec<vellum_storage::files::browse::AdminFile> = files
        .into_iter()
        .map(|file| vellum_storage::files::browse::AdminFile {
            file,
            alt_text: None,
            custom_fields: None,
        })
        .collect();
    Ok(super::resource::render_files(state, principal, &files).await?)
}
