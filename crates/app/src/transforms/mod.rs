//! How a transform runs: admitted by a memory and concurrency budget, computed once however many
//! requests ask for it, stopped at its own deadline, and remembered when it fails.
//!
//! - **Budget** ([`budget`]): `vellum_imaging::estimate` states a transform's memory before it
//!   runs; a concurrency cap and a weighted semaphore over memory admit it. One that can never fit
//!   fails at once (422); one that would wait past the queue timeout is turned away (503,
//!   `Retry-After`). Every key of every file shares the one budget.
//! - **Single flight by computation**: the first request for a (content hash, variant) starts one
//!   computation as a task of its own; later requests join it. A client that hangs up does not
//!   stop it, and a request that times out does not release it to be started again. The map of
//!   running computations is bounded (the concurrency cap plus a queue of
//!   [`QUEUE_PER_SLOT`] per slot; beyond it, 503).
//! - **Deadline**: a computation gets `transform_timeout` to run once admitted. In worker mode the
//!   worker is killed when it passes, so the CPU stops; in process (`transform_workers = 0`) the
//!   work cannot be stopped, and it keeps its share of the budget until it ends.
//! - **Failure memo**: a failed decode (corrupt, too complex, too many pixels, over budget, over
//!   its deadline, a crashed worker) is remembered per (content hash, variant) in a bounded cache,
//!   so a bad file costs once, not once per request.
//! - **Workers** ([`worker`]): decode + resize + encode in child processes under `setrlimit`, for
//!   what no estimate foresees.
//!
//! This module knows nothing of the database or the blob store: the caller reads the source and
//! stores the output inside the computation it hands to [`Transforms::join_or_start`].

mod budget;
pub mod worker;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Shared};
use tokio::sync::OwnedSemaphorePermit;
use vellum_imaging::{FocalPoint, ImagingError, Preset, TransformOptions, Transformed};
use vellum_storage::files::StoredTransform;

use crate::app_config::AppConfig;
pub(crate) use budget::Slot;
use budget::{Budget, Refusal};
pub use worker::{IDLE_TIMEOUT, PoolStats, WORKER_FLAG, run_worker};
use worker::{JobError, Pool, PoolSettings};

/// Computations that may wait for a slot, per slot of the concurrency cap.
pub const QUEUE_PER_SLOT: usize = 8;
/// Failed transforms remembered at most.
const MAX_REMEMBERED_FAILURES: u64 = 10_000;
/// How long a failure is remembered: a timeout may have been the machine's fault, not the
/// image's, and deployments change limits.
const FAILURE_TTL: Duration = Duration::from_secs(600);

/// Why a transform produced no output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The image crate refused or failed to decode it.
    Imaging(ImagingError),
    /// Its estimated memory exceeds the whole budget.
    TooCostly { needed: u64, limit: u64 },
    /// It ran past its deadline.
    TimedOut { limit: Duration },
    /// Its worker died (a memory or CPU limit, an abort).
    Crashed,
    /// The budget or the queue is full: retry after this many seconds.
    Busy { retry_after: u64 },
    /// The blob store is unavailable (503); the cause was logged.
    Unavailable,
    /// A bug or a broken dependency (500); the cause was logged.
    Internal,
}

impl Failure {
    /// Whether the same input will fail the same way: only those are remembered.
    fn is_the_images(&self) -> bool {
        match self {
            Self::Imaging(ImagingError::Encode(_))
            | Self::Busy { .. }
            | Self::Unavailable
            | Self::Internal => false,
            Self::Imaging(_) | Self::TooCostly { .. } | Self::TimedOut { .. } | Self::Crashed => {
                true
            }
        }
    }
}

/// What a computation ends with; cheap to clone for every request that joined it.
pub(crate) type Outcome = Result<StoredTransform, Failure>;
/// A running computation that requests can join.
pub(crate) type Flight = Shared<BoxFuture<'static, Outcome>>;

/// Counters of the transform path (tests and operators).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransformStats {
    /// Transforms admitted and run (a joined or remembered request adds nothing).
    pub computed: u64,
    /// Requests answered from the failure memo.
    pub remembered: u64,
    /// Computations running or waiting for a slot right now.
    pub in_flight: usize,
    /// The worker pool's counters, in worker mode.
    pub workers: Option<PoolStats>,
}

#[derive(Debug)]
enum Executor {
    /// On tokio's blocking pool, in this process.
    InProcess,
    Workers(Arc<Pool>),
}

/// The transform path's shared state (one per [`crate::AppState`]).
#[derive(Debug)]
pub(crate) struct Transforms {
    budget: Budget,
    executor: Executor,
    flights: Mutex<HashMap<String, Flight>>,
    max_flights: usize,
    failures: moka::sync::Cache<String, Failure>,
    runtime: tokio::runtime::Handle,
    options: TransformOptions,
    timeout: Duration,
    retry_after: u64,
    computed: AtomicU64,
    remembered: AtomicU64,
}

impl Transforms {
    /// The budget, memo and (when `transform_workers > 0`) worker pool of `config`. Computations
    /// are spawned on the runtime this is called on.
    ///
    /// # Errors
    /// When there is no current runtime or the executable's path is unknown (worker mode).
    pub(crate) fn new(config: &AppConfig) -> std::io::Result<Arc<Self>> {
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let mut concurrency = config.transform_concurrency.max(1);
        if config.transform_workers > 0 {
            // An admitted transform never waits for a worker: its deadline is for its work.
            concurrency = concurrency.min(config.transform_workers);
        }
        let executor = if config.transform_workers == 0 {
            Executor::InProcess
        } else {
            Executor::Workers(Pool::new(
                &PoolSettings {
                    workers: config.transform_workers,
                    memory: config.transform_worker_memory,
                },
                &runtime,
            )?)
        };
        Ok(Arc::new(Self {
            budget: Budget::new(
                config.transform_memory,
                concurrency,
                config.transform_queue_timeout,
            ),
            executor,
            flights: Mutex::new(HashMap::new()),
            max_flights: concurrency * (1 + QUEUE_PER_SLOT),
            failures: moka::sync::Cache::builder()
                .max_capacity(MAX_REMEMBERED_FAILURES)
                .time_to_live(FAILURE_TTL)
                .build(),
            runtime,
            options: TransformOptions {
                jpeg_quality: config.jpeg_quality,
                max_pixels: config.max_image_pixels,
            },
            timeout: config.transform_timeout,
            retry_after: config.transform_queue_timeout.as_secs_f64().ceil().max(1.0) as u64,
            computed: AtomicU64::new(0),
            remembered: AtomicU64::new(0),
        }))
    }

    pub(crate) fn stats(&self) -> TransformStats {
        TransformStats {
            computed: self.computed.load(Ordering::Relaxed),
            remembered: self.remembered.load(Ordering::Relaxed),
            in_flight: self.lock_flights().len(),
            workers: match &self.executor {
                Executor::InProcess => None,
                Executor::Workers(pool) => Some(pool.stats()),
            },
        }
    }

    /// How `key` failed recently, if it did.
    pub(crate) fn remembered(&self, key: &str) -> Option<Failure> {
        let failure = self.failures.get(key)?;
        self.remembered.fetch_add(1, Ordering::Relaxed);
        Some(failure)
    }

    /// The running computation of `key`, or a new one made of `start()` and spawned as a task
    /// (it runs to its end whoever still waits for it). Busy when too many are running or queued.
    pub(crate) fn join_or_start<F>(
        self: &Arc<Self>,
        key: &str,
        start: impl FnOnce() -> F,
    ) -> Result<Flight, Failure>
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        let mut flights = self.lock_flights();
        if let Some(flight) = flights.get(key) {
            return Ok(flight.clone());
        }
        if flights.len() >= self.max_flights {
            return Err(self.busy());
        }
        let work = start();
        let this = Arc::clone(self);
        let owned_key = key.to_owned();
        let task = self.runtime.spawn(async move {
            let outcome = work.await;
            if let Err(failure) = &outcome
                && failure.is_the_images()
            {
                this.failures.insert(owned_key.clone(), failure.clone());
            }
            this.lock_flights().remove(&owned_key);
            outcome
        });
        let flight = async move {
            task.await.unwrap_or_else(|e| {
                tracing::error!(error = %e, "a transform computation panicked");
                Err(Failure::Internal)
            })
        }
        .boxed()
        .shared();
        flights.insert(key.to_owned(), flight.clone());
        Ok(flight)
    }

    /// A slot of the concurrency cap (taken before the source is read).
    pub(crate) async fn slot(&self) -> Result<Slot, Failure> {
        self.budget.slot().await.map_err(|r| self.refused(r))
    }

    /// Renders `preset` of `source`: estimates its cost, waits for that much of the budget, and
    /// runs it with its deadline.
    pub(crate) async fn render(
        &self,
        slot: Slot,
        source: Vec<u8>,
        preset: Preset,
        focal: FocalPoint,
    ) -> Result<Transformed, Failure> {
        let options = self.options;
        let cost = vellum_imaging::estimate(&source, preset, Some(focal), &options)
            .map_err(Failure::Imaging)?;
        let source_len = source.len() as u64;
        // The source is held here, and in worker mode once more by the worker.
        let copies = match self.executor {
            Executor::InProcess => 1,
            Executor::Workers(_) => 2,
        };
        let needed = cost.memory.saturating_add(copies * source_len);
        let admission = self
            .budget
            .admit(slot, needed)
            .await
            .map_err(|r| self.refused(r))?;
        self.computed.fetch_add(1, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + self.timeout;
        match &self.executor {
            Executor::InProcess => {
                // The blocking task keeps the admission: work that outlives its deadline still
                // counts against the budget until it really ends.
                let job = tokio::task::spawn_blocking(move || {
                    let _admission = admission;
                    vellum_imaging::transform(&source, preset, Some(focal), &options)
                });
                match tokio::time::timeout_at(deadline, job).await {
                    Ok(Ok(result)) => result.map_err(Failure::Imaging),
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "a transform panicked");
                        Err(Failure::Crashed)
                    }
                    Err(_) => Err(Failure::TimedOut {
                        limit: self.timeout,
                    }),
                }
            }
            Executor::Workers(pool) => {
                let result = pool.run(&source, preset, focal, &options, deadline).await;
                drop(admission);
                result.map_err(|e| match e {
                    JobError::Imaging(e) => Failure::Imaging(e),
                    JobError::TimedOut => Failure::TimedOut {
                        limit: self.timeout,
                    },
                    JobError::Crashed(cause) => {
                        tracing::warn!(%cause, "a transform worker died");
                        Failure::Crashed
                    }
                    JobError::Worker(cause) => {
                        tracing::error!(%cause, "a transform worker failed");
                        Failure::Internal
                    }
                })
            }
        }
    }

    /// Takes `bytes` of the memory budget until the permit is dropped (tests).
    pub(crate) fn hold(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        self.budget.hold(bytes)
    }

    fn refused(&self, refusal: Refusal) -> Failure {
        match refusal {
            Refusal::Never { needed, limit } => Failure::TooCostly { needed, limit },
            Refusal::Busy => self.busy(),
        }
    }

    fn busy(&self) -> Failure {
        Failure::Busy {
            retry_after: self.retry_after,
        }
    }

    fn lock_flights(&self) -> std::sync::MutexGuard<'_, HashMap<String, Flight>> {
        // Single inserts and removes: a panic while holding the lock leaves the map consistent.
        self.flights.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
