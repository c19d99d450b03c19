//! The chat hub (`GET /chat`, `GET /chat/{chat}`): the tabs (item threads, private
//! conversations, the archive) with unread badges, and the open thread with its messages and
//! composer. `chat.js` makes it live: it speaks the Pusher protocol to `/app/{key}`, listens on
//! the open thread's presence channel (messages, reactions, who is here) and on the user's own
//! channel (unread counts, new conversations, mentions), and sends through the JSON API.

use askama::Template;
use vellum_app::chat::{Hub, HubTab, MessageResource, ThreadResource, ThreadView};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "chat.html")]
pub struct ChatPage {
    pub chrome: Chrome,
    pub hub: Hub,
    pub user_id: i64,
    pub user_name: String,
    /// The realtime app key (`/app/{key}`).
    pub realtime_key: String,
}

impl ChatPage {
    #[must_use]
    pub fn new(principal: &Principal, hub: Hub, realtime_key: &str) -> Self {
        Self {
            chrome: Chrome::new(principal, "chat"),
            user_id: principal.user_id(),
            user_name: principal.access.account.name.clone(),
            hub,
            realtime_key: realtime_key.to_owned(),
        }
    }

    #[must_use]
    pub fn on_private(&self) -> bool {
        self.hub.tab == HubTab::Private
    }

    /// The tab query a thread link keeps.
    #[must_use]
    pub fn tab_query(&self) -> &'static str {
        match (self.hub.tab, self.hub.archived) {
            (HubTab::Collection, _) => "?tab=collection",
            (HubTab::Private, false) => "?tab=private",
            (HubTab::Private, true) => "?archived=1",
        }
    }

    #[must_use]
    pub fn is_open(&self, thread: &ThreadResource) -> bool {
        self.hub
            .open
            .as_ref()
            .is_some_and(|open| open.thread.id == thread.id)
    }

    #[must_use]
    pub fn open(&self) -> Option<&ThreadView> {
        self.hub.open.as_ref()
    }

    /// Whether the open thread takes mentions: not a one-to-one conversation (two people, no
    /// group), where the server refuses them.
    #[must_use]
    pub fn mentions_allowed(&self) -> bool {
        self.open().is_none_or(|open| {
            let thread = &open.thread;
            thread.kind != "direct"
                || thread.members.iter().any(|m| m.kind == "group")
                || thread.members.len() > 2
        })
    }

    /// Whether the signed-in user wrote `message` (and so may edit or delete it).
    #[must_use]
    pub fn mine(&self, message: &MessageResource) -> bool {
        message
            .author
            .as_ref()
            .is_some_and(|a| a.id == self.user_id)
    }

    /// A timestamp as the page shows it (`2026-11-27 13:05`).
    #[must_use]
    pub fn when(value: &serde_json::Value) -> String {
        value
            .as_str()
            .map(|s| s.get(..16).unwrap_or(s).replace('T', " "))
            .unwrap_or_default()
    }
}
