use serde_json::{Map, Value};

use crate::settings::Nesting;
use crate::value::normalize_plain;
use crate::{DomainError, FieldName, FieldSettings, FieldType, ValueShape, is_truthy};

/// One field of a collection (or of a block type): its name, type, translatability and settings.
/// Built only through [`FieldDef::new`] / [`FieldDef::from_json`], so `translatable` is already
/// forced to false for types that cannot be translated and `default_value` is already normalized.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDef {
    pub name: FieldName,
    pub field_type: FieldType,
    pub translatable: bool,
    pub settings: FieldSettings,
}

impl FieldDef {
    /// A top-level field of a collection.
    ///
    /// # Errors
    /// A settings error naming the key (or `name`) that is malformed.
    pub fn new(
        name: &str,
        field_type: FieldType,
        translatable: bool,
        settings: &Value,
    ) -> Result<Self, DomainError> {
        Self::build(name, field_type, translatable, settings, Nesting::default())
    }

    /// A field from its JSON definition `{ name, type, translatable?, settings? }`, the form used
    /// in manifests and inside `block_types[].fields`.
    ///
    /// # Errors
    /// A settings error whose path names the offending key (`type`, `settings.date_mode`, …).
    pub fn from_json(raw: &Value) -> Result<Self, DomainError> {
        Self::parse_json(raw, Nesting::default())
    }

    pub(crate) fn parse_json(raw: &Value, nesting: Nesting) -> Result<Self, DomainError> {
        let obj = raw
            .as_object()
            .ok_or_else(|| DomainError::settings("", "must be an object with name and type"))?;
        let name = obj
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| DomainError::settings("name", "is required"))?;
        let type_name = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| DomainError::settings("type", "is required"))?;
        let field_type = FieldType::parse(type_name)
            .map_err(|e| DomainError::settings("type", e.to_string()))?;
        let translatable = obj.get("translatable").is_some_and(is_truthy);
        let settings = obj.get("settings").unwrap_or(&Value::Null);
        Self::build(name, field_type, translatable, settings, nesting)
    }

    fn build(
        name: &str,
        field_type: FieldType,
        translatable: bool,
        settings: &Value,
        nesting: Nesting,
    ) -> Result<Self, DomainError> {
        let name =
            FieldName::parse(name).map_err(|e| DomainError::settings("name", e.to_string()))?;
        let mut settings = FieldSettings::parse(field_type, settings, nesting)
            .map_err(|e| e.within("settings"))?;
        if !field_type.accepts_default_value() {
            // The spec does not apply defaults to these types; keep the raw key but never use it.
            settings.default_value = None;
        } else if let Some(default) = settings.default_value.take() {
            let normalized = normalize_plain(field_type, &settings, &default)
                .map_err(|m| DomainError::settings("settings.default_value", m))?;
            settings.default_value = Some(normalized).filter(|v| !v.is_null());
        }
        Ok(Self {
            name,
            field_type,
            translatable: translatable && field_type.can_be_translatable(),
            settings,
        })
    }

    /// The definition as JSON, `{ name, type, translatable, settings }`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("name".into(), Value::String(self.name.to_string()));
        obj.insert(
            "type".into(),
            Value::String(self.field_type.as_str().into()),
        );
        obj.insert("translatable".into(), Value::Bool(self.translatable));
        obj.insert("settings".into(), self.settings.to_json());
        Value::Object(obj)
    }

    #[must_use]
    pub fn shape(&self) -> ValueShape {
        self.field_type.value_shape(self.settings.allow_multiple())
    }

    /// The value an absent field reads as: `[]` for array shapes, null otherwise.
    #[must_use]
    pub fn empty_value(&self) -> Value {
        if self.shape().is_array() {
            Value::Array(Vec::new())
        } else {
            Value::Null
        }
    }
}

/// The fields of one collection, in order, with unique names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CollectionSchema {
    fields: Vec<FieldDef>,
}

impl CollectionSchema {
    /// # Errors
    /// [`DomainError::DuplicateField`] when two fields share a name.
    pub fn new(fields: Vec<FieldDef>) -> Result<Self, DomainError> {
        for (i, f) in fields.iter().enumerate() {
            if fields.iter().take(i).any(|g| g.name == f.name) {
                return Err(DomainError::DuplicateField(f.name.to_string()));
            }
        }
        Ok(Self { fields })
    }

    #[must_use]
    pub fn fields(&self) -> &[FieldDef] {
        &self.fields
    }

    #[must_use]
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn translatable_is_forced_off_where_the_spec_says() {
        for t in FieldType::ALL {
            let def = FieldDef::new("f", t, true, &json!({})).unwrap();
            assert_eq!(def.translatable, t.can_be_translatable(), "{t}");
        }
    }

    #[test]
    fn from_json_reports_paths() {
        let cases = [
            (json!({"type": "string"}), "name"),
            (json!({"name": "1x", "type": "string"}), "name"),
            (json!({"name": "x"}), "type"),
            (json!({"name": "x", "type": "strng"}), "type"),
            (
                json!({"name": "x", "type": "date", "settings": {"date_mode": "week"}}),
                "settings.date_mode",
            ),
            (
                json!({"name": "x", "type": "map", "settings": {"geometry_mode": "polygon"}}),
                "settings.geometry_mode",
            ),
            (
                json!({"name": "x", "type": "string", "settings": {"layout_width": "wide"}}),
                "settings.layout_width",
            ),
            (
                json!({"name": "x", "type": "string", "settings": []}),
                "settings",
            ),
            (
                json!({"name": "x", "type": "number", "settings": {"default_value": "abc"}}),
                "settings.default_value",
            ),
            (
                json!({"name": "x", "type": "many_to_many", "settings": {"junction_fields": [{"name": "w", "type": "date"}]}}),
                "settings.junction_fields[0].type",
            ),
            (
                json!({"name": "x", "type": "m2a", "settings": {"allowed_collection_ids": ["a"]}}),
                "settings.allowed_collection_ids",
            ),
            (
                json!({"name": "x", "type": "many_to_one", "settings": {"related_collection": "Not A Slug"}}),
                "settings.related_collection",
            ),
            (
                json!({"name": "x", "type": "string", "settings": {"validation_rules": [{"operator": "nope"}]}}),
                "settings.validation_rules[0].operator",
            ),
            (
                json!({"name": "x", "type": "string", "settings": {"conditions": {"logic": "or"}}}),
                "settings.conditions.logic",
            ),
            (
                json!({"name": "x", "type": "select", "settings": {"options": "a,b"}}),
                "settings.options",
            ),
        ];
        for (raw, path) in cases {
            match FieldDef::from_json(&raw) {
                Err(DomainError::InvalidSettings { path: p, .. }) => assert_eq!(p, path, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_settings_keys_are_preserved() {
        let raw = json!({"required": "on", "x_custom": {"nested": [1, 2]}, "display_name": {"en": "Title"}});
        let def = FieldDef::new("title", FieldType::String, true, &raw).unwrap();
        assert!(def.settings.required);
        assert_eq!(def.settings.to_json(), raw);
        assert_eq!(def.to_json()["settings"], raw);
        let again = FieldDef::from_json(&def.to_json()).unwrap();
        assert_eq!(again, def);
    }

    #[test]
    fn default_value_is_normalized_and_dropped_where_not_applicable() {
        let def = FieldDef::new(
            "n",
            FieldType::Number,
            false,
            &json!({"default_value": "42"}),
        )
        .unwrap();
        assert_eq!(def.settings.default_value, Some(json!(42)));
        let def = FieldDef::new(
            "r",
            FieldType::ManyToOne,
            false,
            &json!({"default_value": 3}),
        )
        .unwrap();
        assert_eq!(def.settings.default_value, None);
        let def =
            FieldDef::new("h", FieldType::Hash, false, &json!({"default_value": "x"})).unwrap();
        assert_eq!(def.settings.default_value, None);
    }

    #[test]
    fn schema_rejects_duplicate_names() {
        let a = FieldDef::new("a", FieldType::String, false, &Value::Null).unwrap();
        let err = CollectionSchema::new(vec![a.clone(), a]).unwrap_err();
        assert_eq!(err, DomainError::DuplicateField("a".into()));
    }
}
