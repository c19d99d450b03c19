//! The webhooks (`GET /settings/webhooks`): each webhook with its events, collections and state
//! (disabled, and why), the create form, the signing secret of a webhook just created (shown in
//! the answer to the post, with a copy button) and deletion with htmx.

use askama::Template;
use serde_json::Value;
use vellum_app::principal::Principal;
use vellum_app::webhooks::{WebhookResource, WebhooksScreen};

use crate::chrome::Chrome;
use crate::forms::FieldErrors;
use crate::paging::param;

/// The form's fields, in the order of its inputs (the rest of a 422 is shown above it).
const FORM_FIELDS: [&str; 5] = ["name", "url", "events", "collections", "enabled"];

#[derive(Debug, Clone, Template)]
#[template(path = "webhooks.html")]
pub struct WebhooksPage {
    pub chrome: Chrome,
    pub rows: Vec<WebhookRow>,
    /// Every event name, for the form's checkboxes.
    pub events: Vec<&'static str>,
    /// The project's collections as `(slug, name)`, for the form's checkboxes.
    pub collections: Vec<(String, String)>,
    /// The webhook just created and its secret.
    pub created: Option<(String, String)>,
    /// The create form: empty (enabled), or as posted when it was refused.
    pub form: WebhookForm,
    pub errors: FieldErrors,
    /// "Webhook deleted." after a deletion (`?deleted=1`).
    pub deleted: bool,
}

/// One webhook as the table shows it.
#[derive(Debug, Clone)]
pub struct WebhookRow {
    pub id: i64,
    pub name: String,
    pub url: String,
    pub events: Vec<String>,
    /// The collections its item events are limited to; empty: every collection.
    pub collections: Vec<String>,
    pub enabled: bool,
    pub disabled_reason: String,
    pub failures: i32,
}

/// The create form's fields as the user gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookForm {
    pub name: String,
    pub url: String,
    pub events: Vec<String>,
    pub collections: Vec<String>,
    pub enabled: bool,
}

impl Default for WebhookForm {
    /// The empty form: a new webhook is enabled unless the user unticks it.
    fn default() -> Self {
        Self {
            name: String::new(),
            url: String::new(),
            events: Vec::new(),
            collections: Vec::new(),
            enabled: true,
        }
    }
}

impl WebhookForm {
    /// The form as posted (`events` and `collections` repeat; an unticked box is absent).
    #[must_use]
    pub fn posted(form: &[(String, String)]) -> Self {
        let text = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let all = |name: &str| -> Vec<String> {
            form.iter()
                .filter(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| v.clone())
                .collect()
        };
        Self {
            name: text("name"),
            url: text("url"),
            events: all("events"),
            collections: all("collections"),
            enabled: form.iter().any(|(k, _)| k == "enabled"),
        }
    }

    /// The body the create use case takes.
    #[must_use]
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "url": self.url.trim(),
            "events": self.events,
            "collections": self.collections,
            "enabled": self.enabled,
        })
    }

    #[must_use]
    pub fn has_event(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }

    #[must_use]
    pub fn has_collection(&self, slug: &str) -> bool {
        self.collections.iter().any(|c| c == slug)
    }
}

impl WebhooksPage {
    #[must_use]
    pub fn new(principal: &Principal, screen: WebhooksScreen, query: &str) -> Self {
        Self {
            chrome: Chrome::new(principal, "webhooks"),
            rows: screen.hooks.iter().map(row).collect(),
            events: screen.events,
            collections: screen
                .collections
                .into_iter()
                .map(|c| (c.slug, c.name))
                .collect(),
            created: None,
            form: WebhookForm::default(),
            errors: FieldErrors::default(),
            deleted: param(query, "deleted").is_some(),
        }
    }

    /// The page after a webhook was created: its signing secret.
    #[must_use]
    pub fn with_created(mut self, name: String, secret: String) -> Self {
        self.created = Some((name, secret));
        self
    }

    /// The page after a refused create: the form as posted, each problem next to its field.
    #[must_use]
    pub fn with_refusal(mut self, form: WebhookForm, errors: FieldErrors) -> Self {
        self.form = form;
        self.errors = errors;
        self
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&FORM_FIELDS)
    }
}

fn row(hook: &WebhookResource) -> WebhookRow {
    let names = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    WebhookRow {
        id: hook.id,
        name: hook.name.clone(),
        url: hook.url.clone(),
        events: names(&hook.events),
        collections: names(&hook.collections),
        enabled: hook.enabled,
        disabled_reason: hook.disabled_reason.clone().unwrap_or_default(),
        failures: hook.failures,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_posted_form_becomes_the_body_the_use_case_takes() {
        let form = WebhookForm::posted(&pairs(&[
            ("name", "site"),
            ("url", " https://example.com/hook "),
            ("events", "item.created"),
            ("events", "file.deleted"),
            ("collections", "articles"),
            ("enabled", "1"),
        ]));
        assert_eq!(
            form.to_json(),
            json!({"name": "site", "url": "https://example.com/hook", "events": ["item.created", "file.deleted"], "collections": ["articles"], "enabled": true})
        );
        assert!(form.has_event("file.deleted") && !form.has_event("item.updated"));
        assert!(form.has_collection("articles"));
        let unticked = WebhookForm::posted(&pairs(&[("name", "x")]));
        assert_eq!(
            unticked.to_json(),
            json!({"name": "x", "url": "", "events": [], "collections": [], "enabled": false})
        );
        assert!(
            WebhookForm::default().enabled,
            "a new webhook starts enabled"
        );
    }
}
