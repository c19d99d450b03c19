use serde_json::{Map, Value};

use super::Nesting;
use crate::locale::LocalizedText;
use crate::{DomainError, FieldDef, FieldType};

/// Default `max_blocks_depth`.
pub const DEFAULT_MAX_DEPTH: u8 = 3;
/// Absolute ceiling of `max_blocks_depth`: deep trees of blocks make every read and write
/// recursive work, and no real page layout needs more.
pub const MAX_DEPTH_CEILING: u8 = 5;

/// One entry of `block_types`: a named mini-schema for the `data` of blocks of that type.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockType {
    pub key: String,
    pub label: Option<LocalizedText>,
    raw_label: Option<Value>,
    pub fields: Vec<FieldDef>,
}

impl BlockType {
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name.as_str() == name)
    }

    fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("key".into(), Value::String(self.key.clone()));
        if let Some(label) = &self.raw_label {
            obj.insert("label".into(), label.clone());
        }
        obj.insert(
            "fields".into(),
            Value::Array(self.fields.iter().map(FieldDef::to_json).collect()),
        );
        Value::Object(obj)
    }
}

/// Settings of a `blocks` field.
#[derive(Debug, Clone, PartialEq)]
pub struct BlocksSettings {
    /// The maximum depth of the root blocks field, inherited by nested blocks fields.
    pub max_blocks_depth: u8,
    /// This field's own depth: the root blocks field is 1.
    pub depth: u8,
    pub block_types: Vec<BlockType>,
}

impl BlocksSettings {
    #[must_use]
    pub fn block_type(&self, key: &str) -> Option<&BlockType> {
        self.block_types.iter().find(|b| b.key == key)
    }

    pub(crate) fn block_types_json(&self) -> Value {
        Value::Array(self.block_types.iter().map(BlockType::to_json).collect())
    }

    pub(super) fn parse(raw: &Map<String, Value>, nesting: Nesting) -> Result<Self, DomainError> {
        let depth = nesting.parent_depth.saturating_add(1);
        let max_blocks_depth = match nesting.inherited_max {
            Some(max) => max,
            None => match raw.get("max_blocks_depth") {
                None | Some(Value::Null) => DEFAULT_MAX_DEPTH,
                Some(v) => v
                    .as_u64()
                    .filter(|d| (1..=u64::from(MAX_DEPTH_CEILING)).contains(d))
                    .and_then(|d| u8::try_from(d).ok())
                    .ok_or_else(|| {
                        DomainError::settings("max_blocks_depth", "must be an integer from 1 to 5")
                    })?,
            },
        };
        let list = match raw.get("block_types") {
            None | Some(Value::Null) => &Vec::new(),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(DomainError::settings("block_types", "must be an array")),
        };
        let child = Nesting {
            parent_depth: depth,
            inherited_max: Some(max_blocks_depth),
        };
        let mut block_types: Vec<BlockType> = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let at = format!("block_types[{i}]");
            let block = parse_block_type(entry, child).map_err(|e| e.within(&at))?;
            if block_types.iter().any(|b| b.key == block.key) {
                return Err(DomainError::settings(
                    format!("{at}.key"),
                    format!("duplicate block type \"{}\"", block.key),
                ));
            }
            block_types.push(block);
        }
        Ok(Self {
            max_blocks_depth,
            depth,
            block_types,
        })
    }
}

fn parse_block_type(raw: &Value, nesting: Nesting) -> Result<BlockType, DomainError> {
    let obj = raw
        .as_object()
        .ok_or_else(|| DomainError::settings("", "must be an object with key and fields"))?;
    let key = obj
        .get("key")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && k.len() <= 64 && !k.chars().any(char::is_whitespace))
        .ok_or_else(|| {
            DomainError::settings("key", "is required: 1 to 64 characters without spaces")
        })?;
    let raw_label = obj.get("label").filter(|v| !v.is_null()).cloned();
    let label = match &raw_label {
        None => None,
        Some(v) => {
            Some(LocalizedText::from_json(v).map_err(|m| DomainError::settings("label", m))?)
        }
    };
    let list = match obj.get("fields") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(DomainError::settings("fields", "must be an array")),
    };
    let mut fields: Vec<FieldDef> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let at = format!("fields[{i}]");
        // A blocks field below the root's maximum depth is dropped from the definition, as the
        // spec says ("deeper block types are stripped on save"), not rejected.
        let is_blocks =
            entry.get("type").and_then(Value::as_str) == Some(FieldType::Blocks.as_str());
        if is_blocks && nesting.parent_depth >= nesting.inherited_max.unwrap_or(DEFAULT_MAX_DEPTH) {
            continue;
        }
        let field = FieldDef::parse_json(entry, nesting).map_err(|e| e.within(&at))?;
        if fields.iter().any(|f| f.name == field.name) {
            return Err(DomainError::settings(
                format!("{at}.name"),
                format!("duplicate field \"{}\"", field.name),
            ));
        }
        fields.push(field);
    }
    Ok(BlockType {
        key: key.to_owned(),
        label,
        raw_label,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{FieldDef, TypeSettings};

    fn blocks_field(settings: Value) -> Result<FieldDef, DomainError> {
        FieldDef::new("content", FieldType::Blocks, false, &settings)
    }

    fn nested(depth_left: usize) -> Value {
        // A chain of block types, each with a nested blocks field, `depth_left` levels deep.
        if depth_left == 0 {
            return json!([{"key": "text", "fields": [{"name": "body", "type": "textarea"}]}]);
        }
        json!([{"key": "section", "fields": [
            {"name": "title", "type": "string", "translatable": true},
            {"name": "children", "type": "blocks", "settings": {"block_types": nested(depth_left - 1)}}
        ]}])
    }

    fn depth_of(settings: &BlocksSettings) -> u8 {
        let mut deepest = settings.depth;
        for bt in &settings.block_types {
            for f in &bt.fields {
                if let TypeSettings::Blocks(inner) = &f.settings.kind {
                    deepest = deepest.max(depth_of(inner));
                }
            }
        }
        deepest
    }

    fn blocks(def: &FieldDef) -> &BlocksSettings {
        match &def.settings.kind {
            TypeSettings::Blocks(b) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn default_depth_is_three_and_deeper_types_are_stripped() {
        let def = blocks_field(json!({"block_types": nested(6)})).unwrap();
        let b = blocks(&def);
        assert_eq!(b.max_blocks_depth, 3);
        assert_eq!(b.depth, 1);
        assert_eq!(depth_of(b), 3);
        // The stored settings hold the stripped definition too.
        let stored = def.settings.to_json().to_string();
        assert_eq!(stored.matches("\"children\"").count(), 2);
    }

    #[test]
    fn max_depth_is_honoured_up_to_the_ceiling() {
        for max in 1..=5u8 {
            let def =
                blocks_field(json!({"max_blocks_depth": max, "block_types": nested(8)})).unwrap();
            assert_eq!(depth_of(blocks(&def)), max);
        }
        for bad in [json!(0), json!(6), json!(-1), json!("3"), json!(2.5)] {
            let err = blocks_field(json!({"max_blocks_depth": bad})).unwrap_err();
            assert!(
                err.to_string().starts_with("settings.max_blocks_depth"),
                "{err}"
            );
        }
    }

    #[test]
    fn nested_blocks_inherit_the_root_maximum() {
        // A nested field asking for depth 5 cannot raise the root's maximum of 2.
        let def = blocks_field(json!({"max_blocks_depth": 2, "block_types": [{"key": "s", "fields": [
            {"name": "inner", "type": "blocks", "settings": {"max_blocks_depth": 5, "block_types": nested(4)}}
        ]}]}))
        .unwrap();
        let b = blocks(&def);
        assert_eq!(depth_of(b), 2);
        let inner = &b.block_types[0].fields[0];
        assert_eq!(blocks(inner).max_blocks_depth, 2);
    }

    #[test]
    fn block_type_errors_name_their_path() {
        let cases = [
            (json!({"block_types": {}}), "settings.block_types"),
            (
                json!({"block_types": [{"fields": []}]}),
                "settings.block_types[0].key",
            ),
            (
                json!({"block_types": [{"key": "a"}, {"key": "a"}]}),
                "settings.block_types[1].key",
            ),
            (
                json!({"block_types": [{"key": "a", "fields": [{"name": "x", "type": "strng"}]}]}),
                "settings.block_types[0].fields[0].type",
            ),
            (
                json!({"block_types": [{"key": "a", "fields": [{"name": "x", "type": "string"}, {"name": "x", "type": "number"}]}]}),
                "settings.block_types[0].fields[1].name",
            ),
        ];
        for (settings, path) in cases {
            match blocks_field(settings.clone()) {
                Err(DomainError::InvalidSettings { path: p, .. }) => {
                    assert_eq!(p, path, "{settings}");
                }
                other => panic!("{settings}: {other:?}"),
            }
        }
    }
}
