//! What every request shares: the database, the configuration, the project snapshot, the response
//! cache and the epoch.
//!
//! The snapshot holds what nearly every request needs and rarely changes: settings, locales, the
//! origin allowlist, the hash key, every collection's schema and every role's grants. Reading it
//! per request would cost several queries; it is rebuilt instead when the epoch moves (a write
//! through this server) or when it is older than `snapshot_ttl` (a change made behind the
//! server's back, e.g. by `vellum-admin`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ipnet::IpNet;
use vellum_domain::{ContentLocales, HashKey, LocaleCode};
use vellum_policy::{CorsOrigins, Filter, KeyId, OriginAllowlist, Role};
use vellum_storage::blob::{BlobStore, ObjectBlobStore};
use vellum_storage::files::DerivativeCap;
use vellum_storage::keys::FoundKey;
use vellum_storage::model::Collection;
use vellum_storage::project::ProjectSettings;
use vellum_storage::{Database, StorageError};

use crate::cache::key::KeyHasher;
use crate::cache::{Epoch, LocalEpoch, MemoryCache, NoCache, RedisBackend, ResponseCache};
use crate::transforms::{TransformStats, Transforms};

/// The HTTP layer's configuration (the server fills it from clap flags and `VELLUM_*` variables).
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// How many bytes the stored transform outputs of one original may take together (a
    /// multiple of the original's size plus a floor); past it the least recently used are
    /// evicted, so no sequence of requests can make the server store more.
    pub derivative_cap: DerivativeCap,
    /// Absolute prefix of file `url` and `transforms` values, without a trailing slash.
    pub base_url: String,
    /// Whether GET responses under `/api/v1/collections` are cached.
    pub cache: bool,
    /// CORS origins when the project's allowlist is empty (default: any).
    pub cors_origins: CorsOrigins,
    /// Reverse proxies whose `X-Forwarded-For` is believed; empty means the peer address is the
    /// client address.
    pub trusted_proxies: Vec<IpNet>,
    /// How long the project snapshot may be reused without looking at the database.
    pub snapshot_ttl: Duration,
    /// The largest JSON request body accepted (413 above).
    pub json_limit: usize,
    /// JPEG quality of transform outputs (1 to 100).
    pub jpeg_quality: u8,
    /// The largest image (width x height) a transform will decode; larger ones get 422.
    pub max_image_pixels: u64,
    /// How long an API handler may take before the client gets 503 (a hung dependency must not
    /// hold connections forever). Response bodies that stream (file content) are not limited.
    pub request_timeout: Duration,
    /// How long reading a request body may wait for its next bytes before the client gets 408
    /// (a stalled or trickling client, uploads included).
    pub body_read_timeout: Duration,
    /// Memory, in bytes, that transforms running at once may hold together, by
    /// `vellum_imaging::estimate` (plus their sources); a transform needing more gets 422.
    pub transform_memory: u64,
    /// Transforms that may run (or read their source) at once.
    pub transform_concurrency: usize,
    /// How long a transform may wait for the budget before the client gets 503 with
    /// `Retry-After`.
    pub transform_queue_timeout: Duration,
    /// How long one transform may run once admitted; in worker mode its worker is killed then.
    pub transform_timeout: Duration,
    /// Worker processes for transforms (the current executable re-run with
    /// [`crate::transforms::WORKER_FLAG`]); 0 runs them in this process on the blocking pool.
    pub transform_workers: usize,
    /// The data-segment limit (`RLIMIT_DATA`) of each worker process, in bytes.
    pub transform_worker_memory: u64,
}

/// The default transform memory budget: two transforms of the largest image the default pixel
/// limit admits (50 MP: about 200 MiB decoded each) fit at once, or about ten 12 MP photos.
pub const DEFAULT_TRANSFORM_MEMORY: u64 = 512 * 1024 * 1024;

/// The number of cores, the default transform concurrency.
#[must_use]
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8080".to_owned(),
            cache: true,
            cors_origins: CorsOrigins::Any,
            trusted_proxies: Vec::new(),
            snapshot_ttl: Duration::from_secs(5),
            json_limit: 2 * 1024 * 1024,
            jpeg_quality: 82,
            max_image_pixels: 50_000_000,
            request_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            transform_memory: DEFAULT_TRANSFORM_MEMORY,
            transform_concurrency: cores(),
            transform_queue_timeout: Duration::from_secs(5),
            transform_timeout: Duration::from_secs(10),
            transform_workers: 0,
            transform_worker_memory: 2 * DEFAULT_TRANSFORM_MEMORY,
            derivative_cap: DerivativeCap::DEFAULT,
        }
    }
}

/// The project as requests see it, consistent within one request.
#[derive(Debug)]
pub struct Snapshot {
    pub settings: ProjectSettings,
    pub locales: ContentLocales,
    pub origins: OriginAllowlist,
    pub hash_key: HashKey,
    /// Every collection, in id order.
    pub collections: Vec<Arc<Collection>>,
    by_slug: HashMap<String, Arc<Collection>>,
    by_id: HashMap<i64, Arc<Collection>>,
    roles: HashMap<String, Arc<Role>>,
    /// Keys looked up since the snapshot was built (including misses), bounded.
    keys: Mutex<HashMap<KeyId, Option<Arc<FoundKey>>>>,
    /// Item list totals counted since the snapshot was built. The snapshot lives exactly as long
    /// as its epoch, and every write bumps the epoch, so a remembered total is the current one.
    totals: TotalsMemo,
    epoch: u64,
    built: Instant,
}

/// Key lookups remembered per snapshot; beyond this (a flood of random key ids) the memo is
/// cleared rather than grown.
const MAX_REMEMBERED_KEYS: usize = 10_000;

/// Which list a total counts: a SHA-256 digest of the collection, the locale the filter compares
/// translatable fields in, the request's filter and the role's item filter (sort and page do not
/// change a total). Fixed-size on purpose: the filter alone can be as long as the URL, and a memo
/// keyed by its text grew by 64 KB per anonymous request, to 600 MiB (security review R3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TotalKey([u8; 32]);

impl TotalKey {
    pub(crate) fn new(
        collection_id: i64,
        locale: &LocaleCode,
        filter: &Filter,
        role_filter: Option<&Filter>,
    ) -> Self {
        let mut key = KeyHasher::new("list total v1");
        key.part(&collection_id.to_string())
            .part(locale.as_str())
            .debug_part(filter)
            .debug_part(&role_filter);
        Self(key.finish())
    }
}

/// Item list totals by [`TotalKey`]. Bounded by entries, which is bounding by bytes since every
/// entry has the same size (a 32-byte key and a count: under 1 MiB at the cap); past
/// [`MAX_REMEMBERED_KEYS`] the memo is cleared rather than grown.
#[derive(Debug, Default)]
pub(crate) struct TotalsMemo(Mutex<HashMap<TotalKey, u64>>);

impl TotalsMemo {
    fn get(&self, key: &TotalKey) -> Option<u64> {
        self.lock().get(key).copied()
    }

    fn remember(&self, key: TotalKey, total: u64) {
        let mut totals = self.lock();
        if totals.len() >= MAX_REMEMBERED_KEYS {
            totals.clear();
        }
        totals.insert(key, total);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TotalKey, u64>> {
        // Single inserts: a panic while holding the lock cannot leave the map inconsistent.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Snapshot {
    async fn load(db: &Database, epoch: u64) -> Result<Self, StorageError> {
        use vellum_storage::{collections, project, roles};
        let settings = project::load_settings(db).await?;
        let locales = settings
            .locales()
            .map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let origins = settings
            .origin_allowlist()
            .map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let hash_key = project::hash_key(db).await?;
        let collections: Vec<Arc<Collection>> = collections::list_collections(db)
            .await?
            .into_iter()
            .map(Arc::new)
            .collect();
        let roles: HashMap<_, _> = roles::load_roles(db)
            .await?
            .into_iter()
            .map(|role| (role.name.clone(), Arc::new(role)))
            .collect();
        Ok(Self {
            by_slug: collections
                .iter()
                .map(|c| (c.slug.to_string(), Arc::clone(c)))
                .collect(),
            by_id: collections.iter().map(|c| (c.id, Arc::clone(c))).collect(),
            collections,
            settings,
            locales,
            origins,
            hash_key,
            roles,
            keys: Mutex::new(HashMap::new()),
            totals: TotalsMemo::default(),
            epoch,
            built: Instant::now(),
        })
    }

    /// The same project at `epoch`, after a content write through this server: settings,
    /// schema, roles and remembered keys carry over (none of them changed), list totals do not.
    /// `built` carries over too, so changes made behind the server's back are still noticed
    /// within the TTL.
    fn carried_to(&self, epoch: u64) -> Self {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Self {
            settings: self.settings.clone(),
            locales: self.locales.clone(),
            origins: self.origins.clone(),
            hash_key: self.hash_key.clone(),
            collections: self.collections.clone(),
            by_slug: self.by_slug.clone(),
            by_id: self.by_id.clone(),
            roles: self.roles.clone(),
            keys: Mutex::new(keys),
            totals: TotalsMemo::default(),
            epoch,
            built: self.built,
        }
    }

    /// The epoch this snapshot was checked against: cached responses computed from it are
    /// stored under it.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    #[must_use]
    pub fn collection(&self, slug: &str) -> Option<&Arc<Collection>> {
        self.by_slug.get(slug)
    }

    #[must_use]
    pub fn collection_by_id(&self, id: i64) -> Option<&Arc<Collection>> {
        self.by_id.get(&id)
    }

    /// The role named `name`; a role that vanished grants nothing.
    #[must_use]
    pub fn role(&self, name: &str) -> Arc<Role> {
        self.roles.get(name).cloned().unwrap_or_else(|| {
            Arc::new(Role {
                name: name.to_owned(),
                ..Role::default()
            })
        })
    }

    /// The key with this id, from the memo or the database.
    pub(crate) async fn find_key(
        &self,
        db: &Database,
        key_id: &KeyId,
    ) -> Result<Option<Arc<FoundKey>>, StorageError> {
        if let Some(found) = self.lock_keys().get(key_id) {
            return Ok(found.clone());
        }
        let found = vellum_storage::keys::find_api_key(db, key_id)
            .await?
            .map(Arc::new);
        let mut keys = self.lock_keys();
        if keys.len() >= MAX_REMEMBERED_KEYS {
            keys.clear();
        }
        keys.insert(key_id.clone(), found.clone());
        Ok(found)
    }

    /// The remembered total of the list identified by `key`.
    pub(crate) fn total(&self, key: &TotalKey) -> Option<u64> {
        self.totals.get(key)
    }

    /// Remembers the total of the list identified by `key` (bounded: see [`TotalsMemo`]).
    pub(crate) fn remember_total(&self, key: TotalKey, total: u64) {
        self.totals.remember(key, total);
    }

    fn lock_keys(&self) -> std::sync::MutexGuard<'_, HashMap<KeyId, Option<Arc<FoundKey>>>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts).
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Where the response cache, the epoch and file bytes live.
#[derive(Debug, Clone)]
pub struct Backends {
    pub cache: Arc<dyn ResponseCache>,
    pub epoch: Arc<dyn Epoch>,
    pub blobs: Arc<dyn BlobStore>,
    /// Set when the cache and epoch are in Redis, so readiness checks it.
    pub redis: Option<Arc<RedisBackend>>,
}

impl Backends {
    /// One process: an in-process cache (none when `config.cache` is false) and epoch.
    #[must_use]
    pub fn local(config: &HttpConfig, blobs: Arc<dyn BlobStore>) -> Self {
        let cache: Arc<dyn ResponseCache> = if config.cache {
            Arc::new(MemoryCache::default())
        } else {
            Arc::new(NoCache)
        };
        Self {
            cache,
            epoch: Arc::new(LocalEpoch::default()),
            blobs,
            redis: None,
        }
    }

    /// Several replicas: the cache (unless `config.cache` is false) and the epoch in Redis.
    #[must_use]
    pub fn redis(config: &HttpConfig, blobs: Arc<dyn BlobStore>, redis: RedisBackend) -> Self {
        let redis = Arc::new(redis);
        let cache: Arc<dyn ResponseCache> = if config.cache {
            Arc::clone(&redis) as Arc<dyn ResponseCache>
        } else {
            Arc::new(NoCache)
        };
        Self {
            cache,
            epoch: Arc::clone(&redis) as Arc<dyn Epoch>,
            blobs,
            redis: Some(redis),
        }
    }
}

/// Shared by every worker; cheap to clone.
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: Database,
    config: HttpConfig,
    cache: Arc<dyn ResponseCache>,
    epoch: Arc<dyn Epoch>,
    blobs: Arc<dyn BlobStore>,
    redis: Option<Arc<RedisBackend>>,
    /// The transform budget, the computations in flight and the failure memo.
    transforms: Arc<Transforms>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// Held while the snapshot is rebuilt, so concurrent requests wait for one rebuild instead of
    /// each running their own.
    rebuilding: tokio::sync::Mutex<()>,
    /// When each key's `last_used_at` was last written: at most once a minute per key, so
    /// authenticated reads do not turn into writes.
    touched: Mutex<HashMap<i64, Instant>>,
    /// The readiness probe's write check (`/health/ready`), told of storage failures by
    /// `middleware::watch_storage`.
    write_check: vellum_storage::WriteCheck,
}

const TOUCH_INTERVAL: Duration = Duration::from_secs(60);

impl AppState {
    /// State with the in-process cache and epoch (or no cache when `config.cache` is false) and an
    /// in-memory blob store (tests; the server passes its own with [`AppState::with_blobs`]).
    ///
    /// # Errors
    /// When the project cannot be read from the database.
    pub async fn new(db: Database, config: HttpConfig) -> Result<Self, StorageError> {
        Self::with_blobs(db, config, Arc::new(ObjectBlobStore::in_memory())).await
    }

    /// As [`AppState::new`], storing files' bytes in `blobs`.
    ///
    /// # Errors
    /// When the project cannot be read from the database.
    pub async fn with_blobs(
        db: Database,
        config: HttpConfig,
        blobs: Arc<dyn BlobStore>,
    ) -> Result<Self, StorageError> {
        let backends = Backends::local(&config, blobs);
        Self::with_backends(db, config, backends).await
    }

    /// State over the given cache, epoch and blob store (shared backends for several replicas).
    ///
    /// # Errors
    /// When the project cannot be read from the database.
    pub async fn with_backends(
        db: Database,
        config: HttpConfig,
        backends: Backends,
    ) -> Result<Self, StorageError> {
        let current = backends.epoch.current().await;
        let snapshot = Snapshot::load(&db, current).await?;
        let transforms = Transforms::new(&config).map_err(|source| StorageError::Io {
            op: "starting the transform path",
            source,
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                db,
                config,
                cache: backends.cache,
                epoch: backends.epoch,
                blobs: backends.blobs,
                redis: backends.redis,
                transforms,
                snapshot: RwLock::new(Arc::new(snapshot)),
                rebuilding: tokio::sync::Mutex::new(()),
                touched: Mutex::new(HashMap::new()),
                write_check: vellum_storage::WriteCheck::default(),
            }),
        })
    }

    #[must_use]
    pub fn db(&self) -> &Database {
        &self.inner.db
    }

    /// The readiness probe's database write check.
    #[must_use]
    pub fn write_check(&self) -> &vellum_storage::WriteCheck {
        &self.inner.write_check
    }

    #[must_use]
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    #[must_use]
    pub fn blobs(&self) -> &dyn BlobStore {
        self.inner.blobs.as_ref()
    }

    pub(crate) fn transforms(&self) -> &Arc<Transforms> {
        &self.inner.transforms
    }

    /// Counters of the transform path: computations run, failures answered from the memo,
    /// computations in flight, the worker pool.
    #[must_use]
    pub fn transform_stats(&self) -> TransformStats {
        self.inner.transforms.stats()
    }

    /// Takes `bytes` of the transform memory budget until the returned permit is dropped, or
    /// `None` when that much is not free (tests: a full budget).
    #[doc(hidden)]
    #[must_use]
    pub fn hold_transform_memory(&self, bytes: u64) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.inner.transforms.hold(bytes)
    }

    /// The Redis backend, when configured: `/health/ready` checks it.
    pub(crate) fn redis(&self) -> Option<&RedisBackend> {
        self.inner.redis.as_deref()
    }

    pub(crate) fn cache(&self) -> &dyn ResponseCache {
        self.inner.cache.as_ref()
    }

    /// How many responses the cache holds now (every epoch's; in Redis, this namespace's),
    /// `None` when Redis cannot be reached: tests check that requests differing only in what
    /// the handlers ignore add no entry.
    #[doc(hidden)]
    pub async fn cached_entries(&self) -> Option<u64> {
        self.inner.cache.entry_count().await
    }

    pub(crate) async fn epoch(&self) -> u64 {
        self.inner.epoch.current().await
    }

    /// Marks everything cached as stale: called after every write, and by anything that changes
    /// the project outside the API (tests, admin surfaces).
    pub async fn invalidate(&self) {
        self.inner.epoch.bump().await;
    }

    /// Marks cached responses and list totals stale after a write of items or files through
    /// this server. The project itself (schema, roles, settings) did not change, so when nobody
    /// else moved the epoch meanwhile the snapshot is carried over to the new epoch instead of
    /// being rebuilt from the database on the next request (which a stream of writes would
    /// otherwise pay on every request).
    pub async fn content_changed(&self) {
        let before = self.current_snapshot();
        let epoch = self.inner.epoch.bump().await;
        if epoch != before.epoch.wrapping_add(1) {
            return;
        }
        let carried = Arc::new(before.carried_to(epoch));
        let mut slot = self
            .inner
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if Arc::ptr_eq(&slot, &before) {
            *slot = carried;
        }
    }

    /// The current snapshot, rebuilt first when the epoch moved or it is older than the TTL.
    ///
    /// # Errors
    /// When a needed rebuild cannot read the database.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, StorageError> {
        let epoch = self.epoch().await;
        let current = self.current_snapshot();
        if self.is_fresh(&current, epoch) {
            return Ok(current);
        }
        let _rebuilding = self.inner.rebuilding.lock().await;
        // Another request may have rebuilt it while this one waited.
        let epoch = self.epoch().await;
        let current = self.current_snapshot();
        if self.is_fresh(&current, epoch) {
            return Ok(current);
        }
        let mut fresh = Snapshot::load(&self.inner.db, epoch).await?;
        // A change made behind the server's back also makes cached responses stale.
        if current.epoch == epoch && differs(&current, &fresh) {
            fresh.epoch = self.inner.epoch.bump().await;
        }
        let fresh = Arc::new(fresh);
        *self
            .inner
            .snapshot
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::clone(&fresh);
        Ok(fresh)
    }

    fn current_snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(
            &self
                .inner
                .snapshot
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn is_fresh(&self, snapshot: &Snapshot, epoch: u64) -> bool {
        snapshot.epoch == epoch && snapshot.built.elapsed() < self.inner.config.snapshot_ttl
    }

    /// Whether key `id`'s `last_used_at` is due for an update (and records that it now is).
    pub(crate) fn touch_due(&self, id: i64) -> bool {
        let mut touched = self
            .inner
            .touched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        match touched.get(&id) {
            Some(at) if now.duration_since(*at) < TOUCH_INTERVAL => false,
            _ => {
                if touched.len() >= MAX_REMEMBERED_KEYS {
                    touched.clear();
                }
                touched.insert(id, now);
                true
            }
        }
    }
}

/// Whether two snapshots describe a different project (ignoring when they were built).
fn differs(a: &Snapshot, b: &Snapshot) -> bool {
    a.settings != b.settings
        || a.collections.len() != b.collections.len()
        || a.collections.iter().zip(&b.collections).any(|(x, y)| {
            x.id != y.id
                || x.slug != y.slug
                || x.name != y.name
                || x.is_singleton != y.is_singleton
                || x.updated_at != y.updated_at
                || x.fields != y.fields
        })
        || a.roles.len() != b.roles.len()
        || a.roles.iter().any(|(name, role)| {
            b.roles
                .get(name)
                .is_none_or(|other| other.to_json() != role.to_json())
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(pairs: &[(&str, &str)]) -> Filter {
        Filter::from_query(pairs.iter().copied()).unwrap()
    }

    /// The memo's keys are 32 bytes whatever the filter, and each part of what a total depends
    /// on gives another key.
    #[test]
    fn totals_are_remembered_under_fixed_size_keys() {
        let en = LocaleCode::parse("en").unwrap();
        let de = LocaleCode::parse("de").unwrap();
        let short = filter(&[("filter[title][_contains]", "a")]);
        let long = filter(&[
            ("filter[title][_contains]", &"a".repeat(1024)),
            ("filter[slug][_in]", &vec!["b".repeat(1024); 60].join(",")),
        ]);
        let role =
            Filter::from_json("item_filter", &json!({"status": {"_eq": "published"}})).unwrap();
        // No heap part: the whole key is inline, so the memo's size is its entry count.
        assert_eq!(std::mem::size_of::<TotalKey>(), 32);
        let key = TotalKey::new(1, &en, &short, None);
        assert_eq!(key, TotalKey::new(1, &en, &short, None));
        for other in [
            TotalKey::new(2, &en, &short, None),
            TotalKey::new(1, &de, &short, None),
            TotalKey::new(1, &en, &long, None),
            TotalKey::new(1, &en, &short, Some(&role)),
            TotalKey::new(1, &en, &Filter::default(), None),
        ] {
            assert_ne!(key, other);
        }

        let memo = TotalsMemo::default();
        memo.remember(key, 7);
        assert_eq!(memo.get(&key), Some(7));
        assert_eq!(memo.get(&TotalKey::new(1, &en, &long, None)), None);
        // Bounded by entries: a flood of distinct lists clears the memo instead of growing it.
        for i in 0..=MAX_REMEMBERED_KEYS {
            let f = filter(&[("filter[title][_eq]", &i.to_string())]);
            memo.remember(TotalKey::new(1, &en, &f, None), 1);
            assert!(memo.lock().len() <= MAX_REMEMBERED_KEYS);
        }
    }
}
