//! Wake-ups of the job workers of every replica, over Redis pub/sub when `VELLUM_REDIS_URL` is
//! set. The queue's state stays in the database (a Redis flush or outage loses no job); Redis
//! only carries the news that a job was queued, so an idle worker on another replica claims it
//! at once instead of at its next poll (`VELLUM_JOB_POLL_MS`). That matters when the replicas
//! that take writes run no worker (`VELLUM_JOB_CONCURRENCY=0`) and others do.
//!
//! Bounded: announcements coalesce into at most one `PUBLISH` in flight (a [`Notify`] holds one
//! permit however many jobs are queued meanwhile), and each replica holds one subscription. When
//! Redis is down, polling still finds every job.

use std::sync::{Arc, Weak};
use std::time::Duration;

use deadpool_redis::redis;
use futures_util::StreamExt as _;
use tokio::sync::Notify;

use crate::cache::RedisBackend;
use crate::cache::redis::RedisError;

/// How often the background tasks check that their state still lives while nothing happens.
const LIVENESS: Duration = Duration::from_secs(5);

/// This replica's end of the shared wake-up channel.
#[derive(Debug)]
pub(crate) struct RedisWake {
    backend: Arc<RedisBackend>,
    channel: String,
    /// Set by [`RedisWake::announce`], taken by the announcer task.
    pending: Arc<Notify>,
}

impl RedisWake {
    /// The channel of `backend`'s namespace, and its announcer task (which ends with `self`).
    pub(crate) fn start(backend: Arc<RedisBackend>) -> Self {
        let wake = Self {
            channel: backend.key("jobs:wake"),
            backend,
            pending: Arc::new(Notify::new()),
        };
        let (backend, channel) = (Arc::clone(&wake.backend), wake.channel.clone());
        let pending = Arc::downgrade(&wake.pending);
        tokio::spawn(announce_loop(backend, channel, pending));
        wake
    }

    /// Tells the other replicas a job was queued (coalesced; never waits).
    pub(crate) fn announce(&self) {
        self.pending.notify_one();
    }

    /// Wakes `worker` whenever any replica announces a job, for as long as `worker` lives;
    /// reconnects with a back-off when the subscription is lost.
    pub(crate) fn listen(&self, worker: &Arc<Notify>) {
        let (backend, channel) = (Arc::clone(&self.backend), self.channel.clone());
        tokio::spawn(listen_loop(backend, channel, Arc::downgrade(worker)));
    }
}

async fn announce_loop(backend: Arc<RedisBackend>, channel: String, pending: Weak<Notify>) {
    loop {
        let Some(notify) = pending.upgrade() else {
            return;
        };
        let announced = tokio::time::timeout(LIVENESS, notify.notified()).await;
        drop(notify);
        if announced.is_err() {
            continue;
        }
        let channel = channel.clone();
        let published = backend
            .command(|mut conn| async move {
                redis::cmd("PUBLISH")
                    .arg(channel)
                    .arg("1")
                    .query_async::<i64>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await;
        if let Err(err) = published {
            // The other replicas find the job at their next poll.
            tracing::debug!(error = %crate::error_chain(&err), "jobs: could not announce a job over redis");
        }
    }
}

async fn listen_loop(backend: Arc<RedisBackend>, channel: String, worker: Weak<Notify>) {
    let mut attempt = 0_u32;
    while worker.strong_count() > 0 {
        match backend.subscribe(&channel).await {
            Ok(mut messages) => {
                attempt = 0;
                loop {
                    match tokio::time::timeout(LIVENESS, messages.next()).await {
                        Ok(Some(_)) => match worker.upgrade() {
                            Some(worker) => worker.notify_one(),
                            None => return,
                        },
                        Ok(None) => break,
                        Err(_) if worker.strong_count() == 0 => return,
                        Err(_) => {}
                    }
                }
                tracing::debug!("jobs: the redis wake-up subscription was lost; reconnecting");
            }
            Err(err) => {
                if attempt == 0 {
                    tracing::warn!(error = %crate::error_chain(&err), "jobs: cannot subscribe to redis wake-ups; polling until it returns");
                }
            }
        }
        tokio::time::sleep(crate::realtime::reconnect_backoff(attempt)).await;
        attempt = attempt.saturating_add(1);
    }
}
