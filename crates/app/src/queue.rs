//! This process's side of the job queue: the wake-up call of its worker, the outbound client
//! deliveries go through, and the retry schedule. Plain parts the state holds and `jobs` and
//! `webhooks` use; the queue itself is [`vellum_storage::jobs`].
//!
//! Retries back off exponentially with jitter: attempt `n + 1` waits between half and all of
//! `base · 2^(n-1)`, capped at `max`, so receivers that failed together do not get their retries
//! all at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::app_config::JobsConfig;
use crate::cache::RedisBackend;
use crate::job_wake::RedisWake;
use crate::outbound::{AddressGuard, Outbound};

/// This process's side of the queue: the worker's wake-up call and its outbound client.
#[derive(Debug)]
pub struct Jobs {
    wake: Arc<Notify>,
    outbound: Option<Outbound>,
    /// The other replicas' workers, when Redis is configured.
    redis: Option<RedisWake>,
}

impl Jobs {
    pub(crate) fn new(config: &JobsConfig, redis: Option<&Arc<RedisBackend>>) -> Self {
        let guard = AddressGuard::new(config.allowed_networks.clone());
        let outbound = match Outbound::new(guard, config.request_timeout) {
            Ok(client) => Some(client),
            Err(err) => {
                tracing::error!(error = %err, "jobs: the webhook client could not start; deliveries will fail");
                None
            }
        };
        Self {
            wake: Arc::new(Notify::new()),
            outbound,
            redis: redis.map(|r| RedisWake::start(Arc::clone(r))),
        }
    }

    /// Tells this process's worker a job was queued, and with Redis every replica's (they also
    /// poll, for jobs whose news was lost and leases that ran out).
    pub fn wake(&self) {
        self.wake.notify_one();
        if let Some(redis) = &self.redis {
            redis.announce();
        }
    }

    /// This process's worker's wake-up call; with Redis, other replicas' announcements ring it
    /// too (from the first call on).
    pub(crate) fn listen_for_jobs(&self) -> Arc<Notify> {
        if let Some(redis) = &self.redis {
            redis.listen(&self.wake);
        }
        Arc::clone(&self.wake)
    }

    pub(crate) fn outbound(&self) -> Option<&Outbound> {
        self.outbound.as_ref()
    }
}

/// How long to wait before attempt `attempts + 1`, after `attempts` failed ones.
#[must_use]
pub fn backoff(config: &JobsConfig, attempts: u32, jitter: f64) -> Duration {
    let exponent = attempts.saturating_sub(1).min(30);
    let full = config
        .backoff_base
        .saturating_mul(1_u32 << exponent)
        .min(config.backoff_max);
    full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// A random number in [0, 1) for the jitter (0.5 when the OS has no random source).
#[must_use]
pub fn jitter() -> f64 {
    let mut bytes = [0_u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.5;
    }
    f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_the_cap() {
        let config = JobsConfig {
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(3600),
            ..JobsConfig::default()
        };
        assert_eq!(backoff(&config, 1, 1.0), Duration::from_secs(10));
        assert_eq!(backoff(&config, 1, 0.0), Duration::from_secs(5));
        assert_eq!(backoff(&config, 3, 1.0), Duration::from_secs(40));
        assert_eq!(backoff(&config, 40, 1.0), Duration::from_secs(3600));
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
    }
}
