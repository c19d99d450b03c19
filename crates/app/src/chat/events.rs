//! What chat sends over the realtime server, and who may listen.
//!
//! On `presence-chat.{id}` (every member with the thread open):
//! - `MessageCreated`, `MessageUpdated` (edits and pins): `{"chat_id", "message": <message>}`;
//! - `MessageDeleted`: `{"chat_id", "message_id"}`;
//! - `ReactionToggled`: `{"chat_id", "message_id", "emoji", "user_id", "added", "reactions"}`.
//!
//! On `private-App.Models.User.{id}` (that user's tabs):
//! - `ChatUnreadUpdated`: `{"chat_id", "unread"}`, the user's unread count in that thread, after
//!   a new message (to its recipients) and after the user read (to the user's other tabs);
//! - `ThreadUpserted`: `{"thread": <thread>}`, to the other members when a direct thread is
//!   started or its members change;
//! - bell notifications as Laravel broadcasts them
//!   (`Illuminate\Notifications\Events\BroadcastNotificationCreated`, so laravel-echo's
//!   `.notification()` hears them): `{"id", "type": "chat.mention", "chat_id", "message_id",
//!   "author", "title", "body_preview"}` to each mentioned user (group mentions reach the
//!   group's members).
//!
//! The sender's socket (`X-Socket-ID`) is left out of the thread's events: it has the answer.
//! Per-user events go out from a spawned task after the request is answered, each recipient's
//! access checked as its own requests would be, at most [`super::MAX_NOTIFIED`] users.

use std::collections::BTreeSet;

use serde_json::json;
use vellum_storage::chat::{self as store, ChatKind, ChatRow};

use super::resource::{MessageResource, ThreadResource};
use super::text::{Mentions, preview};
use super::{CHAT_PERMISSION, ITEMS_PERMISSION, MAX_NOTIFIED, Opened};
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

pub const MESSAGE_CREATED: &str = "MessageCreated";
pub const MESSAGE_UPDATED: &str = "MessageUpdated";
pub const MESSAGE_DELETED: &str = "MessageDeleted";
pub const REACTION_TOGGLED: &str = "ReactionToggled";
pub const UNREAD_UPDATED: &str = "ChatUnreadUpdated";
pub const THREAD_UPSERTED: &str = "ThreadUpserted";
/// The event name laravel-echo's `.notification()` listens for.
pub const BELL_EVENT: &str = "Illuminate\\Notifications\\Events\\BroadcastNotificationCreated";

pub(crate) fn chat_channel(chat_id: &str) -> String {
    format!("presence-chat.{chat_id}")
}

pub(crate) fn user_channel(user_id: i64) -> String {
    format!("private-App.Models.User.{user_id}")
}

/// Whether the principal may subscribe to `presence-chat.{chat}`: exactly when it may open the
/// thread.
///
/// # Errors
/// As [`super::open`]: 403 without the permissions, 404 for a thread the user cannot see.
pub async fn may_listen(
    state: &AppState,
    principal: &Principal,
    chat: &str,
) -> Result<(), AppError> {
    super::open(state, principal, chat).await.map(|_| ())
}

/// Sends a message event (`MessageCreated`, `MessageUpdated`) to the thread.
pub(crate) async fn message(
    state: &AppState,
    event: &str,
    message: &MessageResource,
    socket: Option<&str>,
) {
    let payload = json!({"chat_id": message.chat_id, "message": message});
    state
        .realtime()
        .broadcast(&chat_channel(&message.chat_id), event, &payload, socket)
        .await;
}

/// Sends an event with `payload` to the thread.
pub(crate) async fn to_thread(
    state: &AppState,
    chat_id: &str,
    event: &str,
    payload: &serde_json::Value,
    socket: Option<&str>,
) {
    state
        .realtime()
        .broadcast(&chat_channel(chat_id), event, payload, socket)
        .await;
}

/// Sends `ThreadUpserted` to each of `users`.
pub(crate) async fn thread_upserted(state: &AppState, thread: &ThreadResource, users: &[i64]) {
    let payload = json!({ "thread": thread });
    for user in users {
        state
            .realtime()
            .broadcast(&user_channel(*user), THREAD_UPSERTED, &payload, None)
            .await;
    }
}

/// Tells the user's other tabs its unread count in the thread.
pub(crate) async fn unread_for(state: &AppState, chat_id: &str, user_id: i64, unread: u64) {
    let payload = json!({"chat_id": chat_id, "unread": unread});
    state
        .realtime()
        .broadcast(&user_channel(user_id), UNREAD_UPDATED, &payload, None)
        .await;
}

/// Whether user `user_id` may see `chat` now (its permissions as a request of its own would
/// have them; membership was established by the caller's query).
async fn may_see(state: &AppState, chat: &ChatRow, user_id: i64) -> bool {
    let Ok(snapshot) = state.snapshot().await else {
        return false;
    };
    let Ok(Some(access)) = snapshot.account_access(state.db(), user_id).await else {
        return false;
    };
    if access.account.deleted_at.is_some() || !access.permissions.check(CHAT_PERMISSION).allowed {
        return false;
    }
    chat.kind == ChatKind::Direct || access.permissions.check(ITEMS_PERMISSION).allowed
}

/// After a new message: each recipient's unread count, and a bell for each mentioned user.
/// Runs in its own task; failures are logged.
pub(crate) fn after_post(
    state: &AppState,
    opened: &Opened,
    message: &MessageResource,
    author: i64,
) {
    let state = state.clone();
    let chat = opened.chat.clone();
    let message = message.clone();
    tokio::spawn(async move {
        if let Err(err) = notify(&state, &chat, &message, author).await {
            tracing::warn!(error = %crate::telemetry::error_chain(&err), chat = %chat.id, "chat: notifying recipients failed");
        }
    });
}

async fn notify(
    state: &AppState,
    chat: &ChatRow,
    message: &MessageResource,
    author: i64,
) -> Result<(), AppError> {
    let db = state.db();
    let people = match (chat.kind, chat.collection_id) {
        (ChatKind::Direct, _) => store::threads::member_users(db, &chat.id, MAX_NOTIFIED).await?,
        (ChatKind::Item, Some(collection)) => {
            store::states::followers(db, &chat.id, collection, MAX_NOTIFIED).await?
        }
        (ChatKind::Item, None) => Vec::new(),
    };
    let mut recipients = Vec::new();
    for person in people {
        if person.id != author && may_see(state, chat, person.id).await {
            recipients.push(person.id);
        }
    }
    for (user, unread) in store::states::unread_in(db, &chat.id, &recipients).await? {
        unread_for(state, &chat.id, user, unread).await;
    }
    let mentioned = mentioned_users(state, &message.mentions).await?;
    let bell = json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "type": "chat.mention",
        "chat_id": chat.id,
        "message_id": message.id,
        "author": message.author,
        "title": message.author.as_ref().map_or_else(|| "You were mentioned".to_owned(), |a| format!("{} mentioned you", a.name)),
        "body_preview": preview(&message.body),
    });
    for user in mentioned {
        if user != author && may_see(state, chat, user).await {
            state
                .realtime()
                .broadcast(&user_channel(user), BELL_EVENT, &bell, None)
                .await;
        }
    }
    Ok(())
}

/// The users a message's mentions reach: the mentioned users and the members of the mentioned
/// groups (at most [`MAX_NOTIFIED`]).
pub(crate) async fn mentioned_users(
    state: &AppState,
    mentions: &Mentions,
) -> Result<Vec<i64>, AppError> {
    let mut users: BTreeSet<i64> = mentions.users.iter().map(|m| m.id).collect();
    let groups: Vec<i64> = mentions.groups.iter().map(|m| m.id).collect();
    if !groups.is_empty() {
        let limit = MAX_NOTIFIED.saturating_sub(users.len() as u64);
        for person in store::threads::group_users(state.db(), &groups, limit).await? {
            users.insert(person.id);
        }
    }
    Ok(users.into_iter().collect())
}
