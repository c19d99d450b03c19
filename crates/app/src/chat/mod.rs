//! Team chat (issue 21): threads on collection items and direct conversations among users and
//! groups, messages with replies, pins, reactions, mentions and attachments, read state and
//! archives, delivered live over the realtime server's `presence-chat.{id}` channels.
//!
//! Access, checked on every request (nothing is remembered between requests):
//! - every use case needs `can-show-chat`;
//! - an item thread follows the item's read: `can-show-collections` (the admin app reads items
//!   above roles, see [`crate::admin_items`]) and the item is live;
//! - a direct thread is its members': users named in it and the members of its groups (groups
//!   that are not deleted). Nobody else sees it, `super-admin` included.
//!
//! Only the author edits or deletes a message. Mentions are refused in a 1:1 conversation.
//! Bodies are plain text: stored as written, shown escaped (see [`text`]).

mod attachments;
mod events;
mod keep;
mod members;
mod messages;
mod pickers;
mod resource;
mod text;
mod threads;

use std::sync::Arc;

use vellum_policy::Reason;
use vellum_storage::chat::{self as store, ChatKind, ChatRow};
use vellum_storage::model::Collection;

pub use attachments::{
    CHUNK_SIZE, SERVER_CEILING, UploadStatus, complete_upload, download, max_chunk_bytes,
    start_upload, upload, upload_chunk, upload_status,
};
pub use events::{
    BELL_EVENT, MESSAGE_CREATED, MESSAGE_DELETED, MESSAGE_UPDATED, REACTION_TOGGLED,
    THREAD_UPSERTED, UNREAD_UPDATED, may_listen,
};
pub use keep::{AddedToField, add_to_field, save_to_files};
pub use members::{
    Participants, archive, delete_thread, leave, participants, set_notify, set_participants,
    unarchive,
};
pub use messages::{MessagePage, ReactionOutcome, ReadMark};
pub use messages::{
    delete_message, edit_message, list_messages, mark_read, post, post_on_item, react, toggle_pin,
};
pub use pickers::{PickerKind, options};
pub use resource::{MessageResource, ThreadResource};
pub use text::{MAX_BODY_CHARS, render_html};
pub use threads::{
    Hub, HubTab, ThreadView, UnreadCount, hub, item_thread, list_threads, start, thread,
    unread_count,
};

use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The permission behind every chat route.
pub const CHAT_PERMISSION: &str = "can-show-chat";
/// The admin read of collection items, which an item thread's access follows.
pub const ITEMS_PERMISSION: &str = "can-show-collections";

/// Attachments one message may carry.
pub const MAX_ATTACHMENTS: usize = 10;
/// Mentions one message may carry (users and groups together).
pub const MAX_MENTIONS: usize = 50;
/// Chosen members of a direct thread (users and groups together, the creator included).
pub const MAX_MEMBERS: usize = 100;
/// Different reactions one user may put on one message.
pub const MAX_REACTIONS_PER_USER: u64 = 20;
/// The longest reaction, in characters (an emoji with modifiers, or a `:shortcode:`).
pub const MAX_EMOJI_CHARS: usize = 32;
/// Users one message notifies (unread counts, mention bells); past it the rest see the change
/// when they next open the hub.
pub const MAX_NOTIFIED: u64 = 5_000;
/// The activity log's name for chat.
pub const CHAT_LOG: &str = "chat";

/// An opened thread the principal may see.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub chat: ChatRow,
    /// The item thread's collection.
    pub collection: Option<Arc<Collection>>,
}

fn refused(rule: &'static str) -> AppError {
    AppError::Forbidden(Reason::RoleRule {
        role: "chat".to_owned(),
        rule,
    })
}

/// Parses a chat id (a UUID in canonical lowercase form).
pub(crate) fn parse_chat_id(id: &str) -> Result<String, AppError> {
    crate::input::canonical_uuid(id).ok_or(AppError::NotFound)
}

/// Opens thread `id` for the principal.
///
/// # Errors
/// 403 without `can-show-chat` (checked first), 404 for an unknown thread, an item thread of a
/// deleted item or a direct thread the principal is not in (a conversation's existence is not
/// disclosed to outsiders), 403 for an item thread without `can-show-collections`.
pub(crate) async fn open(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<Opened, AppError> {
    principal.require(CHAT_PERMISSION)?;
    let id = parse_chat_id(id)?;
    let (chat, member) = store::threads::find_chat_for(state.db(), &id, principal.user_id())
        .await?
        .ok_or(AppError::NotFound)?;
    let collection = reach(state, principal, &chat, member).await?;
    Ok(Opened { chat, collection })
}

/// Whether the principal (a member of `chat` or not) may see it; the item thread's collection
/// when it is one.
async fn reach(
    state: &AppState,
    principal: &Principal,
    chat: &ChatRow,
    member: bool,
) -> Result<Option<Arc<Collection>>, AppError> {
    match chat.kind {
        ChatKind::Direct => {
            if member {
                Ok(None)
            } else {
                Err(AppError::NotFound)
            }
        }
        ChatKind::Item => {
            principal.require(ITEMS_PERMISSION)?;
            let (Some(collection_id), Some(item_id)) = (chat.collection_id, chat.item_id) else {
                return Err(AppError::NotFound);
            };
            let snapshot = state.snapshot().await?;
            let collection = snapshot
                .collection_by_id(collection_id)
                .cloned()
                .ok_or(AppError::NotFound)?;
            if !store::threads::item_is_live(state.db(), collection_id, item_id).await? {
                return Err(AppError::NotFound);
            }
            Ok(Some(collection))
        }
    }
}

/// The rule a chat refusal names in the log.
pub(crate) fn not_author() -> AppError {
    refused("only the author may change a message")
}
