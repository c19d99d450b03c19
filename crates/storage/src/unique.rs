//! Claims on `unique` field values: one `item_unique_values` row per (collection, field, locale,
//! value), under a unique index, so two concurrent writers cannot both take a value. Written in
//! the same transaction as the item (and re-claimed when a collection's fields change).

use sea_orm::ConnectionTrait;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use vellum_domain::{UniqueCheck, ValidationErrors};

use crate::StorageError;
use crate::model::Collection;
use crate::sql::{Sql, id_param};

/// The fixed-width key a `unique` value is claimed under. Numbers are canonical first (`1`,
/// `1.0` and `1e0` are the same number, as filters compare them), so spelling cannot dodge the
/// rule.
fn value_key(value: &Json) -> String {
    hex::encode(Sha256::digest(canonical(value).as_bytes()))
}

pub(crate) fn canonical(value: &Json) -> String {
    match value {
        Json::Number(n) => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
            Some(f) => f.to_string(),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Claims every checked value; the unique index turns a value already claimed by another item
/// into a constraint violation, reported like a validation error on the field.
pub(crate) async fn claim_unique<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    item_id: i64,
    checks: &[UniqueCheck],
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    for check in checks {
        if check.value.is_null() {
            continue;
        }
        let mut sql = Sql::new(backend);
        sql.push("INSERT INTO item_unique_values (collection_id, field, locale, value_key, item_id) VALUES (")
            .bind(collection.sql_id()?)
            .push(", ")
            .bind(check.field.as_str())
            .push(", ")
            .bind(check.locale.as_ref().map_or("", |l| l.as_str()))
            .push(", ")
            .bind(value_key(&check.value))
            .push(", ")
            .bind(id_param(item_id).unwrap_or(0))
            .push(")");
        if let Err(e) = sql.execute(tx).await {
            if e.is_unique_violation() {
                let mut errors = ValidationErrors::new();
                let key = match &check.locale {
                    Some(locale) => format!("{}.{locale}", check.field),
                    None => check.field.to_string(),
                };
                errors.add(key, format!("The {} has already been taken.", check.field));
                return Err(StorageError::Invalid(errors));
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Releases the item's claims on `fields` (all fields when `None`) before new ones are made.
pub(crate) async fn release_unique<C: ConnectionTrait>(
    tx: &C,
    item_id: i64,
    fields: Option<&[vellum_domain::FieldName]>,
) -> Result<(), StorageError> {
    if fields.is_some_and(<[_]>::is_empty) {
        return Ok(());
    }
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM item_unique_values WHERE item_id = ")
        .bind(id_param(item_id).unwrap_or(0));
    if let Some(fields) = fields {
        sql.push(" AND field IN ");
        sql.bind_list(fields.iter().map(|f| f.as_str().to_owned()));
    }
    sql.execute(tx).await?;
    Ok(())
}
