//! Outbound webhooks (issue 24): configured in the admin app with `can-manage-project-settings`
//! (a webhook sends the project's events to an outside address, as project settings do), queued
//! by the use cases that change items and files ([`crate::outbox::emit`]), delivered by the job worker
//! ([`deliver`]) through the SSRF-guarded client ([`outbound`]), signed with the Standard
//! Webhooks scheme ([`signing`]).
//!
//! A project has at most [`MAX_WEBHOOKS`]; every change to one invalidates the snapshot, which
//! holds their subscriptions, on every replica.

pub(crate) mod deliver;
mod screen;
pub mod signing;

pub use crate::outbound;

pub use screen::{CollectionChoice, WebhooksScreen, screen};

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_domain::ValidationErrors;
use vellum_storage::webhooks::{self as stored, DeliveryRow, WebhookRow, WebhookSettings};

use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::resources::timestamp;
use crate::webhook_events::{Delivery, Event};

/// The most webhooks of a project.
pub const MAX_WEBHOOKS: usize = 100;
/// The longest webhook URL.
pub const MAX_URL: usize = 2048;
/// The longest webhook name.
pub const MAX_NAME: usize = 255;
/// The permission every webhook route needs.
pub const PERMISSION: &str = "can-manage-project-settings";

/// A webhook as the admin app shows it. The secret only in [`show`] and [`create`]'s answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebhookResource {
    pub id: i64,
    pub name: String,
    pub url: String,
    pub events: Json,
    pub collections: Json,
    pub enabled: bool,
    pub failures: i32,
    pub disabled_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: Json,
    pub updated_at: Json,
}

impl WebhookResource {
    fn of(row: WebhookRow, with_secret: bool) -> Self {
        Self {
            id: i64::from(row.id),
            name: row.name,
            url: row.url,
            events: serde_json::from_str(&row.events).unwrap_or(Json::Array(Vec::new())),
            collections: serde_json::from_str(&row.collections).unwrap_or(Json::Array(Vec::new())),
            enabled: row.enabled,
            failures: row.failures,
            disabled_reason: row.disabled_reason,
            secret: with_secret.then_some(row.secret),
            created_at: timestamp(Some(row.created_at)),
            updated_at: timestamp(Some(row.updated_at)),
        }
    }
}

/// One logged delivery attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeliveryResource {
    pub id: i64,
    pub job_id: String,
    pub event: String,
    pub attempt: i32,
    pub status: String,
    pub response_code: Option<i32>,
    pub duration_ms: i32,
    pub error: Option<String>,
    pub created_at: Json,
}

impl From<DeliveryRow> for DeliveryResource {
    fn from(row: DeliveryRow) -> Self {
        Self {
            id: row.id,
            job_id: row.job_id,
            event: row.event,
            attempt: row.attempt,
            status: row.status,
            response_code: row.response_code,
            duration_ms: row.duration_ms,
            error: row.error,
            created_at: timestamp(Some(row.created_at)),
        }
    }
}

/// Every webhook, in creation order (never their secrets).
///
/// # Errors
/// 403 without the permission, the database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
) -> Result<Vec<WebhookResource>, AppError> {
    principal.require(PERMISSION)?;
    Ok(stored::all(state.db())
        .await?
        .into_iter()
        .map(|row| WebhookResource::of(row, false))
        .collect())
}

/// One webhook, with its secret (the receiver needs it to check signatures).
///
/// # Errors
/// 403 without the permission, 404, the database.
pub async fn show(
    state: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<WebhookResource, AppError> {
    principal.require(PERMISSION)?;
    let row = find(state, id).await?;
    Ok(WebhookResource::of(row, true))
}

async fn find(state: &AppState, id: &str) -> Result<WebhookRow, AppError> {
    let id: i64 = id.parse().map_err(|_| AppError::NotFound)?;
    stored::find(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)
}

/// Creates a webhook from `{name, url, events, collections?, secret?, enabled?}`; a secret is
/// generated when none is given.
///
/// # Errors
/// 403 without the permission, 422 naming every wrong field, the database.
pub async fn create(
    state: &AppState,
    principal: &Principal,
    body: &Json,
) -> Result<WebhookResource, AppError> {
    principal.require(PERMISSION)?;
    crate::nul::refuse_in_body(body)?;
    if stored::all(state.db()).await?.len() >= MAX_WEBHOOKS {
        return Err(AppError::invalid(
            "name",
            format!("A project has at most {MAX_WEBHOOKS} webhooks."),
        ));
    }
    let settings = read_settings(state, body, None).await?;
    let id = stored::create(state.db(), &settings).await?;
    state.invalidate().await;
    record(state, principal, "created", id, body).await;
    let row = stored::find(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(WebhookResource::of(row, true))
}

/// Changes the fields `body` names; enabling a disabled webhook clears its failures.
///
/// # Errors
/// As [`create`], and 404.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    id: &str,
    body: &Json,
) -> Result<WebhookResource, AppError> {
    principal.require(PERMISSION)?;
    crate::nul::refuse_in_body(body)?;
    let current = find(state, id).await?;
    let id = i64::from(current.id);
    let settings = read_settings(state, body, Some(&current)).await?;
    stored::update(state.db(), id, &settings).await?;
    state.invalidate().await;
    record(state, principal, "updated", id, body).await;
    let row = stored::find(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(WebhookResource::of(row, false))
}

/// Deletes a webhook and its delivery log; its queued deliveries are cancelled when they come up.
///
/// # Errors
/// 403 without the permission, 404, the database.
pub async fn delete(state: &AppState, principal: &Principal, id: &str) -> Result<(), AppError> {
    principal.require(PERMISSION)?;
    let current = find(state, id).await?;
    let id = i64::from(current.id);
    stored::delete(state.db(), id).await?;
    state.invalidate().await;
    record(state, principal, "deleted", id, &Json::Null).await;
    Ok(())
}

/// A page of a webhook's delivery log, newest first.
///
/// # Errors
/// 403 without the permission, 404, 422 for a bad page, the database.
pub async fn deliveries(
    state: &AppState,
    principal: &Principal,
    id: &str,
    query: &str,
) -> Result<Paginated<DeliveryResource>, AppError> {
    principal.require(PERMISSION)?;
    let hook = find(state, id).await?;
    let paging = Paging::parse(query)?;
    let page =
        stored::deliveries(state.db(), i64::from(hook.id), paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, DeliveryResource::from))
}

/// Sends a logged delivery's message again, as a new job: the same `webhook-id` and body (a
/// receiver that already handled it can recognise it), a fresh timestamp and signature.
///
/// # Errors
/// 403 without the permission, 404 (webhook, delivery), 422 when the delivery's job was already
/// swept (older than a week), the database.
pub async fn replay(
    state: &AppState,
    principal: &Principal,
    id: &str,
    delivery: &str,
) -> Result<Json, AppError> {
    principal.require(PERMISSION)?;
    let hook = find(state, id).await?;
    let delivery_id: i64 = delivery.parse().map_err(|_| AppError::NotFound)?;
    let logged = stored::find_delivery(state.db(), i64::from(hook.id), delivery_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let job = vellum_storage::jobs::find(state.db(), &logged.job_id)
        .await?
        .ok_or_else(|| AppError::invalid("delivery", "The delivery is too old to be replayed."))?;
    let mut message: Delivery = serde_json::from_str(&job.payload)
        .map_err(|_| AppError::invalid("delivery", "The delivery cannot be replayed."))?;
    message.timestamp = time::OffsetDateTime::now_utc().unix_timestamp();
    let payload = serde_json::to_value(&message)
        .map_err(|_| AppError::invalid("delivery", "The delivery cannot be replayed."))?;
    crate::outbox::queue(state, &[payload]).await?;
    record(
        state,
        principal,
        "replayed",
        i64::from(hook.id),
        &Json::Null,
    )
    .await;
    Ok(json!({ "message_id": message.message_id, "event": message.event }))
}

/// Reads the settings of a create (`current` is `None`) or an update (missing fields keep
/// `current`'s values).
async fn read_settings(
    state: &AppState,
    body: &Json,
    current: Option<&WebhookRow>,
) -> Result<WebhookSettings, AppError> {
    let mut input = Input::new(body)?;
    let creating = current.is_none();
    let name = if creating || input.has("name") {
        input.required_str("name", MAX_NAME).map(str::to_owned)
    } else {
        current.map(|c| c.name.clone())
    };
    let url = if creating || input.has("url") {
        input.required_str("url", MAX_URL).map(str::to_owned)
    } else {
        current.map(|c| c.url.clone())
    };
    let guard = state
        .jobs()
        .outbound()
        .map(|o| o.guard().clone())
        .unwrap_or_else(|| {
            outbound::AddressGuard::new(state.config().jobs.allowed_networks.clone())
        });
    if let Some(url) = url.as_deref().filter(|_| creating || input.has("url"))
        && let Err(message) = outbound::check_url(url, &guard)
    {
        input.error("url", message);
    }
    let events = read_events(&mut input, creating, current);
    let collections = read_collections(state, &mut input, current).await?;
    let secret = match input.optional_str("secret", 200) {
        Some(Some(secret)) => {
            if signing::secret_key(secret).is_none() {
                input.error(
                    "secret",
                    "The secret must be whsec_ followed by 24 to 64 base64 bytes.",
                );
            }
            Some(secret.to_owned())
        }
        Some(None) | None => current.map(|c| c.secret.clone()),
    };
    let enabled = input
        .optional_bool("enabled")
        .or(current.map(|c| c.enabled))
        .unwrap_or(true);
    if let Some(name) = name.as_deref()
        && let Some(other) = stored::find_by_name(state.db(), name).await?
        && current.is_none_or(|c| c.id != other.id)
    {
        input.error("name", "The name has already been taken.");
    }
    let mut errors = take_errors(input);
    let secret = match secret {
        Some(secret) => secret,
        None => signing::generate_secret()
            .map_err(|_| AppError::invalid("secret", "No random source."))?,
    };
    match (name, url, events, collections) {
        (Some(name), Some(url), Some(events), Some(collections)) if errors.is_empty() => {
            Ok(WebhookSettings {
                name,
                url,
                events: Json::from(events).to_string(),
                collections: Json::from(collections).to_string(),
                secret,
                enabled,
            })
        }
        _ => {
            if errors.is_empty() {
                errors.add("name", "The webhook is not valid.");
            }
            Err(AppError::Invalid(errors))
        }
    }
}

fn read_events(
    input: &mut Input<'_>,
    creating: bool,
    current: Option<&WebhookRow>,
) -> Option<Vec<String>> {
    if !creating && !input.has("events") {
        return current.and_then(|c| serde_json::from_str(&c.events).ok());
    }
    let Some(names) = input.optional_strings("events", Event::ALL.len(), 32) else {
        if !input.has("events") {
            input.error("events", "The events field is required.");
        }
        return None;
    };
    let known: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
    if names.is_empty() {
        input.error("events", "The events field must name at least one event.");
        return None;
    }
    if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
        input.error(
            "events",
            format!(
                "Unknown event \"{unknown}\"; the events are: {}.",
                known.join(", ")
            ),
        );
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
    }
    Some(out)
}

async fn read_collections(
    state: &AppState,
    input: &mut Input<'_>,
    current: Option<&WebhookRow>,
) -> Result<Option<Vec<String>>, AppError> {
    if !input.has("collections") || input.raw("collections") == Some(&Json::Null) {
        return Ok(Some(
            current
                .and_then(|c| serde_json::from_str(&c.collections).ok())
                .unwrap_or_default(),
        ));
    }
    let Some(slugs) = input.optional_strings("collections", 500, 255) else {
        return Ok(None);
    };
    let snapshot = state.snapshot().await?;
    if let Some(unknown) = slugs.iter().find(|s| snapshot.collection(s).is_none()) {
        input.error(
            "collections",
            format!("There is no collection \"{unknown}\"."),
        );
        return Ok(None);
    }
    Ok(Some(slugs.into_iter().map(str::to_owned).collect()))
}

fn take_errors(input: Input<'_>) -> ValidationErrors {
    match input.finish() {
        Err(AppError::Invalid(errors)) => errors,
        _ => ValidationErrors::new(),
    }
}

async fn record(state: &AppState, principal: &Principal, event: &str, id: i64, body: &Json) {
    let changed: Vec<String> = body
        .as_object()
        .map(|o| o.keys().filter(|k| *k != "secret").cloned().collect())
        .unwrap_or_default();
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("webhooks", event)
            .subject("webhook", id)
            .changed(changed),
    )
    .await;
}
