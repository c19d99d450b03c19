//! The write pipeline: from a client's `data` object to the value that is stored.
//!
//! Order matters and is the same for top-level fields and for the `data` of every block:
//! reject unknown fields, normalize each provided value (merging translations), apply defaults on
//! create, then validate (`required` with conditions evaluated on the merged result, then the
//! rules). Every problem is collected; nothing is returned half-done.

use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::join_path;
use crate::translation::{is_blank_translation, is_locale_map};
use crate::validate::{condition_view, validate_field};
use crate::value::{is_empty, normalize_plain};
use crate::write_context::{UniqueCheck, WriteContext};
use crate::{CollectionSchema, FieldDef, FieldName, FieldType, TypeSettings, ValidationErrors};

/// Create (every field validated, defaults applied) or update (a partial patch merged into the
/// stored data; only the provided fields are validated).
#[derive(Debug, Clone, Copy)]
pub enum WriteMode<'a> {
    Create,
    Update { existing: &'a Map<String, Value> },
}

/// The outcome of a valid write: the complete `data` to store, which fields the request touched,
/// and the uniqueness checks the storage layer must still perform.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedWrite {
    pub data: Map<String, Value>,
    pub changed: Vec<FieldName>,
    pub unique_checks: Vec<UniqueCheck>,
}

/// Normalizes and validates `input` for `schema`.
///
/// # Errors
/// Every problem found, keyed by field path, when anything is wrong; nothing is partially applied.
///
/// # Example
/// ```
/// use serde_json::json;
/// use vellum_domain::*;
///
/// let schema = CollectionSchema::new(vec![
///     FieldDef::new("title", FieldType::String, true, &json!({"required": true})).unwrap(),
///     FieldDef::new("views", FieldType::Number, false, &json!({"default_value": 0})).unwrap(),
/// ]).unwrap();
/// let locales = ContentLocales::new(&["en", "de"], "en").unwrap();
/// let key = HashKey::new(b"secret".to_vec());
/// let ctx = WriteContext { locales: &locales, locale: locales.default_locale(), hash_key: &key };
///
/// let input = json!({"title": "Hello"});
/// let ok = prepare_write(&schema, input.as_object().unwrap(), WriteMode::Create, &ctx).unwrap();
/// assert_eq!(serde_json::Value::Object(ok.data), json!({"title": {"en": "Hello"}, "views": 0}));
///
/// let bad = json!({"views": "many"});
/// let errors = prepare_write(&schema, bad.as_object().unwrap(), WriteMode::Create, &ctx).unwrap_err();
/// assert_eq!(errors.get("title").unwrap(), ["The title field is required."]);
/// assert_eq!(errors.get("views").unwrap(), ["The views field must be a number."]);
/// ```
pub fn prepare_write(
    schema: &CollectionSchema,
    input: &Map<String, Value>,
    mode: WriteMode<'_>,
    ctx: &WriteContext<'_>,
) -> Result<PreparedWrite, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let (existing, create) = match mode {
        WriteMode::Create => (None, true),
        WriteMode::Update { existing } => (Some(existing), false),
    };
    let scope = Scope {
        fields: schema.fields(),
        prefix: "",
        reject_unknown: true,
        apply_defaults: create,
        validate_all: create,
        collect_unique: true,
    };
    let written = write_object(&scope, input, existing, ctx, &mut errors);
    errors.into_result(PreparedWrite {
        data: written.data,
        changed: written.changed,
        unique_checks: written.unique_checks,
    })
}

struct Scope<'s> {
    fields: &'s [FieldDef],
    prefix: &'s str,
    /// Top-level data rejects unknown keys; block data drops them (that is also how values of
    /// blocks fields past the depth limit, whose definitions were stripped, leave the data).
    reject_unknown: bool,
    apply_defaults: bool,
    validate_all: bool,
    collect_unique: bool,
}

struct Written {
    data: Map<String, Value>,
    changed: Vec<FieldName>,
    unique_checks: Vec<UniqueCheck>,
}

fn write_object(
    scope: &Scope<'_>,
    input: &Map<String, Value>,
    existing: Option<&Map<String, Value>>,
    ctx: &WriteContext<'_>,
    errors: &mut ValidationErrors,
) -> Written {
    let mut data = existing.cloned().unwrap_or_default();
    if scope.reject_unknown {
        for key in input.keys() {
            if !scope.fields.iter().any(|f| f.name.as_str() == key) {
                errors.add(
                    join_path(scope.prefix, key),
                    format!("The {key} field does not exist."),
                );
            }
        }
    }
    let mut changed = Vec::new();
    let mut failed: Vec<&str> = Vec::new();
    for field in scope.fields {
        let name = field.name.as_str();
        let path = join_path(scope.prefix, name);
        if let Some(raw) = input.get(name) {
            match normalize_field(
                field,
                raw,
                existing.and_then(|e| e.get(name)),
                ctx,
                &path,
                errors,
            ) {
                Some(value) => {
                    data.insert(name.to_owned(), value);
                    changed.push(field.name.clone());
                }
                None => failed.push(name),
            }
        }
        if scope.apply_defaults {
            apply_default(field, &mut data, ctx);
        }
    }

    let mut unique_checks = Vec::new();
    let needs_view = scope.fields.iter().any(|f| f.settings.conditions.is_some());
    let view = if needs_view {
        condition_view(scope.fields, &data, ctx)
    } else {
        Map::new()
    };
    for field in scope.fields {
        let name = field.name.as_str();
        if failed.contains(&name) || !(scope.validate_all || input.contains_key(name)) {
            continue;
        }
        validate_field(
            field,
            data.get(name),
            &view,
            ctx,
            &join_path(scope.prefix, name),
            errors,
            scope.collect_unique.then_some(&mut unique_checks),
        );
    }
    Written {
        data,
        changed,
        unique_checks,
    }
}

/// Applies `default_value` when the field is empty (for translatable fields: when the default
/// locale has no value). Definitions already dropped defaults for types that take none.
fn apply_default(field: &FieldDef, data: &mut Map<String, Value>, ctx: &WriteContext<'_>) {
    let Some(default) = &field.settings.default_value else {
        return;
    };
    let name = field.name.as_str();
    if field.translatable {
        let default_locale = ctx.locales.default_locale().as_str();
        let mut map = match data.get(name) {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        if map.get(default_locale).is_none_or(is_empty) {
            map.insert(default_locale.to_owned(), default.clone());
            data.insert(name.to_owned(), Value::Object(map));
        }
    } else if data.get(name).is_none_or(is_empty) {
        data.insert(name.to_owned(), default.clone());
    }
}

fn normalize_field(
    field: &FieldDef,
    raw: &Value,
    existing: Option<&Value>,
    ctx: &WriteContext<'_>,
    path: &str,
    errors: &mut ValidationErrors,
) -> Option<Value> {
    if !field.translatable {
        return normalize_single(field, raw, ctx, path, errors);
    }
    // Translations merge with what is stored: a plain value replaces one locale, a locale map
    // replaces the locales it names, and a null translation removes that locale.
    let mut map = match existing {
        Some(Value::Object(map)) if is_locale_map(field, map, ctx.locales) => map.clone(),
        Some(Value::Null) | None => Map::new(),
        Some(other) => {
            let mut m = Map::new();
            m.insert(ctx.locales.default_locale().to_string(), other.clone());
            m
        }
    };
    let entries: Vec<(&str, &Value)> = match raw {
        Value::Object(translations) if is_locale_map(field, translations, ctx.locales) => {
            translations.iter().map(|(k, v)| (k.as_str(), v)).collect()
        }
        plain => vec![(ctx.locale.as_str(), plain)],
    };
    let mut ok = true;
    for (locale, value) in entries {
        if !ctx.locales.is_enabled(locale) {
            errors.add(
                path,
                format!(
                    "The {} field has a translation for \"{locale}\", which is not an enabled locale.",
                    field.name
                ),
            );
            ok = false;
            continue;
        }
        match normalize_single(field, value, ctx, path, errors) {
            Some(v) if is_blank_translation(&v) => {
                map.remove(locale);
            }
            Some(v) => {
                map.insert(locale.to_owned(), v);
            }
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    Some(if map.is_empty() {
        Value::Null
    } else {
        Value::Object(map)
    })
}

fn normalize_single(
    field: &FieldDef,
    raw: &Value,
    ctx: &WriteContext<'_>,
    path: &str,
    errors: &mut ValidationErrors,
) -> Option<Value> {
    let result = match field.field_type {
        FieldType::Hash => match raw {
            Value::Null => Ok(Value::Null),
            Value::String(s) if s.is_empty() => Ok(Value::Null),
            Value::String(s) => Ok(Value::String(ctx.hash_key.fingerprint(s))),
            Value::Number(n) => Ok(Value::String(ctx.hash_key.fingerprint(&n.to_string()))),
            _ => Err("must be a string.".to_owned()),
        },
        FieldType::Blocks => return normalize_blocks(field, raw, ctx, path, errors),
        other => normalize_plain(other, &field.settings, raw),
    };
    match result {
        Ok(v) => Some(v),
        Err(message) => {
            errors.add(path, format!("The {} field {message}", field.name));
            None
        }
    }
}

fn normalize_blocks(
    field: &FieldDef,
    raw: &Value,
    ctx: &WriteContext<'_>,
    path: &str,
    errors: &mut ValidationErrors,
) -> Option<Value> {
    let TypeSettings::Blocks(settings) = &field.settings.kind else {
        errors.add(
            path,
            format!("The {} field has no block definitions.", field.name),
        );
        return None;
    };
    let list = match raw {
        Value::Null => return Some(Value::Array(Vec::new())),
        Value::Array(list) => list,
        _ => {
            errors.add(
                path,
                format!("The {} field must be a list of blocks.", field.name),
            );
            return None;
        }
    };
    let mut ok = true;
    let mut out = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{path}.{i}");
        let Some(obj) = entry.as_object() else {
            errors.add(at, "Each block must be an object with type and data.");
            ok = false;
            continue;
        };
        if let Some(extra) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "id" | "type" | "data"))
        {
            errors.add(
                at.clone(),
                format!("Unknown block key \"{extra}\"; a block has id, type and data."),
            );
            ok = false;
        }
        let type_key = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        let Some(block_type) = settings.block_type(type_key) else {
            errors.add(
                format!("{at}.type"),
                format!("Unknown block type \"{type_key}\"."),
            );
            ok = false;
            continue;
        };
        let (id, is_new) = match obj.get("id") {
            None | Some(Value::Null) => (Uuid::new_v4(), true),
            Some(Value::String(s)) => match Uuid::parse_str(s) {
                Ok(id) => (id, false),
                Err(_) => {
                    errors.add(format!("{at}.id"), "A block id must be a UUID.");
                    ok = false;
                    continue;
                }
            },
            Some(_) => {
                errors.add(format!("{at}.id"), "A block id must be a UUID.");
                ok = false;
                continue;
            }
        };
        let empty = Map::new();
        let data = match obj.get("data") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(data)) => data,
            Some(_) => {
                errors.add(format!("{at}.data"), "Block data must be an object.");
                ok = false;
                continue;
            }
        };
        let scope = Scope {
            fields: &block_type.fields,
            prefix: &at,
            reject_unknown: false,
            apply_defaults: is_new,
            validate_all: true,
            collect_unique: false,
        };
        let mut block_errors = ValidationErrors::new();
        let written = write_object(&scope, data, None, ctx, &mut block_errors);
        if !block_errors.is_empty() {
            errors.absorb("", block_errors);
            ok = false;
            continue;
        }
        let mut block = Map::new();
        block.insert("id".into(), Value::String(id.to_string()));
        block.insert("type".into(), Value::String(block_type.key.clone()));
        block.insert("data".into(), Value::Object(written.data));
        out.push(Value::Object(block));
    }
    ok.then_some(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{ContentLocales, HashKey, LocaleCode};

    struct Fixture {
        locales: ContentLocales,
        key: HashKey,
    }

    impl Fixture {
        fn new() -> Self {
            Self {
                locales: ContentLocales::new(&["en", "de"], "en").unwrap(),
                key: HashKey::new(b"k".to_vec()),
            }
        }

        fn ctx(&self, locale: &'static str) -> WriteContext<'_> {
            let code = self
                .locales
                .enabled()
                .iter()
                .find(|l| l.as_str() == locale)
                .unwrap();
            WriteContext {
                locales: &self.locales,
                locale: code,
                hash_key: &self.key,
            }
        }
    }

    fn schema(fields: Value) -> CollectionSchema {
        let defs = fields
            .as_array()
            .unwrap()
            .iter()
            .map(|f| FieldDef::from_json(f).unwrap())
            .collect();
        CollectionSchema::new(defs).unwrap()
    }

    fn create(
        s: &CollectionSchema,
        ctx: &WriteContext<'_>,
        input: Value,
    ) -> Result<PreparedWrite, ValidationErrors> {
        prepare_write(s, input.as_object().unwrap(), WriteMode::Create, ctx)
    }

    fn update(
        s: &CollectionSchema,
        ctx: &WriteContext<'_>,
        existing: &Value,
        input: Value,
    ) -> Result<PreparedWrite, ValidationErrors> {
        let existing = existing.as_object().unwrap();
        prepare_write(
            s,
            input.as_object().unwrap(),
            WriteMode::Update { existing },
            ctx,
        )
    }

    #[test]
    fn unknown_fields_are_rejected_with_every_other_problem() {
        let f = Fixture::new();
        let s = schema(
            json!([{"name": "title", "type": "string", "settings": {"required": true}}, {"name": "n", "type": "number"}]),
        );
        let err = create(&s, &f.ctx("en"), json!({"nope": 1, "n": "x"})).unwrap_err();
        assert_eq!(err.get("nope").unwrap(), ["The nope field does not exist."]);
        assert_eq!(err.get("n").unwrap(), ["The n field must be a number."]);
        assert_eq!(err.get("title").unwrap(), ["The title field is required."]);
        assert_eq!(err.len(), 3);
    }

    #[test]
    fn translations_merge_on_update() {
        let f = Fixture::new();
        let s = schema(json!([{"name": "title", "type": "string", "translatable": true}]));
        let created = create(&s, &f.ctx("en"), json!({"title": "Hello"})).unwrap();
        assert_eq!(
            Value::Object(created.data.clone()),
            json!({"title": {"en": "Hello"}})
        );
        let stored = Value::Object(created.data);
        let de = update(&s, &f.ctx("de"), &stored, json!({"title": "Hallo"})).unwrap();
        let stored = Value::Object(de.data);
        assert_eq!(stored, json!({"title": {"en": "Hello", "de": "Hallo"}}));
        // A locale map replaces the locales it names; null removes a translation.
        let map = update(
            &s,
            &f.ctx("en"),
            &stored,
            json!({"title": {"en": "Hi", "de": null}}),
        )
        .unwrap();
        assert_eq!(Value::Object(map.data), json!({"title": {"en": "Hi"}}));
        assert_eq!(de.changed, vec![FieldName::parse("title").unwrap()]);
    }

    #[test]
    fn translations_for_disabled_locales_are_rejected() {
        let f = Fixture::new();
        let s = schema(json!([{"name": "title", "type": "string", "translatable": true}]));
        let err = create(&s, &f.ctx("en"), json!({"title": {"en": "a", "fr": "b"}})).unwrap_err();
        assert!(err.get("title").unwrap()[0].contains("\"fr\""));
    }

    #[test]
    fn translatable_map_fields_tell_geometry_from_locale_maps() {
        let f = Fixture::new();
        let s = schema(json!([{"name": "where", "type": "map", "translatable": true}]));
        let ok = create(&s, &f.ctx("de"), json!({"where": {"lat": 1, "lng": 2}})).unwrap();
        assert_eq!(
            Value::Object(ok.data),
            json!({"where": {"de": {"type": "Point", "coordinates": [2.0, 1.0]}}})
        );
        let ok = create(
            &s,
            &f.ctx("en"),
            json!({"where": {"en": {"lat": 1, "lng": 2}}}),
        )
        .unwrap();
        assert_eq!(ok.data["where"]["en"]["type"], json!("Point"));
    }

    #[test]
    fn required_translatable_needs_the_default_locale() {
        let f = Fixture::new();
        let s = schema(
            json!([{"name": "title", "type": "string", "translatable": true, "settings": {"required": "1"}}]),
        );
        let err = create(&s, &f.ctx("de"), json!({"title": "Hallo"})).unwrap_err();
        assert_eq!(err.get("title").unwrap(), ["The title field is required."]);
        assert!(create(&s, &f.ctx("en"), json!({"title": "Hello"})).is_ok());
    }

    #[test]
    fn update_validates_only_what_it_touches_but_sees_the_merged_item() {
        let f = Fixture::new();
        let s = schema(json!([
            {"name": "title", "type": "string", "settings": {"required": true}},
            {"name": "status", "type": "select"},
            {"name": "published_at", "type": "date", "settings": {"conditions": {"logic": "and", "rules": [{"field": "status", "operator": "equals", "value": "published"}], "required": true}}}
        ]));
        // Stored data predating the required flag does not block unrelated updates.
        let stored = json!({"status": "draft"});
        assert!(update(&s, &f.ctx("en"), &stored, json!({"status": "draft"})).is_ok());
        // Clearing a required field is caught.
        let err = update(
            &s,
            &f.ctx("en"),
            &json!({"title": "x"}),
            json!({"title": ""}),
        )
        .unwrap_err();
        assert!(err.get("title").is_some());
        // The condition reads the merged item: status comes from the patch, the date is touched.
        let err = update(
            &s,
            &f.ctx("en"),
            &stored,
            json!({"status": "published", "published_at": null}),
        )
        .unwrap_err();
        assert_eq!(
            err.get("published_at").unwrap(),
            ["The published_at field is required."]
        );
        assert!(
            update(
                &s,
                &f.ctx("en"),
                &stored,
                json!({"status": "published", "published_at": "2024-01-01"})
            )
            .is_ok()
        );
    }

    #[test]
    fn condition_can_lift_a_base_requirement() {
        let f = Fixture::new();
        let s = schema(json!([
            {"name": "kind", "type": "string"},
            {"name": "url", "type": "string", "settings": {"required": true, "conditions": {"rules": [{"field": "kind", "operator": "equals", "value": "internal"}], "required": false}}}
        ]));
        assert!(create(&s, &f.ctx("en"), json!({"kind": "internal"})).is_ok());
        assert!(create(&s, &f.ctx("en"), json!({"kind": "external"})).is_err());
    }

    #[test]
    fn defaults_apply_on_create_only() {
        let f = Fixture::new();
        let s = schema(json!([
            {"name": "views", "type": "number", "settings": {"default_value": 0}},
            {"name": "title", "type": "string", "translatable": true, "settings": {"default_value": "Untitled"}}
        ]));
        let c = create(&s, &f.ctx("de"), json!({"views": null})).unwrap();
        assert_eq!(
            Value::Object(c.data),
            json!({"views": 0, "title": {"en": "Untitled"}})
        );
        let u = update(&s, &f.ctx("en"), &json!({}), json!({"views": null})).unwrap();
        assert_eq!(Value::Object(u.data), json!({"views": null}));
    }

    #[test]
    fn unique_rules_become_checks_per_locale() {
        let f = Fixture::new();
        let s = schema(json!([
            {"name": "slug", "type": "string", "translatable": true, "settings": {"validation_rules": [{"operator": "unique"}]}},
            {"name": "email", "type": "string", "settings": {"validation_rules": [{"operator": "unique"}]}}
        ]));
        let c = create(
            &s,
            &f.ctx("en"),
            json!({"slug": {"en": "hello", "de": "hallo"}, "email": ""}),
        )
        .unwrap();
        let checks: Vec<_> = c
            .unique_checks
            .iter()
            .map(|u| {
                (
                    u.field.as_str(),
                    u.locale.as_ref().map(LocaleCode::as_str),
                    u.value.clone(),
                )
            })
            .collect();
        assert_eq!(
            checks,
            vec![
                ("slug", Some("en"), json!("hello")),
                ("slug", Some("de"), json!("hallo"))
            ]
        );
    }

    #[test]
    fn hash_values_are_fingerprinted() {
        let f = Fixture::new();
        let s = schema(json!([{"name": "secret", "type": "hash", "translatable": true}]));
        assert!(!s.fields()[0].translatable);
        let c = create(&s, &f.ctx("en"), json!({"secret": "swordfish"})).unwrap();
        let stored = c.data["secret"].as_str().unwrap();
        assert!(crate::value::hash::is_fingerprint(stored));
        assert!(!stored.contains("swordfish"));
        assert!(create(&s, &f.ctx("en"), json!({"secret": ["x"]})).is_err());
    }

    #[test]
    fn links_per_field_are_capped_by_max_links() {
        let f = Fixture::new();
        let s = schema(json!([
            {"name": "tags", "type": "many_to_many", "settings": {"related_collection_id": 2}},
            {"name": "few", "type": "one_to_many", "settings": {"related_collection_id": 2, "max_links": 2}},
            {"name": "mixed", "type": "m2a", "settings": {"allowed_collection_ids": [2], "max_links": 2}},
            {"name": "gallery", "type": "files", "settings": {"max_links": 2}},
            {"name": "shots", "type": "image", "translatable": true, "settings": {"allow_multiple": true, "max_links": 1}},
            {"name": "content", "type": "blocks", "settings": {"block_types": [
                {"key": "b", "fields": [{"name": "refs", "type": "relation_many", "settings": {"related_collection_id": 2, "max_links": 1}}]}
            ]}}
        ]));
        let ids = |n: i64| Value::from((1..=n).collect::<Vec<_>>());
        // The default: 1,000 links pass, 1,001 do not.
        assert!(create(&s, &f.ctx("en"), json!({"tags": ids(1000)})).is_ok());
        let err = create(&s, &f.ctx("en"), json!({"tags": ids(5000)})).unwrap_err();
        assert_eq!(
            err.get("tags").unwrap(),
            ["The tags field may hold at most 1000 links; got 5000."]
        );
        let m2a = |n: i64| {
            Value::Array(
                (1..=n)
                    .map(|i| json!({"related_collection_id": 2, "related_item_id": i}))
                    .collect(),
            )
        };
        let err = create(
            &s,
            &f.ctx("en"),
            json!({
                "tags": ids(1001),
                "few": ids(3),
                "mixed": m2a(3),
                "gallery": ids(3),
                "shots": {"en": [1], "de": [1, 2]},
                "content": [{"type": "b", "data": {"refs": [1, 2]}}]
            }),
        )
        .unwrap_err();
        assert_eq!(
            err.get("tags").unwrap(),
            ["The tags field may hold at most 1000 links; got 1001."]
        );
        assert_eq!(
            err.get("few").unwrap(),
            ["The few field may hold at most 2 links; got 3."]
        );
        assert_eq!(
            err.get("mixed").unwrap(),
            ["The mixed field may hold at most 2 links; got 3."]
        );
        assert_eq!(
            err.get("gallery").unwrap(),
            ["The gallery field may hold at most 2 files; got 3."]
        );
        // Per translation, and inside blocks under the block's path.
        assert_eq!(
            err.get("shots").unwrap(),
            ["The shots field may hold at most 1 file; got 2."]
        );
        assert_eq!(
            err.get("content.0.refs").unwrap(),
            ["The refs field may hold at most 1 link; got 2."]
        );
        assert_eq!(err.len(), 6);
        // At the caps, everything passes.
        assert!(
            create(
                &s,
                &f.ctx("en"),
                json!({"few": ids(2), "mixed": m2a(2), "gallery": ids(2), "shots": {"en": [1], "de": [2]},
                       "content": [{"type": "b", "data": {"refs": [1]}}]})
            )
            .is_ok()
        );
    }

    fn page_schema() -> CollectionSchema {
        schema(
            json!([{"name": "content", "type": "blocks", "settings": {"max_blocks_depth": 2, "block_types": [
                {"key": "hero", "fields": [
                    {"name": "heading", "type": "string", "translatable": true, "settings": {"required": true}},
                    {"name": "image", "type": "image"},
                    {"name": "style", "type": "select", "settings": {"default_value": "light"}},
                    {"name": "cta", "type": "string", "settings": {"conditions": {"rules": [{"field": "style", "operator": "equals", "value": "dark"}], "required": true}}}
                ]},
                {"key": "columns", "fields": [
                    {"name": "items", "type": "blocks", "settings": {"block_types": [
                        {"key": "text", "fields": [{"name": "body", "type": "wysiwyg"}, {"name": "deeper", "type": "blocks", "settings": {"block_types": [{"key": "x", "fields": []}]}}]}
                    ]}}
                ]}
            ]}}]),
        )
    }

    #[test]
    fn blocks_normalize_nested_values_and_assign_ids() {
        let f = Fixture::new();
        let s = page_schema();
        let c = create(&s, &f.ctx("de"), json!({"content": [
            {"type": "hero", "data": {"heading": {"en": "Hi"}, "image": "5", "ignored": true}},
            {"type": "columns", "data": {"items": [{"type": "text", "data": {"body": "<p>a<script>x</script></p>", "deeper": [{"type": "x"}]}}]}}
        ]})).unwrap();
        let blocks = c.data["content"].as_array().unwrap();
        let id = blocks[0]["id"].as_str().unwrap();
        assert!(Uuid::parse_str(id).is_ok());
        assert_eq!(
            blocks[0]["data"],
            json!({"heading": {"en": "Hi"}, "image": 5, "style": "light"})
        );
        assert_eq!(
            blocks[1]["data"]["items"][0]["data"],
            json!({"body": "<p>a</p>"})
        );
        // Idempotent: ids kept, defaults not re-applied to existing blocks.
        let again = create(&s, &f.ctx("de"), Value::Object(c.data.clone())).unwrap();
        assert_eq!(again.data, c.data);
    }

    #[test]
    fn block_errors_are_reported_by_path() {
        let f = Fixture::new();
        let s = page_schema();
        let err = create(
            &s,
            &f.ctx("en"),
            json!({"content": [
                {"type": "hero", "data": {"style": "dark"}},
                {"type": "unknown"},
                {"type": "hero", "id": "not-a-uuid", "data": {"heading": "x"}},
                "text",
                {"type": "hero", "data": {"heading": "x"}, "extra": 1},
                {"type": "hero", "data": []}
            ]}),
        )
        .unwrap_err();
        assert_eq!(
            err.get("content.0.heading").unwrap(),
            ["The heading field is required."]
        );
        assert_eq!(
            err.get("content.0.cta").unwrap(),
            ["The cta field is required."]
        );
        assert_eq!(
            err.get("content.1.type").unwrap(),
            ["Unknown block type \"unknown\"."]
        );
        assert_eq!(
            err.get("content.2.id").unwrap(),
            ["A block id must be a UUID."]
        );
        assert!(err.get("content.3").is_some());
        assert!(err.get("content.4").is_some());
        assert_eq!(
            err.get("content.5.data").unwrap(),
            ["Block data must be an object."]
        );
        assert!(create(&s, &f.ctx("en"), json!({"content": {"type": "hero"}})).is_err());
    }
}
