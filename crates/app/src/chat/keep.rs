//! Keeping an attachment beyond its thread: save it to the file manager, or add it to a file
//! field of a collection item. Both need the thread's access and the user's own file and item
//! permissions (`can-create-files`; `can-edit-collections` for the item), checked as the file
//! manager and the items admin check them; the new file is a row on the attachment's blob.

use std::future::ready;

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_policy::FileAction;
use vellum_storage::chat as store;
use vellum_storage::item_admin::find_item;

use super::attachments::attachment_of;
use super::open;
use crate::cache::Scope;
use crate::context::AppState;
use crate::error::AppError;
use crate::files::{MAX_NAME, clean_filename, parse_parent_id};
use crate::input::Input;
use crate::principal::Principal;
use crate::render::Rendered;

/// Saves the attachment as a file; answers the file as the file manager shows it.
async fn save(
    state: &AppState,
    principal: &Principal,
    chat: &str,
    attachment: &str,
    parent_id: Option<i64>,
    filename: Option<&str>,
) -> Result<Json, AppError> {
    let opened = open(state, principal, chat).await?;
    let row = attachment_of(state, &opened, attachment).await?;
    let actor = crate::file_admin::open(state, principal, "can-create-files").await?;
    let grant = actor
        .role
        .authorize_file_write(FileAction::Create)
        .map_err(AppError::from)?;
    let name = clean_filename(filename.unwrap_or(&row.name));
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(AppError::invalid(
            "filename",
            format!("The file needs a name of at most {MAX_NAME} characters."),
        ));
    }
    let file = store::attachments::save_as_file(
        state.db(),
        &grant,
        &opened.chat.id,
        &row.id,
        parent_id,
        &name,
    )
    .await
    .map_err(|err| match err {
        vellum_storage::StorageError::Conflict { message, .. } => {
            AppError::invalid("parent_id", message)
        }
        other => other.into(),
    })?;
    state.content_changed(Scope::Files).await;
    crate::file_admin::log(
        state,
        principal,
        "uploaded",
        file.id,
        Vec::new(),
        json!({"filename": file.filename, "parent_id": file.parent_id, "chat_id": opened.chat.id}),
    )
    .await;
    let admin_file = vellum_storage::files::browse::AdminFile {
        file,
        alt_text: None,
        custom_fields: None,
    };
    let mut rendered =
        crate::file_admin::resource::render_files(state, principal, &[admin_file]).await?;
    rendered
        .pop()
        .ok_or_else(|| AppError::internal(std::io::Error::other("no file rendered")))
}

/// `POST /chat/{chat}/attachments/{attachment}/save` `{"parent_id", "filename"}` (both
/// optional): the attachment as a new file of the file manager.
///
/// # Errors
/// As [`super::open`]; 403 without `can-create-files`; 404 for an unknown attachment; 422 for a
/// bad parent or name; the database.
pub async fn save_to_files(
    state: &AppState,
    principal: &Principal,
    chat: &str,
    attachment: &str,
    body: &Json,
) -> Result<Json, AppError> {
    let mut input = Input::new(body)?;
    let filename = input.optional_str("filename", MAX_NAME).flatten();
    let mut errors = vellum_domain::ValidationErrors::new();
    let parent_id = match input.raw("parent_id") {
        None | Some(Json::Null) => None,
        Some(Json::Number(n)) => parse_parent_id(&n.to_string(), &mut errors).flatten(),
        Some(Json::String(s)) => parse_parent_id(s, &mut errors).flatten(),
        Some(_) => {
            errors.add("parent_id", "The parent must be a folder id.");
            None
        }
    };
    for (field, messages) in errors.iter() {
        for message in messages {
            input.error(field, message.clone());
        }
    }
    input.finish()?;
    save(state, principal, chat, attachment, parent_id, filename).await
}

/// What adding to a field answers: the new file and the item after the change.
#[derive(Debug, Clone, Serialize)]
pub struct AddedToField {
    pub file: Json,
    pub item: Rendered,
}

/// `POST /chat/{chat}/attachments/{attachment}/add-to-field` `{"collection", "item_id",
/// "field"}`: saves the attachment as a file and puts it in the item's file field (replacing
/// the file of a `file` or `image` field, appended to a `files` field), through the items admin's
/// own update (its validation, revision, activity entry and cache epoch).
///
/// # Errors
/// As [`save_to_files`]; 403 without `can-edit-collections`; 404 for an unknown collection or
/// item; 422 for a field that holds no files; the database.
pub async fn add_to_field(
    state: &AppState,
    principal: &Principal,
    chat: &str,
    attachment: &str,
    body: &Json,
) -> Result<AddedToField, AppError> {
    principal.require("can-edit-collections")?;
    let mut input = Input::new(body)?;
    let collection = input.required_str("collection", 255);
    let field = input.required_str("field", 255);
    let item_id = match input.raw("item_id") {
        Some(Json::Number(n)) => n.as_i64().filter(|id| *id > 0),
        _ => None,
    };
    if item_id.is_none() {
        input.error("item_id", "The item id must be a positive integer.");
    }
    input.finish()?;
    let (Some(slug), Some(field), Some(item_id)) = (collection, field, item_id) else {
        return Err(AppError::invalid("item_id", "The item id is required."));
    };
    let snapshot = state.snapshot().await?;
    let target = snapshot
        .collection(slug)
        .cloned()
        .ok_or(AppError::NotFound)?;
    let Some(stored_field) = target.field(field) else {
        return Err(AppError::invalid(
            "field",
            "The collection has no such field.",
        ));
    };
    let field_type = stored_field.def.field_type;
    if !field_type.is_file() {
        return Err(AppError::invalid("field", "The field does not hold files."));
    }
    let item = find_item(state.db(), &target, item_id)
        .await?
        .filter(|item| item.deleted_at.is_none())
        .ok_or(AppError::NotFound)?;
    let file = save(state, principal, chat, attachment, None, None).await?;
    let file_id = file.get("id").cloned().unwrap_or(Json::Null);
    let value = if field_type == vellum_domain::FieldType::Files {
        let mut ids: Vec<Json> = item
            .data
            .get(field)
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        ids.push(file_id);
        Json::Array(ids)
    } else {
        file_id
    };
    let body = json!({ "data": { field: value } }).to_string();
    let rendered = crate::admin_items::update(
        state,
        principal,
        slug,
        &item_id.to_string(),
        "",
        ready(Ok::<_, AppError>(body.into_bytes())),
    )
    .await?;
    Ok(AddedToField {
        file,
        item: rendered,
    })
}
