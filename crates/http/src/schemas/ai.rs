//! The shapes of AI chat's routes (`/ai…`) in the OpenAPI description, checked against every
//! response by the black-box suite.

use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::{ErrorBody, PaginationMeta};

/// A conversation (its messages only when shown).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConversation {
    pub id: String,
    pub title: String,
    pub pinned: bool,
    #[schema(required = true, format = DateTime)]
    pub pinned_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConversationEnvelope {
    pub data: AiConversation,
}

/// A page of conversations: 25, pinned first, then the most recently active.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConversationPage {
    pub data: Vec<AiConversation>,
    pub meta: PaginationMeta,
}

/// `{id, name}` of a file a prompt carried.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiAttachmentRef {
    pub id: String,
    pub name: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiMessage {
    pub id: String,
    #[schema(pattern = "^(user|assistant)$")]
    pub role: String,
    pub content: String,
    /// The answer was cut short: the client or the provider went away, or it reached 50,000
    /// characters.
    pub incomplete: bool,
    pub attachments: Vec<AiAttachmentRef>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// A conversation with its latest 100 messages, oldest first.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConversationShown {
    pub id: String,
    pub title: String,
    pub pinned: bool,
    #[schema(required = true, format = DateTime)]
    pub pinned_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    pub messages: Vec<AiMessage>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiConversationShownEnvelope {
    pub data: AiConversationShown,
}

/// `GET /ai`: the first page of conversations and the provider's configuration.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiHome {
    pub data: Vec<AiConversation>,
    pub meta: PaginationMeta,
    /// Whether a provider is configured (`VELLUM_AI_BASE_URL` and `VELLUM_AI_MODEL`).
    pub configured: bool,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiStatus {
    pub configured: bool,
    /// The configured model (when configured).
    #[schema(nullable = false)]
    pub model: Option<String>,
    /// Whether the provider answered `GET {base}/models` (when configured; probed at most
    /// every 10 seconds).
    #[schema(nullable = false)]
    pub reachable: Option<bool>,
}

/// `POST /ai/conversations`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateAiConversation {
    /// At most 120 characters; "New conversation" when absent.
    #[schema(max_length = 120)]
    pub title: Option<String>,
}

/// `PATCH /ai/conversations/{conversation}`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RenameAiConversation {
    #[schema(min_length = 1, max_length = 120)]
    pub title: String,
}

/// `POST /ai/conversations/{conversation}/truncate`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TruncateAiConversation {
    /// This message and every later one are deleted.
    pub from_message_id: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiDeletedCount {
    #[schema(minimum = 0)]
    pub deleted: u64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiDeleted {
    pub data: AiDeletedCount,
}

/// `POST /ai/conversations/bulk-destroy`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkDestroyAiConversations {
    /// 1 to 100 of the user's conversations; one that is not the user's refuses the request.
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<String>,
}

/// `POST /ai/chat`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiChatRequest {
    #[schema(min_length = 1, max_length = 20000)]
    pub message: String,
    /// Continue this conversation; absent, a new one is started (titled by the message).
    pub conversation_id: Option<String>,
    /// At most 5 attachments uploaded by the user in the last 24 hours.
    #[schema(max_items = 5)]
    pub attachment_ids: Option<Vec<String>>,
}

/// One server-sent event of `POST /ai/chat`: its `data` is JSON (`{"type": "conversation",
/// "conversation_id"}`, `{"type": "delta", "content"}`, `{"type": "error", "message"}`) or the
/// literal `[DONE]` that ends the stream.
#[derive(Debug, ToSchema, Serialize)]
pub struct AiChatEvent {
    pub data: String,
    /// Absent: the default `message` event.
    pub event: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
}

/// `POST /ai/attachments`: one `file` part (csv, txt, xlsx or pdf, at most 5 MiB).
#[derive(Debug, ToSchema, Serialize)]
pub struct AiAttachmentForm {
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// An uploaded attachment: its text, ready for the next prompts until `expires_at`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiAttachment {
    pub id: String,
    pub name: String,
    #[schema(pattern = "^(csv|txt|xlsx|pdf)$")]
    pub extension: String,
    #[schema(minimum = 0)]
    pub size: i64,
    /// Characters of text extracted (at most 100,000).
    #[schema(minimum = 0)]
    pub characters: u64,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AiAttachmentEnvelope {
    pub data: AiAttachment,
}

/// Query of the conversation list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AiListParams {
    /// Page of 25 (default 1).
    #[param(minimum = 1)]
    pub page: Option<u64>,
}

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "AI chat is refused: no provider is configured (`AI provider not configured.`), or every answer slot is busy (with `Retry-After`)."
)]
pub struct AiUnavailable(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "More than 30 AI requests in a minute (`Too many requests.`), or the day's `daily_prompt_limit` is used up (`Daily prompt limit reached.`); retry after `Retry-After` seconds.",
    headers(("Retry-After" = u64, description = "Seconds to wait"))
)]
pub struct AiThrottled(pub ErrorBody);
