//! Items as CollectionItemResource, with the opt-in expansions of `include`.
//!
//! Expansion is batched: whatever the page size, one query per related collection, one for every
//! file referenced (top level, inside blocks and inside related items), and one for users. The
//! order of work matters for access: values are flattened to the locale and redacted by the
//! role's field rules first, so a hidden field is never expanded; related items pass the role's
//! read grant and item filter or stay lean links; files follow the file grant mapping.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use vellum_domain::{FieldDef, LocaleSelection, TypeSettings, ValueShape, flatten_for_read};
use vellum_policy::{FileExpansion, WriteEcho};
use vellum_storage::access::{MiniUser, users_by_ids};
use vellum_storage::collections::Collection;
use vellum_storage::files::{StoredFile, get_files};
use vellum_storage::items::{Item, items_by_ids, with_role_view};

use crate::actor::Actor;
use crate::error::ApiError;
use crate::query::ReadQuery;
use crate::resources::{expanded_file, mini_user, timestamp};
use crate::state::AppState;

/// An item's `data` after flattening and redaction, before expansion.
struct Prepared {
    collection: Arc<Collection>,
    item: Item,
    data: Map<String, Value>,
}

/// Renders `items` of `collection` for the actor.
///
/// # Errors
/// A database error while loading expansions.
pub async fn render_items(
    state: &AppState,
    actor: &Actor,
    collection: &Arc<Collection>,
    items: Vec<Item>,
    query: &ReadQuery,
) -> Result<Vec<Value>, ApiError> {
    let snapshot = &actor.snapshot;
    let mut top: Vec<Prepared> = items
        .into_iter()
        .map(|item| prepare(actor, Arc::clone(collection), item, &query.selection))
        .collect();

    // Related items, one query per related collection.
    let relation_fields: Vec<&FieldDef> = collection
        .schema()
        .fields()
        .iter()
        .filter(|f| query.include.has_field(f.name.as_str()) && is_expandable(f))
        .filter(|f| {
            top.first()
                .is_none_or(|p| p.data.contains_key(f.name.as_str()))
        })
        .collect();
    let mut wanted: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for prepared in &top {
        for field in &relation_fields {
            if let Some(value) = prepared.data.get(field.name.as_str()) {
                for (cid, iid) in link_targets(field, value) {
                    wanted.entry(cid).or_default().insert(iid);
                }
            }
        }
    }
    let mut related: HashMap<(i64, i64), Prepared> = HashMap::new();
    for (cid, ids) in wanted {
        let Some(target) = snapshot.collection_by_id(cid) else {
            continue;
        };
        let ids: Vec<i64> = ids.into_iter().collect();
        for item in items_by_ids(state.db(), cid, &ids).await? {
            if visible(actor, target, &item) {
                let id = item.id;
                related.insert(
                    (cid, id),
                    prepare(actor, Arc::clone(target), item, &query.selection),
                );
            }
        }
    }

    // Files and users, one query each, for the page and its related items together.
    let files = if query.include.files {
        let mut ids = Vec::new();
        for p in top.iter().chain(related.values()) {
            collect_file_ids(p.collection.schema().fields(), &p.data, &mut ids);
        }
        let loaded = get_files(state.db(), &ids).await?;
        loaded.into_iter().map(|f| (f.id, f)).collect()
    } else {
        HashMap::new()
    };
    let users: HashMap<i64, MiniUser> = if query.include.users {
        let ids: Vec<i64> = top
            .iter()
            .chain(related.values())
            .flat_map(|p| [p.item.user_created_id, p.item.user_updated_id])
            .flatten()
            .collect();
        users_by_ids(state.db(), &ids)
            .await?
            .into_iter()
            .map(|u| (u.id, u))
            .collect()
    } else {
        HashMap::new()
    };
    let ctx = Expand {
        actor,
        base_url: &state.config().base_url,
        files: &files,
        users: &users,
        query,
    };

    let mut nested: HashMap<(i64, i64), Value> = HashMap::with_capacity(related.len());
    for (key, mut p) in related {
        if query.include.files {
            ctx.expand_files(p.collection.schema().fields(), &mut p.data);
        }
        nested.insert(key, ctx.resource(p));
    }
    let mut out = Vec::with_capacity(top.len());
    for mut p in top.drain(..) {
        for field in &relation_fields {
            if let Some(value) = p.data.get_mut(field.name.as_str()) {
                expand_links(field, value, &nested);
            }
        }
        if query.include.files {
            ctx.expand_files(p.collection.schema().fields(), &mut p.data);
        }
        out.push(ctx.resource(p));
    }
    Ok(out)
}

/// Renders the item a create or update just wrote, through exactly the read policy a show of it
/// by the same actor would apply: the full resource (field rules, expansions) when the actor may
/// see the item, otherwise only `{"id": …}` ([`WriteEcho::IdOnly`]): a write grant never
/// widens what the actor reads.
///
/// # Errors
/// As [`render_items`].
pub async fn render_written_item(
    state: &AppState,
    actor: &Actor,
    collection: &Arc<Collection>,
    item: Item,
    query: &ReadQuery,
) -> Result<Value, ApiError> {
    let echo = with_role_view(collection, &actor.snapshot.locales, &item, |view| {
        actor.role.item_write_echo(&collection.slug, view)
    });
    match echo {
        WriteEcho::Resource => render_item(state, actor, collection, item, query).await,
        WriteEcho::IdOnly => Ok(json!({ "id": item.id })),
    }
}

/// Renders one item the actor may see (show; writes go through [`render_written_item`]).
///
/// # Errors
/// As [`render_items`].
pub async fn render_item(
    state: &AppState,
    actor: &Actor,
    collection: &Arc<Collection>,
    item: Item,
    query: &ReadQuery,
) -> Result<Value, ApiError> {
    let mut rendered = render_items(state, actor, collection, vec![item], query).await?;
    rendered
        .pop()
        .ok_or_else(|| ApiError::Internal("rendering one item produced none".into()))
}

fn prepare(
    actor: &Actor,
    collection: Arc<Collection>,
    item: Item,
    selection: &LocaleSelection,
) -> Prepared {
    let mut data = flatten_for_read(
        collection.schema(),
        &item.data,
        selection,
        &actor.snapshot.locales,
    );
    actor.role.field_policy(&collection.slug).redact(&mut data);
    Prepared {
        collection,
        item,
        data,
    }
}

/// Whether the role may see a related item: its read grant and item filter, judged on the item
/// as list and show judge it (the default locale, whatever the request's `locale`).
fn visible(actor: &Actor, collection: &Collection, item: &Item) -> bool {
    with_role_view(collection, &actor.snapshot.locales, item, |view| {
        actor.role.may_see_item(&collection.slug, view).allowed
    })
}

fn is_expandable(field: &FieldDef) -> bool {
    matches!(
        field.shape(),
        ValueShape::ItemId
            | ValueShape::ItemIds
            | ValueShape::JunctionLinks
            | ValueShape::CollectionLinks
    )
}

fn related_collection(field: &FieldDef) -> Option<i64> {
    match &field.settings.kind {
        TypeSettings::Relation(rel) | TypeSettings::ManyToMany { relation: rel, .. } => {
            rel.related_collection_id
        }
        _ => None,
    }
}

/// `(collection id, item id)` of every link in a relation value.
fn link_targets(field: &FieldDef, value: &Value) -> Vec<(i64, i64)> {
    let single = related_collection(field);
    match (field.shape(), value) {
        (ValueShape::ItemId, Value::Number(n)) => single.zip(n.as_i64()).into_iter().collect(),
        (ValueShape::ItemIds, Value::Array(ids)) => ids
            .iter()
            .filter_map(Value::as_i64)
            .filter_map(|id| single.map(|c| (c, id)))
            .collect(),
        (ValueShape::JunctionLinks, Value::Array(entries)) => entries
            .iter()
            .filter_map(|e| e.get("related_item_id").and_then(Value::as_i64))
            .filter_map(|id| single.map(|c| (c, id)))
            .collect(),
        (ValueShape::CollectionLinks, Value::Array(entries)) => entries
            .iter()
            .filter_map(|e| {
                Some((
                    e.get("related_collection_id")?.as_i64()?,
                    e.get("related_item_id")?.as_i64()?,
                ))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Replaces links with their related resources where the role may see them; the others stay
/// lean.
fn expand_links(field: &FieldDef, value: &mut Value, nested: &HashMap<(i64, i64), Value>) {
    let single = related_collection(field);
    let lookup =
        |cid: Option<i64>, id: Option<i64>| -> Option<Value> { nested.get(&(cid?, id?)).cloned() };
    match field.shape() {
        ValueShape::ItemId => {
            if let Some(item) = lookup(single, value.as_i64()) {
                *value = item;
            }
        }
        ValueShape::ItemIds => {
            if let Value::Array(ids) = value {
                for id in ids.iter_mut() {
                    if let Some(item) = lookup(single, id.as_i64()) {
                        *id = item;
                    }
                }
            }
        }
        ValueShape::JunctionLinks => {
            if let Value::Array(entries) = value {
                for entry in entries.iter_mut() {
                    let id = entry.get("related_item_id").and_then(Value::as_i64);
                    if let Some(item) = lookup(single, id) {
                        let meta = entry
                            .get("meta")
                            .cloned()
                            .filter(|m| !m.is_null())
                            .unwrap_or_else(|| json!({}));
                        *entry = json!({"item": item, "meta": meta});
                    }
                }
            }
        }
        ValueShape::CollectionLinks => {
            if let Value::Array(entries) = value {
                for entry in entries.iter_mut() {
                    let cid = entry.get("related_collection_id").and_then(Value::as_i64);
                    let id = entry.get("related_item_id").and_then(Value::as_i64);
                    if let (Some(item), Some(cid), Some(id)) = (lookup(cid, id), cid, id) {
                        *entry = json!({
                            "related_collection_id": cid,
                            "related_item_id": id,
                            "item": item,
                        });
                    }
                }
            }
        }
        _ => {}
    }
}

/// Every file id referenced by file fields of `data`, inside blocks too.
fn collect_file_ids(fields: &[FieldDef], data: &Map<String, Value>, out: &mut Vec<i64>) {
    for field in fields {
        let Some(value) = data.get(field.name.as_str()) else {
            continue;
        };
        match (field.shape(), &field.settings.kind, value) {
            (ValueShape::FileId, _, Value::Number(n)) => out.extend(n.as_i64()),
            (ValueShape::FileIds, _, Value::Array(ids)) => {
                out.extend(ids.iter().filter_map(Value::as_i64));
            }
            (ValueShape::Blocks, TypeSettings::Blocks(settings), Value::Array(blocks)) => {
                for block in blocks {
                    let block_type = block
                        .get("type")
                        .and_then(Value::as_str)
                        .and_then(|key| settings.block_type(key));
                    if let (Some(bt), Some(Value::Object(data))) = (block_type, block.get("data")) {
                        collect_file_ids(&bt.fields, data, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// What expansion needs once everything is loaded.
struct Expand<'a> {
    actor: &'a Actor,
    base_url: &'a str,
    files: &'a HashMap<i64, StoredFile>,
    users: &'a HashMap<i64, MiniUser>,
    query: &'a ReadQuery,
}

impl Expand<'_> {
    /// One file id as ExpandedFileField, `{id, access: 'denied'}`, or `None` (private without
    /// `read_private`, or gone): null in a single slot, omitted from arrays.
    fn file(&self, id: i64) -> Option<Value> {
        let file = self.files.get(&id)?;
        match self.actor.role.file_expansion(file.effective) {
            FileExpansion::Expanded => Some(expanded_file(self.base_url, file)),
            FileExpansion::Denied => Some(json!({"id": id, "access": "denied"})),
            FileExpansion::Hidden => None,
        }
    }

    fn expand_files(&self, fields: &[FieldDef], data: &mut Map<String, Value>) {
        for field in fields {
            let Some(value) = data.get_mut(field.name.as_str()) else {
                continue;
            };
            match (field.shape(), &field.settings.kind) {
                (ValueShape::FileId, _) => {
                    *value = value
                        .as_i64()
                        .and_then(|id| self.file(id))
                        .unwrap_or(Value::Null);
                }
                (ValueShape::FileIds, _) => {
                    let ids: Vec<i64> = value
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_i64).collect())
                        .unwrap_or_default();
                    *value = Value::Array(ids.into_iter().filter_map(|id| self.file(id)).collect());
                }
                (ValueShape::Blocks, TypeSettings::Blocks(settings)) => {
                    if let Value::Array(blocks) = value {
                        for block in blocks.iter_mut() {
                            let block_type = block
                                .get("type")
                                .and_then(Value::as_str)
                                .and_then(|key| settings.block_type(key));
                            if let (Some(bt), Some(Value::Object(data))) =
                                (block_type, block.get_mut("data"))
                            {
                                self.expand_files(&bt.fields, data);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn user(&self, id: Option<i64>) -> Value {
        if !self.query.include.users {
            return Value::Null;
        }
        id.and_then(|id| self.users.get(&id))
            .map_or(Value::Null, mini_user)
    }

    /// The nine keys of CollectionItemResource.
    fn resource(&self, p: Prepared) -> Value {
        json!({
            "id": p.item.id,
            "collection_id": p.item.collection_id,
            "data": Value::Object(p.data),
            "created_at": timestamp(p.item.created_at),
            "updated_at": timestamp(p.item.updated_at),
            "user_created_id": p.item.user_created_id,
            "user_updated_id": p.item.user_updated_id,
            "user_created": self.user(p.item.user_created_id),
            "user_updated": self.user(p.item.user_updated_id),
        })
    }
}
