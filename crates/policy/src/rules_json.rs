//! A grant's stored rules (`{"fields": {name: flags}, "item_filter": {name: condition}}`) when a
//! field is renamed or removed (issue 18): the rules keep meaning the same field, so a rename
//! neither opens a field a rule closed nor empties a role's view through its item filter.

use serde_json::{Map, Value};

/// `rules` with every reference to field `from` (a field rule, an item filter condition) moved
/// to `to`. Keys keep their order otherwise.
#[must_use]
pub fn rename_rule_field(rules: &Value, from: &str, to: &str) -> Value {
    let mut out = rules.clone();
    for section in ["fields", "item_filter"] {
        if let Some(Value::Object(map)) = out.get_mut(section) {
            *map = rename_key(map, from, to);
        }
    }
    out
}

/// `rules` without the field rule of `field` (a rule about a field that no longer exists). Item
/// filter conditions are not dropped: removing one would widen what the role sees, so the
/// caller refuses instead (see [`item_filter_names`]).
#[must_use]
pub fn drop_rule_field(rules: &Value, field: &str) -> Value {
    let mut out = rules.clone();
    if let Some(Value::Object(map)) = out.get_mut("fields") {
        map.remove(field);
    }
    out
}

/// Whether the rules' item filter has a condition on `field`.
#[must_use]
pub fn item_filter_names(rules: &Value, field: &str) -> bool {
    rules
        .get("item_filter")
        .and_then(Value::as_object)
        .is_some_and(|filter| filter.contains_key(field))
}

fn rename_key(map: &Map<String, Value>, from: &str, to: &str) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let key = if k == from { to.to_owned() } else { k.clone() };
            (key, v.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rules_follow_a_rename_and_a_removal() {
        let rules = json!({"fields": {"title": {"read": false}, "body": {}}, "item_filter": {"title": {"_eq": "x"}}});
        assert_eq!(
            rename_rule_field(&rules, "title", "headline"),
            json!({"fields": {"headline": {"read": false}, "body": {}}, "item_filter": {"headline": {"_eq": "x"}}})
        );
        assert!(item_filter_names(&rules, "title"));
        assert!(!item_filter_names(&rules, "body"));
        assert_eq!(
            drop_rule_field(&rules, "body"),
            json!({"fields": {"title": {"read": false}}, "item_filter": {"title": {"_eq": "x"}}})
        );
    }
}
