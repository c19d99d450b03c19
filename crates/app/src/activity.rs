//! The activity log of admin mutations: recorded by the use case that made the change (so no
//! surface can forget it), read with `can-show-activity-logs`. An entry names the changed keys,
//! never their values: no password, code, secret or session id is ever written here.

use serde_json::{Value as Json, json};
use vellum_storage::Database;
use vellum_storage::activity::{self as store, NewActivity};

use crate::context::AppState;
use crate::telemetry::error_chain;

/// What changed, for [`record`].
#[derive(Debug, Clone, PartialEq)]
pub struct Change<'a> {
    /// The area: `auth`, `users`, `groups`, `roles`, `permissions`, `api_keys`, `settings`.
    pub log: &'a str,
    /// What happened: `created`, `updated`, `deleted`, `restored`, `force_deleted`, `signed_in`…
    pub event: &'a str,
    /// The kind and id of what changed (`user` 7, `role` "editor").
    pub subject: Option<(&'a str, String)>,
    /// The names of the changed keys (never values).
    pub changed: Vec<String>,
    /// Anything else worth keeping that is not a secret (ids, counts).
    pub extra: Json,
}

impl<'a> Change<'a> {
    #[must_use]
    pub fn new(log: &'a str, event: &'a str) -> Self {
        Self {
            log,
            event,
            subject: None,
            changed: Vec::new(),
            extra: Json::Null,
        }
    }

    #[must_use]
    pub fn subject(mut self, kind: &'a str, id: impl ToString) -> Self {
        self.subject = Some((kind, id.to_string()));
        self
    }

    #[must_use]
    pub fn changed<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.changed = keys.into_iter().map(Into::into).collect();
        self
    }

    #[must_use]
    pub fn extra(mut self, extra: Json) -> Self {
        self.extra = extra;
        self
    }
}

/// Records `change` made by `user_id`. A failure to log is itself logged, not returned: the
/// change has been made and the client must learn that it was.
pub async fn record(state: &AppState, user_id: Option<i64>, change: Change<'_>) {
    record_in(state.db(), user_id, change).await;
}

/// As [`record`], on a database without the rest of the state (`vellum-admin`, the demo).
pub async fn record_in(db: &Database, user_id: Option<i64>, change: Change<'_>) {
    let mut properties = json!({ "changed": change.changed });
    if let (Json::Object(props), Json::Object(extra)) = (&mut properties, change.extra) {
        props.extend(extra);
    }
    let (subject_type, subject_id) = match change.subject {
        Some((kind, id)) => (Some(kind), Some(id)),
        None => (None, None),
    };
    let entry = NewActivity {
        user_id,
        log_name: change.log,
        event: change.event,
        subject_type,
        subject_id,
        properties,
    };
    if let Err(err) = store::record(db, &entry).await {
        tracing::warn!(error = %error_chain(&err), log = change.log, event = change.event, "could not record activity");
    }
}
