//! Realtime channels (issue 20): the Pusher Channels protocol, version 7, served by
//! `vellum-server` so that unmodified `pusher-js` and `laravel-echo` clients work.
//!
//! The HTTP layer upgrades `GET /app/{key}` and pumps frames; everything the protocol decides is
//! here: a [`Connection`] per socket reads the client's frames and answers them, the [`Realtime`]
//! hub keeps this process's sockets ([`registry`]), counts presence members across replicas
//! ([`presence`]) and fans events out to the other replicas ([`transport`]: in-process alone,
//! Redis pub/sub, or PostgreSQL `NOTIFY`). Use cases publish with [`Realtime::broadcast`] and
//! authorize subscriptions with `crate::broadcasting::authorize`.
//!
//! Bounded by construction: sockets per process, subscriptions per socket, frames per socket
//! queue (a full queue closes the socket with 4200 instead of slowing anyone), inbound frame size,
//! client events per second.

mod connection;
mod outbox;
mod pacer;
mod postgres;
pub mod presence;
pub mod protocol;
mod quota;
mod redis;
mod registry;
pub mod signature;
mod transport;
pub mod wire;

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use serde::Serialize;
use vellum_storage::Database;

pub use crate::app_config::RealtimeConfig;
pub use connection::{CloseSignal, Connection};
pub use outbox::Outbox;
pub use presence::Member;
pub use signature::Credentials;
/// The wait before reconnect attempt `attempt` of a lost subscription (the job wake-ups use it too).
pub(crate) use transport::backoff as reconnect_backoff;

use crate::cache::RedisBackend;
use presence::{LocalPresence, PresenceChanges, PresenceStore};
use quota::Quota;
use registry::{Closer, Handle, LocalId, Registry};
use transport::{Envelope, LocalTransport, Message, Transport};

/// Where the other replicas are reached.
#[derive(Debug, Clone)]
pub enum Fanout {
    /// A single process.
    Local,
    /// Redis pub/sub (`VELLUM_REDIS_URL`).
    Redis(Arc<RedisBackend>),
    /// PostgreSQL `LISTEN/NOTIFY` (PostgreSQL without Redis).
    Postgres(Database),
}

/// Why the realtime machinery failed (logged; clients see protocol errors, not these).
#[derive(Debug, thiserror::Error)]
pub enum RealtimeError {
    #[error("realtime redis operation failed")]
    Redis(#[source] crate::cache::redis::RedisError),
    #[error("realtime database operation failed")]
    Storage(#[source] vellum_storage::StorageError),
    #[error("an envelope could not be encoded")]
    Encode(#[source] serde_json::Error),
    #[error("a presence lock was poisoned")]
    Poisoned,
}

/// Why a socket was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// As many sockets as allowed are open (4100).
    OverCapacity,
    /// As many sockets as one client address may hold are open from it (4100).
    AddressOverCapacity,
    /// The server is stopping (4200: reconnect elsewhere).
    Stopping,
}

/// The realtime hub of this process; cheap to clone.
#[derive(Debug, Clone)]
pub struct Realtime {
    hub: Arc<Hub>,
}

#[derive(Debug)]
pub(crate) struct Hub {
    /// This replica's id: the prefix of its socket ids.
    node: String,
    credentials: Credentials,
    config: RealtimeConfig,
    registry: Registry,
    quota: Arc<Quota>,
    presence: Arc<dyn PresenceStore>,
    transport: Arc<dyn Transport>,
    next_id: AtomicU64,
    /// Set by a graceful stop: no new sockets.
    stopping: AtomicBool,
    /// Cleared by [`Realtime::kill`] (tests: a replica that dies without cleaning up).
    alive: AtomicBool,
    /// Writes events to large channels a batch at a time ([`pacer`]).
    pacer: pacer::Pacer,
}

impl Realtime {
    /// Starts the hub: its receiving side and, with several replicas, its presence heartbeat.
    #[must_use]
    pub fn start(config: RealtimeConfig, credentials: Credentials, fanout: &Fanout) -> Self {
        let node = node_id();
        let (presence, transport): (Arc<dyn PresenceStore>, Arc<dyn Transport>) = match fanout {
            Fanout::Local => (Arc::new(LocalPresence::default()), Arc::new(LocalTransport)),
            Fanout::Redis(backend) => (
                Arc::new(redis::RedisPresence::new(
                    Arc::clone(backend),
                    &node,
                    config.lease,
                )),
                Arc::new(redis::RedisTransport::new(
                    Arc::clone(backend),
                    credentials.key(),
                )),
            ),
            Fanout::Postgres(db) => (
                Arc::new(postgres::PostgresPresence::new(
                    db.clone(),
                    &node,
                    config.lease,
                )),
                Arc::new(postgres::PostgresTransport::new(db.clone())),
            ),
        };
        let hub = Arc::new(Hub {
            node,
            credentials,
            config,
            registry: Registry::default(),
            quota: Arc::default(),
            presence,
            transport: Arc::clone(&transport),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            pacer: pacer::Pacer::start(),
        });
        transport.start(Arc::downgrade(&hub));
        if !matches!(fanout, Fanout::Local) {
            tokio::spawn(heartbeats(Arc::downgrade(&hub)));
        }
        Self { hub }
    }

    #[must_use]
    pub fn credentials(&self) -> &Credentials {
        &self.hub.credentials
    }

    #[must_use]
    pub fn config(&self) -> &RealtimeConfig {
        &self.hub.config
    }

    /// `local`, `redis` or `postgres`.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        self.hub.transport.name()
    }

    /// Whether events from other replicas are flowing.
    #[must_use]
    pub fn healthy(&self) -> bool {
        self.hub.transport.healthy()
    }

    /// Whether a graceful stop began (sockets are closing with 4200 on purpose).
    #[must_use]
    pub fn stopping(&self) -> bool {
        self.hub.stopping.load(Ordering::Acquire)
    }

    /// Sockets open on this process now.
    #[must_use]
    pub fn sockets(&self) -> usize {
        self.hub.registry.len()
    }

    /// Channels with a listener on this process now.
    #[must_use]
    pub fn channels(&self) -> usize {
        self.hub.registry.channels()
    }

    /// Accepts a new socket from client address `from` (`None`: a Unix socket): its
    /// connection, which reads the client's frames, and its outbox, the frames to write, the
    /// first being `pusher:connection_established`.
    ///
    /// # Errors
    /// [`Refusal`] when the process or the client's address holds as many sockets as allowed,
    /// or the server is stopping.
    pub fn connect(&self, from: Option<IpAddr>) -> Result<(Connection, Outbox), Refusal> {
        if self.hub.stopping.load(Ordering::Acquire) {
            return Err(Refusal::Stopping);
        }
        let slot = self
            .hub
            .quota
            .take(from, self.hub.config.max_connections_per_address)
            .ok_or(Refusal::AddressOverCapacity)?;
        let id = self.hub.next_id.fetch_add(1, Ordering::AcqRel);
        let (tx, rx) = tokio::sync::mpsc::channel(self.hub.config.queue.max(1));
        let closer = Arc::new(Closer::default());
        let handle = Handle {
            tx,
            closer: Arc::clone(&closer),
        };
        let established = protocol::connection_established(
            &self.hub.socket_id(id),
            self.hub.config.activity_timeout.as_secs(),
        );
        // First in the queue: no broadcast can reach a socket before it subscribes.
        handle.offer(wire::text(&established));
        if !self
            .hub
            .registry
            .add(id, handle.clone(), self.hub.config.max_connections)
        {
            return Err(Refusal::OverCapacity);
        }
        let outbox = Outbox::new(rx, Arc::clone(&closer));
        Ok((
            Connection::new(Arc::clone(&self.hub), id, handle, slot),
            outbox,
        ))
    }

    /// Sends `event` with `payload` (serialized once) to every socket subscribed to `channel`
    /// on every replica, except the socket `except_socket` (the sender's `X-Socket-ID`, so it
    /// does not receive its own change twice). Failures to reach other replicas are logged:
    /// their clients refetch after a gap.
    pub async fn broadcast(
        &self,
        channel: &str,
        event: &str,
        payload: &impl Serialize,
        except_socket: Option<&str>,
    ) {
        match serde_json::to_string(payload) {
            Ok(data) => {
                self.hub
                    .emit(channel, event, data, except_socket.map(str::to_owned))
                    .await;
            }
            Err(err) => tracing::warn!(%err, channel, event, "realtime: payload not serializable"),
        }
    }

    /// Ends `user_id`'s subscriptions on every replica (on `channel` only, when given): each gets
    /// `pusher:subscription_error` with status 403, and presence members leave.
    pub async fn revoke(&self, user_id: &str, channel: Option<&str>) {
        self.hub.revoke_local(user_id, channel).await;
        self.hub
            .publish(Message::Revoke {
                user: user_id.to_owned(),
                channel: channel.map(str::to_owned),
            })
            .await;
    }

    /// A graceful stop: refuses new sockets, closes every socket with 4200 (clients reconnect
    /// to another replica) and withdraws this replica's presence members.
    pub async fn shutdown(&self) {
        self.hub.stopping.store(true, Ordering::Release);
        self.hub.registry.close_all(protocol::close::RECONNECT);
        match self.hub.presence.retire().await {
            Ok(changes) => self.hub.announce(changes).await,
            Err(err) => {
                tracing::warn!(error = %crate::error_chain(&err), "realtime: could not withdraw presence");
            }
        }
    }

    /// Tests: this replica dies without a word (no presence leaves, no heartbeat); the others
    /// must notice through its lease.
    #[doc(hidden)]
    pub fn kill(&self) {
        self.hub.alive.store(false, Ordering::Release);
        self.hub.stopping.store(true, Ordering::Release);
        self.hub.registry.close_all(protocol::close::RECONNECT);
    }

    /// Tests: renews this replica's lease and reaps expired ones now.
    #[doc(hidden)]
    pub async fn heartbeat_now(&self) {
        self.hub.heartbeat().await;
    }
}

/// A random, non-zero id for this replica, as decimal digits (socket ids are `\d+\.\d+`).
fn node_id() -> String {
    let mut bytes = [0u8; 4];
    let random = getrandom::fill(&mut bytes).map(|()| u32::from_le_bytes(bytes));
    let id = random.unwrap_or_else(|_| std::process::id()).max(1);
    id.to_string()
}

async fn heartbeats(hub: std::sync::Weak<Hub>) {
    loop {
        let Some(strong) = hub.upgrade() else { return };
        if !strong.alive.load(Ordering::Acquire) {
            return;
        }
        let every = strong.config.heartbeat;
        strong.heartbeat().await;
        drop(strong);
        tokio::time::sleep(every).await;
    }
}

impl Hub {
    pub(crate) fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// A socket id of this replica back to its local id.
    fn local_id(&self, socket_id: &str) -> Option<LocalId> {
        let (node, id) = socket_id.split_once('.')?;
        (node == self.node).then(|| id.parse().ok()).flatten()
    }

    pub(crate) fn socket_id(&self, id: LocalId) -> String {
        format!("{}.{id}", self.node)
    }

    /// Delivers here, then sends to the other replicas.
    pub(crate) async fn emit(
        &self,
        channel: &str,
        event: &str,
        data: String,
        except: Option<String>,
    ) {
        self.emit_as(channel, event, data, except, None).await;
    }

    /// As [`Hub::emit`], for a presence member's client event (its frame names the sender).
    pub(crate) async fn emit_as(
        &self,
        channel: &str,
        event: &str,
        data: String,
        except: Option<String>,
        user_id: Option<String>,
    ) {
        self.deliver(channel, event, &data, except.as_deref(), user_id.as_deref());
        self.publish(Message::Event {
            channel: channel.to_owned(),
            event: event.to_owned(),
            data,
            except,
            user_id,
        })
        .await;
    }

    fn deliver(
        &self,
        channel: &str,
        event: &str,
        data: &str,
        except: Option<&str>,
        user_id: Option<&str>,
    ) -> usize {
        let frame: Bytes = wire::text(&protocol::event_frame(event, channel, data, user_id));
        let except = except.and_then(|socket| self.local_id(socket));
        self.pacer
            .deliver(channel, self.registry.listeners(channel), &frame, except)
    }

    async fn publish(&self, message: Message) {
        let envelope = Envelope {
            node: self.node.clone(),
            message,
        };
        if let Err(err) = self.transport.publish(&envelope).await {
            tracing::warn!(error = %crate::error_chain(&err), backend = self.transport.name(), "realtime: could not reach the other replicas");
        }
    }

    /// An envelope from another replica.
    pub(crate) async fn receive(&self, envelope: Envelope) {
        if envelope.node == self.node || !self.alive() {
            return;
        }
        match envelope.message {
            Message::Event {
                channel,
                event,
                data,
                except,
                user_id,
            } => {
                self.deliver(
                    &channel,
                    &event,
                    &data,
                    except.as_deref(),
                    user_id.as_deref(),
                );
            }
            Message::Revoke { user, channel } => {
                self.revoke_local(&user, channel.as_deref()).await;
            }
        }
    }

    async fn revoke_local(&self, user: &str, channel: Option<&str>) {
        for (id, name) in self.registry.held_by(user, channel) {
            let Some(subscription) = self.registry.unsubscribe(id, &name) else {
                continue;
            };
            self.registry.send_to(
                id,
                wire::text(&protocol::subscription_error(
                    &name,
                    403,
                    "Access to this channel was revoked.",
                )),
            );
            if let Some(member) = subscription.member {
                self.leave(&name, &member.user_id).await;
            }
        }
    }

    /// One socket of a presence member left `channel`: `member_removed` when it was the last.
    pub(crate) async fn leave(&self, channel: &str, user_id: &str) {
        match self.presence.leave(channel, user_id).await {
            Ok(true) => self.member_removed(channel, user_id).await,
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(error = %crate::error_chain(&err), "realtime: presence leave failed");
            }
        }
    }

    async fn member_removed(&self, channel: &str, user_id: &str) {
        let data = serde_json::json!({"user_id": user_id}).to_string();
        self.emit(channel, "pusher_internal:member_removed", data, None)
            .await;
    }

    pub(crate) async fn member_added(
        &self,
        channel: &str,
        member: &Member,
        except: Option<String>,
    ) {
        let data = serde_json::json!({"user_id": member.user_id, "user_info": member.user_info})
            .to_string();
        self.emit(channel, "pusher_internal:member_added", data, except)
            .await;
    }

    async fn announce(&self, changes: PresenceChanges) {
        for (channel, member) in changes.added {
            self.member_added(&channel, &member, None).await;
        }
        for (channel, user) in changes.removed {
            self.member_removed(&channel, &user).await;
        }
    }

    async fn heartbeat(&self) {
        let held = self.registry.presence_counts();
        match self.presence.heartbeat(&held).await {
            Ok(changes) => self.announce(changes).await,
            Err(err) => {
                tracing::warn!(error = %crate::error_chain(&err), "realtime: presence heartbeat failed");
            }
        }
    }
}
