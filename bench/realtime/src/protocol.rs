//! The Pusher Channels protocol 7, as much of it as the load client speaks: building the frames it
//! sends and classifying the frames it receives.
//!
//! Pure functions only (no sockets, no clock), so the signature and the parsing are unit-tested
//! against Pusher's documented examples rather than against our own server.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// The query string a pusher-js 8 client sends; the server refuses other protocol versions.
pub const CLIENT_QUERY: &str = "protocol=7&client=js&version=8.4.0";

/// Our answer to the server's `pusher:ping` (sent after its activity timeout of silence); a
/// socket that does not answer is closed, which would make an idle `hold` look like a failure.
pub const PONG: &str = r#"{"event":"pusher:pong","data":{}}"#;

/// The client event name the publishers send; the `client-` prefix is what the server requires.
pub const BENCH_EVENT: &str = "client-bench";

/// A frame the protocol does not let the server send (not JSON, or no `event`).
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("frame is not JSON")]
    Json(#[from] serde_json::Error),
    #[error("frame has no {0}")]
    Missing(&'static str),
}

/// Lowercase hex HMAC-SHA256 of `to_sign` under the app secret: the signature part of `auth`.
#[must_use]
pub fn sign(secret: &str, to_sign: &str) -> String {
    // HMAC takes keys of any length, so `new_from_slice` cannot fail; the `map_or` only keeps
    // the lints quiet without a panic path.
    <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).map_or_else(
        |_| String::new(),
        |mut mac| {
            mac.update(to_sign.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        },
    )
}

/// `auth` for a private channel: `KEY:HEX(HMAC(secret, "socket_id:channel"))`.
#[must_use]
pub fn private_auth(key: &str, secret: &str, socket_id: &str, channel: &str) -> String {
    format!("{key}:{}", sign(secret, &format!("{socket_id}:{channel}")))
}

/// `auth` for a presence channel: the signed string also covers `channel_data`, so a client
/// cannot claim another user id than the one the (here: our own) auth endpoint signed.
#[must_use]
pub fn presence_auth(
    key: &str,
    secret: &str,
    socket_id: &str,
    channel: &str,
    channel_data: &str,
) -> String {
    format!(
        "{key}:{}",
        sign(secret, &format!("{socket_id}:{channel}:{channel_data}"))
    )
}

/// The `pusher:subscribe` frame for a private channel.
#[must_use]
pub fn subscribe_private(key: &str, secret: &str, socket_id: &str, channel: &str) -> String {
    json!({
        "event": "pusher:subscribe",
        "data": {"channel": channel, "auth": private_auth(key, secret, socket_id, channel)},
    })
    .to_string()
}

/// The `channel_data` of a presence member: a JSON *string*, signed as is.
#[must_use]
pub fn presence_channel_data(user_id: &str) -> String {
    let id = user_id
        .parse::<u64>()
        .map_or_else(|_| json!(user_id), |n| json!(n));
    json!({"user_id": user_id, "user_info": {"id": id, "name": format!("U{user_id}")}}).to_string()
}

/// The `pusher:subscribe` frame for a presence channel, as user `user_id`.
#[must_use]
pub fn subscribe_presence(
    key: &str,
    secret: &str,
    socket_id: &str,
    channel: &str,
    user_id: &str,
) -> String {
    let channel_data = presence_channel_data(user_id);
    let auth = presence_auth(key, secret, socket_id, channel, &channel_data);
    json!({
        "event": "pusher:subscribe",
        "data": {"channel": channel, "auth": auth, "channel_data": channel_data},
    })
    .to_string()
}

/// A client event on `channel`. The client sends `data` as an object; receivers get it back as
/// a JSON-encoded string.
#[must_use]
pub fn client_event(channel: &str, data: &Value) -> String {
    json!({"event": BENCH_EVENT, "channel": channel, "data": data}).to_string()
}

/// What a publisher stamps on each event, and what a subscriber reads back to compute latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Unique over the run (one counter shared by all publishers), so losses and duplicates
    /// can be counted per subscriber.
    pub seq: u64,
    /// Unix time in microseconds just before the publisher wrote the frame.
    pub sent_us: u64,
    /// Index of the `--url` the publisher is connected to: deliveries are split into same
    /// replica and cross replica, which is the path the fan-out backend adds.
    pub origin: usize,
}

impl Stamp {
    /// The event data: the stamp and `pad_bytes` of filler (to fill a stalled socket's
    /// buffers sooner).
    #[must_use]
    pub fn to_data(self, pad: &str) -> Value {
        let mut data = json!({"seq": self.seq, "sent_us": self.sent_us, "origin": self.origin});
        if !pad.is_empty()
            && let Some(map) = data.as_object_mut()
        {
            map.insert("pad".to_owned(), json!(pad));
        }
        data
    }

    fn from_data(data: &Value) -> Option<Self> {
        Some(Self {
            seq: data.get("seq")?.as_u64()?,
            sent_us: data.get("sent_us")?.as_u64()?,
            origin: usize::try_from(data.get("origin")?.as_u64()?).ok()?,
        })
    }
}

/// A frame from the server, classified by what the bench does with it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Established {
        socket_id: String,
        activity_timeout: Option<u64>,
    },
    /// The server's keep-alive: must be answered with [`PONG`].
    Ping,
    Pong,
    Error {
        code: Option<i64>,
        message: String,
    },
    SubscriptionSucceeded {
        channel: String,
        /// The decoded `data` (`{}` on private channels, the member list on presence ones).
        data: Value,
    },
    SubscriptionError {
        channel: String,
        data: Value,
    },
    MemberAdded {
        channel: String,
        user_id: String,
    },
    MemberRemoved {
        channel: String,
        user_id: String,
    },
    /// A `client-bench` event carrying a publisher's stamp.
    Bench(Stamp),
    /// Anything else (another event, a `client-bench` without a stamp).
    Other {
        event: String,
    },
}

/// Reads a text frame. `data` is a JSON-encoded string in every server frame of protocol 7, but
/// an object is accepted too, so a server that sends objects is reported by what it meant.
///
/// # Errors
/// When the frame is not JSON or has no `event`, or a known event lacks a required field.
pub fn parse(text: &str) -> Result<Incoming, ProtocolError> {
    if let Some(stamp) = bench_stamp(text).or_else(|| chat_stamp_fast(text)) {
        return Ok(Incoming::Bench(stamp));
    }
    let frame: Value = serde_json::from_str(text)?;
    let event = frame
        .get("event")
        .and_then(Value::as_str)
        .ok_or(ProtocolError::Missing("event"))?;
    let channel = || {
        frame
            .get("channel")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(ProtocolError::Missing("channel"))
    };
    let data = decode_data(frame.get("data"));
    Ok(match event {
        "pusher:connection_established" => Incoming::Established {
            socket_id: data
                .get("socket_id")
                .and_then(Value::as_str)
                .ok_or(ProtocolError::Missing("data.socket_id"))?
                .to_owned(),
            activity_timeout: data.get("activity_timeout").and_then(Value::as_u64),
        },
        "pusher:ping" => Incoming::Ping,
        "pusher:pong" => Incoming::Pong,
        "pusher:error" => Incoming::Error {
            code: data.get("code").and_then(Value::as_i64),
            message: data
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        },
        "pusher_internal:subscription_succeeded" => Incoming::SubscriptionSucceeded {
            channel: channel()?,
            data,
        },
        "pusher:subscription_error" => Incoming::SubscriptionError {
            channel: channel().unwrap_or_default(),
            data,
        },
        "pusher_internal:member_added" => Incoming::MemberAdded {
            channel: channel()?,
            user_id: user_id(&data)?,
        },
        "pusher_internal:member_removed" => Incoming::MemberRemoved {
            channel: channel()?,
            user_id: user_id(&data)?,
        },
        // Team chat's bench (`chat`): the body is `bench <seq> <sent_us>`.
        "MessageCreated" => chat_stamp(&data).map_or_else(
            || Incoming::Other {
                event: event.to_owned(),
            },
            Incoming::Bench,
        ),
        BENCH_EVENT => Stamp::from_data(&data).map_or_else(
            || Incoming::Other {
                event: event.to_owned(),
            },
            Incoming::Bench,
        ),
        other => Incoming::Other {
            event: other.to_owned(),
        },
    })
}

/// The stamp of a `MessageCreated` frame found by searching its text: a thousand subscribers
/// read every message on the cores the server runs on, and the message resource is a tree of
/// a dozen fields the bench does not need. The body sits in the frame's `data`, a JSON string,
/// so its quotes are escaped (`\"body\":\"bench 7 1700000000000000\"`).
fn chat_stamp_fast(text: &str) -> Option<Stamp> {
    const EVENT: &str = "\"event\":\"MessageCreated\"";
    const BODY: &str = "\\\"body\\\":\\\"bench ";
    if !text.contains(EVENT) {
        return None;
    }
    let start = text.find(BODY)? + BODY.len();
    let rest = text.get(start..)?;
    let end = rest.find('\\')?;
    let mut parts = rest.get(..end)?.split(' ');
    Some(Stamp {
        seq: parts.next()?.parse().ok()?,
        sent_us: parts.next()?.parse().ok()?,
        origin: 0,
    })
}

/// The stamp a `chat` poster writes in a message body (`bench <seq> <sent_us>`).
fn chat_stamp(data: &Value) -> Option<Stamp> {
    let body = data.get("message")?.get("body")?.as_str()?;
    let mut parts = body.strip_prefix("bench ")?.split(' ');
    Some(Stamp {
        seq: parts.next()?.parse().ok()?,
        sent_us: parts.next()?.parse().ok()?,
        origin: 0,
    })
}

/// The stamp of a `client-bench` event, read into typed fields: the client reads every
/// delivered frame on the cores the servers run on, so the common frame skips building a tree
/// of [`Value`]s. `None` for any other frame, which [`parse`] then reads in full.
fn bench_stamp(text: &str) -> Option<Stamp> {
    #[derive(serde::Deserialize)]
    struct Frame<'a> {
        #[serde(borrow)]
        event: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        data: std::borrow::Cow<'a, str>,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        seq: u64,
        sent_us: u64,
        origin: usize,
    }
    let frame: Frame<'_> = serde_json::from_str(text).ok()?;
    if frame.event != BENCH_EVENT {
        return None;
    }
    let data: Data = serde_json::from_str(&frame.data).ok()?;
    Some(Stamp {
        seq: data.seq,
        sent_us: data.sent_us,
        origin: data.origin,
    })
}

/// `data` as a value: a string holding JSON is decoded, anything else is kept as it came.
fn decode_data(data: Option<&Value>) -> Value {
    match data {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// A member's `user_id`: a string in the protocol, but a number is read as its decimal form.
fn user_id(data: &Value) -> Result<String, ProtocolError> {
    match data.get("user_id") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(ProtocolError::Missing("data.user_id")),
    }
}

/// The user ids in a presence `subscription_succeeded` (`{"presence":{"ids":[…],…}}`).
#[must_use]
pub fn presence_ids(data: &Value) -> Vec<String> {
    data.pointer("/presence/ids")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .map(|id| id.as_str().map_or_else(|| id.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_message_stamp_is_read_without_parsing_the_frame() {
        let data = serde_json::json!({"chat_id": "c", "message": {"id": 1, "body": "bench 7 1700000000000123", "html": "x"}});
        let frame = serde_json::json!({"event": "MessageCreated", "channel": "presence-chat.c", "data": data.to_string()}).to_string();
        assert_eq!(
            chat_stamp_fast(&frame),
            Some(Stamp {
                seq: 7,
                sent_us: 1_700_000_000_000_123,
                origin: 0
            })
        );
        assert_eq!(chat_stamp_fast(&frame.replace("bench 7", "hello")), None);
    }

    #[test]
    fn signature_matches_pushers_documented_example() {
        assert_eq!(
            sign("7ad3773142a6692b25b8", "1234.1234:private-foobar"),
            "58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"
        );
        assert_eq!(
            private_auth(
                "278d425bdf160c739803",
                "7ad3773142a6692b25b8",
                "1234.1234",
                "private-foobar"
            ),
            "278d425bdf160c739803:58df8b0c36d6982b82c3ecf6b4662e34fe8c25bba48f5369f135bf843651c3a4"
        );
    }

    #[test]
    fn presence_signature_covers_channel_data() {
        // The presence form of the same worked example (Pusher's credentials, socket 1234.1234);
        // the expected value was checked against Python's `hmac` module.
        let data = r#"{"user_id":10,"user_info":{"name":"Mr. Channels"}}"#;
        assert_eq!(
            presence_auth(
                "278d425bdf160c739803",
                "7ad3773142a6692b25b8",
                "1234.1234",
                "presence-foobar",
                data
            ),
            "278d425bdf160c739803:31935e7d86dba64c2a90aed31fdc61869f9b22ba9d8863bba239c03ca481bc80"
        );
    }

    #[test]
    fn subscribe_frames_carry_what_was_signed() {
        let frame: Value =
            serde_json::from_str(&subscribe_presence("k", "s", "1.2", "presence-x", "7")).unwrap();
        let channel_data = frame["data"]["channel_data"].as_str().unwrap();
        assert_eq!(
            channel_data,
            r#"{"user_id":"7","user_info":{"id":7,"name":"U7"}}"#
        );
        assert_eq!(
            frame["data"]["auth"],
            presence_auth("k", "s", "1.2", "presence-x", channel_data)
        );
        let frame: Value =
            serde_json::from_str(&subscribe_private("k", "s", "1.2", "private-bench")).unwrap();
        assert_eq!(
            frame,
            json!({"event": "pusher:subscribe", "data": {"channel": "private-bench",
                "auth": private_auth("k", "s", "1.2", "private-bench")}})
        );
    }

    #[test]
    fn parses_connection_established_with_string_data() {
        let frame = r#"{"event":"pusher:connection_established","data":"{\"socket_id\":\"123.456\",\"activity_timeout\":120}"}"#;
        assert_eq!(
            parse(frame).unwrap(),
            Incoming::Established {
                socket_id: "123.456".into(),
                activity_timeout: Some(120)
            }
        );
    }

    #[test]
    fn parses_control_and_subscription_frames() {
        assert_eq!(
            parse(r#"{"event":"pusher:ping","data":{}}"#).unwrap(),
            Incoming::Ping
        );
        assert_eq!(
            parse(r#"{"event":"pusher:pong","data":"{}"}"#).unwrap(),
            Incoming::Pong
        );
        assert_eq!(
            parse(r#"{"event":"pusher_internal:subscription_succeeded","channel":"private-bench","data":"{}"}"#).unwrap(),
            Incoming::SubscriptionSucceeded { channel: "private-bench".into(), data: json!({}) }
        );
        assert_eq!(
            parse(r#"{"event":"pusher:error","data":{"code":4301,"message":"too many"}}"#).unwrap(),
            Incoming::Error {
                code: Some(4301),
                message: "too many".into()
            }
        );
        assert_eq!(
            parse(r#"{"event":"pusher:error","data":"{\"code\":4009,\"message\":\"no\"}"}"#)
                .unwrap(),
            Incoming::Error {
                code: Some(4009),
                message: "no".into()
            }
        );
    }

    #[test]
    fn parses_presence_members() {
        let added = r#"{"event":"pusher_internal:member_added","channel":"presence-bench","data":"{\"user_id\":\"42\",\"user_info\":{\"id\":42}}"}"#;
        assert_eq!(
            parse(added).unwrap(),
            Incoming::MemberAdded {
                channel: "presence-bench".into(),
                user_id: "42".into()
            }
        );
        let removed = r#"{"event":"pusher_internal:member_removed","channel":"presence-bench","data":"{\"user_id\":42}"}"#;
        assert_eq!(
            parse(removed).unwrap(),
            Incoming::MemberRemoved {
                channel: "presence-bench".into(),
                user_id: "42".into()
            }
        );
        let ids = presence_ids(&json!({"presence": {"ids": ["1", 42], "hash": {}, "count": 2}}));
        assert_eq!(ids, vec!["1".to_owned(), "42".to_owned()]);
    }

    #[test]
    fn client_event_round_trips_through_the_servers_string_encoding() {
        let stamp = Stamp {
            seq: 9,
            sent_us: 1_700_000_000_000_000,
            origin: 1,
        };
        let sent: Value =
            serde_json::from_str(&client_event("private-bench", &stamp.to_data("xx"))).unwrap();
        assert_eq!(sent["data"]["pad"], "xx");
        // What the server relays: the same frame with `data` as a JSON string.
        let relayed = json!({
            "event": BENCH_EVENT,
            "channel": "private-bench",
            "data": sent["data"].to_string(),
        });
        assert_eq!(parse(&relayed.to_string()).unwrap(), Incoming::Bench(stamp));
        assert_eq!(
            parse(r#"{"event":"client-bench","channel":"c","data":"{}"}"#).unwrap(),
            Incoming::Other {
                event: BENCH_EVENT.into()
            }
        );
    }

    #[test]
    fn rejects_frames_without_an_event() {
        assert!(matches!(parse("nope"), Err(ProtocolError::Json(_))));
        assert!(matches!(
            parse(r#"{"data":{}}"#),
            Err(ProtocolError::Missing("event"))
        ));
        assert!(matches!(
            parse(r#"{"event":"pusher:connection_established","data":"{}"}"#),
            Err(ProtocolError::Missing("data.socket_id"))
        ));
    }
}
