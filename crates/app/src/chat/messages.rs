//! Messages: a page of them, post (also on an item, starting its thread), edit and delete by
//! the author, pin, react, and read marks.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value as Json, json};
use time::OffsetDateTime;
use vellum_storage::chat::{self as store, ChatKind, MessageRow, NewMessage};

use super::events::{self, MESSAGE_CREATED, MESSAGE_DELETED, MESSAGE_UPDATED, REACTION_TOGGLED};
use super::resource::{MessageResource, ReactionResource};
use super::text::{Mentioned, Mentions, clean_body, preview};
use super::threads::item_target;
use super::{
    CHAT_LOG, CHAT_PERMISSION, ITEMS_PERMISSION, MAX_ATTACHMENTS, MAX_EMOJI_CHARS, MAX_MENTIONS,
    MAX_NOTIFIED, MAX_REACTIONS_PER_USER, Opened, not_author, open,
};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;
use crate::query::{first, pairs};

/// Messages a page holds by default and at most.
pub const DEFAULT_MESSAGES: u64 = 50;
pub const MAX_MESSAGES: u64 = 100;

/// `GET /chat/{chat}/messages`: oldest first; `has_more` when older ones exist.
#[derive(Debug, Clone, Serialize)]
pub struct MessagePage {
    pub data: Vec<MessageResource>,
    pub has_more: bool,
}

/// At most `limit` messages before `before` (the newest without it), and whether there are
/// older ones.
pub(crate) async fn page_of_messages(
    state: &AppState,
    chat_id: &str,
    before: Option<i64>,
    limit: u64,
) -> Result<(Vec<MessageResource>, bool), AppError> {
    let mut rows =
        store::messages::list_messages(state.db(), chat_id, before, limit + 1, false).await?;
    let has_more = rows.len() as u64 > limit;
    if has_more {
        rows.remove(0);
    }
    Ok((
        rows.into_iter().map(MessageResource::from).collect(),
        has_more,
    ))
}

/// `GET /chat/{chat}/messages?before=&limit=&pinned=1`.
///
/// # Errors
/// As [`super::open`]; 422 for a bad query; the database.
pub async fn list_messages(
    state: &AppState,
    principal: &Principal,
    id: &str,
    query: &str,
) -> Result<MessagePage, AppError> {
    let opened = open(state, principal, id).await?;
    let pairs = pairs(query);
    let mut errors = vellum_domain::ValidationErrors::new();
    let before = match first(&pairs, "before") {
        None | Some("") => None,
        Some(raw) => {
            let parsed = raw.parse::<i64>().ok().filter(|id| *id > 0);
            if parsed.is_none() {
                errors.add("before", "The before parameter must be a message id.");
            }
            parsed
        }
    };
    let limit = match first(&pairs, "limit") {
        None | Some("") => DEFAULT_MESSAGES,
        Some(raw) => raw
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=MAX_MESSAGES).contains(n))
            .unwrap_or_else(|| {
                errors.add(
                    "limit",
                    format!("The limit must be between 1 and {MAX_MESSAGES}."),
                );
                DEFAULT_MESSAGES
            }),
    };
    errors.into_result(()).map_err(AppError::Invalid)?;
    if first(&pairs, "pinned").is_some_and(|v| matches!(v, "1" | "true")) {
        let rows = store::messages::list_messages(state.db(), &opened.chat.id, before, limit, true)
            .await?;
        return Ok(MessagePage {
            data: rows.into_iter().map(MessageResource::from).collect(),
            has_more: false,
        });
    }
    let (data, has_more) = page_of_messages(state, &opened.chat.id, before, limit).await?;
    Ok(MessagePage { data, has_more })
}

/// What a post or an edit says, checked.
struct Draft {
    body: String,
    mentions: Mentions,
    reply_to_id: Option<i64>,
    attachment_ids: Vec<String>,
}

/// Reads `body`, the mentions and (for a post) `reply_to_id` and `attachment_ids`.
async fn read_draft(
    state: &AppState,
    opened: &Opened,
    body: &Json,
    post: bool,
    has_attachments: bool,
) -> Result<Draft, AppError> {
    let mut input = Input::new(body)?;
    let text = match input.raw("body") {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(text)) => text.clone(),
        Some(_) => {
            input.error("body", "The message must be text.");
            String::new()
        }
    };
    let mut errors = vellum_domain::ValidationErrors::new();
    let text = clean_body(&text, &mut errors);
    for (field, messages) in errors.iter() {
        for message in messages {
            input.error(field, message.clone());
        }
    }
    let users = input
        .optional_ids("mentioned_user_ids", MAX_MENTIONS)
        .unwrap_or_default();
    let groups = input
        .optional_ids("mentioned_group_ids", MAX_MENTIONS)
        .unwrap_or_default();
    let (reply_to_id, attachment_ids) = if post {
        let reply_to_id = match input.raw("reply_to_id") {
            None | Some(Json::Null) => None,
            Some(Json::Number(n)) if n.as_i64().is_some_and(|id| id > 0) => n.as_i64(),
            Some(_) => {
                input.error("reply_to_id", "The reply must name a message id.");
                None
            }
        };
        let attachments: Vec<String> = input
            .optional_strings("attachment_ids", MAX_ATTACHMENTS, 36)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect();
        (reply_to_id, attachments)
    } else {
        (None, Vec::new())
    };
    if text.is_empty() && attachment_ids.is_empty() && !has_attachments {
        input.error("body", "Write a message or attach a file.");
    }
    if users.len() + groups.len() > MAX_MENTIONS {
        input.error(
            "mentioned_user_ids",
            format!("A message mentions at most {MAX_MENTIONS} people and groups."),
        );
    }
    input.finish()?;
    let mentions = mentions(state, opened, &users, &groups).await?;
    Ok(Draft {
        body: text,
        mentions,
        reply_to_id,
        attachment_ids,
    })
}

/// The mentions, checked against the thread: none in a 1:1 conversation; in a direct thread
/// only its people and groups; in an item thread any live user or group.
async fn mentions(
    state: &AppState,
    opened: &Opened,
    users: &[i64],
    groups: &[i64],
) -> Result<Mentions, AppError> {
    if users.is_empty() && groups.is_empty() {
        return Ok(Mentions::default());
    }
    let db = state.db();
    if opened.chat.kind == ChatKind::Direct {
        let set = store::threads::member_set(db, &opened.chat.id).await?;
        if set.groups.is_empty() && set.users.len() <= 2 {
            return Err(AppError::invalid(
                "mentioned_user_ids",
                "Mentions are not available in a one-to-one conversation.",
            ));
        }
        let people: BTreeSet<i64> = store::threads::member_users(db, &opened.chat.id, MAX_NOTIFIED)
            .await?
            .into_iter()
            .map(|p| p.id)
            .collect();
        if users.iter().any(|id| !people.contains(id)) {
            return Err(AppError::invalid(
                "mentioned_user_ids",
                "Only people in this conversation can be mentioned.",
            ));
        }
        if groups.iter().any(|id| !set.groups.contains(id)) {
            return Err(AppError::invalid(
                "mentioned_group_ids",
                "Only groups in this conversation can be mentioned.",
            ));
        }
    }
    let named_users = store::threads::users_named(db, users).await?;
    let named_groups = store::threads::groups_named(db, groups).await?;
    if named_users.len() != users.len() {
        return Err(AppError::invalid(
            "mentioned_user_ids",
            "A mentioned user does not exist.",
        ));
    }
    if named_groups.len() != groups.len() {
        return Err(AppError::invalid(
            "mentioned_group_ids",
            "A mentioned group does not exist.",
        ));
    }
    let mentioned = |p: store::Person| Mentioned {
        id: p.id,
        name: p.name,
    };
    Ok(Mentions {
        users: named_users.into_iter().map(mentioned).collect(),
        groups: named_groups.into_iter().map(mentioned).collect(),
    })
}

/// `POST /chat/{chat}/messages` `{"body", "reply_to_id", "attachment_ids", "mentioned_user_ids",
/// "mentioned_group_ids"}`: posts a message. The thread hears `MessageCreated` (but the sender's
/// socket `socket`), recipients `ChatUnreadUpdated`, the mentioned a bell; an item thread is
/// followed from now on by its author and the mentioned.
///
/// # Errors
/// As [`super::open`]; 422 for a bad body (too long, empty without attachments, mentions in a
/// 1:1 conversation, a foreign reply or attachment); the database.
pub async fn post(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
    socket: Option<&str>,
) -> Result<MessageResource, AppError> {
    let opened = open(state, principal, id).await?;
    post_in(state, principal, &opened, body, socket).await
}

/// `POST /collections/{collection}/items/{item}/chat/messages`: as [`post`], on the item's
/// thread, started by this first message when there is none.
///
/// # Errors
/// As [`post`]; 404 for an unknown collection or item.
pub async fn post_on_item(
    state: &AppState,
    principal: &Principal,
    collection: &str,
    item: &str,
    body: &Json,
    socket: Option<&str>,
) -> Result<MessageResource, AppError> {
    principal.require(CHAT_PERMISSION)?;
    principal.require(ITEMS_PERMISSION)?;
    let (collection, item_id) = item_target(state, collection, item).await?;
    let chat = store::threads::item_chat_or_start(
        state.db(),
        collection.id,
        item_id,
        principal.user_id(),
        OffsetDateTime::now_utc(),
    )
    .await?;
    let opened = Opened {
        chat,
        collection: Some(collection),
    };
    post_in(state, principal, &opened, body, socket).await
}

async fn post_in(
    state: &AppState,
    principal: &Principal,
    opened: &Opened,
    body: &Json,
    socket: Option<&str>,
) -> Result<MessageResource, AppError> {
    let draft = read_draft(state, opened, body, true, false).await?;
    let author = principal.user_id();
    let follow: Vec<i64> = if opened.chat.kind == ChatKind::Item {
        let mut follow = events::mentioned_users(state, &draft.mentions).await?;
        follow.push(author);
        follow
    } else {
        Vec::new()
    };
    let activity = json!({
        "changed": [],
        "chat_id": opened.chat.id,
        "body_preview": preview(&draft.body),
        "attachment_count": draft.attachment_ids.len(),
        "mention_count": draft.mentions.len(),
        "reply_to_id": draft.reply_to_id,
    });
    let stored = store::messages::insert_message(
        state.db(),
        &NewMessage {
            chat_id: &opened.chat.id,
            user_id: author,
            body: &draft.body,
            reply_to_id: draft.reply_to_id,
            mentions: &draft.mentions.stored(),
            attachment_ids: &draft.attachment_ids,
            follow: &follow,
            author_name: &principal.access.account.name,
            activity: Some((CHAT_LOG, "chat_message", activity)),
        },
        OffsetDateTime::now_utc(),
    )
    .await?;
    let message = MessageResource::from(stored);
    events::message(state, MESSAGE_CREATED, &message, socket).await;
    events::after_post(state, opened, &message, author);
    Ok(message)
}

/// The message `message` of the opened thread.
async fn find(state: &AppState, opened: &Opened, message: &str) -> Result<MessageRow, AppError> {
    let id: i64 = message.parse().map_err(|_| AppError::NotFound)?;
    store::messages::find_message(state.db(), &opened.chat.id, id)
        .await?
        .ok_or(AppError::NotFound)
}

fn require_author(principal: &Principal, row: &MessageRow) -> Result<(), AppError> {
    if row.author.as_ref().map(|a| a.id) == Some(principal.user_id()) {
        Ok(())
    } else {
        Err(not_author())
    }
}

/// `PUT /chat/{chat}/messages/{message}` `{"body", "mentioned_user_ids", "mentioned_group_ids"}`:
/// the author edits a message; the thread hears `MessageUpdated`.
///
/// # Errors
/// As [`super::open`]; 404 for an unknown message; 403 for anyone but the author; 422 for a bad
/// body; the database.
pub async fn edit_message(
    state: &AppState,
    principal: &Principal,
    id: &str,
    message: &str,
    body: &Json,
    socket: Option<&str>,
) -> Result<MessageResource, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find(state, &opened, message).await?;
    require_author(principal, &row)?;
    // A message with attachments may lose its text.
    let draft = read_draft(state, &opened, body, false, !row.attachments.is_empty()).await?;
    let updated = store::messages::update_message(
        state.db(),
        &opened.chat.id,
        row.id,
        &draft.body,
        &draft.mentions.stored(),
        OffsetDateTime::now_utc(),
    )
    .await?;
    let message = MessageResource::from(updated);
    events::message(state, MESSAGE_UPDATED, &message, socket).await;
    Ok(message)
}

/// `DELETE /chat/{chat}/messages/{message}`: the author deletes a message and its attachments;
/// the thread hears `MessageDeleted`.
///
/// # Errors
/// As [`edit_message`].
pub async fn delete_message(
    state: &AppState,
    principal: &Principal,
    id: &str,
    message: &str,
    socket: Option<&str>,
) -> Result<(), AppError> {
    let opened = open(state, principal, id).await?;
    let row = find(state, &opened, message).await?;
    require_author(principal, &row)?;
    let keys: Vec<String> = row
        .attachments
        .iter()
        .map(|a| a.storage_key.clone())
        .collect();
    store::messages::delete_message(state.db(), &opened.chat.id, row.id).await?;
    crate::chat_bytes::forget_blobs(state, keys).await;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new(CHAT_LOG, "chat_message_deleted")
            .subject("chat_message", row.id)
            .extra(json!({
                "chat_id": opened.chat.id,
                "message_id": row.id,
                "body_preview": preview(&row.body),
                "attachment_count": row.attachments.len(),
            })),
    )
    .await;
    events::to_thread(
        state,
        &opened.chat.id,
        MESSAGE_DELETED,
        &json!({"chat_id": opened.chat.id, "message_id": row.id}),
        socket,
    )
    .await;
    Ok(())
}

/// `POST /chat/{chat}/messages/{message}/pin`: pins the message, or unpins a pinned one; the
/// thread hears `MessageUpdated`.
///
/// # Errors
/// As [`super::open`]; 404 for an unknown message; the database.
pub async fn toggle_pin(
    state: &AppState,
    principal: &Principal,
    id: &str,
    message: &str,
    socket: Option<&str>,
) -> Result<MessageResource, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find(state, &opened, message).await?;
    let pinned_at = row.pinned_at.is_none().then(OffsetDateTime::now_utc);
    store::messages::set_pinned(state.db(), &opened.chat.id, row.id, pinned_at).await?;
    let updated = store::messages::find_message(state.db(), &opened.chat.id, row.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let message = MessageResource::from(updated);
    events::message(state, MESSAGE_UPDATED, &message, socket).await;
    Ok(message)
}

/// `POST /chat/{chat}/messages/{message}/reactions`'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct ReactionOutcome {
    pub message_id: i64,
    pub emoji: String,
    /// Whether the user's reaction is there now.
    pub added: bool,
    pub reactions: Vec<ReactionResource>,
}

fn valid_emoji(emoji: &str) -> bool {
    let chars = emoji.chars().count();
    (1..=MAX_EMOJI_CHARS).contains(&chars)
        && !emoji.chars().any(|c| {
            c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '&' | '"' | '\'')
        })
}

/// `POST /chat/{chat}/messages/{message}/reactions` `{"emoji"}`: adds the user's reaction, or
/// takes it back; the thread hears `ReactionToggled`.
///
/// # Errors
/// As [`super::open`]; 404 for an unknown message; 422 for a bad emoji or too many reactions;
/// the database.
pub async fn react(
    state: &AppState,
    principal: &Principal,
    id: &str,
    message: &str,
    body: &Json,
    socket: Option<&str>,
) -> Result<ReactionOutcome, AppError> {
    let opened = open(state, principal, id).await?;
    let row = find(state, &opened, message).await?;
    let mut input = Input::new(body)?;
    let emoji = input.required_str("emoji", MAX_EMOJI_CHARS);
    if emoji.is_some_and(|e| !valid_emoji(e)) {
        input.error(
            "emoji",
            "The reaction must be an emoji or a short code without spaces.",
        );
    }
    input.finish()?;
    let emoji = emoji.unwrap_or_default().to_owned();
    let user = principal.user_id();
    let added = store::messages::toggle_reaction(
        state.db(),
        row.id,
        user,
        &emoji,
        MAX_REACTIONS_PER_USER,
        OffsetDateTime::now_utc(),
    )
    .await?;
    let updated = store::messages::find_message(state.db(), &opened.chat.id, row.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let reactions = MessageResource::from(updated).reactions;
    events::to_thread(
        state,
        &opened.chat.id,
        REACTION_TOGGLED,
        &json!({
            "chat_id": opened.chat.id,
            "message_id": row.id,
            "emoji": emoji,
            "user_id": user,
            "added": added,
            "reactions": reactions,
        }),
        socket,
    )
    .await;
    Ok(ReactionOutcome {
        message_id: row.id,
        emoji,
        added,
        reactions,
    })
}

/// `POST /chat/{chat}/read`'s answer.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ReadMark {
    pub last_read_id: i64,
    pub unread: u64,
}

/// `POST /chat/{chat}/read` `{"message_id"}` (absent: the newest): marks the thread read up to
/// that message; the user's other tabs hear `ChatUnreadUpdated`.
///
/// # Errors
/// As [`super::open`]; 422 for a bad body; the database.
pub async fn mark_read(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<ReadMark, AppError> {
    let opened = open(state, principal, id).await?;
    let mut input = Input::new(body)?;
    let wanted = match input.raw("message_id") {
        None | Some(Json::Null) => None,
        Some(Json::Number(n)) if n.as_i64().is_some_and(|id| id > 0) => n.as_i64(),
        Some(_) => {
            input.error("message_id", "The message id must be a positive integer.");
            None
        }
    };
    input.finish()?;
    let db = state.db();
    let latest = store::messages::latest_id(db, &opened.chat.id).await?;
    let up_to = wanted.map_or(latest, |id| id.min(latest));
    let user = principal.user_id();
    store::states::mark_read(db, &opened.chat.id, user, up_to).await?;
    let unread = store::states::unread_in(db, &opened.chat.id, &[user])
        .await?
        .first()
        .map_or(0, |(_, n)| *n);
    events::unread_for(state, &opened.chat.id, user, unread).await;
    Ok(ReadMark {
        last_read_id: up_to,
        unread,
    })
}
