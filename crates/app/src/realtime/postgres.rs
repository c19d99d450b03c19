//! Several replicas over PostgreSQL without Redis: envelopes stored and announced by id with
//! `NOTIFY` (`vellum_storage::realtime`), presence counted in tables under advisory locks.
//!
//! A listener that loses its connection reconnects and reads every event stored since the last
//! id it saw, so a short outage delays delivery instead of losing it (events are kept a minute).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use vellum_storage::Database;
use vellum_storage::realtime as stored;

use super::presence::{Member, PresenceChanges, PresenceStore};
use super::transport::{Envelope, Transport, backoff};
use super::{Hub, RealtimeError};

/// How long events stay readable for a listener catching up.
const KEEP_EVENTS: Duration = Duration::from_secs(60);
/// How many events one catch-up reads at most.
const CATCH_UP: u64 = 1_000;

#[derive(Debug)]
pub(crate) struct PostgresTransport {
    db: Database,
    up: AtomicBool,
}

impl PostgresTransport {
    pub(crate) fn new(db: Database) -> Self {
        Self {
            db,
            up: AtomicBool::new(false),
        }
    }

    async fn deliver(&self, hub: &Weak<Hub>, events: Vec<(i64, String)>, last: &mut i64) {
        for (id, body) in events {
            *last = (*last).max(id);
            let Some(hub) = hub.upgrade() else { return };
            match serde_json::from_str::<Envelope>(&body) {
                Ok(envelope) => hub.receive(envelope).await,
                Err(err) => tracing::warn!(%err, id, "realtime: unreadable stored event"),
            }
        }
    }

    async fn receive(self: Arc<Self>, hub: Weak<Hub>) {
        let mut attempt = 0u32;
        let mut last: Option<i64> = None;
        loop {
            if hub.strong_count() == 0 {
                return;
            }
            let mut listener = match stored::listen(&self.db).await {
                Ok(listener) => listener,
                Err(err) => {
                    self.up.store(false, Ordering::Release);
                    if attempt == 0 {
                        tracing::warn!(error = %crate::error_chain(&err), "realtime: cannot LISTEN; retrying");
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt = attempt.saturating_add(1);
                    continue;
                }
            };
            self.up.store(true, Ordering::Release);
            attempt = 0;
            // Catch up on what was stored while not listening (nothing on the first start).
            let mut seen = match last {
                Some(seen) => seen,
                None => stored::last_event_id(&self.db).await.unwrap_or(0),
            };
            if last.is_some()
                && let Ok(events) = stored::events_after(&self.db, seen, CATCH_UP).await
            {
                self.deliver(&hub, events, &mut seen).await;
            }
            last = Some(seen);
            loop {
                match listener.next().await {
                    Ok(Some(id)) => match stored::events(&self.db, &[id]).await {
                        Ok(events) => {
                            let mut seen = last.unwrap_or(0);
                            self.deliver(&hub, events, &mut seen).await;
                            last = Some(seen);
                        }
                        Err(err) => {
                            tracing::warn!(error = %crate::error_chain(&err), "realtime: cannot read notified events");
                        }
                    },
                    Ok(None) => {
                        tracing::warn!(
                            "realtime: LISTEN connection lost; catching up after reconnecting"
                        );
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(error = %crate::error_chain(&err), "realtime: LISTEN failed");
                        break;
                    }
                }
                if hub.strong_count() == 0 {
                    return;
                }
            }
            self.up.store(false, Ordering::Release);
            tokio::time::sleep(backoff(attempt)).await;
        }
    }
}

#[async_trait]
impl Transport for PostgresTransport {
    fn name(&self) -> &'static str {
        "postgres"
    }

    async fn publish(&self, envelope: &Envelope) -> Result<(), RealtimeError> {
        let body = serde_json::to_string(envelope).map_err(RealtimeError::Encode)?;
        stored::publish(&self.db, &body)
            .await
            .map_err(RealtimeError::Storage)
    }

    fn start(self: Arc<Self>, hub: Weak<Hub>) {
        tokio::spawn(self.receive(hub));
    }

    fn healthy(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

#[derive(Debug)]
pub(crate) struct PostgresPresence {
    db: Database,
    node: String,
    lease: Duration,
}

impl PostgresPresence {
    pub(crate) fn new(db: Database, node: &str, lease: Duration) -> Self {
        Self {
            db,
            node: node.to_owned(),
            lease,
        }
    }
}

fn member(user_id: String, info: &str) -> Member {
    Member {
        user_id,
        user_info: serde_json::from_str(info).unwrap_or_default(),
    }
}

#[async_trait]
impl PresenceStore for PostgresPresence {
    async fn join(&self, channel: &str, member: &Member) -> Result<bool, RealtimeError> {
        let info = member.user_info.to_string();
        stored::presence_join(&self.db, &self.node, channel, &member.user_id, &info, 1)
            .await
            .map_err(RealtimeError::Storage)
    }

    async fn leave(&self, channel: &str, user_id: &str) -> Result<bool, RealtimeError> {
        stored::presence_leave(&self.db, &self.node, channel, user_id)
            .await
            .map_err(RealtimeError::Storage)
    }

    async fn members(&self, channel: &str) -> Result<Vec<Member>, RealtimeError> {
        let rows = stored::presence_members(&self.db, channel)
            .await
            .map_err(RealtimeError::Storage)?;
        Ok(rows
            .into_iter()
            .map(|(user, info)| member(user, &info))
            .collect())
    }

    async fn heartbeat(
        &self,
        held: &[(String, Member, i32)],
    ) -> Result<PresenceChanges, RealtimeError> {
        let fresh = stored::renew_lease(&self.db, &self.node, self.lease)
            .await
            .map_err(RealtimeError::Storage)?;
        let mut changes = PresenceChanges::default();
        if fresh {
            // A first lease, or one reaped during an outage: this node's rows went with it.
            for (channel, member, sockets) in held {
                let info = member.user_info.to_string();
                let first = stored::presence_join(
                    &self.db,
                    &self.node,
                    channel,
                    &member.user_id,
                    &info,
                    *sockets,
                )
                .await
                .map_err(RealtimeError::Storage)?;
                if first {
                    changes.added.push((channel.clone(), member.clone()));
                }
            }
        }
        changes.removed = stored::reap_expired(&self.db)
            .await
            .map_err(RealtimeError::Storage)?;
        if let Err(err) = stored::prune_events(&self.db, KEEP_EVENTS).await {
            tracing::warn!(error = %crate::error_chain(&err), "realtime: cannot prune events");
        }
        Ok(changes)
    }

    async fn retire(&self) -> Result<PresenceChanges, RealtimeError> {
        Ok(PresenceChanges {
            added: Vec::new(),
            removed: stored::drop_node(&self.db, &self.node)
                .await
                .map_err(RealtimeError::Storage)?,
        })
    }
}
