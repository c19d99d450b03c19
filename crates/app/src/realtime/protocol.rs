//! The Pusher Channels protocol, version 7, as text frames: what a client may send
//! ([`Incoming`]) and the frames the server sends ([`frame`] and its helpers). Every `data` the
//! server sends is a JSON-encoded string, as the protocol requires; clients send `data` as an
//! object (or, some, as a string holding one: both are read).

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value as Json, json};

/// The protocol version served.
pub const PROTOCOL: u32 = 7;

/// The largest text frame read from a client (64 KiB); a larger one closes the socket.
pub const MAX_FRAME: usize = 64 * 1024;

/// Pusher's limit on a channel name's length.
pub const MAX_CHANNEL_NAME: usize = 164;

/// Close codes of the protocol (4000–4099: do not reconnect; 4100–4199: reconnect after a
/// back-off; 4200–4299: reconnect now).
pub mod close {
    /// The key in the URL is not this server's.
    pub const APP_NOT_FOUND: u16 = 4001;
    /// The `protocol` query parameter is missing.
    pub const NO_PROTOCOL: u16 = 4008;
    /// The `protocol` version is not 7 (nor an older one pusher-js speaks the same way).
    pub const UNSUPPORTED_PROTOCOL: u16 = 4007;
    /// This process holds as many sockets as it may.
    pub const OVER_CAPACITY: u16 = 4100;
    /// Reconnect now: the socket fell behind (its queue filled), or the server is stopping.
    pub const RECONNECT: u16 = 4200;
    /// No pong came back after the server's ping.
    pub const PONG_TIMEOUT: u16 = 4201;
    /// Too many client events per second.
    pub const CLIENT_EVENT_RATE: u16 = 4301;
    /// The client closed the socket (the server's close frame answers its).
    pub const NORMAL: u16 = 1000;
    /// The client sent a frame over [`super::MAX_FRAME`], or one that is not WebSocket.
    pub const TOO_BIG: u16 = 1009;

    /// The reason a server's close frame gives for `code`.
    #[must_use]
    pub fn reason(code: u16) -> &'static str {
        match code {
            APP_NOT_FOUND => "Application does not exist.",
            NO_PROTOCOL => "No protocol version supplied.",
            UNSUPPORTED_PROTOCOL => "Unsupported protocol version.",
            OVER_CAPACITY => "Over capacity.",
            RECONNECT => "Reconnect now.",
            PONG_TIMEOUT => "Pong reply not received.",
            NORMAL => "Closed by the client.",
            TOO_BIG => "Frames are limited to 64 KiB.",
            _ => "Closed by the server.",
        }
    }
}

/// The channels the server serves: signed ones only. Public channels would let anyone listen in
/// on a name, and nothing is ever broadcast on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Private,
    Presence,
}

/// The kind of a valid channel name, `None` for a public or malformed one. Names follow Pusher's
/// rules: at most 164 characters of `[A-Za-z0-9_\-=@,.;]`.
#[must_use]
pub fn channel_kind(name: &str) -> Option<ChannelKind> {
    let valid = !name.is_empty()
        && name.len() <= MAX_CHANNEL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-=@,.;".contains(&b));
    if !valid {
        return None;
    }
    if name.starts_with("presence-") {
        Some(ChannelKind::Presence)
    } else if name.starts_with("private-") {
        Some(ChannelKind::Private)
    } else {
        None
    }
}

/// A frame from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Ping,
    Pong,
    Subscribe {
        channel: String,
        auth: Option<String>,
        channel_data: Option<String>,
    },
    Unsubscribe {
        channel: String,
    },
    /// `client-*`: relayed to the channel's other subscribers when client events are enabled.
    ClientEvent {
        event: String,
        channel: String,
        data: Json,
    },
    /// Any other event name: ignored, as Pusher does.
    Other(String),
}

#[derive(Deserialize)]
struct Raw {
    event: String,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    data: Json,
}

/// Why a frame could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("the message is not JSON with an event name")]
    Malformed,
    #[error("the message lacks its channel")]
    NoChannel,
}

impl Incoming {
    /// Reads one text frame.
    ///
    /// # Errors
    /// Not a JSON object with a string `event`, or a channel event without its channel.
    pub fn parse(text: &str) -> Result<Self, FrameError> {
        let raw: Raw = serde_json::from_str(text).map_err(|_| FrameError::Malformed)?;
        // Some clients send `data` as a string holding the JSON object.
        let data = match raw.data {
            Json::String(inner) => serde_json::from_str(&inner).unwrap_or(Json::String(inner)),
            other => other,
        };
        let field = |name: &str| data.get(name).and_then(Json::as_str).map(str::to_owned);
        Ok(match raw.event.as_str() {
            "pusher:ping" => Self::Ping,
            "pusher:pong" => Self::Pong,
            "pusher:subscribe" => Self::Subscribe {
                channel: field("channel").ok_or(FrameError::NoChannel)?,
                auth: field("auth"),
                channel_data: field("channel_data"),
            },
            "pusher:unsubscribe" => Self::Unsubscribe {
                channel: field("channel").ok_or(FrameError::NoChannel)?,
            },
            name if name.starts_with("client-") => Self::ClientEvent {
                event: raw.event.clone(),
                channel: raw.channel.ok_or(FrameError::NoChannel)?,
                data,
            },
            _ => Self::Other(raw.event),
        })
    }
}

/// A frame: `{"event", "channel"?, "data"}` with `data` the given JSON text as a string.
#[must_use]
pub fn frame(event: &str, channel: Option<&str>, data: &str) -> Bytes {
    let value = match channel {
        Some(channel) => json!({"event": event, "channel": channel, "data": data}),
        None => json!({"event": event, "data": data}),
    };
    Bytes::from(value.to_string())
}

/// An event on a channel; a presence channel's client event also names its sender.
#[must_use]
pub fn event_frame(event: &str, channel: &str, data: &str, user_id: Option<&str>) -> Bytes {
    match user_id {
        Some(user_id) => Bytes::from(
            json!({"event": event, "channel": channel, "data": data, "user_id": user_id})
                .to_string(),
        ),
        None => frame(event, Some(channel), data),
    }
}

/// The first frame of every connection.
#[must_use]
pub fn connection_established(socket_id: &str, activity_timeout: u64) -> Bytes {
    let data = json!({"socket_id": socket_id, "activity_timeout": activity_timeout});
    frame("pusher:connection_established", None, &data.to_string())
}

#[must_use]
pub fn ping() -> Bytes {
    frame("pusher:ping", None, "{}")
}

#[must_use]
pub fn pong() -> Bytes {
    frame("pusher:pong", None, "{}")
}

/// `pusher:error` (`code` null for errors that are not close codes).
#[must_use]
pub fn error(code: Option<u16>, message: &str) -> Bytes {
    let data = json!({"code": code, "message": message});
    frame("pusher:error", None, &data.to_string())
}

/// A refused or revoked subscription, as pusher-js and laravel-echo report them to the app
/// (`channel.bind('pusher:subscription_error')`, Echo's `.error()`).
#[must_use]
pub fn subscription_error(channel: &str, status: u16, message: &str) -> Bytes {
    let data = json!({"type": "AuthError", "error": message, "status": status});
    frame(
        "pusher:subscription_error",
        Some(channel),
        &data.to_string(),
    )
}

#[must_use]
pub fn subscription_succeeded(channel: &str, data: &str) -> Bytes {
    frame(
        "pusher_internal:subscription_succeeded",
        Some(channel),
        data,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_pusher_js_sends() {
        let subscribe = r#"{"event":"pusher:subscribe","data":{"auth":"k:s","channel_data":"{\"user_id\":1}","channel":"presence-chat.1"}}"#;
        assert_eq!(
            Incoming::parse(subscribe).unwrap(),
            Incoming::Subscribe {
                channel: "presence-chat.1".into(),
                auth: Some("k:s".into()),
                channel_data: Some(r#"{"user_id":1}"#.into()),
            }
        );
        assert_eq!(
            Incoming::parse(r#"{"event":"pusher:ping","data":{}}"#).unwrap(),
            Incoming::Ping
        );
        assert_eq!(
            Incoming::parse(
                r#"{"event":"pusher:unsubscribe","data":"{\"channel\":\"private-a\"}"}"#
            )
            .unwrap(),
            Incoming::Unsubscribe {
                channel: "private-a".into()
            }
        );
        assert_eq!(
            Incoming::parse(r#"{"event":"client-typing","channel":"private-a","data":{"x":1}}"#)
                .unwrap(),
            Incoming::ClientEvent {
                event: "client-typing".into(),
                channel: "private-a".into(),
                data: json!({"x": 1}),
            }
        );
        assert_eq!(
            Incoming::parse(r#"{"event":"anything"}"#).unwrap(),
            Incoming::Other("anything".into())
        );
    }

    #[test]
    fn refuses_what_is_no_message() {
        for text in ["", "[]", "{}", r#"{"event":1}"#, "not json"] {
            assert_eq!(Incoming::parse(text), Err(FrameError::Malformed), "{text}");
        }
        assert_eq!(
            Incoming::parse(r#"{"event":"pusher:subscribe","data":{}}"#),
            Err(FrameError::NoChannel)
        );
        assert_eq!(
            Incoming::parse(r#"{"event":"client-x","data":{}}"#),
            Err(FrameError::NoChannel)
        );
    }

    #[test]
    fn serves_signed_channels_with_valid_names_only() {
        assert_eq!(
            channel_kind("private-App.Models.User.1"),
            Some(ChannelKind::Private)
        );
        assert_eq!(channel_kind("presence-chat.7"), Some(ChannelKind::Presence));
        assert_eq!(channel_kind("chat.7"), None);
        assert_eq!(channel_kind("private-a b"), None);
        assert_eq!(channel_kind(""), None);
        assert_eq!(channel_kind(&format!("private-{}", "a".repeat(160))), None);
    }

    #[test]
    fn frames_carry_data_as_a_json_string() {
        let frame = connection_established("1.2", 120);
        let value: Json = serde_json::from_slice(&frame).unwrap();
        assert_eq!(value["event"], "pusher:connection_established");
        let data: Json = serde_json::from_str(value["data"].as_str().unwrap()).unwrap();
        assert_eq!(data, json!({"socket_id": "1.2", "activity_timeout": 120}));
        let error: Json =
            serde_json::from_slice(&subscription_error("private-a", 403, "no")).unwrap();
        assert_eq!(error["channel"], "private-a");
        assert!(error["data"].is_string());
    }
}
