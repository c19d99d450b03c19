//! Fuzz target (proptest, stable toolchain) for blocks: random `block_types` definition trees
//! (nested blocks fields, random `max_blocks_depth`, bad keys and duplicates) and random block
//! lists drawn from the same small vocabulary, so that values often meet their definitions.
//!
//! A definition gives a field or a clean settings error and survives its JSON form; a write in
//! create or update mode returns `Ok` or validation errors, never a panic; a stored value is a
//! list of `{id, type, data}` blocks with UUID ids, is stored unchanged when written back, and
//! reads back without a panic.
//!
//! Cases: 256 by default; `PROPTEST_CASES=100000 cargo test -p vellum-domain --test fuzz_blocks
//! --release` for a long run (see docs/testing.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::cell::Cell;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{TestCaseError, TestRunner};
use serde_json::{Map, Number, Value, json};
use vellum_domain::{
    CollectionSchema, ContentLocales, DomainError, FieldDef, FieldType, HashKey, LocaleSelection,
    PreparedWrite, ValidationErrors, WriteContext, WriteMode, flatten_for_read, prepare_write,
};

const BLOCK_KEYS: &[&str] = &["hero", "text", "section"];
/// One character over the 64 a block type key may have.
const LONG_KEY: &str = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk";
const FIELD_NAMES: &[&str] = &["title", "body", "n", "children"];

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..10).prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        select(
            &[
                "",
                "x",
                "42",
                "hero",
                "<b>x</b><script>1</script>",
                "2024-01-01",
                "#fff",
                "é",
                "\u{0}"
            ][..]
        )
        .prop_map(|s| Value::String(s.to_owned())),
        "\\PC{0,8}".prop_map(Value::String),
    ]
    .boxed()
}

fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        select(&["en", "de", "id", "type", "data", "x"][..])
                            .prop_map(str::to_owned),
                        inner
                    ),
                    0..4
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A field definition inside a block type; `children` is a nested blocks field while `depth`
/// allows.
/// Keeps the first entry for each value of `key` (duplicates are an error tested 10% of the
/// time; the rest of the time the definition should get further).
fn dedup_by(list: Vec<Value>, key: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    list.into_iter()
        .filter(|v| {
            let k = v.get(key).cloned();
            let new = !seen.contains(&k);
            seen.push(k);
            new
        })
        .collect()
}

fn arb_field_def(depth: u32) -> BoxedStrategy<Value> {
    let simple = (
        select(FIELD_NAMES),
        select(&FieldType::ALL[..]),
        any::<bool>(),
        prop::option::weighted(
            0.3,
            prop_oneof![
                Just(json!({"required": true})),
                Just(json!({"default_value": "d"})),
                Just(json!({"options": ["x", "42"]})),
                Just(json!({"conditions": {"rules": [{"field": "n", "operator": "not_empty"}], "required": true}})),
                Just(json!({"validation_rules": [{"operator": "max_length", "value": 3}]})),
                arb_json(),
            ],
        ),
    )
        .prop_map(|(name, ty, translatable, settings)| {
            let ty = if ty == FieldType::Blocks {
                FieldType::String
            } else {
                ty
            };
            json!({"name": name, "type": ty.as_str(), "translatable": translatable, "settings": settings})
        })
        .boxed();
    if depth == 0 {
        return simple;
    }
    prop_oneof![
        3 => simple,
        1 => arb_blocks_settings(depth - 1)
            .prop_map(|s| json!({"name": "children", "type": "blocks", "settings": s})),
    ]
    .boxed()
}

fn arb_block_type(depth: u32) -> BoxedStrategy<Value> {
    (
        prop_oneof![
            8 => select(BLOCK_KEYS).prop_map(Value::from),
            1 => select(&["", "a b", "a\tb", LONG_KEY][..]).prop_map(Value::from),
            1 => arb_leaf(),
        ],
        prop::option::weighted(
            0.2,
            prop_oneof![arb_leaf(), Just(json!({"en": "Hero", "de": "Held"}))],
        ),
        prop::collection::vec(arb_field_def(depth), 0..4),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(key, label, fields, keep_duplicates)| {
            let fields = if keep_duplicates {
                fields
            } else {
                dedup_by(fields, "name")
            };
            json!({"key": key, "label": label, "fields": fields})
        })
        .boxed()
}

fn arb_blocks_settings(depth: u32) -> BoxedStrategy<Value> {
    (
        prop::option::weighted(
            0.3,
            prop_oneof![
                6 => (1i64..=5).prop_map(Value::from),
                1 => (0i64..8).prop_map(Value::from),
                1 => select(vec![json!(255), json!(-1), json!(2.5), json!("3")]),
            ],
        ),
        prop_oneof![
            12 => (prop::collection::vec(arb_block_type(depth), 0..4), prop::bool::weighted(0.1))
                .prop_map(|(types, keep)| Value::Array(if keep { types } else { dedup_by(types, "key") })),
            1 => arb_json(),
        ],
    )
        .prop_map(|(max, types)| {
            let mut s = Map::new();
            if let Some(max) = max {
                s.insert("max_blocks_depth".into(), max);
            }
            s.insert("block_types".into(), types);
            Value::Object(s)
        })
        .boxed()
}

fn arb_id() -> BoxedStrategy<Option<Value>> {
    prop::option::of(prop_oneof![
        6 => any::<u128>().prop_map(|n| Value::String(uuid::Uuid::from_u128(n).to_string())),
        1 => Just(json!("0B3C6F6E-6D1E-4B6F-9A57-1D6D2F0E8A11")),
        1 => Just(json!("{0b3c6f6e-6d1e-4b6f-9a57-1d6d2f0e8a11}")),
        1 => Just(json!("urn:uuid:0b3c6f6e-6d1e-4b6f-9a57-1d6d2f0e8a11")),
        1 => arb_leaf(),
    ])
    .boxed()
}

fn arb_block_list(depth: u32) -> BoxedStrategy<Value> {
    let value = if depth == 0 {
        prop_oneof![
            3 => select(vec![json!(null), json!("x"), json!(1), json!(true), json!([])]),
            2 => arb_json(),
        ]
        .boxed()
    } else {
        prop_oneof![
            3 => select(vec![json!(null), json!("x"), json!(1), json!(true), json!([])]),
            2 => arb_json(),
            2 => arb_block_list(depth - 1),
        ]
        .boxed()
    };
    let block = (
        prop_oneof![8 => select(BLOCK_KEYS).prop_map(Value::from), 1 => arb_leaf()],
        arb_id(),
        prop_oneof![
            8 => prop::collection::vec((select(FIELD_NAMES), value), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
            1 => arb_json(),
        ],
        prop::option::weighted(0.05, arb_leaf()),
    )
        .prop_map(|(ty, id, data, extra)| {
            let mut b = Map::new();
            b.insert("type".into(), ty);
            if let Some(id) = id {
                b.insert("id".into(), id);
            }
            b.insert("data".into(), data);
            if let Some(extra) = extra {
                b.insert("extra".into(), extra);
            }
            Value::Object(b)
        });
    prop_oneof![
        10 => prop::collection::vec(block, 0..4).prop_map(Value::Array),
        1 => arb_json(),
    ]
    .boxed()
}

fn locales() -> ContentLocales {
    ContentLocales::new(&["en", "de"], "en").unwrap()
}

fn write(
    schema: &CollectionSchema,
    input: &Map<String, Value>,
    mode: WriteMode<'_>,
    locale: &str,
) -> Result<PreparedWrite, ValidationErrors> {
    let locales = locales();
    let locale = locales.resolve(Some(locale)).unwrap();
    let key = HashKey::new(b"fuzz-key".to_vec());
    let ctx = WriteContext {
        locales: &locales,
        locale: &locale,
        hash_key: &key,
    };
    prepare_write(schema, input, mode, &ctx)
}

fn single(value: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("content".into(), value);
    m
}

/// Every stored block is `{id, type, data}` with a UUID id, recursively for nested lists.
fn assert_stored_shape(value: &Value) -> Result<(), TestCaseError> {
    let Value::Array(list) = value else {
        return Err(TestCaseError::fail(format!("not a list: {value}")));
    };
    for block in list {
        let obj = block.as_object().unwrap();
        let keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        prop_assert_eq!(keys, ["id", "type", "data"]);
        prop_assert!(uuid::Uuid::parse_str(obj["id"].as_str().unwrap()).is_ok());
        prop_assert!(BLOCK_KEYS.contains(&obj["type"].as_str().unwrap()));
        for v in obj["data"].as_object().unwrap().values() {
            if v.as_array()
                .is_some_and(|l| l.first().and_then(|b| b.get("data")).is_some())
            {
                assert_stored_shape(v)?;
            }
        }
    }
    Ok(())
}

/// Outcome counts, so the property is shown not to be vacuous.
#[derive(Default)]
struct Seen {
    definitions: Cell<u32>,
    stored: Cell<u32>,
}

fn check(
    (settings, value, existing, locale): (Value, Value, Value, &str),
    seen: &Seen,
) -> Result<(), TestCaseError> {
    {
        let def = match FieldDef::new("content", FieldType::Blocks, false, &settings) {
            Ok(def) => def,
            Err(DomainError::InvalidSettings { path, message }) => {
                prop_assert!(!message.is_empty(), "{}", path);
                return Ok(());
            }
            Err(other) => {
                return Err(TestCaseError::fail(format!(
                    "unexpected error kind {other:?}"
                )));
            }
        };
        seen.definitions.set(seen.definitions.get() + 1);
        let again = FieldDef::from_json(&def.to_json());
        prop_assert_eq!(again.as_ref(), Ok(&def), "{}", settings);

        let schema = CollectionSchema::new(vec![def]).unwrap();
        let input = single(value.clone());
        let existing = single(existing);
        let _ = write(
            &schema,
            &input,
            WriteMode::Update {
                existing: &existing,
            },
            locale,
        );
        let created = write(&schema, &input, WriteMode::Create, locale);
        if let Err(errors) = &created {
            prop_assert!(!errors.is_empty());
        }
        if let Ok(first) = created {
            seen.stored.set(seen.stored.get() + 1);
            let stored = first.data.get("content").cloned().unwrap_or(Value::Null);
            assert_stored_shape(&stored)?;
            let second = write(&schema, &first.data, WriteMode::Create, locale);
            prop_assert_eq!(
                second.map(|p| Value::Object(p.data)),
                Ok(Value::Object(first.data.clone())),
                "settings {} input {}",
                settings,
                value
            );
            let _ = flatten_for_read(
                &schema,
                &first.data,
                &LocaleSelection::AllTranslations,
                &locales(),
            );
        }
        // Reading whatever is stored (here: the raw input) never panics.
        let de = LocaleSelection::Flatten(locales().resolve(Some("de")).unwrap());
        let _ = flatten_for_read(&schema, &input, &de, &locales());
    }
    Ok(())
}

#[test]
fn blocks_definitions_and_values_are_handled_cleanly() {
    let strategy = (
        arb_blocks_settings(4),
        arb_block_list(4),
        arb_block_list(2),
        select(&["en", "de"][..]),
    );
    let seen = Seen::default();
    let mut runner = TestRunner::new(ProptestConfig {
        source_file: Some(file!()),
        ..ProptestConfig::default()
    });
    if let Err(e) = runner.run(&strategy, |case| check(case, &seen)) {
        panic!("{e}");
    }
    let cases = runner.config().cases;
    eprintln!(
        "{} definitions accepted, {} values stored, of {cases} cases",
        seen.definitions.get(),
        seen.stored.get()
    );
    // Not vacuous: definitions are accepted and values stored.
    assert!(
        seen.definitions.get() >= cases / 4,
        "{}",
        seen.definitions.get()
    );
    assert!(seen.stored.get() >= cases / 20, "{}", seen.stored.get());
}
