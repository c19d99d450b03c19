//! Background jobs (issue 24): the durable queue in the project's database
//! ([`vellum_storage::jobs`]), this process's worker ([`worker`]), and the jobs admin
//! (`can-show-jobs` to look, `can-manage-jobs` to retry and cancel).
//!
//! A job out of attempts is `dead`: kept (the newest [`KEPT_DEAD`]) for a person to look at and
//! retry. The retry schedule and this process's wake-up call are in [`crate::queue`].

mod screen;
pub mod worker;

pub use screen::{JobsScreen, screen};

use std::time::Duration;

use serde::Serialize;
use serde_json::Value as Json;
use vellum_storage::jobs::{self as stored, JobRow, JobStatus};

use crate::context::AppState;
use crate::error::AppError;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::query::{first, pairs};
pub use crate::queue::{backoff, jitter};
use crate::resources::timestamp;
pub use worker::start as start_worker;

/// Dead jobs kept; older ones are deleted by the worker's sweep.
pub const KEPT_DEAD: u64 = 10_000;
/// Done and cancelled jobs are deleted this long after they ended.
pub const KEEP_FINISHED: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// A job as the admin app shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobResource {
    pub id: String,
    pub queue: String,
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    pub run_at: Json,
    pub last_error: Option<String>,
    pub payload: Json,
    pub created_at: Json,
    pub updated_at: Json,
}

impl From<JobRow> for JobResource {
    fn from(row: JobRow) -> Self {
        let payload = row.payload_json().unwrap_or(Json::Null);
        Self {
            id: row.id,
            queue: row.queue,
            status: row.status,
            attempts: row.attempts,
            max_attempts: row.max_attempts,
            run_at: timestamp(Some(row.run_at)),
            last_error: row.last_error,
            payload,
            created_at: timestamp(Some(row.created_at)),
            updated_at: timestamp(Some(row.updated_at)),
        }
    }
}

/// A page of jobs, newest first; `?status=` one of queued, running, failed, dead, done,
/// cancelled.
///
/// # Errors
/// 403 without `can-show-jobs`, 422 for a bad page or status, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<Paginated<JobResource>, AppError> {
    principal.require("can-show-jobs")?;
    let pairs = pairs(query);
    let mut errors = vellum_domain::ValidationErrors::default();
    let paging = Paging::from_pairs(&pairs, &mut errors);
    let status = match first(&pairs, "status") {
        None | Some("") => None,
        Some(text) => {
            let status = JobStatus::parse(text);
            if status.is_none() {
                errors.add(
                    "status",
                    "The status must be one of: queued, running, failed, dead, done, cancelled.",
                );
            }
            status
        }
    };
    if !errors.is_empty() {
        return Err(AppError::Invalid(errors));
    }
    let page = stored::list(state.db(), status, paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, JobResource::from))
}

/// How many jobs are in each status (the jobs page's tabs).
///
/// # Errors
/// 403 without `can-show-jobs`, the database.
pub async fn counts(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<(JobStatus, u64)>, AppError> {
    principal.require("can-show-jobs")?;
    Ok(stored::counts(state.db()).await?)
}

/// One job.
///
/// # Errors
/// 403 without `can-show-jobs`, 404, the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<JobResource, AppError> {
    principal.require("can-show-jobs")?;
    let job = stored::find(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(JobResource::from(job))
}

/// Puts a failed, dead or cancelled job back in the queue with fresh attempts.
///
/// # Errors
/// 403 without `can-manage-jobs`, 404, 422 for a job in another status, the database.
pub async fn retry(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<JobResource, AppError> {
    principal.require("can-manage-jobs")?;
    let (job, changed) = stored::retry(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    if !changed {
        return Err(AppError::invalid(
            "job",
            "Only a failed, dead or cancelled job can be retried.",
        ));
    }
    state.jobs().wake();
    record(state, principal, "retried", &job.id).await;
    Ok(JobResource::from(job))
}

/// Cancels a queued or failed job.
///
/// # Errors
/// 403 without `can-manage-jobs`, 404, 422 for a job in another status, the database.
pub async fn cancel(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<JobResource, AppError> {
    principal.require("can-manage-jobs")?;
    let (job, changed) = stored::cancel(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    if !changed {
        return Err(AppError::invalid(
            "job",
            "Only a queued or failed job can be cancelled.",
        ));
    }
    record(state, principal, "cancelled", &job.id).await;
    Ok(JobResource::from(job))
}

async fn record(state: &AppState, principal: &Principal, event: &str, id: &str) {
    crate::activity::record(
        state,
        Some(principal.user_id()),
        crate::activity::Change::new("jobs", event).subject("job", id.to_owned()),
    )
    .await;
}
