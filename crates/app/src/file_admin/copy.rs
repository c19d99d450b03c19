//! `POST /files/{file}/copy`: a new file with the source's metadata and stored access, naming
//! the same content-addressed blob (the bytes are stored once; the blob goes only when no row
//! names it).

use serde_json::{Value, json};
use vellum_domain::ValidationErrors;
use vellum_policy::FileAction;

use super::{log, open};
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::{MAX_NAME, clean_filename};
use crate::items::parse_id;
use crate::principal::Principal;

/// Copies file `id`; `body` is `{"parent_id"?: id | null, "filename"?: string}` (without
/// `parent_id` the copy goes into the source's folder, with `null` to the top level; without
/// `filename` it keeps the source's name).
///
/// # Errors
/// 403 without `can-copy-files`; 404 for an unknown or deleted file; 422 for a folder, a bad
/// body, an empty or too long name, a parent that is not a live folder; the database.
pub async fn copy(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Value,
) -> Result<Value, AppError> {
    let actor = open(state, principal, "can-copy-files").await?;
    let grant = actor.role.authorize_file_write(FileAction::Create)?;
    let id = parse_id(id)?;
    let (parent, filename) = parse_body(body)?;
    let copy =
        vellum_storage::files::copy::copy_file(state.db(), &grant, id, parent, filename).await?;
    state.content_changed(Scope::Files).await;
    log(
        state,
        principal,
        "copied",
        copy.id,
        Vec::new(),
        json!({"source_id": id, "filename": copy.filename, "parent_id": copy.parent_id}),
    )
    .await;
    super::resource::admin_file(state, principal, copy.id).await
}

/// The copy's target folder (`None`: the source's; `Some(None)`: the top level) and name.
#[allow(clippy::type_complexity)]
fn parse_body(body: &Value) -> Result<(Option<Option<i64>>, Option<String>), AppError> {
    let mut errors = ValidationErrors::new();
    let Some(object) = body.as_object() else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    let parent = match object.get("parent_id") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(value) => match value.as_i64().filter(|id| *id > 0) {
            Some(id) => Some(Some(id)),
            None => {
                errors.add(
                    "parent_id",
                    "The parent_id field must be a folder id or null.",
                );
                None
            }
        },
    };
    let filename = match object.get("filename") {
        None | Some(Value::Null) => None,
        Some(Value::String(raw)) => {
            let name = clean_filename(raw);
            if name.is_empty() {
                errors.add("filename", "The filename must not be empty.");
            } else if name.chars().count() > MAX_NAME {
                errors.add(
                    "filename",
                    format!("The filename must not be longer than {MAX_NAME} characters."),
                );
            }
            Some(name)
        }
        Some(_) => {
            errors.add("filename", "The filename field must be a string.");
            None
        }
    };
    errors
        .into_result((parent, filename))
        .map_err(AppError::Invalid)
}
