//! The read side of locales: stored `data` holds translatable values as locale maps; responses
//! flatten them to the requested locale (falling back to the default locale) unless the client
//! asked for `include_all_translations`. Blocks are walked so their nested translatable fields
//! are flattened the same way.

use serde_json::{Map, Value};

use crate::translation::is_locale_map;
use crate::{CollectionSchema, ContentLocales, FieldDef, LocaleSelection, TypeSettings};

/// The `data` object of a response for `stored` data: every schema field in schema order (absent
/// ones as null or `[]`), translatable values flattened per `selection`. Keys of the stored data
/// that are no longer in the schema are left out. Redaction by field rules is the policy crate's
/// job and happens after this.
///
/// # Example
/// ```
/// use serde_json::json;
/// use vellum_domain::*;
///
/// let schema = CollectionSchema::new(vec![
///     FieldDef::new("title", FieldType::String, true, &json!({})).unwrap(),
///     FieldDef::new("tags", FieldType::Tag, false, &json!({})).unwrap(),
/// ]).unwrap();
/// let locales = ContentLocales::new(&["en", "de"], "en").unwrap();
/// let stored = json!({"title": {"en": "Hello", "de": "Hallo"}});
/// let stored = stored.as_object().unwrap();
///
/// let de = LocaleSelection::Flatten(locales.resolve(Some("de")).unwrap());
/// let out = flatten_for_read(&schema, stored, &de, &locales);
/// assert_eq!(serde_json::Value::Object(out), json!({"title": "Hallo", "tags": []}));
///
/// let all = flatten_for_read(&schema, stored, &LocaleSelection::AllTranslations, &locales);
/// assert_eq!(all["title"], json!({"en": "Hello", "de": "Hallo"}));
/// ```
#[must_use]
pub fn flatten_for_read(
    schema: &CollectionSchema,
    stored: &Map<String, Value>,
    selection: &LocaleSelection,
    locales: &ContentLocales,
) -> Map<String, Value> {
    flatten_fields(schema.fields(), stored, selection, locales, true)
}

fn flatten_fields(
    fields: &[FieldDef],
    stored: &Map<String, Value>,
    selection: &LocaleSelection,
    locales: &ContentLocales,
    fill_missing: bool,
) -> Map<String, Value> {
    let mut out = Map::new();
    for field in fields {
        let name = field.name.as_str();
        let value = match stored.get(name) {
            Some(v) => flatten_value(field, v, selection, locales),
            None if fill_missing => field.empty_value(),
            None => continue,
        };
        out.insert(name.to_owned(), value);
    }
    out
}

fn flatten_value(
    field: &FieldDef,
    value: &Value,
    selection: &LocaleSelection,
    locales: &ContentLocales,
) -> Value {
    if field.translatable {
        return match value {
            Value::Null => field.empty_value(),
            Value::Object(map) if is_locale_map(field, map, locales) => match selection {
                LocaleSelection::Flatten(locale) => locales
                    .pick(map, locale)
                    .cloned()
                    .unwrap_or_else(|| field.empty_value()),
                LocaleSelection::AllTranslations => value.clone(),
            },
            // A value stored before the field became translatable belongs to the default locale.
            other => match selection {
                LocaleSelection::Flatten(_) => other.clone(),
                LocaleSelection::AllTranslations => {
                    let mut map = Map::new();
                    map.insert(locales.default_locale().to_string(), other.clone());
                    Value::Object(map)
                }
            },
        };
    }
    match (&field.settings.kind, value) {
        (TypeSettings::Blocks(settings), Value::Array(blocks)) => Value::Array(
            blocks
                .iter()
                .map(|block| {
                    let block_type = block
                        .get("type")
                        .and_then(Value::as_str)
                        .and_then(|key| settings.block_type(key));
                    match (block_type, block) {
                        (Some(bt), Value::Object(obj)) => {
                            let mut out = obj.clone();
                            if let Some(Value::Object(data)) = obj.get("data") {
                                out.insert(
                                    "data".into(),
                                    Value::Object(flatten_fields(
                                        &bt.fields, data, selection, locales, false,
                                    )),
                                );
                            }
                            Value::Object(out)
                        }
                        // A block whose type was removed from the schema is returned as stored.
                        _ => block.clone(),
                    }
                })
                .collect(),
        ),
        (_, Value::Null) => field.empty_value(),
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::LocaleCode;

    fn setup() -> (CollectionSchema, ContentLocales) {
        let fields = json!([
            {"name": "title", "type": "string", "translatable": true},
            {"name": "views", "type": "number"},
            {"name": "gallery", "type": "image", "settings": {"allow_multiple": true}},
            {"name": "content", "type": "blocks", "settings": {"block_types": [
                {"key": "text", "fields": [{"name": "body", "type": "markdown", "translatable": true}, {"name": "n", "type": "number"}]}
            ]}}
        ]);
        let defs = fields
            .as_array()
            .unwrap()
            .iter()
            .map(|f| FieldDef::from_json(f).unwrap())
            .collect();
        (
            CollectionSchema::new(defs).unwrap(),
            ContentLocales::new(&["en", "de", "fr"], "en").unwrap(),
        )
    }

    #[test]
    fn flattens_top_level_and_block_translations_with_fallback() {
        let (schema, locales) = setup();
        let stored = json!({
            "title": {"en": "Hello", "de": "Hallo"},
            "removed_field": 1,
            "content": [
                {"id": "b1", "type": "text", "data": {"body": {"en": "Body", "de": "Text"}}},
                {"id": "b2", "type": "gone", "data": {"body": {"en": "kept as stored"}}}
            ]
        });
        let fr = LocaleSelection::Flatten(LocaleCode::parse("fr").unwrap());
        let out = flatten_for_read(&schema, stored.as_object().unwrap(), &fr, &locales);
        assert_eq!(
            Value::Object(out),
            json!({
                "title": "Hello",
                "views": null,
                "gallery": [],
                "content": [
                    {"id": "b1", "type": "text", "data": {"body": "Body"}},
                    {"id": "b2", "type": "gone", "data": {"body": {"en": "kept as stored"}}}
                ]
            })
        );
        let de = LocaleSelection::Flatten(LocaleCode::parse("de").unwrap());
        let out = flatten_for_read(&schema, stored.as_object().unwrap(), &de, &locales);
        assert_eq!(out["content"][0]["data"]["body"], json!("Text"));
        let all = flatten_for_read(
            &schema,
            stored.as_object().unwrap(),
            &LocaleSelection::AllTranslations,
            &locales,
        );
        assert_eq!(
            all["content"][0]["data"]["body"],
            json!({"en": "Body", "de": "Text"})
        );
    }

    #[test]
    fn values_stored_before_a_field_became_translatable_still_read() {
        let (schema, locales) = setup();
        let stored = json!({"title": "legacy"});
        let en = LocaleSelection::Flatten(LocaleCode::parse("en").unwrap());
        let out = flatten_for_read(&schema, stored.as_object().unwrap(), &en, &locales);
        assert_eq!(out["title"], json!("legacy"));
        let all = flatten_for_read(
            &schema,
            stored.as_object().unwrap(),
            &LocaleSelection::AllTranslations,
            &locales,
        );
        assert_eq!(all["title"], json!({"en": "legacy"}));
    }
}
