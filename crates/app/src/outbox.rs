//! The outbox of webhook events: a use case that changed an item or a file calls [`emit`] once
//! its write is committed, and one job per subscribed webhook is queued. The events, payloads and
//! subscriptions are in [`crate::webhook_events`]; delivery is `webhooks`'.

use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_storage::jobs::{self, NewJob};

use crate::context::AppState;
use crate::telemetry::error_chain;
use crate::webhook_events::{Delivery, Event, QUEUE, Subject, body};

/// Queues one delivery per enabled webhook subscribed to `event` (and, for an item event, to its
/// collection). Called after the write is committed; a failure to queue is logged, not returned,
/// since the change itself stands.
pub async fn emit(state: &AppState, event: Event, subject: Subject<'_>) {
    let Ok(snapshot) = state.snapshot().await else {
        tracing::warn!(
            event = event.name(),
            "webhooks: the project could not be read; no delivery queued"
        );
        return;
    };
    let collection = match &subject {
        Subject::Item { collection, .. } => Some(*collection),
        Subject::File { .. } => None,
    };
    let hooks: Vec<i64> = snapshot
        .webhooks
        .iter()
        .filter(|hook| hook.subscribes(event, collection))
        .map(|hook| hook.id)
        .collect();
    if hooks.is_empty() {
        return;
    }
    let at = OffsetDateTime::now_utc();
    let body = body(event, &subject, at);
    let payloads: Vec<Json> = hooks
        .into_iter()
        .filter_map(|webhook_id| {
            serde_json::to_value(Delivery {
                webhook_id,
                event: event.name().to_owned(),
                message_id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
                timestamp: at.unix_timestamp(),
                body: body.clone(),
            })
            .ok()
        })
        .collect();
    if let Err(err) = queue(state, &payloads).await {
        tracing::error!(event = event.name(), error = %error_chain(&err), "webhooks: queueing deliveries failed");
    }
}

/// Queues deliveries (one transaction) and wakes this process's worker.
pub(crate) async fn queue(
    state: &AppState,
    payloads: &[Json],
) -> Result<(), vellum_storage::StorageError> {
    let max_attempts = state.config().jobs.max_attempts;
    let news: Vec<NewJob<'_>> = payloads
        .iter()
        .map(|payload| NewJob {
            queue: QUEUE,
            payload,
            max_attempts,
        })
        .collect();
    jobs::enqueue_all(state.db(), &news).await?;
    state.jobs().wake();
    Ok(())
}
