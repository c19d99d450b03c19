//! Failure counters for sign-in: per account and per client IP, in fixed windows. An attempt is
//! counted before its password is checked, so a burst of parallel guesses cannot slip past the
//! limit, and one that succeeds is taken back ([`Throttle::succeeded`]). A refused attempt costs
//! one counter increment and no hashing, so credential stuffing is turned away cheaply and does
//! not slow other users' sign-ins.
//!
//! Counters live in Redis when it is configured (every replica sees the same count) and
//! otherwise in a bounded in-process cache; when Redis fails, the local counters take over
//! rather than letting every attempt through.
//!
//! A fixed-window counter rather than `governor`'s GCRA: the rule is "the 6th failure in a row
//! is refused", which is a count of failures (successes do not consume it), and `governor`'s
//! keyed state has no entry bound and no shared backend; moka (already the response cache) gives
//! the bound and expiry, and Redis `INCR`/`EXPIRE` the sharing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_redis::redis;
use moka::sync::Cache;
use sha2::{Digest, Sha256};

use crate::cache::RedisBackend;
use crate::cache::redis::RedisError;
use crate::telemetry::error_chain;

/// How many counters the in-process store keeps at most; past it the least recently used go.
const MAX_LOCAL_COUNTERS: u64 = 100_000;

/// A limit: at most `max` counted attempts per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub max: u32,
    pub window: Duration,
}

/// Five failures in a row per account, then 429 until the window ends.
pub const ACCOUNT_LIMIT: Limit = Limit {
    max: crate::app_config::DEFAULT_SIGNIN_ACCOUNT_ATTEMPTS,
    window: Duration::from_secs(15 * 60),
};
/// Failures per client address (one IP trying many accounts).
pub const IP_LIMIT: Limit = Limit {
    max: crate::app_config::DEFAULT_SIGNIN_ADDRESS_ATTEMPTS,
    window: Duration::from_secs(15 * 60),
};
/// Code mails asked per account.
pub const CODE_MAIL_LIMIT: Limit = Limit {
    max: 5,
    window: Duration::from_secs(15 * 60),
};

/// One counter: a kind and an identity, hashed so emails never appear in Redis keys and keys
/// have a fixed length whatever the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    key: String,
    limit: Limit,
}

impl Counter {
    #[must_use]
    pub fn new(kind: &str, identity: &str, limit: Limit) -> Self {
        let digest = Sha256::digest(format!("{kind}\u{0}{identity}").as_bytes());
        let hex = hex::encode(digest);
        Self {
            key: format!("{kind}:{}", hex.get(..32).unwrap_or(&hex)),
            limit,
        }
    }
}

#[derive(Debug)]
struct Window {
    count: u32,
    started: Instant,
}

/// Where the counters live.
#[derive(Debug, Clone)]
pub struct Throttle {
    local: Cache<String, Arc<Mutex<Window>>>,
    redis: Option<Arc<RedisBackend>>,
}

impl Throttle {
    #[must_use]
    pub fn new(redis: Option<Arc<RedisBackend>>) -> Self {
        Self {
            local: Cache::builder()
                .max_capacity(MAX_LOCAL_COUNTERS)
                .time_to_idle(ACCOUNT_LIMIT.window.max(IP_LIMIT.window))
                .build(),
            redis,
        }
    }

    /// Counts one attempt under every counter. `Err(retry_after)` (seconds) when any counter is
    /// past its limit: the attempt must be refused without further work.
    ///
    /// # Errors
    /// The seconds until the fullest counter's window ends.
    pub async fn attempt(&self, counters: &[Counter]) -> Result<(), u64> {
        let mut retry_after = 0_u64;
        for counter in counters {
            let (count, remaining) = self.increment(counter).await;
            if count > counter.limit.max {
                retry_after = retry_after.max(remaining.as_secs().max(1));
            }
        }
        if retry_after > 0 {
            Err(retry_after)
        } else {
            Ok(())
        }
    }

    /// Takes back an attempt that succeeded: the account's counter starts over, the address's
    /// loses one (so an office behind one address is not throttled by its own sign-ins).
    pub async fn succeeded(&self, account: &Counter, address: &Counter) {
        self.reset(account).await;
        self.decrement(address).await;
    }

    async fn increment(&self, counter: &Counter) -> (u32, Duration) {
        if let Some(redis) = &self.redis {
            match redis_increment(redis, counter).await {
                Ok(found) => return found,
                Err(err) => {
                    tracing::warn!(error = %error_chain(&err), "throttle: redis failed; counting locally");
                }
            }
        }
        let window = self.local.get_with(counter.key.clone(), || {
            Arc::new(Mutex::new(Window {
                count: 0,
                started: Instant::now(),
            }))
        });
        let mut window = window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if window.started.elapsed() >= counter.limit.window {
            window.count = 0;
            window.started = Instant::now();
        }
        window.count = window.count.saturating_add(1);
        let remaining = counter
            .limit
            .window
            .saturating_sub(window.started.elapsed());
        (window.count, remaining)
    }

    async fn reset(&self, counter: &Counter) {
        self.local.invalidate(&counter.key);
        if let Some(redis) = &self.redis {
            let key = redis.key(&format!("throttle:{}", counter.key));
            let result = redis
                .command(|mut conn| async move {
                    redis::cmd("DEL")
                        .arg(&key)
                        .query_async::<i64>(&mut conn)
                        .await
                        .map_err(RedisError::Command)
                })
                .await;
            if let Err(err) = result {
                tracing::warn!(error = %error_chain(&err), "throttle: could not reset a counter");
            }
        }
    }

    async fn decrement(&self, counter: &Counter) {
        if let Some(window) = self.local.get(&counter.key) {
            let mut window = window
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            window.count = window.count.saturating_sub(1);
        }
        if let Some(redis) = &self.redis {
            let key = redis.key(&format!("throttle:{}", counter.key));
            let result = redis
                .command(|mut conn| async move {
                    // Only while the counter exists and is positive: never create a key without
                    // an expiry, never go below zero.
                    redis::cmd("EVAL")
                        .arg(
                            "local n = tonumber(redis.call('GET', KEYS[1]) or '0') \
                             if n > 0 then return redis.call('DECR', KEYS[1]) end return 0",
                        )
                        .arg(1)
                        .arg(&key)
                        .query_async::<i64>(&mut conn)
                        .await
                        .map_err(RedisError::Command)
                })
                .await;
            if let Err(err) = result {
                tracing::warn!(error = %error_chain(&err), "throttle: could not take back an attempt");
            }
        }
    }
}

/// `INCR` and, for a new counter, `EXPIRE`, atomically; answers the count and the time left.
async fn redis_increment(
    redis: &RedisBackend,
    counter: &Counter,
) -> Result<(u32, Duration), RedisError> {
    let key = redis.key(&format!("throttle:{}", counter.key));
    let window = i64::try_from(counter.limit.window.as_secs()).unwrap_or(i64::MAX);
    let (count, ttl): (i64, i64) = redis
        .command(|mut conn| async move {
            redis::cmd("EVAL")
                .arg(
                    "local n = redis.call('INCR', KEYS[1]) \
                     if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end \
                     return {n, redis.call('TTL', KEYS[1])}",
                )
                .arg(1)
                .arg(&key)
                .arg(window)
                .query_async(&mut conn)
            .await
            .map_err(RedisError::Command)
        })
        .await?;
    Ok((
        u32::try_from(count).unwrap_or(u32::MAX),
        Duration::from_secs(u64::try_from(ttl).unwrap_or(0)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_sixth_attempt_is_refused_and_success_starts_over() {
        let throttle = Throttle::new(None);
        let account = Counter::new("signin-account", "ada@example.com", ACCOUNT_LIMIT);
        let address = Counter::new("signin-ip", "10.0.0.1", IP_LIMIT);
        let both = [account.clone(), address.clone()];
        for _ in 0..5 {
            assert!(throttle.attempt(&both).await.is_ok());
        }
        let retry = throttle.attempt(&both).await.unwrap_err();
        assert!((1..=900).contains(&retry), "{retry}");
        // Another account from elsewhere is not affected.
        let other = [
            Counter::new("signin-account", "bob@example.com", ACCOUNT_LIMIT),
            Counter::new("signin-ip", "10.0.0.2", IP_LIMIT),
        ];
        assert!(throttle.attempt(&other).await.is_ok());
        throttle.succeeded(&account, &address).await;
        assert!(throttle.attempt(&both).await.is_ok());
        assert!(!account.key.contains("ada"), "identities are hashed");
    }
}
