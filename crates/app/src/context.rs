//! What every use case shares: the database, the configuration, the project snapshot (see
//! [`crate::snapshot`]), the response cache and the epoch, the blob store and the transform
//! budget. One [`AppState`] per process, cheap to clone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use vellum_storage::blob::{BlobStore, ObjectBlobStore};
use vellum_storage::{Database, StorageError};

use crate::app_config::AppConfig;
use crate::cache::{Epoch, LocalEpoch, MemoryCache, NoCache, RedisBackend, ResponseCache, Scope};
use crate::identity::Identity;
use crate::realtime::{Credentials, Fanout, Realtime};
use crate::snapshot::{MAX_REMEMBERED_KEYS, Snapshot, differs};
use crate::transforms::{TransformStats, Transforms};

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
    pub fn local(config: &AppConfig, blobs: Arc<dyn BlobStore>) -> Self {
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
    pub fn redis(config: &AppConfig, blobs: Arc<dyn BlobStore>, redis: RedisBackend) -> Self {
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
pub(crate) struct Inner {
    db: Database,
    config: AppConfig,
    cache: Arc<dyn ResponseCache>,
    epoch: Arc<dyn Epoch>,
    blobs: Arc<dyn BlobStore>,
    redis: Option<Arc<RedisBackend>>,
    /// The transform budget, the computations in flight and the failure memo.
    transforms: Arc<Transforms>,
    /// Sessions, password hashing, throttles and mail.
    identity: Identity,
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
    /// The realtime hub: this process's sockets and the fan-out to the other replicas.
    realtime: Realtime,
    /// The AI chat provider, its request throttle and extraction slots.
    ai: crate::llm::Ai,
    /// Warm file and transform reads, remembered per epoch.
    served: crate::served::ServedFiles,
    /// The job queue's side in this process: the worker's wake-up call, the webhook client.
    jobs: crate::queue::Jobs,
    /// The Prometheus registry (`vellum_http::metrics` serves it when configured).
    metrics: crate::metrics::Metrics,
    /// GraphQL queries persisted by hash, shared by every HTTP worker of this process.
    persisted_queries: crate::persisted_queries::Persisted,
    /// Signs transform URLs when `VELLUM_SIGNED_TRANSFORMS` is on (issue 24).
    url_signer: Option<crate::transform_urls::UrlSigner>,
}

const TOUCH_INTERVAL: Duration = Duration::from_secs(60);

/// The realtime hub over the configured fan-out: Redis when the cache is there, else PostgreSQL
/// `NOTIFY` on PostgreSQL, else in-process. Its credentials are the configured ones, or the
/// project's stored ones (generated once).
async fn start_realtime(
    db: &Database,
    config: &AppConfig,
    redis: Option<&Arc<RedisBackend>>,
) -> Result<Realtime, StorageError> {
    let settings = &config.realtime;
    let credentials = match (&settings.key, &settings.secret) {
        (Some(key), Some(secret)) => Credentials::new(key.clone(), secret.clone()),
        _ => {
            let stored = vellum_storage::realtime::credentials(db).await?;
            Credentials::new(stored.key, stored.secret)
        }
    };
    let fanout = match (redis, db.backend()) {
        (Some(redis), _) => Fanout::Redis(Arc::clone(redis)),
        (None, vellum_storage::Backend::Postgres) => Fanout::Postgres(db.clone()),
        (None, vellum_storage::Backend::Sqlite) => Fanout::Local,
    };
    Ok(Realtime::start(settings.clone(), credentials, &fanout))
}

/// The transform URL signer when `VELLUM_SIGNED_TRANSFORMS` is on: with the configured key, or
/// the project's stored one (generated once, so every replica signs alike).
async fn url_signer(
    db: &Database,
    config: &AppConfig,
) -> Result<Option<crate::transform_urls::UrlSigner>, StorageError> {
    let settings = &config.transform_urls;
    if !settings.signed {
        return Ok(None);
    }
    let key = match &settings.signing_key {
        Some(key) => key.as_bytes().to_vec(),
        None => vellum_storage::project::url_signing_key(db).await?,
    };
    crate::transform_urls::UrlSigner::new(&key)
        .map(Some)
        .ok_or_else(|| StorageError::Io {
            op: "starting the transform URL signer",
            source: std::io::Error::other("HMAC refused the signing key"),
        })
}

impl AppState {
    /// State with the in-process cache and epoch (or no cache when `config.cache` is false) and an
    /// in-memory blob store (tests; the server passes its own with [`AppState::with_blobs`]).
    ///
    /// # Errors
    /// When the project cannot be read from the database.
    pub async fn new(db: Database, config: AppConfig) -> Result<Self, StorageError> {
        Self::with_blobs(db, config, Arc::new(ObjectBlobStore::in_memory())).await
    }

    /// As [`AppState::new`], storing files' bytes in `blobs`.
    ///
    /// # Errors
    /// When the project cannot be read from the database.
    pub async fn with_blobs(
        db: Database,
        config: AppConfig,
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
        config: AppConfig,
        backends: Backends,
    ) -> Result<Self, StorageError> {
        let current = backends.epoch.current().await;
        let snapshot = Snapshot::load(&db, current).await?;
        let transforms = Transforms::new(&config).map_err(|source| StorageError::Io {
            op: "starting the transform path",
            source,
        })?;
        let identity = Identity::new(
            config.identity.clone(),
            &db,
            backends.redis.clone(),
            &config.base_url,
        )
        .map_err(|e| StorageError::Io {
            op: "starting the sign-in services",
            source: std::io::Error::other(e.to_string()),
        })?;
        let realtime = start_realtime(&db, &config, backends.redis.as_ref()).await?;
        let ai = crate::llm::Ai::new(&config.ai, backends.redis.clone());
        let jobs = crate::queue::Jobs::new(&config.jobs, backends.redis.as_ref());
        let url_signer = url_signer(&db, &config).await?;
        let state = Self {
            inner: Arc::new(Inner {
                db,
                config,
                cache: backends.cache,
                epoch: backends.epoch,
                blobs: backends.blobs,
                redis: backends.redis,
                transforms,
                identity,
                snapshot: RwLock::new(Arc::new(snapshot)),
                rebuilding: tokio::sync::Mutex::new(()),
                touched: Mutex::new(HashMap::new()),
                write_check: vellum_storage::WriteCheck::default(),
                realtime,
                ai,
                served: crate::served::ServedFiles::default(),
                jobs,
                metrics: crate::metrics::Metrics::new(),
                persisted_queries: crate::persisted_queries::Persisted::default(),
                url_signer,
            }),
        };
        state.start_janitor();
        Ok(state)
    }

    /// Sweeps expired AI attachments and old prompt counters every
    /// [`crate::llm::JANITOR_INTERVAL`] while the state lives (a weak reference:
    /// the task ends with the state).
    fn start_janitor(&self) {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(crate::llm::JANITOR_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let state = Self { inner };
                if let Err(err) = crate::llm::sweep(state.db()).await {
                    tracing::warn!(error = %crate::telemetry::error_chain(&err), "ai: sweeping attachments failed");
                }
            }
        });
    }

    /// The job queue's side in this process (issue 24).
    #[must_use]
    pub fn jobs(&self) -> &crate::queue::Jobs {
        &self.inner.jobs
    }

    /// A reference that does not keep the state alive, for background tasks that end with it.
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    /// The state behind `weak`, while it lives.
    pub(crate) fn upgrade(weak: &std::sync::Weak<Inner>) -> Option<Self> {
        weak.upgrade().map(|inner| Self { inner })
    }

    /// GraphQL queries persisted by hash (automatic persisted queries), for this process.
    #[must_use]
    pub fn persisted_queries(&self) -> &crate::persisted_queries::Persisted {
        &self.inner.persisted_queries
    }

    /// The AI chat services (issue 22).
    #[must_use]
    pub fn ai(&self) -> &crate::llm::Ai {
        &self.inner.ai
    }

    /// Warm file and transform reads, remembered per epoch (see `served`).
    pub(crate) fn served_files(&self) -> &crate::served::ServedFiles {
        &self.inner.served
    }

    /// The process's metrics: record into them, or [`register`](crate::metrics::Metrics::register)
    /// a metric of your own at start-up.
    #[must_use]
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.inner.metrics
    }

    /// Every metric in the Prometheus text format, with the pool, socket and job gauges read
    /// now. The job counts are one `GROUP BY` over the queue (pruned, so small); when the
    /// database does not answer the scrape still succeeds, without them.
    ///
    /// # Errors
    /// When a registered metric fails to write itself.
    pub async fn render_metrics(&self) -> Result<String, std::fmt::Error> {
        let jobs = match vellum_storage::jobs::counts(&self.inner.db).await {
            Ok(counts) => {
                let mut by_status = vellum_storage::jobs::JobStatus::ALL.map(|s| (s, 0));
                for (status, n) in counts {
                    if let Some(slot) = by_status.iter_mut().find(|(s, _)| *s == status) {
                        slot.1 = n;
                    }
                }
                Some(by_status)
            }
            Err(err) => {
                tracing::warn!(error = %crate::telemetry::error_chain(&err), "metrics: could not count the jobs");
                None
            }
        };
        self.inner.metrics.encode(&crate::metrics::Live {
            pool: self.inner.db.pool_usage(),
            sockets: self.inner.realtime.sockets(),
            jobs,
        })
    }

    /// The realtime hub (issue 20).
    #[must_use]
    pub fn realtime(&self) -> &Realtime {
        &self.inner.realtime
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
    pub fn config(&self) -> &AppConfig {
        &self.inner.config
    }

    /// How file `url` and `transforms` values are written: the base URL, the signer when
    /// transform URLs are signed, the extra sizes images advertise.
    #[must_use]
    pub fn file_urls(&self) -> crate::transform_urls::FileUrls<'_> {
        crate::transform_urls::FileUrls::new(
            &self.inner.config.base_url,
            self.inner.url_signer.as_ref(),
            &self.inner.config.transform_urls.sizes,
        )
    }

    /// The transform URL signer, when signing is on.
    pub(crate) fn url_signer(&self) -> Option<&crate::transform_urls::UrlSigner> {
        self.inner.url_signer.as_ref()
    }

    #[must_use]
    pub fn blobs(&self) -> &dyn BlobStore {
        self.inner.blobs.as_ref()
    }

    /// The blob store, shared: for a stream that outlives the borrow of the state.
    pub(crate) fn blobs_arc(&self) -> Arc<dyn BlobStore> {
        Arc::clone(&self.inner.blobs)
    }

    pub(crate) fn transforms(&self) -> &Arc<Transforms> {
        &self.inner.transforms
    }

    /// Sessions, password hashing, throttles and mail.
    #[must_use]
    pub fn identity(&self) -> &Identity {
        &self.inner.identity
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
    pub fn redis(&self) -> Option<&RedisBackend> {
        self.inner.redis.as_deref()
    }

    pub fn cache(&self) -> &dyn ResponseCache {
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

    /// Forgets this replica's memo of user `id`'s account, after a change that does not affect
    /// what any other replica allows (a verified email). Changes of roles and permissions use
    /// [`AppState::invalidate`], which every replica sees.
    pub fn forget_account(&self, id: i64) {
        self.current_snapshot().forget_account(id);
    }

    /// Marks cached responses, list totals and warm file reads that can contain `scope` stale,
    /// after a write of items (a collection) or files through this server. The project itself
    /// (schema, roles, settings) did not change: the global epoch and the snapshot stay, and
    /// cached answers about unrelated collections stay warm ([`crate::cache::scope`]).
    pub async fn content_changed(&self, scope: Scope) {
        self.inner.epoch.bump_scope(scope).await;
    }

    /// The stamp of `snapshot`'s epoch and `scopes`' current counters: what an answer computed
    /// from that snapshot and that content is cached and looked up under.
    pub async fn stamp(&self, snapshot: &Snapshot, scopes: &[Scope]) -> u64 {
        self.inner.epoch.stamp(snapshot.epoch, scopes).await
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
