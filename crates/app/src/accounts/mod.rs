//! Sign-in and sessions, the use cases behind `/login…`, `/logout`, `/account…`: password and
//! mailed-code sign-in, resolving a request's session to a [`Principal`], signing out here or
//! everywhere else. The services they run on are [`crate::identity`]'s.
//!
//! Every sign-in creates a new session with a new random token (no fixation: a token known before
//! sign-in is never promoted), and the answer for an unknown email equals the answer for a wrong
//! password, in body and in cost.

mod codes;
pub mod passkeys;
mod signin;

pub use codes::{request_code, sign_in_with_code};
pub use signin::{sign_in_with_password, start_session};

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;
use vellum_storage::sessions::SessionRow;

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::identity::token::SessionToken;
use crate::principal::{AccountResource, Principal};
use crate::telemetry::error_chain;

/// "Last seen" is written at most this often per session, so reads do not turn into writes.
const TOUCH_INTERVAL: Duration = Duration::from_secs(60);
/// The longest `User-Agent` kept with a session.
const MAX_USER_AGENT: usize = 255;

/// Where a sign-in comes from, kept with the session (shown in the session list) and used by the
/// per-address throttle, and the session the request already carried (ended by a sign-in, so an
/// older id never stays alive beside the new one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Client {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub previous_session: Option<SessionToken>,
}

impl Client {
    fn address_key(&self) -> &str {
        self.ip.as_deref().unwrap_or("unknown")
    }
}

/// A new session: the token for the cookie and the account signed in.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub token: SessionToken,
    pub account: AccountResource,
}

/// The principal of a session token, or `None` when the token is unknown, expired or ended, or
/// its user is gone or deleted.
///
/// A session found in the store is remembered with the snapshot, as API keys are: a request
/// then needs no query to authenticate. Ending a session moves the epoch, which every replica
/// reads on its next request and which drops the memo, so an ended session is refused at once
/// wherever it is presented (with Redis; replicas without Redis share no epoch and learn it
/// within the snapshot's lifetime, as they learn every project change). An expired session is
/// removed; a live one has "last seen" recorded at most once a minute, in the background.
///
/// # Errors
/// The session store or the database failing.
pub async fn authenticate(
    state: &AppState,
    token: &SessionToken,
) -> Result<Option<Principal>, AppError> {
    let identity = state.identity();
    let id = token.id();
    let snapshot = state.snapshot().await?;
    let now = OffsetDateTime::now_utc();
    let idle = identity.config.session_idle;
    let expired = |s: &SessionRow| now >= s.expires_at || now - s.last_seen_at >= idle;
    let session = match snapshot.session(&id) {
        // A remembered "last seen" may be older than the store's (another replica recorded a
        // use): before ending a session for idleness, ask the store.
        Some(remembered) if !expired(&remembered) => remembered,
        _ => {
            let Some(found) = identity.sessions.get(&id).await? else {
                snapshot.forget_session(&id);
                return Ok(None);
            };
            let found = Arc::new(found);
            snapshot.remember_session(Arc::clone(&found));
            found
        }
    };
    if expired(&session) {
        snapshot.forget_session(&id);
        identity.sessions.delete(&id).await?;
        return Ok(None);
    }
    let Some(access) = snapshot.account_access(state.db(), session.user_id).await? else {
        identity.sessions.delete(&id).await?;
        return Ok(None);
    };
    if access.account.deleted_at.is_some() {
        end_user_sessions(state, session.user_id).await?;
        return Ok(None);
    }
    if now - session.last_seen_at >= TOUCH_INTERVAL {
        let mut seen = (*session).clone();
        seen.last_seen_at = now;
        snapshot.remember_session(Arc::new(seen));
        let sessions = Arc::clone(&identity.sessions);
        let touched = id.clone();
        tokio::spawn(async move {
            if let Err(err) = sessions.touch(&touched, now, idle).await {
                tracing::warn!(error = %error_chain(&err), "could not record a session's use");
            }
        });
    }
    Ok(Some(Principal {
        access,
        session_id: id,
    }))
}

/// Ends the principal's session.
///
/// # Errors
/// The session store failing.
pub async fn sign_out(state: &AppState, principal: &Principal) -> Result<(), AppError> {
    end_session(state, &principal.session_id).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("auth", "signed_out").subject("user", principal.user_id()),
    )
    .await;
    Ok(())
}

/// Ends every other session of the principal's user, on every replica (they read the shared
/// store on each request). Answers how many ended.
///
/// # Errors
/// The session store failing.
pub async fn revoke_other_sessions(
    state: &AppState,
    principal: &Principal,
) -> Result<u64, AppError> {
    let ended = state
        .identity()
        .sessions
        .delete_user(principal.user_id(), Some(&principal.session_id))
        .await?;
    // Every replica drops its remembered sessions on its next request.
    state.invalidate().await;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("auth", "sessions_revoked")
            .subject("user", principal.user_id())
            .extra(serde_json::json!({ "ended": ended })),
    )
    .await;
    Ok(ended)
}

/// Ends every session of a user (deleted, or its password changed by an administrator).
///
/// # Errors
/// The session store failing.
pub async fn end_user_sessions(state: &AppState, user_id: i64) -> Result<u64, AppError> {
    let ended = state.identity().sessions.delete_user(user_id, None).await?;
    state.invalidate().await;
    Ok(ended)
}

/// Ends one session, here and (through the epoch) on every replica that remembers it.
///
/// # Errors
/// The session store failing.
pub async fn end_session(state: &AppState, id: &str) -> Result<(), AppError> {
    state.identity().sessions.delete(id).await?;
    state.invalidate().await;
    Ok(())
}

/// One session as `GET /account/sessions` lists it (never its id or token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionResource {
    pub current: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub last_seen_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// The principal's sessions, newest first.
///
/// # Errors
/// The session store failing.
pub async fn sessions(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<SessionResource>, AppError> {
    let rows = state
        .identity()
        .sessions
        .list_user(principal.user_id())
        .await?;
    Ok(rows
        .into_iter()
        .map(|row: SessionRow| SessionResource {
            current: row.id == principal.session_id,
            created_at: row.created_at,
            last_seen_at: row.last_seen_at,
            expires_at: row.expires_at,
            ip: row.ip,
            user_agent: row.user_agent,
        })
        .collect())
}

fn user_agent(client: &Client) -> Option<String> {
    client.user_agent.as_deref().map(|ua| {
        ua.chars()
            .filter(|c| !c.is_control())
            .take(MAX_USER_AGENT)
            .collect()
    })
}
