//! How a broadcast reaches the other replicas: an [`Envelope`] per event or revocation, sent by
//! a [`Transport`]. The publishing replica delivers to its own sockets first and directly; every
//! other replica gets the envelope from the transport and delivers it to its own.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Hub, RealtimeError};

/// What travels between replicas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Envelope {
    /// The sending replica (the prefix of its socket ids), so it skips its own envelopes.
    pub(crate) node: String,
    #[serde(flatten)]
    pub(crate) message: Message,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Message {
    /// An event for a channel's sockets; `data` is the JSON text the frame carries.
    Event {
        channel: String,
        event: String,
        data: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        except: Option<String>,
        /// The sender of a presence channel's client event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user_id: Option<String>,
    },
    /// A user lost access: their subscriptions (on `channel` only, when given) end.
    Revoke {
        user: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        channel: Option<String>,
    },
}

/// Sends envelopes to the other replicas and hands theirs to the hub.
#[async_trait]
pub(crate) trait Transport: Send + Sync + std::fmt::Debug {
    /// `local`, `redis` or `postgres` (for `/health/ready` and the log).
    fn name(&self) -> &'static str;
    /// Sends `envelope` to the other replicas.
    async fn publish(&self, envelope: &Envelope) -> Result<(), RealtimeError>;
    /// Starts receiving, for as long as the hub lives.
    fn start(self: Arc<Self>, hub: Weak<Hub>);
    /// Whether envelopes are flowing (the subscription or listener is up).
    fn healthy(&self) -> bool;
}

/// One replica: nothing to send, nothing to receive.
#[derive(Debug, Default)]
pub(crate) struct LocalTransport;

#[async_trait]
impl Transport for LocalTransport {
    fn name(&self) -> &'static str {
        "local"
    }

    async fn publish(&self, _envelope: &Envelope) -> Result<(), RealtimeError> {
        Ok(())
    }

    fn start(self: Arc<Self>, _hub: Weak<Hub>) {}

    fn healthy(&self) -> bool {
        true
    }
}

/// The delay before reconnect attempt `n` (from 0): 250 ms doubling up to 5 s.
pub(crate) fn backoff(attempt: u32) -> std::time::Duration {
    let millis = 250u64.saturating_mul(1u64 << attempt.min(5));
    std::time::Duration::from_millis(millis.min(5_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_read_back_as_written() {
        let envelope = Envelope {
            node: "12".into(),
            message: Message::Event {
                channel: "presence-chat.1".into(),
                event: "MessageCreated".into(),
                data: r#"{"id":1}"#.into(),
                except: Some("12.3".into()),
                user_id: None,
            },
        };
        let text = serde_json::to_string(&envelope).unwrap();
        assert!(text.contains(r#""type":"event""#), "{text}");
        assert_eq!(serde_json::from_str::<Envelope>(&text).unwrap(), envelope);
        let revoke = r#"{"node":"1","type":"revoke","user":"7"}"#;
        assert_eq!(
            serde_json::from_str::<Envelope>(revoke).unwrap().message,
            Message::Revoke {
                user: "7".into(),
                channel: None
            }
        );
    }

    #[test]
    fn backs_off_up_to_five_seconds() {
        assert_eq!(backoff(0).as_millis(), 250);
        assert_eq!(backoff(2).as_millis(), 1_000);
        assert_eq!(backoff(40).as_millis(), 5_000);
    }
}
