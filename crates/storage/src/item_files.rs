//! The reverse index of file references: one `item_files` row per (item, top-level field, file)
//! that an item's `data` names, file slots nested in blocks included (keyed by the blocks field).
//!
//! `data` stays the source of truth. The rows exist for the questions `data` cannot answer
//! without scanning every item: which items use a file ("where used"), and whether a force delete
//! must refuse. They are rewritten from `data` in the item's own write transaction, by
//! [`crate::links::sync_links`], so every path that keeps `item_links` right (create, update,
//! seeding from a manifest, a field's type change, a schema change that rebuilds links) keeps
//! these right too; a force-deleted item loses its rows by cascade, a removed field likewise.
//! Soft-deleted items keep their rows: they can be restored, and a file they name must not be
//! force-deleted under them.
//!
//! Databases that had items before the table existed are filled once by [`backfill`], which
//! [`crate::migrate`] runs when it applied the table's migration.

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::{Map, Value as Json};
use tracing::instrument;
use vellum_domain::{FieldName, RefTarget, ValueShape, references};

use crate::StorageError;
use crate::model::{Collection, StoredField};
use crate::sql::{Sql, begin_write, id_param, json_out, parse_json};

/// The migration that creates `item_files`; [`crate::migrate`] backfills after applying it.
pub const MIGRATION: &str = "m20261127_000007_item_files";

/// Rows per multi-row INSERT: three binds each, far below both backends' limits.
const ROWS_PER_INSERT: usize = 300;

/// Items per backfill transaction: bounded memory and short write locks on a large project.
const BACKFILL_BATCH: u64 = 500;

/// Whether `field`'s values can name files: a file field, or blocks (whose block types may hold
/// file slots).
fn may_hold_files(field: &StoredField) -> bool {
    matches!(
        field.def.shape(),
        ValueShape::FileId | ValueShape::FileIds | ValueShape::Blocks
    )
}

/// Rewrites the `item_files` rows of `item_id` for its top-level fields in `only` (all when
/// `None`) from its stored `data`. Call inside the item's write transaction. A write touching
/// no field that can hold files costs nothing.
pub(crate) async fn sync_item_files<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    item_id: i64,
    data: &Map<String, Json>,
    only: Option<&[FieldName]>,
) -> Result<(), StorageError> {
    let fields: Vec<&StoredField> = collection
        .fields
        .iter()
        .filter(|f| may_hold_files(f))
        .filter(|f| only.is_none_or(|names| names.contains(&f.def.name)))
        .collect();
    if fields.is_empty() {
        return Ok(());
    }
    let item = id_param(item_id).ok_or(StorageError::NotFound { what: "item" })?;
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM item_files WHERE item_id = ")
        .bind(item)
        .push(" AND field_id IN ");
    sql.bind_list(fields.iter().map(|f| id_param(f.id).unwrap_or(0)));
    sql.execute(tx).await?;

    let names: Vec<FieldName> = fields.iter().map(|f| f.def.name.clone()).collect();
    let mut rows: BTreeSet<(i32, i32)> = BTreeSet::new();
    for reference in references(collection.schema().fields(), data, Some(&names)) {
        if reference.target != RefTarget::Files {
            continue;
        }
        let Some(field) = fields
            .iter()
            .find(|f| f.def.name == reference.root)
            .and_then(|f| id_param(f.id))
        else {
            continue;
        };
        rows.extend(
            reference
                .ids
                .iter()
                .filter_map(|id| id_param(*id))
                .filter(|id| *id > 0)
                .map(|file| (field, file)),
        );
    }
    let rows: Vec<(i32, i32)> = rows.into_iter().collect();
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut sql = Sql::new(backend);
        sql.push("INSERT INTO item_files (item_id, field_id, file_id) VALUES ");
        for (i, (field, file)) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.push("(")
                .bind(item)
                .push(", ")
                .bind(*field)
                .push(", ")
                .bind(*file)
                .push(")");
        }
        sql.execute(tx).await?;
    }
    Ok(())
}

/// Fills `item_files` from every item's `data` (soft-deleted items too) of `collections` (every
/// collection: the caller lists them, so this module needs nothing of `collections`, which
/// needs it through `links`), [`BACKFILL_BATCH`] items per transaction; answers how many items
/// were read. Idempotent: each item's rows are rewritten, not added to.
///
/// # Errors
/// A database error; the batches committed before it stay (running it again completes them).
#[instrument(skip_all, err)]
pub async fn backfill<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    collections: &[Collection],
) -> Result<u64, StorageError> {
    let mut read = 0;
    for collection in collections {
        if !collection.fields.iter().any(may_hold_files) {
            continue;
        }
        let Some(cid) = id_param(collection.id) else {
            continue;
        };
        let mut after = 0_i32;
        loop {
            let backend = db.get_database_backend();
            let txn = begin_write(db).await?;
            let mut sql = Sql::new(backend);
            sql.push(&format!(
                "SELECT id, {} AS data FROM items WHERE collection_id = ",
                json_out(backend, "data")
            ))
            .bind(cid)
            .push(" AND id > ")
            .bind(after)
            .push(" ORDER BY id LIMIT ")
            .push(&BACKFILL_BATCH.to_string());
            let batch = sql.all_as::<DataRow, _>(&txn).await?;
            let Some(last) = batch.last().map(|row| row.id) else {
                txn.commit().await?;
                break;
            };
            for row in &batch {
                if let Json::Object(data) = parse_json(row.data.as_deref())? {
                    sync_item_files(&txn, collection, i64::from(row.id), &data, None).await?;
                }
            }
            txn.commit().await?;
            read += batch.len() as u64;
            after = last;
        }
    }
    Ok(read)
}

/// An item naming a file (or, for a folder, anything inside it).
#[derive(Debug, Clone, PartialEq)]
pub struct FileUse {
    pub collection_id: i64,
    pub item_id: i64,
    /// The item is in its collection's trash.
    pub trashed: bool,
    /// The item's stored `data` (only when asked for: labels need it, a refusal does not).
    pub data: Option<Json>,
}

/// Up to `limit` items (live or trashed) whose file fields name `file_id` or, when it is a
/// folder, any row of its subtree (deleted rows included): ordered by collection id, then item
/// id. `with_data` also reads each item's `data`.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(file_id, limit))]
pub async fn items_using<C: ConnectionTrait>(
    db: &C,
    file_id: i64,
    limit: u64,
    with_data: bool,
) -> Result<Vec<FileUse>, StorageError> {
    let Some(id) = id_param(file_id) else {
        return Ok(Vec::new());
    };
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    // UNION (not UNION ALL) ends the walk around a cycle in a broken tree.
    sql.push("WITH RECURSIVE tree(id) AS (SELECT id FROM files WHERE id = ")
        .bind(id)
        .push(
            " UNION SELECT f.id FROM files f JOIN tree t ON f.parent_id = t.id) \
             SELECT i.id AS item_id, i.collection_id AS collection_id, \
             CASE WHEN i.deleted_at IS NULL THEN 0 ELSE 1 END AS trashed, ",
        );
    if with_data {
        sql.push(&json_out(backend, "i.data"));
    } else {
        sql.push("NULL");
    }
    sql.push(
        " AS data FROM items i WHERE i.id IN (SELECT x.item_id FROM item_files x \
         JOIN tree t ON t.id = x.file_id) ORDER BY i.collection_id, i.id LIMIT ",
    )
    .push(&limit.to_string());
    sql.all_as::<UseRow, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            let data = match row.data.as_deref() {
                Some(text) => Some(parse_json(Some(text))?),
                None => None,
            };
            Ok(FileUse {
                collection_id: i64::from(row.collection_id),
                item_id: i64::from(row.item_id),
                trashed: row.trashed != 0,
                data,
            })
        })
        .collect()
}

/// The `(field_id, file_id)` rows of one item, ordered: what tests and diagnostics compare with
/// the item's `data`.
///
/// # Errors
/// A database error.
pub async fn rows_of_item<C: ConnectionTrait>(
    db: &C,
    item_id: i64,
) -> Result<Vec<(i64, i64)>, StorageError> {
    let Some(item) = id_param(item_id) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT field_id, file_id FROM item_files WHERE item_id = ")
        .bind(item)
        .push(" ORDER BY field_id, file_id");
    Ok(sql
        .all_as::<PairRow, _>(db)
        .await?
        .into_iter()
        .map(|row| (i64::from(row.field_id), i64::from(row.file_id)))
        .collect())
}

#[derive(FromQueryResult)]
struct DataRow {
    id: i32,
    data: Option<String>,
}

#[derive(FromQueryResult)]
struct UseRow {
    item_id: i32,
    collection_id: i32,
    trashed: i32,
    data: Option<String>,
}

#[derive(FromQueryResult)]
struct PairRow {
    field_id: i32,
    file_id: i32,
}
