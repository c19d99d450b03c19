//! `POST /files/folders` (`can-create-files`): a folder, with its own access or inheriting its
//! parent's. Folder names follow the file name rules and are unique among a parent's live
//! folders.

use serde_json::{Map, Value, json};
use vellum_domain::ValidationErrors;
use vellum_policy::{FileAction, Role, Visibility};
use vellum_storage::files::create_folder as store_folder;

use super::resource::admin_file;
use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::MAX_NAME;
use crate::files::patch::clean_filename;
use crate::principal::Principal;

/// Creates a folder from `{name, parent_id?, access?}`; answers it.
///
/// # Errors
/// 403 without `can-create-files`; 422 for a bad body, a taken name, or a parent that is not a
/// live folder; the database.
pub async fn create_folder(
    state: &AppState,
    principal: &Principal,
    body: &Value,
) -> Result<Value, AppError> {
    open(state, principal, "can-create-files").await?;
    crate::nul::refuse_in_body(body)?;
    let Value::Object(obj) = body else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    let mut errors = ValidationErrors::new();
    refuse_unknown(obj, &["name", "parent_id", "access"], &mut errors);
    let name = match obj.get("name") {
        Some(Value::String(raw)) => checked_name(raw, "name", &mut errors),
        _ => {
            errors.add("name", "The name field is required and must be a string.");
            None
        }
    };
    let parent = parent_id(obj.get("parent_id"), &mut errors).flatten();
    let access = access(obj.get("access"), &mut errors).flatten();
    let (Some(name), true) = (name, errors.is_empty()) else {
        return Err(AppError::Invalid(errors));
    };
    let grant = Role::super_admin().authorize_file_write(FileAction::Create)?;
    let folder = store_folder(state.db(), &grant, parent, &name, access).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "created",
        folder.id,
        vec!["name".to_owned()],
        json!({ "type": "folder", "parent_id": parent }),
    )
    .await;
    admin_file(state, principal, folder.id).await
}

/// A file or folder name: a plain name (no directories, no control characters, not `.` or
/// `..`), at most 255 characters.
pub(super) fn checked_name(raw: &str, key: &str, errors: &mut ValidationErrors) -> Option<String> {
    let cleaned = clean_filename(raw);
    if cleaned.is_empty() || cleaned != raw {
        errors.add(
            key,
            format!(
                "The {key} must be a non-empty file name (no directories or control characters)."
            ),
        );
        None
    } else if raw.chars().count() > MAX_NAME {
        errors.add(
            key,
            format!("The {key} must not be longer than {MAX_NAME} characters."),
        );
        None
    } else {
        Some(cleaned)
    }
}

/// `parent_id`: absent (`None`), `null` (`Some(None)`: the top level) or a positive id.
pub(super) fn parent_id(raw: Option<&Value>, errors: &mut ValidationErrors) -> Option<Option<i64>> {
    match raw {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(id) if id > 0 => Some(Some(id)),
            _ => {
                errors.add(
                    "parent_id",
                    "The parent_id field must be a folder id or null.",
                );
                None
            }
        },
        Some(_) => {
            errors.add(
                "parent_id",
                "The parent_id field must be a folder id or null.",
            );
            None
        }
    }
}

/// `access`: absent (`None`), `null` (`Some(None)`: inherit), `public` or `private`.
pub(super) fn access(
    raw: Option<&Value>,
    errors: &mut ValidationErrors,
) -> Option<Option<Visibility>> {
    match raw {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(s)) if Visibility::parse_access(Some(s)).is_some() => {
            Some(Visibility::parse_access(Some(s)))
        }
        Some(_) => {
            errors.add(
                "access",
                "The access field must be public, private or null.",
            );
            None
        }
    }
}

/// A 422 entry for each key of `obj` outside `known`, so a misspelt field is not silently
/// ignored.
pub(super) fn refuse_unknown(
    obj: &Map<String, Value>,
    known: &[&str],
    errors: &mut ValidationErrors,
) {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            errors.add(key.clone(), format!("The {key} field is not known."));
        }
    }
}
