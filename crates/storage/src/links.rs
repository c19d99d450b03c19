//! Relation links: the `item_links` rows mirroring each relation value of an item's `data`
//! (many_to_one, one_to_many, relation_many, many_to_many with `meta` and order, m2a).
//!
//! `data` stays the source of truth for an item's own reads (the lean link shapes come straight
//! from it). The link rows exist for what `data` cannot do cheaply: batched expansion of a page
//! (one query per relation field per page, [`links_for_items`] + [`crate::items::items_by_ids`])
//! and reverse lookups ("which items point at this one", [`referencing_items`]), both indexed.
//! They are rewritten in the same transaction as the item, so they never drift.
//!
//! Before an item is stored, [`check_references`] refuses links to items or files that do not
//! exist (or not where the field points), in the same transaction.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use sea_orm::{ConnectionTrait, FromQueryResult};
use serde_json::{Map, Value as Json};
use tracing::instrument;
use vellum_domain::{
    FieldName, RefTarget, Reference, TypeSettings, ValidationErrors, ValueShape, references,
};

use crate::StorageError;
use crate::model::{Collection, StoredField};
use crate::sql::{IdRow, Sql, id_param, json_out, parse_json};

/// One link of a relation field of an item.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub item_id: i64,
    pub field_id: i64,
    pub position: i32,
    pub related_collection_id: i64,
    pub related_item_id: i64,
    /// many_to_many junction values; `None` for other relation types.
    pub meta: Option<Json>,
}

/// The related collection a relation field points at, once resolved to an id.
fn related_collection(field: &StoredField) -> Option<i64> {
    match &field.def.settings.kind {
        TypeSettings::Relation(rel) | TypeSettings::ManyToMany { relation: rel, .. } => {
            rel.related_collection_id
        }
        _ => None,
    }
}

/// Whether `field` keeps link rows. Translatable m2a values are locale maps; their links are
/// read from `data` only.
pub(crate) fn is_linked(field: &StoredField) -> bool {
    !field.def.translatable
        && matches!(
            field.def.shape(),
            ValueShape::ItemId
                | ValueShape::ItemIds
                | ValueShape::JunctionLinks
                | ValueShape::CollectionLinks
        )
}

fn as_id(v: &Json) -> Option<i64> {
    v.as_i64().filter(|id| id_param(*id).is_some())
}

/// The links `value` (a normalized stored value of `field`) describes, in order.
fn links_of(field: &StoredField, item_id: i64, value: &Json) -> Vec<Link> {
    let related = related_collection(field);
    let mut links = Vec::new();
    let mut push = |related_collection_id: Option<i64>, related_item_id: Option<i64>, meta| {
        if let (Some(rc), Some(ri)) = (related_collection_id, related_item_id) {
            links.push(Link {
                item_id,
                field_id: field.id,
                position: i32::try_from(links.len()).unwrap_or(i32::MAX),
                related_collection_id: rc,
                related_item_id: ri,
                meta,
            });
        }
    };
    let entries: &[Json] = value.as_array().map_or(&[], Vec::as_slice);
    match field.def.shape() {
        ValueShape::ItemId => push(related, as_id(value), None),
        ValueShape::ItemIds => {
            for v in entries {
                push(related, as_id(v), None);
            }
        }
        ValueShape::JunctionLinks => {
            for v in entries {
                let meta = v.get("meta").cloned().filter(|m| !m.is_null());
                push(related, v.get("related_item_id").and_then(as_id), meta);
            }
        }
        ValueShape::CollectionLinks => {
            for v in entries {
                push(
                    v.get("related_collection_id").and_then(as_id),
                    v.get("related_item_id").and_then(as_id),
                    None,
                );
            }
        }
        _ => {}
    }
    links
}

/// Rewrites the link rows of `fields` for item `item_id` from its stored `data`, and its
/// `item_files` rows ([`crate::item_files`]). Call inside the item's write transaction.
pub(crate) async fn sync_links<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    item_id: i64,
    data: &Map<String, Json>,
    only: Option<&[vellum_domain::FieldName]>,
) -> Result<(), StorageError> {
    // The file reverse index is derived from the same data at the same moments.
    crate::item_files::sync_item_files(tx, collection, item_id, data, only).await?;
    let backend = tx.get_database_backend();
    let fields: Vec<&StoredField> = collection
        .fields
        .iter()
        .filter(|f| is_linked(f))
        .filter(|f| only.is_none_or(|names| names.contains(&f.def.name)))
        .collect();
    if fields.is_empty() {
        return Ok(());
    }
    let item = id_param(item_id).ok_or(StorageError::NotFound { what: "item" })?;
    let mut sql = Sql::new(backend);
    sql.push("DELETE FROM item_links WHERE item_id = ")
        .bind(item)
        .push(" AND field_id IN ");
    sql.bind_list(fields.iter().map(|f| id_param(f.id).unwrap_or(0)));
    sql.execute(tx).await?;

    let links: Vec<Link> = fields
        .iter()
        .flat_map(|f| {
            links_of(
                f,
                item_id,
                data.get(f.def.name.as_str()).unwrap_or(&Json::Null),
            )
        })
        .collect();
    // One multi-row INSERT per chunk (well under both backends' bind-parameter limits).
    for chunk in links.chunks(100) {
        let mut sql = Sql::new(backend);
        sql.push("INSERT INTO item_links (item_id, field_id, position, related_collection_id, related_item_id, meta) VALUES ");
        for (i, link) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.push("(")
                .bind(item)
                .push(", ")
                .bind(id_param(link.field_id).unwrap_or(0))
                .push(", ")
                .bind(link.position)
                .push(", ")
                .bind(id_param(link.related_collection_id).unwrap_or(0))
                .push(", ")
                .bind(id_param(link.related_item_id).unwrap_or(0))
                .push(", ");
            match &link.meta {
                Some(meta) => {
                    sql.bind_json(meta);
                }
                None => {
                    sql.push("NULL");
                }
            }
            sql.push(")");
        }
        sql.execute(tx).await?;
    }
    Ok(())
}

/// Ids named in a "not found" message; the rest are counted.
const LISTED_IDS: usize = 10;
/// Ids per existence query: far below both backends' bind-parameter limits, and no fewer than
/// the default `max_links`, so a field at its default cap costs one query.
const IDS_PER_QUERY: usize = 1000;

/// Refuses a write whose relation or file values point at nothing: an id that is not a live item
/// of the field's related collection (unknown, soft-deleted, or an item of another collection),
/// an m2a entry whose item is not in the collection it names, a file id that is not a live file
/// (not a folder). Every problem is reported as [`StorageError::Invalid`], keyed like the domain
/// crate's errors (`tags`, `content.2.author`), naming the ids. Call inside the write's
/// transaction, before the item is stored.
///
/// One query per target (related collection, or files) whatever the number of fields linking
/// there, chunked by [`IDS_PER_QUERY`]; a write without links costs none.
///
/// `only` restricts the check to the top-level fields a PATCH sends. `existing` is the stored
/// data an update replaces: a link it already held in the same field is not checked again, so a
/// client can send back what it read even when a related item was deleted since (deleting an item
/// leaves the links to it in place, see `docs/api.md`).
pub(crate) async fn check_references<C: ConnectionTrait>(
    tx: &C,
    collection: &Collection,
    data: &Map<String, Json>,
    only: Option<&[FieldName]>,
    existing: Option<&Map<String, Json>>,
) -> Result<(), StorageError> {
    let fields = collection.schema().fields();
    let mut refs = references(fields, data, only);
    if let Some(existing) = existing {
        let kept: HashSet<(FieldName, RefTarget, i64)> = references(fields, existing, only)
            .into_iter()
            .flat_map(|r| {
                let (root, target) = (r.root, r.target);
                r.ids
                    .into_iter()
                    .map(move |id| (root.clone(), target.clone(), id))
            })
            .collect();
        for r in &mut refs {
            r.ids
                .retain(|id| !kept.contains(&(r.root.clone(), r.target.clone(), *id)));
        }
        refs.retain(|r| !r.ids.is_empty());
    }
    if refs.is_empty() {
        return Ok(());
    }
    let mut wanted: BTreeMap<&RefTarget, BTreeSet<i64>> = BTreeMap::new();
    for r in &refs {
        wanted.entry(&r.target).or_default().extend(&r.ids);
    }
    let mut found: BTreeMap<&RefTarget, HashSet<i64>> = BTreeMap::new();
    for (target, ids) in wanted {
        found.insert(target, live_ids(tx, target, &ids).await?);
    }
    let mut errors = ValidationErrors::new();
    // Slugs for the messages, one query per related collection however many values name it
    // (a body can hold thousands of blocks, each a reference of its own).
    let mut slugs: HashMap<i64, Option<String>> =
        HashMap::from([(collection.id, Some(collection.slug.to_string()))]);
    for r in &refs {
        let missing: Vec<i64> = r
            .ids
            .iter()
            .copied()
            .filter(|id| !found.get(&r.target).is_some_and(|f| f.contains(id)))
            .collect();
        if !missing.is_empty() {
            errors.add(
                r.path.clone(),
                not_found(tx, &mut slugs, r, &missing).await?,
            );
        }
    }
    errors.into_result(()).map_err(StorageError::Invalid)
}

/// Which of `ids` are live at `target`.
async fn live_ids<C: ConnectionTrait>(
    tx: &C,
    target: &RefTarget,
    ids: &BTreeSet<i64>,
) -> Result<HashSet<i64>, StorageError> {
    // An id beyond the id column's range cannot exist.
    let params: Vec<i32> = ids.iter().filter_map(|id| id_param(*id)).collect();
    let mut found = HashSet::with_capacity(params.len());
    for chunk in params.chunks(IDS_PER_QUERY) {
        let mut sql = Sql::new(tx.get_database_backend());
        match target {
            RefTarget::Items(collection_id) => {
                let Some(cid) = id_param(*collection_id) else {
                    return Ok(found);
                };
                sql.push("SELECT id FROM items WHERE collection_id = ")
                    .bind(cid)
                    .push(" AND deleted_at IS NULL AND id IN ");
            }
            RefTarget::ItemsBySlug(slug) => {
                sql.push("SELECT i.id AS id FROM items i JOIN collections c ON c.id = i.collection_id WHERE c.slug = ")
                    .bind(slug.as_str())
                    .push(" AND i.deleted_at IS NULL AND i.id IN ");
            }
            RefTarget::Files => {
                sql.push(
                    "SELECT id FROM files WHERE type = 'file' AND deleted_at IS NULL AND id IN ",
                );
            }
            RefTarget::Nowhere => return Ok(found),
        }
        sql.bind_list(chunk.iter().copied());
        // A file found here must stay until this write commits: a force delete waits for the
        // share lock and then sees the `item_files` row this write adds (files::trash).
        if *target == RefTarget::Files && sql.is_postgres() {
            sql.push(" FOR SHARE");
        }
        for row in sql.all_as::<IdRow, _>(tx).await? {
            found.insert(i64::from(row.id));
        }
    }
    Ok(found)
}

/// The message for the ids of `r` that were not found: the first [`LISTED_IDS`], and how many
/// more. Runs only when a write is refused; a related collection's slug is looked up once per
/// refused write (`slugs`).
async fn not_found<C: ConnectionTrait>(
    tx: &C,
    slugs: &mut HashMap<i64, Option<String>>,
    r: &Reference,
    missing: &[i64],
) -> Result<String, StorageError> {
    let mut list = missing
        .iter()
        .take(LISTED_IDS)
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if missing.len() > LISTED_IDS {
        list.push_str(&format!(" and {} more", missing.len() - LISTED_IDS));
    }
    let field = &r.field;
    Ok(match &r.target {
        RefTarget::Items(id) => {
            let slug = match slugs.get(id) {
                Some(slug) => slug.clone(),
                None => {
                    let slug = collection_slug(tx, *id).await?;
                    slugs.insert(*id, slug.clone());
                    slug
                }
            };
            match slug {
                Some(slug) => format!(
                    "The {field} field links items not found in collection `{slug}`: {list}."
                ),
                None => format!(
                    "The {field} field links collection {id}, which does not exist: {list}."
                ),
            }
        }
        RefTarget::ItemsBySlug(slug) => {
            format!("The {field} field links items not found in collection `{slug}`: {list}.")
        }
        RefTarget::Nowhere => {
            format!("The {field} field has no related collection, so it cannot link items: {list}.")
        }
        RefTarget::Files => format!("The {field} field links files not found: {list}."),
    })
}

async fn collection_slug<C: ConnectionTrait>(
    tx: &C,
    id: i64,
) -> Result<Option<String>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(tx.get_database_backend());
    sql.push("SELECT slug FROM collections WHERE id = ")
        .bind(id);
    Ok(sql.one_as::<SlugRow, _>(tx).await?.map(|row| row.slug))
}

/// The links of one relation field for a page of items, in item then position order: one query
/// whatever the page size.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(field_id, count = item_ids.len()))]
pub async fn links_for_items<C: ConnectionTrait>(
    db: &C,
    field_id: i64,
    item_ids: &[i64],
) -> Result<Vec<Link>, StorageError> {
    let ids: Vec<i32> = item_ids.iter().filter_map(|id| id_param(*id)).collect();
    let Some(field) = id_param(field_id) else {
        return Ok(Vec::new());
    };
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    sql.push(&format!(
        "SELECT item_id, field_id, position, related_collection_id, related_item_id, {} AS meta FROM item_links WHERE field_id = ",
        json_out(backend, "meta")
    ))
    .bind(field)
    .push(" AND item_id IN ");
    sql.bind_list(ids);
    sql.push(" ORDER BY item_id, position");
    sql.all_as::<LinkRow, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            let meta = parse_json(row.meta.as_deref())?;
            Ok(Link {
                item_id: i64::from(row.item_id),
                field_id: i64::from(row.field_id),
                position: row.position,
                related_collection_id: i64::from(row.related_collection_id),
                related_item_id: i64::from(row.related_item_id),
                meta: Some(meta).filter(|m| !m.is_null()),
            })
        })
        .collect()
}

/// The live items linking to (`related_collection_id`, `related_item_id`), as `(item_id,
/// field_id)` pairs: the reverse side of a relation (one_to_many views, "used in").
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(related_collection_id, related_item_id))]
pub async fn referencing_items<C: ConnectionTrait>(
    db: &C,
    related_collection_id: i64,
    related_item_id: i64,
) -> Result<Vec<(i64, i64)>, StorageError> {
    let (Some(rc), Some(ri)) = (id_param(related_collection_id), id_param(related_item_id)) else {
        return Ok(Vec::new());
    };
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT l.item_id AS item_id, l.field_id AS field_id FROM item_links l JOIN items i ON i.id = l.item_id WHERE l.related_collection_id = ")
        .bind(rc)
        .push(" AND l.related_item_id = ")
        .bind(ri)
        .push(" AND i.deleted_at IS NULL ORDER BY l.item_id, l.field_id");
    Ok(sql
        .all_as::<ReferenceRow, _>(db)
        .await?
        .into_iter()
        .map(|row| (i64::from(row.item_id), i64::from(row.field_id)))
        .collect())
}

/// A link row as [`links_for_items`] reads it (`meta` as JSON text).
#[derive(FromQueryResult)]
struct LinkRow {
    item_id: i32,
    field_id: i32,
    position: i32,
    related_collection_id: i32,
    related_item_id: i32,
    meta: Option<String>,
}

/// An item pointing at another, through one field.
#[derive(FromQueryResult)]
struct ReferenceRow {
    item_id: i32,
    field_id: i32,
}

#[derive(FromQueryResult)]
struct SlugRow {
    slug: String,
}
