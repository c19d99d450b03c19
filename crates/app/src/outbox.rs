//! The outbox of webhook events. The item use cases decide their deliveries before the write
//! ([`Pending`]) and queue them inside the write's own transaction ([`with_outbox`]), so a
//! committed write never loses its deliveries; the other writers call [`emit`] once their write
//! is committed. The events, payloads and
//! subscriptions are in [`crate::webhook_events`]; delivery is `webhooks`'.

use serde_json::Value as Json;
use time::OffsetDateTime;
use vellum_storage::jobs::{self, NewJob};

use crate::context::AppState;
use crate::snapshot::Snapshot;
use crate::telemetry::error_chain;
use crate::webhook_events::{Delivery, Event, QUEUE, Subject, body};

/// The deliveries one event will queue: the webhooks subscribed to it (and, for an item event,
/// to its collection) in the snapshot the write acts on, and the time the message carries.
/// `None` when no webhook is subscribed: a project without webhooks pays nothing.
#[derive(Debug)]
pub(crate) struct Pending {
    event: Event,
    collection: Option<String>,
    hooks: Vec<i64>,
    at: OffsetDateTime,
}

impl Pending {
    pub(crate) fn of(snapshot: &Snapshot, event: Event, collection: Option<&str>) -> Option<Self> {
        let hooks: Vec<i64> = snapshot
            .webhooks
            .iter()
            .filter(|hook| hook.subscribes(event, collection))
            .map(|hook| hook.id)
            .collect();
        (!hooks.is_empty()).then(|| Self {
            event,
            collection: collection.map(str::to_owned),
            hooks,
            at: OffsetDateTime::now_utc(),
        })
    }

    /// One job payload per webhook for the item (or file) `id`: the message, its id and
    /// timestamp fixed now, so every attempt and replay sends the same signed bytes.
    pub(crate) fn payloads(&self, id: i64) -> Vec<Json> {
        let subject = match &self.collection {
            Some(collection) => Subject::Item { collection, id },
            None => Subject::File { id },
        };
        let body = body(self.event, &subject, self.at);
        self.hooks
            .iter()
            .filter_map(|&webhook_id| {
                serde_json::to_value(Delivery {
                    webhook_id,
                    event: self.event.name().to_owned(),
                    message_id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
                    timestamp: self.at.unix_timestamp(),
                    body: body.clone(),
                })
                .ok()
            })
            .collect()
    }
}

impl Pending {
    /// The storage outbox that queues these deliveries inside the write's own transaction;
    /// wake the workers with [`queued`] once it commits.
    pub(crate) fn outbox<'a>(&'a self, state: &AppState) -> jobs::Outbox<'a> {
        jobs::Outbox {
            queue: QUEUE,
            max_attempts: state.config().jobs.max_attempts,
            payloads: self,
        }
    }
}

impl jobs::Payloads for Pending {
    fn payloads(&self, id: i64) -> Vec<Json> {
        Pending::payloads(self, id)
    }
}

/// Wakes the workers after a write that queued `pending`'s deliveries committed.
pub(crate) fn queued(state: &AppState, pending: Option<&Pending>) {
    if pending.is_some() {
        state.jobs().wake();
    }
}

/// Queues one delivery per enabled webhook subscribed to `event` (and, for an item event, to its
/// collection), after a write that could not queue them in its own transaction (the admin app's
/// restore and force delete, the file manager). A failure to queue is logged, not returned,
/// since the change itself stands.
pub async fn emit(state: &AppState, event: Event, subject: Subject<'_>) {
    let Ok(snapshot) = state.snapshot().await else {
        tracing::warn!(
            event = event.name(),
            "webhooks: the project could not be read; no delivery queued"
        );
        return;
    };
    let (collection, id) = match &subject {
        Subject::Item { collection, id } => (Some(*collection), *id),
        Subject::File { id } => (None, *id),
    };
    let Some(pending) = Pending::of(&snapshot, event, collection) else {
        return;
    };
    if let Err(err) = queue(state, &pending.payloads(id)).await {
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
