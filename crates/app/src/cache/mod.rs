//! The public API response cache and the epoch that invalidates it.
//!
//! A cached response is stored with the stamp it was computed at: the global epoch, which every
//! change of the project (schema, roles, grants, keys, settings, users) bumps, and the counters of
//! the content it can contain ([`scope`]: a write of items bumps its collection's counter, a write
//! of files the files counter), so the next read that could see the change misses and is fresh. The 120 s TTL is only a safety net for changes made behind the server's back. Both
//! pieces are traits so a shared backend (Redis, for several replicas) can replace the in-process
//! one without touching the handlers.
//!
//! Every backend is bounded: an entry's key is a fixed-size digest of what the request means
//! ([`key`]), a response larger than [`MAX_ENTRY_BYTES`] is never stored, and the in-process
//! cache holds at most a fixed number of bytes. Redis is bounded by its own `maxmemory`, which
//! operators must set (docs/operations.md).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub mod key;
pub mod redis;
pub mod scope;

pub use redis::RedisBackend;
pub use scope::Scope;

/// The safety-net lifetime of a cached response (the spec's Limits table).
pub const CACHE_TTL: Duration = Duration::from_secs(120);

/// The largest response body a cache stores (1 MiB); a larger one is served uncached. A page of
/// 100 ordinary items is far smaller, while an entry of 25 MB (100 items each expanding 1,000
/// related ones) made a few anonymous requests fill Redis by the gigabyte (security review R6),
/// and would take a good part of the in-process cache's 64 MiB alone.
pub const MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// The in-process cache's default size.
pub const DEFAULT_MEMORY_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// The global counter, bumped by every change of the project, and a counter per [`Scope`] of
/// content.
#[async_trait]
pub trait Epoch: Send + Sync + fmt::Debug {
    /// The global counter's current value.
    async fn current(&self) -> u64;
    /// Increments the global counter and returns the new value.
    async fn bump(&self) -> u64;
    /// The [stamp](scope::stamp) of `global` (the global counter as the caller's snapshot was
    /// checked against, so an answer computed from that snapshot is never stored under a later
    /// project) and `scopes`' current counters.
    async fn stamp(&self, global: u64, scopes: &[Scope]) -> u64;
    /// Records a content write in `scope`: increments its counter and [`Scope::Any`]'s.
    async fn bump_scope(&self, scope: Scope);
}

/// Scope counters a process remembers at most; past it they are all dropped and the global
/// epoch moves instead (collections created and deleted by the thousand over a process's life).
const MAX_LOCAL_SCOPES: usize = 100_000;

/// The epoch of a single process.
#[derive(Debug, Default)]
pub struct LocalEpoch {
    global: AtomicU64,
    scopes: Mutex<HashMap<Scope, u64>>,
}

#[async_trait]
impl Epoch for LocalEpoch {
    async fn current(&self) -> u64 {
        self.global.load(Ordering::Acquire)
    }

    async fn bump(&self) -> u64 {
        self.global.fetch_add(1, Ordering::AcqRel) + 1
    }

    async fn stamp(&self, global: u64, scopes: &[Scope]) -> u64 {
        let scopes_held = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        let counters: Vec<(Scope, u64)> = scopes
            .iter()
            .map(|s| (*s, scopes_held.get(s).copied().unwrap_or(0)))
            .collect();
        drop(scopes_held);
        scope::stamp(global, &counters)
    }

    async fn bump_scope(&self, scope: Scope) {
        let mut scopes = self.scopes.lock().unwrap_or_else(PoisonError::into_inner);
        if scopes.len() >= MAX_LOCAL_SCOPES && !scopes.contains_key(&scope) {
            // A counter that restarts at zero could meet an old stamp: move the global one too.
            scopes.clear();
            self.global.fetch_add(1, Ordering::AcqRel);
        }
        for s in [scope, Scope::Any] {
            *scopes.entry(s).or_insert(0) += 1;
        }
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
    async fn a_scoped_write_moves_only_the_stamps_that_depend_on_it() {
        let epoch = LocalEpoch::default();
        let (articles, pages) = (Scope::Collection(1), Scope::Collection(2));
        let g = epoch.current().await;
        let a0 = epoch.stamp(g, &[articles]).await;
        let p0 = epoch.stamp(g, &[pages, Scope::Files]).await;
        let any0 = epoch.stamp(g, &[Scope::Any]).await;
        epoch.bump_scope(articles).await;
        assert_ne!(epoch.stamp(g, &[articles]).await, a0);
        assert_eq!(epoch.stamp(g, &[pages, Scope::Files]).await, p0);
        assert_ne!(
            epoch.stamp(g, &[Scope::Any]).await,
            any0,
            "any moves with every write"
        );
        assert_eq!(epoch.current().await, g, "content writes keep the project");
        epoch.bump_scope(Scope::Files).await;
        assert_ne!(epoch.stamp(g, &[pages, Scope::Files]).await, p0);
        let a1 = epoch.stamp(g, &[articles]).await;
        let g1 = epoch.bump().await;
        assert_ne!(
            epoch.stamp(g1, &[articles]).await,
            a1,
            "the global epoch moves every stamp"
        );
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
