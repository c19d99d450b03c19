//! Fuzz target (proptest, stable toolchain) for the item filter dialect: the query form
//! `filter[f][_op]=v`, the JSON form of item filters, and a role's `item_filter`.
//!
//! On any input the parsers return `Ok` or a clean [`PolicyError::InvalidFilter`] naming a
//! parameter that was given, never panic; a parsed filter holds at most [`MAX_CONDITIONS`]
//! conditions, one per `filter[…]` pair, and evaluating it against arbitrary data never panics.
//!
//! Cases: 256 by default; `PROPTEST_CASES=100000 cargo test -p vellum-policy --test fuzz_filter
//! --release` for a long run (see docs/testing.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Number, Value, json};
use vellum_policy::{Filter, ItemRef, MAX_CONDITIONS, PolicyError, Role};

const FIELDS: &[&str] = &[
    "title",
    "views",
    "tags",
    "id",
    "created_at",
    "updated_at",
    "_x",
    "a1",
    "",
    "1abc",
    "a-b",
    "a b",
    "é",
    "[",
    "]",
    "title]",
    "x\u{0}",
];

const OPS: &[&str] = &[
    "_contains",
    "_eq",
    "_neq",
    "_in",
    "_gt",
    "_gte",
    "_lt",
    "_lte",
    "_null",
    "_nnull",
    "_like",
    "",
    "eq",
    "_EQ",
    "[",
];

fn arb_text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(&[
            "", "0", "1", "true", "false", "-1", "1e400", "NaN", "inf", "9223372036854775808",
            "2024-05-01", "9999-12-31T23:59:59-02:00", "0000-01-01T00:00:00+01:00", "a,b,,c",
            ",", " , ", "É", "\u{0}", "%00", "'; DROP TABLE items; --",
        ][..]).prop_map(str::to_owned),
        2 => "[a-c0-9,. -]{0,12}",
        1 => "\\PC{0,24}",
        1 => ".{0,24}",
        // Long comma lists around the 100-value limit of `_in`.
        1 => (95usize..110).prop_map(|n| vec!["1"; n].join(",")),
    ]
    .boxed()
}

/// A query key: mostly `filter[field]` or `filter[field][op]`, sometimes broken brackets, extra
/// nesting, other parameters, or anything at all.
fn arb_key() -> BoxedStrategy<String> {
    let field = || prop_oneof![4 => select(FIELDS).prop_map(str::to_owned), 1 => "\\PC{0,8}"];
    let op = || prop_oneof![4 => select(OPS).prop_map(str::to_owned), 1 => "\\PC{0,8}"];
    prop_oneof![
        4 => field().prop_map(|f| format!("filter[{f}]")),
        6 => (field(), op()).prop_map(|(f, o)| format!("filter[{f}][{o}]")),
        1 => (field(), op(), op()).prop_map(|(f, a, b)| format!("filter[{f}][{a}][{b}]")),
        1 => select(&[
            "filter", "filter[", "filter]", "filter[]", "filter[][]", "filter[a", "filter[a]]",
            "filter[a][", "filter[[a]]", "filters", "filtered", "page", "sort", "filter a",
        ][..]).prop_map(str::to_owned),
        1 => "filter\\PC{0,12}",
        1 => ".{0,16}",
    ]
    .boxed()
}

fn arb_pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    prop_oneof![
        8 => prop::collection::vec((arb_key(), arb_text()), 0..8),
        // Around the condition limit.
        1 => prop::collection::vec((arb_key(), arb_text()), 28..40),
    ]
}

fn arb_number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-5i64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
    ]
    .boxed()
}

fn arb_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        arb_number(),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![select(FIELDS), select(OPS)].prop_map(str::to_owned),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// The JSON form: mostly `{field: {op: operand}}` or `{field: plain}`, sometimes anything.
fn arb_filter_json() -> BoxedStrategy<Value> {
    let field = prop_oneof![4 => select(FIELDS).prop_map(str::to_owned), 1 => "\\PC{0,8}"];
    let op = prop_oneof![4 => select(OPS).prop_map(str::to_owned), 1 => "\\PC{0,8}"];
    let spec = prop_oneof![
        3 => prop::collection::vec((op, arb_json()), 0..4)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => arb_json(),
    ];
    prop_oneof![
        8 => prop::collection::vec((field, spec), 0..40)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        1 => arb_json(),
    ]
    .boxed()
}

fn arb_data() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((select(FIELDS).prop_map(str::to_owned), arb_json()), 0..6)
        .prop_map(|kv| kv.into_iter().collect())
}

/// The item a filter is evaluated against, with arbitrary system keys.
fn evaluate(filter: &Filter, data: &Map<String, Value>, id: i64, stamp: &str) {
    let _ = filter.matches(&ItemRef::data(data));
    let _ = filter.matches(&ItemRef {
        id: Some(id),
        created_at: Some(stamp),
        updated_at: Some(stamp),
        data,
    });
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn query_form_parses_cleanly(
        pairs in arb_pairs(),
        data in arb_data(),
        id in any::<i64>(),
        stamp in arb_text(),
    ) {
        let result = Filter::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        match result {
            Ok(filter) => {
                prop_assert!(filter.conditions().len() <= MAX_CONDITIONS);
                // Every `filter[…]` pair became exactly one condition; other keys were ignored.
                let filter_keys = pairs.iter().filter(|(k, _)| k.starts_with("filter[")).count();
                prop_assert_eq!(filter.conditions().len(), filter_keys, "{:?}", pairs);
                // Field names are valid: they print back as themselves.
                for c in filter.conditions() {
                    let name = c.field.as_str();
                    let bracketed = format!("[{name}]");
                    prop_assert!(pairs.iter().any(|(k, _)| k.contains(&bracketed)));
                }
                evaluate(&filter, &data, id, &stamp);
            }
            Err(PolicyError::InvalidFilter { param, message }) => {
                prop_assert!(!message.is_empty());
                prop_assert!(
                    param == "filter" || pairs.iter().any(|(k, _)| *k == param),
                    "error names {:?}, not a given parameter: {:?}", param, pairs
                );
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other:?}"),
        }
    }

    #[test]
    fn json_form_parses_cleanly(
        raw in arb_filter_json(),
        data in arb_data(),
        id in any::<i64>(),
        stamp in arb_text(),
    ) {
        match Filter::from_json("item_filter", &raw) {
            Ok(filter) => {
                prop_assert!(filter.conditions().len() <= MAX_CONDITIONS);
                evaluate(&filter, &data, id, &stamp);
                // Combining with itself never panics and keeps both halves.
                let twice = filter.clone().and(&filter);
                prop_assert_eq!(twice.conditions().len(), 2 * filter.conditions().len());
                evaluate(&twice, &data, id, &stamp);
            }
            Err(PolicyError::InvalidFilter { param, message }) => {
                prop_assert!(param.starts_with("item_filter"), "{}", param);
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other:?}"),
        }
    }

    #[test]
    fn role_item_filters_parse_cleanly(raw in arb_filter_json(), data in arb_data()) {
        let grant = json!({"collection_permissions": {"articles": {
            "read": true, "rules": {"item_filter": raw}
        }}});
        match Role::from_json("r", &grant) {
            Ok(role) => {
                let slug = "articles".parse().unwrap();
                let _ = role.may_see_item(&slug, &ItemRef::data(&data));
                // The role survives its own JSON form.
                let again = Role::from_json("r", &role.to_json());
                prop_assert!(again.is_ok(), "{:?}", again);
            }
            Err(PolicyError::InvalidGrant { path, message }) => {
                prop_assert!(!path.is_empty());
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other:?}"),
        }
    }
}
