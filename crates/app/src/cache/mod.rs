//! The public API response cache and the epoch that invalidates it.
//!
//! A cached response is stored with the epoch it was computed at; every write anywhere (items,
//! files, schema, roles, grants, keys, settings) bumps the epoch, so the next read misses and is
//! fresh. The 120 s TTL is only a safety net for changes made behind the server's back. Both
//! pieces are traits so a shared backend (Redis, for several replicas) can replace the in-process
//! one without touching the handlers.
//!
//! Every backend is bounded: an entry's key is a fixed-size digest of what the request means
//! ([`key`]), a response larger than [`MAX_ENTRY_BYTES`] is never stored, and the in-process
//! cache holds at most a fixed number of bytes. Redis is bounded by its own `maxmemory`, which
//! operators must set (docs/operations.md).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub mod key;
pub mod redis;

pub use redis::RedisBackend;

/// The safety-net lifetime of a cached response (the spec's Limits table).
pub const CACHE_TTL: Duration = Duration::from_secs(120);

/// The largest response body a cache stores (1 MiB); a larger one is served uncached. A page of
/// 100 ordinary items is far smaller, while an entry of 25 MB (100 items each expanding 1,000
/// related ones) made a few anonymous requests fill Redis by the gigabyte (security review R6),
/// and would take a good part of the in-process cache's 64 MiB alone.
pub const MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// The in-process cache's default size.
pub const DEFAULT_MEMORY_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// A global counter bumped by every write.
#[async_trait]
pub trait Epoch: Send + Sync + fmt::Debug {
    /// The current value.
    async fn current(&self) -> u64;
    /// Increments the counter and returns the new value.
    async fn bump(&self) -> u64;
}

/// The epoch of a single process.
#[derive(Debug, Default)]
pub struct LocalEpoch(AtomicU64);

#[async_trait]
impl Epoch for LocalEpoch {
    async fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    async fn bump(&self) -> u64 {
        self.0.fetch_add(1, Ordering::AcqRel) + 1
    }
}

/// A response as the cache keeps it: enough to replay it byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Bytes,
}

impl CachedResponse {
    /// Whether a cache may store it: its body is at most [`MAX_ENTRY_BYTES`].
    #[must_use]
    pub fn fits(&self) -> bool {
        self.body.len() <= MAX_ENTRY_BYTES
    }
}

/// Where cached responses live.
#[async_trait]
pub trait ResponseCache: Send + Sync + fmt::Debug {
    /// The response stored under `key` at `epoch`; an entry from another epoch is a miss.
    async fn get(&self, key: &str, epoch: u64) -> Option<CachedResponse>;
    /// Stores `response` under `key`, computed at `epoch`, unless it does not [fit](CachedResponse::fits).
    async fn put(&self, key: String, epoch: u64, response: CachedResponse);
    /// How many entries the cache holds now (every epoch's), for tests and diagnostics; `None`
    /// when it cannot tell (Redis unreachable).
    async fn entry_count(&self) -> Option<u64>;
}

/// The in-process cache: `moka`, bounded by the bytes it holds.
pub struct MemoryCache {
    entries: moka::future::Cache<String, Arc<(u64, CachedResponse)>>,
}

impl fmt::Debug for MemoryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCache")
            .field("entries", &self.entries.entry_count())
            .finish()
    }
}

impl MemoryCache {
    /// A cache holding at most `max_bytes` of response bodies (keys included), for `ttl`.
    #[must_use]
    pub fn new(max_bytes: u64, ttl: Duration) -> Self {
        let entries = moka::future::Cache::builder()
            .weigher(|key: &String, value: &Arc<(u64, CachedResponse)>| {
                let size = key.len() + value.1.body.len() + value.1.content_type.len() + 64;
                u32::try_from(size).unwrap_or(u32::MAX)
            })
            .max_capacity(max_bytes)
            .time_to_live(ttl)
            .build();
        Self { entries }
    }
}

impl Default for MemoryCache {
    fn default() -> Self {
        Self::new(DEFAULT_MEMORY_CACHE_BYTES, CACHE_TTL)
    }
}

#[async_trait]
impl ResponseCache for MemoryCache {
    async fn get(&self, key: &str, epoch: u64) -> Option<CachedResponse> {
        let entry = self.entries.get(key).await?;
        (entry.0 == epoch).then(|| entry.1.clone())
    }

    async fn put(&self, key: String, epoch: u64, response: CachedResponse) {
        if response.fits() {
            self.entries.insert(key, Arc::new((epoch, response))).await;
        }
    }

    async fn entry_count(&self) -> Option<u64> {
        // moka counts lazily: settle pending inserts and evictions first.
        self.entries.run_pending_tasks().await;
        Some(self.entries.entry_count())
    }
}

/// No caching at all (`VELLUM_CACHE=off`).
#[derive(Debug, Default)]
pub struct NoCache;

#[async_trait]
impl ResponseCache for NoCache {
    async fn get(&self, _key: &str, _epoch: u64) -> Option<CachedResponse> {
        None
    }

    async fn put(&self, _key: String, _epoch: u64, _response: CachedResponse) {}

    async fn entry_count(&self) -> Option<u64> {
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &'static str) -> CachedResponse {
        CachedResponse {
            status: 200,
            content_type: "application/json".into(),
            body: Bytes::from_static(body.as_bytes()),
        }
    }

    #[tokio::test]
    async fn an_entry_is_a_hit_only_in_its_own_epoch() {
        let epoch = LocalEpoch::default();
        let cache = MemoryCache::default();
        let e0 = epoch.current().await;
        cache.put("k".into(), e0, response("a")).await;
        assert_eq!(cache.get("k", e0).await, Some(response("a")));
        assert_eq!(cache.get("other", e0).await, None);
        let e1 = epoch.bump().await;
        assert_ne!(e0, e1);
        assert_eq!(cache.get("k", e1).await, None);
    }

    #[tokio::test]
    async fn entries_expire_after_the_ttl() {
        let cache = MemoryCache::new(1024 * 1024, Duration::from_millis(50));
        cache.put("k".into(), 0, response("a")).await;
        assert!(cache.get("k", 0).await.is_some());
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert_eq!(cache.get("k", 0).await, None);
    }

    #[tokio::test]
    async fn a_response_over_the_entry_cap_is_not_stored() {
        let cache = MemoryCache::default();
        let mut big = response("");
        big.body = Bytes::from(vec![b' '; MAX_ENTRY_BYTES + 1]);
        assert!(!big.fits());
        cache.put("big".into(), 0, big).await;
        assert_eq!(cache.get("big", 0).await, None);
        let mut at_cap = response("");
        at_cap.body = Bytes::from(vec![b' '; MAX_ENTRY_BYTES]);
        cache.put("at".into(), 0, at_cap.clone()).await;
        assert_eq!(cache.get("at", 0).await, Some(at_cap));
        assert_eq!(cache.entry_count().await, Some(1));
    }

    #[tokio::test]
    async fn the_off_switch_never_hits() {
        NoCache.put("k".into(), 0, response("a")).await;
        assert_eq!(NoCache.get("k", 0).await, None);
    }
}
