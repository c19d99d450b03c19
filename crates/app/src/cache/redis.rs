//! The response cache and epoch in Redis (`VELLUM_REDIS_URL`), shared by every replica: a write
//! through one replica bumps the shared epoch, so the next read through any other is a miss.
//!
//! Redis is an accelerator, never a requirement for serving: when it fails, reads go uncached and
//! the server keeps answering. The first failure is logged once; further attempts wait
//! [`RETRY_AFTER`] (so a hanging Redis costs one timeout per second, not one per request), and
//! the first success after an outage is logged once too.
//!
//! Writes made while Redis is down cannot bump the shared epoch. They are remembered and the
//! epoch is bumped as soon as Redis answers again, so no replica replays a response cached before
//! the outage. While down, [`Epoch::current`] returns a local value that moves with each local
//! write, so this replica's own project snapshot still follows its own schema changes at once.
//!
//! Cached entries are keyed by the epoch (`vellum:cache:<epoch>:<key>`, under a configurable namespace), so a bump makes every
//! earlier entry unreachable in one step and Redis expires them after [`CACHE_TTL`]. A missing
//! epoch key (a Redis restart or an eviction) is recreated from the clock in microseconds, so the
//! counter never falls back onto values whose entries might still exist.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use deadpool_redis::redis::{self, AsyncConnectionConfig};
use deadpool_redis::{Manager, Pool, Runtime, Timeouts};

use super::{CACHE_TTL, CachedResponse, Epoch, ResponseCache, Scope, scope};

/// How long a Redis operation may take before it counts as a failure. Redis answers in well under
/// a millisecond when healthy; anything near this means it is gone or overloaded.
const OP_TIMEOUT: Duration = Duration::from_millis(500);

/// After a failure, how long requests skip Redis before one tries it again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The default prefix of every key, so Vellum can share a Redis database with other programs.
pub const DEFAULT_NAMESPACE: &str = "vellum:";

/// Added to the last known epoch while Redis is down, so local values never equal shared ones.
const OFFLINE_OFFSET: u64 = 1 << 62;

/// An invalid `VELLUM_REDIS_URL` (it is never echoed: it may hold a password).
#[derive(Debug, thiserror::Error)]
#[error("invalid Redis URL: {0}")]
pub struct RedisConfigError(String);

/// Why a Redis operation failed (for the log; a client never sees it).
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// No pooled connection could be had (Redis unreachable, the pool exhausted).
    #[error("no redis connection")]
    Pool(#[source] deadpool_redis::PoolError),
    /// Redis refused or failed the command.
    #[error("redis command failed")]
    Command(#[source] redis::RedisError),
    /// The operation took longer than its timeout.
    #[error("redis timed out")]
    TimedOut,
    /// Skipped: a recent failure's back-off has not passed.
    #[error("redis is unavailable (backing off)")]
    BackingOff,
}

/// Cache, epoch and readiness check over one connection pool.
pub struct RedisBackend {
    pool: Pool,
    /// `<namespace>epoch`: the shared counter.
    epoch_key: String,
    /// `<namespace>cache:`: the prefix of cached responses.
    cache_prefix: String,
    /// The prefix of every key, for the other users of this pool (sessions, throttles).
    namespace: String,
    started: Instant,
    /// Whether the last operation succeeded.
    up: AtomicBool,
    /// Milliseconds after `started` of the last failure.
    failed_at: AtomicU64,
    /// The last epoch read from Redis.
    last_epoch: AtomicU64,
    /// Local writes while Redis was down: their bump is still owed to the shared epoch.
    owed_bumps: AtomicU64,
    /// For the realtime fan-out's pub/sub connection, which cannot come from the pool. May
    /// hold a password: never logged.
    url: String,
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("up", &self.up.load(Ordering::Relaxed))
            .field("last_epoch", &self.last_epoch.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// A backend for `url` (`redis://[:password@]host[:port][/db]`). Nothing is connected yet:
    /// the server starts even while Redis is down, and connects on first use.
    ///
    /// # Errors
    /// When the URL cannot be parsed.
    pub fn new(url: &str, max_connections: usize) -> Result<Self, RedisConfigError> {
        let connection = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT));
        let manager = Manager::new_with_config(url, connection)
            .map_err(|e| RedisConfigError(format!("{:?}", e.kind())))?;
        let timeouts = Timeouts {
            wait: Some(OP_TIMEOUT),
            create: Some(OP_TIMEOUT),
            recycle: Some(OP_TIMEOUT),
        };
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .timeouts(timeouts)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| RedisConfigError(e.to_string()))?;
        Ok(Self {
            pool,
            epoch_key: format!("{DEFAULT_NAMESPACE}epoch"),
            cache_prefix: format!("{DEFAULT_NAMESPACE}cache:"),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            started: Instant::now(),
            up: AtomicBool::new(true),
            failed_at: AtomicU64::new(0),
            last_epoch: AtomicU64::new(0),
            owed_bumps: AtomicU64::new(0),
            url: url.to_owned(),
        })
    }

    /// A client for a dedicated connection (pub/sub), configured as the pool's.
    pub(crate) fn client(&self) -> Result<redis::Client, RedisError> {
        redis::Client::open(self.url.as_str()).map_err(RedisError::Command)
    }

    /// The messages of pub/sub `channel`, on a dedicated connection (opened within 2 s).
    pub(crate) async fn subscribe(
        &self,
        channel: &str,
    ) -> Result<redis::aio::PubSubStream, RedisError> {
        let client = self.client()?;
        let mut pubsub = tokio::time::timeout(Duration::from_secs(2), client.get_async_pubsub())
            .await
            .map_err(|_| RedisError::TimedOut)?
            .map_err(RedisError::Command)?;
        pubsub
            .subscribe(channel)
            .await
            .map_err(RedisError::Command)?;
        Ok(pubsub.into_on_message())
    }

    /// This backend's key prefix (another replica's backend joins it with
    /// [`RedisBackend::with_namespace`]).
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Puts every key under `namespace` instead of [`DEFAULT_NAMESPACE`]: projects (or tests)
    /// sharing one Redis database must not share epochs or cached responses.
    #[must_use]
    pub fn with_namespace(mut self, namespace: &str) -> Self {
        self.epoch_key = format!("{namespace}epoch");
        self.cache_prefix = format!("{namespace}cache:");
        self.namespace = namespace.to_owned();
        self
    }

    /// `suffix` under this backend's namespace.
    pub(crate) fn key(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.namespace)
    }

    /// Runs `op` on a pooled connection within the operation timeout, ignoring the cache's
    /// back-off (sessions and throttles must not silently skip Redis), and notes the outcome.
    pub(crate) async fn command<T, F, Fut>(&self, op: F) -> Result<T, RedisError>
    where
        F: FnOnce(deadpool_redis::Connection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let result = self.run(op).await;
        self.record(&result);
        result
    }

    /// Pings Redis, ignoring the back-off: the readiness probe's check.
    ///
    /// # Errors
    /// The failure, for the log (never for the client).
    pub async fn ping(&self) -> Result<(), RedisError> {
        let result = self
            .run(|mut conn| async move {
                redis::cmd("PING")
                    .query_async::<String>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await;
        self.record(&result);
        result.map(|_| ())
    }

    /// Increments the shared epoch, ignoring the back-off (`vellum-admin` after a change).
    ///
    /// # Errors
    /// The failure, for the log.
    pub async fn try_bump(&self) -> Result<u64, RedisError> {
        let epoch_key = self.epoch_key.as_str();
        let result = self
            .run(|mut conn| async move { incr(&mut conn, epoch_key).await })
            .await;
        self.record(&result);
        result
    }

    /// `<namespace>epoch:<scope>`: a scope's counter.
    fn scope_key(&self, scope: Scope) -> String {
        format!("{}:{}", self.epoch_key, scope.name())
    }

    /// Reads `scopes`' counters in one round trip, creating a missing one from the clock as
    /// [`incr`] does, so a counter evicted by Redis never falls back onto an earlier value.
    async fn read_counters(&self, scopes: &[Scope]) -> Result<Vec<(Scope, u64)>, RedisError> {
        let keys: Vec<String> = scopes.iter().map(|s| self.scope_key(*s)).collect();
        let values = self
            .run(|mut conn| async move {
                let values: Vec<Option<u64>> = redis::cmd("MGET")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(RedisError::Command)?;
                if values.iter().all(Option::is_some) {
                    return Ok(values);
                }
                let mut pipe = redis::pipe();
                let now = clock_micros();
                for (key, value) in keys.iter().zip(&values) {
                    if value.is_none() {
                        pipe.cmd("SET").arg(key).arg(now).arg("NX").ignore();
                    }
                }
                pipe.cmd("MGET").arg(&keys);
                let (values,): (Vec<Option<u64>>,) = pipe
                    .query_async(&mut conn)
                    .await
                    .map_err(RedisError::Command)?;
                Ok(values)
            })
            .await?;
        Ok(scopes
            .iter()
            .zip(values)
            .map(|(s, v)| (*s, v.unwrap_or(0)))
            .collect())
    }

    /// Runs `op` on a pooled connection within [`OP_TIMEOUT`].
    async fn run<T, F, Fut>(&self, op: F) -> Result<T, RedisError>
    where
        F: FnOnce(deadpool_redis::Connection) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let attempt = async {
            let conn = self.pool.get().await.map_err(RedisError::Pool)?;
            op(conn).await
        };
        match tokio::time::timeout(OP_TIMEOUT, attempt).await {
            Ok(result) => result,
            Err(_) => Err(RedisError::TimedOut),
        }
    }

    /// Whether to try Redis now: it is up, or the back-off since the last failure has passed.
    fn available(&self) -> bool {
        self.up.load(Ordering::Acquire)
            || self
                .elapsed_ms()
                .saturating_sub(self.failed_at.load(Ordering::Acquire))
                >= u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX)
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Notes the outcome of an operation, logging state changes only.
    fn record<T>(&self, result: &Result<T, RedisError>) {
        match result {
            Ok(_) => {
                if !self.up.swap(true, Ordering::AcqRel) {
                    tracing::info!("redis is reachable again: the shared response cache is back");
                }
            }
            Err(error) => {
                self.failed_at.store(self.elapsed_ms(), Ordering::Release);
                if self.up.swap(false, Ordering::AcqRel) {
                    let error = crate::telemetry::error_chain(error);
                    tracing::warn!(%error, "redis is unavailable: serving uncached until it returns");
                }
            }
        }
    }

    fn offline_epoch(&self) -> u64 {
        self.last_epoch
            .load(Ordering::Acquire)
            .wrapping_add(OFFLINE_OFFSET)
            .wrapping_add(self.owed_bumps.load(Ordering::Acquire))
    }

    /// Reads the shared epoch, first paying any bump owed from an outage, and creating the
    /// counter from the clock when it is missing.
    async fn read_epoch(&self) -> Result<u64, RedisError> {
        let owed = self.owed_bumps.load(Ordering::Acquire);
        let epoch_key = self.epoch_key.as_str();
        self.run(|mut conn| async move {
            if owed > 0 {
                return incr(&mut conn, epoch_key).await;
            }
            let value: Option<u64> = redis::cmd("GET")
                .arg(epoch_key)
                .query_async(&mut conn)
                .await
                .map_err(RedisError::Command)?;
            if let Some(value) = value {
                return Ok(value);
            }
            let (value,): (u64,) = redis::pipe()
                .cmd("SET")
                .arg(epoch_key)
                .arg(clock_micros())
                .arg("NX")
                .ignore()
                .cmd("GET")
                .arg(epoch_key)
                .query_async(&mut conn)
                .await
                .map_err(RedisError::Command)?;
            Ok(value)
        })
        .await
        .inspect(|_| {
            // One INCR pays for every write seen so far; a write counted meanwhile stays owed.
            self.owed_bumps.fetch_sub(owed, Ordering::AcqRel);
        })
    }
}

/// Increments the epoch, first creating it from the clock when it is missing (an `INCR` on a
/// missing key would restart at 1, where entries of an earlier counter might still exist).
async fn incr(conn: &mut deadpool_redis::Connection, epoch_key: &str) -> Result<u64, RedisError> {
    let (value,): (u64,) = redis::pipe()
        .cmd("SET")
        .arg(epoch_key)
        .arg(clock_micros())
        .arg("NX")
        .ignore()
        .cmd("INCR")
        .arg(epoch_key)
        .query_async(conn)
        .await
        .map_err(RedisError::Command)?;
    Ok(value)
}

fn clock_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[async_trait]
impl Epoch for RedisBackend {
    async fn current(&self) -> u64 {
        if !self.available() {
            return self.offline_epoch();
        }
        let result = self.read_epoch().await;
        self.record(&result);
        match result {
            Ok(value) => {
                self.last_epoch.store(value, Ordering::Release);
                value
            }
            Err(_) => self.offline_epoch(),
        }
    }

    async fn bump(&self) -> u64 {
        let result = if self.available() {
            self.try_bump().await
        } else {
            Err(RedisError::BackingOff)
        };
        match result {
            Ok(value) => {
                self.last_epoch.store(value, Ordering::Release);
                value
            }
            Err(_) => {
                self.owed_bumps.fetch_add(1, Ordering::AcqRel);
                self.offline_epoch()
            }
        }
    }

    async fn stamp(&self, global: u64, scopes: &[Scope]) -> u64 {
        // An offline global value already keeps the cache out of the way.
        if scopes.is_empty() || global >= OFFLINE_OFFSET {
            return global;
        }
        if !self.available() {
            return self.offline_epoch();
        }
        let result = self.read_counters(scopes).await;
        self.record(&result);
        match result {
            Ok(counters) => scope::stamp(global, &counters),
            Err(_) => self.offline_epoch(),
        }
    }

    async fn bump_scope(&self, scope: Scope) {
        let result = if self.available() {
            let keys = [self.scope_key(scope), self.scope_key(Scope::Any)];
            let result = self
                .run(|mut conn| async move {
                    let now = clock_micros();
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.cmd("SET").arg(key).arg(now).arg("NX").ignore();
                        pipe.cmd("INCR").arg(key).ignore();
                    }
                    pipe.query_async::<()>(&mut conn)
                        .await
                        .map_err(RedisError::Command)
                })
                .await;
            self.record(&result);
            result
        } else {
            Err(RedisError::BackingOff)
        };
        if result.is_err() {
            // Paid as one global bump when Redis answers again, which moves every stamp.
            self.owed_bumps.fetch_add(1, Ordering::AcqRel);
        }
    }
}

#[async_trait]
impl ResponseCache for RedisBackend {
    async fn get(&self, key: &str, epoch: u64) -> Option<CachedResponse> {
        if !self.available() || epoch >= OFFLINE_OFFSET {
            return None;
        }
        let entry_key = self.entry_key(key, epoch);
        let result = self
            .run(|mut conn| async move {
                redis::cmd("GET")
                    .arg(entry_key)
                    .query_async::<Option<Vec<u8>>>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await;
        self.record(&result);
        decode(&result.ok()??)
    }

    async fn put(&self, key: String, epoch: u64, response: CachedResponse) {
        // Without this cap one anonymous list page of 25 MB was one 25 MB value (review R6).
        if !response.fits() || !self.available() || epoch >= OFFLINE_OFFSET {
            return;
        }
        let entry_key = self.entry_key(&key, epoch);
        let value = encode(&response);
        let result = self
            .run(|mut conn| async move {
                redis::cmd("SET")
                    .arg(entry_key)
                    .arg(value)
                    .arg("EX")
                    .arg(CACHE_TTL.as_secs())
                    .query_async::<()>(&mut conn)
                    .await
                    .map_err(RedisError::Command)
            })
            .await;
        self.record(&result);
    }

    /// Counts the cached responses of this namespace with `SCAN` (never `KEYS`, which blocks
    /// Redis): for tests and diagnostics, not for request paths.
    async fn entry_count(&self) -> Option<u64> {
        let pattern = format!("{}*", glob_escape(&self.cache_prefix));
        let result = self
            .run(|mut conn| async move {
                let mut cursor = 0_u64;
                let mut count = 0_u64;
                loop {
                    let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut conn)
                        .await
                        .map_err(RedisError::Command)?;
                    count += u64::try_from(keys.len()).unwrap_or(u64::MAX);
                    if next == 0 {
                        return Ok(count);
                    }
                    cursor = next;
                }
            })
            .await;
        self.record(&result);
        result.ok()
    }
}

impl RedisBackend {
    fn entry_key(&self, key: &str, epoch: u64) -> String {
        format!("{}{epoch}:{key}", self.cache_prefix)
    }
}

/// `text` as a `SCAN MATCH` pattern matching itself only.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `status (2 bytes, big-endian) | content-type length (2) | content type | body`.
fn encode(response: &CachedResponse) -> Vec<u8> {
    let content_type = response.content_type.as_bytes();
    let type_len = u16::try_from(content_type.len()).unwrap_or(0);
    let mut out = Vec::with_capacity(4 + content_type.len() + response.body.len());
    out.extend_from_slice(&response.status.to_be_bytes());
    out.extend_from_slice(&type_len.to_be_bytes());
    out.extend_from_slice(
        content_type
            .get(..usize::from(type_len))
            .unwrap_or_default(),
    );
    out.extend_from_slice(&response.body);
    out
}

/// The inverse of [`encode`]; anything malformed (another program's key) is a miss.
fn decode(raw: &[u8]) -> Option<CachedResponse> {
    let status = u16::from_be_bytes([*raw.first()?, *raw.get(1)?]);
    let type_len = usize::from(u16::from_be_bytes([*raw.get(2)?, *raw.get(3)?]));
    let content_type = std::str::from_utf8(raw.get(4..4 + type_len)?).ok()?;
    let body = raw.get(4 + type_len..)?;
    Some(CachedResponse {
        status,
        content_type: content_type.to_owned(),
        body: Bytes::copy_from_slice(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_garbage_is_a_miss() {
        let response = CachedResponse {
            status: 200,
            content_type: "application/json".into(),
            body: Bytes::from_static(b"{\"data\":[]}"),
        };
        assert_eq!(decode(&encode(&response)), Some(response));
        assert_eq!(decode(b""), None);
        assert_eq!(decode(b"\x00\xc8\x00\x10short"), None);
        assert_eq!(decode(b"\x00\xc8\x00\x02\xff\xfe"), None);
    }

    #[test]
    fn a_bad_url_is_refused_without_echoing_it() {
        let err = RedisBackend::new("http://user:hunter2@example", 1).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    /// A Redis that refuses connections: the backend degrades to "no cache", returns a local
    /// epoch that still moves with local writes, and never blocks for long.
    #[tokio::test]
    async fn an_unreachable_redis_degrades_to_no_cache() {
        // Port 1 on loopback refuses connections.
        let backend = RedisBackend::new("redis://127.0.0.1:1", 2).unwrap();
        let started = Instant::now();
        let e0 = backend.current().await;
        assert!(e0 >= OFFLINE_OFFSET);
        let e1 = backend.bump().await;
        assert_ne!(e0, e1);
        assert_eq!(backend.current().await, e1);
        let response = CachedResponse {
            status: 200,
            content_type: "application/json".into(),
            body: Bytes::from_static(b"{}"),
        };
        backend.put("k".into(), e1, response).await;
        assert_eq!(backend.get("k", e1).await, None);
        assert!(backend.ping().await.is_err());
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    /// Against a real Redis when `VELLUM_TEST_REDIS_URL` is set: two backends (two replicas)
    /// share the epoch and the entries of their namespace, and no other namespace's.
    #[tokio::test]
    async fn replicas_share_the_epoch_and_entries_of_their_namespace() {
        let Some(url) = std::env::var("VELLUM_TEST_REDIS_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
        else {
            eprintln!("skipped: VELLUM_TEST_REDIS_URL is not set");
            return;
        };
        let namespace = format!("vellum-test-{}:", uuid::Uuid::new_v4());
        let a = RedisBackend::new(&url, 2)
            .unwrap()
            .with_namespace(&namespace);
        let b = RedisBackend::new(&url, 2)
            .unwrap()
            .with_namespace(&namespace);
        let other = RedisBackend::new(&url, 2)
            .unwrap()
            .with_namespace(&format!("{namespace}other:"));
        assert!(a.ping().await.is_ok());

        // A missing counter starts from the clock, far above any small value.
        let e0 = a.current().await;
        assert!(e0 > 1_000_000_000_000, "{e0}");
        assert!(e0 < OFFLINE_OFFSET);
        assert_eq!(b.current().await, e0);

        let response = CachedResponse {
            status: 200,
            content_type: "application/json".into(),
            body: Bytes::from_static(b"{\"data\":1}"),
        };
        a.put("k".into(), e0, response.clone()).await;
        assert_eq!(b.get("k", e0).await, Some(response.clone()));
        assert_eq!(other.get("k", e0).await, None);

        let e1 = b.bump().await;
        assert_eq!(e1, e0 + 1);
        assert_eq!(a.current().await, e1);
        assert_eq!(a.get("k", e1).await, None);
        assert_ne!(other.current().await, e1);
    }
}
