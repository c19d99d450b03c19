//! The links a value holds: related items and files, as the storage layer must find them.
//!
//! Whether a related item or a file exists is not a domain question (it needs the database), but
//! *what* a value points at is: which ids, in which collection, under which error path. This
//! module answers that from the schema and the normalized `data` alone, so the storage layer can
//! check every target of a write with one batched query each, and every surface that writes items
//! inherits the same walk (top-level fields, locale maps of translatable fields, and relation and
//! file fields nested in blocks, whose links are embedded JSON without link rows).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::error::join_path;
use crate::{CollectionSlug, FieldDef, FieldName, TypeSettings, ValueShape};

/// Where the ids of a [`Reference`] must exist.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefTarget {
    /// Live items of the collection with this id.
    Items(i64),
    /// Live items of the collection with this slug. Manifests name related collections by slug
    /// and only top-level field settings are resolved to ids, so a relation field nested in
    /// blocks may carry the slug alone.
    ItemsBySlug(CollectionSlug),
    /// A relation field that names no related collection: no id can exist there.
    Nowhere,
    /// Live files (not folders).
    Files,
}

/// The distinct ids one field value (or one m2a collection of it) points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The top-level field the value belongs to (the field a PATCH names).
    pub root: FieldName,
    /// The error key: the field's name, or its path inside blocks (`content.2.author`), as
    /// [`crate::prepare_write`] reports other problems of the same value.
    pub path: String,
    /// The field's own name (the last segment of `path`), for messages.
    pub field: FieldName,
    pub target: RefTarget,
    /// Distinct ids, in the order the value first names them.
    pub ids: Vec<i64>,
}

/// Every link of `data` (a normalized, stored item `data`) under `fields`, grouped by error path
/// and target: one entry per relation or file field (per related collection for m2a). `only`
/// restricts the walk to those top-level fields (a PATCH checks what it sends).
///
/// # Example
/// ```
/// use serde_json::json;
/// use vellum_domain::*;
///
/// let tags = FieldDef::new("tags", FieldType::ManyToMany, false, &json!({"related_collection_id": 3})).unwrap();
/// let data = json!({"tags": [{"related_item_id": 7, "meta": {}}, {"related_item_id": 9, "meta": {}}]});
/// let refs = references(&[tags], data.as_object().unwrap(), None);
/// assert_eq!(refs.len(), 1);
/// assert_eq!((refs[0].path.as_str(), &refs[0].target, refs[0].ids.as_slice()), ("tags", &RefTarget::Items(3), &[7, 9][..]));
/// ```
#[must_use]
pub fn references(
    fields: &[FieldDef],
    data: &Map<String, Value>,
    only: Option<&[FieldName]>,
) -> Vec<Reference> {
    let mut acc = Acc::default();
    for field in fields {
        if only.is_some_and(|names| !names.contains(&field.name)) {
            continue;
        }
        if let Some(value) = data.get(field.name.as_str()) {
            walk_field(field, value, "", &field.name, &mut acc);
        }
    }
    acc.refs
}

#[derive(Default)]
struct Acc {
    refs: Vec<Reference>,
    index: HashMap<(String, RefTarget), (usize, HashSet<i64>)>,
}

impl Acc {
    fn push(
        &mut self,
        root: &FieldName,
        path: &str,
        field: &FieldName,
        target: RefTarget,
        id: i64,
    ) {
        let key = (path.to_owned(), target);
        let (at, seen) = self.index.entry(key.clone()).or_insert_with(|| {
            self.refs.push(Reference {
                root: root.clone(),
                path: key.0.clone(),
                field: field.clone(),
                target: key.1.clone(),
                ids: Vec::new(),
            });
            (self.refs.len() - 1, HashSet::new())
        });
        if seen.insert(id)
            && let Some(reference) = self.refs.get_mut(*at)
        {
            reference.ids.push(id);
        }
    }
}

fn walk_field(field: &FieldDef, value: &Value, prefix: &str, root: &FieldName, acc: &mut Acc) {
    let path = join_path(prefix, field.name.as_str());
    // A translatable value is a locale map; every translation links.
    match value {
        Value::Object(locales) if field.translatable => {
            for translation in locales.values() {
                walk_value(field, translation, &path, root, acc);
            }
        }
        other => walk_value(field, other, &path, root, acc),
    }
}

fn walk_value(field: &FieldDef, value: &Value, path: &str, root: &FieldName, acc: &mut Acc) {
    let ids = |value: &Value| -> Vec<i64> {
        match value {
            Value::Number(n) => n.as_i64().into_iter().collect(),
            Value::Array(list) => list.iter().filter_map(Value::as_i64).collect(),
            _ => Vec::new(),
        }
    };
    let name = &field.name;
    match field.shape() {
        ValueShape::FileId | ValueShape::FileIds => {
            for id in ids(value) {
                acc.push(root, path, name, RefTarget::Files, id);
            }
        }
        ValueShape::ItemId | ValueShape::ItemIds => {
            for id in ids(value) {
                acc.push(root, path, name, item_target(field), id);
            }
        }
        ValueShape::JunctionLinks => {
            for entry in value.as_array().map_or(&[][..], Vec::as_slice) {
                if let Some(id) = entry.get("related_item_id").and_then(Value::as_i64) {
                    acc.push(root, path, name, item_target(field), id);
                }
            }
        }
        ValueShape::CollectionLinks => {
            for entry in value.as_array().map_or(&[][..], Vec::as_slice) {
                let collection = entry.get("related_collection_id").and_then(Value::as_i64);
                let id = entry.get("related_item_id").and_then(Value::as_i64);
                if let (Some(collection), Some(id)) = (collection, id) {
                    acc.push(root, path, name, RefTarget::Items(collection), id);
                }
            }
        }
        ValueShape::Blocks => {
            let TypeSettings::Blocks(settings) = &field.settings.kind else {
                return;
            };
            for (i, block) in value
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .enumerate()
            {
                let block_type = block
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(|key| settings.block_type(key));
                let (Some(block_type), Some(Value::Object(data))) = (block_type, block.get("data"))
                else {
                    continue;
                };
                let prefix = format!("{path}.{i}");
                for nested in &block_type.fields {
                    if let Some(value) = data.get(nested.name.as_str()) {
                        walk_field(nested, value, &prefix, root, acc);
                    }
                }
            }
        }
        ValueShape::Text
        | ValueShape::Number
        | ValueShape::Boolean
        | ValueShape::StringList
        | ValueShape::Geometry
        | ValueShape::Fingerprint => {}
    }
}

/// The related collection of a relation field (not m2a: its entries name theirs).
fn item_target(field: &FieldDef) -> RefTarget {
    match &field.settings.kind {
        TypeSettings::Relation(rel) | TypeSettings::ManyToMany { relation: rel, .. } => {
            match (rel.related_collection_id, &rel.related_collection) {
                (Some(id), _) => RefTarget::Items(id),
                (None, Some(slug)) => RefTarget::ItemsBySlug(slug.clone()),
                (None, None) => RefTarget::Nowhere,
            }
        }
        _ => RefTarget::Nowhere,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defs(fields: Value) -> Vec<FieldDef> {
        fields
            .as_array()
            .unwrap()
            .iter()
            .map(|f| FieldDef::from_json(f).unwrap())
            .collect()
    }

    fn summary(refs: &[Reference]) -> Vec<(&str, &str, RefTarget, Vec<i64>)> {
        refs.iter()
            .map(|r| {
                (
                    r.root.as_str(),
                    r.path.as_str(),
                    r.target.clone(),
                    r.ids.clone(),
                )
            })
            .collect()
    }

    fn slug(s: &str) -> CollectionSlug {
        CollectionSlug::parse(s).unwrap()
    }

    #[test]
    fn every_link_shape_top_level_translated_and_nested_in_blocks() {
        let fields = defs(json!([
            {"name": "title", "type": "string"},
            {"name": "author", "type": "many_to_one", "settings": {"related_collection_id": 2}},
            {"name": "tags", "type": "many_to_many", "settings": {"related_collection_id": 3}},
            {"name": "picks", "type": "one_to_many", "settings": {"related_collection_id": 3, "allow_duplicates": true}},
            {"name": "mixed", "type": "m2a", "settings": {"allowed_collection_ids": [2, 3]}},
            {"name": "cover", "type": "image"},
            {"name": "gallery", "type": "files", "translatable": true},
            {"name": "orphan", "type": "relation"},
            {"name": "content", "type": "blocks", "settings": {"block_types": [
                {"key": "card", "fields": [
                    {"name": "who", "type": "many_to_one", "settings": {"related_collection": "authors"}},
                    {"name": "pic", "type": "file"}
                ]}
            ]}}
        ]));
        let data = json!({
            "title": "x",
            "author": 5,
            "tags": [{"related_item_id": 7, "meta": {}}, {"related_item_id": 8, "meta": {}}],
            "picks": [7, 7, 9],
            "mixed": [
                {"related_collection_id": 3, "related_item_id": 7},
                {"related_collection_id": 2, "related_item_id": 5},
                {"related_collection_id": 3, "related_item_id": 10}
            ],
            "cover": 11,
            "gallery": {"en": [12, 13], "de": [13, 14]},
            "orphan": 1,
            "content": [
                {"id": "00000000-0000-0000-0000-000000000001", "type": "card", "data": {"who": 5, "pic": 15}},
                {"id": "00000000-0000-0000-0000-000000000002", "type": "gone", "data": {"who": 99}},
                {"id": "00000000-0000-0000-0000-000000000003", "type": "card", "data": {"who": null}}
            ]
        });
        let refs = references(&fields, data.as_object().unwrap(), None);
        assert_eq!(
            summary(&refs),
            vec![
                ("author", "author", RefTarget::Items(2), vec![5]),
                ("tags", "tags", RefTarget::Items(3), vec![7, 8]),
                ("picks", "picks", RefTarget::Items(3), vec![7, 9]),
                ("mixed", "mixed", RefTarget::Items(3), vec![7, 10]),
                ("mixed", "mixed", RefTarget::Items(2), vec![5]),
                ("cover", "cover", RefTarget::Files, vec![11]),
                ("gallery", "gallery", RefTarget::Files, vec![12, 13, 14]),
                ("orphan", "orphan", RefTarget::Nowhere, vec![1]),
                (
                    "content",
                    "content.0.who",
                    RefTarget::ItemsBySlug(slug("authors")),
                    vec![5]
                ),
                ("content", "content.0.pic", RefTarget::Files, vec![15]),
            ]
        );
        assert_eq!(refs[9].field.as_str(), "pic");
    }

    #[test]
    fn only_the_named_fields_are_walked_and_empty_values_link_nothing() {
        let fields = defs(json!([
            {"name": "author", "type": "many_to_one", "settings": {"related_collection_id": 2}},
            {"name": "tags", "type": "one_to_many", "settings": {"related_collection_id": 3}}
        ]));
        let data = json!({"author": 5, "tags": [6]});
        let only = [FieldName::parse("tags").unwrap()];
        let refs = references(&fields, data.as_object().unwrap(), Some(&only));
        assert_eq!(
            summary(&refs),
            vec![("tags", "tags", RefTarget::Items(3), vec![6])]
        );
        let empty = json!({"author": null, "tags": []});
        assert!(references(&fields, empty.as_object().unwrap(), None).is_empty());
        assert!(references(&fields, &Map::new(), None).is_empty());
    }
}
