//! Properties of the policy crate over random grants, data and input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use vellum_domain::CollectionSlug;
use vellum_policy::{Filter, IpAllowlist, ItemRef, Origin, OriginAllowlist, Role};

const FIELDS: [&str; 6] = ["title", "status", "views", "secret", "tags", "notes"];

fn field_rules() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        prop::sample::select(&FIELDS[..]),
        (
            any::<Option<bool>>(),
            any::<Option<bool>>(),
            any::<Option<bool>>(),
        ),
        0..6,
    )
    .prop_map(|m| {
        m.into_iter()
            .map(|(name, (r, c, u))| {
                let mut flags = Map::new();
                for (k, v) in [("read", r), ("create", c), ("update", u)] {
                    if let Some(v) = v {
                        flags.insert(k.into(), Value::Bool(v));
                    }
                }
                (name.to_owned(), Value::Object(flags))
            })
            .collect()
    })
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-50i64..50).prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::String),
        prop::collection::vec("[a-c]{1,2}".prop_map(Value::String), 0..3).prop_map(Value::Array),
    ]
}

fn data() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(prop::sample::select(&FIELDS[..]), scalar(), 0..7)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn filter_pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    let op = prop::sample::select(
        &[
            "",
            "[_eq]",
            "[_neq]",
            "[_contains]",
            "[_in]",
            "[_gt]",
            "[_gte]",
            "[_lt]",
            "[_lte]",
            "[_null]",
            "[_nnull]",
        ][..],
    );
    let value = prop_oneof![
        "-?[0-9]{1,2}",
        "[a-c]{0,3}",
        Just("1".to_owned()),
        Just("a,b".to_owned())
    ];
    prop::collection::vec((prop::sample::select(&FIELDS[..]), op, value), 0..6).prop_map(|v| {
        v.into_iter()
            .map(|(f, op, val)| {
                // _null/_nnull take flags.
                let val = if op.contains("null") {
                    "1".to_owned()
                } else {
                    val
                };
                (format!("filter[{f}]{op}"), val)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Redaction never returns a field whose read flag is false, and keeps every other field.
    #[test]
    fn redaction_never_returns_an_unreadable_field(rules in field_rules(), mut item in data()) {
        let role = Role::from_json("r", &json!({"collection_permissions": {"articles": {"read": true, "rules": {"fields": rules.clone()}}}})).unwrap();
        let slug = CollectionSlug::parse("articles").unwrap();
        let before = item.clone();
        role.field_policy(&slug).redact(&mut item);
        for (name, flags) in &rules {
            let readable = flags.get("read").is_none_or(|v| v == &Value::Bool(true));
            if !readable {
                prop_assert!(!item.contains_key(name), "{name} leaked");
            } else if before.contains_key(name) {
                prop_assert!(item.contains_key(name));
            }
        }
        for key in before.keys() {
            if !rules.contains_key(key) {
                prop_assert!(item.contains_key(key));
            }
        }
    }

    /// Evaluation does not depend on the order of the conditions or of the item's keys.
    #[test]
    fn filter_evaluation_is_order_independent(pairs in filter_pairs(), item in data()) {
        let forward = Filter::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        let backward = Filter::from_query(pairs.iter().rev().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        let reordered: Map<String, Value> = item.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
        let a = forward.matches(&ItemRef::data(&item));
        prop_assert_eq!(a, backward.matches(&ItemRef::data(&item)));
        prop_assert_eq!(a, forward.matches(&ItemRef::data(&reordered)));
        // AND: the whole matches exactly when every single condition does.
        let each = pairs.iter().all(|(k, v)| Filter::from_query([(k.as_str(), v.as_str())]).unwrap().matches(&ItemRef::data(&item)));
        prop_assert_eq!(a, each);
    }

    /// The query and JSON forms of the same filter agree.
    #[test]
    fn query_and_json_forms_agree(pairs in filter_pairs(), item in data()) {
        let query = Filter::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        let mut obj = Map::new();
        for (k, v) in &pairs {
            let inner = k.trim_start_matches("filter[").trim_end_matches(']');
            let (field, op) = inner.split_once("][").unwrap_or((inner, "_contains"));
            let entry = obj.entry(field.to_owned()).or_insert_with(|| Value::Object(Map::new()));
            entry.as_object_mut().unwrap().insert(op.to_owned(), Value::String(v.clone()));
        }
        // Duplicate field/op pairs collapse in JSON; only compare when nothing collapsed.
        let ops: usize = obj.values().map(|v| v.as_object().unwrap().len()).sum();
        prop_assume!(ops == pairs.len());
        let json = Filter::from_json("filter", &Value::Object(obj)).unwrap();
        prop_assert_eq!(query.matches(&ItemRef::data(&item)), json.matches(&ItemRef::data(&item)));
    }

    /// Parsers never panic on arbitrary input.
    #[test]
    fn parsers_never_panic(key in ".{0,40}", value in ".{0,40}", text in ".{0,80}") {
        let _ = Filter::from_query([(key.as_str(), value.as_str())]);
        let _ = Filter::from_query([(format!("filter[{key}]").as_str(), value.as_str())]);
        let _ = Origin::parse(&text);
        let _ = OriginAllowlist::parse(&text);
        let _ = IpAllowlist::parse([text.as_str()]);
        let _ = vellum_policy::ApiKeySecret::parse(&text);
        let _ = Role::from_json("r", &json!({"collection_permissions": {"a": {"rules": {"item_filter": {key.clone(): {value.clone(): text.clone()}}}}}}));
    }
}
