//! Webhooks (where to deliver which events) and their delivery log. What a webhook may be and
//! who may change it is decided above; this module stores it.

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::paging::Page;
use crate::sql::{Sql, begin_write, id_param, now};

/// A webhook as stored. `events` and `collections` are JSON arrays of strings.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct WebhookRow {
    pub id: i32,
    pub name: String,
    pub url: String,
    pub events: String,
    pub collections: String,
    pub secret: String,
    pub enabled: bool,
    pub failures: i32,
    pub disabled_reason: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "id, name, url, events, collections, secret, enabled, failures, \
                       disabled_reason, created_at, updated_at";

/// A webhook's settings, for [`create`] and [`update`]; `events` and `collections` as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    pub name: String,
    pub url: String,
    pub events: String,
    pub collections: String,
    pub secret: String,
    pub enabled: bool,
}

/// Creates a webhook; gives its id.
///
/// # Errors
/// [`StorageError::Conflict`]-like unique violation on the name surfaces as the database's
/// error; callers check the name first.
#[instrument(skip_all, err)]
pub async fn create<C: ConnectionTrait>(
    db: &C,
    settings: &WebhookSettings,
) -> Result<i64, StorageError> {
    let at = now();
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO webhooks (name, url, events, collections, secret, enabled, failures, \
         disabled_reason, created_at, updated_at) VALUES (",
    )
    .bind(settings.name.clone())
    .push(", ")
    .bind(settings.url.clone())
    .push(", ")
    .bind(settings.events.clone())
    .push(", ")
    .bind(settings.collections.clone())
    .push(", ")
    .bind(settings.secret.clone())
    .push(", ")
    .bind(settings.enabled)
    .push(", 0, NULL, ")
    .bind(at)
    .push(", ")
    .bind(at)
    .push(")");
    sql.insert_returning_id(db).await
}

/// Replaces webhook `id`'s settings; enabling it again clears its failure count. Gives whether it
/// exists.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(webhook = id))]
pub async fn update<C: ConnectionTrait>(
    db: &C,
    id: i64,
    settings: &WebhookSettings,
) -> Result<bool, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(false);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE webhooks SET name = ")
        .bind(settings.name.clone())
        .push(", url = ")
        .bind(settings.url.clone())
        .push(", events = ")
        .bind(settings.events.clone())
        .push(", collections = ")
        .bind(settings.collections.clone())
        .push(", secret = ")
        .bind(settings.secret.clone())
        .push(", enabled = ")
        .bind(settings.enabled);
    if settings.enabled {
        sql.push(", failures = 0, disabled_reason = NULL");
    }
    sql.push(", updated_at = ")
        .bind(now())
        .push(" WHERE id = ")
        .bind(id);
    Ok(sql.execute(db).await? > 0)
}

/// Deletes webhook `id` and its delivery log; gives whether it existed.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(webhook = id))]
pub async fn delete<C: TransactionTrait>(db: &C, id: i64) -> Result<bool, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(false);
    };
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let mut log = Sql::new(backend);
    log.push("DELETE FROM webhook_deliveries WHERE webhook_id = ")
        .bind(id);
    log.execute(&tx).await?;
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM webhooks WHERE id = ").bind(id);
    let gone = sql.execute(&tx).await? > 0;
    tx.commit().await?;
    Ok(gone)
}

/// Every webhook, in id order (the snapshot holds them: a project has a handful).
///
/// # Errors
/// A database error.
pub async fn all<C: ConnectionTrait>(db: &C) -> Result<Vec<WebhookRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM webhooks ORDER BY id");
    sql.all_as(db).await
}

/// Webhook `id`.
///
/// # Errors
/// A database error.
pub async fn find<C: ConnectionTrait>(db: &C, id: i64) -> Result<Option<WebhookRow>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM webhooks WHERE id = ")
        .bind(id);
    sql.one_as(db).await
}

/// Webhook named `name`, if any.
///
/// # Errors
/// A database error.
pub async fn find_by_name<C: ConnectionTrait>(
    db: &C,
    name: &str,
) -> Result<Option<WebhookRow>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(" FROM webhooks WHERE name = ")
        .bind(name);
    sql.one_as(db).await
}

/// One delivery attempt as logged.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct DeliveryRow {
    pub id: i64,
    pub webhook_id: i32,
    pub job_id: String,
    pub event: String,
    pub attempt: i32,
    /// `delivered` or `failed`.
    pub status: String,
    pub response_code: Option<i32>,
    pub duration_ms: i32,
    pub error: Option<String>,
    pub created_at: OffsetDateTime,
}

const DELIVERY_COLUMNS: &str =
    "id, webhook_id, job_id, event, attempt, status, response_code, duration_ms, error, created_at";

/// Delivery attempts kept per webhook; older ones are deleted as new ones are logged.
pub const KEPT_DELIVERIES: u64 = 500;

/// An attempt to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    pub webhook_id: i64,
    pub job_id: &'a str,
    pub event: &'a str,
    pub attempt: i32,
    pub delivered: bool,
    pub response_code: Option<u16>,
    pub duration_ms: u64,
    pub error: Option<&'a str>,
}

/// Consecutive failures after which a webhook is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DisableAfter(pub u32);

/// Logs an attempt, keeps the newest [`KEPT_DELIVERIES`], and counts the webhook's consecutive
/// failures: a delivery resets them, a failure adds one and disables the webhook at `limit`.
/// Gives whether this attempt disabled it.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(webhook = new.webhook_id, job = new.job_id))]
pub async fn record_delivery<C: TransactionTrait>(
    db: &C,
    new: &NewDelivery<'_>,
    limit: DisableAfter,
) -> Result<bool, StorageError> {
    let tx = begin_write(db).await?;
    let disabled = record_delivery_in(&tx, new, limit).await?;
    tx.commit().await?;
    Ok(disabled)
}

/// Ends a delivery job's attempt and logs it in one write transaction (one turn of SQLite's
/// writer queue per delivery, and the log never disagrees with the job): the job's status as
/// [`jobs::finish`](crate::jobs::finish) gives it, and whether the attempt disabled the webhook.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(webhook = new.webhook_id, job = new.job_id))]
pub async fn finish_delivery<C: TransactionTrait>(
    db: &C,
    worker: &str,
    outcome: &crate::jobs::Outcome,
    new: &NewDelivery<'_>,
    limit: DisableAfter,
) -> Result<(Option<crate::jobs::JobStatus>, bool), StorageError> {
    let tx = begin_write(db).await?;
    let disabled = record_delivery_in(&tx, new, limit).await?;
    let status = crate::jobs::finish_in(&tx, new.job_id, worker, outcome).await?;
    tx.commit().await?;
    Ok((status, disabled))
}

/// [`record_delivery`] inside the caller's write transaction.
async fn record_delivery_in<C: ConnectionTrait>(
    tx: &C,
    new: &NewDelivery<'_>,
    limit: DisableAfter,
) -> Result<bool, StorageError> {
    let Some(webhook) = id_param(new.webhook_id) else {
        return Ok(false);
    };
    let backend = tx.get_database_backend();
    let at = now();
    let mut log = Sql::new(backend);
    log.push(
        "INSERT INTO webhook_deliveries (webhook_id, job_id, event, attempt, status, \
         response_code, duration_ms, error, created_at) SELECT ",
    )
    .bind(webhook)
    .push(", ")
    .bind(new.job_id)
    .push(", ")
    .bind(new.event)
    .push(", ")
    .bind(new.attempt)
    .push(", ")
    .bind(if new.delivered { "delivered" } else { "failed" })
    .push(", ")
    .bind(new.response_code.map(i32::from))
    .push(", ")
    .bind(i32::try_from(new.duration_ms).unwrap_or(i32::MAX))
    .push(", ")
    .bind(new.error.map(str::to_owned))
    .push(", ")
    .bind(at)
    .push(" WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ")
    .bind(webhook)
    .push(")");
    log.execute(tx).await?;
    let mut prune = Sql::new(backend);
    prune
        .push("DELETE FROM webhook_deliveries WHERE webhook_id = ")
        .bind(webhook)
        .push(
            " AND id < (SELECT MIN(id) FROM (SELECT id FROM webhook_deliveries WHERE webhook_id = ",
        )
        .bind(webhook)
        .push(" ORDER BY id DESC LIMIT ")
        .bind(i64::try_from(KEPT_DELIVERIES).unwrap_or(i64::MAX))
        .push(") AS newest)");
    prune.execute(tx).await?;
    let mut count = Sql::new(backend);
    if new.delivered {
        count
            .push("UPDATE webhooks SET failures = 0 WHERE id = ")
            .bind(webhook);
        count.execute(tx).await?;
        return Ok(false);
    }
    count
        .push("UPDATE webhooks SET failures = failures + 1 WHERE id = ")
        .bind(webhook);
    count.execute(tx).await?;
    let limit = i32::try_from(limit.0.max(1)).unwrap_or(i32::MAX);
    let mut disable = Sql::new(backend);
    disable
        .push("UPDATE webhooks SET enabled = ")
        .bind(false)
        .push(", disabled_reason = ")
        .bind(format!("disabled after {limit} failed deliveries in a row"))
        .push(", updated_at = ")
        .bind(at)
        .push(" WHERE id = ")
        .bind(webhook)
        .push(" AND enabled = ")
        .bind(true)
        .push(" AND failures >= ")
        .bind(limit);
    Ok(disable.execute(tx).await? > 0)
}

/// A page of webhook `id`'s delivery log, newest first.
///
/// # Errors
/// A database error.
pub async fn deliveries<C: ConnectionTrait>(
    db: &C,
    webhook_id: i64,
    page: u64,
    per_page: u64,
) -> Result<Page<DeliveryRow>, StorageError> {
    let Some(webhook) = id_param(webhook_id) else {
        return Ok(Page::new(Vec::new(), 0, page, per_page));
    };
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count
        .push("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ")
        .bind(webhook);
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push("SELECT ")
        .push(DELIVERY_COLUMNS)
        .push(" FROM webhook_deliveries WHERE webhook_id = ")
        .bind(webhook)
        .push(" ORDER BY id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let rows = sql.all_as(db).await?;
    Ok(Page::new(rows, total, page, per_page))
}

/// Delivery `id` of webhook `webhook_id`.
///
/// # Errors
/// A database error.
pub async fn find_delivery<C: ConnectionTrait>(
    db: &C,
    webhook_id: i64,
    id: i64,
) -> Result<Option<DeliveryRow>, StorageError> {
    let Some(webhook) = id_param(webhook_id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT ")
        .push(DELIVERY_COLUMNS)
        .push(" FROM webhook_deliveries WHERE webhook_id = ")
        .bind(webhook)
        .push(" AND id = ")
        .bind(id);
    sql.one_as(db).await
}
