//! `POST /broadcasting/auth`: which channels a signed-in user may subscribe to, signed for one
//! socket. Channel names are the spec's: `private-App.Models.User.{id}` for that user alone, and
//! `presence-chat.{chat_id}` for users who may open that thread now (team chat's own check,
//! [`crate::chat::may_listen`]). Anything else is refused.

use serde::Serialize;
use vellum_policy::Reason;

use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// What a client subscribes with: `{"auth"}`, plus `channel_data` for presence channels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelAuth {
    pub auth: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel_data: Option<String>,
}

/// Whether `socket_id` has the protocol's shape (`\d+\.\d+`, each part at most 20 digits).
#[must_use]
pub fn valid_socket_id(socket_id: &str) -> bool {
    let digits = |part: &str| {
        !part.is_empty() && part.len() <= 20 && part.bytes().all(|b| b.is_ascii_digit())
    };
    socket_id
        .split_once('.')
        .is_some_and(|(node, id)| digits(node) && digits(id))
}

/// A positive id in decimal, as written in a channel name (no sign, no leading zero).
fn channel_id(text: &str) -> Option<i64> {
    let canonical = !text.starts_with('0') && text.bytes().all(|b| b.is_ascii_digit());
    canonical
        .then(|| text.parse().ok())
        .flatten()
        .filter(|id| *id > 0)
}

fn refused(rule: &'static str) -> AppError {
    AppError::Forbidden(Reason::RoleRule {
        role: "realtime".to_owned(),
        rule,
    })
}

/// Signs `channel_name` for `socket_id` when `principal` may listen on it.
///
/// # Errors
/// 422 for a malformed socket id or a missing channel name; 403 for any channel the user may
/// not subscribe to (another user's private channel, a thread the user may not open, any other
/// name).
pub async fn authorize(
    state: &AppState,
    principal: &Principal,
    socket_id: &str,
    channel_name: &str,
) -> Result<ChannelAuth, AppError> {
    let mut errors = vellum_domain::ValidationErrors::new();
    if !valid_socket_id(socket_id) {
        errors.add("socket_id", "The socket id must look like 1234.5678.");
    }
    if channel_name.is_empty() {
        errors.add("channel_name", "The channel name field is required.");
    }
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    let credentials = state.realtime().credentials();
    if let Some(user) = channel_name.strip_prefix("private-App.Models.User.") {
        if channel_id(user) != Some(principal.user_id()) {
            return Err(refused("a private user channel is its user's alone"));
        }
        return Ok(ChannelAuth {
            auth: credentials.sign(socket_id, channel_name, None),
            channel_data: None,
        });
    }
    if let Some(chat) = channel_name.strip_prefix("presence-chat.") {
        match crate::chat::may_listen(state, principal, chat).await {
            Ok(()) => {}
            // A thread the user cannot see, or none: refused alike (its existence is not told).
            Err(AppError::NotFound | AppError::Forbidden(_)) => {
                return Err(refused("only who may open a thread listens to it"));
            }
            Err(other) => return Err(other),
        }
        let account = &principal.access.account;
        let channel_data = serde_json::json!({
            "user_id": account.id,
            "user_info": {"id": account.id, "name": account.name},
        })
        .to_string();
        return Ok(ChannelAuth {
            auth: credentials.sign(socket_id, channel_name, Some(&channel_data)),
            channel_data: Some(channel_data),
        });
    }
    Err(refused("only user and chat channels are served"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_ids_are_two_runs_of_digits() {
        assert!(valid_socket_id("123.456"));
        for bad in [
            "",
            "123",
            "123.",
            ".456",
            "12a.4",
            "1.2.3",
            "-1.2",
            &"9".repeat(21),
        ] {
            assert!(!valid_socket_id(bad), "{bad}");
        }
    }

    #[test]
    fn channel_ids_are_canonical_positive_numbers() {
        assert_eq!(channel_id("7"), Some(7));
        for bad in ["", "0", "07", "-7", "+7", "7 ", "99999999999999999999"] {
            assert_eq!(channel_id(bad), None, "{bad}");
        }
    }
}
