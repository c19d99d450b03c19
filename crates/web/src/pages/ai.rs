//! AI chat (`GET /ai`, `GET /ai/{conversation}`): the user's conversations (pinned first) and
//! the open one with its messages and composer. `ai.js` sends prompts to `POST /ai/chat` and
//! shows the answer as it streams, with a stop button; attachments upload first and ride along
//! by id; rename, pin and delete go through the JSON API. Errors are shown where they happen.

use askama::Template;
use vellum_app::ai::{ConversationPage, Shown};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "ai.html")]
pub struct AiPage {
    pub chrome: Chrome,
    pub list: ConversationPage,
    pub open: Option<Shown>,
    /// Whether a provider is configured (else the composer is off and says why).
    pub configured: bool,
}

impl AiPage {
    #[must_use]
    pub fn new(
        principal: &Principal,
        list: ConversationPage,
        open: Option<Shown>,
        configured: bool,
    ) -> Self {
        Self {
            chrome: Chrome::new(principal, "ai"),
            list,
            open,
            configured,
        }
    }

    /// Whether conversation `id` is the open one.
    #[must_use]
    pub fn is_open(&self, id: &str) -> bool {
        self.open
            .as_ref()
            .is_some_and(|open| open.conversation.id == id)
    }

    /// The open conversation's id, or "" for a new one.
    #[must_use]
    pub fn open_id(&self) -> &str {
        self.open
            .as_ref()
            .map_or("", |open| open.conversation.id.as_str())
    }

    /// `2026-11-27 10:15` of an RFC 3339 value.
    #[must_use]
    pub fn when(value: &serde_json::Value) -> String {
        value
            .as_str()
            .map(|s| s.get(..16).unwrap_or(s).replace('T', " "))
            .unwrap_or_default()
    }

    /// The names of a message's attachments.
    #[must_use]
    pub fn attachment_names(value: &serde_json::Value) -> Vec<String> {
        value
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|a| a.get("name").and_then(serde_json::Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }
}
