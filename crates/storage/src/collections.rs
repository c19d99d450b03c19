//! Collections and their fields: the schema every item read and write is checked against.
//!
//! A collection is loaded with all its fields in two queries (or two for all collections), and
//! handed out as a [`Collection`] whose [`CollectionSchema`] the domain crate validates with.
//! [`save_collection`] makes the stored definition match a desired one (create, or update in
//! place keeping field ids, so item links and grants survive a re-apply).

use sea_orm::{ConnectionTrait, FromQueryResult, TransactionSession, TransactionTrait};
use serde_json::Value as Json;
use time::OffsetDateTime;
use tracing::instrument;
use vellum_domain::{
    CollectionSchema, CollectionSlug, FieldDef, FieldName, FieldType, LocaleCode, RuleOperator,
    UniqueCheck,
};

use crate::StorageError;
use crate::filter_sql::scalar_index_sql;
use crate::links::sync_links;
use crate::model::{Collection, Presentation, StoredField};
use crate::sql::{Sql, id_param, json_out, now, parse_json};
use crate::unique::claim_unique;

/// What [`save_collection`] makes true.
#[derive(Debug, Clone)]
pub struct CollectionDef {
    pub slug: CollectionSlug,
    pub name: String,
    pub is_singleton: bool,
    pub fields: Vec<FieldDef>,
}

/// Every collection, ordered by id, with its fields (two queries, whatever the count).
///
/// # Errors
/// A database error, or a stored field that no longer parses.
#[instrument(skip_all, err)]
pub async fn list_collections<C: ConnectionTrait>(db: &C) -> Result<Vec<Collection>, StorageError> {
    load(db, None).await
}

/// The collection with `slug`, with its fields.
///
/// # Errors
/// A database error, or a stored field that no longer parses.
#[instrument(skip_all, err, fields(collection = slug))]
pub async fn collection_by_slug<C: ConnectionTrait>(
    db: &C,
    slug: &str,
) -> Result<Option<Collection>, StorageError> {
    Ok(load(db, Some(Key::Slug(slug))).await?.into_iter().next())
}

/// The collection with `id`, with its fields.
///
/// # Errors
/// A database error, or a stored field that no longer parses.
#[instrument(skip_all, err, fields(collection_id = id))]
pub async fn collection_by_id<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<Collection>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    Ok(load(db, Some(Key::Id(id))).await?.into_iter().next())
}

/// A collection row as [`load`] reads it.
#[derive(FromQueryResult)]
struct CollectionRow {
    id: i32,
    slug: String,
    name: String,
    is_singleton: bool,
    created_at: Option<OffsetDateTime>,
    updated_at: Option<OffsetDateTime>,
    display_field: Option<String>,
    display_template: Option<String>,
    list_columns: Option<String>,
    form_layout: Option<String>,
}

/// A field row as [`load`] reads it (`settings` as JSON text).
#[derive(FromQueryResult)]
struct FieldRow {
    id: i32,
    collection_id: i32,
    name: String,
    /// The `type` column (a keyword in Rust).
    field_type: String,
    translatable: bool,
    settings: Option<String>,
    sort: i32,
}

/// An item's id and `data` (as JSON text), for rebuilding what derives from `data`.
#[derive(FromQueryResult)]
struct ItemDataRow {
    id: i32,
    data: Option<String>,
}

/// The stored presentation columns, parsed (`NULL` is unset).
fn presentation(
    display_field: Option<String>,
    display_template: Option<String>,
    list_columns: Option<&str>,
    form_layout: Option<&str>,
) -> Result<Presentation, StorageError> {
    let list_columns = match parse_json(list_columns)? {
        Json::Null => None,
        value => Some(serde_json::from_value(value).map_err(StorageError::corrupt)?),
    };
    let form_layout = match parse_json(form_layout)? {
        Json::Null => None,
        value => Some(value),
    };
    Ok(Presentation {
        display_field,
        display_template,
        list_columns,
        form_layout,
    })
}

enum Key<'a> {
    Slug(&'a str),
    Id(i32),
}

async fn load<C: ConnectionTrait>(
    db: &C,
    key: Option<Key<'_>>,
) -> Result<Vec<Collection>, StorageError> {
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT id, slug, name, is_singleton, created_at, updated_at, display_field, \
         display_template, {} AS list_columns, {} AS form_layout FROM collections",
        json_out(backend, "list_columns"),
        json_out(backend, "form_layout")
    ));
    match &key {
        Some(Key::Slug(slug)) => {
            sql.push(" WHERE slug = ").bind(*slug);
        }
        Some(Key::Id(id)) => {
            sql.push(" WHERE id = ").bind(*id);
        }
        None => {}
    }
    sql.push(" ORDER BY id");
    let rows: Vec<CollectionRow> = sql.all_as(db).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut collections = Vec::with_capacity(rows.len());
    for row in rows {
        collections.push(Collection {
            id: i64::from(row.id),
            slug: CollectionSlug::parse(&row.slug).map_err(StorageError::corrupt)?,
            name: row.name,
            is_singleton: row.is_singleton,
            created_at: row.created_at,
            updated_at: row.updated_at,
            presentation: presentation(
                row.display_field,
                row.display_template,
                row.list_columns.as_deref(),
                row.form_layout.as_deref(),
            )?,
            fields: Vec::new(),
            schema: CollectionSchema::default(),
        });
    }

    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT id, collection_id, name, type AS field_type, translatable, {}, sort FROM fields",
        json_out(backend, "settings") + " AS settings"
    ));
    if key.is_some() {
        sql.push(" WHERE collection_id = ");
        let id = collections.first().map_or(0, |c| c.id);
        sql.bind(id_param(id).unwrap_or(0));
    }
    sql.push(" ORDER BY collection_id, sort, id");
    for row in sql.all_as::<FieldRow, _>(db).await? {
        let name = row.name;
        let field_type = FieldType::parse(&row.field_type).map_err(StorageError::corrupt)?;
        let settings = parse_json(row.settings.as_deref())?;
        let def = FieldDef::new(&name, field_type, row.translatable, &settings)
            .map_err(|e| StorageError::corrupt(format!("field {name}: {e}")))?;
        let collection_id = i64::from(row.collection_id);
        if let Some(c) = collections.iter_mut().find(|c| c.id == collection_id) {
            c.fields.push(StoredField {
                id: i64::from(row.id),
                sort: row.sort,
                def,
            });
        }
    }
    for c in &mut collections {
        c.schema = CollectionSchema::new(c.fields.iter().map(|f| f.def.clone()).collect())
            .map_err(StorageError::corrupt)?;
    }
    Ok(collections)
}

/// Creates the collection or updates it to match `def`, in one transaction: fields are matched
/// by name (keeping their ids), added, updated, re-sorted, and fields no longer listed are
/// removed (with their item links). Item `data` keeps values of removed fields until the next
/// write of each item; reads ignore keys that are not in the schema.
///
/// Returns the stored collection and whether anything changed, so `apply` can be idempotent and
/// say so.
///
/// # Errors
/// A database error (the transaction is rolled back, nothing changes).
#[instrument(skip_all, err, fields(collection = %def.slug))]
pub async fn save_collection<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    def: &CollectionDef,
) -> Result<(Collection, bool), StorageError> {
    CollectionSchema::new(def.fields.clone()).map_err(|e| StorageError::conflict(e.to_string()))?;
    let tx = crate::sql::begin_write(db).await?;
    let backend = tx.get_database_backend();
    let at = now();
    let mut changed = false;
    let existing = collection_by_slug(&tx, def.slug.as_str()).await?;
    let collection_id = if let Some(c) = &existing {
        if c.name != def.name || c.is_singleton != def.is_singleton {
            let mut sql = Sql::new(backend);
            sql.push("UPDATE collections SET name = ")
                .bind(def.name.clone())
                .push(", is_singleton = ")
                .bind(def.is_singleton)
                .push(", updated_at = ")
                .bind(at)
                .push(" WHERE id = ")
                .bind(id_param(c.id).unwrap_or(0));
            sql.execute(&tx).await?;
            changed = true;
        }
        c.id
    } else {
        let mut sql = Sql::new(backend);
        sql.push(
            "INSERT INTO collections (slug, name, is_singleton, created_at, updated_at) VALUES (",
        )
        .bind(def.slug.as_str())
        .push(", ")
        .bind(def.name.clone())
        .push(", ")
        .bind(def.is_singleton)
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(at)
        .push(")");
        changed = true;
        sql.insert_returning_id(&tx).await?
    };
    let cid = id_param(collection_id).unwrap_or(0);
    let old_fields = existing.map(|c| c.fields).unwrap_or_default();

    // Fields whose derived rows (links, unique claims) must be rebuilt from the items' data.
    let mut relink = Vec::new();
    let mut reclaim = Vec::new();
    for old in &old_fields {
        if !def.fields.iter().any(|f| f.name == old.def.name) {
            let mut sql = Sql::new(backend);
            sql.push("DELETE FROM fields WHERE id = ")
                .bind(id_param(old.id).unwrap_or(0));
            sql.execute(&tx).await?;
            // Claims are keyed by name: a field added later under the same name starts clean.
            unclaim(&tx, cid, old.def.name.as_str()).await?;
            changed = true;
        }
    }
    for (position, field) in def.fields.iter().enumerate() {
        let sort = i32::try_from(position).unwrap_or(i32::MAX);
        let settings: Json = field.settings.to_json();
        match old_fields.iter().find(|f| f.def.name == field.name) {
            Some(old) if old.def == *field && old.sort == sort => {}
            Some(old) => {
                if links_change(&old.def, field) {
                    let mut sql = Sql::new(backend);
                    sql.push("DELETE FROM item_links WHERE field_id = ")
                        .bind(id_param(old.id).unwrap_or(0));
                    sql.execute(&tx).await?;
                    relink.push(field.name.clone());
                }
                let (was, is) = (is_unique(&old.def), is_unique(field));
                if was && (!is || old.def.translatable != field.translatable) {
                    unclaim(&tx, cid, field.name.as_str()).await?;
                }
                if is && (!was || old.def.translatable != field.translatable) {
                    reclaim.push(field.name.clone());
                }
                let mut sql = Sql::new(backend);
                sql.push("UPDATE fields SET type = ")
                    .bind(field.field_type.as_str())
                    .push(", translatable = ")
                    .bind(field.translatable)
                    .push(", settings = ")
                    .bind_json(&settings)
                    .push(", sort = ")
                    .bind(sort)
                    .push(" WHERE id = ")
                    .bind(id_param(old.id).unwrap_or(0));
                sql.execute(&tx).await?;
                changed = true;
            }
            None => {
                let mut sql = Sql::new(backend);
                sql.push("INSERT INTO fields (collection_id, name, type, translatable, settings, sort) VALUES (")
                    .bind(cid)
                    .push(", ")
                    .bind(field.name.as_str())
                    .push(", ")
                    .bind(field.field_type.as_str())
                    .push(", ")
                    .bind(field.translatable)
                    .push(", ")
                    .bind_json(&settings)
                    .push(", ")
                    .bind(sort)
                    .push(")");
                sql.execute(&tx).await?;
                changed = true;
            }
        }
    }
    let saved = collection_by_id(&tx, collection_id)
        .await?
        .ok_or(StorageError::NotFound { what: "collection" })?;
    if !relink.is_empty() || !reclaim.is_empty() {
        rebuild_derived(&tx, &saved, &relink, &reclaim).await?;
    }
    if changed {
        rebuild_scalar_index(&tx, &saved).await?;
    }
    tx.commit().await?;
    Ok((saved, changed))
}

/// Recreates the collection's scalar index (SQLite) for its current fields; see
/// `filter_sql::scalar_index_sql`.
pub(crate) async fn rebuild_scalar_index<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
) -> Result<(), StorageError> {
    let (drop, create) = scalar_index_sql(
        tx.get_database_backend(),
        collection.id,
        collection.schema(),
    )?;
    tx.execute_unprepared(&drop).await?;
    if let Some(create) = create {
        tx.execute_unprepared(&create).await?;
    }
    Ok(())
}

pub(crate) fn is_unique(field: &FieldDef) -> bool {
    field.settings.has_rule(RuleOperator::Unique)
}

/// Whether a field's link rows no longer describe its values: a different type, translatability
/// or relation target.
fn links_change(old: &FieldDef, new: &FieldDef) -> bool {
    old.field_type != new.field_type
        || old.translatable != new.translatable
        || old.settings.kind != new.settings.kind
}

pub(crate) async fn unclaim<C: ConnectionTrait>(
    tx: &C,
    cid: i32,
    field: &str,
) -> Result<(), StorageError> {
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM item_unique_values WHERE collection_id = ")
        .bind(cid)
        .push(" AND field = ")
        .bind(field);
    sql.execute(tx).await?;
    Ok(())
}

/// Rebuilds link rows and `unique` claims of the given fields from every item's stored data
/// (soft-deleted items included: they keep both). A schema change is rare and runs once; a
/// duplicate among the existing values refuses the change ([`StorageError::Conflict`]).
async fn rebuild_derived<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    relink: &[FieldName],
    reclaim: &[FieldName],
) -> Result<(), StorageError> {
    let backend = tx.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT id, {} AS data FROM items WHERE collection_id = ",
        json_out(backend, "data")
    ))
    .bind(id_param(collection.id).unwrap_or(0))
    .push(" ORDER BY id");
    for row in sql.all_as::<ItemDataRow, _>(tx).await? {
        let id = i64::from(row.id);
        let Json::Object(data) = parse_json(row.data.as_deref())? else {
            continue;
        };
        if !relink.is_empty() {
            sync_links(tx, collection, id, &data, Some(relink)).await?;
        }
        let checks: Vec<UniqueCheck> = reclaim
            .iter()
            .filter_map(|name| collection.field(name.as_str()).map(|f| (name, f)))
            .flat_map(|(name, f)| {
                stored_unique_values(name, f.def.translatable, data.get(name.as_str()))
            })
            .collect();
        claim_unique(tx, collection, id, &checks)
            .await
            .map_err(|e| match e {
                StorageError::Invalid(errors) => StorageError::conflict(format!(
                    "existing items hold duplicate values ({}); make them unique before adding the rule",
                    errors.iter().map(|(k, _)| k).collect::<Vec<_>>().join(", ")
                )),
                other => other,
            })?;
    }
    Ok(())
}

/// The values a stored field holds that a `unique` rule claims, as the domain crate reports them
/// on write: per locale for translatable fields, empty values skipped.
pub(crate) fn stored_unique_values(
    name: &FieldName,
    translatable: bool,
    value: Option<&Json>,
) -> Vec<UniqueCheck> {
    let is_empty = |v: &Json| match v {
        Json::Null => true,
        Json::String(s) => s.trim().is_empty(),
        Json::Array(a) => a.is_empty(),
        _ => false,
    };
    let check = |locale: Option<LocaleCode>, v: &Json| UniqueCheck {
        field: name.clone(),
        locale,
        value: v.clone(),
    };
    match value {
        None | Some(Json::Null) => Vec::new(),
        Some(Json::Object(map)) if translatable => map
            .iter()
            .filter(|(_, v)| !is_empty(v))
            .filter_map(|(k, v)| LocaleCode::parse(k).ok().map(|code| check(Some(code), v)))
            .collect(),
        Some(v) if !is_empty(v) => vec![check(None, v)],
        Some(_) => Vec::new(),
    }
}

/// Deletes a collection with its fields, items, revisions, links and grants (foreign keys
/// cascade).
///
/// # Errors
/// [`StorageError::NotFound`] when there is no such collection.
#[instrument(skip_all, err, fields(collection = slug))]
pub async fn delete_collection<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    slug: &str,
) -> Result<(), StorageError> {
    let tx = crate::sql::begin_write(db).await?;
    let Some(collection) = collection_by_slug(&tx, slug).await? else {
        return Err(StorageError::NotFound { what: "collection" });
    };
    let (drop, _) = scalar_index_sql(
        tx.get_database_backend(),
        collection.id,
        collection.schema(),
    )?;
    tx.execute_unprepared(&drop).await?;
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("DELETE FROM collections WHERE id = ")
        .bind(id_param(collection.id).unwrap_or(0));
    sql.execute(&tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Stores a collection's [`Presentation`] (all four columns; `None` clears one) and touches
/// `updated_at`. The caller has checked it against the collection's fields.
///
/// # Errors
/// [`StorageError::NotFound`] when there is no such collection; a database error.
#[instrument(skip_all, err, fields(collection_id = id))]
pub async fn set_presentation<C: ConnectionTrait>(
    db: &C,
    id: i64,
    presentation: &Presentation,
) -> Result<(), StorageError> {
    let backend = db.get_database_backend();
    let id = id_param(id).ok_or(StorageError::NotFound { what: "collection" })?;
    let list_columns = presentation
        .list_columns
        .as_ref()
        .map(|names| Json::from(names.clone()));
    let mut sql = Sql::new(backend);
    sql.push("UPDATE collections SET display_field = ")
        .bind(presentation.display_field.clone())
        .push(", display_template = ")
        .bind(presentation.display_template.clone());
    sql.push(", list_columns = ");
    match &list_columns {
        Some(value) => sql.bind_json(value),
        None => sql.push("NULL"),
    };
    sql.push(", form_layout = ");
    match &presentation.form_layout {
        Some(value) => sql.bind_json(value),
        None => sql.push("NULL"),
    };
    sql.push(", updated_at = ")
        .bind(now())
        .push(" WHERE id = ")
        .bind(id);
    if sql.execute(db).await? == 0 {
        return Err(StorageError::NotFound { what: "collection" });
    }
    Ok(())
}

#[derive(FromQueryResult)]
struct CountByCollection {
    collection_id: i32,
    n: i64,
}

/// How many live (not soft-deleted) items each collection holds, by collection id (collections
/// without items are absent): one grouped query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn live_item_counts<C: ConnectionTrait>(
    db: &C,
) -> Result<std::collections::BTreeMap<i64, u64>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT collection_id, COUNT(*) AS n FROM items WHERE deleted_at IS NULL \
         GROUP BY collection_id",
    );
    Ok(sql
        .all_as::<CountByCollection, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            (
                i64::from(row.collection_id),
                u64::try_from(row.n).unwrap_or(0),
            )
        })
        .collect())
}
