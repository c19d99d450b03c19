//! The shapes of team chat's routes (`/chat…`, the item-thread aliases under `/collections…`) in
//! the OpenAPI description, checked against every response by the black-box suite.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// `{id, name}` of a user.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatPerson {
    pub id: i64,
    pub name: String,
}

/// A direct thread's chosen member.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMember {
    #[serde(rename = "type")]
    #[schema(pattern = "^(user|group)$")]
    pub kind: String,
    pub id: i64,
    pub name: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatCollectionRef {
    pub id: i64,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatItemRef {
    pub id: i64,
    /// By the collection's presentation (`display_template`, `display_field`), else `#<id>`.
    pub label: String,
}

/// A thread as the signed-in user sees it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatThread {
    /// A UUID.
    pub id: String,
    #[schema(pattern = "^(item|direct)$")]
    pub kind: String,
    /// The item's collection and label, or the other members' names.
    pub title: String,
    #[schema(required = true)]
    pub collection: Option<ChatCollectionRef>,
    #[schema(required = true)]
    pub item: Option<ChatItemRef>,
    /// A direct thread's chosen users and groups (empty for an item thread).
    pub members: Vec<ChatMember>,
    #[schema(required = true)]
    pub created_by: Option<i64>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(required = true, format = DateTime)]
    pub last_message_at: Option<String>,
    /// The newest message's first 120 characters (in lists).
    #[schema(required = true)]
    pub last_message_preview: Option<String>,
    /// Messages by others the user has not read here.
    #[schema(minimum = 0)]
    pub unread: i64,
    /// When the user archived it (direct threads).
    #[schema(required = true, format = DateTime)]
    pub archived_at: Option<String>,
    /// The presence channel its events travel on (`presence-chat.{id}`).
    pub channel: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatThreadEnvelope {
    pub data: ChatThread,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatThreadPage {
    pub data: Vec<ChatThread>,
    pub meta: PaginationMeta,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReaction {
    pub emoji: String,
    #[schema(minimum = 1)]
    pub count: i64,
    /// Who reacted, oldest first.
    pub user_ids: Vec<i64>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatAttachment {
    /// A UUID.
    pub id: String,
    pub name: String,
    /// Sniffed from the bytes (`application/octet-stream` when unknown).
    pub mime_type: String,
    #[schema(minimum = 0)]
    pub size: i64,
    /// Where it downloads, for whoever may see the thread.
    pub url: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatAttachmentEnvelope {
    pub data: ChatAttachment,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReply {
    pub id: i64,
    #[schema(required = true)]
    pub author: Option<ChatPerson>,
    pub body_preview: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMentions {
    pub users: Vec<ChatPerson>,
    pub groups: Vec<ChatPerson>,
}

/// A message.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    pub id: i64,
    /// A UUID.
    pub chat_id: String,
    /// Null once the author's account is deleted for good.
    #[schema(required = true)]
    pub author: Option<ChatPerson>,
    /// As written: plain text.
    pub body: String,
    /// The body escaped, with `<br>`, links to http(s) URLs and `<span class="mention">`: safe
    /// to set as HTML.
    pub html: String,
    #[schema(required = true)]
    pub reply_to: Option<ChatReply>,
    pub mentions: ChatMentions,
    #[schema(required = true, format = DateTime)]
    pub pinned_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub edited_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub reactions: Vec<ChatReaction>,
    pub attachments: Vec<ChatAttachment>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessageEnvelope {
    pub data: ChatMessage,
}

/// Oldest first; `has_more` when older messages exist (`before=` the first id).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessagePage {
    pub data: Vec<ChatMessage>,
    pub has_more: bool,
}

/// A thread with its newest messages.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatThreadView {
    pub thread: ChatThread,
    /// The newest 50, oldest first.
    pub messages: Vec<ChatMessage>,
    pub has_more: bool,
    pub pinned: Vec<ChatMessage>,
    /// Item threads: whether the user follows every thread of the collection.
    #[schema(required = true)]
    pub notify: Option<bool>,
    /// Direct threads: everyone taking part (group members included).
    pub people: Vec<ChatPerson>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatThreadViewEnvelope {
    pub data: ChatThreadView,
}

/// The item's thread, or null before its first message.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatItemThreadEnvelope {
    #[schema(required = true)]
    pub data: Option<ChatThreadView>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatUnread {
    #[schema(minimum = 0)]
    pub total: i64,
    /// Item threads (followed ones only).
    #[schema(minimum = 0)]
    pub collection: i64,
    /// Direct threads.
    #[schema(minimum = 0)]
    pub private: i64,
    /// Per thread id, threads with unread messages only.
    pub chats: BTreeMap<String, i64>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatUnreadEnvelope {
    pub data: ChatUnread,
}

/// The hub: one tab's threads, the unread totals, and the open thread.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatHub {
    #[schema(pattern = "^(collection|private)$")]
    pub tab: String,
    pub archived: bool,
    pub threads: ChatThreadPage,
    pub unread: ChatUnread,
    /// Whether the user may read collection items (the collection tab).
    pub can_read_items: bool,
    #[schema(required = true)]
    pub open: Option<ChatThreadView>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatHubEnvelope {
    pub data: ChatHub,
}

/// A picker entry.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatOption {
    #[serde(rename = "type")]
    #[schema(pattern = "^(user|group|collection|item)$")]
    pub kind: String,
    pub id: i64,
    pub label: String,
    /// A collection's slug.
    #[schema(nullable = false)]
    pub slug: Option<String>,
}

/// A field an attachment can be added to.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatFileField {
    pub name: String,
    #[serde(rename = "type")]
    #[schema(pattern = "^(file|files|image)$")]
    pub kind: String,
}

/// A picker page; the item picker adds the collection's file fields.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatOptionPage {
    pub data: Vec<ChatOption>,
    pub meta: PaginationMeta,
    #[schema(nullable = false)]
    pub fields: Option<Vec<ChatFileField>>,
}

/// Query of the pickers.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatOptionParams {
    /// Names (or labels) containing this text, in any case.
    #[param(max_length = 255, nullable = false)]
    pub search: Option<String>,
    /// The collection (slug) of `items` and `item-picker` (required there).
    #[param(nullable = false)]
    pub collection: Option<String>,
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}

/// Query of the hub and the thread list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatListParams {
    /// `collection` (item threads) or `private` (direct threads); the default is `collection`
    /// for users who may read items.
    #[param(nullable = false, pattern = "^(collection|private)$")]
    pub tab: Option<String>,
    /// `1`: the archived direct threads.
    #[param(nullable = false)]
    pub archived: Option<String>,
    /// Item threads of this collection (slug) only.
    #[param(nullable = false)]
    pub collection: Option<String>,
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}

/// Query of a page of messages.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChatMessageParams {
    /// Messages older than this id.
    #[param(minimum = 1, nullable = false)]
    pub before: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub limit: Option<i64>,
    /// `1`: pinned messages only.
    #[param(nullable = false)]
    pub pinned: Option<String>,
}

/// `POST /chat/threads`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StartChatThread {
    #[schema(pattern = "^(item|direct)$")]
    pub kind: String,
    /// Item threads: the collection's slug.
    #[schema(nullable = false)]
    pub collection: Option<String>,
    /// Item threads: the item's id.
    #[schema(nullable = false, minimum = 1)]
    pub item_id: Option<i64>,
    /// Direct threads: the people (the creator is always added).
    #[schema(nullable = false, max_items = 100)]
    pub user_ids: Option<Vec<i64>>,
    /// Direct threads: groups, whose members take part.
    #[schema(nullable = false, max_items = 100)]
    pub group_ids: Option<Vec<i64>>,
}

/// `POST /chat/{chat}/messages`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PostChatMessage {
    /// Plain text, at most 10,000 characters; may be empty with attachments.
    #[schema(nullable = false, max_length = 10000)]
    pub body: Option<String>,
    #[schema(nullable = false, minimum = 1)]
    pub reply_to_id: Option<i64>,
    /// Uploaded, unsent attachments of the author in this thread (at most 10).
    #[schema(nullable = false, max_items = 10)]
    pub attachment_ids: Option<Vec<String>>,
    /// Not in 1:1 conversations (422); at most 50 mentions.
    #[schema(nullable = false, max_items = 50)]
    pub mentioned_user_ids: Option<Vec<i64>>,
    #[schema(nullable = false, max_items = 50)]
    pub mentioned_group_ids: Option<Vec<i64>>,
}

/// `PUT /chat/{chat}/messages/{message}`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EditChatMessage {
    #[schema(max_length = 10000)]
    pub body: String,
    #[schema(nullable = false, max_items = 50)]
    pub mentioned_user_ids: Option<Vec<i64>>,
    #[schema(nullable = false, max_items = 50)]
    pub mentioned_group_ids: Option<Vec<i64>>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToggleChatReaction {
    /// An emoji or a `:shortcode:`, at most 32 characters, no spaces or markup.
    #[schema(min_length = 1, max_length = 32)]
    pub emoji: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReactionOutcome {
    pub message_id: i64,
    pub emoji: String,
    /// Whether the user's reaction is there now.
    pub added: bool,
    pub reactions: Vec<ChatReaction>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReactionOutcomeEnvelope {
    pub data: ChatReactionOutcome,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MarkChatRead {
    /// Read up to this message; absent: the newest.
    #[schema(nullable = false, minimum = 1)]
    pub message_id: Option<i64>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReadMark {
    pub last_read_id: i64,
    #[schema(minimum = 0)]
    pub unread: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatReadMarkEnvelope {
    pub data: ChatReadMark,
}

/// `PUT /chat/{chat}/participants`: the new member set (the user and the creator always stay).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SetChatParticipants {
    #[schema(nullable = false, max_items = 100)]
    pub user_ids: Option<Vec<i64>>,
    #[schema(nullable = false, max_items = 100)]
    pub group_ids: Option<Vec<i64>>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatParticipants {
    pub members: Vec<ChatMember>,
    /// Everyone taking part (direct) or following (item), at most 1000.
    pub users: Vec<ChatPerson>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatParticipantsEnvelope {
    pub data: ChatParticipants,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatNotifyRequest {
    /// Absent: toggle.
    #[schema(nullable = false)]
    pub notify: Option<bool>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatNotify {
    pub notify: bool,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatNotifyEnvelope {
    pub data: ChatNotify,
}

/// `POST /chat/{chat}/uploads`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StartChatUpload {
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    /// The whole file's size in bytes (at most `chat_max_upload_bytes`).
    #[schema(minimum = 1)]
    pub size: i64,
}

/// A chunked upload: chunk `i` is bytes `[i * chunk_size, (i + 1) * chunk_size)`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatUpload {
    /// A UUID.
    pub id: String,
    pub name: String,
    pub size: i64,
    pub chunk_size: i64,
    pub chunks: i64,
    /// Chunks still to send, in order.
    pub missing: Vec<i64>,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChatUploadEnvelope {
    pub data: ChatUpload,
}

/// `POST /chat/{chat}/attachments`: one `file` part.
#[derive(Debug, ToSchema, Serialize)]
pub struct ChatAttachmentForm {
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// `POST /chat/{chat}/attachments/{attachment}/save`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SaveChatAttachment {
    /// The folder (null or absent: the top level).
    pub parent_id: Option<i64>,
    /// Absent: the attachment's name.
    #[schema(nullable = false, max_length = 255)]
    pub filename: Option<String>,
}

/// `POST /chat/{chat}/attachments/{attachment}/add-to-field`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AddChatAttachmentToField {
    /// The collection's slug.
    pub collection: String,
    #[schema(minimum = 1)]
    pub item_id: i64,
    /// A `file`, `image` (replaced) or `files` (appended) field.
    pub field: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AddedToField {
    pub file: super::file_admin_browse::AdminFileResource,
    pub item: super::CollectionItemResource,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AddedToFieldEnvelope {
    pub data: AddedToField,
}
