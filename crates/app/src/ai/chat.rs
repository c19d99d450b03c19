//! `POST /ai/chat`: one prompt and its streamed answer.
//!
//! Everything that can refuse the prompt runs first, before a byte of the answer (so refusals are
//! ordinary JSON errors): the permission and verified email, the per-minute limit, the
//! provider's configuration, the body, the conversation and attachments, and last the day's
//! prompt count (a refused prompt does not use up the day). Then the prompt is stored and
//! logged, and a spawned task generates the answer into a bounded channel that the response
//! reads ([`ChatStream`]):
//!
//! - every fragment of text is sent on as it comes (`delta`);
//! - tool calls run as the user ([`super::tools`]), at most [`MAX_TOOL_ROUNDS`] rounds;
//! - when the client goes away (the channel closes) the task drops the provider's request at
//!   once and stores what it had, marked incomplete; so does a provider failure, which the
//!   client also gets as an `error` event;
//! - the answer stops at [`MAX_ANSWER_CHARS`] characters (stored incomplete).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use serde_json::{Value as Json, json};
use time::OffsetDateTime;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use vellum_storage::ai::{self as store, AiAttachmentRow, ConversationRow, NewAiMessage, Role};

use super::{
    AI_LOG, MAX_MESSAGE_CHARS, MAX_MESSAGES, MAX_PROMPT_ATTACHMENTS, PROMPT_EVENT, clip, require,
    tools,
};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::{Input, canonical_uuid};
use crate::llm::day_of;
use crate::llm::provider::{Piece, Provider, ProviderError, WireMessage};
use crate::principal::Principal;

/// Tool rounds one answer may take; the last round offers no tools, so it must answer.
pub const MAX_TOOL_ROUNDS: usize = 4;
/// The longest answer kept and streamed, in characters.
pub const MAX_ANSWER_CHARS: usize = 50_000;
/// Earlier messages sent with a prompt, at most.
const HISTORY_MESSAGES: u64 = 40;
/// Characters of earlier messages sent with a prompt, at most (the newest first).
const HISTORY_CHARS: usize = 60_000;
/// Characters of attachment text one prompt carries, at most.
const ATTACHMENT_CHARS: usize = 150_000;
/// Events buffered between the generating task and the response.
const CHANNEL: usize = 64;
/// The title of a new conversation: the start of its first prompt.
const TITLE_CHARS: usize = 60;

/// What the response streams, in order: the conversation first, then deltas, at most one
/// error; the response ends with `[DONE]` when the channel closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    Conversation(String),
    Delta(String),
    Error(String),
}

impl StreamEvent {
    /// The event's `data:` JSON as the admin contract spells it.
    #[must_use]
    pub fn to_json(&self) -> Json {
        match self {
            Self::Conversation(id) => json!({"type": "conversation", "conversation_id": id}),
            Self::Delta(content) => json!({"type": "delta", "content": content}),
            Self::Error(message) => json!({"type": "error", "message": message}),
        }
    }
}

/// The answer's events as they are generated. Dropping it tells the generating task that the
/// client is gone.
#[derive(Debug)]
pub struct ChatStream {
    rx: mpsc::Receiver<StreamEvent>,
}

impl Stream for ChatStream {
    type Item = StreamEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEvent>> {
        self.rx.poll_recv(cx)
    }
}

/// The prompt as the body gives it.
#[derive(Debug, Clone)]
pub struct ChatInput {
    pub message: String,
    pub conversation_id: Option<String>,
    pub attachment_ids: Vec<String>,
}

impl ChatInput {
    /// Reads `message`, `conversation_id` and `attachment_ids`.
    ///
    /// # Errors
    /// 422 naming every wrong field.
    pub fn parse(body: &Json) -> Result<Self, AppError> {
        let mut input = Input::new(body)?;
        let message = input.required_str("message", MAX_MESSAGE_CHARS);
        let conversation_id = match input.optional_str("conversation_id", 64) {
            Some(Some(id)) => match canonical_uuid(id) {
                Some(id) => Some(id),
                None => {
                    input.error(
                        "conversation_id",
                        "The conversation id must be a valid UUID.",
                    );
                    None
                }
            },
            _ => None,
        };
        let attachment_ids = input
            .optional_uuids("attachment_ids", MAX_PROMPT_ATTACHMENTS)
            .unwrap_or_default();
        let message = message.map(str::to_owned);
        input.finish()?;
        Ok(Self {
            message: message.unwrap_or_default(),
            conversation_id,
            attachment_ids,
        })
    }
}

/// Seconds from `at` to the next UTC midnight.
fn until_tomorrow(at: OffsetDateTime) -> u64 {
    let at = at.to_offset(time::UtcOffset::UTC);
    let seconds =
        u64::from(at.hour()) * 3600 + u64::from(at.minute()) * 60 + u64::from(at.second());
    (86_400 - seconds).max(1)
}

/// `POST /ai/chat`: stores the prompt and starts its answer.
///
/// # Errors
/// 403 as [`require`]; 429 past the per-minute limit (`Too many requests.`) or the day's
/// `daily_prompt_limit` (`Daily prompt limit reached.`); 503 without a provider or when
/// [`crate::llm::MAX_GENERATIONS`] answers are being generated; 422 for a bad body, an unknown or expired
/// attachment, a full conversation; 404 for a conversation that is not the user's; the
/// database.
pub async fn send(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<ChatStream, AppError> {
    require(principal)?;
    let ai = state.ai();
    let user = principal.user_id();
    ai.take_request(user).await?;
    let provider = ai.provider()?.clone();
    let input = ChatInput::parse(body)?;
    let conversation = match &input.conversation_id {
        Some(id) => Some(super::conversations::owned(state, principal, id).await?),
        None => None,
    };
    if let Some(conversation) = &conversation
        && store::messages::count(state.db(), &conversation.id).await? + 2 > MAX_MESSAGES
    {
        return Err(AppError::invalid(
            "conversation_id",
            "This conversation is full; start a new one.",
        ));
    }
    let attachments = super::attachments::attached(state, user, &input.attachment_ids).await?;
    let permit = Arc::clone(&ai.generations)
        .try_acquire_owned()
        .map_err(|_| AppError::Busy { retry_after: 5 })?;
    let day = count_prompt(state, user).await?;
    let started = start(
        state,
        principal,
        provider,
        conversation,
        &input,
        &attachments,
        permit,
    )
    .await;
    // A prompt that never reached the provider does not use up the day.
    if started.is_err()
        && let Some(day) = day
        && let Err(err) = store::usage::uncount_prompt(state.db(), user, &day).await
    {
        tracing::warn!(error = %crate::telemetry::error_chain(&err), "ai: a prompt could not be given back");
    }
    started
}

/// Stores the prompt (in a new conversation unless one is given), logs it and spawns its
/// answer.
async fn start(
    state: &AppState,
    principal: &Principal,
    provider: Provider,
    conversation: Option<ConversationRow>,
    input: &ChatInput,
    attachments: &[AiAttachmentRow],
    permit: OwnedSemaphorePermit,
) -> Result<ChatStream, AppError> {
    let user = principal.user_id();
    let conversation = match conversation {
        Some(conversation) => conversation,
        None => {
            let title = clip(
                input.message.lines().next().unwrap_or_default().trim(),
                TITLE_CHARS,
            );
            let title = if title.is_empty() {
                super::conversations::UNTITLED.to_owned()
            } else {
                title
            };
            super::conversations::start(state, user, &title).await?
        }
    };
    let history = store::messages::recent(state.db(), &conversation.id, HISTORY_MESSAGES).await?;
    let names: Vec<Json> = attachments
        .iter()
        .map(|a| json!({"id": a.id, "name": a.name}))
        .collect();
    store::messages::append(
        state.db(),
        &NewAiMessage {
            conversation_id: &conversation.id,
            role: Role::User,
            content: &input.message,
            incomplete: false,
            attachments: &Json::Array(names).to_string(),
        },
    )
    .await?;
    activity::record(
        state,
        Some(user),
        Change::new(AI_LOG, PROMPT_EVENT)
            .subject("ai_conversation", &conversation.id)
            .extra(json!({
                "conversation_id": conversation.id,
                "characters": input.message.chars().count(),
                "attachment_count": attachments.len(),
            })),
    )
    .await;
    let wire = wire_messages(principal, &history, &input.message, attachments);
    let (tx, rx) = mpsc::channel(CHANNEL);
    // A fresh channel has room: the conversation is always the first event.
    let _ = tx.try_send(StreamEvent::Conversation(conversation.id.clone()));
    tokio::spawn(generate(Generation {
        state: state.clone(),
        principal: principal.clone(),
        provider,
        conversation,
        wire,
        tx,
        _permit: permit,
    }));
    Ok(ChatStream { rx })
}

/// Counts the prompt against the day's limit (0: no limit); answers the day it counted on.
async fn count_prompt(state: &AppState, user: i64) -> Result<Option<String>, AppError> {
    let limit = state.snapshot().await?.settings.daily_prompt_limit;
    if limit == 0 {
        return Ok(None);
    }
    let now = OffsetDateTime::now_utc();
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    let day = day_of(now);
    if store::usage::count_prompt(state.db(), user, &day, limit).await? {
        Ok(Some(day))
    } else {
        Err(AppError::QuotaReached {
            message: "Daily prompt limit reached.",
            retry_after: until_tomorrow(now),
        })
    }
}

const SYSTEM: &str = "You are the assistant of Vellum, a content management system. Answer \
    in the language the user writes in. Be concise.";
const SYSTEM_TOOLS: &str = " You can read the project's collections and items only through \
    the tools you are given; they run with the user's permissions, so what they refuse the user \
    may not see.";

/// The system prompt, the newest history within [`HISTORY_CHARS`], and the prompt with its
/// attachments' text.
fn wire_messages(
    principal: &Principal,
    history: &[vellum_storage::ai::AiMessageRow],
    message: &str,
    attachments: &[AiAttachmentRow],
) -> Vec<WireMessage> {
    let mut system = SYSTEM.to_owned();
    if !tools::definitions(principal).is_empty() {
        system.push_str(SYSTEM_TOOLS);
    }
    let mut earlier = Vec::new();
    let mut budget = HISTORY_CHARS;
    for row in history.iter().rev() {
        let chars = row.content.chars().count();
        if chars > budget {
            break;
        }
        budget -= chars;
        let role = match row.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        earlier.push(WireMessage::text(role, row.content.clone()));
    }
    earlier.reverse();
    let mut prompt = message.to_owned();
    let mut budget = ATTACHMENT_CHARS;
    for attachment in attachments {
        let text = clip(&attachment.content, budget);
        budget = budget.saturating_sub(text.chars().count());
        prompt.push_str(&format!(
            "\n\n--- Attached file \"{}\" ---\n{text}",
            attachment.name
        ));
    }
    let mut wire = vec![WireMessage::text("system", system)];
    wire.extend(earlier);
    wire.push(WireMessage::text("user", prompt));
    wire
}

struct Generation {
    state: AppState,
    principal: Principal,
    provider: Provider,
    conversation: ConversationRow,
    wire: Vec<WireMessage>,
    tx: mpsc::Sender<StreamEvent>,
    /// Held while the answer is generated ([`crate::llm::MAX_GENERATIONS`]).
    _permit: OwnedSemaphorePermit,
}

/// How an answer ended.
enum Ending {
    Complete,
    /// The answer reached [`MAX_ANSWER_CHARS`].
    Cut,
    /// The client went away.
    Gone,
    Failed(ProviderError),
}

async fn generate(mut job: Generation) {
    let mut answer = String::new();
    let ending = run(&mut job, &mut answer).await;
    let incomplete = !matches!(ending, Ending::Complete);
    if let Ending::Failed(err) = &ending {
        tracing::warn!(detail = %err.detail(), conversation = %job.conversation.id, "ai: the provider failed");
        let _ = job.tx.send(StreamEvent::Error(err.to_string())).await;
    }
    if matches!(ending, Ending::Gone) {
        tracing::info!(conversation = %job.conversation.id, chars = answer.len(), "ai: the client went away; the answer is kept incomplete");
    }
    if !answer.is_empty() {
        let stored = store::messages::append(
            job.state.db(),
            &NewAiMessage {
                conversation_id: &job.conversation.id,
                role: Role::Assistant,
                content: &answer,
                incomplete,
                attachments: "[]",
            },
        )
        .await;
        if let Err(err) = stored {
            tracing::error!(error = %crate::telemetry::error_chain(&err), conversation = %job.conversation.id, "ai: the answer could not be stored");
            let _ = job
                .tx
                .send(StreamEvent::Error(
                    "The answer could not be saved.".to_owned(),
                ))
                .await;
        }
    }
}

/// Runs the rounds of one answer, appending its text to `answer`.
async fn run(job: &mut Generation, answer: &mut String) -> Ending {
    let definitions = tools::definitions(&job.principal);
    let mut chars = 0_usize;
    for round in 0..=MAX_TOOL_ROUNDS {
        let offered: &[Json] = if round < MAX_TOOL_ROUNDS {
            &definitions
        } else {
            &[]
        };
        let started = tokio::select! {
            () = job.tx.closed() => return Ending::Gone,
            started = job.provider.complete(&job.wire, offered) => started,
        };
        let mut completion = match started {
            Ok(completion) => completion,
            Err(err) => return Ending::Failed(err),
        };
        let mut round_text = String::new();
        let calls = loop {
            let piece = tokio::select! {
                () = job.tx.closed() => return Ending::Gone,
                piece = completion.next() => piece,
            };
            match piece {
                Err(err) => return Ending::Failed(err),
                Ok(None) => break Vec::new(),
                Ok(Some(Piece::Finished(calls))) => break calls,
                Ok(Some(Piece::Text(text))) => {
                    let text = clip(&text, MAX_ANSWER_CHARS - chars);
                    chars += text.chars().count();
                    answer.push_str(&text);
                    round_text.push_str(&text);
                    if job.tx.send(StreamEvent::Delta(text)).await.is_err() {
                        return Ending::Gone;
                    }
                    if chars >= MAX_ANSWER_CHARS {
                        return Ending::Cut;
                    }
                }
            }
        };
        // The provider's connection goes before the tools run.
        drop(completion);
        // The last round offered no tools: what it asks for anyway is not run. Earlier rounds
        // run every call, offered or not: each tool checks the user's permissions itself.
        if calls.is_empty() || round == MAX_TOOL_ROUNDS {
            return Ending::Complete;
        }
        job.wire.push(WireMessage {
            role: "assistant",
            content: (!round_text.is_empty()).then_some(round_text),
            tool_calls: Some(
                calls
                    .iter()
                    .map(crate::llm::provider::ToolCall::wire)
                    .collect(),
            ),
            tool_call_id: None,
        });
        for call in &calls {
            let result = tokio::select! {
                () = job.tx.closed() => return Ending::Gone,
                result = tools::run(&job.state, &job.principal, call) => result,
            };
            job.wire.push(WireMessage {
                role: "tool",
                content: Some(result),
                tool_calls: None,
                tool_call_id: Some(call.id.clone()),
            });
        }
    }
    Ending::Complete
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_midnights_are_utc() {
        let at = time::macros::datetime!(2026-11-27 23:59:30 UTC);
        assert_eq!(day_of(at), "2026-11-27");
        assert_eq!(until_tomorrow(at), 30);
        let east = time::macros::datetime!(2026-11-28 00:30:00 +02:00);
        assert_eq!(day_of(east), "2026-11-27");
    }

    #[test]
    fn the_body_is_checked_field_by_field() {
        let err = ChatInput::parse(&json!({
            "message": "x".repeat(MAX_MESSAGE_CHARS + 1),
            "conversation_id": "nope",
            "attachment_ids": ["a", "b"],
        }))
        .unwrap_err();
        let AppError::Invalid(errors) = err else {
            panic!("{err:?}")
        };
        let keys: Vec<String> = errors.iter().map(|(k, _)| k.to_owned()).collect();
        assert_eq!(keys, ["attachment_ids.0", "conversation_id", "message"]);
        let ok = ChatInput::parse(&json!({"message": "hi", "attachment_ids": []})).unwrap();
        assert_eq!(ok.message, "hi");
        assert!(ok.conversation_id.is_none());
        let six: Vec<String> = (0..6).map(|_| uuid::Uuid::new_v4().to_string()).collect();
        assert!(ChatInput::parse(&json!({"message": "hi", "attachment_ids": six})).is_err());
    }
}
