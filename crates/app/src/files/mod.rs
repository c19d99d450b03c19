//! The files use cases: list, show, upload, update, soft delete, content and transforms.
//!
//! Reads follow the file grant mapping on the effective visibility (`read` for public files,
//! `read_private` for private ones); writes need the matching files grant, checked once, and
//! reach only what the same role's show reaches. Content and transforms answer a [`Download`]:
//! what to stream and with which validators; the surface streams it.

pub(crate) mod patch;
mod transform;
mod upload;

use std::future::Future;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Value, json};
use vellum_domain::ValidationErrors;
use vellum_policy::{FileAction, Visibility, WriteEcho};
use vellum_storage::StorageError;
use vellum_storage::files::{FileKind, ListFiles, ParentFilter, StoredFile};

pub use crate::served::Download;
pub(crate) use patch::clean_filename;
pub use transform::transform;
pub use upload::{UploadForm, parse_parent_id, receive_file_part, upload};

use crate::actor::Actor;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{PageMeta, parse_id};
use crate::outbox::Pending;
use crate::query::{first, pairs, parse_page};
use crate::resources::file_resource;
use crate::served::{Entry, Served};
use crate::webhook_events::{Event, Subject};

/// Longest `search` accepted (the spec's Limits table).
const MAX_SEARCH: usize = 255;
/// Longest file name.
pub(crate) const MAX_NAME: usize = 255;

/// A page of files and folders: `{"data": [...], "meta": {...}}`.
#[derive(Debug, Serialize)]
pub struct FilePage {
    pub data: Vec<Value>,
    pub meta: PageMeta,
}

/// A folder's entries (or search results) as the actor may see them; `query` is the raw query
/// string (`parent_id`, `search`, `page`, `per_page`).
///
/// # Errors
/// 403 without the files `read` grant, 422 for a bad query, the database.
pub async fn list(state: &AppState, actor: &Actor, query: &str) -> Result<FilePage, AppError> {
    let decision = actor.role.may_list_files();
    if !decision.allowed {
        return Err(decision.into());
    }
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let (page, per_page) = parse_page(&pairs, &mut errors);
    let search = first(&pairs, "search").filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > MAX_SEARCH) {
        errors.add(
            "search",
            format!("The search field must not be longer than {MAX_SEARCH} characters."),
        );
    }
    let parent = parent_filter(first(&pairs, "parent_id"), search.is_some(), &mut errors);
    errors.into_result(()).map_err(AppError::Invalid)?;
    let files = vellum_storage::files::list_files(
        state.db(),
        ListFiles {
            parent,
            search,
            include_private: actor.role.may_read_file(Visibility::Private).allowed,
            page,
            per_page,
        },
    )
    .await?;
    let urls = state.file_urls();
    Ok(FilePage {
        data: files
            .items
            .iter()
            .map(|f| file_resource(&urls, f))
            .collect(),
        meta: PageMeta {
            current_page: files.current_page,
            last_page: files.last_page,
            per_page: files.per_page,
            total: files.total,
        },
    })
}

/// `parent_id`: absent means the root (or anywhere, for a search), `null` or empty the root.
fn parent_filter(
    raw: Option<&str>,
    searching: bool,
    errors: &mut ValidationErrors,
) -> ParentFilter {
    match raw {
        None if searching => ParentFilter::Any,
        None | Some("" | "null") => ParentFilter::Root,
        Some(raw) => match raw.parse::<i64>() {
            Ok(id) if id > 0 => ParentFilter::Folder(id),
            _ => {
                errors.add(
                    "parent_id",
                    "The parent_id field must be a folder id or null.",
                );
                ParentFilter::Root
            }
        },
    }
}

/// One file or folder as FileResource.
///
/// # Errors
/// 404 when it does not exist, 403 without the grant its effective visibility needs.
pub async fn show(state: &AppState, actor: &Actor, id: &str) -> Result<Value, AppError> {
    let file = readable_file(state, actor, id).await?;
    Ok(file_resource(&state.file_urls(), &file))
}

/// Updates a file's metadata from an UpdateFileRequest body, awaited once the grant is checked.
///
/// # Errors
/// 403 without `update` (or on a private file the role may not read), 404, 422, the body's own
/// error, the database.
pub async fn update<B, E>(
    state: &AppState,
    actor: &Actor,
    id: &str,
    body: impl Future<Output = Result<B, E>>,
) -> Result<Value, E>
where
    B: AsRef<[u8]>,
    E: From<AppError>,
{
    let grant = actor
        .role
        .authorize_file_write(FileAction::Update)
        .map_err(AppError::from)?;
    let id = parse_id(id)?;
    let patch = patch::parse_patch(body.await?.as_ref())?;
    let pending = Pending::of(&actor.snapshot, Event::FileUpdated, None);
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    let file =
        vellum_storage::files::update_file_queuing(state.db(), &grant, id, patch, outbox.as_ref())
            .await
            .map_err(|err| match err {
                StorageError::Conflict { message, .. } => AppError::invalid("name", message),
                other => other.into(),
            })?;
    written(state, pending.as_ref()).await;
    Ok(written_file(state, actor, &file))
}

/// Soft-deletes a file or folder.
///
/// # Errors
/// 403 without `delete` (or on a private file the role may not read), 404, the database.
pub async fn delete(state: &AppState, actor: &Actor, id: &str) -> Result<(), AppError> {
    let grant = actor.role.authorize_file_write(FileAction::Delete)?;
    let id = parse_id(id)?;
    let pending = Pending::of(&actor.snapshot, Event::FileDeleted, None);
    let outbox = pending.as_ref().map(|p| p.outbox(state));
    vellum_storage::files::soft_delete_file_queuing(state.db(), &grant, id, outbox.as_ref())
        .await?;
    written(state, pending.as_ref()).await;
    Ok(())
}

/// After a file write committed with its webhook deliveries: stale what can show files, and
/// wake the job workers when deliveries were queued.
pub(crate) async fn written(state: &AppState, pending: Option<&Pending>) {
    state.content_changed(Scope::Files).await;
    crate::outbox::queued(state, pending);
}

/// Queues the webhooks of a file event.
pub(crate) async fn file_event(state: &AppState, event: Event, id: i64) {
    crate::outbox::emit(state, event, Subject::File { id }).await;
}

/// The original bytes of a file the actor may read.
///
/// # Errors
/// 404 (no such file, a folder, no stored bytes), 403, the database or blob store.
pub async fn content(state: &AppState, actor: &Actor, id: &str) -> Result<Download, AppError> {
    let served = Served::Content(parse_id(id)?);
    let epoch = state
        .stamp(&actor.snapshot, &[crate::cache::Scope::Files])
        .await;
    if let Some(entry) = state.served_files().get(&served, epoch) {
        return permitted(actor, &entry.download);
    }
    let download = content_of(readable_file(state, actor, id).await?, state).await?;
    state.served_files().put(
        served,
        Entry {
            epoch,
            download: download.clone(),
            transform: None,
            version: None,
        },
    );
    Ok(download)
}

/// Forgets what [`content`] remembers of file `id`: its blob was found missing when streamed,
/// and the next resolve must read the rows again.
pub fn forget_content(state: &AppState, id: &str) {
    if let Ok(id) = parse_id(id) {
        state.served_files().forget(&Served::Content(id));
    }
}

/// As [`forget_content`], for [`transform`]'s answer of preset `key`.
pub fn forget_transform(state: &AppState, id: &str, key: &str) {
    if let Ok(id) = parse_id(id) {
        state
            .served_files()
            .forget(&Served::Transform(id, key.to_owned()));
    }
}

/// A remembered download, if the actor may read a file of its visibility (decided now, as
/// [`readable_file`] does).
fn permitted(actor: &Actor, download: &Download) -> Result<Download, AppError> {
    let decision = actor.role.may_read_file(download.visibility);
    if decision.allowed {
        Ok(download.clone())
    } else {
        Err(decision.into())
    }
}

async fn content_of(file: StoredFile, state: &AppState) -> Result<Download, AppError> {
    let (Some(key), Some(hash), FileKind::File) = (
        file.storage_key.as_deref(),
        file.content_hash.as_deref(),
        file.kind,
    ) else {
        return Err(AppError::NotFound);
    };
    let size = match file.filesize.and_then(|s| u64::try_from(s).ok()) {
        Some(size) => size,
        None => state.blobs().head(key).await?.ok_or(AppError::NotFound)?,
    };
    Ok(Download {
        storage_key: key.to_owned(),
        size,
        mime_type: file
            .mime_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".to_owned()),
        etag: format!("\"{hash}\""),
        modified: file.updated_at.map(SystemTime::from),
        visibility: file.effective,
        download_name: file.download_name.clone(),
        ranges: true,
        immutable: false,
    })
}

/// The live file `id` if the role may read it: 404 when it does not exist, 403 without the
/// grant its effective visibility needs.
async fn readable_file(state: &AppState, actor: &Actor, id: &str) -> Result<StoredFile, AppError> {
    let id = parse_id(id)?;
    let file = vellum_storage::files::get_file(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    let decision = actor.role.may_read_file(file.effective);
    if decision.allowed {
        Ok(file)
    } else {
        Err(decision.into())
    }
}

/// The file an upload or update wrote, through the read policy a show of it by the same actor
/// applies: the FileResource when the actor may read it, otherwise only `{"id": …}`.
fn written_file(state: &AppState, actor: &Actor, file: &StoredFile) -> Value {
    match actor.role.file_write_echo(file.effective) {
        WriteEcho::Resource => file_resource(&state.file_urls(), file),
        WriteEcho::IdOnly => json!({ "id": file.id }),
    }
}
