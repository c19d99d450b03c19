//! One table per row of the spec's "Normalized value shapes" table, exercised through the public
//! write pipeline (`prepare_write`, create mode, locales `en`/`de` with default `en`) on a
//! one-field schema per type: accepted inputs and the exact value stored, rejected inputs and the
//! error path reported. Plus the operator-contract decisions on translatable fields, `hash` and
//! `blocks`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value, json};
use uuid::Uuid;
use vellum_domain::{
    CollectionSchema, ContentLocales, FieldDef, FieldType, HashKey, PreparedWrite,
    ValidationErrors, WriteContext, WriteMode, prepare_write,
};

const KEY: &[u8] = b"project-secret";

fn locales() -> ContentLocales {
    ContentLocales::new(&["en", "de"], "en").unwrap()
}

fn schema(ty: FieldType, settings: &Value) -> CollectionSchema {
    CollectionSchema::new(vec![FieldDef::new("f", ty, false, settings).unwrap()]).unwrap()
}

fn translatable_schema(ty: FieldType, settings: &Value) -> CollectionSchema {
    CollectionSchema::new(vec![FieldDef::new("f", ty, true, settings).unwrap()]).unwrap()
}

fn object(v: &Value) -> Map<String, Value> {
    v.as_object().expect("test input must be an object").clone()
}

fn write_with(
    schema: &CollectionSchema,
    input: &Value,
    mode: WriteMode<'_>,
    locale: &str,
    key: &[u8],
) -> Result<PreparedWrite, ValidationErrors> {
    let locales = locales();
    let locale = locales.resolve(Some(locale)).unwrap();
    let key = HashKey::new(key.to_vec());
    let ctx = WriteContext {
        locales: &locales,
        locale: &locale,
        hash_key: &key,
    };
    prepare_write(schema, &object(input), mode, &ctx)
}

/// Creates an item with `input` in the default locale and returns the stored `data`.
fn create(schema: &CollectionSchema, input: &Value) -> Result<Value, ValidationErrors> {
    create_in(schema, input, "en")
}

fn create_in(
    schema: &CollectionSchema,
    input: &Value,
    locale: &str,
) -> Result<Value, ValidationErrors> {
    write_with(schema, input, WriteMode::Create, locale, KEY).map(|p| Value::Object(p.data))
}

fn update_in(
    schema: &CollectionSchema,
    existing: &Value,
    input: &Value,
    locale: &str,
) -> Result<Value, ValidationErrors> {
    let existing = object(existing);
    write_with(
        schema,
        input,
        WriteMode::Update {
            existing: &existing,
        },
        locale,
        KEY,
    )
    .map(|p| Value::Object(p.data))
}

fn fingerprint(clear: &str) -> String {
    HashKey::new(KEY.to_vec()).fingerprint(clear)
}

/// One field definition and what it does with values.
struct Row {
    ty: FieldType,
    settings: Value,
    /// `(input, stored value)`.
    accepts: Vec<(Value, Value)>,
    /// `(input, error path that must be reported)`.
    rejects: Vec<(Value, &'static str)>,
}

fn row(ty: FieldType, settings: Value) -> Row {
    Row {
        ty,
        settings,
        accepts: Vec::new(),
        rejects: Vec::new(),
    }
}

impl Row {
    fn accepts(mut self, cases: impl IntoIterator<Item = (Value, Value)>) -> Self {
        self.accepts.extend(cases);
        self
    }

    fn rejects(mut self, cases: impl IntoIterator<Item = Value>) -> Self {
        self.rejects.extend(cases.into_iter().map(|v| (v, "f")));
        self
    }

    fn rejects_at(mut self, cases: impl IntoIterator<Item = (Value, &'static str)>) -> Self {
        self.rejects.extend(cases);
        self
    }
}

/// Runs every case of `rows`: accepted inputs store exactly the expected value (and writing the
/// stored value back stores it unchanged), rejected inputs report the expected path and nothing
/// outside the field.
fn check(rows: &[Row]) {
    for r in rows {
        let s = schema(r.ty, &r.settings);
        let what = format!("{} {}", r.ty, r.settings);
        for (input, stored) in &r.accepts {
            let expected = json!({ "f": stored });
            match create(&s, &json!({ "f": input })) {
                Ok(data) => assert_eq!(data, expected, "{what}: {input}"),
                Err(e) => panic!("{what}: {input} was rejected: {e:?}"),
            }
            match create(&s, &expected) {
                Ok(again) => assert_eq!(again, expected, "{what}: re-writing {stored}"),
                Err(e) => panic!("{what}: re-writing {stored} was rejected: {e:?}"),
            }
        }
        for (input, path) in &r.rejects {
            let errors = match create(&s, &json!({ "f": input })) {
                Ok(data) => panic!("{what}: {input} was accepted as {data}"),
                Err(e) => e,
            };
            let messages = errors
                .get(path)
                .unwrap_or_else(|| panic!("{what}: {input}: no error at {path}: {errors:?}"));
            assert!(!messages.is_empty(), "{what}: {input}");
            assert!(
                errors.iter().all(|(p, _)| p == "f" || p.starts_with("f.")),
                "{what}: {input}: {errors:?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// string or null: string, autocomplete, api_autocomplete, textarea, wysiwyg, markdown, code,
// select, radio_group, date, color
// ---------------------------------------------------------------------------------------------

fn text_rows() -> Vec<Row> {
    let plain = [
        FieldType::String,
        FieldType::Autocomplete,
        FieldType::ApiAutocomplete,
        FieldType::Textarea,
        FieldType::Markdown,
        FieldType::Code,
    ];
    let mut rows: Vec<Row> = plain
        .into_iter()
        .map(|ty| {
            row(ty, json!({}))
                .accepts([
                    (json!("Hello"), json!("Hello")),
                    (json!(""), json!("")),
                    (json!("  padded "), json!("  padded ")),
                    (json!(42), json!("42")),
                    (json!(2.5), json!("2.5")),
                    (json!(null), json!(null)),
                    // Only wysiwyg is sanitized: markdown and code keep their text verbatim.
                    (json!("<script>x()</script>"), json!("<script>x()</script>")),
                ])
                .rejects([json!(true), json!(["a"]), json!({"a": 1})])
        })
        .collect();
    rows.push(
        row(FieldType::Wysiwyg, json!({}))
            .accepts([
                (
                    json!("<p>Hi<script>alert(1)</script></p>"),
                    json!("<p>Hi</p>"),
                ),
                (
                    json!("<h2>Title</h2><p><strong>bold</strong> <em>em</em></p>"),
                    json!("<h2>Title</h2><p><strong>bold</strong> <em>em</em></p>"),
                ),
                (json!("<p onclick=\"steal()\">t</p>"), json!("<p>t</p>")),
                (
                    json!("<iframe src=\"//evil\"></iframe><b>ok</b>"),
                    json!("<b>ok</b>"),
                ),
                (json!("<style>p{}</style>text"), json!("text")),
                (json!(null), json!(null)),
            ])
            .rejects([json!(false), json!(["<p>x</p>"])]),
    );
    for ty in [FieldType::Select, FieldType::RadioGroup] {
        rows.push(
            row(ty, json!({"options": ["red", "blue"]}))
                .accepts([
                    (json!("red"), json!("red")),
                    (json!("blue"), json!("blue")),
                    (json!(null), json!(null)),
                    (json!(""), json!("")),
                ])
                .rejects([json!("green"), json!("Red"), json!(["red"]), json!(true)]),
        );
        rows.push(
            row(
                ty,
                json!({"options": [{"value": "draft", "label": "Draft"}, {"value": 1}]}),
            )
            .accepts([(json!("draft"), json!("draft")), (json!(1), json!("1"))])
            .rejects([json!("Draft"), json!(2)]),
        );
        rows.push(row(ty, json!({})).accepts([(json!("anything"), json!("anything"))]));
    }
    rows.push(
        row(FieldType::Date, json!({"date_mode": "date"}))
            .accepts([
                (json!("2024-02-29"), json!("2024-02-29")),
                (json!(" 2024-01-05 "), json!("2024-01-05")),
                (json!(""), json!(null)),
                (json!(null), json!(null)),
            ])
            .rejects([
                json!("2023-02-29"),
                json!("2024-13-01"),
                json!("2024/01/01"),
                json!("2024-01-01T00:00:00Z"),
                json!(20_240_101),
                json!(true),
            ]),
    );
    rows.push(
        row(FieldType::Date, json!({"date_mode": "time"}))
            .accepts([
                (json!("09:30"), json!("09:30:00")),
                (json!("23:59:59"), json!("23:59:59")),
                (json!("00:00"), json!("00:00:00")),
            ])
            .rejects([json!("24:00"), json!("9:30"), json!("09:60"), json!("noon")]),
    );
    let datetime_cases = [
        (json!("2024-05-01T10:00:00Z"), json!("2024-05-01T10:00:00Z")),
        (
            json!("2024-05-01T12:00:00+02:00"),
            json!("2024-05-01T10:00:00Z"),
        ),
        (
            json!("2024-05-01T00:30:00+01:00"),
            json!("2024-04-30T23:30:00Z"),
        ),
        (
            json!("2024-05-01T10:00:00.250Z"),
            json!("2024-05-01T10:00:00.25Z"),
        ),
        (json!("2024-05-01T10:00"), json!("2024-05-01T10:00:00Z")),
        (json!("2024-05-01 10:00:00"), json!("2024-05-01T10:00:00Z")),
        (json!("2024-05-01"), json!("2024-05-01T00:00:00Z")),
        (json!(null), json!(null)),
    ];
    let datetime_rejects = [
        json!("yesterday"),
        json!("2024-05-01T25:00:00Z"),
        json!("2024-05-01T10:00:00+25:00"),
        json!(1_714_557_600),
    ];
    // `datetime` is the default mode.
    for settings in [json!({"date_mode": "datetime"}), json!({})] {
        rows.push(
            row(FieldType::Date, settings)
                .accepts(datetime_cases.clone())
                .rejects(datetime_rejects.clone()),
        );
    }
    rows.push(
        row(FieldType::Color, json!({}))
            .accepts([
                (json!("#AABBCC"), json!("#aabbcc")),
                (json!("#fff"), json!("#fff")),
                (json!("#FFFA"), json!("#fffa")),
                (json!("#11223344"), json!("#11223344")),
                (json!(""), json!(null)),
                (json!(null), json!(null)),
            ])
            .rejects([
                json!("red"),
                json!("#ggg"),
                json!("#12345"),
                json!("aabbcc"),
                json!(123),
                json!(["#fff"]),
            ]),
    );
    rows
}

#[test]
fn string_or_null_shape() {
    check(&text_rows());
}

// ---------------------------------------------------------------------------------------------
// number or null: number, slider / boolean or null: boolean
// ---------------------------------------------------------------------------------------------

fn number_rows() -> Vec<Row> {
    [FieldType::Number, FieldType::Slider]
        .into_iter()
        .map(|ty| {
            row(ty, json!({}))
                .accepts([
                    (json!(3), json!(3)),
                    (json!(0), json!(0)),
                    (json!(-2.5), json!(-2.5)),
                    (json!("42"), json!(42)),
                    (json!(" 4.5 "), json!(4.5)),
                    (json!("-7"), json!(-7)),
                    (json!(""), json!(null)),
                    (json!(null), json!(null)),
                ])
                .rejects([
                    json!("abc"),
                    json!("NaN"),
                    json!("inf"),
                    json!("1e400"),
                    json!(true),
                    json!([1]),
                    json!({"a": 1}),
                ])
        })
        .collect()
}

#[test]
fn number_or_null_shape() {
    check(&number_rows());
}

fn boolean_rows() -> Vec<Row> {
    vec![
        row(FieldType::Boolean, json!({}))
            .accepts([
                (json!(true), json!(true)),
                (json!(false), json!(false)),
                (json!(1), json!(true)),
                (json!(0), json!(false)),
                (json!("1"), json!(true)),
                (json!("true"), json!(true)),
                (json!("on"), json!(true)),
                (json!("0"), json!(false)),
                (json!("false"), json!(false)),
                (json!("off"), json!(false)),
                (json!(""), json!(null)),
                (json!(null), json!(null)),
            ])
            .rejects([json!("yes"), json!("TRUE"), json!(2), json!([]), json!({})]),
    ]
}

#[test]
fn boolean_or_null_shape() {
    check(&boolean_rows());
}

// ---------------------------------------------------------------------------------------------
// string[]: multiselect, checkbox_group, checkbox_group_tree, tag
// ---------------------------------------------------------------------------------------------

fn string_list_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for ty in [FieldType::Multiselect, FieldType::CheckboxGroup] {
        rows.push(
            row(ty, json!({"options": ["red", "blue", "green"]}))
                .accepts([
                    (json!(["red", "blue"]), json!(["red", "blue"])),
                    (json!("red"), json!(["red"])),
                    (json!([]), json!([])),
                    (json!(null), json!([])),
                ])
                .rejects([
                    json!(["red", "pink"]),
                    json!([["red"]]),
                    json!([true]),
                    json!({"a": 1}),
                    json!(true),
                ]),
        );
        rows.push(row(ty, json!({})).accepts([(json!(["a", 1]), json!(["a", "1"]))]));
    }
    rows.push(
        row(
            FieldType::CheckboxGroupTree,
            json!({"options": [
                {"value": "europe", "children": [{"value": "de"}, {"value": "fr"}]},
                {"value": "asia"}
            ]}),
        )
        .accepts([
            (json!(["europe", "de"]), json!(["europe", "de"])),
            (json!("fr"), json!(["fr"])),
            (json!(null), json!([])),
        ])
        .rejects([json!(["us"]), json!([{"value": "de"}])]),
    );
    rows.push(
        row(FieldType::Tag, json!({}))
            .accepts([
                (json!([" a ", "b", "a", ""]), json!(["a", "b"])),
                (json!("x"), json!(["x"])),
                (json!([1, "1"]), json!(["1"])),
                (json!(null), json!([])),
                (json!(["  "]), json!([])),
            ])
            .rejects([json!([null]), json!(true), json!({"tag": "a"})]),
    );
    rows
}

#[test]
fn string_list_shape() {
    check(&string_list_rows());
}

// ---------------------------------------------------------------------------------------------
// GeoJSON Point or MultiPoint, [lng, lat]: map (legacy { lat, lng } converted)
// ---------------------------------------------------------------------------------------------

fn map_rows() -> Vec<Row> {
    let point = |lng: f64, lat: f64| json!({"type": "Point", "coordinates": [lng, lat]});
    let point_rejects = [
        json!({"lat": 90.5, "lng": 0}),
        json!({"lat": -91, "lng": 0}),
        json!({"lat": 0, "lng": 180.5}),
        json!({"lat": 0, "lng": -181}),
        json!({"lat": "x", "lng": 1}),
        json!({"lat": 1}),
        json!({"type": "Point", "coordinates": [200, 0]}),
        json!({"type": "Point", "coordinates": [0, 91]}),
        json!({"type": "Point", "coordinates": [0]}),
        json!({"type": "Point", "coordinates": ["a", "b"]}),
        json!({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}),
        json!("52.5,13.4"),
        json!([13.4, 52.5]),
        json!({}),
    ];
    vec![
        row(FieldType::Map, json!({}))
            .accepts([
                // Legacy `{lat, lng}` becomes a GeoJSON Point with [lng, lat].
                (json!({"lat": 52.5, "lng": 13.4}), point(13.4, 52.5)),
                // Like number, date, color and id fields, a blank string means null.
                (json!(""), json!(null)),
                (json!({"lat": "52.5", "lng": "13.4"}), point(13.4, 52.5)),
                (point(13.4, 52.5), point(13.4, 52.5)),
                (
                    json!({"type": "Point", "coordinates": [1, 2]}),
                    point(1.0, 2.0),
                ),
                (json!({"lat": -90, "lng": -180}), point(-180.0, -90.0)),
                (json!({"lat": 90, "lng": 180}), point(180.0, 90.0)),
                (json!(null), json!(null)),
            ])
            // Point mode does not take MultiPoint (it is not silently truncated).
            .rejects(point_rejects.iter().cloned().chain([
                json!({"type": "MultiPoint", "coordinates": [[1, 2], [3, 4]]}),
                json!([{"lat": 2, "lng": 1}]),
            ])),
        row(FieldType::Map, json!({"geometry_mode": "point"}))
            .accepts([(json!({"lat": 1, "lng": 2}), point(2.0, 1.0))])
            .rejects(point_rejects.iter().cloned()),
        row(FieldType::Map, json!({"geometry_mode": "multipoint"}))
            .accepts([
                (
                    json!({"type": "MultiPoint", "coordinates": [[1, 2], [3, 4]]}),
                    json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0], [3.0, 4.0]]}),
                ),
                (
                    json!([{"lat": 2, "lng": 1}, {"lat": "4", "lng": "3"}]),
                    json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0], [3.0, 4.0]]}),
                ),
                // A single point is wrapped so the stored shape is what the mode promises.
                (
                    point(1.0, 2.0),
                    json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0]]}),
                ),
                (
                    json!({"lat": 2, "lng": 1}),
                    json!({"type": "MultiPoint", "coordinates": [[1.0, 2.0]]}),
                ),
                (json!(null), json!(null)),
            ])
            .rejects([
                json!({"type": "MultiPoint", "coordinates": []}),
                json!({"type": "MultiPoint", "coordinates": [[0, 100]]}),
                json!({"type": "MultiPoint", "coordinates": [[0, 0], [181, 0]]}),
                json!({"type": "MultiPoint"}),
                json!([{"lat": 1}]),
                json!([]),
                json!({"type": "Polygon", "coordinates": []}),
            ]),
    ]
}

#[test]
fn geojson_shape() {
    check(&map_rows());
}

// ---------------------------------------------------------------------------------------------
// integer (file id): file, image without allow_multiple / integer[]: files, image with it
// integer (item id): relation, many_to_one, relation_tree / integer[]: one_to_many, relation_many
// ---------------------------------------------------------------------------------------------

fn single_id_row(ty: FieldType, settings: Value) -> Row {
    row(ty, settings)
        .accepts([
            (json!(7), json!(7)),
            (json!("7"), json!(7)),
            // The expanded shape a client read with `include` can be written back.
            (json!({"id": 7, "filename": "a.jpg"}), json!(7)),
            (json!(""), json!(null)),
            (json!(null), json!(null)),
        ])
        .rejects([
            json!(0),
            json!(-1),
            json!(1.5),
            json!("x"),
            json!([1]),
            json!(true),
            json!({"filename": "a.jpg"}),
        ])
}

fn id_list_row(ty: FieldType, settings: Value) -> Row {
    row(ty, settings)
        .accepts([
            (json!([3, "4", {"id": 5}]), json!([3, 4, 5])),
            (json!([9, 1]), json!([9, 1])),
            (json!(3), json!([3])),
            (json!([]), json!([])),
            (json!(null), json!([])),
        ])
        .rejects([
            json!([3, 3]),
            json!([3, null]),
            json!([0]),
            json!(["x"]),
            json!({"a": 1}),
            json!(true),
        ])
}

fn file_rows() -> Vec<Row> {
    vec![
        single_id_row(FieldType::File, json!({})),
        single_id_row(FieldType::Image, json!({})),
        single_id_row(FieldType::Image, json!({"allow_multiple": false})),
        single_id_row(FieldType::Image, json!({"allow_multiple": "yes"})),
        id_list_row(FieldType::Files, json!({})),
        id_list_row(FieldType::Image, json!({"allow_multiple": true})),
        id_list_row(FieldType::Image, json!({"allow_multiple": "on"})),
        id_list_row(FieldType::Image, json!({"allow_multiple": 1})),
    ]
}

#[test]
fn file_id_shapes() {
    check(&file_rows());
}

fn relation_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for ty in [
        FieldType::Relation,
        FieldType::ManyToOne,
        FieldType::RelationTree,
    ] {
        rows.push(single_id_row(ty, json!({"related_collection_id": 4})));
    }
    for ty in [FieldType::OneToMany, FieldType::RelationMany] {
        rows.push(id_list_row(ty, json!({"related_collection_id": 4})));
        rows.push(
            row(ty, json!({"allow_duplicates": "1"})).accepts([(json!([1, 1]), json!([1, 1]))]),
        );
    }
    rows
}

#[test]
fn item_id_shapes() {
    check(&relation_rows());
}

// ---------------------------------------------------------------------------------------------
// { related_item_id, meta }[]: many_to_many (bare integers accepted on write)
// ---------------------------------------------------------------------------------------------

fn many_to_many_rows() -> Vec<Row> {
    let junction = json!({"junction_fields": [
        {"name": "role", "type": "string"},
        {"name": "weight", "type": "number"},
        {"name": "primary", "type": "boolean"}
    ]});
    vec![
        row(FieldType::ManyToMany, junction)
            .accepts([
                (
                    json!([1, "2"]),
                    json!([
                        {"related_item_id": 1, "meta": {}},
                        {"related_item_id": 2, "meta": {}}
                    ]),
                ),
                (json!(3), json!([{"related_item_id": 3, "meta": {}}])),
                (
                    json!([{"related_item_id": 3, "meta": {"role": "author", "weight": "2", "primary": "on"}}]),
                    json!([{"related_item_id": 3, "meta": {"role": "author", "weight": 2, "primary": true}}]),
                ),
                (
                    json!([{"related_item_id": "4", "meta": {"role": 7, "weight": null}}]),
                    json!([{"related_item_id": 4, "meta": {"role": "7", "weight": null}}]),
                ),
                // The expanded `{ item, meta }` shape is accepted too.
                (
                    json!([{"item": {"id": 5, "title": "x"}, "meta": null}]),
                    json!([{"related_item_id": 5, "meta": {}}]),
                ),
                (json!([]), json!([])),
                (json!(null), json!([])),
            ])
            .rejects([
                json!([{"related_item_id": 1, "meta": {"colour": "red"}}]),
                json!([{"related_item_id": 1, "meta": {"weight": "heavy"}}]),
                json!([{"related_item_id": 1, "meta": {"primary": "yes"}}]),
                json!([{"related_item_id": 1, "meta": {"role": ["a"]}}]),
                json!([{"related_item_id": 1, "meta": []}]),
                json!([{"meta": {}}]),
                json!([{"related_item_id": 0}]),
                json!([1, 1]),
                json!(["x"]),
                json!(true),
            ]),
        row(FieldType::ManyToMany, json!({}))
            .accepts([(json!([2]), json!([{"related_item_id": 2, "meta": {}}]))])
            .rejects([json!([{"related_item_id": 1, "meta": {"role": "x"}}])]),
        row(FieldType::ManyToMany, json!({"allow_duplicates": true})).accepts([(
            json!([1, 1]),
            json!([{"related_item_id": 1, "meta": {}}, {"related_item_id": 1, "meta": {}}]),
        )]),
    ]
}

#[test]
fn junction_links_shape() {
    check(&many_to_many_rows());
}

// ---------------------------------------------------------------------------------------------
// { related_collection_id, related_item_id }[]: m2a
// ---------------------------------------------------------------------------------------------

fn m2a_rows() -> Vec<Row> {
    vec![
        row(FieldType::M2a, json!({"allowed_collection_ids": [1, 2]}))
            .accepts([
                (
                    json!([
                        {"related_collection_id": 2, "related_item_id": 10},
                        {"related_collection_id": "1", "related_item_id": "11"}
                    ]),
                    json!([
                        {"related_collection_id": 2, "related_item_id": 10},
                        {"related_collection_id": 1, "related_item_id": 11}
                    ]),
                ),
                (
                    json!([{"related_collection_id": 1, "item": {"id": 5}}]),
                    json!([{"related_collection_id": 1, "related_item_id": 5}]),
                ),
                (json!([]), json!([])),
                (json!(null), json!([])),
            ])
            .rejects([
                // Collection 3 is not in allowed_collection_ids.
                json!([{"related_collection_id": 3, "related_item_id": 1}]),
                json!([{"related_collection_id": 2}]),
                json!([{"related_item_id": 2}]),
                json!([
                    {"related_collection_id": 2, "related_item_id": 1},
                    {"related_collection_id": 2, "related_item_id": 1}
                ]),
                json!([7]),
                json!(5),
                json!({"related_collection_id": 2, "related_item_id": 1}),
            ]),
        // An m2a field that allows no collection accepts no entry.
        row(FieldType::M2a, json!({}))
            .accepts([(json!([]), json!([]))])
            .rejects([json!([{"related_collection_id": 1, "related_item_id": 1}])]),
        row(
            FieldType::M2a,
            json!({"allowed_collection_ids": [2], "allow_duplicates": "true"}),
        )
        .accepts([(
            json!([
                {"related_collection_id": 2, "related_item_id": 1},
                {"related_collection_id": 2, "related_item_id": 1}
            ]),
            json!([
                {"related_collection_id": 2, "related_item_id": 1},
                {"related_collection_id": 2, "related_item_id": 1}
            ]),
        )]),
    ]
}

#[test]
fn collection_links_shape() {
    check(&m2a_rows());
}

// ---------------------------------------------------------------------------------------------
// string (fingerprint, not a password hash): hash
// ---------------------------------------------------------------------------------------------

fn hash_rows() -> Vec<Row> {
    let fp = fingerprint("alice@example.com");
    vec![
        row(FieldType::Hash, json!({}))
            .accepts([
                (json!("alice@example.com"), json!(fp)),
                (json!(12345), json!(fingerprint("12345"))),
                // A value that already is a fingerprint is kept: normalization is idempotent.
                (json!(fp), json!(fp)),
                (json!(""), json!(null)),
                (json!(null), json!(null)),
            ])
            .rejects([json!(true), json!(["a"]), json!({"a": 1})]),
    ]
}

#[test]
fn fingerprint_shape() {
    check(&hash_rows());
}

fn is_fingerprint_form(s: &str) -> bool {
    s.strip_prefix("hmac-sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[test]
fn hash_is_a_keyed_deterministic_fingerprint_never_the_clear_value() {
    let s = schema(FieldType::Hash, &json!({}));
    let clear = "correct-horse-battery-staple";
    let store = |key: &[u8]| {
        write_with(&s, &json!({"f": clear}), WriteMode::Create, "en", key)
            .unwrap()
            .data["f"]
            .clone()
    };
    let a = store(b"key-one");
    let Value::String(text) = &a else {
        panic!("not a string: {a}")
    };
    assert!(is_fingerprint_form(text), "{text}");
    assert!(!text.contains(clear));
    assert!(!text.contains("horse"));
    // Deterministic within a project, different across projects (keyed).
    assert_eq!(store(b"key-one"), a);
    assert_ne!(store(b"key-two"), a);
    // HMAC-SHA-256, pinned with RFC 4231 test case 2.
    let jefe = write_with(
        &s,
        &json!({"f": "what do ya want for nothing?"}),
        WriteMode::Create,
        "en",
        b"Jefe",
    )
    .unwrap();
    assert_eq!(
        jefe.data["f"],
        json!("hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    );
}

#[test]
fn hash_is_never_translatable() {
    let def = FieldDef::new("f", FieldType::Hash, true, &json!({})).unwrap();
    assert!(!def.translatable);
    let s = CollectionSchema::new(vec![def]).unwrap();
    let data = create_in(&s, &json!({"f": "secret"}), "de").unwrap();
    // Stored as a plain fingerprint, not a locale map, whatever the request locale.
    assert_eq!(data, json!({"f": fingerprint("secret")}));
}

// ---------------------------------------------------------------------------------------------
// { id, type, data }[]: blocks
// ---------------------------------------------------------------------------------------------

const ID1: &str = "0b3c6f6e-6d1e-4b6f-9a57-1d6d2f0e8a11";
const ID2: &str = "5f0d2c61-3a5e-4c2b-8e7f-2b9c1a7d4e22";

fn blocks_settings() -> Value {
    json!({"block_types": [
        {"key": "hero", "label": {"en": "Hero", "de": "Held"}, "fields": [
            {"name": "title", "type": "string", "translatable": true},
            {"name": "count", "type": "number"},
            {"name": "cover", "type": "image"},
            {"name": "body", "type": "wysiwyg"},
            {"name": "where", "type": "map"}
        ]},
        {"key": "section", "fields": [
            {"name": "heading", "type": "string", "translatable": true},
            {"name": "children", "type": "blocks", "settings": {"block_types": [
                {"key": "text", "fields": [
                    {"name": "body", "type": "wysiwyg"},
                    {"name": "tags", "type": "tag"}
                ]}
            ]}}
        ]}
    ]})
}

fn blocks_rows() -> Vec<Row> {
    vec![
        row(FieldType::Blocks, blocks_settings())
            .accepts([
                (json!(null), json!([])),
                (json!([]), json!([])),
                // Nested values are normalized per their field definitions.
                (
                    json!([{"id": ID1, "type": "hero", "data": {
                        "title": "Hello",
                        "count": "3",
                        "cover": {"id": 9},
                        "body": "<p>x<script>y()</script></p>",
                        "where": {"lat": 52.5, "lng": 13.4}
                    }}]),
                    json!([{"id": ID1, "type": "hero", "data": {
                        "title": {"en": "Hello"},
                        "count": 3,
                        "cover": 9,
                        "body": "<p>x</p>",
                        "where": {"type": "Point", "coordinates": [13.4, 52.5]}
                    }}]),
                ),
                (
                    json!([{"id": ID1, "type": "hero", "data": {"title": {"en": "Hi", "de": "Hallo"}}}]),
                    json!([{"id": ID1, "type": "hero", "data": {"title": {"en": "Hi", "de": "Hallo"}}}]),
                ),
                // Nested blocks fields are normalized recursively.
                (
                    json!([{"id": ID1, "type": "section", "data": {
                        "heading": "Intro",
                        "children": [{"id": ID2, "type": "text", "data": {"tags": " a ", "body": "<b>b</b><script>s</script>"}}]
                    }}]),
                    json!([{"id": ID1, "type": "section", "data": {
                        "heading": {"en": "Intro"},
                        "children": [{"id": ID2, "type": "text", "data": {"tags": ["a"], "body": "<b>b</b>"}}]
                    }}]),
                ),
                // Unknown keys of block data are dropped, a missing data is an empty object.
                (
                    json!([{"id": ID1, "type": "hero", "data": {"nope": 1, "count": 1}}, {"id": ID2, "type": "hero"}]),
                    json!([{"id": ID1, "type": "hero", "data": {"count": 1}}, {"id": ID2, "type": "hero", "data": {}}]),
                ),
                // Ids are stored in the canonical lowercase form.
                (
                    json!([{"id": ID1.to_uppercase(), "type": "hero", "data": {}}]),
                    json!([{"id": ID1, "type": "hero", "data": {}}]),
                ),
            ])
            .rejects_at([
                (json!([{"id": ID1, "type": "video", "data": {}}]), "f.0.type"),
                (json!([{"id": ID1, "data": {}}]), "f.0.type"),
                (
                    json!([{"id": ID1, "type": "hero"}, {"type": "video"}]),
                    "f.1.type",
                ),
                (json!([{"id": "not-a-uuid", "type": "hero"}]), "f.0.id"),
                (json!([{"id": 5, "type": "hero"}]), "f.0.id"),
                (json!([{"type": "hero", "data": {}, "extra": 1}]), "f.0"),
                (json!([{"type": "hero", "data": []}]), "f.0.data"),
                (json!([{"type": "hero", "data": {"count": "many"}}]), "f.0.count"),
                (
                    json!([{"type": "hero", "data": {"title": {"fr": "Bonjour"}}}]),
                    "f.0.title",
                ),
                (json!(["hero"]), "f.0"),
                (json!({"type": "hero", "data": {}}), "f"),
                (
                    json!([{"type": "section", "data": {"children": [{"type": "video"}]}}]),
                    "f.0.children.0.type",
                ),
                (
                    json!([{"type": "section", "data": {"children": [{"type": "text", "data": {"tags": [true]}}]}}]),
                    "f.0.children.0.tags",
                ),
            ]),
    ]
}

#[test]
fn blocks_shape() {
    check(&blocks_rows());
}

#[test]
fn blocks_get_uuid_ids_when_missing() {
    let s = schema(FieldType::Blocks, &blocks_settings());
    let input = json!({"f": [
        {"type": "hero", "data": {"count": 1}},
        {"type": "section", "data": {"children": [{"type": "text", "data": {}}]}},
        {"id": null, "type": "hero"}
    ]});
    let data = create(&s, &input).unwrap();
    let blocks = data["f"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    let mut ids = BTreeSet::new();
    let mut check_id = |block: &Value| {
        let id = block["id"].as_str().expect("id is a string");
        let parsed = Uuid::parse_str(id).expect("id is a UUID");
        assert_eq!(parsed.get_version_num(), 4, "{id}");
        assert_eq!(parsed.to_string(), id, "canonical form");
        assert!(ids.insert(id.to_owned()), "duplicate id {id}");
    };
    for block in blocks {
        check_id(block);
    }
    let child = &blocks[1]["data"]["children"][0];
    check_id(child);
    // Apart from the assigned ids the blocks are as written.
    let strip = |mut v: Value| {
        for block in v.as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("id");
            if let Some(children) = block["data"].get_mut("children") {
                for c in children.as_array_mut().unwrap() {
                    c.as_object_mut().unwrap().remove("id");
                }
            }
        }
        v
    };
    assert_eq!(
        strip(data["f"].clone()),
        json!([
            {"type": "hero", "data": {"count": 1}},
            {"type": "section", "data": {"children": [{"type": "text", "data": {}}]}},
            {"type": "hero", "data": {}}
        ])
    );
    // Writing the stored value back keeps the ids.
    assert_eq!(create(&s, &data).unwrap(), data);
}

#[test]
fn blocks_are_never_translatable_and_localize_inside() {
    let def = FieldDef::new("f", FieldType::Blocks, true, &blocks_settings()).unwrap();
    assert!(!def.translatable);
    let s = CollectionSchema::new(vec![def]).unwrap();
    let data = create_in(
        &s,
        &json!({"f": [{"id": ID1, "type": "hero", "data": {"title": "Hallo"}}]}),
        "de",
    )
    .unwrap();
    assert_eq!(
        data,
        json!({"f": [{"id": ID1, "type": "hero", "data": {"title": {"de": "Hallo"}}}]})
    );
}

/// Three levels of `section` blocks, each with a `children` blocks field.
fn deep_settings(max: Option<u8>) -> Value {
    let text = json!({"key": "text", "fields": [{"name": "body", "type": "textarea"}]});
    let level3 = json!({"key": "section", "fields": [
        {"name": "title", "type": "string"},
        {"name": "children", "type": "blocks", "settings": {"block_types": [text]}}
    ]});
    let level2 = json!({"key": "section", "fields": [
        {"name": "title", "type": "string"},
        {"name": "children", "type": "blocks", "settings": {"block_types": [level3]}}
    ]});
    let mut settings = json!({"block_types": [
        {"key": "section", "fields": [
            {"name": "title", "type": "string"},
            {"name": "children", "type": "blocks", "settings": {"block_types": [level2]}}
        ]}
    ]});
    if let Some(max) = max {
        settings["max_blocks_depth"] = json!(max);
    }
    settings
}

fn deep_value() -> Value {
    json!([{"id": ID1, "type": "section", "data": {"title": "1", "children": [
        {"id": ID1, "type": "section", "data": {"title": "2", "children": [
            {"id": ID1, "type": "section", "data": {"title": "3", "children": [
                {"id": ID2, "type": "text", "data": {"body": "4"}}
            ]}}
        ]}}
    ]}}])
}

#[test]
fn blocks_deeper_than_the_maximum_are_dropped_from_the_saved_value() {
    // Default maximum 3: the root field is depth 1, so the blocks field at depth 4 is dropped.
    let s = schema(FieldType::Blocks, &deep_settings(None));
    let data = create(&s, &json!({"f": deep_value()})).unwrap();
    assert_eq!(
        data["f"],
        json!([{"id": ID1, "type": "section", "data": {"title": "1", "children": [
            {"id": ID1, "type": "section", "data": {"title": "2", "children": [
                {"id": ID1, "type": "section", "data": {"title": "3"}}
            ]}}
        ]}}])
    );
    // With a maximum of 1 no nested blocks field survives.
    let s = schema(FieldType::Blocks, &deep_settings(Some(1)));
    let data = create(&s, &json!({"f": deep_value()})).unwrap();
    assert_eq!(
        data["f"],
        json!([{"id": ID1, "type": "section", "data": {"title": "1"}}])
    );
    // With the ceiling of 5 the whole tree is kept.
    let s = schema(FieldType::Blocks, &deep_settings(Some(5)));
    let data = create(&s, &json!({"f": deep_value()})).unwrap();
    assert_eq!(data["f"], deep_value());
    // Above the ceiling is a settings error, not a silent clamp.
    assert!(FieldDef::new("f", FieldType::Blocks, false, &deep_settings(Some(6))).is_err());
}

// ---------------------------------------------------------------------------------------------
// Coverage
// ---------------------------------------------------------------------------------------------

fn all_rows() -> Vec<Row> {
    [
        text_rows(),
        number_rows(),
        boolean_rows(),
        string_list_rows(),
        map_rows(),
        file_rows(),
        relation_rows(),
        many_to_many_rows(),
        m2a_rows(),
        hash_rows(),
        blocks_rows(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[test]
fn the_tables_cover_every_field_type_with_accepted_and_rejected_values() {
    let rows = all_rows();
    let with_accepts: BTreeSet<FieldType> = rows
        .iter()
        .filter(|r| !r.accepts.is_empty())
        .map(|r| r.ty)
        .collect();
    let with_rejects: BTreeSet<FieldType> = rows
        .iter()
        .filter(|r| !r.rejects.is_empty())
        .map(|r| r.ty)
        .collect();
    let all: BTreeSet<FieldType> = FieldType::ALL.into_iter().collect();
    assert_eq!(all.len(), 31);
    assert_eq!(with_accepts, all);
    assert_eq!(with_rejects, all);
    // Every stored value in the tables has the shape the type declares.
    for r in &rows {
        let def = FieldDef::new("f", r.ty, false, &r.settings).unwrap();
        for (input, stored) in &r.accepts {
            if def.shape().is_array() {
                assert!(stored.is_array(), "{} {input} -> {stored}", r.ty);
            } else {
                assert!(!stored.is_array(), "{} {input} -> {stored}", r.ty);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Translatable fields on write (operator contract)
// ---------------------------------------------------------------------------------------------

#[test]
fn translatable_plain_value_is_stored_under_the_request_locale() {
    let s = translatable_schema(FieldType::String, &json!({}));
    assert_eq!(
        create(&s, &json!({"f": "Hello"})).unwrap(),
        json!({"f": {"en": "Hello"}})
    );
    assert_eq!(
        create_in(&s, &json!({"f": "Hallo"}), "de").unwrap(),
        json!({"f": {"de": "Hallo"}})
    );
}

#[test]
fn translatable_locale_map_keys_must_be_enabled_locales() {
    let s = translatable_schema(FieldType::String, &json!({}));
    assert_eq!(
        create_in(&s, &json!({"f": {"en": "Hello", "de": "Hallo"}}), "de").unwrap(),
        json!({"f": {"en": "Hello", "de": "Hallo"}})
    );
    for bad in [
        json!({"fr": "Bonjour"}),
        json!({"en": "Hi", "EN": "Hi"}),
        json!({"english": "Hi"}),
    ] {
        let errors = create(&s, &json!({ "f": bad })).unwrap_err();
        assert!(errors.get("f").is_some(), "{bad}: {errors:?}");
    }
}

#[test]
fn translatable_values_are_normalized_per_locale() {
    let s = translatable_schema(FieldType::Number, &json!({}));
    assert_eq!(
        create(&s, &json!({"f": {"en": "42", "de": 7}})).unwrap(),
        json!({"f": {"en": 42, "de": 7}})
    );
    let errors = create(&s, &json!({"f": {"en": 1, "de": "viel"}})).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert!(errors.get("f").is_some());

    let s = translatable_schema(FieldType::Wysiwyg, &json!({}));
    assert_eq!(
        create(&s, &json!({"f": {"de": "<p>x<script>y</script></p>"}})).unwrap(),
        json!({"f": {"de": "<p>x</p>"}})
    );
}

#[test]
fn translatable_map_field_takes_geojson_and_legacy_objects_as_values() {
    let s = translatable_schema(FieldType::Map, &json!({}));
    let point = json!({"type": "Point", "coordinates": [13.4, 52.5]});
    assert_eq!(
        create(&s, &json!({"f": {"lat": 52.5, "lng": 13.4}})).unwrap(),
        json!({"f": {"en": point}})
    );
    assert_eq!(
        create_in(&s, &json!({ "f": point }), "de").unwrap(),
        json!({"f": {"de": point}})
    );
    assert_eq!(
        create(&s, &json!({"f": {"de": {"lat": 52.5, "lng": 13.4}}})).unwrap(),
        json!({"f": {"de": point}})
    );
}

#[test]
fn translatable_update_merges_with_stored_translations() {
    let s = translatable_schema(FieldType::String, &json!({}));
    let existing = json!({"f": {"en": "Hello"}});
    assert_eq!(
        update_in(&s, &existing, &json!({"f": "Hallo"}), "de").unwrap(),
        json!({"f": {"en": "Hello", "de": "Hallo"}})
    );
    assert_eq!(
        update_in(&s, &existing, &json!({"f": "Hi"}), "en").unwrap(),
        json!({"f": {"en": "Hi"}})
    );
    let both = json!({"f": {"en": "Hello", "de": "Hallo"}});
    // A null translation removes that locale; removing the last one leaves null.
    assert_eq!(
        update_in(&s, &both, &json!({"f": {"de": null}}), "en").unwrap(),
        json!({"f": {"en": "Hello"}})
    );
    assert_eq!(
        update_in(&s, &both, &json!({"f": {"de": null, "en": null}}), "en").unwrap(),
        json!({"f": null})
    );
    // A value stored before the field became translatable belongs to the default locale.
    assert_eq!(
        update_in(&s, &json!({"f": "Old"}), &json!({"f": "Neu"}), "de").unwrap(),
        json!({"f": {"en": "Old", "de": "Neu"}})
    );
}

#[test]
fn relation_types_are_never_translatable() {
    for ty in FieldType::ALL {
        let def = FieldDef::new("f", ty, true, &json!({})).unwrap();
        let expected = !(ty.is_relation() || ty == FieldType::Hash || ty == FieldType::Blocks);
        assert_eq!(def.translatable, expected, "{ty}");
    }
    let s = translatable_schema(FieldType::ManyToOne, &json!({}));
    assert_eq!(
        create_in(&s, &json!({"f": 5}), "de").unwrap(),
        json!({"f": 5})
    );
}

#[test]
fn unknown_top_level_fields_are_rejected() {
    let s = schema(FieldType::String, &json!({}));
    let errors = create(&s, &json!({"f": "x", "nope": 1})).unwrap_err();
    assert_eq!(
        errors.into_map().into_iter().collect::<Vec<_>>(),
        vec![(
            "nope".to_owned(),
            vec!["The nope field does not exist.".to_owned()]
        )]
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions: defects these tests found, fixed in src; each test pins the correct behaviour.
// ---------------------------------------------------------------------------------------------

#[test]
fn datetime_whose_utc_form_leaves_year_9999_is_a_validation_error_not_a_panic() {
    let s = schema(FieldType::Date, &json!({}));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        create(&s, &json!({"f": "9999-12-31T23:00:00-02:00"}))
    }));
    let errors = outcome.expect("must not panic").unwrap_err();
    assert_eq!(
        errors.get("f").unwrap(),
        ["The f field must be a valid ISO 8601 date-time."]
    );
    // The same year without a crossing offset is fine.
    assert_eq!(
        create(&s, &json!({"f": "9999-12-31T23:00:00Z"})).unwrap(),
        json!({"f": "9999-12-31T23:00:00Z"})
    );
}

#[test]
fn signed_years_are_rejected_in_every_date_mode() {
    for (mode, input) in [
        ("date", "-0001-01-01"),
        ("date", "+2024-01-01"),
        ("datetime", "-0001-01-01T00:00:00"),
    ] {
        let s = schema(FieldType::Date, &json!({"date_mode": mode}));
        assert!(
            create(&s, &json!({"f": input}))
                .unwrap_err()
                .get("f")
                .is_some(),
            "{mode} {input}"
        );
    }
}

#[test]
fn translatable_array_field_empty_translations_are_idempotent() {
    let s = translatable_schema(FieldType::Tag, &json!({}));
    let first = create(&s, &json!({"f": {}})).unwrap();
    assert_eq!(first, json!({"f": null}));
    assert_eq!(create(&s, &first).unwrap(), first);
    // An empty list for one locale drops that locale (reads fall back to the default locale).
    let stored = create(&s, &json!({"f": {"en": ["a"], "de": []}})).unwrap();
    assert_eq!(stored, json!({"f": {"en": ["a"]}}));
}

#[test]
fn translatable_file_field_accepts_the_expanded_file_object() {
    let s = translatable_schema(FieldType::Image, &json!({}));
    assert_eq!(
        create(&s, &json!({"f": {"id": 7, "filename": "a.jpg"}})).unwrap(),
        json!({"f": {"en": 7}})
    );
    // A real locale map still works.
    assert_eq!(
        create(&s, &json!({"f": {"en": 7, "de": 8}})).unwrap(),
        json!({"f": {"en": 7, "de": 8}})
    );
    // The same input on a non-translatable image field is accepted too.
    let plain = schema(FieldType::Image, &json!({}));
    assert_eq!(
        create(&plain, &json!({"f": {"id": 7}})).unwrap(),
        json!({"f": 7})
    );
}

#[test]
fn translatable_map_field_keeps_a_pre_translatable_geojson_value_in_the_default_locale() {
    let s = translatable_schema(FieldType::Map, &json!({}));
    let old = json!({"type": "Point", "coordinates": [1.0, 2.0]});
    let new = json!({"type": "Point", "coordinates": [6.0, 5.0]});
    let updated = update_in(
        &s,
        &json!({ "f": old }),
        &json!({"f": {"lat": 5, "lng": 6}}),
        "de",
    )
    .unwrap();
    assert_eq!(updated, json!({"f": {"en": old, "de": new}}));
    let locales = locales();
    let en = vellum_domain::LocaleSelection::Flatten(locales.default_locale().clone());
    let read = vellum_domain::flatten_for_read(&s, &object(&json!({ "f": old })), &en, &locales);
    assert_eq!(Value::Object(read), json!({ "f": old }));
    // The same situation with a string field keeps the old value.
    let strings = translatable_schema(FieldType::String, &json!({}));
    let read =
        vellum_domain::flatten_for_read(&strings, &object(&json!({"f": "Old"})), &en, &locales);
    assert_eq!(Value::Object(read), json!({"f": "Old"}));
}
