//! The jobs (`GET /jobs`): the queue's jobs newest first, a tab per status with its count, and
//! Retry and Cancel (htmx) where the job's status allows them and the user may manage jobs.

use askama::Template;
use serde_json::Value;
use vellum_app::jobs::{JobResource, JobsScreen};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::format::moment;
use crate::paging::{Pager, param};

/// The longest last error the table shows whole; a longer one opens in a disclosure.
const SHORT_ERROR: usize = 80;

#[derive(Debug, Clone, Template)]
#[template(path = "jobs.html")]
pub struct JobsPage {
    pub chrome: Chrome,
    pub tabs: Vec<StatusTab>,
    pub rows: Vec<JobRow>,
    /// Jobs in the list as filtered.
    pub total: u64,
    /// Jobs in the queue, whatever their status (the empty state tells "none yet" apart).
    pub all: u64,
    /// The status filtered by, if any.
    pub status: Option<String>,
    pub pager: Pager,
    pub can_manage: bool,
    /// "Queued again." (`?retried=1`) or "Cancelled." (`?cancelled=1`).
    pub notice: Option<&'static str>,
}

/// One tab of the status filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusTab {
    pub label: String,
    pub href: String,
    pub count: u64,
    pub current: bool,
}

/// One job as the table shows it.
#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: String,
    /// The id's first eight characters (the whole one is in the row's `title`).
    pub short_id: String,
    pub queue: String,
    /// What the job does, from its payload (`item.created → webhook 3`), or empty.
    pub what: String,
    pub status: String,
    pub attempts: i32,
    pub max_attempts: i32,
    /// When it runs next: only for a job still waiting (queued, failed).
    pub next_run: String,
    pub error: String,
    /// The error's start when it is too long to show whole.
    pub error_start: Option<String>,
    pub created: String,
    pub can_retry: bool,
    pub can_cancel: bool,
}

impl JobsPage {
    #[must_use]
    pub fn new(principal: &Principal, screen: JobsScreen, query: &str) -> Self {
        let all = screen.counts.iter().map(|(_, n)| n).sum();
        let current = screen.status.as_deref();
        let mut tabs = vec![StatusTab {
            label: "All".to_owned(),
            href: "/jobs".to_owned(),
            count: all,
            current: current.is_none(),
        }];
        tabs.extend(screen.counts.iter().map(|(status, count)| StatusTab {
            label: capitalized(status),
            href: format!("/jobs?status={status}"),
            count: *count,
            current: current == Some(*status),
        }));
        let notice = if param(query, "retried").is_some() {
            Some("Job queued again: it runs now, with fresh attempts.")
        } else if param(query, "cancelled").is_some() {
            Some("Job cancelled: it will not run.")
        } else {
            None
        };
        let kept = without(query, &["retried", "cancelled"]);
        Self {
            chrome: Chrome::new(principal, "jobs"),
            tabs,
            total: screen.page.meta.total,
            all,
            pager: Pager::new(
                "/jobs",
                &kept,
                screen.page.meta.current_page,
                screen.page.meta.last_page,
            ),
            rows: screen
                .page
                .data
                .iter()
                .map(|job| row(job, screen.can_manage))
                .collect(),
            status: screen.status,
            can_manage: screen.can_manage,
            notice,
        }
    }
}

fn row(job: &JobResource, can_manage: bool) -> JobRow {
    let status = job.status.as_str();
    let waiting = matches!(status, "queued" | "failed");
    let error = job.last_error.clone().unwrap_or_default();
    let error_start = (error.chars().count() > SHORT_ERROR)
        .then(|| format!("{}…", error.chars().take(SHORT_ERROR).collect::<String>()));
    JobRow {
        id: job.id.clone(),
        short_id: job.id.chars().take(8).collect(),
        queue: job.queue.clone(),
        what: what(&job.payload),
        status: job.status.clone(),
        attempts: job.attempts,
        max_attempts: job.max_attempts,
        next_run: if waiting {
            moment(&job.run_at)
        } else {
            String::new()
        },
        error,
        error_start,
        created: moment(&job.created_at),
        can_retry: can_manage && matches!(status, "failed" | "dead" | "cancelled"),
        can_cancel: can_manage && waiting,
    }
}

/// A webhook delivery's event and webhook; nothing for a payload of another shape.
fn what(payload: &Value) -> String {
    let event = payload.get("event").and_then(Value::as_str);
    let hook = payload.get("webhook_id").and_then(Value::as_i64);
    match (event, hook) {
        (Some(event), Some(hook)) => format!("{event} → webhook {hook}"),
        (Some(event), None) => event.to_owned(),
        (None, _) => String::new(),
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `query` without the parameters named in `drop` (a notice is not carried to the next page).
pub(crate) fn without(query: &str, drop: &[&str]) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        if !drop.contains(&k.as_ref()) {
            out.append_pair(&k, &v);
        }
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(status: &str, error: Option<&str>) -> JobResource {
        JobResource {
            id: "0123456789abcdef".to_owned(),
            queue: "webhook".to_owned(),
            status: status.to_owned(),
            attempts: 2,
            max_attempts: 12,
            run_at: json!("2026-11-26T22:10:59Z"),
            last_error: error.map(str::to_owned),
            payload: json!({"event": "item.created", "webhook_id": 3}),
            created_at: json!("2026-11-26T22:00:00Z"),
            updated_at: json!("2026-11-26T22:00:00Z"),
        }
    }

    #[test]
    fn retry_and_cancel_are_offered_where_the_status_allows_them() {
        let offered = |status| {
            let r = row(&job(status, None), true);
            (r.can_retry, r.can_cancel)
        };
        assert_eq!(offered("queued"), (false, true));
        assert_eq!(offered("running"), (false, false));
        assert_eq!(offered("failed"), (true, true));
        assert_eq!(offered("dead"), (true, false));
        assert_eq!(offered("done"), (false, false));
        assert_eq!(offered("cancelled"), (true, false));
        let viewer = row(&job("failed", None), false);
        assert!(!viewer.can_retry && !viewer.can_cancel);
    }

    #[test]
    fn a_row_reads_for_people() {
        let r = row(&job("failed", Some(&"x".repeat(100))), false);
        assert_eq!(r.short_id, "01234567");
        assert_eq!(r.what, "item.created → webhook 3");
        assert_eq!(r.next_run, "2026-11-26 22:10 UTC");
        assert_eq!(r.error_start.map(|s| s.chars().count()), Some(81));
        let done = row(&job("done", Some("short")), false);
        assert_eq!((done.next_run.as_str(), done.error_start), ("", None));
        assert_eq!(what(&json!({"other": 1})), "");
        assert_eq!(capitalized("queued"), "Queued");
        assert_eq!(
            without("status=dead&retried=1&page=2", &["retried"]),
            "status=dead&page=2"
        );
    }
}
