//! A user's AI conversations: list (25 a page, pinned first), create, show, rename, pin, delete,
//! truncate, bulk delete. Another user's conversation is not found, whatever the caller's
//! permissions: conversations are private.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_storage::ai::{self as store, AiMessageRow, ConversationRow};

use super::{MAX_BULK, MAX_CONVERSATIONS, MAX_TITLE_CHARS, PER_PAGE, require};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::{Input, canonical_uuid};
use crate::paging::Paginated;
use crate::principal::Principal;
use crate::resources::timestamp;

/// The title of a conversation nobody named.
pub const UNTITLED: &str = "New conversation";
/// Messages a shown conversation carries (the latest).
pub const SHOWN_MESSAGES: u64 = 100;

/// A conversation as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ConversationResource {
    pub id: String,
    pub title: String,
    pub pinned: bool,
    pub pinned_at: Json,
    pub created_at: Json,
    pub updated_at: Json,
}

impl From<ConversationRow> for ConversationResource {
    fn from(row: ConversationRow) -> Self {
        Self {
            pinned: row.pinned_at.is_some(),
            pinned_at: timestamp(row.pinned_at),
            created_at: timestamp(Some(row.created_at)),
            updated_at: timestamp(Some(row.updated_at)),
            id: row.id,
            title: row.title,
        }
    }
}

/// A message as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct MessageResource {
    pub id: String,
    pub role: &'static str,
    pub content: String,
    /// The answer was cut short (the client or the provider went away).
    pub incomplete: bool,
    /// `[{"id", "name"}]` of the files the prompt carried.
    pub attachments: Json,
    pub created_at: Json,
}

impl From<AiMessageRow> for MessageResource {
    fn from(row: AiMessageRow) -> Self {
        Self {
            role: row.role.as_str(),
            attachments: serde_json::from_str(&row.attachments).unwrap_or_else(|_| json!([])),
            created_at: timestamp(Some(row.created_at)),
            id: row.id,
            content: row.content,
            incomplete: row.incomplete,
        }
    }
}

/// A conversation with its latest messages, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub conversation: ConversationResource,
    pub messages: Vec<MessageResource>,
}

pub type ConversationPage = Paginated<ConversationResource>;

/// The user's conversation `id`.
pub(crate) async fn owned(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ConversationRow, AppError> {
    let id = canonical_uuid(id).ok_or(AppError::NotFound)?;
    store::conversations::find(state.db(), &id, principal.user_id())
        .await?
        .ok_or(AppError::NotFound)
}

/// Starts a conversation for the user, unless the user keeps [`MAX_CONVERSATIONS`] already.
pub(crate) async fn start(
    state: &AppState,
    user_id: i64,
    title: &str,
) -> Result<ConversationRow, AppError> {
    if store::conversations::count(state.db(), user_id).await? >= MAX_CONVERSATIONS {
        return Err(AppError::invalid(
            "conversation_id",
            format!("You may keep at most {MAX_CONVERSATIONS} conversations; delete some first."),
        ));
    }
    Ok(store::conversations::create(state.db(), user_id, title).await?)
}

/// `GET /ai/conversations?page=`: 25 a page, pinned first.
///
/// # Errors
/// 403 as [`require`]; 422 for a bad `page`; the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<ConversationPage, AppError> {
    require(principal)?;
    let mut errors = vellum_domain::ValidationErrors::new();
    let pairs = crate::query::pairs(query);
    let page = match pairs.iter().find(|(k, _)| k == "page") {
        None => 1,
        Some((_, v)) => match v.parse::<u64>() {
            Ok(page) if page >= 1 => page,
            _ => {
                errors.add("page", "The page must be an integer of at least 1.");
                1
            }
        },
    };
    errors.into_result(()).map_err(AppError::Invalid)?;
    let page = store::conversations::list(state.db(), principal.user_id(), page, PER_PAGE).await?;
    Ok(Paginated::from_page(page, ConversationResource::from))
}

/// The title of a body's optional `title` (trimmed), or `None` with the problem recorded.
fn read_title<'a>(input: &mut Input<'a>, required: bool) -> Option<Option<&'a str>> {
    let title = if required {
        input.required_str("title", MAX_TITLE_CHARS).map(Some)
    } else {
        input.optional_str("title", MAX_TITLE_CHARS)
    };
    title.map(|t| t.map(str::trim).filter(|t| !t.is_empty()))
}

/// `POST /ai/conversations`: an empty conversation, optionally titled.
///
/// # Errors
/// 403 as [`require`]; 422 for a bad `title` or past [`MAX_CONVERSATIONS`]; the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<ConversationResource, AppError> {
    require(principal)?;
    let mut input = Input::new(body)?;
    let title = read_title(&mut input, false).flatten();
    input.finish()?;
    let row = start(state, principal.user_id(), title.unwrap_or(UNTITLED)).await?;
    Ok(row.into())
}

/// `GET /ai/conversations/{conversation}` (and the page `/ai/{conversation}`).
///
/// # Errors
/// 403 as [`require`]; 404 for a conversation that is not the user's; the database.
pub async fn show(state: &AppState, principal: &Principal, id: &str) -> Result<Shown, AppError> {
    require(principal)?;
    let row = owned(state, principal, id).await?;
    let messages = store::messages::recent(state.db(), &row.id, SHOWN_MESSAGES).await?;
    Ok(Shown {
        conversation: row.into(),
        messages: messages.into_iter().map(MessageResource::from).collect(),
    })
}

/// `PATCH /ai/conversations/{conversation}` with `title`.
///
/// # Errors
/// 403 as [`require`]; 404 as [`show`]; 422 for a missing or long `title`; the database.
pub async fn rename(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<ConversationResource, AppError> {
    require(principal)?;
    let row = owned(state, principal, id).await?;
    let mut input = Input::new(body)?;
    let title = read_title(&mut input, true).flatten();
    input.finish()?;
    let title = title.ok_or_else(|| AppError::invalid("title", "The title field is required."))?;
    store::conversations::rename(state.db(), &row.id, principal.user_id(), title)
        .await?
        .map(ConversationResource::from)
        .ok_or(AppError::NotFound)
}

/// `POST /ai/conversations/{conversation}/pin`: toggles `pinned_at` between null and now.
///
/// # Errors
/// 403 as [`require`]; 404 as [`show`]; the database.
pub async fn toggle_pin(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<ConversationResource, AppError> {
    require(principal)?;
    let row = owned(state, principal, id).await?;
    store::conversations::toggle_pin(state.db(), &row.id, principal.user_id())
        .await?
        .map(ConversationResource::from)
        .ok_or(AppError::NotFound)
}

/// `DELETE /ai/conversations/{conversation}`.
///
/// # Errors
/// 403 as [`require`]; 404 as [`show`]; the database.
pub async fn destroy(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    require(principal)?;
    let row = owned(state, principal, id).await?;
    store::conversations::delete(state.db(), principal.user_id(), &[row.id]).await?;
    Ok(())
}

/// `POST /ai/conversations/{conversation}/truncate` with `from_message_id`: deletes that message
/// and every later one; answers how many went.
///
/// # Errors
/// 403 as [`require`]; 404 as [`show`]; 422 when `from_message_id` is missing, not a UUID or
/// not a message of the conversation; the database.
pub async fn truncate(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<u64, AppError> {
    require(principal)?;
    let row = owned(state, principal, id).await?;
    let mut input = Input::new(body)?;
    let from = input.required_str("from_message_id", 64);
    input.finish()?;
    let invalid = || {
        AppError::invalid(
            "from_message_id",
            "The selected from message id is invalid.",
        )
    };
    let from = from.and_then(canonical_uuid).ok_or_else(invalid)?;
    match store::messages::truncate_from(state.db(), &row.id, &from).await? {
        0 => Err(invalid()),
        deleted => Ok(deleted),
    }
}

/// `POST /ai/conversations/bulk-destroy` with `ids`: 1 to 100 of the user's conversations;
/// answers how many went. Every id must be the user's: one that is not refuses the whole
/// request, so nothing is half done.
///
/// # Errors
/// 403 as [`require`]; 422 for a missing, empty or long list, an entry that is not a UUID or
/// not the user's conversation; the database.
pub async fn bulk_destroy(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<u64, AppError> {
    require(principal)?;
    let mut input = Input::new(body)?;
    if !input.has("ids") {
        input.error("ids", "The ids field is required.");
    }
    let ids = input.optional_uuids("ids", MAX_BULK);
    if ids.as_ref().is_some_and(Vec::is_empty) {
        input.error("ids", "The ids field must have at least 1 item.");
    }
    input.finish()?;
    let ids = ids.unwrap_or_default();
    let owned = store::conversations::owned(state.db(), principal.user_id(), &ids).await?;
    if let Some((i, _)) = ids.iter().enumerate().find(|(_, id)| !owned.contains(id)) {
        return Err(AppError::invalid(
            format!("ids.{i}"),
            format!("The selected ids.{i} is invalid."),
        ));
    }
    Ok(store::conversations::delete(state.db(), principal.user_id(), &ids).await?)
}
