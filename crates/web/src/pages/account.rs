//! The account page (`GET /account`): the signed-in user's profile and sessions, with "sign out
//! everywhere else".

use askama::Template;
use vellum_app::accounts::SessionResource;
use vellum_app::accounts::passkeys::PasskeyResource;
use vellum_app::principal::{AccountResource, Principal};

use crate::chrome::Chrome;
use crate::format::when;

#[derive(Debug, Clone, Template)]
#[template(path = "account.html")]
pub struct AccountPage {
    pub chrome: Chrome,
    pub account: AccountResource,
    pub sessions: Vec<SessionRow>,
    /// How many other sessions were just ended (after "sign out everywhere else").
    pub ended: Option<u64>,
    /// `None` when passkeys do not work on this server.
    pub passkeys: Option<Vec<PasskeyRow>>,
}

/// One passkey as the list shows it.
#[derive(Debug, Clone)]
pub struct PasskeyRow {
    pub id: i64,
    pub name: String,
    pub created: String,
    pub last_used: String,
}

/// One session as the table shows it.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub current: bool,
    pub device: String,
    pub ip: String,
    pub created: String,
    pub last_seen: String,
}

impl AccountPage {
    #[must_use]
    pub fn new(
        principal: &Principal,
        sessions: Vec<SessionResource>,
        passkeys: Option<Vec<PasskeyResource>>,
        ended: Option<u64>,
    ) -> Self {
        Self {
            chrome: Chrome::new(principal, "account"),
            account: principal.resource(),
            sessions: sessions
                .into_iter()
                .map(|s| SessionRow {
                    current: s.current,
                    device: s.user_agent.unwrap_or_else(|| "Unknown device".to_owned()),
                    ip: s.ip.unwrap_or_else(|| "unknown".to_owned()),
                    created: when(s.created_at),
                    last_seen: when(s.last_seen_at),
                })
                .collect(),
            ended,
            passkeys: passkeys.map(|list| {
                list.into_iter()
                    .map(|p| PasskeyRow {
                        id: p.id,
                        name: p.name,
                        created: when(p.created_at),
                        last_used: p.last_used_at.map_or_else(|| "never".to_owned(), when),
                    })
                    .collect()
            }),
        }
    }

    /// Whether any session besides this one is open.
    #[must_use]
    pub fn has_others(&self) -> bool {
        self.sessions.iter().any(|s| !s.current)
    }
}
