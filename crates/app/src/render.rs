//! Items as CollectionItemResource, with the opt-in expansions of `include`.
//!
//! Expansion is batched: whatever the page size, one query per related collection, one for every
//! file referenced (top level, inside blocks and inside related items), and one for users. The
//! order of work matters for access: values are flattened to the locale and redacted by the
//! role's field rules first, so a hidden field is never expanded; related items pass the role's
//! read grant and item filter or stay lean links; files follow the file grant mapping.
//!
//! Expansion is bounded (security review 2026-11, R5): at most [`EXPAND_PER_FIELD`] links of one
//! relation field of one item are expanded, the rest stay lean links (the array keeps every link,
//! so its length is the true count and a client pages the rest with `filter[id][_in]`). Each
//! related item is rendered to JSON text once per page and copied as text into every item that
//! links to it, and items are written straight to text: no `serde_json::Value` tree of the page
//! is built, which cost about 14 times the response's size.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use vellum_domain::{FieldDef, LocaleSelection, TypeSettings, ValueShape, flatten_for_read};
use vellum_policy::{FileExpansion, WriteEcho};
use vellum_storage::files::{StoredFile, get_files};
use vellum_storage::items::{Item, items_by_ids, with_role_view};
use vellum_storage::model::Collection;
use vellum_storage::users::{MiniUser, users_by_ids};

use crate::actor::Actor;
use crate::context::AppState;
use crate::error::AppError;
use crate::query::ReadQuery;
use crate::resources::{expanded_file, mini_user, timestamp};
use crate::transform_urls::FileUrls;

/// How many links of one relation field of one item `include` expands; the links after it stay
/// lean. 100, like the largest page: a page expands at most 100 x 100 related items per field.
pub const EXPAND_PER_FIELD: usize = 100;

/// An item rendered as CollectionItemResource, as JSON text.
pub type Rendered = Box<RawValue>;

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
) -> Result<Vec<Rendered>, AppError> {
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
        urls: state.file_urls(),
        files: &files,
        users: &users,
        query,
    };

    let none = HashMap::new();
    let mut nested: HashMap<(i64, i64), Rendered> = HashMap::with_capacity(related.len());
    for (key, mut p) in related {
        if query.include.files {
            ctx.expand_files(p.collection.schema().fields(), &mut p.data);
        }
        nested.insert(key, ctx.render(&p, &[], &none)?);
    }
    let mut out = Vec::with_capacity(top.len());
    for mut p in top.drain(..) {
        if query.include.files {
            ctx.expand_files(p.collection.schema().fields(), &mut p.data);
        }
        out.push(ctx.render(&p, &relation_fields, &nested)?);
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
) -> Result<Rendered, AppError> {
    let echo = with_role_view(collection, &actor.snapshot.locales, &item, |view| {
        actor.role.item_write_echo(&collection.slug, view)
    });
    match echo {
        WriteEcho::Resource => render_item(state, actor, collection, item, query).await,
        WriteEcho::IdOnly => to_text(&json!({ "id": item.id })),
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
) -> Result<Rendered, AppError> {
    let mut rendered = render_items(state, actor, collection, vec![item], query).await?;
    rendered
        .pop()
        .ok_or_else(|| AppError::Internal("rendering one item produced none".into()))
}

fn prepare(
    actor: &Actor,
    collection: Arc<Collection>,
    mut item: Item,
    selection: &LocaleSelection,
) -> Prepared {
    let mut data = flatten_for_read(
        collection.schema(),
        &item.data,
        selection,
        &actor.snapshot.locales,
    );
    // The stored form is not read again: freed now, a page does not hold its data twice.
    item.data = Map::new();
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

pub(crate) fn is_expandable(field: &FieldDef) -> bool {
    matches!(
        field.shape(),
        ValueShape::ItemId
            | ValueShape::ItemIds
            | ValueShape::JunctionLinks
            | ValueShape::CollectionLinks
    )
}

/// The collection a relation field (`relation`, `many_to_one`, `one_to_many`, `many_to_many`…)
/// points at, as stored.
#[must_use]
pub fn related_collection(field: &FieldDef) -> Option<i64> {
    match &field.settings.kind {
        TypeSettings::Relation(rel) | TypeSettings::ManyToMany { relation: rel, .. } => {
            rel.related_collection_id
        }
        _ => None,
    }
}

/// `(collection id, item id)` of every link in a relation value that expansion renders: the
/// first [`EXPAND_PER_FIELD`].
pub(crate) fn link_targets(field: &FieldDef, value: &Value) -> Vec<(i64, i64)> {
    let single = related_collection(field);
    match (field.shape(), value) {
        (ValueShape::ItemId, Value::Number(n)) => single.zip(n.as_i64()).into_iter().collect(),
        (ValueShape::ItemIds, Value::Array(ids)) => ids
            .iter()
            .take(EXPAND_PER_FIELD)
            .filter_map(Value::as_i64)
            .filter_map(|id| single.map(|c| (c, id)))
            .collect(),
        (ValueShape::JunctionLinks, Value::Array(entries)) => entries
            .iter()
            .take(EXPAND_PER_FIELD)
            .filter_map(|e| e.get("related_item_id").and_then(Value::as_i64))
            .filter_map(|id| single.map(|c| (c, id)))
            .collect(),
        (ValueShape::CollectionLinks, Value::Array(entries)) => entries
            .iter()
            .take(EXPAND_PER_FIELD)
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

/// A relation value as expansion writes it: the first [`EXPAND_PER_FIELD`] links the role may
/// see replaced by their related resources (copied from `nested` as text), the others lean.
struct LinksOut<'a> {
    field: &'a FieldDef,
    value: &'a Value,
    nested: &'a HashMap<(i64, i64), Rendered>,
}

impl LinksOut<'_> {
    fn lookup(&self, cid: Option<i64>, id: Option<i64>) -> Option<&RawValue> {
        self.nested.get(&(cid?, id?)).map(AsRef::as_ref)
    }

    /// Writes `entries`, each of the first [`EXPAND_PER_FIELD`] through `expand` (which answers
    /// `None` to keep it lean).
    fn seq<'v, S: Serializer, E: Serialize>(
        serializer: S,
        entries: &'v [Value],
        expand: impl Fn(&'v Value) -> Option<E>,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(entries.len()))?;
        for (i, entry) in entries.iter().enumerate() {
            match (i < EXPAND_PER_FIELD).then(|| expand(entry)).flatten() {
                Some(expanded) => seq.serialize_element(&expanded)?,
                None => seq.serialize_element(entry)?,
            }
        }
        seq.end()
    }
}

/// `{item, meta}`: an expanded many_to_many entry.
struct JunctionOut<'a> {
    item: &'a RawValue,
    meta: &'a Value,
}

impl Serialize for JunctionOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = Value::Object(Map::new());
        let meta = if self.meta.is_null() {
            &empty
        } else {
            self.meta
        };
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("item", self.item)?;
        map.serialize_entry("meta", meta)?;
        map.end()
    }
}

/// `{related_collection_id, related_item_id, item}`: an expanded m2a entry.
struct CollectionLinkOut<'a> {
    collection_id: i64,
    item_id: i64,
    item: &'a RawValue,
}

impl Serialize for CollectionLinkOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("related_collection_id", &self.collection_id)?;
        map.serialize_entry("related_item_id", &self.item_id)?;
        map.serialize_entry("item", self.item)?;
        map.end()
    }
}

impl Serialize for LinksOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let single = related_collection(self.field);
        match (self.field.shape(), self.value) {
            (ValueShape::ItemId, value) => match self.lookup(single, value.as_i64()) {
                Some(item) => item.serialize(serializer),
                None => value.serialize(serializer),
            },
            (ValueShape::ItemIds, Value::Array(ids)) => {
                Self::seq(serializer, ids, |id| self.lookup(single, id.as_i64()))
            }
            (ValueShape::JunctionLinks, Value::Array(entries)) => {
                Self::seq(serializer, entries, |entry| {
                    let id = entry.get("related_item_id").and_then(Value::as_i64);
                    self.lookup(single, id).map(|item| JunctionOut {
                        item,
                        meta: entry.get("meta").unwrap_or(&Value::Null),
                    })
                })
            }
            (ValueShape::CollectionLinks, Value::Array(entries)) => {
                Self::seq(serializer, entries, |entry| {
                    let cid = entry.get("related_collection_id").and_then(Value::as_i64)?;
                    let id = entry.get("related_item_id").and_then(Value::as_i64)?;
                    self.lookup(Some(cid), Some(id))
                        .map(|item| CollectionLinkOut {
                            collection_id: cid,
                            item_id: id,
                            item,
                        })
                })
            }
            (_, value) => value.serialize(serializer),
        }
    }
}

/// An item's `data` with its expanded relation fields written through [`LinksOut`].
struct DataOut<'a> {
    data: &'a Map<String, Value>,
    relation_fields: &'a [&'a FieldDef],
    nested: &'a HashMap<(i64, i64), Rendered>,
}

impl Serialize for DataOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.data.len()))?;
        for (key, value) in self.data {
            match self.relation_fields.iter().find(|f| f.name.as_str() == key) {
                Some(field) => map.serialize_entry(
                    key,
                    &LinksOut {
                        field,
                        value,
                        nested: self.nested,
                    },
                )?,
                None => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// The nine keys of CollectionItemResource.
struct ResourceOut<'a> {
    p: &'a Prepared,
    data: DataOut<'a>,
    user_created: Value,
    user_updated: Value,
}

impl Serialize for ResourceOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let item = &self.p.item;
        let mut map = serializer.serialize_map(Some(9))?;
        map.serialize_entry("id", &item.id)?;
        map.serialize_entry("collection_id", &item.collection_id)?;
        map.serialize_entry("data", &self.data)?;
        map.serialize_entry("created_at", &timestamp(item.created_at))?;
        map.serialize_entry("updated_at", &timestamp(item.updated_at))?;
        map.serialize_entry("user_created_id", &item.user_created_id)?;
        map.serialize_entry("user_updated_id", &item.user_updated_id)?;
        map.serialize_entry("user_created", &self.user_created)?;
        map.serialize_entry("user_updated", &self.user_updated)?;
        map.end()
    }
}

fn to_text(value: &impl Serialize) -> Result<Rendered, AppError> {
    serde_json::value::to_raw_value(value).map_err(|err| AppError::Internal(Box::new(err)))
}

/// Every file id referenced by file fields of `data`, inside blocks too.
pub(crate) fn collect_file_ids(fields: &[FieldDef], data: &Map<String, Value>, out: &mut Vec<i64>) {
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
    urls: FileUrls<'a>,
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
            FileExpansion::Expanded => Some(expanded_file(&self.urls, file)),
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

    /// `p` as CollectionItemResource text, `relation_fields` expanded from `nested`.
    fn render(
        &self,
        p: &Prepared,
        relation_fields: &[&FieldDef],
        nested: &HashMap<(i64, i64), Rendered>,
    ) -> Result<Rendered, AppError> {
        to_text(&ResourceOut {
            p,
            data: DataOut {
                data: &p.data,
                relation_fields,
                nested,
            },
            user_created: self.user(p.item.user_created_id),
            user_updated: self.user(p.item.user_updated_id),
        })
    }
}
