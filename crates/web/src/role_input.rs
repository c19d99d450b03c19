//! The role editor's fields read back into the body the roles use case validates: `name`,
//! `permission_ids[]`, the collection matrix (`cp.{collection}.{action}`), field rules
//! (`fr.{collection}.{field}.{flag}`, checked means allowed), item filters (`if.{collection}`,
//! JSON) and the file matrix (`fp.{action}`). Only what is granted is written (absent means
//! deny), and a field rule only for a field with a flag taken away on a collection with an action
//! granted.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use vellum_app::roles::CollectionFields;

/// A collection grant's actions.
pub const COLLECTION_ACTIONS: [&str; 4] = ["create", "read", "update", "delete"];
/// A field rule's flags.
pub const FIELD_FLAGS: [&str; 3] = ["read", "create", "update"];
/// The file matrix's actions.
pub const FILE_ACTIONS: [&str; 5] = ["create", "read", "read_private", "update", "delete"];

/// The body for the posted `form`, given every collection's fields.
#[must_use]
pub fn role_body(form: &[(String, String)], collections: &[CollectionFields]) -> Value {
    // One pass over the form: the lookups below are per collection, field and flag, and a
    // form's pairs are bounded only by the body limit.
    let mut posted: HashMap<&str, &str> = HashMap::with_capacity(form.len());
    for (k, v) in form {
        posted.entry(k.as_str()).or_insert(v.as_str());
    }
    let has = |key: &str| posted.contains_key(key);
    let text = |key: &str| {
        posted
            .get(key)
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let permission_ids: Vec<Value> = form
        .iter()
        .filter(|(k, _)| k == "permission_ids[]")
        .map(|(_, v)| v.parse::<i64>().map_or_else(|_| json!(v), Value::from))
        .collect();
    let mut grants = Map::new();
    for c in collections {
        let mut grant = Map::new();
        for action in COLLECTION_ACTIONS {
            if has(&format!("cp.{}.{action}", c.slug)) {
                grant.insert(action.to_owned(), Value::Bool(true));
            }
        }
        let mut rules = Map::new();
        let mut fields = Map::new();
        // Field rules narrow the actions granted: a collection with none needs none.
        let granted = !grant.is_empty();
        for field in c.fields.iter().filter(|_| granted) {
            let denied: Map<String, Value> = FIELD_FLAGS
                .iter()
                .filter(|flag| !has(&format!("fr.{}.{field}.{flag}", c.slug)))
                .map(|flag| ((*flag).to_owned(), Value::Bool(false)))
                .collect();
            if !denied.is_empty() {
                fields.insert(field.clone(), Value::Object(denied));
            }
        }
        if !fields.is_empty() {
            rules.insert("fields".to_owned(), Value::Object(fields));
        }
        let filter = text(&format!("if.{}", c.slug));
        if !filter.is_empty() {
            let value = serde_json::from_str(&filter).unwrap_or(Value::String(filter));
            rules.insert("item_filter".to_owned(), value);
        }
        if !rules.is_empty() {
            grant.insert("rules".to_owned(), Value::Object(rules));
        }
        if !grant.is_empty() {
            grants.insert(c.slug.clone(), Value::Object(grant));
        }
    }
    let files: Map<String, Value> = FILE_ACTIONS
        .iter()
        .filter(|action| has(&format!("fp.{action}")))
        .map(|action| ((*action).to_owned(), Value::Bool(true)))
        .collect();
    json!({
        "name": text("name"),
        "permission_ids": permission_ids,
        "collection_permissions": grants,
        "file_permissions": files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_boxes_grant_and_unchecked_field_flags_deny() {
        let collections = [
            CollectionFields {
                slug: "articles".to_owned(),
                name: "Articles".to_owned(),
                fields: vec!["title".to_owned(), "notes".to_owned()],
            },
            CollectionFields {
                slug: "tags".to_owned(),
                name: "Tags".to_owned(),
                fields: vec!["label".to_owned()],
            },
        ];
        let form: Vec<(String, String)> = [
            ("name", " editor "),
            ("permission_ids[]", "3"),
            ("cp.articles.read", "true"),
            ("cp.articles.update", "true"),
            ("fr.articles.title.read", "true"),
            ("fr.articles.title.create", "true"),
            ("fr.articles.title.update", "true"),
            ("fr.articles.notes.create", "true"),
            ("if.articles", r#"{"status": {"_eq": "published"}}"#),
            ("fr.tags.label.read", "true"),
            ("fr.tags.label.create", "true"),
            ("fr.tags.label.update", "true"),
            ("fp.read", "true"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            role_body(&form, &collections),
            json!({
                "name": "editor",
                "permission_ids": [3],
                "collection_permissions": {"articles": {
                    "read": true, "update": true,
                    "rules": {
                        "fields": {"notes": {"read": false, "update": false}},
                        "item_filter": {"status": {"_eq": "published"}}
                    }
                }},
                "file_permissions": {"read": true}
            })
        );
    }
}
