//! One delivery attempt: read the webhook as it is now, sign the queued message with its secret,
//! send it, and end the job (done, retry later, or abandoned when the webhook is gone or
//! disabled) in the same write transaction that logs the attempt.

use vellum_storage::StorageError;
use vellum_storage::jobs::{self as queue, JobRow, JobStatus, Outcome};
use vellum_storage::webhooks::{self as stored, DisableAfter, NewDelivery};

use super::outbound::Message;
use super::signing;
use crate::context::AppState;
use crate::telemetry::error_chain;
use crate::webhook_events::Delivery;

/// Runs `worker`'s attempt at `job` (claimed, so `job.attempts` counts this one) and ends it;
/// gives the status it ended in (`None`: the job was no longer this worker's).
///
/// # Errors
/// The database, when the attempt could not be ended (its lease then runs out and another
/// attempt follows).
pub(crate) async fn run(
    state: &AppState,
    worker: &str,
    job: &JobRow,
) -> Result<Option<JobStatus>, StorageError> {
    match attempt(state, worker, job).await {
        Attempted::Logged(status) => status,
        Attempted::Unsent(outcome) => queue::finish(state.db(), &job.id, worker, &outcome).await,
    }
}

/// How an attempt went: sent and ended with its log, or ended before anything was sent.
enum Attempted {
    Logged(Result<Option<JobStatus>, StorageError>),
    Unsent(Outcome),
}

async fn attempt(state: &AppState, worker: &str, job: &JobRow) -> Attempted {
    match send(state, worker, job).await {
        Ok(logged) => Attempted::Logged(logged),
        Err(outcome) => Attempted::Unsent(outcome),
    }
}

/// Sends the message and ends the job with its log; `Err` with how the job ends when nothing
/// was sent.
async fn send(
    state: &AppState,
    worker: &str,
    job: &JobRow,
) -> Result<Result<Option<JobStatus>, StorageError>, Outcome> {
    let delivery: Delivery = match serde_json::from_str(&job.payload) {
        Ok(delivery) => delivery,
        Err(_) => return Err(abandon("the job's payload is not a webhook delivery")),
    };
    let hook = match stored::find(state.db(), delivery.webhook_id).await {
        Ok(Some(hook)) => hook,
        Ok(None) => return Err(abandon("the webhook was deleted")),
        Err(err) => {
            return Err(retry(
                state,
                job,
                format!("reading the webhook failed: {}", error_chain(&err)),
            ));
        }
    };
    if !hook.enabled {
        return Err(abandon("the webhook is disabled"));
    }
    let Some(key) = signing::secret_key(&hook.secret) else {
        return Err(abandon("the webhook's secret is not a whsec_ key"));
    };
    let Some(signature) = signing::signature(
        &key,
        &delivery.message_id,
        delivery.timestamp,
        &delivery.body,
    ) else {
        return Err(abandon("the message could not be signed"));
    };
    let Some(outbound) = state.jobs().outbound() else {
        return Err(retry(
            state,
            job,
            "the webhook client is not running".to_owned(),
        ));
    };
    let response = outbound
        .send(Message {
            url: &hook.url,
            id: &delivery.message_id,
            timestamp: delivery.timestamp,
            signature: &signature,
            body: &delivery.body,
        })
        .await;
    let logged = NewDelivery {
        webhook_id: delivery.webhook_id,
        job_id: &job.id,
        event: &delivery.event,
        attempt: job.attempts,
        delivered: response.delivered(),
        response_code: response.status,
        duration_ms: u64::try_from(response.duration.as_millis()).unwrap_or(u64::MAX),
        error: response.error.as_deref(),
    };
    let outcome = match &response.error {
        None => Outcome::Done,
        Some(error) => retry(state, job, error.clone()),
    };
    let limit = DisableAfter(state.config().jobs.disable_after);
    let ended = stored::finish_delivery(state.db(), worker, &outcome, &logged, limit).await;
    if let Ok((_, true)) = ended {
        tracing::warn!(
            webhook = delivery.webhook_id,
            "webhooks: disabled after repeated failures"
        );
        // The snapshot's subscriptions change: no more deliveries are queued for it.
        state.invalidate().await;
    }
    Ok(ended.map(|(status, _)| status))
}

fn abandon(error: &str) -> Outcome {
    Outcome::Abandoned {
        error: error.to_owned(),
    }
}

fn retry(state: &AppState, job: &JobRow, error: String) -> Outcome {
    let attempts = u32::try_from(job.attempts).unwrap_or(u32::MAX);
    Outcome::Failed {
        error,
        retry_in: crate::queue::backoff(&state.config().jobs, attempts, crate::queue::jitter()),
    }
}
