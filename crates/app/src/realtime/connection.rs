//! One socket's side of the protocol: reads the client's frames and queues the answers. The
//! HTTP layer owns the WebSocket and the timers, and writes the socket's [`super::Outbox`]; this
//! decides what every frame means. Dropping a [`Connection`] removes the socket and its presence.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use serde_json::Value as Json;

use super::Hub;
use super::presence::{Member, roster};
use super::protocol::{self, ChannelKind, Incoming, close};
use super::quota::Slot;
use super::registry::{Closer, Handle, LocalId, SubscribeRefusal, Subscription};
use super::wire;

/// What to send after a client frame, in order (protocol frames, not yet framed for the wire).
#[derive(Debug, Default, PartialEq)]
struct Reply {
    frames: Vec<Bytes>,
}

impl Reply {
    fn send(frame: Bytes) -> Self {
        Self {
            frames: vec![frame],
        }
    }
}

/// Resolves with a close code once the server wants the socket closed.
#[derive(Debug, Clone)]
pub struct CloseSignal(Arc<Closer>);

impl CloseSignal {
    pub async fn requested(&self) -> u16 {
        self.0.requested().await
    }
}

/// One accepted socket.
#[derive(Debug)]
pub struct Connection {
    hub: Arc<Hub>,
    id: LocalId,
    socket_id: String,
    /// The socket's own queue and closer: answers go where broadcasts go, so they keep their
    /// order with them.
    handle: Handle,
    /// Client event tokens left, and when they were counted: a bucket refilled at
    /// `client_event_rate` per second holding two seconds' worth, so events a client sent at
    /// the allowed rate and that queued up behind a pause are not refused when read in a burst.
    tokens: (f64, Instant),
    /// The socket's place in its client address's quota, released with the connection.
    _slot: Slot,
}

impl Connection {
    pub(super) fn new(hub: Arc<Hub>, id: LocalId, handle: Handle, slot: Slot) -> Self {
        let socket_id = hub.socket_id(id);
        let burst = f64::from(hub_rate_burst(&hub));
        Self {
            hub,
            id,
            socket_id,
            handle,
            tokens: (burst, Instant::now()),
            _slot: slot,
        }
    }

    /// `\d+\.\d+`, unique across replicas.
    #[must_use]
    pub fn socket_id(&self) -> &str {
        &self.socket_id
    }

    /// What tells the socket's task that the server wants it closed (its queue filled, the
    /// server stops).
    #[must_use]
    pub fn close_signal(&self) -> CloseSignal {
        CloseSignal(Arc::clone(&self.handle.closer))
    }

    /// Closes the socket with `code`: its outbox writes what is queued (unless the queue
    /// overflowed) and the close frame, then ends. The first code asked for wins.
    pub fn close(&self, code: u16) {
        self.handle.closer.close(code);
    }

    /// Queues `pusher:ping` (the client fell silent).
    pub fn ping(&self) {
        self.handle.offer(wire::text(&protocol::ping()));
    }

    /// Queues the pong to a WebSocket ping.
    pub fn pong(&self, payload: &[u8]) {
        self.handle.offer(wire::pong(payload));
    }

    /// Reads one text frame from the client and queues the answers.
    pub async fn receive(&mut self, text: &str) {
        for frame in self.handle(text).await.frames {
            self.handle.offer(wire::text(&frame));
        }
    }

    /// Answers one text frame from the client.
    async fn handle(&mut self, text: &str) -> Reply {
        let incoming = match Incoming::parse(text) {
            Ok(incoming) => incoming,
            Err(err) => return Reply::send(protocol::error(None, &err.to_string())),
        };
        match incoming {
            Incoming::Ping => Reply::send(protocol::pong()),
            Incoming::Pong | Incoming::Other(_) => Reply::default(),
            Incoming::Subscribe {
                channel,
                auth,
                channel_data,
            } => {
                self.subscribe(&channel, auth.as_deref(), channel_data.as_deref())
                    .await
            }
            Incoming::Unsubscribe { channel } => {
                if let Some(subscription) = self.hub.registry.unsubscribe(self.id, &channel)
                    && let Some(member) = subscription.member
                {
                    self.hub.leave(&channel, &member.user_id).await;
                }
                Reply::default()
            }
            Incoming::ClientEvent {
                event,
                channel,
                data,
            } => self.client_event(&event, &channel, &data).await,
        }
    }

    async fn subscribe(
        &mut self,
        channel: &str,
        auth: Option<&str>,
        channel_data: Option<&str>,
    ) -> Reply {
        let refuse =
            |status, message| Reply::send(protocol::subscription_error(channel, status, message));
        let Some(kind) = protocol::channel_kind(channel) else {
            return refuse(
                403,
                "Only private- and presence- channels with valid names are served.",
            );
        };
        let channel_data = match kind {
            ChannelKind::Presence => match channel_data {
                Some(data) => Some(data),
                None => return refuse(401, "A presence channel needs channel_data."),
            },
            ChannelKind::Private => None,
        };
        let signed = auth.is_some_and(|auth| {
            self.hub
                .credentials
                .verify(auth, &self.socket_id, channel, channel_data)
        });
        if !signed {
            return refuse(401, "Invalid signature.");
        }
        let member = match channel_data.map(parse_member) {
            Some(Some(member)) => Some(member),
            Some(None) => return refuse(401, "channel_data must hold a user_id."),
            None => None,
        };
        let user = match &member {
            Some(member) => Some(member.user_id.clone()),
            None => channel
                .strip_prefix("private-App.Models.User.")
                .map(str::to_owned),
        };
        let subscription = Subscription {
            kind,
            user,
            member: member.clone(),
        };
        let added = match self.hub.registry.subscribe(
            self.id,
            channel,
            subscription,
            self.hub.config.max_subscriptions,
        ) {
            Ok(added) => added,
            Err(SubscribeRefusal::TooMany) => {
                return refuse(403, "This socket holds as many subscriptions as it may.");
            }
            Err(SubscribeRefusal::Gone) => return Reply::default(),
        };
        let Some(member) = member else {
            return Reply::send(protocol::subscription_succeeded(channel, "{}"));
        };
        let first = if added {
            match self.hub.presence.join(channel, &member).await {
                Ok(first) => first,
                Err(err) => {
                    tracing::warn!(error = %crate::error_chain(&err), "realtime: presence join failed");
                    false
                }
            }
        } else {
            false
        };
        let members = match self.hub.presence.members(channel).await {
            Ok(members) if members.iter().any(|m| m.user_id == member.user_id) => members,
            Ok(mut members) => {
                members.push(member.clone());
                members
            }
            Err(err) => {
                tracing::warn!(error = %crate::error_chain(&err), "realtime: presence members unavailable");
                vec![member.clone()]
            }
        };
        if first {
            self.hub
                .member_added(channel, &member, Some(self.socket_id.clone()))
                .await;
        }
        Reply::send(protocol::subscription_succeeded(channel, &roster(&members)))
    }

    async fn client_event(&mut self, event: &str, channel: &str, data: &Json) -> Reply {
        if !self.hub.config.client_events {
            return Reply::send(protocol::error(None, "Client events are not enabled."));
        }
        let Some(subscription) = self.hub.registry.subscription(self.id, channel) else {
            return Reply::send(protocol::error(
                None,
                "Client events need a subscription to their channel.",
            ));
        };
        if !self.take_token() {
            return Reply::send(protocol::error(
                Some(close::CLIENT_EVENT_RATE),
                "Too many client events per second.",
            ));
        }
        // Presence client events say who sent them, as Pusher's do.
        let user_id = subscription.member.map(|member| member.user_id);
        self.hub
            .emit_as(
                channel,
                event,
                data.to_string(),
                Some(self.socket_id.clone()),
                user_id,
            )
            .await;
        Reply::default()
    }
}

/// The client event bucket's size: two seconds at the configured rate.
fn hub_rate_burst(hub: &Hub) -> u32 {
    hub.config.client_event_rate.saturating_mul(2)
}

impl Connection {
    /// Takes one client event token, refilling the bucket for the time since the last.
    fn take_token(&mut self) -> bool {
        let now = Instant::now();
        let rate = f64::from(self.hub.config.client_event_rate);
        let elapsed = now.duration_since(self.tokens.1).as_secs_f64();
        let tokens = (self.tokens.0 + elapsed * rate).min(f64::from(hub_rate_burst(&self.hub)));
        let allowed = tokens >= 1.0;
        self.tokens = (if allowed { tokens - 1.0 } else { tokens }, now);
        allowed
    }
}

/// The member a presence subscription's `channel_data` names (`user_id` a string or number).
fn parse_member(data: &str) -> Option<Member> {
    let value: Json = serde_json::from_str(data).ok()?;
    let user_id = match value.get("user_id")? {
        Json::String(id) if !id.is_empty() => id.clone(),
        Json::Number(id) => id.to_string(),
        _ => return None,
    };
    Some(Member {
        user_id,
        user_info: value.get("user_info").cloned().unwrap_or(Json::Null),
    })
}

impl Drop for Connection {
    fn drop(&mut self) {
        let subscriptions = self.hub.registry.remove(self.id);
        if !self.hub.alive() {
            return;
        }
        let members: Vec<(String, String)> = subscriptions
            .into_iter()
            .filter_map(|(channel, s)| s.member.map(|m| (channel, m.user_id)))
            .collect();
        if members.is_empty() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let hub = Arc::clone(&self.hub);
            runtime.spawn(async move {
                for (channel, user) in members {
                    hub.leave(&channel, &user).await;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;
    use serde_json::json;

    use super::super::{Fanout, Outbox, Realtime, RealtimeConfig, Refusal};
    use super::*;
    use crate::realtime::signature::Credentials;

    fn hub(config: RealtimeConfig) -> Realtime {
        Realtime::start(config, Credentials::new("key", "secret"), &Fanout::Local)
    }

    /// The next frame the socket would write, as JSON (its WebSocket header stripped).
    async fn written(outbox: &mut Outbox) -> Json {
        let frame = outbox.next().await.expect("a frame").unwrap_or_default();
        // Text frames under 126 bytes have a 2-byte header; longer ones 4.
        let start = if frame[1] & 0x7F == 126 { 4 } else { 2 };
        serde_json::from_slice(&frame[start..]).expect("JSON")
    }

    #[tokio::test]
    async fn answers_and_broadcasts_leave_in_the_order_they_were_made() {
        let realtime = hub(RealtimeConfig::default());
        let (mut connection, mut outbox) = realtime.connect(None).unwrap();
        assert_eq!(
            written(&mut outbox).await["event"],
            "pusher:connection_established"
        );
        let channel = "private-App.Models.User.7";
        let auth = realtime
            .credentials()
            .sign(connection.socket_id(), channel, None);
        let subscribe =
            json!({"event": "pusher:subscribe", "data": {"channel": channel, "auth": auth}});
        connection.receive(&subscribe.to_string()).await;
        // Broadcast before the answer is written: the answer still comes first.
        realtime
            .broadcast(channel, "Hello", &json!({"n": 1}), None)
            .await;
        connection
            .receive(r#"{"event":"pusher:ping","data":{}}"#)
            .await;
        assert_eq!(
            written(&mut outbox).await["event"],
            "pusher_internal:subscription_succeeded"
        );
        assert_eq!(written(&mut outbox).await["event"], "Hello");
        assert_eq!(written(&mut outbox).await["event"], "pusher:pong");
    }

    #[tokio::test]
    async fn a_refused_socket_gives_its_address_slot_back() {
        let realtime = hub(RealtimeConfig {
            max_connections: 1,
            max_connections_per_address: 1,
            ..RealtimeConfig::default()
        });
        let ip = Some("198.51.100.4".parse().unwrap());
        let held = realtime
            .connect(Some("198.51.100.5".parse().unwrap()))
            .unwrap();
        // The process is full: refused, and the address's slot is not kept.
        assert_eq!(realtime.connect(ip).err(), Some(Refusal::OverCapacity));
        drop(held);
        let again = realtime.connect(ip).expect("the address was not charged");
        assert_eq!(
            realtime.connect(ip).err(),
            Some(Refusal::AddressOverCapacity)
        );
        drop(again);
        assert!(realtime.connect(ip).is_ok(), "released with its connection");
    }
}
