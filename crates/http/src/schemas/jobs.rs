//! Jobs and webhooks (issue 24) in the OpenAPI description; checked by the black-box suite like
//! every admin shape.

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// A job of the durable queue.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// A UUID.
    pub id: String,
    /// The job's kind: `webhook`.
    pub queue: String,
    /// `queued`, `running`, `failed` (waiting for its next attempt), `dead`, `done`, `cancelled`.
    pub status: String,
    pub attempts: i64,
    pub max_attempts: i64,
    /// When the next attempt is due (for `queued` and `failed`).
    pub run_at: String,
    pub last_error: Option<String>,
    /// For `webhook`: `webhook_id`, `event`, `message_id`, `timestamp`, `body`.
    #[schema(value_type = Object)]
    pub payload: Value,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobPage {
    pub data: Vec<Job>,
    pub meta: PaginationMeta,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JobEnvelope {
    pub data: Job,
}

/// The jobs list's query.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobParams {
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
    /// Only jobs in this status.
    #[param(nullable = false)]
    pub status: Option<String>,
}

/// A webhook. `secret` (`whsec_…`) only when one webhook is shown or created.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub id: i64,
    pub name: String,
    pub url: String,
    /// Of `item.created`, `item.updated`, `item.deleted`, `item.restored`, `file.uploaded`,
    /// `file.updated`, `file.deleted`.
    pub events: Vec<String>,
    /// Item events only from these collections; empty: every collection.
    pub collections: Vec<String>,
    pub enabled: bool,
    /// Consecutive failed deliveries.
    pub failures: i64,
    pub disabled_reason: Option<String>,
    #[schema(nullable = false)]
    pub secret: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookList {
    pub data: Vec<Webhook>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookEnvelope {
    pub data: Webhook,
}

/// A webhook to create or the fields to change.
#[derive(Debug, ToSchema, Serialize)]
pub struct WebhookInput {
    pub name: Option<String>,
    /// http or https; private and loopback addresses are refused unless the operator allows them.
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub collections: Option<Vec<String>>,
    /// `whsec_` and 24 to 64 base64 bytes; generated when absent.
    pub secret: Option<String>,
    pub enabled: Option<bool>,
}

/// One delivery attempt.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    pub id: i64,
    pub job_id: String,
    pub event: String,
    pub attempt: i64,
    /// `delivered` or `failed`.
    pub status: String,
    pub response_code: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub created_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryPage {
    pub data: Vec<Delivery>,
    pub meta: PaginationMeta,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Replayed {
    pub message_id: String,
    pub event: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayedEnvelope {
    pub data: Replayed,
}
