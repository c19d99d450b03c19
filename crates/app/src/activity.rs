//! The activity log of admin mutations: recorded by the use case that made the change (so no
//! surface can forget it), read with `can-show-activity-logs`. An entry names the changed keys,
//! never their values: no password, code, secret or session id is ever written here.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_domain::ValidationErrors;
use vellum_storage::Database;
use vellum_storage::activity::{self as store, Activity, ActivityFilter, NewActivity};

use crate::context::AppState;
use crate::error::AppError;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::query::{first, pairs};
use crate::resources::timestamp;
use crate::telemetry::error_chain;

/// The longest value of a text filter (`subject_type`, `subject_id`, `log_name`).
const MAX_FILTER: usize = 255;

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

/// Who made a change, as the log shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActivityUser {
    pub id: i64,
    pub name: String,
}

/// One entry of the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActivityResource {
    pub id: i64,
    pub log_name: String,
    pub event: String,
    pub subject_type: Option<String>,
    pub subject_id: Option<String>,
    /// `{"changed": [keys]}` plus ids and counts; never a secret.
    pub properties: Json,
    pub created_at: Json,
    /// `null` for entries without a user (a failed sign-in) or whose user was deleted.
    pub user: Option<ActivityUser>,
}

impl From<Activity> for ActivityResource {
    fn from(entry: Activity) -> Self {
        Self {
            id: entry.id,
            log_name: entry.log_name,
            event: entry.event,
            subject_type: entry.subject_type,
            subject_id: entry.subject_id,
            properties: entry.properties,
            created_at: timestamp(Some(entry.created_at)),
            user: entry
                .user_id
                .zip(entry.user_name)
                .map(|(id, name)| ActivityUser { id, name }),
        }
    }
}

/// A page of the log, newest first, filtered by the query's `user_id`, `subject_type`,
/// `subject_id` and `log_name` (each exact; AND-ed), paged by `page` and `per_page`.
///
/// # Errors
/// 403 without `can-show-activity-logs`; 422 naming each malformed parameter; the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    query: &str,
) -> Result<Paginated<ActivityResource>, AppError> {
    principal.require("can-show-activity-logs")?;
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    let paging = Paging::from_pairs(&pairs, &mut errors);
    // An empty value is no filter, as for the text filters (a form sends its empty fields).
    let user_id = first(&pairs, "user_id")
        .filter(|raw| !raw.trim().is_empty())
        .and_then(|raw| {
            let id = raw.trim().parse::<i64>().ok().filter(|id| *id > 0);
            if id.is_none() {
                errors.add("user_id", "The user_id field must be a positive integer.");
            }
            id
        });
    let mut text = |key: &str| -> Option<String> {
        let value = first(&pairs, key).filter(|v| !v.is_empty())?;
        if value.contains('\0') {
            errors.add(
                key,
                format!("The {key} field must not contain NUL characters."),
            );
            return None;
        }
        if value.chars().count() > MAX_FILTER {
            errors.add(
                key,
                format!("The {key} field must not be greater than {MAX_FILTER} characters."),
            );
            return None;
        }
        Some(value.to_owned())
    };
    let filter = ActivityFilter {
        user_id,
        subject_type: text("subject_type"),
        subject_id: text("subject_id"),
        log_name: text("log_name"),
    };
    errors.into_result(()).map_err(AppError::Invalid)?;
    let page = store::list(state.db(), &filter, paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, ActivityResource::from))
}
