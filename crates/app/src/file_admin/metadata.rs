//! `PUT /files/{file}`: one body for the two kinds of change a file manager makes, each behind
//! its own permission. The place of a row — `filename`, `parent_id` (a move) and `access` —
//! needs `can-edit-files`; what describes it — `title`, `description`, `alt_text`, `location`,
//! `download_name`, `focal_point_x`/`focal_point_y` (0 to 1) and `custom_fields` (an object of at
//! most 50 keys and 16 KiB) — needs `can-update-file-metadata`. A body with both kinds needs
//! both; the permissions are checked on the keys before any value is looked at.
//!
//! Moves keep the tree's rules (storage checks them under the tree lock): the new parent is a
//! live folder, a folder never moves into itself or its own subtree, folder names stay unique
//! among siblings. A row in the trash is not edited (404): restore it first.

use serde_json::{Map, Value, json};
use vellum_domain::ValidationErrors;
use vellum_policy::{FileAction, Role};
use vellum_storage::StorageError;
use vellum_storage::files::{FilePatch, update_file};

use super::folders::{access, checked_name, parent_id, refuse_unknown};
use super::log;
use super::resource::admin_file;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::MAX_NAME;
use crate::files::patch::{clean_filename, focal, optional_text};
use crate::items::parse_id;
use crate::principal::Principal;

/// Keys that change where a row is and who may see it: `can-edit-files`.
pub const PLACE_KEYS: [&str; 3] = ["filename", "parent_id", "access"];
/// Keys that describe a row: `can-update-file-metadata`.
pub const METADATA_KEYS: [&str; 8] = [
    "title",
    "description",
    "alt_text",
    "location",
    "download_name",
    "focal_point_x",
    "focal_point_y",
    "custom_fields",
];
/// The most keys `custom_fields` holds.
pub const MAX_CUSTOM_KEYS: usize = 50;
/// The largest `custom_fields`, as compact JSON.
pub const MAX_CUSTOM_BYTES: usize = 16 * 1024;
/// The longest `title`, `description` and `location`.
const MAX_TEXT: usize = 65_535;
/// The longest `alt_text`.
const MAX_ALT: usize = 2_000;

/// Applies `body` to the live row `id`; answers it.
///
/// # Errors
/// 403 without the permission each present kind of key needs (or without either), 404 for a
/// missing or trashed row, 422 for a bad body or a move the tree refuses, the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Value,
) -> Result<Value, AppError> {
    if !principal.may("can-edit-files") && !principal.may("can-update-file-metadata") {
        principal.require("can-edit-files")?;
    }
    let Value::Object(obj) = body else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    if obj.keys().any(|k| PLACE_KEYS.contains(&k.as_str())) {
        principal.require("can-edit-files")?;
    }
    if obj.keys().any(|k| METADATA_KEYS.contains(&k.as_str())) {
        principal.require("can-update-file-metadata")?;
    }
    let id = parse_id(id)?;
    crate::nul::refuse_in_body(body)?;
    let patch = parse(obj)?;
    let grant = Role::super_admin().authorize_file_write(FileAction::Update)?;
    let file = update_file(state.db(), &grant, id, patch)
        .await
        .map_err(|err| match err {
            StorageError::Conflict { field, message } if field == "name" => {
                AppError::invalid("filename", message)
            }
            other => other.into(),
        })?;
    state.content_changed(Scope::Files).await;
    let mut changed: Vec<String> = obj.keys().cloned().collect();
    changed.sort_unstable();
    let extra = if obj.contains_key("parent_id") {
        json!({ "parent_id": file.parent_id })
    } else {
        json!({})
    };
    log(state, principal, "updated", file.id, changed, extra).await;
    admin_file(state, principal, file.id).await
}

fn parse(obj: &Map<String, Value>) -> Result<FilePatch, AppError> {
    let mut errors = ValidationErrors::new();
    let known: Vec<&str> = PLACE_KEYS.iter().chain(&METADATA_KEYS).copied().collect();
    refuse_unknown(obj, &known, &mut errors);
    if obj.is_empty() {
        errors.add("body", "The request body must name at least one field.");
    }
    let mut patch = FilePatch {
        title: optional_text(obj, "title", MAX_TEXT, &mut errors),
        description: optional_text(obj, "description", MAX_TEXT, &mut errors),
        location: optional_text(obj, "location", MAX_TEXT, &mut errors),
        alt_text: optional_text(obj, "alt_text", MAX_ALT, &mut errors),
        download_name: optional_text(obj, "download_name", MAX_NAME, &mut errors),
        focal_point_x: focal(obj, "focal_point_x", &mut errors),
        focal_point_y: focal(obj, "focal_point_y", &mut errors),
        custom_fields: custom_fields(obj.get("custom_fields"), &mut errors),
        parent_id: parent_id(obj.get("parent_id"), &mut errors),
        access: access(obj.get("access"), &mut errors),
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
    match obj.get("filename") {
        None => {}
        Some(Value::String(raw)) => patch.filename = checked_name(raw, "filename", &mut errors),
        Some(_) => errors.add("filename", "The filename field must be a string."),
    }
    errors.into_result(patch).map_err(AppError::Invalid)
}

fn custom_fields(raw: Option<&Value>, errors: &mut ValidationErrors) -> Option<Option<Value>> {
    match raw {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Object(map)) => {
            if map.len() > MAX_CUSTOM_KEYS {
                errors.add(
                    "custom_fields",
                    format!("The custom_fields may hold at most {MAX_CUSTOM_KEYS} keys."),
                );
                None
            } else if serde_json::to_vec(map).map_or(usize::MAX, |v| v.len()) > MAX_CUSTOM_BYTES {
                errors.add(
                    "custom_fields",
                    format!("The custom_fields must not be larger than {MAX_CUSTOM_BYTES} bytes of JSON."),
                );
                None
            } else {
                Some(Some(Value::Object(map.clone())))
            }
        }
        Some(_) => {
            errors.add(
                "custom_fields",
                "The custom_fields field must be an object or null.",
            );
            None
        }
    }
}
