//! This process's job worker: it claims due jobs (woken when this process queues one, and
//! polling for those other replicas queued or whose lease ran out), runs up to
//! `VELLUM_JOB_CONCURRENCY` at once, and ends each attempt in the queue.
//!
//! A lease is three request timeouts long, so an attempt that is still running never loses its
//! job to another worker; an attempt whose process died loses it once the lease runs out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use vellum_storage::jobs::{self as stored, JobRow};

use crate::context::AppState;
use crate::telemetry::error_chain;

/// How often finished and dead jobs beyond their keep are swept.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// Starts this process's worker when the configuration asks for one (`concurrency` above 0); it
/// ends with the state. The server calls it once its state is built; the CLI never does.
pub fn start(state: &AppState) {
    let config = &state.config().jobs;
    if config.concurrency == 0 {
        return;
    }
    let weak = state.downgrade();
    let wake = state.jobs().listen_for_jobs();
    let slots = Arc::new(Semaphore::new(config.concurrency));
    let poll = config.poll_interval;
    let worker = format!(
        "{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    tokio::spawn(async move {
        let mut swept = Instant::now()
            .checked_sub(SWEEP_INTERVAL)
            .unwrap_or_else(Instant::now);
        loop {
            let Some(state) = AppState::upgrade(&weak) else {
                return;
            };
            if swept.elapsed() >= SWEEP_INTERVAL {
                sweep(&state).await;
                swept = Instant::now();
            }
            let claimed = claim_into_free_slots(&state, &worker, &slots).await;
            drop(state);
            if claimed {
                // More may be due: look again at once, as slots free up.
                tokio::task::yield_now().await;
                continue;
            }
            let _ = tokio::time::timeout(poll, wake.notified()).await;
        }
    });
}

/// Claims as many due jobs as there are free slots and starts them; gives whether any was
/// claimed.
async fn claim_into_free_slots(state: &AppState, worker: &str, slots: &Arc<Semaphore>) -> bool {
    let free = slots.available_permits();
    if free == 0 {
        // Wait for a running job to end before claiming more.
        if let Ok(permit) = Arc::clone(slots).acquire_owned().await {
            drop(permit);
        }
        return true;
    }
    let config = &state.config().jobs;
    let lease = config
        .request_timeout
        .saturating_mul(3)
        .max(Duration::from_secs(5));
    let jobs = match stored::claim(
        state.db(),
        crate::webhook_events::QUEUE,
        worker,
        free as u64,
        lease,
    )
    .await
    {
        Ok(jobs) => jobs,
        Err(err) => {
            tracing::warn!(error = %error_chain(&err), "jobs: claiming failed");
            return false;
        }
    };
    let claimed = !jobs.is_empty();
    for job in jobs {
        let Ok(permit) = Arc::clone(slots).acquire_owned().await else {
            return claimed;
        };
        let state = state.clone();
        let worker = worker.to_owned();
        tokio::spawn(async move {
            run(&state, &worker, &job).await;
            drop(permit);
        });
    }
    claimed
}

/// Runs one attempt and ends it in the queue.
async fn run(state: &AppState, worker: &str, job: &JobRow) {
    match crate::webhooks::deliver::run(state, worker, job).await {
        Ok(Some(status)) => {
            tracing::debug!(job = %job.id, status = status.as_str(), attempt = job.attempts, "jobs: attempt ended");
        }
        Ok(None) => {
            tracing::info!(job = %job.id, "jobs: the job was no longer this worker's when its attempt ended");
        }
        Err(err) => {
            // The lease runs out and another attempt follows: at least once.
            tracing::warn!(job = %job.id, error = %error_chain(&err), "jobs: ending an attempt failed");
        }
    }
}

async fn sweep(state: &AppState) {
    let before = time::OffsetDateTime::now_utc() - super::KEEP_FINISHED;
    if let Err(err) = stored::prune(state.db(), before, super::KEPT_DEAD).await {
        tracing::warn!(error = %error_chain(&err), "jobs: sweeping old jobs failed");
    }
}
