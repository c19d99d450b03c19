//! AI chat (issue 22): a signed-in, verified user with `can-use-ai` talks to a model behind any
//! OpenAI-compatible provider ([`provider`]). Conversations are the user's own ([`conversations`]);
//! a prompt streams its answer as events while a spawned task generates it ([`chat`]); files
//! become short-lived text attachments ([`attachments`], [`extract`]); the model reads content
//! only through tools that run as the user ([`tools`]).
//!
//! What bounds it: 30 requests a minute per user on `POST /ai/chat` and `POST /ai/attachments`
//! (shared by replicas through Redis), the project's `daily_prompt_limit`, the message and
//! attachment limits of the spec, a cap on messages per conversation, on the history and
//! attachment text sent to the model, on the answer's length and on tool rounds.

pub mod attachments;
pub mod chat;
pub mod conversations;
pub mod extract;
mod tools;

use std::sync::PoisonError;
use std::time::{Duration, Instant};

use serde::Serialize;
use vellum_policy::Reason;

use crate::error::AppError;
use crate::principal::Principal;

pub use crate::llm::provider;
pub use crate::llm::{Ai, NOT_CONFIGURED};

pub use attachments::{AttachmentResource, upload};
pub use chat::{ChatInput, ChatStream, StreamEvent, send};
pub use conversations::{
    ConversationPage, ConversationResource, Shown, bulk_destroy, create, destroy, list, rename,
    show, toggle_pin, truncate,
};

/// The permission behind every AI route.
pub const AI_PERMISSION: &str = "can-use-ai";
/// The activity log's name and event for a prompt.
pub const AI_LOG: &str = "ai";
pub const PROMPT_EVENT: &str = "ai_prompt";
/// The longest prompt, in characters.
pub const MAX_MESSAGE_CHARS: usize = 20_000;
/// Attachments one prompt may carry.
pub const MAX_PROMPT_ATTACHMENTS: usize = 5;
/// The largest attachment upload, in bytes.
pub const MAX_ATTACHMENT_BYTES: u64 = 5 * 1024 * 1024;
/// How long an attachment lives.
pub const ATTACHMENT_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);
/// Conversations per page of the list.
pub const PER_PAGE: u64 = 25;
/// Ids one bulk delete takes.
pub const MAX_BULK: usize = 100;
/// The longest conversation title, in characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// Conversations one user may keep; past it the user deletes some first.
pub const MAX_CONVERSATIONS: u64 = 1_000;
/// Messages one conversation holds at most; past it the user starts a new one.
pub const MAX_MESSAGES: u64 = 1_000;
/// Attachments one user may hold at once (until they expire).
pub const MAX_LIVE_ATTACHMENTS: u64 = 50;
/// The status probe's answer is reused this long.
const PROBE_TTL: Duration = Duration::from_secs(10);
/// How long the status probe waits for the provider.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Passes a signed-in user with `can-use-ai` and a verified email.
///
/// # Errors
/// [`AppError::Forbidden`] otherwise.
pub fn require(principal: &Principal) -> Result<(), AppError> {
    principal.require(AI_PERMISSION)?;
    if principal.access.account.email_verified_at.is_none() {
        return Err(AppError::Forbidden(Reason::RoleRule {
            role: AI_PERMISSION.to_owned(),
            rule: "AI chat needs a verified email address",
        }));
    }
    Ok(())
}

/// `GET /ai/status`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub configured: bool,
    /// The model asked for (when configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether the provider answered its model list just now (when configured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
}

/// `GET /ai/status`: whether a provider is configured and answers. The probe's answer is
/// reused for a few seconds, so polling the page does not turn into requests to the provider.
///
/// # Errors
/// 403 as [`require`].
pub async fn status(state: &crate::AppState, principal: &Principal) -> Result<Status, AppError> {
    require(principal)?;
    let ai = state.ai();
    let Some(provider) = &ai.provider else {
        return Ok(Status {
            configured: false,
            model: None,
            reachable: None,
        });
    };
    let cached = *ai.probe.lock().unwrap_or_else(PoisonError::into_inner);
    let reachable = match cached {
        Some((at, reachable)) if at.elapsed() < PROBE_TTL => reachable,
        _ => {
            let reachable = provider.reachable(PROBE_TIMEOUT).await;
            *ai.probe.lock().unwrap_or_else(PoisonError::into_inner) =
                Some((Instant::now(), reachable));
            reachable
        }
    };
    Ok(Status {
        configured: true,
        model: Some(provider.model().to_owned()),
        reachable: Some(reachable),
    })
}

/// The first `max` characters of `text`.
pub(crate) fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}
