//! The activity log (`GET /activity-logs`): newest first, filtered by log, subject and user.

use askama::Template;
use serde_json::Value;
use vellum_app::activity::ActivityResource;
use vellum_app::paging::Paginated;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::format::moment;
use crate::paging::{Pager, param};

#[derive(Debug, Clone, Template)]
#[template(path = "activity.html")]
pub struct ActivityPage {
    pub chrome: Chrome,
    pub rows: Vec<ActivityRow>,
    pub total: u64,
    /// The filters as given (shown in the form).
    pub log_name: String,
    pub subject_type: String,
    pub subject_id: String,
    pub user_id: String,
    pub pager: Pager,
}

/// One entry as the table shows it.
#[derive(Debug, Clone)]
pub struct ActivityRow {
    pub when: String,
    pub who: String,
    pub log_name: String,
    pub event: String,
    pub subject: String,
    pub changed: String,
}

impl ActivityPage {
    /// The page for `list`, answered for the raw `query` (already validated by the use case).
    #[must_use]
    pub fn new(principal: &Principal, list: Paginated<ActivityResource>, query: &str) -> Self {
        let text = |key| param(query, key).unwrap_or_default();
        Self {
            chrome: Chrome::new(principal, "activity"),
            total: list.meta.total,
            pager: Pager::new(
                "/activity-logs",
                query,
                list.meta.current_page,
                list.meta.last_page,
            ),
            rows: list.data.into_iter().map(row).collect(),
            log_name: text("log_name"),
            subject_type: text("subject_type"),
            subject_id: text("subject_id"),
            user_id: text("user_id"),
        }
    }

    /// Whether any filter is set (the empty state says so).
    #[must_use]
    pub fn filtered(&self) -> bool {
        [
            &self.log_name,
            &self.subject_type,
            &self.subject_id,
            &self.user_id,
        ]
        .iter()
        .any(|v| !v.is_empty())
    }
}

fn row(entry: ActivityResource) -> ActivityRow {
    let subject = match (entry.subject_type, entry.subject_id) {
        (Some(t), Some(id)) => format!("{t} {id}"),
        (Some(t), None) => t,
        (None, Some(id)) => id,
        (None, None) => String::new(),
    };
    let changed = entry
        .properties
        .get("changed")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    ActivityRow {
        when: moment(&entry.created_at),
        who: entry.user.map_or_else(|| "—".to_owned(), |u| u.name),
        log_name: entry.log_name,
        event: entry.event,
        subject,
        changed,
    }
}
