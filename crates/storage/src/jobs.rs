//! The durable job queue, in the project's own database (SQLite or PostgreSQL), so a job is as
//! durable as the write that caused it and every replica sees the same queue.
//!
//! A worker [`claim`]s due jobs: it marks them `running`, counts the attempt, and takes a lease
//! (`locked_until`). A job whose lease runs out while still `running` (its replica was killed
//! mid-delivery) is due again, so another replica retries it: delivery is at least once. The
//! worker then [`finish`]es the job: `done`, `failed` with the time of its next attempt, or `dead`
//! once out of attempts. A finish only applies while the job is still this worker's lease, so
//! a late finisher cannot undo a newer attempt.
//!
//! On PostgreSQL the claim skips rows another replica is claiming (`FOR UPDATE SKIP LOCKED`); on
//! SQLite the claim is one write transaction, which already excludes every other writer.

use std::fmt;
use std::time::Duration;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::Value as Json;
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::paging::Page;
use crate::sql::{Sql, begin_write, now, stamp};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobStatus {
    /// Waiting for its first attempt (at `run_at`).
    Queued,
    /// Claimed by a worker whose lease has not run out.
    Running,
    /// Its last attempt failed; waiting for the next one at `run_at`.
    Failed,
    /// Out of attempts: kept for a person to look at, retry or leave.
    Dead,
    Done,
    /// Cancelled by a person before it ran to the end.
    Cancelled,
}

impl JobStatus {
    pub const ALL: [Self; 6] = [
        Self::Queued,
        Self::Running,
        Self::Failed,
        Self::Dead,
        Self::Done,
        Self::Cancelled,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Dead => "dead",
            Self::Done => "done",
            Self::Cancelled => "cancelled",
        }
    }

    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct JobRow {
    pub id: String,
    pub queue: String,
    pub payload: String,
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    pub run_at: OffsetDateTime,
    pub locked_by: Option<String>,
    pub locked_until: Option<OffsetDateTime>,
    pub last_error: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl JobRow {
    /// The status, or `Dead` for a value this build does not know (so it is never claimed).
    #[must_use]
    pub fn status(&self) -> JobStatus {
        JobStatus::parse(&self.status).unwrap_or(JobStatus::Dead)
    }

    /// The payload as JSON.
    ///
    /// # Errors
    /// [`StorageError::Corrupt`] when it is not JSON.
    pub fn payload_json(&self) -> Result<Json, StorageError> {
        serde_json::from_str(&self.payload).map_err(StorageError::corrupt)
    }
}

const COLUMNS: &str = "id, queue, payload, status, attempts, max_attempts, run_at, locked_by, \
                       locked_until, last_error, created_at, updated_at";

/// A job to add.
#[derive(Debug, Clone)]
pub struct NewJob<'a> {
    /// The job's kind (`webhook`), which names the handler that runs it.
    pub queue: &'a str,
    pub payload: &'a Json,
    /// Attempts before the job is dead (at least 1).
    pub max_attempts: u32,
}

/// Adds a job, due now; gives its id (a UUID, also its idempotency key).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(queue = new.queue))]
pub async fn enqueue<C: ConnectionTrait>(db: &C, new: &NewJob<'_>) -> Result<String, StorageError> {
    let id = uuid::Uuid::new_v4().hyphenated().to_string();
    let at = now();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("INSERT INTO jobs (")
        .push(COLUMNS)
        .push(") VALUES (")
        .bind(id.clone())
        .push(", ")
        .bind(new.queue)
        .push(", ")
        .bind(new.payload.to_string())
        .push(", 'queued', 0, ")
        .bind(i32::try_from(new.max_attempts.max(1)).unwrap_or(i32::MAX))
        .push(", ")
        .bind(at)
        .push(", NULL, NULL, NULL, ")
        .bind(at)
        .push(", ")
        .bind(at)
        .push(")");
    sql.execute(db).await?;
    Ok(id)
}

/// Jobs a write queues inside its own transaction, built once the written row's id is known:
/// the write and its jobs commit together or not at all, so no crash between the two can lose
/// the jobs of a committed write (the transactional outbox).
pub struct Outbox<'a> {
    /// The jobs' kind (`webhook`).
    pub queue: &'a str,
    /// Attempts before a job is dead (at least 1).
    pub max_attempts: u32,
    /// The payloads of the jobs for the written row.
    pub payloads: &'a dyn Payloads,
}

/// What an [`Outbox`] queues for a written row.
pub trait Payloads: Send + Sync {
    /// The payloads of the jobs for the written row `id`; empty queues nothing.
    fn payloads(&self, id: i64) -> Vec<Json>;
}

impl std::fmt::Debug for Outbox<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl Outbox<'_> {
    /// Queues the jobs of row `id` in `tx` (the write's transaction); gives how many.
    pub(crate) async fn enqueue_in<C: ConnectionTrait>(
        &self,
        tx: &C,
        id: i64,
    ) -> Result<usize, StorageError> {
        let payloads = self.payloads.payloads(id);
        for payload in &payloads {
            let new = NewJob {
                queue: self.queue,
                payload,
                max_attempts: self.max_attempts,
            };
            enqueue(tx, &new).await?;
        }
        Ok(payloads.len())
    }
}

/// Queues `outbox`'s jobs of row `id` in `tx`, when there is an outbox.
pub(crate) async fn enqueue_outbox<C: ConnectionTrait>(
    tx: &C,
    outbox: Option<&Outbox<'_>>,
    id: i64,
) -> Result<(), StorageError> {
    if let Some(outbox) = outbox {
        outbox.enqueue_in(tx, id).await?;
    }
    Ok(())
}

/// Adds jobs in one transaction (all or none); gives their ids.
///
/// # Errors
/// A database error.
pub async fn enqueue_all<C: TransactionTrait>(
    db: &C,
    news: &[NewJob<'_>],
) -> Result<Vec<String>, StorageError> {
    let tx = begin_write(db).await?;
    let mut ids = Vec::with_capacity(news.len());
    for new in news {
        ids.push(enqueue(&tx, new).await?);
    }
    tx.commit().await?;
    Ok(ids)
}

/// Claims up to `limit` due jobs of `queue` for `worker`, each for `lease`: due means queued or
/// failed with `run_at` passed, or running with its lease run out. Each claim counts an attempt.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(queue, worker))]
pub async fn claim<C: TransactionTrait>(
    db: &C,
    queue: &str,
    worker: &str,
    limit: u64,
    lease: Duration,
) -> Result<Vec<JobRow>, StorageError> {
    let tx = begin_write(db).await?;
    let at = now();
    let until = stamp(at + lease);
    let backend = tx.get_database_backend();
    let mut pick = Sql::new(backend);
    pick.push("SELECT id FROM jobs WHERE queue = ")
        .bind(queue)
        .push(" AND ((status IN ('queued', 'failed') AND run_at <= ")
        .bind(at)
        .push(") OR (status = 'running' AND locked_until < ")
        .bind(at)
        .push(")) ORDER BY run_at, id LIMIT ")
        .bind(i64::try_from(limit.max(1)).unwrap_or(i64::MAX));
    if pick.is_postgres() {
        pick.push(" FOR UPDATE SKIP LOCKED");
    }
    let ids: Vec<String> = pick
        .all_as::<JobId, _>(&tx)
        .await?
        .into_iter()
        .map(|row| row.id)
        .collect();
    if ids.is_empty() {
        tx.commit().await?;
        return Ok(Vec::new());
    }
    let mut update = Sql::new(backend);
    update
        .push("UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = ")
        .bind(worker)
        .push(", locked_until = ")
        .bind(until)
        .push(", updated_at = ")
        .bind(at)
        .push(" WHERE id IN ");
    update.bind_list(ids.iter().cloned());
    update.execute(&tx).await?;
    let mut read = Sql::new(backend);
    read.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM jobs WHERE id IN ");
    read.bind_list(ids);
    read.push(" ORDER BY run_at, id");
    let rows = read.all_as::<JobRow, _>(&tx).await?;
    tx.commit().await?;
    Ok(rows)
}

#[derive(FromQueryResult)]
struct JobId {
    id: String,
}

/// How an attempt ended, for [`finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Failed; try again after `retry_in`, unless the job is out of attempts (then `dead`).
    Failed {
        error: String,
        retry_in: Duration,
    },
    /// Failed in a way no retry mends (the job's webhook is gone or disabled): `cancelled`.
    Abandoned {
        error: String,
    },
}

/// Ends `worker`'s attempt at job `id`; gives the status it ended in, or `None` when the job is
/// no longer this worker's (its lease ran out and another worker claimed it, or a person
/// cancelled it).
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(job = id, worker))]
pub async fn finish<C: TransactionTrait>(
    db: &C,
    id: &str,
    worker: &str,
    outcome: &Outcome,
) -> Result<Option<JobStatus>, StorageError> {
    let tx = begin_write(db).await?;
    let status = finish_in(&tx, id, worker, outcome).await?;
    tx.commit().await?;
    Ok(status)
}

/// [`finish`] inside the caller's write transaction (which logs the attempt in the same one).
///
/// # Errors
/// A database error.
pub async fn finish_in<C: ConnectionTrait>(
    tx: &C,
    id: &str,
    worker: &str,
    outcome: &Outcome,
) -> Result<Option<JobStatus>, StorageError> {
    let backend = tx.get_database_backend();
    let mut lock = Sql::new(backend);
    lock.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM jobs WHERE id = ")
        .bind(id);
    if lock.is_postgres() {
        // A claim of the same job (its lease ran out) waits for this finish, or this one for it.
        lock.push(" FOR UPDATE");
    }
    let Some(job) = lock.one_as::<JobRow, _>(tx).await? else {
        return Ok(None);
    };
    if job.status() != JobStatus::Running || job.locked_by.as_deref() != Some(worker) {
        return Ok(None);
    }
    let at = now();
    let (status, error, run_at) = match outcome {
        Outcome::Done => (JobStatus::Done, None, job.run_at),
        Outcome::Failed { error, retry_in } if job.attempts < job.max_attempts => (
            JobStatus::Failed,
            Some(error.as_str()),
            stamp(at + *retry_in),
        ),
        Outcome::Failed { error, .. } => (JobStatus::Dead, Some(error.as_str()), job.run_at),
        Outcome::Abandoned { error } => (JobStatus::Cancelled, Some(error.as_str()), job.run_at),
    };
    let mut sql = Sql::new(backend);
    sql.push("UPDATE jobs SET status = ")
        .bind(status.as_str())
        .push(", locked_by = NULL, locked_until = NULL, last_error = ")
        .bind(error.map(str::to_owned))
        .push(", run_at = ")
        .bind(run_at)
        .push(", updated_at = ")
        .bind(at)
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(tx).await?;
    Ok(Some(status))
}

/// The job `id`.
///
/// # Errors
/// A database error.
pub async fn find<C: ConnectionTrait>(db: &C, id: &str) -> Result<Option<JobRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM jobs WHERE id = ")
        .bind(id);
    sql.one_as(db).await
}

/// A page of jobs, newest first, of one status or all.
///
/// # Errors
/// A database error.
pub async fn list<C: ConnectionTrait>(
    db: &C,
    status: Option<JobStatus>,
    page: u64,
    per_page: u64,
) -> Result<Page<JobRow>, StorageError> {
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM jobs");
    if let Some(status) = status {
        count.push(" WHERE status = ").bind(status.as_str());
    }
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push("SELECT ").push(COLUMNS).push(" FROM jobs");
    if let Some(status) = status {
        sql.push(" WHERE status = ").bind(status.as_str());
    }
    sql.push(" ORDER BY created_at DESC, id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let rows = sql.all_as(db).await?;
    Ok(Page::new(rows, total, page, per_page))
}

/// How many jobs are in each status.
///
/// # Errors
/// A database error.
pub async fn counts<C: ConnectionTrait>(db: &C) -> Result<Vec<(JobStatus, u64)>, StorageError> {
    #[derive(FromQueryResult)]
    struct StatusCount {
        status: String,
        n: i64,
    }
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status");
    let rows: Vec<StatusCount> = sql.all_as(db).await?;
    Ok(JobStatus::ALL
        .into_iter()
        .map(|status| {
            let n = rows
                .iter()
                .find(|row| row.status == status.as_str())
                .map_or(0, |row| u64::try_from(row.n).unwrap_or(0));
            (status, n)
        })
        .collect())
}

/// Puts a failed, dead or cancelled job back in the queue, due now, with its attempts reset;
/// gives the job as it is now and whether it changed (not when it is in another status), `None`
/// when there is no such job.
///
/// # Errors
/// A database error.
pub async fn retry<C: TransactionTrait>(
    db: &C,
    id: &str,
) -> Result<Option<(JobRow, bool)>, StorageError> {
    change_status(
        db,
        id,
        &[JobStatus::Failed, JobStatus::Dead, JobStatus::Cancelled],
        "status = 'queued', attempts = 0, last_error = NULL",
    )
    .await
}

/// Cancels a queued or failed job; as [`retry`] for the answer.
///
/// # Errors
/// A database error.
pub async fn cancel<C: TransactionTrait>(
    db: &C,
    id: &str,
) -> Result<Option<(JobRow, bool)>, StorageError> {
    change_status(
        db,
        id,
        &[JobStatus::Queued, JobStatus::Failed],
        "status = 'cancelled'",
    )
    .await
}

async fn change_status<C: TransactionTrait>(
    db: &C,
    id: &str,
    from: &[JobStatus],
    set: &'static str,
) -> Result<Option<(JobRow, bool)>, StorageError> {
    let tx = begin_write(db).await?;
    let Some(job) = find(&tx, id).await? else {
        tx.commit().await?;
        return Ok(None);
    };
    if !from.contains(&job.status()) {
        tx.commit().await?;
        return Ok(Some((job, false)));
    }
    let at = now();
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE jobs SET ")
        .push(set)
        .push(", run_at = ")
        .bind(at)
        .push(", updated_at = ")
        .bind(at)
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(&tx).await?;
    let job = find(&tx, id).await?;
    tx.commit().await?;
    Ok(job.map(|job| (job, true)))
}

/// Deletes finished jobs (done, cancelled) last changed before `before`, and dead ones beyond
/// the newest `keep_dead`; gives how many went.
///
/// # Errors
/// A database error.
pub async fn prune<C: ConnectionTrait>(
    db: &C,
    before: OffsetDateTime,
    keep_dead: u64,
) -> Result<u64, StorageError> {
    let backend = db.get_database_backend();
    let mut finished = Sql::new(backend);
    finished
        .push("DELETE FROM jobs WHERE status IN ('done', 'cancelled') AND updated_at < ")
        .bind(stamp(before));
    let mut gone = finished.execute(db).await?;
    let mut dead = Sql::new(backend);
    dead.push("DELETE FROM jobs WHERE status = 'dead' AND id NOT IN (SELECT id FROM jobs WHERE status = 'dead' ORDER BY updated_at DESC, id DESC LIMIT ")
        .bind(i64::try_from(keep_dead).unwrap_or(i64::MAX))
        .push(")");
    gone += dead.execute(db).await?;
    Ok(gone)
}

/// How many jobs are waiting (queued or failed) or running: the queue's depth.
///
/// # Errors
/// A database error.
pub async fn depth<C: ConnectionTrait>(db: &C) -> Result<u64, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM jobs WHERE status IN ('queued', 'failed', 'running')");
    sql.count(db).await
}
