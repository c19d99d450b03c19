//! The model provider: any OpenAI-compatible `POST {base}/chat/completions` with `stream: true`,
//! read as server-sent events.
//!
//! The chunk types are our own and lenient: every field optional, unknown fields ignored, `null`
//! where a list was expected taken as empty. OpenAI, Ollama, vLLM, llama.cpp and LM Studio differ
//! in exactly those places, and one strict enum would turn a harmless difference into a failed
//! answer. Tool-call fragments are accumulated by their `index` (the id and name come once, the
//! arguments in pieces).
//!
//! Nothing here retries: a retried POST would run the prompt (and its tools) twice. Silence is
//! bounded instead: the response must start, and every next chunk arrive, within
//! [`crate::AiConfig::idle_timeout`].

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource as _};
use futures_util::{Stream, StreamExt as _};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::AiConfig;

/// Why the provider gave no (complete) answer. The display text is what the user is shown: it
/// names no URL, key or provider detail (those go to the log through [`ProviderError::detail`]).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("The AI provider could not be reached.")]
    Unreachable(#[source] reqwest::Error),
    #[error("The AI provider did not answer in time.")]
    Silent,
    #[error("The AI provider refused the request.")]
    Refused { status: u16, body: String },
    #[error("The AI provider reported an error.")]
    Reported { message: String },
    #[error("The AI provider's answer broke off.")]
    BrokeOff(String),
}

impl ProviderError {
    /// What the log gets: the status and the start of the provider's own words.
    #[must_use]
    pub fn detail(&self) -> String {
        match self {
            Self::Unreachable(err) => crate::telemetry::error_chain(err),
            Self::Silent => "no data within the idle timeout".to_owned(),
            Self::Refused { status, body } => format!("HTTP {status}: {body}"),
            Self::Reported { message } => message.clone(),
            Self::BrokeOff(detail) => detail.clone(),
        }
    }
}

/// A message of the conversation as the provider takes it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WireMessage {
    pub role: &'static str,
    /// Null only on an assistant message that only calls tools.
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl WireMessage {
    pub(crate) fn text(role: &'static str, content: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(content.into()),
            tool_calls: None,
            tool_call_id: None,
        }
    }
}

/// A tool call as the assistant message that made it carries it back.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WireToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: WireFunction,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct WireFunction {
    pub name: String,
    pub arguments: String,
}

/// A finished tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    pub(crate) fn wire(&self) -> WireToolCall {
        WireToolCall {
            id: self.id.clone(),
            kind: "function",
            function: WireFunction {
                name: self.name.clone(),
                arguments: self.arguments.clone(),
            },
        }
    }
}

/// What the stream gives next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// A fragment of the answer's text.
    Text(String),
    /// The answer is over; the tools it asked for, if any (in index order).
    Finished(Vec<ToolCall>),
}

// The lenient chunk types.
#[derive(Debug, Default, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    error: Option<Json>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Default, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Tool calls accumulate at most this many per answer; a model asking for more gets the first.
const MAX_CALLS: usize = 8;
/// One tool call's arguments stop growing here (they are a small JSON object).
const MAX_ARGUMENT_BYTES: usize = 4_096;
/// How much of a refusing provider's body reaches the log.
const MAX_LOGGED_BODY: usize = 512;

/// Bytes one streamed answer may take on the wire (its text is capped far lower, in characters,
/// by the caller).
const MAX_STREAM_BYTES: usize = 16 * 1024 * 1024;

/// Why reading the provider's stream stopped.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    #[error("the answer passed {MAX_STREAM_BYTES} bytes")]
    TooLong,
}

/// `bytes` until `max` of them have passed, then [`ReadError::TooLong`]: a provider that never
/// ends a line (or an answer) would otherwise grow the event parser's buffer without end.
fn capped<E>(
    bytes: impl Stream<Item = Result<bytes::Bytes, E>>,
    max: usize,
) -> impl Stream<Item = Result<bytes::Bytes, ReadError>>
where
    ReadError: From<E>,
{
    let mut read = 0_usize;
    bytes.map(move |chunk| {
        let chunk = chunk?;
        read = read.saturating_add(chunk.len());
        if read > max {
            return Err(ReadError::TooLong);
        }
        Ok(chunk)
    })
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<ReadError>>> + Send>>;

/// One streamed answer in progress. Dropping it drops the provider's connection.
pub(crate) struct Completion {
    events: Events,
    idle: Duration,
    calls: BTreeMap<u32, ToolCall>,
    /// The provider said why it finished; the next call ends the answer.
    finish_pending: bool,
    finished: bool,
}

impl Completion {
    /// The next piece of the answer; after [`Piece::Finished`], always `None`.
    ///
    /// # Errors
    /// [`ProviderError`] when the provider goes silent, breaks off or reports an error.
    pub(crate) async fn next(&mut self) -> Result<Option<Piece>, ProviderError> {
        if self.finished {
            return Ok(None);
        }
        if self.finish_pending {
            return Ok(Some(self.finish()));
        }
        loop {
            let event = tokio::time::timeout(self.idle, self.events.next())
                .await
                .map_err(|_| ProviderError::Silent)?;
            let event = match event {
                // The stream ended: without `[DONE]` this is still the end of the answer when
                // it said why it finished; some servers close right after.
                None => return Ok(Some(self.finish())),
                Some(Err(err)) => return Err(ProviderError::BrokeOff(err.to_string())),
                Some(Ok(event)) => event,
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                return Ok(Some(self.finish()));
            }
            if data.is_empty() {
                continue;
            }
            let Ok(chunk) = serde_json::from_str::<Chunk>(data) else {
                tracing::debug!(len = data.len(), "ai: skipped a chunk that is not JSON");
                continue;
            };
            if let Some(error) = chunk.error {
                return Err(ProviderError::Reported {
                    message: error_message(&error),
                });
            }
            let mut text = String::new();
            for choice in chunk.choices.unwrap_or_default() {
                if let Some(delta) = choice.delta {
                    if let Some(content) = delta.content {
                        text.push_str(&content);
                    }
                    for call in delta.tool_calls.unwrap_or_default() {
                        self.accumulate(call);
                    }
                }
                // The answer is complete; the stream may still send usage and `[DONE]`, or
                // nothing at all, so it is not waited for.
                if choice.finish_reason.is_some_and(|r| !r.is_empty()) {
                    self.finish_pending = true;
                }
            }
            if !text.is_empty() {
                return Ok(Some(Piece::Text(text)));
            }
            if self.finish_pending {
                return Ok(Some(self.finish()));
            }
        }
    }

    fn accumulate(&mut self, delta: CallDelta) {
        let index = delta.index.unwrap_or(0);
        if !self.calls.contains_key(&index) && self.calls.len() >= MAX_CALLS {
            return;
        }
        let call = self.calls.entry(index).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments
                && call.arguments.len() + arguments.len() <= MAX_ARGUMENT_BYTES
            {
                call.arguments.push_str(&arguments);
            }
        }
    }

    fn finish(&mut self) -> Piece {
        self.finished = true;
        let calls = std::mem::take(&mut self.calls)
            .into_iter()
            .filter(|(_, call)| !call.name.is_empty())
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect();
        Piece::Finished(calls)
    }
}

/// The provider's own error text, whatever shape it has (`{"message"}`, a string).
fn error_message(error: &Json) -> String {
    let text = match error {
        Json::String(text) => text.clone(),
        Json::Object(map) => map
            .get("message")
            .and_then(Json::as_str)
            .map_or_else(|| error.to_string(), str::to_owned),
        other => other.to_string(),
    };
    text.chars().take(MAX_LOGGED_BODY).collect()
}

/// The configured provider.
#[derive(Clone)]
pub(crate) struct Provider {
    client: reqwest::Client,
    completions: String,
    models: String,
    model: String,
    api_key: Option<String>,
    idle: Duration,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("completions", &self.completions)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// The provider of `config`, when one is configured.
    pub(crate) fn new(config: &AiConfig) -> Option<Self> {
        let (base, model) = config.provider()?;
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            // A redirected POST would become a GET or be re-sent: neither is wanted.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| tracing::error!(error = %crate::telemetry::error_chain(&err), "ai: the HTTP client could not start"))
            .ok()?;
        let base = base.trim_end_matches('/');
        Some(Self {
            client,
            completions: format!("{base}/chat/completions"),
            models: format!("{base}/models"),
            model: model.to_owned(),
            api_key: config.api_key.clone(),
            idle: config.idle_timeout,
        })
    }

    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// Starts a streamed answer to `messages`, offering `tools` (JSON tool definitions).
    ///
    /// # Errors
    /// [`ProviderError`] when the provider cannot be reached, stays silent or refuses.
    pub(crate) async fn complete(
        &self,
        messages: &[WireMessage],
        tools: &[Json],
    ) -> Result<Completion, ProviderError> {
        let mut body = serde_json::json!({
            "model": self.model,
            "stream": true,
            "messages": messages,
        });
        if !tools.is_empty()
            && let Some(object) = body.as_object_mut()
        {
            object.insert("tools".to_owned(), Json::Array(tools.to_vec()));
        }
        let mut request = self
            .client
            .post(&self.completions)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = tokio::time::timeout(self.idle, request.send())
            .await
            .map_err(|_| ProviderError::Silent)?
            .map_err(ProviderError::Unreachable)?;
        let status = response.status();
        if !status.is_success() {
            // Only the first chunk, for the log: a refusal's body may be of any size.
            let mut response = response;
            let body = tokio::time::timeout(Duration::from_secs(2), response.chunk())
                .await
                .ok()
                .and_then(Result::ok)
                .flatten()
                .map(|bytes| {
                    let end = bytes.len().min(MAX_LOGGED_BODY);
                    String::from_utf8_lossy(bytes.get(..end).unwrap_or_default()).into_owned()
                })
                .unwrap_or_default();
            return Err(ProviderError::Refused {
                status: status.as_u16(),
                body,
            });
        }
        Ok(Completion {
            events: Box::pin(capped(response.bytes_stream(), MAX_STREAM_BYTES).eventsource()),
            idle: self.idle,
            calls: BTreeMap::new(),
            finish_pending: false,
            finished: false,
        })
    }

    /// Whether the provider answers `GET {base}/models` with a success within `within`.
    pub(crate) async fn reachable(&self, within: Duration) -> bool {
        let mut request = self.client.get(&self.models);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        matches!(
            tokio::time::timeout(within, request.send()).await,
            Ok(Ok(response)) if response.status().is_success()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion_of(lines: &'static str) -> Completion {
        let bytes = futures_util::stream::iter(
            lines
                .split_inclusive("\n\n")
                .map(|part| Ok::<_, ReadError>(bytes::Bytes::from_static(part.as_bytes())))
                .collect::<Vec<_>>(),
        );
        Completion {
            events: Box::pin(bytes.eventsource()),
            idle: Duration::from_secs(1),
            calls: BTreeMap::new(),
            finish_pending: false,
            finished: false,
        }
    }

    async fn all(mut completion: Completion) -> Result<Vec<Piece>, ProviderError> {
        let mut pieces = Vec::new();
        while let Some(piece) = completion.next().await? {
            pieces.push(piece);
        }
        Ok(pieces)
    }

    #[tokio::test]
    async fn text_deltas_then_done() {
        let pieces = all(completion_of(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":null}]}\n\n\
             data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
             data: [DONE]\n\n",
        ))
        .await
        .unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Text("Hel".into()),
                Piece::Text("lo".into()),
                Piece::Finished(vec![])
            ]
        );
    }

    #[tokio::test]
    async fn nulls_unknown_fields_and_garbage_are_tolerated() {
        let pieces = all(completion_of(
            ": keep-alive\n\n\
             data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":null}\n\n\
             data: not json\n\n\
             data: {\"choices\":[{\"delta\":{\"content\":null,\"tool_calls\":null,\"reasoning\":\"hm\"}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}],\"usage\":{\"total_tokens\":3}}\n\n",
        ))
        .await
        .unwrap();
        // The stream ends without [DONE]: the answer is what came.
        assert_eq!(
            pieces,
            vec![Piece::Text("ok".into()), Piece::Finished(vec![])]
        );
    }

    #[tokio::test]
    async fn tool_call_fragments_accumulate_per_index() {
        let pieces = all(completion_of(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"get_item\",\"arguments\":\"{\\\"coll\"}},{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"list_collections\",\"arguments\":\"\"}}]}}]}\n\n\
             data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ection\\\": \\\"posts\\\"}\"}}]}}]}\n\n\
             data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        ))
        .await
        .unwrap();
        assert_eq!(
            pieces,
            vec![Piece::Finished(vec![
                ToolCall {
                    id: "a".into(),
                    name: "get_item".into(),
                    arguments: "{\"collection\": \"posts\"}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "list_collections".into(),
                    arguments: String::new()
                },
            ])]
        );
    }

    #[tokio::test]
    async fn an_error_chunk_ends_the_answer_with_its_message() {
        let err = all(completion_of(
            "data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n\
             data: {\"error\":{\"message\":\"model overloaded\",\"code\":503}}\n\n",
        ))
        .await
        .unwrap_err();
        assert!(
            matches!(err, ProviderError::Reported { ref message } if message == "model overloaded")
        );
        assert_eq!(err.to_string(), "The AI provider reported an error.");
    }

    #[tokio::test]
    async fn a_line_that_never_ends_breaks_off_at_the_cap() {
        let piece = bytes::Bytes::from(vec![b'x'; 1024 * 1024]);
        let endless =
            futures_util::stream::iter(std::iter::repeat_n(piece, 64)).map(Ok::<_, ReadError>);
        let mut completion = Completion {
            events: Box::pin(capped(endless, 8 * 1024 * 1024).eventsource()),
            idle: Duration::from_secs(1),
            calls: BTreeMap::new(),
            finish_pending: false,
            finished: false,
        };
        assert!(matches!(
            completion.next().await,
            Err(ProviderError::BrokeOff(_))
        ));
    }

    #[tokio::test]
    async fn a_silent_stream_times_out() {
        let mut completion = Completion {
            events: Box::pin(
                futures_util::stream::pending::<Result<bytes::Bytes, ReadError>>().eventsource(),
            ),
            idle: Duration::from_millis(50),
            calls: BTreeMap::new(),
            finish_pending: false,
            finished: false,
        };
        assert!(matches!(
            completion.next().await,
            Err(ProviderError::Silent)
        ));
    }

    #[test]
    fn the_key_is_never_in_debug_output() {
        let config = AiConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            api_key: Some("sk-secret".into()),
            ..AiConfig::default()
        };
        assert!(!format!("{config:?}").contains("sk-secret"));
        let provider = Provider::new(&config).unwrap();
        assert!(!format!("{provider:?}").contains("sk-secret"));
        assert_eq!(
            provider.completions,
            "http://127.0.0.1:9/v1/chat/completions"
        );
    }
}
