//! `vellum-admin explain --dry-run MANIFEST`, black-box: the real binary against a fresh database
//! (SQLite in a temporary directory, or a fresh PostgreSQL database when
//! `VELLUM_TEST_POSTGRES_URL` is set). Each test first applies [`base`] with `apply`, then
//! previews a changed manifest.
//!
//! Covered: fields opened to `public` reported as exactly that gain with the number of items its
//! item filter admits (counted by the server's list query); a removed grant reported as a loss; an
//! item filter change with the items that become visible; an identical manifest (the project's
//! own export) reporting no change for every role; nothing written (every row of every table and
//! `export --items` identical after dry runs that would add a collection, seed items, a role and a
//! key); an invalid manifest refused like `apply` refuses it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, JsonValue, Statement};
use serde_json::{Value, json};
use vellum_storage::testing::TestDb;

/// A database for one test, and a directory for its manifests.
struct TestDatabase {
    url: String,
    db: TestDb,
    dir: tempfile::TempDir,
}

impl TestDatabase {
    /// A fresh database with [`base`] applied.
    async fn with_base() -> Self {
        let db = TestDb::empty().await.unwrap();
        let test = Self {
            url: db.url().to_owned(),
            db,
            dir: tempfile::tempdir().unwrap(),
        };
        let path = test.write("base.json", &base());
        test.ok(&["apply", path.to_str().unwrap()]);
        test
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        assert_cmd::cargo::cargo_bin_cmd!("vellum-admin")
            .env_remove("VELLUM_DATABASE_URL")
            .env_remove("VELLUM_REDIS_URL")
            .current_dir(self.dir.path())
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .write_stdin(stdin.to_owned())
            .output()
            .unwrap()
    }

    /// Runs the command, asserts it succeeded cleanly and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args, "");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?} failed: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn write(&self, name: &str, manifest: &Value) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, serde_json::to_string_pretty(manifest).unwrap()).unwrap();
        path
    }

    /// `explain --dry-run` of `manifest`, as text.
    fn dry_run(&self, manifest: &Value) -> String {
        let path = self.write("preview.json", manifest);
        self.ok(&["explain", "--dry-run", path.to_str().unwrap()])
    }

    /// `explain --dry-run --json` of `manifest`, parsed.
    fn dry_run_json(&self, manifest: &Value) -> Value {
        let path = self.write("preview.json", manifest);
        let stdout = self.ok(&["explain", "--dry-run", path.to_str().unwrap(), "--json"]);
        assert_eq!(stdout.lines().count(), 1, "one JSON document: {stdout}");
        serde_json::from_str(&stdout).unwrap()
    }

    /// What `export --items` prints and every row of every table, sorted.
    async fn state(&self) -> (Value, BTreeMap<String, Vec<String>>) {
        let export = serde_json::from_str(&self.ok(&["export", "--items"])).unwrap();
        (export, table_rows(&self.db.conn).await)
    }
}

async fn table_rows(db: &vellum_storage::Database) -> BTreeMap<String, Vec<String>> {
    let backend = db.get_database_backend();
    let names = match backend {
        DbBackend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        }
        _ => {
            "SELECT table_name AS name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        }
    };
    let mut out = BTreeMap::new();
    for row in db
        .query_all_raw(Statement::from_string(backend, names))
        .await
        .unwrap()
    {
        let table: String = row.try_get("", "name").unwrap();
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

/// The public role's grant on articles in [`base`]: read, three fields hidden, published only.
fn public_grant() -> Value {
    json!({
        "read": true,
        "rules": {
            "fields": {
                "body": {"read": false},
                "summary": {"read": false},
                "author_email": {"read": false},
                "notes": {"read": false}
            },
            "item_filter": {"status": {"_eq": "published"}}
        }
    })
}

/// `articles` (five published and two draft items), `public` reading the published ones without
/// four of the fields, `editor` with every action and two files flags.
fn base() -> Value {
    let field = |name: &str| json!({"name": name, "type": "string"});
    let article = |n: u32, status: &str| json!({"data": {"title": format!("Article {n}"), "status": status, "body": "…"}});
    let fields = [
        "title",
        "status",
        "body",
        "summary",
        "author_email",
        "notes",
    ]
    .map(field);
    json!({
        "collections": [{
            "slug": "articles",
            "name": "Articles",
            "is_singleton": false,
            "fields": fields,
        }],
        "roles": [
            {
                "name": "public",
                "collection_permissions": {"articles": public_grant()},
            },
            {
                "name": "editor",
                "collection_permissions": {"articles": {
                    "create": true, "read": true, "update": true, "delete": true
                }},
                "file_permissions": {"read": true, "delete": true}
            }
        ],
        "items": {"articles": [
            article(1, "published"), article(2, "published"), article(3, "draft"),
            article(4, "published"), article(5, "published"), article(6, "draft"),
            article(7, "published"),
        ]}
    })
}

/// The role named `name` in the JSON output.
fn role<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == name)
        .unwrap_or_else(|| panic!("no role {name} in {report}"))
}

#[tokio::test]
async fn dry_run_reports_fields_opened_to_public_with_the_items_it_reads() {
    let test = TestDatabase::with_base().await;
    let mut open = base();
    open["roles"][0]["collection_permissions"]["articles"]["rules"]["fields"] =
        json!({"notes": {"read": false}});

    let text = test.dry_run(&open);
    assert_eq!(
        text,
        "no change for role admin\n\
         no change for role editor\n\
         public would gain read on 3 fields across 5 items in articles: author_email, body, \
         summary\n\
         no change for role reader\n\
         no change for role super-admin\n",
    );
    let report = test.dry_run_json(&open);
    assert_eq!(
        role(&report, "public"),
        &json!({
            "role": "public",
            "created": false,
            "changes": [{
                "type": "fields", "collection": "articles", "action": "read", "change": "gain",
                "fields": ["author_email", "body", "summary"], "items": 5
            }]
        })
    );
}

#[tokio::test]
async fn dry_run_reports_a_removed_grant_and_a_widened_filter() {
    let test = TestDatabase::with_base().await;
    let mut changed = base();
    changed["roles"][1]["collection_permissions"]["articles"]["delete"] = json!(false);
    changed["roles"][1]["file_permissions"] = json!({"read": true});
    changed["roles"][0]["collection_permissions"]["articles"]["rules"]["item_filter"] =
        json!({"status": {"_in": ["published", "draft"]}});

    let text = test.dry_run(&changed);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"editor would lose delete on articles"),
        "{text}"
    );
    assert!(
        lines.contains(&"editor would lose delete on files"),
        "{text}"
    );
    assert!(
        lines.contains(
            &"public would gain read on 2 items in articles (item filter: 5 → 7 visible)"
        ),
        "{text}"
    );

    let report = test.dry_run_json(&changed);
    assert_eq!(
        role(&report, "editor")["changes"],
        json!([
            {"type": "grant", "collection": "articles", "action": "delete", "change": "lose",
             "fields": [], "items": null},
            {"type": "files", "action": "delete", "change": "lose"}
        ])
    );
    assert_eq!(
        role(&report, "public")["changes"],
        json!([{
            "type": "item_filter", "collection": "articles",
            "before": {"status": {"_eq": "published"}},
            "after": {"status": {"_in": ["published", "draft"]}},
            "visible_before": 5, "visible_after": 7, "became_visible": 2, "became_invisible": 0
        }])
    );

    // A grant that goes away entirely is a loss of read on every item it showed.
    let mut closed = base();
    closed["roles"][0]["collection_permissions"] = json!({});
    let text = test.dry_run(&closed);
    assert!(
        text.lines()
            .any(|l| l == "public would lose read on articles (2 fields across 5 items)"),
        "{text}"
    );
}

#[tokio::test]
async fn dry_run_of_the_current_project_reports_no_change() {
    let test = TestDatabase::with_base().await;
    let exported: Value = serde_json::from_str(&test.ok(&["export"])).unwrap();
    for manifest in [base(), exported] {
        assert_eq!(
            test.dry_run(&manifest),
            "no change for role admin\nno change for role editor\nno change for role public\n\
             no change for role reader\nno change for role super-admin\n"
        );
        let report = test.dry_run_json(&manifest);
        for r in report["roles"].as_array().unwrap() {
            assert_eq!((&r["created"], &r["changes"]), (&json!(false), &json!([])));
        }
    }
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let test = TestDatabase::with_base().await;
    let before = test.state().await;

    // Everything `apply` can write: settings, a new collection with seed items, a new role
    // reading it, a key, a folder, and changed grants.
    let mut manifest = base();
    manifest["settings"] = json!({"public_api_allowed_origins": ["https://example.com"]});
    manifest["collections"].as_array_mut().unwrap().push(
        json!({"slug": "pages", "name": "Pages", "is_singleton": false,
                     "fields": [{"name": "heading", "type": "string"}]}),
    );
    manifest["items"]["pages"] =
        json!([{"data": {"heading": "Home"}}, {"data": {"heading": "About"}}]);
    manifest["roles"].as_array_mut().unwrap().push(json!({
        "name": "viewer",
        "collection_permissions": {"pages": {"read": true}},
        "file_permissions": {"read": true}
    }));
    manifest["api_keys"] = json!([{"name": "site-build", "role": "viewer"}]);
    manifest["folders"] = json!([{"name": "press"}]);
    manifest["roles"][1]["collection_permissions"]["articles"]["delete"] = json!(false);

    let text = test.dry_run(&manifest);
    for line in [
        "role viewer would be created",
        "viewer would gain read on pages (1 field across 2 items)",
        "viewer would gain read on files",
        "editor would lose delete on articles",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in {text}");
    }
    test.dry_run_json(&manifest);
    // From standard input too, as `apply -` reads it.
    let output = test.run(
        &["explain", "--dry-run", "-"],
        &serde_json::to_string(&manifest).unwrap(),
    );
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), text);

    let after = test.state().await;
    assert_eq!(before.0, after.0, "export --items");
    assert_eq!(before.1, after.1, "table rows");

    // What the dry run announced is what `apply` then does.
    let path = test.write("real.json", &manifest);
    test.ok(&["apply", path.to_str().unwrap()]);
    assert!(
        test.dry_run(&manifest)
            .lines()
            .all(|l| l.starts_with("no change for role ")),
        "after apply"
    );
}

#[tokio::test]
async fn an_invalid_manifest_is_refused_as_apply_refuses_it() {
    let test = TestDatabase::with_base().await;
    let mut bad = base();
    bad["roles"][0]["collection_permissions"]["articles"]["rules"]["fields"] =
        json!({"bodyy": {"read": false}});
    let path = test.write("bad.json", &bad);
    let output = test.run(&["explain", "--dry-run", path.to_str().unwrap()], "");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "roles[0].collection_permissions.articles.rules.fields.bodyy: collection \
             \"articles\" has no field \"bodyy\""
        ),
        "{stderr}"
    );
    // --dry-run takes a manifest and no role, collection or action.
    for args in [
        &["explain", "--dry-run"][..],
        &["explain", "--dry-run", "x.json", "--role", "public"],
    ] {
        assert!(!test.run(args, "").status.success(), "{args:?}");
    }
}
