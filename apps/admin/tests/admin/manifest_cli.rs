//! `vellum-admin apply` and `export`, black-box: each test runs the real binary against a fresh
//! database: SQLite in a temporary directory by default, and a fresh PostgreSQL database when
//! `VELLUM_TEST_POSTGRES_URL` is set (`vellum_storage::testing::TestDb::empty`, whose URL the
//! binary gets). The database starts empty: `apply` must migrate it itself.
//!
//! Covered: the demo fixture on an empty database (one JSON object on stdout with the new key's
//! secret, the project readable through the library crates), idempotence (a second apply prints
//! `{"api_keys":{}}` and leaves every table row for row as it was), the manifest on standard input
//! (`-`), invalid manifests (non-zero exit, the offending manifest path and the problem on stderr,
//! nothing changed), the `export` / `apply` round trip, and unreadable input (malformed JSON, a
//! missing file) failing cleanly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use sea_orm::DbBackend;
use sea_orm::{ConnectionTrait, FromQueryResult, JsonValue, Statement};
use serde_json::{Value, json};
use vellum_policy::{ApiKeySecret, KeyCheck, Role};
use vellum_storage::testing::TestDb;
use vellum_storage::{Database, collections, items, keys, roles};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// An empty database for one test (`TestDb::empty`), removed on drop.
struct TestDatabase {
    url: String,
    db: TestDb,
}

impl TestDatabase {
    async fn new() -> Self {
        let db = TestDb::empty().await.unwrap();
        Self {
            url: db.url().to_owned(),
            db,
        }
    }

    /// Runs `vellum-admin --database-url <this database> ARGS…` with `stdin` as its standard
    /// input, no database variable in its environment and a working directory where the default
    /// SQLite path would be harmless.
    fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let cwd = tempfile::tempdir().unwrap();
        assert_cmd::cargo::cargo_bin_cmd!("vellum-admin")
            .env_remove("VELLUM_DATABASE_URL")
            .current_dir(cwd.path())
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .write_stdin(stdin)
            .output()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, b"")
    }

    /// Runs the command, asserts it succeeded and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        checked_ok(args, self.run(args))
    }

    /// Runs the command, asserts it succeeded and parses its stdout as JSON.
    fn json(&self, args: &[&str]) -> Value {
        parse(args, &self.ok(args))
    }

    /// Runs the command, asserts it failed cleanly (no panic) with nothing on stdout and returns
    /// its stderr.
    fn fails(&self, args: &[&str]) -> String {
        checked_failure(args, self.run(args))
    }

    /// `apply PATH`, asserting success; the parsed stdout.
    fn apply(&self, path: &Path) -> Value {
        self.json(&["apply", path.to_str().unwrap()])
    }

    /// `export` (with `--items` when asked), parsed.
    fn export(&self, with_items: bool) -> Value {
        if with_items {
            self.json(&["export", "--items"])
        } else {
            self.json(&["export"])
        }
    }

    /// What `export --items` shows and every row of every table: a second apply, or a refused
    /// one, must leave all of it as it was.
    async fn snapshot(&self) -> Snapshot {
        Snapshot {
            export: self.export(true),
            tables: table_rows(&self.db.conn).await,
        }
    }

    fn conn(&self) -> &Database {
        &self.db.conn
    }
}

fn checked_ok(args: &[&str], output: Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "vellum-admin {args:?} failed: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

fn checked_failure(args: &[&str], output: Output) -> String {
    assert!(
        !output.status.success(),
        "vellum-admin {args:?} succeeded: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        output.stdout.is_empty(),
        "{args:?} printed a result: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    assert!(stderr.starts_with("vellum-admin: "), "{args:?}: {stderr}");
    stderr
}

fn parse(args: &[&str], stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
}

/// `fixtures/demo.json` of the workspace.
fn demo_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo.json")
}

fn demo() -> Value {
    serde_json::from_str(&std::fs::read_to_string(demo_path()).unwrap()).unwrap()
}

/// Writes `manifest` as `name` in `dir` and returns the path.
fn write(dir: &Path, name: &str, manifest: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(manifest).unwrap()).unwrap();
    path
}

/// Every row of one database, per table, sorted (PostgreSQL returns rows in physical order, which
/// an update that changes nothing may still change).
#[derive(Debug, PartialEq)]
struct Snapshot {
    export: Value,
    tables: BTreeMap<String, Vec<String>>,
}

impl Snapshot {
    fn counts(&self) -> BTreeMap<&str, usize> {
        self.tables
            .iter()
            .map(|(t, rows)| (t.as_str(), rows.len()))
            .collect()
    }

    /// Asserts nothing changed, counts first so a failure reads well.
    fn assert_same(&self, after: &Self, context: &str) {
        assert_eq!(self.counts(), after.counts(), "{context}: row counts");
        assert_eq!(self.export, after.export, "{context}: export --items");
        for (table, rows) in &self.tables {
            assert_eq!(
                Some(rows),
                after.tables.get(table),
                "{context}: table {table}"
            );
        }
    }
}

async fn table_names(db: &Database) -> Vec<String> {
    let backend = db.get_database_backend();
    let sql = match backend {
        DbBackend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name"
        }
        _ => {
            "SELECT table_name AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1"
        }
    };
    db.query_all_raw(Statement::from_string(backend, sql))
        .await
        .unwrap()
        .iter()
        .map(|row| row.try_get::<String>("", "name").unwrap())
        .collect()
}

async fn table_rows(db: &Database) -> BTreeMap<String, Vec<String>> {
    let backend = db.get_database_backend();
    let mut out = BTreeMap::new();
    for table in table_names(db).await {
        let mut rows: Vec<String> = JsonValue::find_by_statement(Statement::from_string(
            backend,
            format!("SELECT * FROM \"{table}\""),
        ))
        .all(db)
        .await
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
        rows.sort();
        out.insert(table, rows);
    }
    out
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

/// The names of the API keys a manifest lists.
fn key_names(manifest: &Value) -> Vec<String> {
    manifest["api_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// apply on an empty database
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn apply_creates_the_demo_project_and_prints_the_new_key_once() {
    let test = TestDatabase::new().await;
    let demo = demo();
    let stdout = test.ok(&["apply", demo_path().to_str().unwrap()]);
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    let report = parse(&["apply"], &stdout);

    // `{"api_keys": {"demo-editor": "ek_…"}}`: exactly the keys the fixture lists.
    assert_eq!(key_names(&demo), ["demo-editor"]);
    let printed = report.as_object().unwrap();
    assert_eq!(printed.keys().collect::<Vec<_>>(), ["api_keys"]);
    let keys = report["api_keys"].as_object().unwrap();
    assert_eq!(keys.keys().collect::<Vec<_>>(), ["demo-editor"]);
    let secret = keys["demo-editor"].as_str().unwrap();
    assert!(secret.starts_with("ek_"), "{secret}");
    let parsed = ApiKeySecret::parse(secret).unwrap();

    let db = test.conn();
    // The key: role editor, stored as its digest only.
    let stored = keys::list_api_keys(db).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0].name.as_str(), stored[0].role.as_str()),
        ("demo-editor", "editor")
    );
    assert_eq!(stored[0].key_id, parsed.key_id());
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT digest FROM api_keys WHERE name = 'demo-editor'",
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.try_get::<String>("", "digest").unwrap(),
        parsed.digest().to_hex()
    );

    // Collections and their fields, in manifest order; relation targets stored as ids.
    let all = collections::list_collections(db).await.unwrap();
    let shape: Vec<(String, bool, Vec<String>)> = all
        .iter()
        .map(|c| {
            (
                c.slug.to_string(),
                c.is_singleton,
                c.fields.iter().map(|f| f.def.name.to_string()).collect(),
            )
        })
        .collect();
    let expected: Vec<(String, bool, Vec<String>)> = demo["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["slug"].as_str().unwrap().to_owned(),
                c["is_singleton"].as_bool().unwrap(),
                c["fields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["name"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(shape, expected);
    let by_slug = |slug: &str| all.iter().find(|c| c.slug.as_str() == slug).unwrap();
    let articles = by_slug("articles");
    for (field, target) in [("author", "authors"), ("tags", "tags")] {
        let settings = articles.field(field).unwrap().def.settings.to_json();
        assert_eq!(
            settings["related_collection_id"],
            json!(by_slug(target).id),
            "{field}"
        );
    }

    // Roles exactly as the fixture writes them (the seeded ones exist too).
    for role in demo["roles"].as_array().unwrap() {
        let name = role["name"].as_str().unwrap();
        let loaded = roles::load_role(db, name).await.unwrap().unwrap();
        let mut matrices = role.clone();
        matrices.as_object_mut().unwrap().remove("name");
        assert_eq!(
            loaded.to_json(),
            Role::from_json(name, &matrices).unwrap().to_json(),
            "{name}"
        );
    }
    let roles: Vec<String> = roles::list_roles(db)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    for seeded in ["super-admin", "admin", "reader", "public", "editor"] {
        assert!(roles.iter().any(|r| r == seeded), "{seeded}: {roles:?}");
    }

    // Seed items: as many as listed, with their values.
    for (slug, list) in demo["items"].as_object().unwrap() {
        let live = items::all_live_items(db, by_slug(slug)).await.unwrap();
        assert_eq!(live.len(), list.as_array().unwrap().len(), "{slug}");
    }
    let first = &items::all_live_items(db, articles).await.unwrap()[0];
    assert_eq!(first.data["slug"], "analytical-engine");
    assert_eq!(
        first.data["title"],
        json!({"en": "Notes on the Analytical Engine", "de": "Notizen zur Analytischen Maschine"})
    );
    assert_eq!(first.data["views"], 1843);

    // Settings and folders, as `export` shows them; the export never holds the secret.
    let exported_text = test.ok(&["export"]);
    assert!(!exported_text.contains(secret), "the export shows a secret");
    let exported = parse(&["export"], &exported_text);
    for (key, value) in demo["settings"].as_object().unwrap() {
        assert_eq!(&exported["settings"][key], value, "settings.{key}");
    }
    assert_eq!(exported["folders"], demo["folders"]);
    assert_eq!(
        exported["api_keys"],
        json!([{"name": "demo-editor", "role": "editor"}])
    );
    assert!(exported.get("items").is_none(), "items only with --items");
}

#[tokio::test]
async fn a_second_apply_prints_no_keys_and_changes_nothing() {
    let test = TestDatabase::new().await;
    let first = test.apply(&demo_path());
    assert_eq!(first["api_keys"].as_object().unwrap().len(), 1, "{first}");
    let before = test.snapshot().await;
    assert_eq!(before.counts()["collections"], 4);
    assert_eq!(before.counts()["api_keys"], 1);
    let seeds: usize = demo()["items"]
        .as_object()
        .unwrap()
        .values()
        .map(|list| list.as_array().unwrap().len())
        .sum();
    assert_eq!(
        count(test.conn(), "items").await,
        i64::try_from(seeds).unwrap()
    );
    assert_eq!(seeds, 8);

    let stdout = test.ok(&["apply", demo_path().to_str().unwrap()]);
    assert_eq!(stdout, "{\"api_keys\":{}}\n");
    assert_eq!(parse(&["apply"], &stdout), json!({"api_keys": {}}));
    test.snapshot()
        .await
        .assert_same(&before, "second apply of demo.json");
    // And a third time, for good measure: still nothing.
    assert_eq!(test.apply(&demo_path()), json!({"api_keys": {}}));
    test.snapshot()
        .await
        .assert_same(&before, "third apply of demo.json");
}

#[tokio::test]
async fn apply_reads_the_manifest_from_standard_input_given_a_dash() {
    let text = std::fs::read(demo_path()).unwrap();
    let piped = TestDatabase::new().await;
    let report = parse(
        &["apply", "-"],
        &checked_ok(
            &["apply", "-"],
            piped.run_with_stdin(&["apply", "-"], &text),
        ),
    );
    let keys = report["api_keys"].as_object().unwrap();
    assert_eq!(keys.keys().collect::<Vec<_>>(), ["demo-editor"]);
    assert!(keys["demo-editor"].as_str().unwrap().starts_with("ek_"));

    // The same project as applying the file.
    let from_file = TestDatabase::new().await;
    from_file.apply(&demo_path());
    assert_eq!(piped.export(true), from_file.export(true));

    // Idempotent through stdin too.
    let before = piped.snapshot().await;
    let again = checked_ok(
        &["apply", "-"],
        piped.run_with_stdin(&["apply", "-"], &text),
    );
    assert_eq!(parse(&["apply", "-"], &again), json!({"api_keys": {}}));
    piped
        .snapshot()
        .await
        .assert_same(&before, "second apply from stdin");
}

/// Security review 2026-11, A4: editing an existing key's `secret` and applying again rotates the
/// key. stdout stays the contract's object (the operator wrote the secret; it is not printed),
/// stderr tells the operator, the old secret stops authenticating and the new one works. A
/// third apply of the same file rotates nothing and says nothing.
#[tokio::test]
async fn a_changed_key_secret_is_rotated_and_reported_on_stderr() {
    const OLD: &str = "ek_nofilesNOFILES1234567890abcdefghijkl";
    const NEW: &str = "ek_rotatedROTATED1234567890abcdefghijkl";
    let nofiles = |secret: &str| {
        demo_with(|m| {
            m["roles"].as_array_mut().unwrap().push(json!({
                "name": "nofiles",
                "collection_permissions": {"articles": {"read": true}}
            }));
            m["api_keys"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "nf", "role": "nofiles", "secret": secret}));
        })
    };
    let test = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    let first = test.apply(&write(dir.path(), "manifest.json", &nofiles(OLD)));
    assert_eq!(first["api_keys"]["nf"], OLD);

    let second = write(dir.path(), "manifest2.json", &nofiles(NEW));
    let args = ["apply", second.to_str().unwrap()];
    let output = test.run(&args);
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(checked_ok(&args, output), "{\"api_keys\":{}}\n");
    assert_eq!(
        stderr,
        "vellum-admin: API key \"nf\": secret rotated; the previous secret no longer \
         authenticates\n"
    );
    assert!(!stderr.contains("ek_"), "no secret on stderr: {stderr}");

    // What the server checks for `Authorization: Bearer <secret>`: the key found by its key id,
    // then the digest (KeyRecord::check).
    let now = time::OffsetDateTime::now_utc();
    let old = ApiKeySecret::parse(OLD).unwrap();
    assert!(
        keys::find_api_key(test.conn(), &old.key_id())
            .await
            .unwrap()
            .is_none(),
        "the old secret finds no key"
    );
    let new = ApiKeySecret::parse(NEW).unwrap();
    let found = keys::find_api_key(test.conn(), &new.key_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.record.check(&new, now), KeyCheck::Valid);
    assert_eq!(found.record.role, "nofiles");

    // The same file again: nothing rotated, nothing said, nothing changed.
    let before = test.snapshot().await;
    let output = test.run(&args);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(checked_ok(&args, output), "{\"api_keys\":{}}\n");
    test.snapshot()
        .await
        .assert_same(&before, "applying the rotated manifest again");
}

// ---------------------------------------------------------------------------------------------
// invalid manifests
// ---------------------------------------------------------------------------------------------

/// demo.json changed by `change`.
fn demo_with(change: impl FnOnce(&mut Value)) -> Value {
    let mut m = demo();
    change(&mut m);
    m
}

/// demo.json with `change`, its seed articles linking no author or tag. The seeds link the
/// demo's authors and tags by id, and a write must link items that exist; on PostgreSQL a
/// refused apply consumes the ids of the items it seeded before failing (sequences do not roll
/// back), so a case that fails after an article has been written must not depend on them.
fn unlinked_demo_with(change: impl FnOnce(&mut Value)) -> Value {
    demo_with(|m| {
        for article in m["items"]["articles"].as_array_mut().unwrap() {
            let data = article["data"].as_object_mut().unwrap();
            data.remove("author");
            data.remove("tags");
        }
        change(m);
    })
}

/// `(manifest, the path stderr must name, what it must say about it)`. An empty path is the
/// document itself. Every manifest is demo.json with one mistake, so everything before the
/// mistake is valid and would be written if the apply were not one transaction.
fn invalid_cases() -> Vec<(Value, &'static str, &'static str)> {
    vec![
        // Collections and fields (JSON Schema, then the domain crate, then the database).
        (
            demo_with(|m| m["collections"][2]["fields"][3]["type"] = json!("strng")),
            "collections[2].fields[3].type",
            "unknown field type \"strng\"",
        ),
        (
            demo_with(|m| m["collections"][1]["slug"] = json!("Tags!")),
            "collections[1].slug",
            "\"Tags!\" does not match",
        ),
        (
            demo_with(|m| m["collections"][0]["fields"][1]["name"] = json!("name")),
            "collections[0].fields[1].name",
            "duplicate field name \"name\"",
        ),
        (
            demo_with(|m| {
                m["collections"][2]["fields"][6]["settings"]["related_collection"] =
                    json!("writers");
            }),
            "collections[2].fields[6].settings.related_collection",
            "unknown collection \"writers\"",
        ),
        (
            demo_with(|m| m["collections"][2]["fields"][2]["settings"]["options"] = json!("draft")),
            "collections[2].fields[2].settings.options",
            "must be an array",
        ),
        (
            demo_with(|m| {
                m["collections"][0]["fields"][2]["settings"]["validation_rules"][0]["operator"] =
                    json!("uniq");
            }),
            "collections[0].fields[2].settings.validation_rules[0].operator",
            "unknown validation operator \"uniq\"",
        ),
        // Roles.
        (
            demo_with(|m| m["roles"][0]["description"] = json!("everyone")),
            "roles[0]",
            "Additional properties are not allowed ('description' was unexpected)",
        ),
        (
            demo_with(|m| {
                m["roles"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "super-admin"}));
            }),
            "roles[2].name",
            "super-admin bypasses every gate",
        ),
        (
            demo_with(|m| {
                m["roles"][1]["collection_permissions"]["articles"]["publish"] = json!(true);
            }),
            "roles[1].collection_permissions.articles",
            "Additional properties are not allowed ('publish' was unexpected)",
        ),
        (
            demo_with(|m| {
                m["roles"][1]["collection_permissions"]["ghosts"] = json!({"read": true});
            }),
            "roles[1].collection_permissions.ghosts",
            "unknown collection \"ghosts\"",
        ),
        (
            demo_with(|m| {
                m["roles"][0]["collection_permissions"]["articles"]["rules"]["item_filter"] =
                    json!({"status": {"_like": "pub%"}});
            }),
            "roles[0].collection_permissions.articles.rules.item_filter",
            "item_filter[status][_like]: unknown operator \"_like\"",
        ),
        // API keys.
        (
            demo_with(|m| m["api_keys"][0]["role"] = json!("ghost")),
            "api_keys[0].role",
            "unknown role \"ghost\"",
        ),
        (
            demo_with(|m| {
                m["api_keys"][0]["secret"] = json!("xk_0123456789abcdef0123456789abcdef");
            }),
            "api_keys[0].secret",
            "does not match \"^ek_\"",
        ),
        (
            demo_with(|m| m["api_keys"][0]["secret"] = json!("ek_0123456789abcdef0123456789abcde")),
            "api_keys[0].secret",
            "is shorter than 35 characters",
        ),
        (
            demo_with(|m| {
                m["api_keys"][0]["ip_allowlist"] = json!(["127.0.0.1/32", "10.0.0.0/33"]);
            }),
            "api_keys[0].ip_allowlist",
            "invalid IP allowlist entry \"10.0.0.0/33\"",
        ),
        (
            demo_with(|m| m["api_keys"][0]["expires_at"] = json!("next tuesday")),
            "api_keys[0].expires_at",
            "must be an RFC 3339 date-time",
        ),
        // Folders.
        (
            demo_with(|m| m["folders"][0]["parent"] = json!("drafts")),
            "folders[0].parent",
            "\"drafts\" is not a folder listed earlier",
        ),
        (
            demo_with(|m| m["folders"][1]["access"] = json!("secret")),
            "folders[1].access",
            "\"secret\" is not one of \"public\", \"private\" or null",
        ),
        // Settings.
        (
            demo_with(|m| {
                m["settings"]["public_api_allowed_origins"] =
                    json!(["https://app.example.com/path"]);
            }),
            "settings.public_api_allowed_origins",
            "invalid origin \"https://app.example.com/path\": an origin has no path",
        ),
        (
            demo_with(|m| m["settings"]["default_locale"] = json!("fr")),
            "settings",
            "default locale \"fr\" is not one of the enabled locales",
        ),
        (
            demo_with(|m| m["settings"]["files_max_upload_bytes"] = json!(-5)),
            "settings.files_max_upload_bytes",
            "-5 is less than the minimum of 0",
        ),
        // Seed items (authors and tags before them are valid and must be rolled back).
        (
            demo_with(|m| m["items"]["articles"][0]["data"]["status"] = json!("archived")),
            "items.articles[0].data.status",
            "The status field must be one of the field's options.",
        ),
        (
            unlinked_demo_with(|m| m["items"]["articles"][1]["data"]["views"] = json!("many")),
            "items.articles[1].data.views",
            "The views field must be a number.",
        ),
        (
            unlinked_demo_with(|m| m["items"]["articles"][2]["data"]["colour"] = json!("red")),
            "items.articles[2].data.colour",
            "The colour field does not exist.",
        ),
        (
            demo_with(|m| m["items"]["authors"][1]["data"]["email"] = json!("ada@example.com")),
            "items.authors[1].data.email",
            "The email has already been taken.",
        ),
        (
            unlinked_demo_with(|m| m["items"]["ghosts"] = json!([{"data": {}}])),
            "items.ghosts",
            "unknown collection \"ghosts\"",
        ),
        // The document itself.
        (
            demo_with(|m| m["collection"] = json!([])),
            "",
            "Additional properties are not allowed ('collection' was unexpected)",
        ),
    ]
}

#[tokio::test]
async fn invalid_manifests_exit_non_zero_name_the_path_and_change_nothing() {
    let test = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    // The demo project without its seed items: a refused manifest that reaches the items has
    // written every collection, role, key and folder and some items before it fails.
    let base = demo_with(|m| {
        m.as_object_mut().unwrap().remove("items");
    });
    test.apply(&write(dir.path(), "base.json", &base));
    let before = test.snapshot().await;
    assert_eq!(before.counts()["items"], 0);

    let cases = invalid_cases();
    assert!(cases.len() >= 10);
    for (i, (manifest, path, message)) in cases.into_iter().enumerate() {
        let file = write(dir.path(), &format!("invalid-{i}.json"), &manifest);
        let args = ["apply", file.to_str().unwrap()];
        let stderr = test.fails(&args);
        let expected = if path.is_empty() {
            format!("vellum-admin: {message}")
        } else {
            format!("vellum-admin: {path}: ")
        };
        assert!(stderr.starts_with(&expected), "case {i} ({path}): {stderr}");
        assert!(stderr.contains(message), "case {i} ({path}): {stderr}");
        test.snapshot()
            .await
            .assert_same(&before, &format!("case {i} ({path})"));
    }

    // The same manifests are still refused on an empty database, which stays without a project.
    let empty = TestDatabase::new().await;
    let file = write(dir.path(), "strng.json", &invalid_cases()[0].0);
    let stderr = empty.fails(&["apply", file.to_str().unwrap()]);
    assert!(
        stderr.contains("collections[2].fields[3].type: unknown field type \"strng\""),
        "{stderr}"
    );
    let exported = empty.export(true);
    assert_eq!(exported["collections"], json!([]));
    assert_eq!(exported["api_keys"], json!([]));
    assert_eq!(exported["folders"], json!([]));
    assert_eq!(exported["items"], json!({}));
}

/// The contract's own example message, end to end.
#[tokio::test]
async fn the_type_error_reads_like_the_contract() {
    let test = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    let manifest = json!({"collections": [
        {"slug": "authors", "fields": [{"name": "name", "type": "string"}]},
        {"slug": "articles", "fields": [
            {"name": "title", "type": "string"},
            {"name": "status", "type": "string"},
            {"name": "body", "type": "markdown"},
            {"name": "subtitle", "type": "strng"}
        ]}
    ]});
    let file = write(dir.path(), "m.json", &manifest);
    let stderr = test.fails(&["apply", file.to_str().unwrap()]);
    assert_eq!(
        stderr,
        "vellum-admin: collections[1].fields[3].type: unknown field type \"strng\"\n"
    );
}

/// A second collection with the slug of the first is refused like a duplicate field name (it
/// once silently replaced the fields of the first on a database that had the project).
#[tokio::test]
async fn a_duplicate_collection_slug_is_refused() {
    let test = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    test.apply(&demo_path());
    let before = test.snapshot().await;
    let manifest = demo_with(|m| m["collections"][1]["slug"] = json!("authors"));
    let file = write(dir.path(), "dup.json", &manifest);
    let stderr = test.fails(&["apply", file.to_str().unwrap()]);
    assert!(
        stderr.starts_with("vellum-admin: collections[1].slug: "),
        "{stderr}"
    );
    assert!(stderr.contains("duplicate"), "{stderr}");
    test.snapshot()
        .await
        .assert_same(&before, "duplicate collection slug");
}

/// A field rule naming a field the collection does not have is a typo that leaves the intended
/// field readable (here `internal_note` instead of `internal_notes` on the public role); it must
/// be refused, naming the exact path.
#[tokio::test]
async fn rules_naming_an_unknown_field_are_refused() {
    let test = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    test.apply(&demo_path());
    let before = test.snapshot().await;
    let manifest = demo_with(|m| {
        m["roles"][0]["collection_permissions"]["articles"]["rules"]["fields"] =
            json!({"internal_note": {"read": false}});
    });
    let file = write(dir.path(), "typo.json", &manifest);
    let stderr = test.fails(&["apply", file.to_str().unwrap()]);
    assert!(
        stderr.starts_with(
            "vellum-admin: roles[0].collection_permissions.articles.rules.fields.internal_note: "
        ),
        "{stderr}"
    );
    test.snapshot()
        .await
        .assert_same(&before, "rule on an unknown field");
}

// ---------------------------------------------------------------------------------------------
// export / apply round trip
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn export_then_apply_on_an_empty_database_reproduces_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let a = TestDatabase::new().await;
    let secret_a = a.apply(&demo_path())["api_keys"]["demo-editor"]
        .as_str()
        .unwrap()
        .to_owned();
    let schema_text = a.ok(&["export"]);
    let full_text = a.ok(&["export", "--items"]);
    for text in [&schema_text, &full_text] {
        assert!(!text.contains(&secret_a), "an export holds a secret");
    }
    let schema_a = parse(&["export"], &schema_text);
    let full_a = parse(&["export", "--items"], &full_text);
    assert_eq!(full_a["items"]["articles"].as_array().unwrap().len(), 3);

    // With items: B is A, item for item.
    let b = TestDatabase::new().await;
    let report_b = b.apply(&write(dir.path(), "full.json", &full_a));
    // The key is listed without its secret, so B creates it with a new one.
    let secret_b = report_b["api_keys"]["demo-editor"].as_str().unwrap();
    assert!(secret_b.starts_with("ek_"));
    assert_ne!(secret_b, secret_a);
    assert_eq!(b.export(true), full_a);
    assert_eq!(b.export(false), schema_a);
    assert_eq!(
        b.snapshot().await.counts(),
        a.snapshot().await.counts(),
        "row counts of A and B"
    );

    // Without items: the same schema, roles, keys, folders and settings, and no items.
    let c = TestDatabase::new().await;
    c.apply(&write(dir.path(), "schema.json", &schema_a));
    assert_eq!(c.export(false), schema_a);
    assert_eq!(c.export(true)["items"], json!({}));

    // And the export of B applied to B changes nothing.
    let before = b.snapshot().await;
    assert_eq!(
        b.apply(&write(dir.path(), "again.json", &full_a)),
        json!({"api_keys": {}})
    );
    b.snapshot()
        .await
        .assert_same(&before, "applying the export again");
}

// ---------------------------------------------------------------------------------------------
// unreadable input
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn malformed_or_missing_manifests_fail_with_a_clear_message() {
    let test = TestDatabase::new().await;
    test.apply(&demo_path());
    let before = test.snapshot().await;
    let dir = tempfile::tempdir().unwrap();

    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "{\"collections\": [\n").unwrap();
    let shown = malformed.to_str().unwrap();
    let stderr = test.fails(&["apply", shown]);
    assert!(
        stderr.starts_with(&format!("vellum-admin: {shown}: not valid JSON: ")),
        "{stderr}"
    );
    assert!(stderr.contains("line 2"), "{stderr}");

    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let shown = empty.to_str().unwrap();
    let stderr = test.fails(&["apply", shown]);
    assert!(
        stderr.starts_with(&format!("vellum-admin: {shown}: not valid JSON: ")),
        "{stderr}"
    );

    let missing = dir.path().join("no-such-manifest.json");
    let shown = missing.to_str().unwrap();
    let stderr = test.fails(&["apply", shown]);
    assert!(
        stderr.starts_with(&format!("vellum-admin: {shown}: ")),
        "{stderr}"
    );
    assert!(stderr.contains("No such file or directory"), "{stderr}");

    let args = ["apply", "-"];
    let stderr = checked_failure(&args, test.run_with_stdin(&args, b"collections: []"));
    assert!(
        stderr.starts_with("vellum-admin: -: not valid JSON: "),
        "{stderr}"
    );

    // Valid JSON that is not a manifest at all.
    let stderr = checked_failure(&args, test.run_with_stdin(&args, b"[1, 2]"));
    assert!(stderr.contains("is not of type \"object\""), "{stderr}");

    test.snapshot()
        .await
        .assert_same(&before, "unreadable manifests");
}

#[tokio::test]
async fn a_missing_manifest_does_not_touch_an_empty_database() {
    let test = TestDatabase::new().await;
    let stderr = test.fails(&["apply", "/nonexistent/vellum/manifest.json"]);
    assert!(
        stderr.starts_with("vellum-admin: /nonexistent/vellum/manifest.json: "),
        "{stderr}"
    );
    // The file is read before the database is opened: not even migrated.
    assert_eq!(table_names(test.conn()).await, Vec::<String>::new());
}

/// The tests above ran on the backend the environment selects; say which, so a run without
/// PostgreSQL is visible as such.
#[tokio::test]
async fn the_backend_is_the_one_the_environment_selects() {
    let test = TestDatabase::new().await;
    test.apply(&demo_path());
    let expected = if std::env::var(vellum_storage::testing::POSTGRES_ENV)
        .is_ok_and(|u| !u.trim().is_empty())
    {
        DbBackend::Postgres
    } else {
        DbBackend::Sqlite
    };
    assert_eq!(test.conn().get_database_backend(), expected);
    assert!(count(test.conn(), "collections").await > 0);
}
