//! Fuzz target (proptest, stable toolchain) for value normalization of every field type, under
//! random settings.
//!
//! For each of the 31 field types, per case: random settings (the keys the server acts on, with
//! plausible and arbitrary values) must give a field definition or a clean settings error; a
//! definition survives its own JSON form; and an arbitrary JSON value (deep, big numbers,
//! unicode, nulls, locale maps) written through `prepare_write` in create and update mode returns
//! `Ok` or validation errors, never a panic. Where it succeeds, writing the stored data back
//! stores the same data, and `normalize_plain` is idempotent.
//!
//! Cases: 256 by default; `PROPTEST_CASES=100000 cargo test -p vellum-domain --test fuzz_values
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
use vellum_domain::value::normalize_plain;
use vellum_domain::{
    CollectionSchema, ContentLocales, DomainError, FieldDef, FieldType, HashKey, LocaleSelection,
    PreparedWrite, ValidationErrors, WriteContext, WriteMode, flatten_for_read, prepare_write,
};

const STRINGS: &[&str] = &[
    "",
    " ",
    "a",
    "42",
    " -7.5 ",
    "1e400",
    "-0",
    "NaN",
    "Infinity",
    "9223372036854775808",
    "true",
    "on",
    "off",
    "2024-02-29",
    "2024-05-01T12:00:00+02:00",
    "9999-12-31T23:00:00-02:00",
    "0000-01-01T00:30:00+01:00",
    "+10000-01-01T00:00:00Z",
    "23:59:60",
    "#abc",
    "#AABBCCDD",
    "red",
    "<p>x<script>alert(1)</script></p>",
    "<svg onload=alert(1)>",
    "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    "0b3c6f6e-6d1e-4b6f-9a57-1d6d2f0e8a11",
    "Point",
    "MultiPoint",
    "en",
    "de",
    "é\u{301}",
    "\u{0}",
    "\u{feff}",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\u{202e}rtl",
];

const KEYS: &[&str] = &[
    "en",
    "de",
    "fr",
    "f",
    "id",
    "type",
    "coordinates",
    "lat",
    "lng",
    "data",
    "item",
    "meta",
    "related_item_id",
    "related_collection_id",
    "role",
    "value",
    "children",
    "",
];

fn arb_string() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(STRINGS).prop_map(str::to_owned),
        2 => "\\PC{0,16}",
        1 => ".{0,16}",
        1 => "[0-9a-fA-F#:T+. -]{0,24}",
        // Long text (well under a body limit, long enough to find quadratic work).
        1 => "[a-z <>/]{200,2000}",
    ]
    .boxed()
}

fn arb_number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-3i64..12).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        select(
            &[
                f64::MAX,
                f64::MIN,
                f64::MIN_POSITIVE,
                1e300,
                -1e-300,
                0.5,
                -0.0
            ][..]
        )
        .prop_map(Value::from),
    ]
    .boxed()
}

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => arb_number(),
        3 => arb_string().prop_map(Value::String),
    ]
    .boxed()
}

fn arb_key() -> BoxedStrategy<String> {
    prop_oneof![4 => select(KEYS).prop_map(str::to_owned), 1 => "\\PC{0,8}"].boxed()
}

/// Arbitrary JSON: up to 8 levels, 64 nodes, 8 children per node.
fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(8, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((arb_key(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

/// One value of a settings key: mostly plausible for that key, sometimes anything.
fn setting_value(key: &'static str) -> BoxedStrategy<Value> {
    let plausible: BoxedStrategy<Value> = match key {
        "required" | "readonly" | "allow_multiple" | "allow_duplicates" | "hidden_in_form" => {
            prop_oneof![any::<bool>().prop_map(Value::Bool), select(vec![json!("on"), json!(1), json!("0")])].boxed()
        }
        "options" => prop_oneof![
            prop::collection::vec(arb_string().prop_map(Value::String), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (arb_string(), prop::collection::vec(arb_string(), 0..3)).prop_map(|(v, c)| {
                    json!({"value": v, "children": c.into_iter().map(|c| json!({"value": c})).collect::<Vec<_>>()})
                }),
                0..4
            )
            .prop_map(Value::Array),
        ]
        .boxed(),
        "date_mode" => select(vec![json!("date"), json!("time"), json!("datetime"), json!("week")]).boxed(),
        "geometry_mode" => select(vec![json!("point"), json!("multipoint"), json!("polygon")]).boxed(),
        "layout_width" => select(vec![json!("half"), json!("full"), json!("fill"), json!("wide")]).boxed(),
        "related_collection_id" => prop_oneof![(1i64..5).prop_map(Value::from), arb_number()].boxed(),
        "related_collection" => select(vec![json!("articles"), json!("Not A Slug"), json!("")]).boxed(),
        "allowed_collection_ids" => prop::collection::vec(prop_oneof![(1i64..5).prop_map(Value::from), arb_leaf()], 0..4)
            .prop_map(Value::Array)
            .boxed(),
        "allowed_collections" => prop::collection::vec(select(vec![json!("a"), json!("b-c"), json!("B")]), 0..3)
            .prop_map(Value::Array)
            .boxed(),
        "junction_fields" => prop::collection::vec(
            (select(&["role", "weight", "primary", "1x", ""][..]), select(&["string", "number", "boolean", "date"][..]))
                .prop_map(|(n, t)| json!({"name": n, "type": t})),
            0..4,
        )
        .prop_map(Value::Array)
        .boxed(),
        "validation_rules" => prop::collection::vec(
            (
                select(&["required", "unique", "min_length", "max_length", "min", "max", "regex", "contains", "not_contains", "equals", "not_equals", "nope"][..]),
                prop_oneof![
                    arb_leaf(),
                    (0u64..20).prop_map(Value::from),
                    select(vec![json!("^[a-z]+$"), json!("(a+)+$"), json!("["), json!("\\p{L}{2,}"), json!("a{1000}{1000}")]),
                ],
            )
                .prop_map(|(op, v)| json!({"operator": op, "value": v})),
            0..4,
        )
        .prop_map(Value::Array)
        .boxed(),
        "conditions" => (
            prop::collection::vec(
                (select(&["f", "g", "title"][..]), select(&["equals", "not_equals", "empty", "not_empty", "nope"][..]), arb_leaf())
                    .prop_map(|(f, op, v)| json!({"field": f, "operator": op, "value": v})),
                0..3,
            ),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(rules, required)| json!({"logic": "and", "rules": rules, "required": required, "hidden": true}))
            .boxed(),
        "display_name" | "note" | "placeholder" => prop_oneof![
            arb_string().prop_map(Value::String),
            (arb_string(), arb_string()).prop_map(|(en, de)| json!({"en": en, "de": de})),
        ]
        .boxed(),
        "filter" => select(vec![json!({"status": {"_eq": "x"}}), json!({}), json!([1])]).boxed(),
        _ => arb_leaf(),
    };
    prop_oneof![6 => plausible, 1 => arb_json()].boxed()
}

const SETTING_KEYS: &[&str] = &[
    "required",
    "readonly",
    "hidden_in_form",
    "default_value",
    "options",
    "date_mode",
    "geometry_mode",
    "layout_width",
    "allow_multiple",
    "allow_duplicates",
    "related_collection_id",
    "related_collection",
    "allowed_collection_ids",
    "allowed_collections",
    "junction_fields",
    "validation_rules",
    "conditions",
    "display_name",
    "note",
    "placeholder",
    "filter",
    "x_custom",
];

/// Settings: a random subset of the keys above, or (rarely) anything at all.
fn arb_settings() -> BoxedStrategy<Value> {
    prop_oneof![
        12 => prop::collection::vec(
            select(SETTING_KEYS).prop_flat_map(|k| (Just(k), setting_value(k))),
            0..5,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        1 => arb_json(),
    ]
    .boxed()
}

/// A field value: arbitrary JSON, sometimes a locale map of it, sometimes a list of it.
fn arb_value() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => arb_json(),
        2 => prop::collection::vec((select(&["en", "de", "fr", "EN"][..]), arb_json()), 0..3)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        2 => prop::collection::vec(arb_leaf(), 0..6).prop_map(Value::Array),
    ]
    .boxed()
}

/// Per field type: settings, translatable, the value to create, an existing item's value.
type Case = (Value, bool, Value, Value);

fn arb_cases() -> impl Strategy<Value = Vec<Case>> {
    prop::collection::vec(
        (arb_settings(), any::<bool>(), arb_value(), arb_value()),
        FieldType::ALL.len(),
    )
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
    m.insert("f".into(), value);
    m
}

/// Runs one field type through definition, write (create and update), re-write and read.
fn check_type(ty: FieldType, case: Case, locale: &str) -> Result<(), TestCaseError> {
    let (settings, translatable, value, existing) = case;
    let def = match FieldDef::new("f", ty, translatable, &settings) {
        Ok(def) => def,
        Err(DomainError::InvalidSettings { message, .. }) => {
            prop_assert!(!message.is_empty());
            return Ok(());
        }
        Err(other) => {
            return Err(TestCaseError::fail(format!(
                "{ty}: unexpected error kind {other:?}"
            )));
        }
    };
    // The definition survives its JSON form (what collections store and manifests export).
    let again = FieldDef::from_json(&def.to_json());
    prop_assert_eq!(again.as_ref(), Ok(&def), "{} {}", ty, settings);

    let schema = CollectionSchema::new(vec![def.clone()]).unwrap();
    let input = single(value.clone());
    let created = write(&schema, &input, WriteMode::Create, locale);
    let existing = single(existing);
    let _ = write(
        &schema,
        &input,
        WriteMode::Update {
            existing: &existing,
        },
        locale,
    );
    if let Err(errors) = &created {
        prop_assert!(!errors.is_empty(), "{} failed without errors", ty);
    }
    if let Ok(first) = created {
        // What was stored is accepted as input and stored unchanged.
        let second = write(&schema, &first.data, WriteMode::Create, locale);
        prop_assert_eq!(
            second.map(|p| Value::Object(p.data)),
            Ok(Value::Object(first.data.clone())),
            "{} settings {} input {}",
            ty,
            settings,
            value
        );
        for selection in [
            LocaleSelection::AllTranslations,
            LocaleSelection::Flatten(locales().resolve(Some("de")).unwrap()),
        ] {
            let read = flatten_for_read(&schema, &first.data, &selection, &locales());
            prop_assert!(read.contains_key("f"));
        }
    }
    if let Ok(once) = normalize_plain(ty, &def.settings, &value) {
        let twice = normalize_plain(ty, &def.settings, &once);
        prop_assert_eq!(
            twice.as_ref(),
            Ok(&once),
            "{} settings {} input {}",
            ty,
            settings,
            value
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn every_field_type_normalizes_cleanly(
        cases in arb_cases(),
        locale in select(&["en", "de"][..]),
    ) {
        for (ty, case) in FieldType::ALL.into_iter().zip(cases) {
            check_type(ty, case, locale)?;
        }
    }

    #[test]
    fn field_definitions_parse_cleanly(raw in arb_json(), settings in arb_settings(), ty in select(&FieldType::ALL[..])) {
        // Arbitrary definitions, and well-formed ones with random settings.
        let _ = FieldDef::from_json(&raw);
        let def = json!({"name": "f", "type": ty.as_str(), "translatable": true, "settings": settings});
        if let Ok(parsed) = FieldDef::from_json(&def) {
            let again = FieldDef::from_json(&parsed.to_json());
            prop_assert_eq!(again.as_ref(), Ok(&parsed));
        }
    }
}

/// The deepest JSON a request body can carry (serde_json stops at 128 levels) in every position
/// of every field type: an answer, never a stack overflow.
#[test]
fn deeply_nested_values_are_answered() {
    let mut deep_array = json!("x");
    let mut deep_object = json!("x");
    for _ in 0..126 {
        deep_array = Value::Array(vec![deep_array]);
        let mut m = Map::new();
        m.insert("en".into(), deep_object);
        deep_object = Value::Object(m);
    }
    for ty in FieldType::ALL {
        for translatable in [false, true] {
            let schema = CollectionSchema::new(vec![
                FieldDef::new("f", ty, translatable, &json!({})).unwrap(),
            ])
            .unwrap();
            for value in [&deep_array, &deep_object] {
                let _ = write(&schema, &single(value.clone()), WriteMode::Create, "de");
                let _ = flatten_for_read(
                    &schema,
                    &single(value.clone()),
                    &LocaleSelection::AllTranslations,
                    &locales(),
                );
            }
        }
        let _ = FieldDef::new(
            "f",
            ty,
            false,
            &json!({"default_value": deep_array, "options": deep_array, "conditions": deep_object}),
        );
    }
}
