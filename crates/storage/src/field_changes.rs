//! Schema changes that touch stored values (issue 18): a field's type, translatability or
//! relation target changed, a field renamed, a field removed with its values.
//!
//! A type change of an ordinary field, and a removal, do not run as one transaction over the
//! whole collection: at 100,000 items that would hold SQLite's write lock (and every item write
//! behind it) for seconds. Each is a short transaction that switches the definition, and then
//! passes over the items in batches of [`BATCH`] ids (keyset by id, each batch its own short
//! write transaction, rows locked on PostgreSQL), so readers are never blocked (WAL on SQLite,
//! MVCC on PostgreSQL) and writers wait at most one batch. Every batch operation is idempotent:
//! the application layer runs the pass again after moving the epoch, which catches values
//! written meanwhile by requests that were still validating against the old definition.
//!
//! Two changes are all-or-nothing instead: a rename ([`rename_field`]: one `UPDATE` moves the
//! key in every item, so no reader sees the new name over data not yet moved), and a type
//! change of a field under a `unique` rule ([`switch_and_convert`]: a collision found halfway
//! must not leave half the values converted).

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};
use tracing::instrument;
use vellum_domain::{FieldDef, FieldName};

use crate::StorageError;
use crate::collections::{
    collection_by_id, is_unique, rebuild_scalar_index, stored_unique_values, unclaim,
};
use crate::links::sync_links;
use crate::model::{Collection, Presentation};
use crate::sql::{Sql, begin_write, id_param, json_out, parse_json};
use crate::unique::{claim_unique, release_unique};

/// Items per batch: one short transaction each.
pub const BATCH: u64 = 500;

/// 128-bit digests of the claims `value` would make as field `def`'s value (none when the field
/// has no `unique` rule), each telling its locale apart: two equal digests are two items taking
/// the same value. For dry runs, which look for collisions among converted values without
/// writing a claim; 16 bytes per value keeps that check small at any collection size.
#[must_use]
pub fn unique_digests(def: &FieldDef, value: &Json) -> Vec<u128> {
    if !is_unique(def) {
        return Vec::new();
    }
    stored_unique_values(&def.name, def.translatable, Some(value))
        .iter()
        .filter(|check| !check.value.is_null())
        .map(|check| {
            let mut hasher = Sha256::new();
            hasher.update(check.locale.as_ref().map_or("", |l| l.as_str()).as_bytes());
            hasher.update([0]);
            hasher.update(crate::unique::canonical(&check.value).as_bytes());
            let digest = hasher.finalize();
            let mut first = [0u8; 16];
            for (to, from) in first.iter_mut().zip(digest.iter()) {
                *to = *from;
            }
            u128::from_be_bytes(first)
        })
        .collect()
}

/// An item's id and `data` (as JSON text).
#[derive(FromQueryResult)]
struct DataRow {
    id: i32,
    data: Option<String>,
}

/// One item's stored value of a field (`Null` when absent), soft-deleted items included.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldValue {
    pub item_id: i64,
    pub value: Json,
}

/// The values of `field` of up to `limit` items with an id above `after`, in id order (items
/// without the key too, as null), for dry runs: no lock, no write.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection_id = collection.id, field))]
pub async fn field_values<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    field: &str,
    after: i64,
    limit: u64,
) -> Result<Vec<FieldValue>, StorageError> {
    let rows = batch_rows(db, collection, after, limit, false).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let value = match parse_json(row.data.as_deref())? {
            Json::Object(mut data) => data.remove(field).unwrap_or(Json::Null),
            _ => Json::Null,
        };
        out.push(FieldValue {
            item_id: i64::from(row.id),
            value,
        });
    }
    Ok(out)
}

async fn batch_rows<C: ConnectionTrait>(
    db: &C,
    collection: &Collection,
    after: i64,
    limit: u64,
    lock: bool,
) -> Result<Vec<DataRow>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT id, {} AS data FROM items WHERE collection_id = ",
        json_out(backend, "data")
    ))
    .bind(collection.sql_id()?)
    .push(" AND id > ")
    .bind(id_param(after).unwrap_or(i32::MAX))
    .push(" ORDER BY id LIMIT ")
    .bind(i64::try_from(limit).unwrap_or(i64::MAX));
    if lock && sql.is_postgres() {
        sql.push(" FOR UPDATE");
    }
    sql.all_as(db).await
}

/// Switches field `new.name` of `collection` to `new` (type, translatability, settings; id and
/// position kept) in one short transaction. Its link rows and `unique` claims are dropped:
/// [`convert_batch`] rebuilds them from each converted value.
///
/// # Errors
/// [`StorageError::NotFound`] without such a field; a database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, field = %new.name))]
pub async fn switch_field<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    new: &FieldDef,
) -> Result<Collection, StorageError> {
    let tx = begin_write(db).await?;
    let saved = switch_in(&tx, collection, new).await?;
    tx.commit().await?;
    Ok(saved)
}

async fn switch_in<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    new: &FieldDef,
) -> Result<Collection, StorageError> {
    let old = collection
        .field(new.name.as_str())
        .ok_or(StorageError::NotFound { what: "field" })?;
    let backend = tx.get_database_backend();
    let field_id = id_param(old.id).unwrap_or(0);
    let mut sql = Sql::new(backend);
    sql.push("UPDATE fields SET type = ")
        .bind(new.field_type.as_str())
        .push(", translatable = ")
        .bind(new.translatable)
        .push(", settings = ")
        .bind_json(&new.settings.to_json())
        .push(" WHERE id = ")
        .bind(field_id);
    sql.execute(tx).await?;
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM item_links WHERE field_id = ")
        .bind(field_id);
    sql.execute(tx).await?;
    unclaim(tx, collection.sql_id()?, new.name.as_str()).await?;
    let saved = collection_by_id(tx, collection.id)
        .await?
        .ok_or(StorageError::NotFound { what: "collection" })?;
    rebuild_scalar_index(tx, &saved).await?;
    Ok(saved)
}

/// Switches field `new.name` to `new` and converts every item's value with `convert`, all in
/// one transaction: for a field under a `unique` rule, whose claims are dropped by the switch
/// and rebuilt from the converted values. Batches could not keep that rule: between the switch
/// and the last batch, a write could take a value an unconverted item is about to claim, and a
/// collision found halfway would leave half the values converted. Here a collision rolls back
/// everything (definition and values) and readers see the old field and values until the
/// commit; writers of the collection wait for it (the price of the rule, paid only by changes
/// to unique fields). Answers the saved collection and the number of values rewritten.
///
/// # Errors
/// [`StorageError::Conflict`] when converted values collide under the `unique` rule (nothing
/// is changed); [`StorageError::NotFound`] without such a field; a database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, field = %new.name))]
pub async fn switch_and_convert<C, F>(
    db: &C,
    collection: &Collection,
    new: &FieldDef,
    convert: F,
) -> Result<(Collection, u64), StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    F: Fn(&Json) -> Result<Json, String>,
{
    let tx = begin_write(db).await?;
    let saved = switch_in(&tx, collection, new).await?;
    let mut changed = 0;
    let mut after = 0;
    loop {
        let outcome = convert_rows(&tx, &saved, &new.name, after, &convert).await?;
        changed += outcome.changed;
        match outcome.last_id {
            Some(last) => after = last,
            None => break,
        }
    }
    tx.commit().await?;
    Ok((saved, changed))
}

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// The last item id seen; `None` when there were no more items.
    pub last_id: Option<i64>,
    /// Items whose value was rewritten.
    pub changed: u64,
    /// Items whose value `convert` refused (left as stored).
    pub refused: u64,
}

/// Converts field `field`'s values of up to [`BATCH`] items with an id above `after`, in one
/// short write transaction: each value `convert` changes is written back (`data` only: no
/// revision, `updated_at` kept, since no one edited the item), and the field's links and
/// `unique` claims are rebuilt from the value. A value `convert` refuses is left as stored.
///
/// # Errors
/// [`StorageError::Conflict`] when converted values collide under a `unique` rule; a database
/// error.
#[instrument(skip_all, err, fields(collection = %collection.slug, field = %field))]
pub async fn convert_batch<C, F>(
    db: &C,
    collection: &Collection,
    field: &FieldName,
    after: i64,
    convert: F,
) -> Result<BatchOutcome, StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    F: Fn(&Json) -> Result<Json, String>,
{
    let tx = begin_write(db).await?;
    let outcome = convert_rows(&tx, collection, field, after, &convert).await?;
    tx.commit().await?;
    Ok(outcome)
}

async fn convert_rows<C, F>(
    tx: &C,
    collection: &Collection,
    field: &FieldName,
    after: i64,
    convert: &F,
) -> Result<BatchOutcome, StorageError>
where
    C: ConnectionTrait,
    F: Fn(&Json) -> Result<Json, String>,
{
    let Some(stored) = collection.field(field.as_str()) else {
        return Err(StorageError::NotFound { what: "field" });
    };
    let rows = batch_rows(tx, collection, after, BATCH, true).await?;
    let mut outcome = BatchOutcome::default();
    let only = std::slice::from_ref(field);
    for row in rows {
        let id = i64::from(row.id);
        outcome.last_id = Some(id);
        let Json::Object(mut data) = parse_json(row.data.as_deref())? else {
            continue;
        };
        let current = data.get(field.as_str()).cloned().unwrap_or(Json::Null);
        match convert(&current) {
            Ok(converted) if converted != current => {
                if converted.is_null() {
                    data.remove(field.as_str());
                } else {
                    data.insert(field.as_str().to_owned(), converted);
                }
                write_data(tx, row.id, &data).await?;
                outcome.changed += 1;
            }
            Ok(_) => {}
            Err(_) => {
                outcome.refused += 1;
                continue;
            }
        }
        sync_links(tx, collection, id, &data, Some(only)).await?;
        if is_unique(&stored.def) {
            release_unique(tx, id, Some(only)).await?;
            let checks =
                stored_unique_values(field, stored.def.translatable, data.get(field.as_str()));
            claim_unique(tx, collection, id, &checks)
                .await
                .map_err(|e| match e {
                    StorageError::Invalid(_) => StorageError::conflict_on(
                        field.as_str(),
                        format!(
                            "Converted values of {field} collide under its unique rule (item {id})."
                        ),
                    ),
                    other => other,
                })?;
        }
    }
    Ok(outcome)
}

async fn write_data<C: ConnectionTrait>(
    tx: &C,
    id: i32,
    data: &Map<String, Json>,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("UPDATE items SET data = ")
        .bind_json(&Json::Object(data.clone()))
        .push(" WHERE id = ")
        .bind(id);
    sql.execute(tx).await?;
    Ok(())
}

/// Renames field `from` of `collection` to `to` in one transaction: the field row, every item's
/// `data` key (one `UPDATE` in the database's own JSON functions: about a second at 100,000
/// items), its `unique` claims, the role grants' field rules and item filters on this
/// collection (`rename_rules` rewrites one grant's rules JSON), and the presentation (display
/// field, template placeholders, list columns, form layout). Readers see the old name and the
/// old keys until the commit, then both new: never the new name over data not yet moved.
///
/// # Errors
/// [`StorageError::NotFound`] without such a field; a database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, from = %from, to = %to))]
pub async fn rename_field<C, R>(
    db: &C,
    collection: &Collection,
    from: &FieldName,
    to: &FieldName,
    presentation: &Presentation,
    rename_rules: R,
) -> Result<Collection, StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    R: Fn(&Json) -> Json,
{
    let old = collection
        .field(from.as_str())
        .ok_or(StorageError::NotFound { what: "field" })?;
    let tx = begin_write(db).await?;
    let backend = tx.get_database_backend();
    let cid = collection.sql_id()?;
    let mut sql = Sql::new(backend);
    sql.push("UPDATE fields SET name = ")
        .bind(to.as_str())
        .push(" WHERE id = ")
        .bind(id_param(old.id).unwrap_or(0));
    sql.execute(&tx).await?;
    // Claims left by an earlier field of the new name (removed, its data kept) must not collide.
    unclaim(&tx, cid, to.as_str()).await?;
    let mut sql = Sql::new(backend);
    sql.push("UPDATE item_unique_values SET field = ")
        .bind(to.as_str())
        .push(" WHERE collection_id = ")
        .bind(cid)
        .push(" AND field = ")
        .bind(from.as_str());
    sql.execute(&tx).await?;
    move_key_in(&tx, cid, from.as_str(), to.as_str()).await?;
    rename_in_grants(&tx, cid, &rename_rules).await?;
    crate::collections::set_presentation(&tx, collection.id, presentation).await?;
    let saved = collection_by_id(&tx, collection.id)
        .await?
        .ok_or(StorageError::NotFound { what: "collection" })?;
    rebuild_scalar_index(&tx, &saved).await?;
    tx.commit().await?;
    Ok(saved)
}

#[derive(FromQueryResult)]
struct GrantRulesRow {
    role_id: i32,
    rules: Option<String>,
}

/// Rewrites the stored rules of every role grant on the collection `cid` through `rewrite`
/// (the policy crate's `rename_rule_field` / `drop_rule_field`), writing back those it changed.
///
/// # Errors
/// A database error.
pub async fn rewrite_grant_rules<C: ConnectionTrait, R: Fn(&Json) -> Json>(
    tx: &C,
    collection: &Collection,
    rewrite: R,
) -> Result<(), StorageError> {
    rename_in_grants(tx, collection.sql_id()?, &rewrite).await
}

async fn rename_in_grants<C: ConnectionTrait, R: Fn(&Json) -> Json>(
    tx: &C,
    cid: i32,
    rename_rules: &R,
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT role_id, {} AS rules FROM collection_grants WHERE collection_id = ",
        json_out(backend, "rules")
    ))
    .bind(cid)
    .push(" AND rules IS NOT NULL");
    for row in sql.all_as::<GrantRulesRow, _>(tx).await? {
        let rules = parse_json(row.rules.as_deref())?;
        let renamed = rename_rules(&rules);
        if renamed != rules {
            let mut sql = Sql::new(backend);
            sql.push("UPDATE collection_grants SET rules = ")
                .bind_json(&renamed)
                .push(" WHERE role_id = ")
                .bind(row.role_id)
                .push(" AND collection_id = ")
                .bind(cid);
            sql.execute(tx).await?;
        }
    }
    Ok(())
}

/// Moves the key `from` to `to` in every item's `data` of `collection` that still holds `from`,
/// in one short write transaction: the catch-up after a rename, for values written meanwhile
/// by requests that validated against the old name. A `from` key still present was written
/// after the rename, so its value is the newer one and replaces `to`. Answers the items moved.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, from, to))]
pub async fn move_key<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    from: &str,
    to: &str,
) -> Result<u64, StorageError> {
    let tx = begin_write(db).await?;
    let moved = move_key_in(&tx, collection.sql_id()?, from, to).await?;
    tx.commit().await?;
    Ok(moved)
}

async fn move_key_in<C: ConnectionTrait>(
    tx: &C,
    cid: i32,
    from: &str,
    to: &str,
) -> Result<u64, StorageError> {
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    if sql.is_postgres() {
        sql.push("UPDATE items SET data = (data - ")
            .bind(from)
            .push("::text) || jsonb_build_object(")
            .bind(to)
            .push("::text, data -> ")
            .bind(from)
            .push("::text) WHERE collection_id = ")
            .bind(cid)
            .push(" AND jsonb_exists(data, ")
            .bind(from)
            .push("::text)");
    } else {
        // `->` answers JSON (not a string that looks like it), so `jsonb_set` keeps the type.
        let from_path = json_path(from);
        sql.push("UPDATE items SET data = jsonb_remove(jsonb_set(data, ")
            .bind(json_path(to))
            .push(", data -> ")
            .bind(from_path.clone())
            .push("), ")
            .bind(from_path.clone())
            .push(") WHERE collection_id = ")
            .bind(cid)
            .push(" AND json_type(data, ")
            .bind(from_path)
            .push(") IS NOT NULL");
    }
    sql.execute(tx).await
}

/// SQLite's JSON path of one top-level key, quoted (field names are `[a-z0-9_]`, quoting keeps
/// a leading digit or any future character from being read as path syntax).
fn json_path(key: &str) -> String {
    format!("$.\"{key}\"")
}

/// Removes the key `field` from the `data` of up to [`BATCH`] items with an id above `after`
/// (a deleted field's values), in one short write transaction.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(collection = %collection.slug, field))]
pub async fn remove_key_batch<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collection: &Collection,
    field: &str,
    after: i64,
) -> Result<BatchOutcome, StorageError> {
    edit_batch(db, collection, after, |data| data.remove(field).map(|_| ())).await
}

/// Applies `edit` to each item's `data` of one batch; `Some` means it changed (written back).
async fn edit_batch<C, E>(
    db: &C,
    collection: &Collection,
    after: i64,
    edit: E,
) -> Result<BatchOutcome, StorageError>
where
    C: ConnectionTrait + TransactionTrait,
    E: Fn(&mut Map<String, Json>) -> Option<()>,
{
    let tx = begin_write(db).await?;
    let rows = batch_rows(&tx, collection, after, BATCH, true).await?;
    let mut outcome = BatchOutcome::default();
    for row in rows {
        outcome.last_id = Some(i64::from(row.id));
        let Json::Object(mut data) = parse_json(row.data.as_deref())? else {
            continue;
        };
        if edit(&mut data).is_some() {
            write_data(&tx, row.id, &data).await?;
            outcome.changed += 1;
        }
    }
    tx.commit().await?;
    Ok(outcome)
}
