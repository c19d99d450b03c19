//! What happens to stored values when a field's definition changes (issue 18): its type, its
//! translatability or its relation target. [`convert_value`] answers, for one stored value, the
//! value it becomes under the new definition or why it cannot; the storage layer applies the
//! answers item by item, and the admin app refuses the change while any value cannot convert.
//!
//! Conversions go through the new type's own normalization ([`normalize_plain`]), so a converted
//! value is exactly what a client writing it under the new definition would have stored:
//!
//! | from → to | becomes |
//! |---|---|
//! | null or absent | stays null |
//! | number or boolean → text types | its text (`12`, `true`) |
//! | text → number | the number it spells (`"12"` → 12); other text refuses (`"abc" must be a number.`) |
//! | text → list types (tag, multiselect…) | a one-element list |
//! | one-element list → text | its element; longer lists refuse |
//! | item or file id → list of ids | `[id]`; a one-id list → the id, longer lists refuse |
//! | relation values to another target collection | only empty values convert |
//! | anything → `hash` or `blocks` | only empty values convert |
//! | not translatable → translatable | `{"<default locale>": value}` |
//! | translatable → not translatable | the default locale's value |
//!
//! Every conversion is idempotent (converting a converted value answers it unchanged), so a pass
//! over the items may be repeated to catch values written meanwhile under the old definition.

use serde_json::{Map, Value};

use crate::translation::is_locale_map;
use crate::value::{is_empty, normalize_plain};
use crate::{ContentLocales, FieldDef, FieldType, ValueShape};

/// Whether changing `old` into `new` may change stored values (and so needs a dry run).
#[must_use]
pub fn changes_values(old: &FieldDef, new: &FieldDef) -> bool {
    old.field_type != new.field_type
        || old.translatable != new.translatable
        || old.shape() != new.shape()
        || relation_target_changes(old, new)
}

/// Whether the items a relation value points at would be read from another collection.
fn relation_target_changes(old: &FieldDef, new: &FieldDef) -> bool {
    (old.field_type.is_relation() || old.field_type == FieldType::M2a)
        && old.settings.kind != new.settings.kind
        && target(old) != target(new)
}

fn target(def: &FieldDef) -> Value {
    let json = def.settings.to_json();
    let mut out = Map::new();
    for key in ["related_collection_id", "allowed_collection_ids"] {
        if let Some(v) = json.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// The value `value` (stored under `old`) becomes under `new`.
///
/// # Errors
/// A message saying why the value cannot be kept (`"abc" is not a number.`).
pub fn convert_value(
    old: &FieldDef,
    new: &FieldDef,
    value: &Value,
    locales: &ContentLocales,
) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let default = locales.default_locale().as_str();
    let stored_map = match value {
        Value::Object(map) if old.translatable && is_locale_map(old, map, locales) => Some(map),
        _ => None,
    };
    match (stored_map, new.translatable) {
        (Some(map), true) => {
            let mut out = Map::new();
            for (locale, v) in map {
                let converted = convert_plain(old, new, v).map_err(|e| format!("{locale}: {e}"))?;
                if !converted.is_null() {
                    out.insert(locale.clone(), converted);
                }
            }
            Ok(Value::Object(out))
        }
        (Some(map), false) => convert_plain(old, new, map.get(default).unwrap_or(&Value::Null)),
        (None, true) if new.field_type.can_be_translatable() => {
            let converted = convert_plain(old, new, value)?;
            if is_empty(&converted) {
                return Ok(Value::Null);
            }
            let mut out = Map::new();
            out.insert(default.to_owned(), converted);
            Ok(Value::Object(out))
        }
        (None, _) => convert_plain(old, new, value),
    }
}

/// One (untranslated) value under the new type.
fn convert_plain(old: &FieldDef, new: &FieldDef, value: &Value) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    if relation_target_changes(old, new) || matches!(new.field_type, FieldType::Hash) {
        return if is_empty(value) {
            Ok(new.empty_value())
        } else {
            Err(format!(
                "{} cannot be kept as a {} value{}.",
                describe(value),
                new.field_type,
                if relation_target_changes(old, new) {
                    " of another collection"
                } else {
                    ""
                }
            ))
        };
    }
    if new.field_type == FieldType::Blocks {
        return if old.field_type == FieldType::Blocks || is_empty(value) {
            Ok(if is_empty(value) {
                new.empty_value()
            } else {
                value.clone()
            })
        } else {
            Err(format!("{} cannot be kept as blocks.", describe(value)))
        };
    }
    if old.field_type == FieldType::Hash || old.field_type == FieldType::Blocks {
        return if is_empty(value) {
            Ok(new.empty_value())
        } else {
            Err(format!(
                "a {} value cannot be kept as {}.",
                old.field_type, new.field_type
            ))
        };
    }
    let candidate = reshape(value, new.shape())?;
    normalize_plain(new.field_type, &new.settings, &candidate)
        .map_err(|e| format!("{} {e}", describe(value)))
}

/// `value` in the JSON shape the new type reads, where the shapes differ in kind only.
fn reshape(value: &Value, shape: ValueShape) -> Result<Value, String> {
    let single = |list: &[Value]| -> Result<Value, String> {
        match list {
            [] => Ok(Value::Null),
            [one] => Ok(one.clone()),
            _ => Err(format!(
                "a list of {} values cannot be kept as one value.",
                list.len()
            )),
        }
    };
    Ok(match (shape, value) {
        (ValueShape::Text, Value::Bool(b)) => Value::String(b.to_string()),
        (ValueShape::Text | ValueShape::Number | ValueShape::Boolean, Value::Array(list)) => {
            single(list)?
        }
        (ValueShape::ItemId | ValueShape::FileId, Value::Array(list)) => single(list)?,
        (ValueShape::StringList, Value::Bool(b)) => {
            Value::Array(vec![Value::String(b.to_string())])
        }
        (ValueShape::StringList, Value::Number(n)) => {
            Value::Array(vec![Value::String(n.to_string())])
        }
        (ValueShape::ItemIds | ValueShape::FileIds, Value::Number(_)) => {
            Value::Array(vec![value.clone()])
        }
        _ => value.clone(),
    })
}

/// A short description of a value for messages (never more than 40 characters of it).
fn describe(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn def(t: FieldType, translatable: bool, settings: Value) -> FieldDef {
        FieldDef::new("f", t, translatable, &settings).unwrap()
    }

    fn locales() -> ContentLocales {
        ContentLocales::new(&["en", "de"], "en").unwrap()
    }

    #[test]
    fn text_to_number_parses_or_refuses() {
        let (old, new) = (
            def(FieldType::String, false, json!({})),
            def(FieldType::Number, false, json!({})),
        );
        assert!(changes_values(&old, &new));
        assert_eq!(
            convert_value(&old, &new, &json!("12"), &locales()),
            Ok(json!(12))
        );
        assert_eq!(
            convert_value(&old, &new, &json!(null), &locales()),
            Ok(json!(null))
        );
        let err = convert_value(&old, &new, &json!("abc"), &locales()).unwrap_err();
        assert_eq!(err, "\"abc\" must be a number.");
        // Back again, and idempotent.
        assert_eq!(
            convert_value(&new, &old, &json!(12), &locales()),
            Ok(json!("12"))
        );
        assert_eq!(
            convert_value(&new, &new, &json!(12), &locales()),
            Ok(json!(12))
        );
    }

    #[test]
    fn translatability_wraps_and_unwraps_the_default_locale() {
        let (plain, translated) = (
            def(FieldType::String, false, json!({})),
            def(FieldType::String, true, json!({})),
        );
        assert_eq!(
            convert_value(&plain, &translated, &json!("Hi"), &locales()),
            Ok(json!({"en": "Hi"}))
        );
        assert_eq!(
            convert_value(
                &translated,
                &plain,
                &json!({"en": "Hi", "de": "Hallo"}),
                &locales()
            ),
            Ok(json!("Hi"))
        );
        assert_eq!(
            convert_value(&translated, &translated, &json!({"en": "Hi"}), &locales()),
            Ok(json!({"en": "Hi"}))
        );
    }

    #[test]
    fn lists_and_ids_reshape() {
        let tag = def(FieldType::Tag, false, json!({}));
        let text = def(FieldType::String, false, json!({}));
        assert_eq!(
            convert_value(&text, &tag, &json!("a"), &locales()),
            Ok(json!(["a"]))
        );
        assert_eq!(
            convert_value(&tag, &text, &json!(["a"]), &locales()),
            Ok(json!("a"))
        );
        assert!(convert_value(&tag, &text, &json!(["a", "b"]), &locales()).is_err());
        let one = def(
            FieldType::ManyToOne,
            false,
            json!({"related_collection_id": 1}),
        );
        let many = def(
            FieldType::OneToMany,
            false,
            json!({"related_collection_id": 1}),
        );
        assert_eq!(
            convert_value(&one, &many, &json!(5), &locales()),
            Ok(json!([5]))
        );
        let elsewhere = def(
            FieldType::ManyToOne,
            false,
            json!({"related_collection_id": 2}),
        );
        assert!(changes_values(&one, &elsewhere));
        assert!(convert_value(&one, &elsewhere, &json!(5), &locales()).is_err());
        assert_eq!(
            convert_value(&one, &elsewhere, &json!(null), &locales()),
            Ok(json!(null))
        );
        assert!(!changes_values(&one, &one));
    }
}
