//! Property tests of the write pipeline and the read flattening, over arbitrary JSON and over
//! values shaped like (valid or nearly valid) values of each field type:
//!
//! - `prepare_write` never panics, in create and update mode, on any input;
//! - a successful create is idempotent: writing the stored data back stores exactly the same data;
//! - `value::normalize_plain` is idempotent for every type it handles;
//! - `flatten_for_read` never panics on any stored data and returns exactly the schema's fields.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Number, Value, json};
use vellum_domain::value::normalize_plain;
use vellum_domain::{
    CollectionSchema, ContentLocales, FieldDef, FieldType, HashKey, LocaleSelection, PreparedWrite,
    ValidationErrors, WriteContext, WriteMode, flatten_for_read, prepare_write,
};

const CASES: u32 = 256;

// ---------------------------------------------------------------------------------------------
// The fields under test
// ---------------------------------------------------------------------------------------------

/// Block types exercising nesting (stripped past the default depth of 3), translatable strings,
/// defaults, conditions and every kind of embedded link.
fn blocks_settings() -> Value {
    let innermost = json!({"key": "section", "fields": [
        {"name": "children", "type": "blocks", "settings": {"block_types": [
            {"key": "text", "fields": [{"name": "body", "type": "markdown"}]}
        ]}}
    ]});
    json!({"block_types": [
        {"key": "hero", "fields": [
            {"name": "title", "type": "string", "translatable": true,
             "settings": {"default_value": "Untitled"}},
            {"name": "count", "type": "number"},
            {"name": "cover", "type": "image"},
            {"name": "where", "type": "map"},
            {"name": "secret", "type": "hash"},
            {"name": "body", "type": "wysiwyg"},
            {"name": "links", "type": "many_to_many",
             "settings": {"junction_fields": [{"name": "role", "type": "string"}]}},
            {"name": "picks", "type": "m2a", "settings": {"allowed_collection_ids": [1, 2, 3]}}
        ]},
        {"key": "cta", "fields": [
            {"name": "style", "type": "select", "settings": {"options": ["button", "plain"]}},
            {"name": "link", "type": "string", "settings": {"conditions": {
                "logic": "and",
                "rules": [{"field": "style", "operator": "equals", "value": "button"}],
                "required": true
            }}}
        ]},
        {"key": "section", "fields": [
            {"name": "heading", "type": "string", "translatable": true},
            {"name": "children", "type": "blocks", "settings": {"block_types": [
                {"key": "text", "fields": [
                    {"name": "body", "type": "wysiwyg"},
                    {"name": "tags", "type": "tag"},
                    {"name": "title", "type": "string", "translatable": true}
                ]},
                {"key": "section", "fields": [
                    {"name": "children", "type": "blocks", "settings": {"block_types": [
                        {"key": "text", "fields": [{"name": "body", "type": "textarea"}]},
                        innermost
                    ]}}
                ]}
            ]}}
        ]}
    ]})
}

/// Every field type at least once, with settings that make it usable, and the settings variants
/// that change normalization (date modes, geometry modes, allow_multiple, options, duplicates,
/// defaults).
fn variant_specs() -> Vec<(FieldType, Value)> {
    use FieldType as T;
    let options = json!({"options": ["red", "blue", "green", "1"]});
    vec![
        (T::String, json!({})),
        (T::String, json!({"default_value": "Untitled"})),
        (T::Autocomplete, json!({})),
        (T::ApiAutocomplete, json!({})),
        (T::Number, json!({})),
        (T::Number, json!({"default_value": 7})),
        (T::Boolean, json!({})),
        (T::Textarea, json!({})),
        (T::Wysiwyg, json!({})),
        (T::Markdown, json!({})),
        (T::Code, json!({})),
        (T::Hash, json!({})),
        (T::Slider, json!({})),
        (T::Select, options.clone()),
        (T::Select, json!({})),
        (T::Multiselect, options.clone()),
        (T::CheckboxGroup, json!({})),
        (
            T::CheckboxGroupTree,
            json!({"options": [{"value": "red", "children": [{"value": "blue"}]}, {"value": "green"}]}),
        ),
        (T::RadioGroup, options),
        (T::Tag, json!({})),
        (T::Tag, json!({"default_value": ["a", "b"]})),
        (T::Date, json!({"date_mode": "date"})),
        (T::Date, json!({"date_mode": "time"})),
        (T::Date, json!({"date_mode": "datetime"})),
        (T::Map, json!({})),
        (T::Map, json!({"geometry_mode": "multipoint"})),
        (T::Color, json!({})),
        (T::Image, json!({})),
        (T::Image, json!({"allow_multiple": true})),
        (T::File, json!({})),
        (T::Files, json!({})),
        (T::Relation, json!({})),
        (T::ManyToOne, json!({"related_collection_id": 2})),
        (T::OneToMany, json!({})),
        (T::OneToMany, json!({"allow_duplicates": true})),
        (
            T::ManyToMany,
            json!({"junction_fields": [
                {"name": "role", "type": "string"},
                {"name": "weight", "type": "number"},
                {"name": "primary", "type": "boolean"}
            ]}),
        ),
        (T::ManyToMany, json!({"allow_duplicates": "on"})),
        (T::RelationTree, json!({})),
        (T::RelationMany, json!({})),
        (T::Blocks, blocks_settings()),
        (T::M2a, json!({"allowed_collection_ids": [1, 2, 3]})),
        (
            T::M2a,
            json!({"allowed_collection_ids": [1, 2, 3], "allow_duplicates": true}),
        ),
    ]
}

/// One variant: the field alone in a schema, once non-translatable and once translatable (forced
/// off by the definition for hash, blocks and relations).
struct Variant {
    ty: FieldType,
    plain: CollectionSchema,
    translatable: CollectionSchema,
}

impl Variant {
    fn schema(&self, translatable: bool) -> &CollectionSchema {
        if translatable {
            &self.translatable
        } else {
            &self.plain
        }
    }
}

fn variants() -> &'static [Variant] {
    static VARIANTS: OnceLock<Vec<Variant>> = OnceLock::new();
    VARIANTS.get_or_init(|| {
        variant_specs()
            .into_iter()
            .map(|(ty, settings)| {
                let one = |tr| {
                    CollectionSchema::new(vec![FieldDef::new("f", ty, tr, &settings).unwrap()])
                        .unwrap()
                };
                Variant {
                    ty,
                    plain: one(false),
                    translatable: one(true),
                }
            })
            .collect()
    })
}

/// Every variant as one field `v<i>` (translatable where possible every other one), plus
/// conditions between them, for the whole-item properties.
fn big_schema() -> &'static CollectionSchema {
    static SCHEMA: OnceLock<CollectionSchema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let mut fields: Vec<FieldDef> = variant_specs()
            .into_iter()
            .enumerate()
            .map(|(i, (ty, settings))| {
                FieldDef::new(&format!("v{i}"), ty, i % 2 == 0, &settings).unwrap()
            })
            .collect();
        fields.push(
            FieldDef::new(
                "conditional",
                FieldType::String,
                false,
                &json!({"conditions": {"rules": [
                    {"field": "v0", "operator": "not_empty"},
                    {"field": "v4", "operator": "not_equals", "value": 3}
                ], "required": true}}),
            )
            .unwrap(),
        );
        CollectionSchema::new(fields).unwrap()
    })
}

fn locales() -> &'static ContentLocales {
    static LOCALES: OnceLock<ContentLocales> = OnceLock::new();
    LOCALES.get_or_init(|| ContentLocales::new(&["en", "de"], "en").unwrap())
}

fn write(
    schema: &CollectionSchema,
    input: &Map<String, Value>,
    mode: WriteMode<'_>,
    locale: &str,
) -> Result<PreparedWrite, ValidationErrors> {
    let locales = locales();
    let locale = locales.resolve(Some(locale)).unwrap();
    let key = HashKey::new(b"property-key".to_vec());
    let ctx = WriteContext {
        locales,
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

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Strings that hit the interesting branches of normalization.
const STRINGS: &[&str] = &[
    "",
    " ",
    "a",
    "Hello",
    "42",
    "-7",
    " 4.5 ",
    "1e400",
    "NaN",
    "inf",
    "0",
    "1",
    "true",
    "false",
    "on",
    "off",
    "yes",
    "2024-02-29",
    "2023-02-29",
    "2024-05-01T12:00:00+02:00",
    "2024-05-01T10:00:00.250Z",
    "2024-05-01 10:00",
    "0000-01-01T00:30:00+01:00",
    "09:30",
    "24:00",
    "#abc",
    "#AABBCC",
    "#12345",
    "red",
    "blue",
    "<p>Hi<script>alert(1)</script></p>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<b>unclosed <i>nest</b>",
    "<img src=x onerror=alert(1)>",
    "<table><tr><td>cell</table>",
    "<p>a<p>b</p></p>",
    "<svg><style><img src=x></style></svg>",
    "&lt;script&gt;",
    "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    "hmac-sha256:XYZ",
    "0b3c6f6e-6d1e-4b6f-9a57-1d6d2f0e8a11",
    "0B3C6F6E-6D1E-4B6F-9A57-1D6D2F0E8A11",
    "not-a-uuid",
    "Point",
    "MultiPoint",
    "Polygon",
    "en",
    "de",
    "hero",
    "section",
    "button",
];

/// Object keys that mean something somewhere: geometry, links, blocks, locales, block fields.
const KEYS: &[&str] = &[
    "lat",
    "lng",
    "type",
    "coordinates",
    "id",
    "data",
    "item",
    "meta",
    "related_item_id",
    "related_collection_id",
    "role",
    "weight",
    "primary",
    "en",
    "de",
    "fr",
    "f",
    "title",
    "count",
    "children",
    "body",
    "value",
];

fn arb_string() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(STRINGS).prop_map(str::to_owned),
        2 => "[0-9a-fA-F#:T+. -]{0,24}",
        1 => "\\PC{0,16}",
        1 => "(<[a-z]{1,6}( [a-z]{1,6}=\"[^\"]{0,6}\")?>|</[a-z]{1,6}>|[a-z &;<>]){0,8}",
    ]
    .boxed()
}

fn arb_number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-5i64..25).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-200.0f64..200.0).prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
    ]
    .boxed()
}

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => arb_number(),
        4 => arb_string().prop_map(Value::String),
    ]
    .boxed()
}

fn arb_key() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(KEYS).prop_map(str::to_owned),
        1 => "[a-zA-Z_]{0,8}",
    ]
    .boxed()
}

fn object_of(entries: Vec<(String, Value)>) -> Value {
    Value::Object(entries.into_iter().collect())
}

/// Arbitrary JSON of bounded depth and size.
fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((arb_key(), inner), 0..6).prop_map(object_of),
            ]
        })
        .boxed()
}

fn coordinate() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => (-200.0f64..200.0).prop_map(Value::from),
        2 => (-181i64..181).prop_map(Value::from),
        1 => (-95.0f64..95.0).prop_map(|f| Value::String(f.to_string())),
        1 => arb_leaf(),
    ]
    .boxed()
}

fn geometry() -> BoxedStrategy<Value> {
    let pair = || prop::collection::vec(coordinate(), 2..=2).prop_map(Value::Array);
    let legacy =
        || (coordinate(), coordinate()).prop_map(|(lat, lng)| json!({"lat": lat, "lng": lng}));
    prop_oneof![
        legacy(),
        pair().prop_map(|c| json!({"type": "Point", "coordinates": c})),
        prop::collection::vec(pair(), 0..4)
            .prop_map(|c| json!({"type": "MultiPoint", "coordinates": c})),
        prop::collection::vec(legacy(), 0..4).prop_map(Value::Array),
        (select(&["Point", "MultiPoint", "Polygon"][..]), arb_json())
            .prop_map(|(t, c)| json!({"type": t, "coordinates": c})),
    ]
    .boxed()
}

fn id_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => (1i64..12).prop_map(Value::from),
        2 => (1i64..12).prop_map(|i| Value::String(i.to_string())),
        1 => (1i64..12).prop_map(|i| json!({"id": i, "filename": "a.jpg"})),
        1 => arb_leaf(),
    ]
    .boxed()
}

fn ids() -> BoxedStrategy<Value> {
    prop_oneof![
        id_value(),
        prop::collection::vec(id_value(), 0..5).prop_map(Value::Array),
    ]
    .boxed()
}

fn junction_links() -> BoxedStrategy<Value> {
    let meta_key = select(&["role", "weight", "primary", "colour"][..]).prop_map(str::to_owned);
    let meta = prop_oneof![
        4 => prop::collection::vec((meta_key, arb_leaf()), 0..3).prop_map(object_of),
        1 => arb_json(),
    ];
    let link = prop_oneof![
        id_value(),
        (id_value(), prop::option::of(meta))
            .prop_map(|(id, meta)| json!({"related_item_id": id, "meta": meta})),
        id_value().prop_map(|id| json!({"item": {"id": id}})),
    ];
    prop_oneof![
        4 => prop::collection::vec(link, 0..4).prop_map(Value::Array),
        1 => id_value(),
    ]
    .boxed()
}

fn collection_links() -> BoxedStrategy<Value> {
    let entry = prop_oneof![
        4 => (0i64..5, id_value()).prop_map(
            |(c, i)| json!({"related_collection_id": c, "related_item_id": i})
        ),
        1 => (0i64..5, id_value()).prop_map(|(c, i)| json!({"related_collection_id": c.to_string(), "item": i})),
        1 => arb_json(),
    ];
    prop::collection::vec(entry, 0..4)
        .prop_map(Value::Array)
        .boxed()
}

fn text_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => arb_string().prop_map(Value::String),
        1 => arb_number(),
        1 => Just(Value::Null),
    ]
    .boxed()
}

fn choice_value() -> BoxedStrategy<Value> {
    let option = || {
        prop_oneof![
            3 => select(&["red", "blue", "green", "1", " a ", "", "pink"][..])
                .prop_map(|s| Value::String(s.to_owned())),
            1 => text_value(),
        ]
    };
    prop_oneof![
        option(),
        prop::collection::vec(option(), 0..5).prop_map(Value::Array),
    ]
    .boxed()
}

fn date_value() -> BoxedStrategy<Value> {
    // Years reach past both ends of the supported 0000..=9999 range, signed ones included (the
    // UTC conversion of "9999-12-31T23:00:00-02:00" once panicked).
    let year = prop_oneof![
        (0i32..10000).prop_map(|y| format!("{y:04}")),
        (9990i32..10005).prop_map(|y| format!("{y:04}")),
        (1i32..3).prop_map(|y| format!("-{y:04}")),
        Just("+2024".to_owned()),
    ];
    let date = (year, 0u32..14, 0u32..33).prop_map(|(y, m, d)| format!("{y}-{m:02}-{d:02}"));
    let time = (0u32..26, 0u32..61, prop::option::of(0u32..61)).prop_map(|(h, m, s)| match s {
        Some(s) => format!("{h:02}:{m:02}:{s:02}"),
        None => format!("{h:02}:{m:02}"),
    });
    let offset = select(&["Z", "+02:00", "-05:30", "", "+25:00", ".5Z", ".123456Z"][..]);
    let separator = select(&["T", " "][..]);
    prop_oneof![
        date.clone().prop_map(Value::String),
        time.clone().prop_map(Value::String),
        (date, separator, time, offset)
            .prop_map(|(d, sep, t, o)| Value::String(format!("{d}{sep}{t}{o}"))),
        text_value(),
    ]
    .boxed()
}

fn color_value() -> BoxedStrategy<Value> {
    prop_oneof!["#[0-9a-fA-F]{3,8}".prop_map(Value::String), text_value(),].boxed()
}

fn number_value() -> BoxedStrategy<Value> {
    prop_oneof![
        arb_number(),
        (-1000.0f64..1000.0).prop_map(|f| Value::String(format!(" {f} "))),
        text_value(),
    ]
    .boxed()
}

fn boolean_value() -> BoxedStrategy<Value> {
    prop_oneof![
        select(vec![
            json!(true),
            json!(false),
            json!(0),
            json!(1),
            json!(2),
            json!("on"),
            json!("off"),
            json!("true"),
            json!("false"),
            json!("1"),
            json!("0"),
            json!(""),
            json!("yes"),
            json!(null),
        ]),
        arb_leaf(),
    ]
    .boxed()
}

fn uuid_value() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => any::<u128>().prop_map(|n| Value::String(uuid::Uuid::from_u128(n).to_string())),
        1 => any::<u128>().prop_map(|n| {
            Value::String(uuid::Uuid::from_u128(n).to_string().to_uppercase())
        }),
        1 => Just(Value::Null),
        1 => arb_leaf(),
    ]
    .boxed()
}

/// A value for a block data key, shaped by the field of that name in `blocks_settings`.
fn block_field_value(name: &'static str, depth: u32) -> BoxedStrategy<Value> {
    let shaped = match name {
        "title" | "heading" => prop_oneof![
            text_value(),
            prop::collection::vec((select(&["en", "de", "fr"][..]), text_value()), 0..3).prop_map(
                |kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            ),
        ]
        .boxed(),
        "count" => number_value(),
        "cover" => ids(),
        "where" => geometry(),
        "links" => junction_links(),
        "picks" => collection_links(),
        "tags" => choice_value(),
        "style" => select(&["button", "plain", "other"][..])
            .prop_map(|s| Value::String(s.to_owned()))
            .boxed(),
        "children" if depth > 0 => block_list(depth - 1),
        _ => text_value(),
    };
    prop_oneof![9 => shaped, 1 => arb_json()].boxed()
}

const BLOCK_FIELDS: &[&str] = &[
    "title", "count", "cover", "where", "secret", "body", "links", "picks", "style", "link",
    "heading", "children", "tags", "unknown",
];

fn block_data(depth: u32) -> BoxedStrategy<Value> {
    prop::collection::vec(
        select(BLOCK_FIELDS)
            .prop_flat_map(move |name| (Just(name), block_field_value(name, depth))),
        0..5,
    )
    .prop_map(|entries| {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    })
    .boxed()
}

fn block_list(depth: u32) -> BoxedStrategy<Value> {
    let block_type = prop_oneof![
        6 => select(&["hero", "cta", "section", "text"][..]).prop_map(|s| json!(s)),
        1 => arb_leaf(),
    ];
    let block = (
        block_type,
        prop::option::of(uuid_value()),
        prop::option::of(prop_oneof![6 => block_data(depth), 1 => arb_json()]),
        prop::option::weighted(0.05, arb_leaf()),
    )
        .prop_map(|(t, id, data, extra)| {
            let mut obj = Map::new();
            obj.insert("type".into(), t);
            if let Some(id) = id {
                obj.insert("id".into(), id);
            }
            if let Some(data) = data {
                obj.insert("data".into(), data);
            }
            if let Some(extra) = extra {
                obj.insert("extra".into(), extra);
            }
            Value::Object(obj)
        });
    prop_oneof![
        8 => prop::collection::vec(block, 0..4).prop_map(Value::Array),
        1 => arb_json(),
    ]
    .boxed()
}

fn optional_id() -> BoxedStrategy<Option<Value>> {
    prop::option::of(
        any::<u128>().prop_map(|n| Value::String(uuid::Uuid::from_u128(n).to_string())),
    )
    .boxed()
}

fn valid_block(key: &'static str, id: Option<Value>, data: Vec<(&'static str, Value)>) -> Value {
    let mut obj = Map::new();
    if let Some(id) = id {
        obj.insert("id".into(), id);
    }
    obj.insert("type".into(), json!(key));
    obj.insert(
        "data".into(),
        Value::Object(data.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
    );
    Value::Object(obj)
}

/// Block lists that are valid for `blocks_settings` at nesting `level` (1 is the root field), so
/// the idempotence property also sees deep trees that were written successfully. At level 4 the
/// definitions are stripped and anything goes.
fn valid_blocks(level: u32) -> BoxedStrategy<Value> {
    let html = || select(STRINGS).prop_map(|s| json!(s));
    let block = match level {
        1 => prop_oneof![
            (
                optional_id(),
                html(),
                -50i64..50,
                1i64..9,
                (-90.0f64..90.0, -180.0f64..180.0),
                "[a-z]{1,8}",
            )
                .prop_map(|(id, title, count, cover, (lat, lng), secret)| {
                    valid_block("hero", id, vec![
                        ("title", title.clone()),
                        ("count", json!(count)),
                        ("cover", json!(cover)),
                        ("where", json!({"lat": lat, "lng": lng})),
                        ("secret", json!(secret)),
                        ("body", title),
                        ("links", json!([cover, {"related_item_id": cover + 1, "meta": {"role": "x"}}])),
                        ("picks", json!([{"related_collection_id": 2, "related_item_id": cover}])),
                    ])
                }),
            (optional_id(), any::<bool>()).prop_map(|(id, button)| {
                let data = if button {
                    vec![("style", json!("button")), ("link", json!("/go"))]
                } else {
                    vec![("style", json!("plain"))]
                };
                valid_block("cta", id, data)
            }),
            (optional_id(), html(), valid_blocks(2)).prop_map(|(id, heading, children)| {
                valid_block("section", id, vec![("heading", heading), ("children", children)])
            }),
        ]
        .boxed(),
        2 => prop_oneof![
            (optional_id(), html(), prop::collection::vec("[a-z ]{0,6}", 0..4))
                .prop_map(|(id, body, tags)| {
                    valid_block("text", id, vec![
                        ("body", body.clone()),
                        ("tags", json!(tags)),
                        ("title", json!({"de": body})),
                    ])
                }),
            (optional_id(), valid_blocks(3))
                .prop_map(|(id, children)| valid_block("section", id, vec![("children", children)])),
        ]
        .boxed(),
        3 => prop_oneof![
            (optional_id(), html())
                .prop_map(|(id, body)| valid_block("text", id, vec![("body", body)])),
            (optional_id(), valid_blocks(4))
                .prop_map(|(id, children)| valid_block("section", id, vec![("children", children)])),
        ]
        .boxed(),
        _ => return arb_json(),
    };
    prop::collection::vec(block, 0..3)
        .prop_map(Value::Array)
        .boxed()
}

/// Values shaped like (possibly invalid) values of `ty`.
fn shaped(ty: FieldType) -> BoxedStrategy<Value> {
    use FieldType as T;
    match ty {
        T::String
        | T::Autocomplete
        | T::ApiAutocomplete
        | T::Textarea
        | T::Wysiwyg
        | T::Markdown
        | T::Code
        | T::Hash => text_value(),
        T::Select
        | T::RadioGroup
        | T::Multiselect
        | T::CheckboxGroup
        | T::CheckboxGroupTree
        | T::Tag => choice_value(),
        T::Number | T::Slider => number_value(),
        T::Boolean => boolean_value(),
        T::Date => date_value(),
        T::Color => color_value(),
        T::Map => geometry(),
        T::Image
        | T::File
        | T::Files
        | T::Relation
        | T::ManyToOne
        | T::OneToMany
        | T::RelationTree
        | T::RelationMany => ids(),
        T::ManyToMany => junction_links(),
        T::M2a => collection_links(),
        T::Blocks => prop_oneof![block_list(3), valid_blocks(1)].boxed(),
    }
}

/// A field value for `ty`: mostly shaped, sometimes a locale map of shaped values, sometimes
/// anything at all.
fn value_for(ty: FieldType) -> BoxedStrategy<Value> {
    let locale_map = prop::collection::vec(
        (
            prop_oneof![4 => select(&["en", "de"][..]), 1 => select(&["fr", "EN", "id"][..])],
            shaped(ty),
        ),
        0..3,
    )
    .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    prop_oneof![
        6 => shaped(ty),
        2 => locale_map,
        2 => arb_json(),
    ]
    .boxed()
}

/// One generated case per variant: translatable or not, the value, and the request locales of
/// the first and the second write.
type VariantCase = (bool, Value, &'static str, &'static str);

fn variant_cases() -> Vec<BoxedStrategy<VariantCase>> {
    variants()
        .iter()
        .map(|v| {
            (
                any::<bool>(),
                value_for(v.ty),
                select(&["en", "de"][..]),
                select(&["en", "de"][..]),
            )
                .boxed()
        })
        .collect()
}

fn big_input() -> BoxedStrategy<Value> {
    let names: Vec<String> = big_schema()
        .fields()
        .iter()
        .map(|f| f.name.to_string())
        .chain(["unknown".to_owned()])
        .collect();
    let entry = select(names).prop_flat_map(|name| {
        let ty = big_schema()
            .field(&name)
            .map_or(FieldType::String, |f| f.field_type);
        (Just(name), value_for(ty))
    });
    prop::collection::vec(entry, 0..12)
        .prop_map(object_of)
        .boxed()
}

fn selection() -> BoxedStrategy<LocaleSelection> {
    prop_oneof![
        Just(LocaleSelection::AllTranslations),
        select(&["en", "de"][..])
            .prop_map(|l| { LocaleSelection::Flatten(locales().resolve(Some(l)).unwrap()) }),
    ]
    .boxed()
}

fn config() -> Config {
    Config {
        cases: CASES,
        // Runs without a source file to key regressions by; failures print the minimal case.
        failure_persistence: None,
        ..Config::default()
    }
}

fn run<S: Strategy>(strategy: &S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(config());
    if let Err(e) = runner.run(strategy, test) {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// The errors of a write outside the condition-driven field, as a map (empty when it succeeded).
fn problems(result: &Result<PreparedWrite, ValidationErrors>) -> BTreeMap<String, Vec<String>> {
    match result {
        Ok(_) => BTreeMap::new(),
        Err(errors) => errors
            .clone()
            .into_map()
            .into_iter()
            .filter(|(path, _)| path != "conditional")
            .collect(),
    }
}

#[test]
fn the_variants_cover_every_field_type() {
    let seen: BTreeSet<FieldType> = variants().iter().map(|v| v.ty).collect();
    let all: BTreeSet<FieldType> = FieldType::ALL.into_iter().collect();
    assert_eq!(all.len(), 31);
    assert_eq!(seen, all);
}

#[test]
fn prepare_write_never_panics_and_create_is_idempotent() {
    let strategy = variant_cases();
    let successes = RefCell::new(vec![0usize; variants().len()]);
    run(&strategy, |cases| {
        for (i, (variant, (translatable, value, locale, second_locale))) in
            variants().iter().zip(cases).enumerate()
        {
            let schema = variant.schema(translatable);
            let input = single(value);
            let Ok(first) = write(schema, &input, WriteMode::Create, locale) else {
                continue;
            };
            successes.borrow_mut()[i] += 1;
            let second = write(schema, &first.data, WriteMode::Create, second_locale);
            prop_assert_eq!(
                second.map(|p| Value::Object(p.data)),
                Ok(Value::Object(first.data.clone())),
                "{} (translatable: {}), input {}, locales {}/{}",
                variant.ty,
                translatable,
                Value::Object(input),
                locale,
                second_locale
            );
        }
        Ok(())
    });
    // The property is not vacuous: every variant had successful writes to compare.
    let successes = successes.into_inner();
    eprintln!("SUCCESSES {successes:?}");
    for (variant, count) in variants().iter().zip(&successes) {
        assert!(
            *count >= CASES as usize / 20,
            "{}: only {count} of {CASES} writes succeeded: {successes:?}",
            variant.ty
        );
    }
}

#[test]
fn stored_data_round_trips_through_all_translations_read() {
    // What a create stores is what `include_all_translations` returns (plus absent fields as
    // null or []), so a client can read, edit and write back.
    let strategy = variant_cases();
    run(&strategy, |cases| {
        for (variant, (translatable, value, locale, _)) in variants().iter().zip(cases) {
            let schema = variant.schema(translatable);
            let Ok(written) = write(schema, &single(value), WriteMode::Create, locale) else {
                continue;
            };
            let read = flatten_for_read(
                schema,
                &written.data,
                &LocaleSelection::AllTranslations,
                locales(),
            );
            let field = &schema.fields()[0];
            let expected = match written.data.get("f") {
                None | Some(Value::Null) => field.empty_value(),
                Some(v) => v.clone(),
            };
            prop_assert_eq!(read.get("f"), Some(&expected), "{}", variant.ty);
            // Flattened to one locale: the locale's value, else the default locale's.
            let de = LocaleSelection::Flatten(locales().resolve(Some("de")).unwrap());
            let read = flatten_for_read(schema, &written.data, &de, locales());
            if let (true, Some(Value::Object(map))) = (field.translatable, written.data.get("f")) {
                let want = map
                    .get("de")
                    .filter(|v| !v.is_null())
                    .or_else(|| map.get("en").filter(|v| !v.is_null()))
                    .cloned()
                    .unwrap_or_else(|| field.empty_value());
                prop_assert_eq!(read.get("f"), Some(&want), "{}", variant.ty);
            }
        }
        Ok(())
    });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn whole_items_never_panic_on_create_or_update(
        input in big_input(),
        existing in big_input(),
        locale in select(&["en", "de"][..]),
    ) {
        let schema = big_schema();
        let input = input.as_object().unwrap();
        let created = write(schema, input, WriteMode::Create, locale);
        let existing = existing.as_object().unwrap();
        let updated = write(schema, input, WriteMode::Update { existing }, locale);
        // Both modes find the same problems with the provided values: update only skips the
        // fields it was not given, and conditions (`conditional`) read the merged item.
        prop_assert_eq!(
            problems(&created),
            problems(&updated),
            "create and update disagree on {:?}",
            input
        );
        if let Ok(c) = created {
            // Every schema field the input named is in the stored data (its value may be null).
            for key in input.keys() {
                prop_assert!(c.data.contains_key(key), "{} missing from {:?}", key, c.data);
            }
        }
    }

    #[test]
    fn normalize_plain_is_idempotent(cases in variant_cases()) {
        for (variant, (_, value, _, _)) in variants().iter().zip(cases) {
            if matches!(variant.ty, FieldType::Hash | FieldType::Blocks) {
                // These need the project context: an error, never a panic.
                prop_assert!(normalize_plain(variant.ty, &variant.plain.fields()[0].settings, &value).is_err());
                continue;
            }
            let settings = &variant.plain.fields()[0].settings;
            if let Ok(once) = normalize_plain(variant.ty, settings, &value) {
                let twice = normalize_plain(variant.ty, settings, &once);
                prop_assert_eq!(twice.as_ref(), Ok(&once), "{} {}", variant.ty, value);
                // The normalized value has the declared shape.
                let shape = variant.plain.fields()[0].shape();
                prop_assert!(once.is_null() || once.is_array() == shape.is_array(), "{} {}", variant.ty, once);
            }
        }
    }

    #[test]
    fn flatten_for_read_never_panics_and_returns_exactly_the_schema_fields(
        stored in big_input(),
        extra in arb_json(),
        selection in selection(),
    ) {
        let schema = big_schema();
        let mut stored = stored.as_object().unwrap().clone();
        stored.insert("v0".into(), extra);
        let out = flatten_for_read(schema, &stored, &selection, locales());
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name.as_str()).collect();
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        prop_assert_eq!(keys, names);
        // A non-translatable, non-blocks value is returned as stored.
        for field in schema.fields() {
            let name = field.name.as_str();
            if field.translatable || field.field_type == FieldType::Blocks {
                continue;
            }
            match stored.get(name) {
                None | Some(Value::Null) => prop_assert_eq!(&out[name], &field.empty_value()),
                Some(v) => prop_assert_eq!(&out[name], v),
            }
        }
    }

    #[test]
    fn hash_is_a_fingerprint_never_the_clear_value(
        clear in "[a-zA-Z0-9@._ -]{1,40}",
        other in "[a-zA-Z0-9@._ -]{1,40}",
    ) {
        let variant = variants().iter().find(|v| v.ty == FieldType::Hash).unwrap();
        let store = |clear: &str| {
            write(&variant.plain, &single(json!(clear)), WriteMode::Create, "en")
                .map(|p| p.data["f"].clone())
        };
        let stored = store(&clear);
        let Ok(Value::String(fp)) = &stored else {
            return Err(TestCaseError::fail(format!("not stored as a string: {stored:?}")));
        };
        let hex = fp.strip_prefix("hmac-sha256:").unwrap_or_default();
        prop_assert_eq!(hex.len(), 64, "{}", fp);
        prop_assert!(hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        prop_assert_ne!(fp, &clear);
        // Deterministic, and distinct inputs give distinct fingerprints.
        prop_assert_eq!(&store(&clear), &stored);
        if other != clear {
            prop_assert_ne!(&store(&other), &stored);
        }
    }
}
