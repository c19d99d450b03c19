//! `apply` and `export` through the library, on SQLite and (with `VELLUM_TEST_POSTGRES_URL`) on
//! PostgreSQL: the contract's example, idempotence, invalid manifests naming their path with
//! nothing changed, and the export/apply round trip.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use vellum_manifest::{ManifestError, apply, export};
use vellum_policy::{ApiKeySecret, KeyCheck};
use vellum_storage::Database;
use vellum_storage::testing::TestDb;

fn example() -> Value {
    json!({
      "settings": {
        "content_locales": ["en", "de"],
        "default_locale": "en",
        "public_api_allowed_origins": ["https://app.example.com"],
        "files_max_upload_bytes": 10_485_760
      },
      "collections": [
        {"slug": "authors", "name": "Authors", "fields": [
          {"name": "name", "type": "string", "settings": {"required": true}}
        ]},
        {
          "slug": "articles", "name": "Articles", "is_singleton": false,
          "fields": [
            {"name": "title", "type": "string", "translatable": true, "settings": {"required": true}},
            {"name": "status", "type": "string"},
            {"name": "internal_notes", "type": "textarea"},
            {"name": "cover", "type": "image", "settings": {}},
            {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors"}}
          ]
        }
      ],
      "roles": [
        {
          "name": "editor",
          "collection_permissions": {
            "articles": {
              "create": true, "read": true, "update": true, "delete": false,
              "rules": {
                "fields": {"internal_notes": {"read": false, "create": false, "update": false}},
                "item_filter": {"status": {"_eq": "published"}}
              }
            }
          },
          "file_permissions": {"create": true, "read": true, "read_private": false, "update": true, "delete": false}
        },
        {"name": "public", "collection_permissions": {"articles": {"read": true}}, "file_permissions": {"read": true}}
      ],
      "api_keys": [
        {"name": "site-build", "role": "editor", "ip_allowlist": ["127.0.0.1/32", "::1/128"]},
        {"name": "fixed", "role": "editor", "secret": "ek_0123456789abcdef0123456789abcdef"}
      ],
      "folders": [
        {"name": "press", "parent": null, "access": "private"},
        {"name": "kits", "parent": "press", "access": null}
      ],
      "items": {
        "authors": [{"data": {"name": "Ada"}}],
        "articles": [{"data": {"title": {"en": "Hello", "de": "Hallo"}, "status": "published", "author": 1}}]
      }
    })
}

async fn count(db: &Database, table: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("SELECT COUNT(*) AS n FROM {table}"),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get("", "n").unwrap()
}

const TABLES: [&str; 9] = [
    "collections",
    "fields",
    "roles",
    "collection_grants",
    "api_keys",
    "files",
    "items",
    "item_revisions",
    "settings",
];

async fn counts(db: &Database) -> Vec<i64> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push(count(db, t).await);
    }
    out
}

#[tokio::test]
async fn the_contract_example_applies_and_a_second_apply_changes_nothing() {
    let db = TestDb::new().await.unwrap();
    let report = apply(&db.conn, &example()).await.unwrap();
    assert_eq!(report.api_keys.len(), 2);
    assert_eq!(
        report.api_keys["fixed"],
        "ek_0123456789abcdef0123456789abcdef"
    );
    assert!(report.api_keys["site-build"].starts_with("ek_"));
    let before = counts(&db.conn).await;
    assert_eq!(before[0], 2, "collections");
    assert_eq!(before[6], 2, "items");

    let again = apply(&db.conn, &example()).await.unwrap();
    assert_eq!(again.to_json(), json!({"api_keys": {}}));
    assert_eq!(counts(&db.conn).await, before);

    // The relation target was stored as an id, and the role as written.
    let articles = vellum_storage::collections::collection_by_slug(&db.conn, "articles")
        .await
        .unwrap()
        .unwrap();
    let authors = vellum_storage::collections::collection_by_slug(&db.conn, "authors")
        .await
        .unwrap()
        .unwrap();
    let author = articles.field("author").unwrap().def.settings.to_json();
    assert_eq!(author["related_collection_id"], json!(authors.id));
    let editor = vellum_storage::roles::load_role(&db.conn, "editor")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        editor.to_json()["collection_permissions"]["articles"]["rules"]["item_filter"],
        json!({"status": {"_eq": "published"}})
    );
}

#[tokio::test]
async fn export_then_apply_on_an_empty_database_reproduces_the_project() {
    let first = TestDb::new().await.unwrap();
    apply(&first.conn, &example()).await.unwrap();
    let exported = export(&first.conn, true).await.unwrap();
    assert!(
        !exported.to_string().contains("ek_0123456789abcdef"),
        "no secrets in an export"
    );

    let second = TestDb::new().await.unwrap();
    apply(&second.conn, &exported).await.unwrap();
    let again = export(&second.conn, true).await.unwrap();
    assert_eq!(again, exported);
    assert_eq!(counts(&second.conn).await, counts(&first.conn).await);
}

/// `(what to change in the example, the path the error must name)`.
fn invalid_cases() -> Vec<(Value, &'static str)> {
    let mut cases = Vec::new();
    let mut m = example();
    m["collections"][1]["fields"][3]["type"] = json!("strng");
    cases.push((m, "collections[1].fields[3].type"));
    let mut m = example();
    m["collections"][0]["slug"] = json!("Not A Slug");
    cases.push((m, "collections[0].slug"));
    let mut m = example();
    m["collections"][1]["fields"][4]["settings"]["related_collection"] = json!("nowhere");
    cases.push((m, "collections[1].fields[4].settings.related_collection"));
    let mut m = example();
    m["collections"][1]["fields"][1]["name"] = json!("title");
    cases.push((m, "collections[1].fields[1].name"));
    let mut m = example();
    m["collections"][1]["colour"] = json!("red");
    cases.push((m, "collections[1]"));
    let mut m = example();
    m["roles"][0]["collection_permissions"]["articles"]["rules"]["item_filter"] =
        json!({"status": {"_like": "x"}});
    cases.push((
        m,
        "roles[0].collection_permissions.articles.rules.item_filter",
    ));
    let mut m = example();
    m["roles"][0]["collection_permissions"]["nowhere"] = json!({"read": true});
    cases.push((m, "roles[0].collection_permissions.nowhere"));
    let mut m = example();
    m["roles"][0]["collection_permissions"]["articles"]["rules"]["fields"] =
        json!({"internal_note": {"read": false}});
    cases.push((
        m,
        "roles[0].collection_permissions.articles.rules.fields.internal_note",
    ));
    let mut m = example();
    m["collections"][1]["slug"] = json!("authors");
    cases.push((m, "collections[1].slug"));
    let mut m = example();
    m["roles"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "super-admin"}));
    cases.push((m, "roles[2].name"));
    let mut m = example();
    m["api_keys"][0]["ip_allowlist"] = json!(["300.1.1.1/8"]);
    cases.push((m, "api_keys[0].ip_allowlist"));
    let mut m = example();
    m["api_keys"][1]["secret"] = json!("not-a-key-0123456789abcdef0123456789");
    cases.push((m, "api_keys[1].secret"));
    let mut m = example();
    m["api_keys"][0]["role"] = json!("ghost");
    cases.push((m, "api_keys[0].role"));
    let mut m = example();
    m["api_keys"][0]["expires_at"] = json!("tomorrow");
    cases.push((m, "api_keys[0].expires_at"));
    // Year -1 in UTC: a valid date-time the databases cannot store and read back (found by
    // tests/fuzz_manifest.rs).
    let mut m = example();
    m["api_keys"][0]["expires_at"] = json!("0000-01-01T00:00:00+01:00");
    cases.push((m, "api_keys[0].expires_at"));
    let mut m = example();
    m["folders"][1]["parent"] = json!("nowhere");
    cases.push((m, "folders[1].parent"));
    let mut m = example();
    m["settings"]["public_api_allowed_origins"] = json!(["https://app.example.com/path"]);
    cases.push((m, "settings.public_api_allowed_origins"));
    let mut m = example();
    m["items"]["articles"][0]["data"]["title"] = json!(null);
    cases.push((m, "items.articles[0].data.title"));
    // Without the article's link to author 1: on PostgreSQL, the refused applies before this one
    // consumed item ids (sequences do not roll back), so Ada is no longer item 1.
    let mut m = example();
    m["items"]["articles"][0]["data"]
        .as_object_mut()
        .unwrap()
        .remove("author");
    m["items"]["ghosts"] = json!([{"data": {}}]);
    cases.push((m, "items.ghosts"));
    // A seed must link items that exist where its field points.
    let mut m = example();
    m["items"]["articles"][0]["data"]["author"] = json!(99_999);
    cases.push((m, "items.articles[0].data.author"));
    let mut m = example();
    m["collections"][1]["fields"][3]["settings"] = json!({"max_links": 0});
    cases.push((m, "collections[1].fields[3].settings.max_links"));
    cases
}

#[tokio::test]
async fn invalid_manifests_name_the_path_and_change_nothing() {
    let db = TestDb::new().await.unwrap();
    // A first, valid state that every refused manifest must leave exactly as it is.
    apply(
        &db.conn,
        &json!({"collections": [{"slug": "keep", "fields": []}]}),
    )
    .await
    .unwrap();
    let before = counts(&db.conn).await;
    let cases = invalid_cases();
    assert!(cases.len() >= 10);
    for (manifest, path) in cases {
        match apply(&db.conn, &manifest).await {
            Err(ManifestError::Invalid(e)) => {
                assert_eq!(e.path, path, "{e}");
                assert!(!e.message.is_empty());
            }
            other => panic!("{path}: expected an invalid manifest, got {other:?}"),
        }
        assert_eq!(
            counts(&db.conn).await,
            before,
            "{path} changed the database"
        );
    }
}

#[tokio::test]
async fn the_type_error_reads_like_the_contract() {
    let db = TestDb::new().await.unwrap();
    let mut m = example();
    m["collections"][1]["fields"][3]["type"] = json!("strng");
    let err = apply(&db.conn, &m).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "collections[1].fields[3].type: unknown field type \"strng\""
    );
}

/// A key that exists keeps its secret (never printed again) but its role, IP allowlist and
/// expiry follow the manifest, so tightening an allowlist in the file takes effect.
#[tokio::test]
async fn an_existing_key_follows_the_manifest_but_keeps_its_secret() {
    let db = TestDb::new().await.unwrap();
    let first = apply(&db.conn, &example()).await.unwrap();
    let before = vellum_storage::keys::api_key_by_name(&db.conn, "site-build")
        .await
        .unwrap()
        .unwrap();
    let mut changed = example();
    changed["api_keys"][0] = json!({
        "name": "site-build", "role": "public", "ip_allowlist": ["10.0.0.0/8"],
        "expires_at": "2030-01-01T00:00:00Z"
    });
    let again = apply(&db.conn, &changed).await.unwrap();
    assert_eq!(again.to_json(), json!({"api_keys": {}}));
    let after = vellum_storage::keys::api_key_by_name(&db.conn, "site-build")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.key_id, before.key_id, "the secret is unchanged");
    assert_eq!(after.role, "public");
    assert_eq!(after.ip_allowlist.entries(), ["10.0.0.0/8"]);
    assert!(after.expires_at.is_some());
    // The original secret still identifies the key.
    let secret = vellum_policy::ApiKeySecret::parse(&first.api_keys["site-build"]).unwrap();
    let found = vellum_storage::keys::find_api_key(&db.conn, &secret.key_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.record.role, "public");
    // Applying the changed file again changes nothing more.
    assert_eq!(
        apply(&db.conn, &changed).await.unwrap().to_json(),
        json!({"api_keys": {}})
    );
}

// ---------------------------------------------------------------------------------------------
// Rotating a key's secret through the manifest (security review 2026-11, A4)

/// The review's reproduction: a key created with one secret, then given another.
const OLD_SECRET: &str = "ek_nofilesNOFILES1234567890abcdefghijkl";
const NEW_SECRET: &str = "ek_rotatedROTATED1234567890abcdefghijkl";
/// Same key id as [`NEW_SECRET`] (the first 12 characters after `ek_`), another digest.
const SAME_ID_SECRET: &str = "ek_rotatedROTATEDzyxwvutsrqponmlkjihgfe";

/// The example with key `nf` given `secret` (none: the entry names no secret).
fn with_nf(secret: Option<&str>) -> Value {
    let mut m = example();
    let mut key = json!({"name": "nf", "role": "editor"});
    if let Some(secret) = secret {
        key["secret"] = json!(secret);
    }
    m["api_keys"].as_array_mut().unwrap().push(key);
    m
}

/// What the server does with `Authorization: Bearer <bearer>` before the IP allowlist: the key
/// found by its key id (`find_api_key`, one indexed lookup), then `KeyRecord::check` (constant-
/// time digest comparison, revocation, expiry). `None` when no key has that key id; the role of
/// the key alongside its outcome otherwise.
async fn key_check(db: &Database, bearer: &str) -> Option<(KeyCheck, String)> {
    let secret = ApiKeySecret::parse(bearer).unwrap();
    let found = vellum_storage::keys::find_api_key(db, &secret.key_id())
        .await
        .unwrap()?;
    let outcome = found.record.check(&secret, time::OffsetDateTime::now_utc());
    Some((outcome, found.record.role))
}

/// Whether `bearer` authenticates as a key of the `editor` role.
async fn authenticates(db: &Database, bearer: &str) -> bool {
    key_check(db, bearer).await == Some((KeyCheck::Valid, "editor".to_owned()))
}

#[tokio::test]
async fn a_changed_secret_rotates_the_key_and_the_old_one_stops_working() {
    let db = TestDb::new().await.unwrap();
    let first = apply(&db.conn, &with_nf(Some(OLD_SECRET))).await.unwrap();
    assert_eq!(first.api_keys["nf"], OLD_SECRET);
    assert!(first.rotated_keys.is_empty());
    assert!(authenticates(&db.conn, OLD_SECRET).await);
    let before = vellum_storage::keys::api_key_by_name(&db.conn, "nf")
        .await
        .unwrap()
        .unwrap();

    let second = apply(&db.conn, &with_nf(Some(NEW_SECRET))).await.unwrap();
    assert_eq!(second.rotated_keys, ["nf"]);
    // The operator wrote the secret: it is not printed back.
    assert_eq!(second.to_json(), json!({"api_keys": {}}));
    // The old secret's key id no longer finds a key (401 on the server); the new one works.
    assert_eq!(key_check(&db.conn, OLD_SECRET).await, None);
    assert!(authenticates(&db.conn, NEW_SECRET).await);
    // The same key, not a new one: same row and creation time, new lookup id.
    let after = vellum_storage::keys::api_key_by_name(&db.conn, "nf")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.id, after.created_at), (before.id, before.created_at));
    assert_eq!(after.key_id.as_str(), "rotatedROTAT");
    assert_eq!(count(&db.conn, "api_keys").await, 3);

    // Idempotent: the same manifest again rotates nothing and changes nothing.
    let before = counts(&db.conn).await;
    let third = apply(&db.conn, &with_nf(Some(NEW_SECRET))).await.unwrap();
    assert!(third.rotated_keys.is_empty(), "{third:?}");
    assert_eq!(third.to_json(), json!({"api_keys": {}}));
    assert_eq!(counts(&db.conn).await, before);
    assert!(authenticates(&db.conn, NEW_SECRET).await);

    // An entry without a secret keeps the current one.
    let without = apply(&db.conn, &with_nf(None)).await.unwrap();
    assert!(without.rotated_keys.is_empty());
    assert!(authenticates(&db.conn, NEW_SECRET).await);
}

/// A new secret sharing the key id (the first 12 characters after `ek_`) differs only in its
/// digest: the digest alone must decide.
#[tokio::test]
async fn a_secret_with_the_same_key_id_but_another_digest_rotates_too() {
    let db = TestDb::new().await.unwrap();
    apply(&db.conn, &with_nf(Some(NEW_SECRET))).await.unwrap();
    let report = apply(&db.conn, &with_nf(Some(SAME_ID_SECRET)))
        .await
        .unwrap();
    assert_eq!(report.rotated_keys, ["nf"]);
    assert_eq!(
        key_check(&db.conn, NEW_SECRET).await,
        Some((KeyCheck::WrongSecret, "editor".to_owned()))
    );
    assert!(authenticates(&db.conn, SAME_ID_SECRET).await);
}

/// A revoked key stays revoked (apply has never revived a key), but its stored secret follows
/// the manifest too, so the replaced one can never work again.
#[tokio::test]
async fn a_revoked_key_stays_revoked_when_its_secret_changes() {
    let db = TestDb::new().await.unwrap();
    apply(&db.conn, &with_nf(Some(OLD_SECRET))).await.unwrap();
    vellum_storage::keys::revoke_api_key(&db.conn, "nf")
        .await
        .unwrap();
    let report = apply(&db.conn, &with_nf(Some(NEW_SECRET))).await.unwrap();
    assert_eq!(report.rotated_keys, ["nf"]);
    assert_eq!(report.to_json(), json!({"api_keys": {}}));
    assert_eq!(key_check(&db.conn, OLD_SECRET).await, None);
    assert_eq!(
        key_check(&db.conn, NEW_SECRET).await,
        Some((KeyCheck::Revoked, "editor".to_owned()))
    );
    let key = vellum_storage::keys::api_key_by_name(&db.conn, "nf")
        .await
        .unwrap()
        .unwrap();
    assert!(key.revoked_at.is_some());
    assert_eq!(key.key_id.as_str(), "rotatedROTAT");
}

/// Another key already has the new secret's key id: the manifest is refused at that secret,
/// without echoing it, and nothing changes (the old secret still works).
#[tokio::test]
async fn rotating_onto_another_keys_key_id_is_refused_and_changes_nothing() {
    let db = TestDb::new().await.unwrap();
    apply(&db.conn, &with_nf(Some(OLD_SECRET))).await.unwrap();
    // The key id of the example's "fixed" key, another digest.
    let taken = "ek_0123456789abXXXXXXXXXXXXXXXXXXXXXXXX";
    let before = counts(&db.conn).await;
    match apply(&db.conn, &with_nf(Some(taken))).await {
        Err(ManifestError::Invalid(e)) => {
            assert_eq!(e.path, "api_keys[2].secret", "{e}");
            assert!(e.message.contains("key id"), "{e}");
            assert!(!e.to_string().contains("XXXX"), "{e}");
        }
        other => panic!("expected an invalid manifest, got {other:?}"),
    }
    assert_eq!(counts(&db.conn).await, before);
    assert!(authenticates(&db.conn, OLD_SECRET).await);
    assert!(authenticates(&db.conn, "ek_0123456789abcdef0123456789abcdef").await);
}

/// The `webhooks` section (issue 24): created with its secret, matched by name on a second apply
/// (the secret kept when none is given), exported without secrets, and refused with the path for
/// an unknown collection, an unknown event or a new webhook without its secret.
#[tokio::test]
async fn webhooks_apply_by_name_keep_their_secret_and_export_without_it() {
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let db = TestDb::new().await.unwrap();
    let mut manifest = example();
    manifest["webhooks"] = json!([{
        "name": "site-build", "url": "https://build.example.com/hook",
        "events": ["item.created", "item.updated"], "collections": ["articles"], "secret": SECRET
    }]);
    apply(&db.conn, &manifest).await.unwrap();
    let stored = vellum_storage::webhooks::find_by_name(&db.conn, "site-build")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.secret, SECRET);
    assert_eq!(stored.collections, r#"["articles"]"#);

    let exported = export(&db.conn, false).await.unwrap();
    assert_eq!(
        exported["webhooks"],
        json!([{"name": "site-build", "url": "https://build.example.com/hook",
                "events": ["item.created", "item.updated"], "collections": ["articles"]}])
    );
    assert!(
        !exported.to_string().contains("whsec_"),
        "no secret in an export"
    );
    // The export applies again: the webhook keeps its secret and takes the new settings.
    let mut again = exported.clone();
    again["webhooks"][0]["enabled"] = json!(false);
    apply(&db.conn, &again).await.unwrap();
    let stored = vellum_storage::webhooks::find_by_name(&db.conn, "site-build")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.secret, SECRET);
    assert!(!stored.enabled);
    assert_eq!(
        vellum_storage::webhooks::all(&db.conn).await.unwrap().len(),
        1
    );

    for (hook, path) in [
        (
            json!({"name": "n", "url": "https://x.example.com/", "events": ["item.created"]}),
            "webhooks[0].secret",
        ),
        (
            json!({"name": "n", "url": "https://x.example.com/", "events": ["item.created"], "collections": ["nope"], "secret": SECRET}),
            "webhooks[0].collections[0]",
        ),
        (
            json!({"name": "n", "url": "https://x.example.com/", "events": ["item.exploded"], "secret": SECRET}),
            "webhooks[0].events[0]",
        ),
        (
            json!({"name": "n", "url": "ftp://x.example.com/", "events": ["item.created"], "secret": SECRET}),
            "webhooks[0].url",
        ),
    ] {
        let mut bad = example();
        bad["webhooks"] = json!([hook]);
        match apply(&db.conn, &bad).await {
            Err(ManifestError::Invalid(e)) => assert_eq!(e.path, path, "{e}"),
            other => panic!("{path}: expected an invalid manifest, got {other:?}"),
        }
    }
}
