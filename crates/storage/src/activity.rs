//! The activity log: one row per admin mutation (who, what, when, which keys changed). Rows hold
//! the names of changed keys, never their values, so no password, code or secret can end up here.

use sea_orm::{ConnectionTrait, FromQueryResult};
use serde_json::Value as Json;
use time::OffsetDateTime;
use tracing::instrument;

use crate::StorageError;
use crate::sql::{Sql, id_param, now, parse_json};

/// An entry to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewActivity<'a> {
    pub user_id: Option<i64>,
    /// The area (`users`, `roles`, `auth`, …).
    pub log_name: &'a str,
    /// What happened (`created`, `updated`, `deleted`, `signed_in`, …).
    pub event: &'a str,
    pub subject_type: Option<&'a str>,
    pub subject_id: Option<String>,
    /// A JSON object; by convention `{"changed": [keys]}` plus ids, never values of secrets.
    pub properties: Json,
}

/// A recorded entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub id: i64,
    pub user_id: Option<i64>,
    pub user_name: Option<String>,
    pub log_name: String,
    pub event: String,
    pub subject_type: Option<String>,
    pub subject_id: Option<String>,
    pub properties: Json,
    pub created_at: OffsetDateTime,
}

/// Which entries a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActivityFilter {
    pub user_id: Option<i64>,
    pub subject_type: Option<String>,
    pub subject_id: Option<String>,
    pub log_name: Option<String>,
}

/// Records one entry.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(log = entry.log_name, event = entry.event))]
pub async fn record<C: ConnectionTrait>(
    db: &C,
    entry: &NewActivity<'_>,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "INSERT INTO activity_log (user_id, log_name, event, subject_type, subject_id, properties, created_at) VALUES (",
    )
    .bind(entry.user_id.and_then(id_param))
    .push(", ")
    .bind(entry.log_name)
    .push(", ")
    .bind(entry.event)
    .push(", ")
    .bind(entry.subject_type.map(str::to_owned))
    .push(", ")
    .bind(entry.subject_id.clone())
    .push(", ")
    .bind_json(&entry.properties)
    .push(", ")
    .bind(now())
    .push(")");
    sql.execute(db).await?;
    Ok(())
}

#[derive(FromQueryResult)]
struct Row {
    id: i32,
    user_id: Option<i32>,
    user_name: Option<String>,
    log_name: String,
    event: String,
    subject_type: Option<String>,
    subject_id: Option<String>,
    properties: Option<String>,
    created_at: OffsetDateTime,
}

fn push_filter(sql: &mut Sql, filter: &ActivityFilter) {
    sql.push(" WHERE 1 = 1");
    if let Some(uid) = filter.user_id {
        sql.push(" AND a.user_id = ")
            .bind(id_param(uid).unwrap_or(-1));
    }
    if let Some(t) = &filter.subject_type {
        sql.push(" AND a.subject_type = ").bind(t.clone());
    }
    if let Some(id) = &filter.subject_id {
        sql.push(" AND a.subject_id = ").bind(id.clone());
    }
    if let Some(name) = &filter.log_name {
        sql.push(" AND a.log_name = ").bind(name.clone());
    }
}

/// One page of entries, newest first (by id: ids grow with time), with the number matching.
///
/// # Errors
/// A database error, or [`StorageError::Corrupt`] for unreadable properties.
#[instrument(skip_all, err)]
pub async fn list<C: ConnectionTrait>(
    db: &C,
    filter: &ActivityFilter,
    page: u64,
    per_page: u64,
) -> Result<crate::items::Page<Activity>, StorageError> {
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n FROM activity_log a");
    push_filter(&mut count, filter);
    let total = count.count(db).await?;
    let mut sql = Sql::new(backend);
    sql.push("SELECT a.id, a.user_id, u.name AS user_name, a.log_name, a.event, a.subject_type, a.subject_id, ")
        .push(&crate::sql::json_out(backend, "a.properties"))
        .push(" AS properties, a.created_at FROM activity_log a LEFT JOIN users u ON u.id = a.user_id");
    push_filter(&mut sql, filter);
    sql.push(" ORDER BY a.id DESC LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(100))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let rows = sql.all_as::<Row, _>(db).await?;
    let entries = rows
        .into_iter()
        .map(|row| {
            Ok(Activity {
                id: i64::from(row.id),
                user_id: row.user_id.map(i64::from),
                user_name: row.user_name,
                log_name: row.log_name,
                event: row.event,
                subject_type: row.subject_type,
                subject_id: row.subject_id,
                properties: parse_json(row.properties.as_deref())?,
                created_at: row.created_at,
            })
        })
        .collect::<Result<Vec<_>, StorageError>>()?;
    Ok(crate::items::Page::new(entries, total, page, per_page))
}
