//! The events webhooks subscribe to, their payloads and subscriptions: plain data, used by the
//! snapshot (which holds the subscriptions) and by `webhooks` (which queues and delivers).
//!
//! Payloads are thin: the event, when it happened, and what it is about (collection and item id,
//! or file id), never field values. A receiver that wants the item reads it through the API with
//! its own key and role, so a webhook can never show a field some role may not read, and a
//! payload is the same size whatever the item holds.
//!
//! The message (its id, timestamp and body) is fixed when the job is queued: every retry of the
//! job sends exactly the same signed bytes, so a receiver can drop a duplicate by `webhook-id`.

use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The job queue webhook deliveries run in.
pub const QUEUE: &str = "webhook";

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    ItemCreated,
    ItemUpdated,
    ItemDeleted,
    ItemRestored,
    FileUploaded,
    FileUpdated,
    FileDeleted,
}

impl Event {
    pub const ALL: [Self; 7] = [
        Self::ItemCreated,
        Self::ItemUpdated,
        Self::ItemDeleted,
        Self::ItemRestored,
        Self::FileUploaded,
        Self::FileUpdated,
        Self::FileDeleted,
    ];

    /// The name in payloads and webhook settings (`item.created`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::ItemCreated => "item.created",
            Self::ItemUpdated => "item.updated",
            Self::ItemDeleted => "item.deleted",
            Self::ItemRestored => "item.restored",
            Self::FileUploaded => "file.uploaded",
            Self::FileUpdated => "file.updated",
            Self::FileDeleted => "file.deleted",
        }
    }

    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The event of a file activity of the file manager (`uploaded`, `updated`, `replaced`,
    /// `moved`, `deleted`, `force_deleted`), if webhooks know it.
    #[must_use]
    pub fn of_file_activity(activity: &str) -> Option<Self> {
        match activity {
            "uploaded" | "copied" => Some(Self::FileUploaded),
            "updated" | "replaced" | "moved" => Some(Self::FileUpdated),
            "deleted" | "force_deleted" => Some(Self::FileDeleted),
            _ => None,
        }
    }

    fn is_item(self) -> bool {
        matches!(
            self,
            Self::ItemCreated | Self::ItemUpdated | Self::ItemDeleted | Self::ItemRestored
        )
    }
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject<'a> {
    Item { collection: &'a str, id: i64 },
    File { id: i64 },
}

/// The job of one delivery: the webhook and the message, fixed at queueing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub webhook_id: i64,
    pub event: String,
    /// The `webhook-id` header: the idempotency key, the same on every attempt and replay.
    pub message_id: String,
    /// The `webhook-timestamp` header, seconds since the epoch.
    pub timestamp: i64,
    /// The exact body sent.
    pub body: String,
}

/// The body of an event's message.
#[must_use]
pub fn body(event: Event, subject: &Subject<'_>, at: OffsetDateTime) -> String {
    let (data, keys) = match subject {
        Subject::Item { collection, id } => (
            json!({ "collection": collection, "id": id }),
            json!([
                format!("item:{collection}:{id}"),
                format!("items:{collection}"),
                format!("collection:{collection}"),
            ]),
        ),
        Subject::File { id } => (json!({ "id": id }), json!([format!("file:{id}"), "files"])),
    };
    // The purge hook: the cache tags (`Surrogate-Key`, `Cache-Tag`) of the public responses
    // this change makes stale, for a receiver that purges a CDN by tag.
    json!({
        "type": event.name(),
        "timestamp": at.format(&Rfc3339).unwrap_or_default(),
        "data": data,
        "surrogate_keys": keys,
    })
    .to_string()
}

/// A webhook as the snapshot holds it, for [`emit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub id: i64,
    pub enabled: bool,
    pub events: Vec<Event>,
    /// Item events only from these collections; empty means every collection.
    pub collections: Vec<String>,
}

impl Subscription {
    /// Reads a stored webhook (unknown event names are ignored).
    #[must_use]
    pub fn of(row: &vellum_storage::webhooks::WebhookRow) -> Self {
        let names: Vec<String> = serde_json::from_str(&row.events).unwrap_or_default();
        Self {
            id: i64::from(row.id),
            enabled: row.enabled,
            events: names.iter().filter_map(|n| Event::parse(n)).collect(),
            collections: serde_json::from_str(&row.collections).unwrap_or_default(),
        }
    }

    #[must_use]
    pub fn subscribes(&self, event: Event, collection: Option<&str>) -> bool {
        self.enabled
            && self.events.contains(&event)
            && (!event.is_item()
                || self.collections.is_empty()
                || collection.is_some_and(|c| self.collections.iter().any(|s| s == c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_round_trip() {
        for event in Event::ALL {
            assert_eq!(Event::parse(event.name()), Some(event));
        }
        assert_eq!(Event::parse("item.exploded"), None);
        assert_eq!(
            Event::of_file_activity("force_deleted"),
            Some(Event::FileDeleted)
        );
    }

    #[test]
    fn a_subscription_matches_its_events_and_collections() {
        let sub = Subscription {
            id: 1,
            enabled: true,
            events: vec![Event::ItemCreated, Event::FileUploaded],
            collections: vec!["articles".to_owned()],
        };
        assert!(sub.subscribes(Event::ItemCreated, Some("articles")));
        assert!(!sub.subscribes(Event::ItemCreated, Some("pages")));
        assert!(!sub.subscribes(Event::ItemUpdated, Some("articles")));
        assert!(sub.subscribes(Event::FileUploaded, None));
        let off = Subscription {
            enabled: false,
            ..sub
        };
        assert!(!off.subscribes(Event::ItemCreated, Some("articles")));
    }

    #[test]
    fn the_body_names_the_event_and_the_subject_only() {
        let at = OffsetDateTime::from_unix_timestamp(1_764_300_000).unwrap();
        let body = body(
            Event::ItemUpdated,
            &Subject::Item {
                collection: "articles",
                id: 7,
            },
            at,
        );
        assert_eq!(
            body,
            r#"{"type":"item.updated","timestamp":"2025-11-28T03:20:00Z","data":{"collection":"articles","id":7},"surrogate_keys":["item:articles:7","items:articles","collection:articles"]}"#
        );
    }
}
