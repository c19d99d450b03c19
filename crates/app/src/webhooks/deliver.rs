//! One delivery attempt: read the webhook as it is now, sign the queued message with its secret,
//! send it, log the attempt, and say how the job ends (done, retry later, or abandoned when the
//! webhook is gone or disabled).

use vellum_storage::jobs::{JobRow, Outcome};
use vellum_storage::webhooks::{self as stored, DisableAfter, NewDelivery};

use super::outbound::Message;
use super::signing;
use crate::context::AppState;
use crate::telemetry::error_chain;
use crate::webhook_events::Delivery;

/// Runs the attempt of `job` (claimed, so `job.attempts` counts this one).
pub(crate) async fn attempt(state: &AppState, job: &JobRow) -> Outcome {
    let delivery: Delivery = match serde_json::from_str(&job.payload) {
        Ok(delivery) => delivery,
        Err(_) => return abandon("the job's payload is not a webhook delivery"),
    };
    let hook = match stored::find(state.db(), delivery.webhook_id).await {
        Ok(Some(hook)) => hook,
        Ok(None) => return abandon("the webhook was deleted"),
        Err(err) => {
            return retry(
                state,
                job,
                format!("reading the webhook failed: {}", error_chain(&err)),
            );
        }
    };
    if !hook.enabled {
        return abandon("the webhook is disabled");
    }
    let Some(key) = signing::secret_key(&hook.secret) else {
        return abandon("the webhook's secret is not a whsec_ key");
    };
    let Some(signature) = signing::signature(
        &key,
        &delivery.message_id,
        delivery.timestamp,
        &delivery.body,
    ) else {
        return abandon("the message could not be signed");
    };
    let Some(outbound) = state.jobs().outbound() else {
        return retry(state, job, "the webhook client is not running".to_owned());
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
    let limit = DisableAfter(state.config().jobs.disable_after);
    match stored::record_delivery(state.db(), &logged, limit).await {
        Ok(true) => {
            tracing::warn!(
                webhook = delivery.webhook_id,
                "webhooks: disabled after repeated failures"
            );
            // The snapshot's subscriptions change: no more deliveries are queued for it.
            state.content_changed().await;
        }
        Ok(false) => {}
        Err(err) => {
            tracing::warn!(error = %error_chain(&err), "webhooks: logging a delivery failed");
        }
    }
    match response.error {
        None => Outcome::Done,
        Some(error) => retry(state, job, error),
    }
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
