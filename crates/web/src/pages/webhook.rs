//! One webhook (`GET /settings/webhooks/{id}`): its settings, its signing secret behind a
//! disclosure, and its delivery log newest first, each delivery with Replay (htmx).

use askama::Template;
use vellum_app::paging::Paginated;
use vellum_app::principal::Principal;
use vellum_app::webhooks::{DeliveryResource, WebhookResource};

use crate::chrome::Chrome;
use crate::format::moment;
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "webhook.html")]
pub struct WebhookPage {
    pub chrome: Chrome,
    pub id: i64,
    pub name: String,
    pub url: String,
    pub events: String,
    /// Empty: every collection.
    pub collections: String,
    pub enabled: bool,
    pub disabled_reason: String,
    pub failures: i32,
    pub secret: String,
    pub rows: Vec<DeliveryRow>,
    pub total: u64,
    pub pager: Pager,
    /// "Queued again." after a replay (`?replayed=1`).
    pub replayed: bool,
}

/// One logged delivery attempt as the table shows it.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    pub id: i64,
    pub when: String,
    pub event: String,
    pub attempt: i32,
    /// `delivered` or `failed`.
    pub status: String,
    pub response_code: String,
    pub duration_ms: i32,
    pub error: String,
}

impl WebhookPage {
    #[must_use]
    pub fn new(
        principal: &Principal,
        hook: WebhookResource,
        log: Paginated<DeliveryResource>,
        query: &str,
    ) -> Self {
        let names = |value: &serde_json::Value| {
            value
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(serde_json::Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let path = format!("/settings/webhooks/{}", hook.id);
        let kept = crate::pages::jobs::without(query, &["replayed"]);
        Self {
            chrome: Chrome::new(principal, "webhooks"),
            id: hook.id,
            events: names(&hook.events),
            collections: names(&hook.collections),
            name: hook.name,
            url: hook.url,
            enabled: hook.enabled,
            disabled_reason: hook.disabled_reason.unwrap_or_default(),
            failures: hook.failures,
            secret: hook.secret.unwrap_or_default(),
            total: log.meta.total,
            pager: Pager::new(&path, &kept, log.meta.current_page, log.meta.last_page),
            rows: log.data.into_iter().map(row).collect(),
            replayed: param(query, "replayed").is_some(),
        }
    }
}

fn row(delivery: DeliveryResource) -> DeliveryRow {
    DeliveryRow {
        id: delivery.id,
        when: moment(&delivery.created_at),
        event: delivery.event,
        attempt: delivery.attempt,
        status: delivery.status,
        response_code: delivery
            .response_code
            .map(|c| c.to_string())
            .unwrap_or_default(),
        duration_ms: delivery.duration_ms,
        error: delivery.error.unwrap_or_default(),
    }
}
