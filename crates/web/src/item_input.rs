//! The item form's fields read back into the `{"data": {...}}` body the items use case
//! validates: `data[field]` (or `data[field][locale]` for a translatable field, `data[field][]`
//! for a list of choices) typed by the field's value shape. Nothing is checked here beyond the
//! typing a browser cannot do: a value that does not fit is passed on as text, so the use case
//! reports it next to its field as it would for any client.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use vellum_domain::{FieldDef, ValueShape};

/// The body for `fields` from the posted `form`. A field the form did not send is left out (an
/// update keeps its value), as is an empty hash (its stored fingerprint stays).
#[must_use]
pub fn item_body(fields: &[FieldDef], locales: &[String], form: &[(String, String)]) -> Value {
    // Every value of each name, in order, indexed once: a form's pairs are bounded only by the
    // body limit, and each field looks up one or a few names.
    let mut posted: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, v) in form {
        posted.entry(k.as_str()).or_default().push(v.as_str());
    }
    let form = &posted;
    let mut data = Map::new();
    for field in fields {
        let name = field.name.as_str();
        let value = if field.translatable {
            let map: Map<String, Value> = locales
                .iter()
                .filter_map(|locale| {
                    let key = format!("data[{name}][{locale}]");
                    read(field, &key, form).map(|v| (locale.clone(), v))
                })
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        } else {
            read(field, &format!("data[{name}]"), form)
        };
        if let Some(value) = value {
            data.insert(name.to_owned(), value);
        }
    }
    json!({ "data": data })
}

/// One input's value (`key`), typed; `None` when the form did not send it.
fn read(field: &FieldDef, key: &str, form: &HashMap<&str, Vec<&str>>) -> Option<Value> {
    if let Some(values) = form.get(format!("{key}[]").as_str()) {
        // A list of choices: a hidden empty entry comes first, so none checked is `[]`.
        return Some(Value::Array(
            values
                .iter()
                .filter(|v| !v.is_empty())
                .map(|v| Value::String((*v).to_owned()))
                .collect(),
        ));
    }
    // A checkbox follows its hidden `false`: the last value is the one that counts.
    let raw = form.get(key)?.last()?.trim();
    match field.shape() {
        ValueShape::Fingerprint => (!raw.is_empty()).then(|| Value::String(raw.to_owned())),
        _ if raw.is_empty() => Some(if field.shape().is_array() {
            Value::Array(Vec::new())
        } else {
            Value::Null
        }),
        ValueShape::Text => Some(Value::String(raw.to_owned())),
        ValueShape::Number | ValueShape::FileId | ValueShape::ItemId => Some(number(raw)),
        ValueShape::Boolean => Some(match raw {
            "true" | "on" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            other => Value::String(other.to_owned()),
        }),
        ValueShape::StringList => Some(Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_owned()))
                .collect(),
        )),
        ValueShape::FileIds | ValueShape::ItemIds => Some(Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(number)
                .collect(),
        )),
        ValueShape::Geometry
        | ValueShape::JunctionLinks
        | ValueShape::Blocks
        | ValueShape::CollectionLinks => {
            Some(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())))
        }
    }
}

/// An integer, a decimal, or the text as it was (the use case says it is not a number).
fn number(raw: &str) -> Value {
    raw.parse::<i64>()
        .map(Value::from)
        .ok()
        .or_else(|| {
            raw.parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        })
        .unwrap_or_else(|| Value::String(raw.to_owned()))
}

#[cfg(test)]
mod tests {
    use vellum_domain::FieldDef;

    use super::*;

    fn field(name: &str, field_type: &str, translatable: bool) -> FieldDef {
        FieldDef::from_json(&json!({"name": name, "type": field_type, "translatable": translatable, "settings": {}}))
            .unwrap()
    }

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn values_are_typed_by_their_field() {
        let fields = [
            field("title", "string", true),
            field("price", "number", false),
            field("done", "boolean", false),
            field("tags", "tag", false),
            field("colors", "checkbox_group", false),
            field("author", "many_to_one", false),
            field("where", "map", false),
            field("secret", "hash", false),
            field("absent", "string", false),
        ];
        let locales = ["en".to_owned(), "de".to_owned()];
        let body = item_body(
            &fields,
            &locales,
            &form(&[
                ("data[title][en]", "Hello"),
                ("data[title][de]", ""),
                ("data[price]", "2.5"),
                ("data[done]", "false"),
                ("data[done]", "true"),
                ("data[tags]", "a, b,,c"),
                ("data[colors][]", ""),
                ("data[colors][]", "red"),
                ("data[author]", "7"),
                ("data[where]", r#"{"type":"Point","coordinates":[1,2]}"#),
                ("data[secret]", ""),
            ]),
        );
        assert_eq!(
            body,
            json!({"data": {
                "title": {"en": "Hello", "de": null},
                "price": 2.5,
                "done": true,
                "tags": ["a", "b", "c"],
                "colors": ["red"],
                "author": 7,
                "where": {"type": "Point", "coordinates": [1, 2]}
            }})
        );
        // What does not fit is passed on for the use case to refuse.
        let body = item_body(&fields[1..2], &locales, &form(&[("data[price]", "ten")]));
        assert_eq!(body, json!({"data": {"price": "ten"}}));
    }
}
