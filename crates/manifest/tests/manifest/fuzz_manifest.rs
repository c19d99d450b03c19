//! Fuzz target (proptest, stable toolchain) for the manifest. Validation is not a separate
//! public function: it is the first part of `apply` (JSON Schema, then the domain and policy
//! crates, then references the database must hold). So random manifests are applied, one after
//! another, to one SQLite database (or PostgreSQL with `VELLUM_TEST_POSTGRES_URL`).
//!
//! Manifests are shaped like real ones (collections with random field definitions, roles with
//! random grants and item filters, API keys with random secrets, IP ranges and expiry, folders,
//! items, settings) with arbitrary JSON mixed in anywhere. For every one: `apply` never panics
//! and returns `Ok` or `ManifestError::Invalid`; an invalid manifest changes nothing (the export
//! is the same before and after); and after a successful apply the export applies again and
//! exports the same.
//!
//! Cases: 64 by default (each is a few database transactions); `PROPTEST_CASES=5000 cargo test
//! -p vellum-manifest --test fuzz_manifest --release` for a long run (see docs/testing.md).
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
use vellum_manifest::{ManifestError, apply, export};
use vellum_storage::testing::TestDb;

/// The default number of cases; `PROPTEST_CASES` overrides it.
fn config() -> ProptestConfig {
    ProptestConfig {
        // `with_cases` would ignore the environment; this keeps `PROPTEST_CASES` in charge.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64),
        // A manual runner: tell it where to persist failing seeds.
        source_file: Some(file!()),
        ..ProptestConfig::default()
    }
}

const SLUGS: &[&str] = &["articles", "authors", "pages", "Bad Slug", ""];
const NAMES: &[&str] = &["title", "status", "body", "author", "tags", "1bad", ""];
const TYPES: &[&str] = &[
    "string",
    "number",
    "boolean",
    "textarea",
    "wysiwyg",
    "select",
    "tag",
    "date",
    "map",
    "color",
    "hash",
    "image",
    "files",
    "many_to_one",
    "one_to_many",
    "many_to_many",
    "m2a",
    "blocks",
    "strng",
];

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        select(SLUGS).prop_map(Value::from),
        select(NAMES).prop_map(Value::from),
        "\\PC{0,10}".prop_map(Value::String),
    ]
    .boxed()
}

fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((select(&["en", "read", "_eq", "x"][..]), inner), 0..5)
                    .prop_map(|kv| Value::Object(
                        kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                    )),
            ]
        })
        .boxed()
}

/// `value` most of the time, arbitrary JSON sometimes.
fn or_junk(value: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![12 => value, 1 => arb_json()].boxed()
}

/// An object from optional entries: absent keys are left out.
fn object(entries: Vec<(&'static str, Option<Value>)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
            .collect::<Map<_, _>>(),
    )
}

fn arb_field() -> BoxedStrategy<Value> {
    let settings = prop_oneof![
        Just(json!({})),
        Just(json!({"required": true})),
        Just(json!({"related_collection": "authors"})),
        Just(json!({"related_collection": "nowhere"})),
        Just(json!({"allowed_collections": ["articles", "authors"]})),
        Just(json!({"allowed_collections": ["nowhere"]})),
        Just(json!({"options": ["a", "b"], "default_value": "a"})),
        Just(json!({"date_mode": "week"})),
        Just(
            json!({"block_types": [{"key": "hero", "fields": [{"name": "title", "type": "string"}]}]})
        ),
        Just(json!({"validation_rules": [{"operator": "regex", "value": "["}]})),
        arb_json(),
    ];
    or_junk(
        (
            select(NAMES),
            select(TYPES),
            prop::option::of(any::<bool>()),
            prop::option::of(settings),
        )
            .prop_map(|(name, ty, translatable, settings)| {
                object(vec![
                    ("name", Some(json!(name))),
                    ("type", Some(json!(ty))),
                    ("translatable", translatable.map(Value::Bool)),
                    ("settings", settings),
                ])
            })
            .boxed(),
    )
}

fn arb_collection() -> BoxedStrategy<Value> {
    or_junk(
        (
            select(SLUGS),
            prop::option::of(arb_leaf()),
            prop::option::of(any::<bool>()),
            prop::collection::vec(arb_field(), 0..4),
        )
            .prop_map(|(slug, name, singleton, fields)| {
                object(vec![
                    ("slug", Some(json!(slug))),
                    ("name", name),
                    ("is_singleton", singleton.map(Value::Bool)),
                    ("fields", Some(Value::Array(fields))),
                ])
            })
            .boxed(),
    )
}

fn arb_grant() -> BoxedStrategy<Value> {
    let filter = prop_oneof![
        Just(json!({"status": {"_eq": "published"}})),
        Just(json!({"title": "x", "id": {"_gt": 3}})),
        Just(json!({"nope": {"_eq": 1}})),
        Just(json!({"status": {"_like": 1}})),
        arb_json(),
    ];
    let rules = (
        prop::option::of(
            prop::collection::btree_map(
                select(NAMES),
                (any::<bool>(), any::<bool>()).prop_map(|(r, u)| json!({"read": r, "update": u})),
                0..3,
            )
            .prop_map(|m| json!(m)),
        ),
        prop::option::of(filter),
    )
        .prop_map(|(fields, item_filter)| {
            object(vec![("fields", fields), ("item_filter", item_filter)])
        });
    or_junk(
        (any::<[bool; 4]>(), prop::option::of(or_junk(rules.boxed())))
            .prop_map(|([c, r, u, d], rules)| {
                object(vec![
                    ("create", Some(json!(c))),
                    ("read", Some(json!(r))),
                    ("update", Some(json!(u))),
                    ("delete", Some(json!(d))),
                    ("rules", rules),
                ])
            })
            .boxed(),
    )
}

fn arb_role() -> BoxedStrategy<Value> {
    or_junk(
        (
            select(&["editor", "public", "super-admin", "reader", ""][..]),
            prop::collection::btree_map(select(SLUGS), arb_grant(), 0..3),
            prop::option::of(or_junk(
                any::<[bool; 3]>()
                    .prop_map(|[c, r, p]| json!({"create": c, "read": r, "read_private": p}))
                    .boxed(),
            )),
        )
            .prop_map(|(name, grants, files)| {
                object(vec![
                    ("name", Some(json!(name))),
                    ("collection_permissions", Some(json!(grants))),
                    ("file_permissions", files),
                ])
            })
            .boxed(),
    )
}

fn arb_key() -> BoxedStrategy<Value> {
    let secret = prop_oneof![
        Just(json!("ek_0123456789abcdef0123456789abcdef")),
        Just(json!("ek_short")),
        Just(json!("sk_0123456789abcdef0123456789abcdef")),
        "ek_[0-9a-f]{32}".prop_map(Value::String),
        arb_leaf(),
    ];
    let ip = prop_oneof![
        select(
            &[
                "127.0.0.1",
                "127.0.0.1/32",
                "::1/128",
                "10.0.0.0/8",
                "0.0.0.0/0",
                "10.0.0.1/33",
                "fe80::1%eth0",
                "::ffff:1.2.3.4",
                "1.2.3",
                "",
                "localhost",
            ][..]
        )
        .prop_map(Value::from),
        arb_leaf(),
    ];
    let expires = prop_oneof![
        Just(json!("2999-01-01T00:00:00Z")),
        Just(json!("2000-01-01T00:00:00Z")),
        Just(json!("9999-12-31T23:59:59-02:00")),
        Just(json!("0000-01-01T00:00:00+01:00")),
        Just(json!("tomorrow")),
        arb_leaf(),
    ];
    or_junk(
        (
            select(&["site", "build", ""][..]),
            select(&["editor", "public", "super-admin", "ghost"][..]),
            prop::option::of(secret),
            prop::option::of(prop::collection::vec(ip, 0..3).prop_map(Value::Array)),
            prop::option::of(expires),
        )
            .prop_map(|(name, role, secret, ips, expires)| {
                object(vec![
                    ("name", Some(json!(name))),
                    ("role", Some(json!(role))),
                    ("secret", secret),
                    ("ip_allowlist", ips),
                    ("expires_at", expires),
                ])
            })
            .boxed(),
    )
}

fn arb_folder() -> BoxedStrategy<Value> {
    or_junk(
        (
            select(&["press", "kits", "", "a/b", "..", "ü"][..]),
            prop::option::of(select(&["press", "kits", "nowhere"][..]).prop_map(Value::from)),
            prop::option::of(
                select(&["private", "public", "inherit", "nope"][..]).prop_map(Value::from),
            ),
        )
            .prop_map(|(name, parent, access)| {
                object(vec![
                    ("name", Some(json!(name))),
                    ("parent", Some(parent.unwrap_or(Value::Null))),
                    ("access", access),
                ])
            })
            .boxed(),
    )
}

fn arb_settings() -> BoxedStrategy<Value> {
    or_junk(
        (
            prop::option::of(
                prop::collection::vec(select(&["en", "de", "pt-BR", "x", "EN"][..]), 0..3)
                    .prop_map(|l| json!(l)),
            ),
            prop::option::of(select(&["en", "de", "fr", "e"][..]).prop_map(Value::from)),
            prop::option::of(
                prop::collection::vec(
                    select(
                        &[
                            "https://app.example.com",
                            "http://localhost:3000",
                            "https://a.test/x",
                            "ftp://a.test",
                            "null",
                            "*",
                        ][..],
                    ),
                    0..3,
                )
                .prop_map(|l| json!(l)),
            ),
            prop::option::of(prop_oneof![
                Just(json!(0)),
                Just(json!(10_485_760)),
                Just(json!(u64::MAX)),
                Just(json!(-1))
            ]),
        )
            .prop_map(|(locales, default, origins, max)| {
                object(vec![
                    ("content_locales", locales),
                    ("default_locale", default),
                    ("public_api_allowed_origins", origins),
                    ("files_max_upload_bytes", max),
                ])
            })
            .boxed(),
    )
}

fn arb_items() -> BoxedStrategy<Value> {
    let data = prop::collection::btree_map(select(NAMES), arb_json(), 0..3).prop_map(|m| json!(m));
    prop::collection::btree_map(
        select(SLUGS),
        prop::collection::vec(or_junk(data.prop_map(|d| json!({"data": d})).boxed()), 0..3),
        0..2,
    )
    .prop_map(|m| json!(m))
    .boxed()
}

fn arb_manifest() -> BoxedStrategy<Value> {
    prop_oneof![
        12 => (
            prop::option::of(arb_settings()),
            prop::option::of(prop::collection::vec(arb_collection(), 0..3)),
            prop::option::of(prop::collection::vec(arb_role(), 0..3)),
            prop::option::of(prop::collection::vec(arb_key(), 0..2)),
            prop::option::of(prop::collection::vec(arb_folder(), 0..3)),
            prop::option::of(arb_items()),
        )
            .prop_map(|(settings, collections, roles, keys, folders, items)| {
                object(vec![
                    ("settings", settings),
                    ("collections", collections.map(Value::Array)),
                    ("roles", roles.map(Value::Array)),
                    ("api_keys", keys.map(Value::Array)),
                    ("folders", folders.map(Value::Array)),
                    ("items", items),
                ])
            }),
        1 => arb_json(),
    ]
    .boxed()
}

async fn check(db: &TestDb, manifest: &Value, applied: &Cell<u32>) -> Result<(), TestCaseError> {
    let before = export(&db.conn, true).await.unwrap();
    match apply(&db.conn, manifest).await {
        Ok(_) => {
            applied.set(applied.get() + 1);
            // What was applied exports, and the export applies and exports the same.
            let exported = export(&db.conn, true).await;
            let Ok(exported) = exported else {
                return Err(TestCaseError::fail(format!("export failed: {exported:?}")));
            };
            let again = apply(&db.conn, &exported).await;
            prop_assert!(
                again.is_ok(),
                "re-applying the export: {:?}\n{}",
                again,
                exported
            );
            let twice = export(&db.conn, true).await.unwrap();
            prop_assert_eq!(twice, exported);
        }
        Err(ManifestError::Invalid(invalid)) => {
            prop_assert!(!invalid.message.is_empty());
            // Nothing was changed.
            let after = export(&db.conn, true).await.unwrap();
            prop_assert_eq!(after, before, "changed by an invalid manifest: {}", invalid);
        }
        Err(other) => {
            return Err(TestCaseError::fail(format!(
                "not a clean validation error: {other:?}\n{manifest}"
            )));
        }
    }
    Ok(())
}

#[test]
fn random_manifests_apply_or_are_refused_cleanly() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let db = rt.block_on(TestDb::new()).unwrap();
    let mut runner = TestRunner::new(config());
    let applied = Cell::new(0);
    let result = runner.run(&arb_manifest(), |manifest| {
        rt.block_on(check(&db, &manifest, &applied))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!(
        "{} of {} manifests applied",
        applied.get(),
        runner.config().cases
    );
    // Not vacuous: some manifests get past validation and into the database.
    assert!(applied.get() > 0, "no manifest applied");
}
