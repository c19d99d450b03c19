//! The files endpoints: list, upload, show, update, soft delete, content and transforms.
//!
//! Reads follow the file grant mapping on the effective visibility (`read` for public files,
//! `read_private` for private ones); writes need the matching files grant. Bytes stream from the
//! blob store with validators (`ETag`, `Last-Modified`), `Range` and `If-None-Match`; transform
//! outputs are computed once per (content, key), off the async executor, and kept as derived
//! blobs.

use std::time::SystemTime;

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, delete, get, patch, post, web};
use bytes::Bytes;
use futures_util::{StreamExt as _, TryStreamExt as _};
use serde_json::{Map, Value, json};
use vellum_domain::ValidationErrors;
use vellum_imaging::{FocalPoint, ImagingError, Preset};
use vellum_policy::{FileAction, Visibility, WriteEcho};
use vellum_storage::StorageError;
use vellum_storage::files::{
    FileKind, FilePatch, ListFiles, NewTransform, ParentFilter, StoredFile, StoredTransform,
};

use crate::actor::Actor;
use crate::error::ApiError;
use crate::ingest::{self, Received, Upload};
use crate::query::{first, pairs, parse_page};
use crate::resources::{file_resource, is_transformable};
use crate::state::AppState;
use crate::transforms::Failure;

/// Longest `search` accepted (the spec's Limits table).
const MAX_SEARCH: usize = 255;
/// Longest file name.
const MAX_NAME: usize = 255;

fn parse_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or(ApiError::NotFound)
}

/// The live file `id` if the role may read it: 404 when it does not exist, 403 without the
/// grant its effective visibility needs.
async fn readable_file(state: &AppState, actor: &Actor, id: &str) -> Result<StoredFile, ApiError> {
    let id = parse_id(id)?;
    let file = vellum_storage::files::get_file(state.db(), id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let decision = actor.role.may_read_file(file.effective);
    if decision.allowed {
        Ok(file)
    } else {
        Err(decision.into())
    }
}

#[utoipa::path(
    operation_id = "listFiles",
    tag = "files",
    security((), ("bearer" = [])),
    params(crate::openapi::FileListParams),
    responses(
        (status = 200, description = "A page of a folder's entries (or of search results)", content_type = "application/json", body = crate::openapi::FilePage),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/files")]
pub async fn list(
    state: web::Data<AppState>,
    actor: Actor,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let decision = actor.role.may_list_files();
    if !decision.allowed {
        return Err(decision.into());
    }
    let pairs = pairs(req.query_string());
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
    let parent = match first(&pairs, "parent_id") {
        None if search.is_some() => ParentFilter::Any,
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
    };
    errors.into_result(()).map_err(ApiError::Invalid)?;
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
    let base = &state.config().base_url;
    let data: Vec<Value> = files.items.iter().map(|f| file_resource(base, f)).collect();
    Ok(HttpResponse::Ok().json(json!({
        "data": data,
        "meta": {
            "current_page": files.current_page,
            "last_page": files.last_page,
            "per_page": files.per_page,
            "total": files.total,
        }
    })))
}

#[utoipa::path(
    operation_id = "showFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 200, description = "The file or folder", content_type = "application/json", body = crate::openapi::FileEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/files/{id}")]
pub async fn show(
    state: web::Data<AppState>,
    actor: Actor,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let file = readable_file(&state, &actor, &id).await?;
    Ok(HttpResponse::Ok().json(json!({"data": file_resource(&state.config().base_url, &file)})))
}

/// The multipart form of `POST /files`, once read.
struct Form {
    received: Option<Received>,
    part_name: Option<String>,
    name: Option<String>,
    parent_id: Option<i64>,
}

#[utoipa::path(
    operation_id = "uploadFile",
    tag = "files",
    security((), ("bearer" = [])),
    request_body(content_type = "multipart/form-data", content = crate::openapi::UploadFileForm),
    responses(
        (status = 201, description = "The uploaded file, or only its id for a role that may not read it", content_type = "application/json", body = crate::openapi::FileWriteEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 408, response = crate::openapi::BodyTimeout),
        (status = 413, response = crate::openapi::TooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[post("/files")]
pub async fn upload(
    state: web::Data<AppState>,
    actor: Actor,
    multipart: Multipart,
) -> Result<HttpResponse, ApiError> {
    let grant = actor.role.authorize_file_write(FileAction::Create)?;
    let limit = actor.snapshot.settings.files_max_upload_bytes;
    let mut errors = ValidationErrors::new();
    let form = match read_form(&state, multipart, limit, &mut errors).await {
        Ok(form) => form,
        Err(err) => return Err(err),
    };
    let filename = form
        .name
        .as_deref()
        .or(form.part_name.as_deref())
        .map(clean_filename)
        .unwrap_or_default();
    if form.received.is_none() && errors.get("file").is_none() {
        errors.add("file", "The file field is required.");
    }
    if filename.is_empty() && form.received.is_some() {
        errors.add("name", "The file needs a name.");
    }
    if filename.chars().count() > MAX_NAME {
        errors.add(
            "name",
            format!("The name must not be longer than {MAX_NAME} characters."),
        );
    }
    let received = match (form.received, errors.is_empty()) {
        (Some(received), true) => received,
        (received, _) => {
            if let Some(received) = received {
                ingest::discard(state.blobs(), received).await;
            }
            return Err(ApiError::Invalid(errors));
        }
    };
    let upload = Upload {
        parent_id: form.parent_id,
        filename,
        title: None,
        limit: Some(limit),
    };
    let file = ingest::record(state.db(), state.blobs(), &grant, received, upload)
        .await
        .map_err(|err| match err {
            StorageError::Conflict { message, .. } => ApiError::invalid("parent_id", message),
            other => other.into(),
        })?;
    state.content_changed().await;
    Ok(HttpResponse::Created().json(json!({"data": written_file(&state, &actor, &file)})))
}

/// Reads the form: the `file` part streams to the blob store as it arrives (through a small
/// channel, as multipart fields cannot cross threads), the short text parts are collected.
async fn read_form(
    state: &AppState,
    mut multipart: Multipart,
    limit: u64,
    errors: &mut ValidationErrors,
) -> Result<Form, ApiError> {
    let mut form = Form {
        received: None,
        part_name: None,
        name: None,
        parent_id: None,
    };
    while let Some(field) = multipart.next().await {
        let Ok(mut field) = field else {
            errors.add("file", "The upload is not a valid multipart form.");
            break;
        };
        match field.name().unwrap_or_default() {
            "file" if form.received.is_none() => {
                form.part_name = field
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
                let (_, received) =
                    futures_util::join!(forward, ingest::receive(state.blobs(), body, Some(limit)));
                match received {
                    Ok(received) => form.received = Some(received),
                    Err(StorageError::TooLarge { limit }) => {
                        errors.add(
                            "file",
                            format!("The file may not be larger than {limit} bytes."),
                        );
                        return Ok(form);
                    }
                    Err(StorageError::Io { .. }) => {
                        errors.add("file", "The upload was interrupted.");
                        return Ok(form);
                    }
                    Err(other) => return Err(other.into()),
                }
            }
            "name" => form.name = Some(text_part(&mut field, "name", errors).await),
            "parent_id" => {
                let raw = text_part(&mut field, "parent_id", errors).await;
                match raw.trim() {
                    "" | "null" => form.parent_id = None,
                    raw => match raw.parse::<i64>() {
                        Ok(id) if id > 0 => form.parent_id = Some(id),
                        _ => errors.add(
                            "parent_id",
                            "The parent_id field must be a folder id or null.",
                        ),
                    },
                }
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

/// A client's file name without any directory part or control characters.
fn clean_filename(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = base.chars().filter(|c| !c.is_control()).collect();
    let cleaned = cleaned.trim();
    if cleaned == "." || cleaned == ".." {
        String::new()
    } else {
        cleaned.to_owned()
    }
}

#[utoipa::path(
    operation_id = "updateFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    request_body(content_type = "application/json", content = crate::openapi::UpdateFileRequest),
    responses(
        (status = 200, description = "The updated file, or only its id for a role that may not read it", content_type = "application/json", body = crate::openapi::FileWriteEnvelope),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 408, response = crate::openapi::BodyTimeout),
        (status = 413, response = crate::openapi::TooLarge),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[patch("/files/{id}")]
pub async fn update(
    state: web::Data<AppState>,
    actor: Actor,
    id: web::Path<String>,
    req: HttpRequest,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let grant = actor.role.authorize_file_write(FileAction::Update)?;
    let id = parse_id(&id)?;
    let body = super::items::read_body(body, state.config().json_limit, &req).await?;
    let patch = parse_patch(&body)?;
    let file = vellum_storage::files::update_file(state.db(), &grant, id, patch)
        .await
        .map_err(|err| match err {
            StorageError::Conflict { message, .. } => ApiError::invalid("name", message),
            other => other.into(),
        })?;
    state.content_changed().await;
    Ok(HttpResponse::Ok().json(json!({"data": written_file(&state, &actor, &file)})))
}

/// The file an upload or update wrote, through the read policy a show of it by the same actor
/// applies: the FileResource when the actor may read it, otherwise only `{"id": …}`.
fn written_file(state: &AppState, actor: &Actor, file: &StoredFile) -> Value {
    match actor.role.file_write_echo(file.effective) {
        WriteEcho::Resource => file_resource(&state.config().base_url, file),
        WriteEcho::IdOnly => json!({ "id": file.id }),
    }
}

/// UpdateFileRequest: every property optional; unknown ones are ignored.
fn parse_patch(body: &[u8]) -> Result<FilePatch, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::invalid("body", "The request body must be a JSON object."))?;
    let Value::Object(obj) = value else {
        return Err(ApiError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    // PostgreSQL cannot store U+0000 (see `crate::nul`): named per property, like other errors.
    let mut nul = ValidationErrors::new();
    for (key, value) in &obj {
        if key.contains('\0') || crate::nul::in_json(value) {
            let name = key.replace('\0', "");
            nul.add(
                name.clone(),
                format!("The {name} field must not contain NUL characters."),
            );
        }
    }
    nul.into_result(()).map_err(ApiError::Invalid)?;
    let mut errors = ValidationErrors::new();
    let mut patch = FilePatch {
        title: optional_text(&obj, "title", 65_535, &mut errors),
        description: optional_text(&obj, "description", 65_535, &mut errors),
        location: optional_text(&obj, "location", 65_535, &mut errors),
        download_name: optional_text(&obj, "download_name", MAX_NAME, &mut errors),
        ..FilePatch::default()
    };
    if let Some(Some(name)) = &patch.download_name
        && clean_filename(name) != *name
    {
        errors.add(
            "download_name",
            "The download_name must be a plain file name (no directories or control characters).",
        );
    }
    patch.focal_point_x = focal(&obj, "focal_point_x", &mut errors);
    patch.focal_point_y = focal(&obj, "focal_point_y", &mut errors);
    match obj.get("name") {
        None => {}
        Some(Value::String(name)) => {
            let cleaned = clean_filename(name);
            if cleaned.is_empty() || cleaned != *name {
                errors.add(
                    "name",
                    "The name must be a non-empty file name (no directories or control characters).",
                );
            } else if name.chars().count() > MAX_NAME {
                errors.add(
                    "name",
                    format!("The name must not be longer than {MAX_NAME} characters."),
                );
            } else {
                patch.filename = Some(cleaned);
            }
        }
        Some(_) => errors.add("name", "The name field must be a string."),
    }
    errors.into_result(patch).map_err(ApiError::Invalid)
}

fn optional_text(
    obj: &Map<String, Value>,
    key: &str,
    max: usize,
    errors: &mut ValidationErrors,
) -> Option<Option<String>> {
    match obj.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) if s.chars().count() <= max => Some(Some(s.clone())),
        Some(Value::String(_)) => {
            errors.add(
                key,
                format!("The {key} field must not be longer than {max} characters."),
            );
            None
        }
        Some(_) => {
            errors.add(key, format!("The {key} field must be a string or null."));
            None
        }
    }
}

fn focal(
    obj: &Map<String, Value>,
    key: &str,
    errors: &mut ValidationErrors,
) -> Option<Option<f64>> {
    match obj.get(key) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(v) if (0.0..=1.0).contains(&v) => Some(Some(v)),
            _ => {
                errors.add(key, format!("The {key} field must be between 0 and 1."));
                None
            }
        },
        Some(_) => {
            errors.add(
                key,
                format!("The {key} field must be a number between 0 and 1 or null."),
            );
            None
        }
    }
}

#[utoipa::path(
    operation_id = "deleteFile",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 204, description = "Soft-deleted"),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[delete("/files/{id}")]
pub async fn destroy(
    state: web::Data<AppState>,
    actor: Actor,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let grant = actor.role.authorize_file_write(FileAction::Delete)?;
    let id = parse_id(&id)?;
    vellum_storage::files::soft_delete_file(state.db(), &grant, id).await?;
    state.content_changed().await;
    Ok(HttpResponse::NoContent().finish())
}

/// What a byte response is made of.
struct Bytes200<'a> {
    storage_key: &'a str,
    size: u64,
    mime_type: &'a str,
    etag: String,
    modified: Option<SystemTime>,
    visibility: Visibility,
    download_name: Option<&'a str>,
    /// Whether `Range` is honoured (content yes, transforms no).
    ranges: bool,
}

#[utoipa::path(
    operation_id = "fileContent",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id")),
    responses(
        (status = 200, description = "The original bytes, as the file's own MIME type (ETag, Last-Modified, Cache-Control)", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 206, description = "One requested byte range", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 416, description = "The requested range is not satisfiable (`Content-Range: bytes */size`)", content_type = "application/json", body = crate::openapi::ErrorBody),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/files/{id}/content")]
pub async fn content(
    state: web::Data<AppState>,
    actor: Actor,
    id: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let file = readable_file(&state, &actor, &id).await?;
    let (Some(key), Some(hash), FileKind::File) = (
        file.storage_key.as_deref(),
        file.content_hash.as_deref(),
        file.kind,
    ) else {
        return Err(ApiError::NotFound);
    };
    let size = match file.filesize.and_then(|s| u64::try_from(s).ok()) {
        Some(size) => size,
        None => state.blobs().head(key).await?.ok_or(ApiError::NotFound)?,
    };
    serve(
        &state,
        &req,
        Bytes200 {
            storage_key: key,
            size,
            mime_type: file
                .mime_type
                .as_deref()
                .unwrap_or("application/octet-stream"),
            etag: format!("\"{hash}\""),
            modified: file.updated_at.map(SystemTime::from),
            visibility: file.effective,
            download_name: file.download_name.as_deref(),
            ranges: true,
        },
    )
    .await
}

#[utoipa::path(
    operation_id = "fileTransform",
    tag = "files",
    security((), ("bearer" = [])),
    params(("id" = i64, Path, description = "File id"), ("key" = String, Path, description = "`thumbnail`, `small`, `medium`, `large` or `size-N` (N from 1 to 4096)")),
    responses(
        (status = 200, description = "The transformed image, in the source format", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 401, response = crate::openapi::Unauthenticated),
        (status = 403, response = crate::openapi::Forbidden),
        (status = 404, response = crate::openapi::NotFound),
        (status = 422, response = crate::openapi::Invalid),
        (status = 503, response = crate::openapi::Unavailable),
    )
)]
#[get("/files/{id}/transforms/{key}")]
pub async fn transform(
    state: web::Data<AppState>,
    actor: Actor,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, key) = path.into_inner();
    let preset = Preset::parse(&key).ok_or(ApiError::NotFound)?;
    let file = readable_file(&state, &actor, &id).await?;
    let (Some(source_key), Some(hash), true) = (
        file.storage_key.as_deref(),
        file.content_hash.as_deref(),
        is_transformable(&file),
    ) else {
        return Err(ApiError::NotFound);
    };
    // A fit preset whose box holds the whole image renders the image at its own size: every such
    // key (up to 4,096 `size-N`) shares one stored output instead of one each.
    let preset = match (file.width, file.height) {
        (Some(w), Some(h)) => match (u32::try_from(w), u32::try_from(h)) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => preset.canonical(w, h),
            _ => preset,
        },
        _ => preset,
    };
    let key = preset.key();
    let focal = FocalPoint {
        x: file.focal_point_x.unwrap_or(0.5),
        y: file.focal_point_y.unwrap_or(0.5),
    };
    // The focal point moves the thumbnail's crop, so it is part of the output's identity.
    let variant = if preset == Preset::Thumbnail {
        format!("{key}@{:.4}x{:.4}", focal.x, focal.y)
    } else {
        key.clone()
    };
    let stored = match stored_transform(&state, hash, &variant).await? {
        Some(stored) => stored,
        None => {
            match compute_transform(&state, &file, source_key, hash, &variant, preset, focal).await
            {
                Ok(stored) => stored,
                Err(failure) => return transform_failure(&state, failure),
            }
        }
    };
    let size = stored
        .filesize
        .and_then(|s| u64::try_from(s).ok())
        .unwrap_or_default();
    serve(
        &state,
        &req,
        Bytes200 {
            storage_key: &stored.storage_key,
            size,
            mime_type: &stored.mime_type,
            etag: format!("\"{hash}-{variant}\""),
            modified: file.updated_at.map(SystemTime::from),
            visibility: file.effective,
            download_name: None,
            ranges: false,
        },
    )
    .await
}

/// A stored output whose blob is still there. Its use is recorded at most once a minute (the
/// row says when it was last touched), which is what least-recently-used eviction reads.
async fn stored_transform(
    state: &AppState,
    hash: &str,
    variant: &str,
) -> Result<Option<StoredTransform>, ApiError> {
    match vellum_storage::files::find_transform(state.db(), hash, variant).await? {
        Some(t) if state.blobs().head(&t.storage_key).await?.is_some() => {
            let now = time::OffsetDateTime::now_utc();
            if t.needs_touch(now)
                && let Err(err) =
                    vellum_storage::files::touch_transform(state.db(), hash, variant, now).await
            {
                // Only the eviction order suffers: serve the output all the same.
                tracing::warn!(error = %crate::error::error_chain(&err), "could not record a transform's use");
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
                        tracing::warn!(error = %crate::error::error_chain(&err), key = %evicted, "could not delete an evicted derivative");
                    }
                }
                Ok(Ok(recorded.transform))
            };
            run.await.unwrap_or_else(|err: ApiError| {
                // Logged here: the computation has no request of its own to carry the error.
                tracing::error!(
                    error = %crate::error::error_chain(&err),
                    "computing a transform failed"
                );
                if matches!(err, ApiError::Unavailable(_)) {
                    Err(Failure::Unavailable)
                } else {
                    Err(Failure::Internal)
                }
            })
        }
    })?;
    flight.await
}

/// The answer to a transform that produced no output.
fn transform_failure(state: &AppState, failure: Failure) -> Result<HttpResponse, ApiError> {
    const MIB: u64 = 1024 * 1024;
    let retry_after = match failure {
        Failure::Imaging(err) => return Err(imaging_error(err)),
        Failure::TooCostly { needed, limit } => {
            return Err(ApiError::invalid(
                "file",
                format!(
                    "The image is too costly to transform: it needs about {} MiB of memory; \
                     the limit is {} MiB (VELLUM_TRANSFORM_MEMORY).",
                    needed.div_ceil(MIB),
                    limit / MIB
                ),
            ));
        }
        Failure::TimedOut { limit } => {
            return Err(ApiError::invalid(
                "file",
                format!(
                    "The image is too costly to transform: it took longer than {} s \
                     (VELLUM_TRANSFORM_TIMEOUT).",
                    limit.as_secs_f64()
                ),
            ));
        }
        Failure::Crashed => {
            return Err(ApiError::invalid(
                "file",
                format!(
                    "The image is too costly to transform: it exceeded the transform worker's \
                     limits (VELLUM_TRANSFORM_WORKER_MEMORY is {} MiB).",
                    state.config().transform_worker_memory / MIB
                ),
            ));
        }
        Failure::Internal => {
            return Err(ApiError::internal(std::io::Error::other(
                "the transform computation failed (see the log above)",
            )));
        }
        Failure::Busy { retry_after } => retry_after,
        Failure::Unavailable => 1,
    };
    // 503 like `ApiError`'s (same body), with the `Retry-After` a full budget calls for.
    tracing::warn!(
        retry_after,
        "transform refused: the transform budget is busy"
    );
    Ok(HttpResponse::ServiceUnavailable()
        .insert_header((header::RETRY_AFTER, retry_after.to_string()))
        .insert_header(header::ContentType::json())
        .body(json!({"message": "Service unavailable."}).to_string()))
}

fn imaging_error(err: ImagingError) -> ApiError {
    match err {
        ImagingError::Unsupported { .. } => ApiError::NotFound,
        ImagingError::TooManyPixels { width, height, max } => ApiError::invalid(
            "file",
            format!(
                "The image is too large to transform ({width}x{height} pixels; the limit is {max})."
            ),
        ),
        ImagingError::TooComplex { what } => ApiError::invalid(
            "file",
            format!("The image is too costly to transform: {what}."),
        ),
        ImagingError::Corrupt(_) => ApiError::invalid("file", "The image could not be decoded."),
        err @ ImagingError::Encode(_) => ApiError::internal(err),
    }
}

/// Whether a request's `If-None-Match` names `etag` (or `*`).
fn not_modified(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// A single `bytes=` range resolved against `size`: `Ok(None)` for no (or an ignorable) Range
/// header, `Err(())` when it cannot be satisfied (416).
fn byte_range(req: &HttpRequest, size: u64) -> Result<Option<std::ops::Range<u64>>, ()> {
    let Some(raw) = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
    else {
        return Ok(None);
    };
    let Some(spec) = raw.trim().strip_prefix("bytes=") else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None); // several ranges: the whole content is a valid answer
    }
    let Some((start, end)) = spec.split_once('-') else {
        return Ok(None);
    };
    let (start, end) = (start.trim(), end.trim());
    let range = match (start.parse::<u64>(), end.parse::<u64>()) {
        (Ok(s), Ok(e)) if s <= e => s..e.saturating_add(1).min(size),
        (Ok(s), Err(_)) if end.is_empty() => s..size,
        (Err(_), Ok(n)) if start.is_empty() && n > 0 => size.saturating_sub(n)..size,
        _ => return Ok(None),
    };
    if range.start >= size || range.is_empty() {
        return Err(());
    }
    Ok(Some(range))
}

/// Types a browser would execute or render as a document: never served inline.
fn is_active(mime: &str) -> bool {
    let mime = mime.to_ascii_lowercase();
    mime.contains("html")
        || mime.contains("xml")
        || mime.contains("javascript")
        || mime.starts_with("text/")
        || mime == "application/pdf"
}

async fn serve(
    state: &AppState,
    req: &HttpRequest,
    out: Bytes200<'_>,
) -> Result<HttpResponse, ApiError> {
    let builder = |status: StatusCode| -> HttpResponseBuilder {
        let mut res = HttpResponse::build(status);
        res.insert_header((header::ETAG, out.etag.clone()));
        res.insert_header((
            header::CACHE_CONTROL,
            match out.visibility {
                Visibility::Public => "public, max-age=300",
                Visibility::Private => "private, no-cache",
            },
        ));
        if let Some(modified) = out.modified {
            res.insert_header((header::LAST_MODIFIED, header::HttpDate::from(modified)));
        }
        res.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
        if out.ranges {
            res.insert_header((header::ACCEPT_RANGES, "bytes"));
        }
        res
    };
    if not_modified(req, &out.etag) {
        return Ok(builder(StatusCode::NOT_MODIFIED).finish());
    }
    let range = if out.ranges {
        match byte_range(req, out.size) {
            Ok(range) => range,
            Err(()) => {
                return Ok(builder(StatusCode::RANGE_NOT_SATISFIABLE)
                    .insert_header((header::CONTENT_RANGE, format!("bytes */{}", out.size)))
                    .json(json!({"message": "The requested range cannot be satisfied."})));
            }
        }
    } else {
        None
    };
    let blob = state.blobs().get(out.storage_key, range.clone()).await?;
    let mut res = builder(if range.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    });
    if range.is_some() {
        res.insert_header((
            header::CONTENT_RANGE,
            format!(
                "bytes {}-{}/{}",
                blob.range.start,
                blob.range.end.saturating_sub(1),
                blob.size
            ),
        ));
    }
    res.insert_header((header::CONTENT_TYPE, out.mime_type));
    let disposition = match (out.download_name, is_active(out.mime_type)) {
        (Some(name), _) => Some(format!(
            "attachment; filename=\"{}\"; filename*=UTF-8''{}",
            ascii_name(name),
            percent(name)
        )),
        (None, true) => Some("attachment".to_owned()),
        (None, false) => None,
    };
    if let Some(disposition) = disposition.and_then(|d| HeaderValue::from_str(&d).ok()) {
        res.insert_header((header::CONTENT_DISPOSITION, disposition));
    }
    if is_active(out.mime_type) {
        res.insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"));
    }
    let length = blob.range.end.saturating_sub(blob.range.start);
    let stream = blob
        .stream
        .map_err(|e| actix_web::error::ErrorInternalServerError(e.to_string()));
    Ok(res.no_chunking(length).streaming(stream))
}

/// The name for the plain `filename=` parameter: ASCII only, quotes and backslashes replaced.
fn ascii_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// RFC 5987 encoding for `filename*=`.
fn percent(name: &str) -> String {
    url::form_urlencoded::byte_serialize(name.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn filenames_lose_directories_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\Users\\me\\photo.jpg"), "photo.jpg");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(".."), "");
        assert_eq!(clean_filename("dir/"), "");
    }

    #[test]
    fn ranges() {
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::RANGE, v.to_owned()))
                .to_http_request()
        };
        assert_eq!(byte_range(&req("bytes=0-9"), 100), Ok(Some(0..10)));
        assert_eq!(byte_range(&req("bytes=90-"), 100), Ok(Some(90..100)));
        assert_eq!(byte_range(&req("bytes=-10"), 100), Ok(Some(90..100)));
        assert_eq!(byte_range(&req("bytes=95-200"), 100), Ok(Some(95..100)));
        assert_eq!(byte_range(&req("bytes=100-"), 100), Err(()));
        assert_eq!(byte_range(&req("bytes=0-1,5-6"), 100), Ok(None));
        assert_eq!(byte_range(&req("items=0-1"), 100), Ok(None));
        assert_eq!(byte_range(&req("bytes=9-2"), 100), Ok(None));
        assert_eq!(
            byte_range(&TestRequest::default().to_http_request(), 100),
            Ok(None)
        );
    }

    #[test]
    fn etags_match_strong_weak_and_star() {
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::IF_NONE_MATCH, v.to_owned()))
                .to_http_request()
        };
        assert!(not_modified(&req("\"abc\""), "\"abc\""));
        assert!(not_modified(&req("W/\"abc\", \"x\""), "\"abc\""));
        assert!(not_modified(&req("*"), "\"abc\""));
        assert!(!not_modified(&req("\"abd\""), "\"abc\""));
    }
}
