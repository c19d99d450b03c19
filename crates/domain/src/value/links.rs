use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::scalar;
use crate::{JunctionField, JunctionFieldType};

const ID_MSG: &str = "must be an id (a positive integer).";

/// A positive integer id from an integer, a numeric string, or an object carrying `id` (the
/// expanded shapes a client read with `include`), so what was read can be written back.
fn id(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().filter(|i| *i > 0),
        Value::String(s) => s.trim().parse::<i64>().ok().filter(|i| *i > 0),
        Value::Object(obj) => obj.get("id").and_then(id),
        _ => None,
    }
}

/// An item or file id, or null.
pub(super) fn single_id(value: &Value) -> Result<Value, String> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::String(s) if s.trim().is_empty() => Ok(Value::Null),
        other => id(other).map(Value::from).ok_or_else(|| ID_MSG.to_owned()),
    }
}

/// How many links one value may hold, and what to call them in the message when it holds more
/// (`max_links`, checked before any entry is looked at, so an oversized list costs nothing).
#[derive(Debug, Clone, Copy)]
pub(super) struct Cap {
    pub max: usize,
    /// Singular: `link` or `file`.
    pub noun: &'static str,
}

impl Cap {
    fn check(self, len: usize) -> Result<(), String> {
        if len > self.max {
            let plural = if self.max == 1 { "" } else { "s" };
            return Err(format!(
                "may hold at most {} {}{plural}; got {len}.",
                self.max, self.noun
            ));
        }
        Ok(())
    }
}

/// A list of ids (`files`, `image` with `allow_multiple`, `one_to_many`, `relation_many`). A lone
/// id is a one-element list; null is `[]`. Order is kept; duplicates are an error unless allowed.
pub(super) fn id_list(value: &Value, allow_duplicates: bool, cap: Cap) -> Result<Value, String> {
    let items: Vec<&Value> = match value {
        Value::Null => Vec::new(),
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    };
    cap.check(items.len())?;
    let mut out: Vec<i64> = Vec::with_capacity(items.len());
    let mut seen: HashSet<i64> = HashSet::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let parsed = id(item).ok_or_else(|| format!("entry {i} {ID_MSG}"))?;
        if !seen.insert(parsed) && !allow_duplicates {
            return Err(format!("contains the id {parsed} more than once."));
        }
        out.push(parsed);
    }
    Ok(Value::Array(out.into_iter().map(Value::from).collect()))
}

/// many_to_many links `{ related_item_id, meta }`. Bare ids are accepted on write, as is the
/// expanded `{ item: {...}, meta }` shape; `meta` must fit `junction_fields`.
pub(super) fn junction_links(
    value: &Value,
    junction_fields: &[JunctionField],
    allow_duplicates: bool,
    cap: Cap,
) -> Result<Value, String> {
    let items: Vec<&Value> = match value {
        Value::Null => Vec::new(),
        Value::Array(list) => list.iter().collect(),
        other => vec![other],
    };
    cap.check(items.len())?;
    let mut out = Vec::with_capacity(items.len());
    let mut seen: HashSet<i64> = HashSet::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let (related, meta) = match item {
            Value::Object(obj) => {
                let related = obj
                    .get("related_item_id")
                    .or_else(|| obj.get("item"))
                    .and_then(id)
                    .ok_or_else(|| {
                        format!("entry {i} needs a related_item_id (a positive integer).")
                    })?;
                let meta = normalize_meta(obj.get("meta"), junction_fields)
                    .map_err(|m| format!("entry {i}: {m}"))?;
                (related, meta)
            }
            other => (
                id(other).ok_or_else(|| format!("entry {i} {ID_MSG}"))?,
                Map::new(),
            ),
        };
        if !seen.insert(related) && !allow_duplicates {
            return Err(format!("links the item {related} more than once."));
        }
        out.push(json!({"related_item_id": related, "meta": meta}));
    }
    Ok(Value::Array(out))
}

fn normalize_meta(
    meta: Option<&Value>,
    fields: &[JunctionField],
) -> Result<Map<String, Value>, String> {
    let obj = match meta {
        None | Some(Value::Null) => return Ok(Map::new()),
        Some(Value::Object(obj)) => obj,
        Some(_) => return Err("meta must be an object.".into()),
    };
    let mut out = Map::new();
    for (key, value) in obj {
        let field = fields
            .iter()
            .find(|f| f.name.as_str() == key)
            .ok_or_else(|| format!("meta.{key} is not a junction field."))?;
        let normalized = match field.field_type {
            JunctionFieldType::String => scalar::text(value),
            JunctionFieldType::Number => scalar::number(value),
            JunctionFieldType::Boolean => scalar::boolean(value),
        }
        .map_err(|m| format!("meta.{key} {m}"))?;
        out.insert(key.clone(), normalized);
    }
    Ok(out)
}

/// m2a entries `{ related_collection_id, related_item_id }`; the collection must be one of the
/// field's `allowed_collection_ids` (an m2a field that allows none accepts no entries).
pub(super) fn collection_links(
    value: &Value,
    allowed: &[i64],
    allow_duplicates: bool,
    cap: Cap,
) -> Result<Value, String> {
    let items: &[Value] = match value {
        Value::Null => &[],
        Value::Array(list) => list,
        _ => return Err("must be a list of { related_collection_id, related_item_id }.".into()),
    };
    cap.check(items.len())?;
    let mut out = Vec::with_capacity(items.len());
    let mut seen: HashSet<(i64, i64)> = HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let obj = item.as_object().ok_or_else(|| {
            format!("entry {i} must be an object with related_collection_id and related_item_id.")
        })?;
        let collection = obj
            .get("related_collection_id")
            .and_then(id)
            .ok_or_else(|| {
                format!("entry {i} needs a related_collection_id (a positive integer).")
            })?;
        let item_id = obj
            .get("related_item_id")
            .or_else(|| obj.get("item"))
            .and_then(id)
            .ok_or_else(|| format!("entry {i} needs a related_item_id (a positive integer)."))?;
        if !allowed.contains(&collection) {
            return Err(format!(
                "entry {i} links collection {collection}, which this field does not allow."
            ));
        }
        if !seen.insert((collection, item_id)) && !allow_duplicates {
            return Err(format!(
                "links item {item_id} of collection {collection} more than once."
            ));
        }
        out.push(json!({"related_collection_id": collection, "related_item_id": item_id}));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldName;

    const CAP: Cap = Cap {
        max: 3,
        noun: "link",
    };

    // The cases below are about shapes; the cap has its own test.
    fn id_list(value: &Value, allow_duplicates: bool) -> Result<Value, String> {
        super::id_list(value, allow_duplicates, CAP)
    }

    fn junction_links(
        value: &Value,
        junction_fields: &[JunctionField],
        allow_duplicates: bool,
    ) -> Result<Value, String> {
        super::junction_links(value, junction_fields, allow_duplicates, CAP)
    }

    fn collection_links(
        value: &Value,
        allowed: &[i64],
        allow_duplicates: bool,
    ) -> Result<Value, String> {
        super::collection_links(value, allowed, allow_duplicates, CAP)
    }

    #[test]
    fn every_list_shape_is_capped_before_its_entries_are_read() {
        let four = json!([1, 2, 3, 4]);
        let message = "may hold at most 3 links; got 4.";
        assert_eq!(id_list(&four, false), Err(message.to_owned()));
        assert_eq!(junction_links(&four, &[], false), Err(message.to_owned()));
        let entries: Vec<Value> = (1..=4)
            .map(|i| json!({"related_collection_id": 2, "related_item_id": i}))
            .collect();
        assert_eq!(
            collection_links(&Value::Array(entries), &[2], false),
            Err(message.to_owned())
        );
        // The count comes first: a list over the cap is refused whatever its entries hold.
        assert_eq!(
            id_list(&json!(["x", null, 0, {}]), false),
            Err(message.to_owned())
        );
        // At the cap, duplicates allowed or not, the list passes.
        assert_eq!(id_list(&json!([1, 2, 3]), false), Ok(json!([1, 2, 3])));
        assert_eq!(id_list(&json!([1, 1, 1]), true), Ok(json!([1, 1, 1])));
        let files = Cap {
            max: 1,
            noun: "file",
        };
        assert_eq!(
            super::id_list(&json!([5, 6]), false, files),
            Err("may hold at most 1 file; got 2.".to_owned())
        );
    }

    #[test]
    fn single_ids() {
        assert_eq!(single_id(&json!(7)), Ok(json!(7)));
        assert_eq!(single_id(&json!("7")), Ok(json!(7)));
        assert_eq!(
            single_id(&json!({"id": 7, "filename": "a.jpg"})),
            Ok(json!(7))
        );
        assert_eq!(single_id(&json!(null)), Ok(json!(null)));
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("x"),
            json!([1]),
            json!(true),
        ] {
            assert!(single_id(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn id_lists() {
        assert_eq!(
            id_list(&json!([3, "4", {"id": 5}]), false),
            Ok(json!([3, 4, 5]))
        );
        assert_eq!(id_list(&json!(3), false), Ok(json!([3])));
        assert_eq!(id_list(&json!(null), false), Ok(json!([])));
        assert!(id_list(&json!([3, 3]), false).is_err());
        assert_eq!(id_list(&json!([3, 3]), true), Ok(json!([3, 3])));
        assert!(id_list(&json!([3, null]), false).is_err());
        assert!(id_list(&json!({"a": 1}), false).is_err());
    }

    fn junction() -> Vec<JunctionField> {
        vec![
            JunctionField {
                name: FieldName::parse("role").unwrap(),
                field_type: JunctionFieldType::String,
            },
            JunctionField {
                name: FieldName::parse("weight").unwrap(),
                field_type: JunctionFieldType::Number,
            },
            JunctionField {
                name: FieldName::parse("primary").unwrap(),
                field_type: JunctionFieldType::Boolean,
            },
        ]
    }

    #[test]
    fn many_to_many_links() {
        let j = junction();
        assert_eq!(
            junction_links(&json!([1, "2"]), &j, false),
            Ok(json!([{"related_item_id": 1, "meta": {}}, {"related_item_id": 2, "meta": {}}]))
        );
        assert_eq!(
            junction_links(
                &json!([{"related_item_id": 1, "meta": {"weight": "2", "primary": "on", "role": "lead"}}]),
                &j,
                false
            ),
            Ok(
                json!([{"related_item_id": 1, "meta": {"weight": 2, "primary": true, "role": "lead"}}])
            )
        );
        assert_eq!(
            junction_links(
                &json!([{"item": {"id": 9, "data": {}}, "meta": {}}]),
                &j,
                false
            ),
            Ok(json!([{"related_item_id": 9, "meta": {}}]))
        );
        assert!(
            junction_links(
                &json!([{"related_item_id": 1, "meta": {"color": "x"}}]),
                &j,
                false
            )
            .is_err()
        );
        assert!(
            junction_links(
                &json!([{"related_item_id": 1, "meta": {"weight": "heavy"}}]),
                &j,
                false
            )
            .is_err()
        );
        assert!(junction_links(&json!([{"related_item_id": 1, "meta": []}]), &j, false).is_err());
        assert!(junction_links(&json!([{"meta": {}}]), &j, false).is_err());
        assert!(junction_links(&json!([1, 1]), &j, false).is_err());
        assert!(junction_links(&json!([1, 1]), &j, true).is_ok());
    }

    #[test]
    fn m2a_links() {
        let allowed = [2, 3];
        let v = json!([{"related_collection_id": 2, "related_item_id": 10}, {"related_collection_id": "3", "related_item_id": "11"}]);
        assert_eq!(
            collection_links(&v, &allowed, false),
            Ok(
                json!([{"related_collection_id": 2, "related_item_id": 10}, {"related_collection_id": 3, "related_item_id": 11}])
            )
        );
        assert!(
            collection_links(
                &json!([{"related_collection_id": 4, "related_item_id": 1}]),
                &allowed,
                false
            )
            .is_err()
        );
        assert!(collection_links(&json!([{"related_collection_id": 2}]), &allowed, false).is_err());
        assert!(collection_links(&json!([{"related_collection_id": 2, "related_item_id": 1}, {"related_collection_id": 2, "related_item_id": 1}]), &allowed, false).is_err());
        assert!(
            collection_links(
                &json!([{"related_collection_id": 2, "related_item_id": 1}]),
                &[],
                false
            )
            .is_err()
        );
        assert!(collection_links(&json!(5), &allowed, false).is_err());
    }
}
