//! `vellum-admin keys`, `roles`, `settings` and `explain`, black-box: each test runs the real
//! binary against a fresh database: SQLite in a temporary directory by default, and a fresh
//! PostgreSQL database when `VELLUM_TEST_POSTGRES_URL` is set (`vellum_storage::testing::TestDb::empty`, whose URL the binary gets). The database starts empty: every command must migrate and seed it itself.
//! Fixtures (a collection, items, a role with grants) are written through the library crates.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::Output;

use sea_orm::DbBackend;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use vellum_domain::{FieldDef, WriteContext, WriteMode, prepare_write};
use vellum_policy::{ApiKeySecret, Role};
use vellum_storage::collections::{CollectionDef, save_collection};
use vellum_storage::testing::{POSTGRES_ENV, TestDb};
use vellum_storage::{Database, items, project, roles, seed};

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

    /// Runs `vellum-admin --database-url <this database> ARGS…`, with no database variable in
    /// its environment and a working directory where the default SQLite path would be harmless.
    fn run(&self, args: &[&str]) -> Output {
        let cwd = tempfile::tempdir().unwrap();
        assert_cmd::cargo::cargo_bin_cmd!("vellum-admin")
            .env_remove("VELLUM_DATABASE_URL")
            .env_remove("VELLUM_REDIS_URL")
            .current_dir(cwd.path())
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .output()
            .unwrap()
    }

    /// As [`TestDatabase::run`], with `stdin` as standard input and `env` added to the
    /// environment (`VELLUM_ADMIN_PASSWORD` is removed unless `env` sets it).
    fn run_with(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        let cwd = tempfile::tempdir().unwrap();
        let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("vellum-admin");
        cmd.env_remove("VELLUM_DATABASE_URL")
            .env_remove("VELLUM_REDIS_URL")
            .env_remove("VELLUM_ADMIN_PASSWORD")
            .current_dir(cwd.path())
            .arg("--database-url")
            .arg(&self.url)
            .args(args)
            .write_stdin(stdin.to_owned());
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.output().unwrap()
    }

    /// Runs the command, asserts it succeeded and returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "vellum-admin {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs the command, asserts it succeeded and parses its stdout as JSON.
    fn json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
    }

    /// Runs the command, asserts it failed with nothing on stdout and returns its stderr.
    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "vellum-admin {args:?} succeeded: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(output.stdout.is_empty(), "{args:?} printed a result");
        String::from_utf8(output.stderr).unwrap()
    }

    async fn connect(&self) -> Database {
        self.db.conn.clone()
    }
}

/// Ids of the `published` and the `draft` article written by [`articles_and_editor`].
struct Fixture {
    published: i64,
    draft: i64,
}

/// A migrated database holding `articles` (title, status, internal_notes) with one published and
/// one draft article, and the role `editor`: read and update on articles, `internal_notes`
/// hidden and not writable, item filter `status = published`, files read.
async fn articles_and_editor(test: &TestDatabase) -> Fixture {
    let db = test.connect().await;
    vellum_storage::migrate(&db).await.unwrap();
    seed::seed_system(&db).await.unwrap();
    let fields = [
        json!({"name": "title", "type": "string", "translatable": true}),
        json!({"name": "status", "type": "string"}),
        json!({"name": "internal_notes", "type": "string"}),
    ]
    .iter()
    .map(|f| FieldDef::from_json(f).unwrap())
    .collect();
    let (articles, _) = save_collection(
        &db,
        &CollectionDef {
            slug: "articles".parse().unwrap(),
            name: "Articles".to_owned(),
            is_singleton: false,
            fields,
        },
    )
    .await
    .unwrap();
    let locales = project::load_settings(&db)
        .await
        .unwrap()
        .locales()
        .unwrap();
    let hash_key = project::hash_key(&db).await.unwrap();
    let ctx = WriteContext {
        locales: &locales,
        locale: locales.default_locale(),
        hash_key: &hash_key,
    };
    let mut ids = Vec::new();
    for status in ["published", "draft"] {
        let input = json!({"title": format!("A {status} article"), "status": status});
        let write = prepare_write(
            articles.schema(),
            input.as_object().unwrap(),
            WriteMode::Create,
            &ctx,
        )
        .unwrap();
        ids.push(items::seed_item(&db, &articles, &write).await.unwrap().id);
    }
    let editor = Role::from_json(
        "editor",
        &json!({
            "collection_permissions": {"articles": {
                "read": true, "update": true,
                "rules": {
                    "fields": {"internal_notes": {"read": false, "update": false}},
                    "item_filter": {"status": {"_eq": "published"}}
                }
            }},
            "file_permissions": {"read": true}
        }),
    )
    .unwrap();
    roles::save_role(&db, &editor).await.unwrap();
    db.close().await.unwrap();
    Fixture {
        published: ids[0],
        draft: ids[1],
    }
}

// ---------------------------------------------------------------------------------------------
// keys
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_created_key_shows_its_secret_once_and_is_stored_only_as_a_digest() {
    let test = TestDatabase::new().await;
    let created = test.json(&[
        "keys",
        "create",
        "--role",
        "reader",
        "--name",
        "site-build",
        "--ip",
        "10.1.2.3/8",
        "--ip",
        "::1",
        "--expires-at",
        "2030-01-01T12:00:00+02:00",
    ]);
    let secret = created["secret"].as_str().unwrap().to_owned();
    let parsed = ApiKeySecret::parse(&secret).unwrap();
    assert_eq!(
        created,
        json!({
            "name": "site-build",
            "role": "reader",
            "key_id": parsed.key_id().as_str(),
            "secret": secret,
        })
    );
    let digest = parsed.digest().to_hex();

    let list_text = test.ok(&["keys", "list"]);
    assert!(!list_text.contains(&secret), "list shows the secret");
    assert!(!list_text.contains(&digest), "list shows the digest");
    let list: Value = serde_json::from_str(&list_text).unwrap();
    let created_at = list[0]["created_at"].as_str().unwrap().to_owned();
    assert_eq!(
        list,
        json!([{
            "name": "site-build",
            "key_id": parsed.key_id().as_str(),
            "role": "reader",
            "ip_allowlist": ["10.0.0.0/8", "::1/128"],
            "expires_at": "2030-01-01T10:00:00Z",
            "revoked_at": null,
            "last_used_at": null,
            "created_at": created_at,
        }])
    );

    // What the database holds: the key id and the SHA-256 digest, never the secret.
    let db = test.connect().await;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT key_id, digest FROM api_keys WHERE name = 'site-build'",
        ))
        .await
        .unwrap()
        .unwrap();
    let stored_digest: String = row.try_get("", "digest").unwrap();
    assert_ne!(stored_digest, secret);
    assert_eq!(stored_digest, digest);
    assert_eq!(
        row.try_get::<String>("", "key_id").unwrap(),
        parsed.key_id().as_str()
    );
    db.close().await.unwrap();
    if let Some(file) = test.url.strip_prefix("sqlite://") {
        // Nowhere in the SQLite files (database and write-ahead log) either.
        let file = std::path::Path::new(file.split('?').next().unwrap());
        for entry in std::fs::read_dir(file.parent().unwrap()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "the secret is stored in clear text"
            );
        }
    }
}

#[tokio::test]
async fn a_revoked_key_is_listed_as_revoked() {
    let test = TestDatabase::new().await;
    test.json(&["keys", "create", "--role", "reader", "--name", "old"]);
    test.json(&["keys", "create", "--role", "admin", "--name", "new"]);
    let revoked = test.json(&["keys", "revoke", "old"]);
    assert_eq!(revoked["name"], "old");
    let revoked_at = revoked["revoked_at"].as_str().unwrap().to_owned();

    let list = test.json(&["keys", "list"]);
    let summary: Vec<(&str, &Value)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap(), &k["revoked_at"]))
        .collect();
    assert_eq!(
        summary,
        [("old", &json!(revoked_at)), ("new", &Value::Null)]
    );
    // Revoking again keeps the first revocation time.
    assert_eq!(
        test.json(&["keys", "revoke", "old"])["revoked_at"],
        revoked_at
    );

    let stderr = test.fails(&["keys", "revoke", "missing"]);
    assert!(stderr.contains("no API key named \"missing\""), "{stderr}");
}

#[tokio::test]
async fn invalid_key_flags_are_refused_naming_the_flag_and_create_nothing() {
    let test = TestDatabase::new().await;
    test.json(&["keys", "create", "--role", "reader", "--name", "taken"]);
    let cases: [(&[&str], &str); 6] = [
        (
            &["--role", "nobody", "--name", "k"],
            "--role: no role named \"nobody\"",
        ),
        (
            &["--role", "reader", "--name", "k", "--ip", "10.0.0.0/33"],
            "--ip: invalid IP allowlist entry \"10.0.0.0/33\"",
        ),
        (
            &["--role", "reader", "--name", "k", "--ip", "localhost"],
            "--ip: invalid IP allowlist entry \"localhost\"",
        ),
        (
            &[
                "--role",
                "reader",
                "--name",
                "k",
                "--expires-at",
                "tomorrow",
            ],
            "--expires-at: \"tomorrow\" is not an RFC 3339 date-time",
        ),
        (
            &[
                "--role",
                "reader",
                "--name",
                "k",
                "--expires-at",
                "9999-12-31T23:00:00-02:00",
            ],
            "--expires-at: \"9999-12-31T23:00:00-02:00\" is past year 9999 in UTC",
        ),
        (
            &["--role", "reader", "--name", "taken"],
            "--name: an API key named \"taken\" already exists",
        ),
    ];
    for (flags, message) in cases {
        let mut args = vec!["keys", "create"];
        args.extend_from_slice(flags);
        let stderr = test.fails(&args);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let names: Vec<Value> = test
        .json(&["keys", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].clone())
        .collect();
    assert_eq!(names, [json!("taken")]);
}

// ---------------------------------------------------------------------------------------------
// roles
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn roles_list_shows_the_seeded_roles_on_an_empty_database() {
    let test = TestDatabase::new().await;
    let list = test.json(&["roles", "list", "--json"]);
    let names: Vec<(&str, bool)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["is_system"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("super-admin", true),
            ("admin", true),
            ("reader", true),
            ("public", true)
        ]
    );

    let table = test.ok(&["roles", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5, "{table}");
    assert!(lines[0].starts_with("NAME"), "{table}");
    assert!(lines[0].contains("SYSTEM"), "{table}");
    for (line, name) in lines[1..]
        .iter()
        .zip(["super-admin", "admin", "reader", "public"])
    {
        assert!(line.starts_with(name), "{table}");
    }
}

#[tokio::test]
async fn roles_show_prints_both_matrices_and_the_rules() {
    let test = TestDatabase::new().await;
    articles_and_editor(&test).await;

    assert_eq!(
        test.json(&["roles", "show", "editor", "--json"]),
        json!({
            "name": "editor",
            "collection_permissions": {"articles": {
                "read": true, "update": true,
                "rules": {
                    "fields": {"internal_notes": {"read": false, "update": false}},
                    "item_filter": {"status": {"_eq": "published"}}
                }
            }},
            "file_permissions": {"read": true}
        })
    );

    let table = test.ok(&["roles", "show", "editor"]);
    let has_line = |cells: &[&str]| {
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == cells)
    };
    assert!(
        table.starts_with("Role \"editor\" (custom role)"),
        "{table}"
    );
    assert!(
        has_line(&["COLLECTION", "CREATE", "READ", "UPDATE", "DELETE"]),
        "{table}"
    );
    assert!(has_line(&["articles", "-", "yes", "yes", "-"]), "{table}");
    assert!(
        has_line(&["articles.internal_notes", "-", "yes", "-"]),
        "{table}"
    );
    assert!(
        has_line(&["articles", r#"{"status":{"_eq":"published"}}"#]),
        "{table}"
    );
    assert!(has_line(&["-", "yes", "-", "-", "-"]), "{table}");

    let list = test.ok(&["roles", "list"]);
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["editor", "-", "articles:-ru-+rules", "read"]),
        "{list}"
    );

    let stderr = test.fails(&["roles", "show", "nobody"]);
    assert!(stderr.contains("no role named \"nobody\""), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// settings
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn settings_are_read_and_set_with_the_admin_app_validation() {
    let test = TestDatabase::new().await;
    assert_eq!(
        test.json(&["settings", "get"]),
        json!({
            "content_locales": ["en"],
            "default_locale": "en",
            "public_api_allowed_origins": [],
            "files_max_upload_bytes": 52_428_800,
            "chat_max_upload_bytes": 10_485_760,
            "daily_prompt_limit": 100
        })
    );
    assert_eq!(test.json(&["settings", "get", "default_locale"]), "en");

    // JSON values, and text taken as a string (origins normalized to their canonical form).
    assert_eq!(
        test.json(&["settings", "set", "content_locales", r#"["en", "de"]"#]),
        json!({"content_locales": ["en", "de"]})
    );
    assert_eq!(
        test.json(&["settings", "set", "default_locale", "de"]),
        json!({"default_locale": "de"})
    );
    assert_eq!(
        test.json(&[
            "settings",
            "set",
            "public_api_allowed_origins",
            "HTTPS://App.Example.com:443"
        ]),
        json!({"public_api_allowed_origins": ["https://app.example.com"]})
    );
    assert_eq!(
        test.json(&["settings", "set", "files_max_upload_bytes", "1024"]),
        json!({"files_max_upload_bytes": 1024})
    );
    let after = test.json(&["settings", "get"]);

    // Refused: nothing changes, the message names the setting and the problem.
    let refused: [(&[&str], &str); 5] = [
        (
            &[
                "public_api_allowed_origins",
                r#"["https://app.example.com/admin"]"#,
            ],
            "setting public_api_allowed_origins: invalid origin \"https://app.example.com/admin\"",
        ),
        (
            &[
                "public_api_allowed_origins",
                "https://app.example.com/admin",
            ],
            "setting public_api_allowed_origins: invalid origin",
        ),
        (
            &["default_locale", "fr"],
            "\"fr\" is not one of the enabled",
        ),
        (
            &["files_max_upload_bytes", "-1"],
            "setting files_max_upload_bytes: must be a non-negative integer",
        ),
        (&["hash_key", "00"], "unknown setting \"hash_key\""),
    ];
    for (args, message) in refused {
        let mut full = vec!["settings", "set"];
        full.extend_from_slice(args);
        let stderr = test.fails(&full);
        assert!(stderr.contains(message), "{full:?}: {stderr}");
    }
    assert_eq!(test.json(&["settings", "get"]), after);
    assert_eq!(
        after["public_api_allowed_origins"],
        json!(["https://app.example.com"])
    );

    let stderr = test.fails(&["settings", "get", "hash_key"]);
    assert!(stderr.contains("unknown setting \"hash_key\""), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// explain
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn explain_gives_the_policy_decision_and_its_reason() {
    let test = TestDatabase::new().await;
    let fixture = articles_and_editor(&test).await;
    let explain = |role: &str, action: &str, extra: &[&str]| {
        let mut args = vec![
            "explain",
            "--role",
            role,
            "--collection",
            "articles",
            "--action",
            action,
            "--json",
        ];
        args.extend_from_slice(extra);
        test.json(&args)
    };

    assert_eq!(
        explain("editor", "read", &[]),
        json!({
            "role": "editor",
            "collection": "articles",
            "action": "read",
            "allowed": true,
            "rule": "collection_grant",
            "reason": "the role has the read grant on collection \"articles\"",
            "denied_fields": ["internal_notes"],
            "item_filter": {"status": {"_eq": "published"}},
        })
    );
    assert_eq!(
        explain("editor", "update", &[])["denied_fields"],
        json!(["internal_notes"])
    );
    let delete = explain("editor", "delete", &[]);
    assert_eq!(delete["allowed"], false);
    assert_eq!(
        delete["reason"],
        "the role lacks the delete grant on collection \"articles\""
    );
    let public = explain("public", "read", &[]);
    assert_eq!(
        (&public["allowed"], &public["rule"], &public["item_filter"]),
        (&json!(false), &json!("collection_grant"), &Value::Null)
    );
    let super_admin = explain("super-admin", "delete", &[]);
    assert_eq!(
        (&super_admin["allowed"], &super_admin["rule"]),
        (&json!(true), &json!("super_admin"))
    );

    // With --item: the item filter, evaluated on the stored item.
    let published = fixture.published.to_string();
    let draft = fixture.draft.to_string();
    assert_eq!(
        explain("editor", "read", &["--item", &published])["item"],
        json!({
            "id": fixture.published,
            "allowed": true,
            "rule": "item_filter",
            "reason": "the role's item filter on \"articles\" admits the item",
        })
    );
    assert_eq!(
        explain("editor", "update", &["--item", &draft])["item"],
        json!({
            "id": fixture.draft,
            "allowed": false,
            "rule": "item_filter",
            "reason": "the role's item filter on \"articles\" excludes the item",
        })
    );
    assert_eq!(
        explain("public", "read", &["--item", &published])["item"]["allowed"],
        false
    );

    // The default output is for people.
    let text = test.ok(&[
        "explain",
        "--role",
        "editor",
        "--collection",
        "articles",
        "--action",
        "read",
        "--item",
        &draft,
    ]);
    assert_eq!(
        text,
        format!(
            "role \"editor\" read on \"articles\": allowed: the role has the read grant on \
             collection \"articles\"\n\
             field rules deny read on: internal_notes\n\
             item filter: {{\"status\":{{\"_eq\":\"published\"}}}}\n\
             item {draft}: visible to the role? denied: the role's item filter on \"articles\" \
             excludes the item\n"
        )
    );

    // Unknown names are errors naming the flag.
    let base = ["explain", "--action", "read"];
    for (extra, message) in [
        (
            vec!["--role", "nobody", "--collection", "articles"],
            "--role: no role named \"nobody\"",
        ),
        (
            vec!["--role", "editor", "--collection", "nothing"],
            "--collection: no collection \"nothing\"",
        ),
        (
            vec![
                "--role",
                "editor",
                "--collection",
                "articles",
                "--item",
                "999999",
            ],
            "--item: no item 999999 in collection \"articles\"",
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra).collect();
        let stderr = test.fails(&args);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let stderr = test.fails(&[
        "explain",
        "--role",
        "editor",
        "--collection",
        "articles",
        "--action",
        "publish",
    ]);
    assert!(stderr.contains("unknown action \"publish\""), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// help
// ---------------------------------------------------------------------------------------------

#[test]
fn every_command_has_help_with_an_example() {
    for args in [
        &["keys", "--help"][..],
        &["keys", "create", "--help"],
        &["keys", "list", "--help"],
        &["keys", "revoke", "--help"],
        &["roles", "--help"],
        &["roles", "list", "--help"],
        &["roles", "show", "--help"],
        &["settings", "--help"],
        &["settings", "get", "--help"],
        &["settings", "set", "--help"],
        &["explain", "--help"],
        &["users", "--help"],
        &["users", "create", "--help"],
    ] {
        let output = assert_cmd::cargo::cargo_bin_cmd!("vellum-admin")
            .env_remove("VELLUM_DATABASE_URL")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        let help = String::from_utf8(output.stdout).unwrap();
        assert!(
            help.contains("Example:") || help.contains("Examples:"),
            "{args:?}: {help}"
        );
        assert!(help.contains("vellum-admin "), "{args:?}: {help}");
    }
}

/// The tests above ran on the backend the environment selects; say which, so a run without
/// PostgreSQL is visible as such.
#[tokio::test]
async fn the_backend_is_the_one_the_environment_selects() {
    let test = TestDatabase::new().await;
    test.ok(&["roles", "list"]);
    let db = test.connect().await;
    let expected = if std::env::var(POSTGRES_ENV).is_ok_and(|u| !u.trim().is_empty()) {
        DbBackend::Postgres
    } else {
        DbBackend::Sqlite
    };
    assert_eq!(db.get_database_backend(), expected);
    db.close().await.unwrap();
}

/// A change is announced to the servers through their Redis epoch; read-only commands do not
/// touch Redis, and an unreachable Redis is a warning (the change itself is saved).
#[tokio::test]
async fn a_change_bumps_the_servers_redis_epoch() {
    let test = TestDatabase::new().await;
    let down = "redis://127.0.0.1:1";
    let output = test.run(&[
        "--redis-url",
        down,
        "settings",
        "set",
        "default_locale",
        "en",
    ]);
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("warning: the change is saved"), "{stderr}");
    let output = test.run(&["--redis-url", down, "settings", "get"]);
    assert!(output.status.success());
    assert!(output.stderr.is_empty(), "a read contacted Redis");

    let Some(url) = std::env::var("VELLUM_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("skipped the live part: VELLUM_TEST_REDIS_URL is not set");
        return;
    };
    let servers = vellum_app::cache::RedisBackend::new(&url, 1).unwrap();
    use vellum_app::cache::Epoch as _;
    let before = servers.current().await;
    let output = test.run(&[
        "--redis-url",
        &url,
        "keys",
        "create",
        "--role",
        "reader",
        "--name",
        "k",
    ]);
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(servers.current().await > before);
}

// ---------------------------------------------------------------------------------------------
// users
// ---------------------------------------------------------------------------------------------

/// `users create` makes a verified account through the admin app's validation: the password
/// from stdin or `VELLUM_ADMIN_PASSWORD`, `{"id", "email"}` on stdout.
#[tokio::test]
async fn users_create_bootstraps_a_verified_super_admin() {
    let test = TestDatabase::new().await;
    let output = test.run_with(
        &[
            "users",
            "create",
            "--email",
            "Root@Example.com",
            "--name",
            "Root",
            "--role",
            "super-admin",
            "--password-stdin",
        ],
        "a long root password\n",
        &[],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = printed["id"].as_i64().unwrap();
    assert_eq!(printed, json!({"id": id, "email": "Root@Example.com"}));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(!stderr.contains("a long root password"), "{stderr}");

    let db = test.connect().await;
    let account = vellum_storage::accounts::account(&db, id)
        .await
        .unwrap()
        .unwrap();
    assert!(account.email_verified_at.is_some());
    assert_eq!(account.roles.len(), 1);
    assert_eq!(account.roles[0].0, "super-admin");
    let credentials = vellum_storage::accounts::credentials_by_email(&db, "root@example.com")
        .await
        .unwrap()
        .unwrap();
    let hash = credentials.password_hash.unwrap();
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    let hasher = vellum_app::identity::password::PasswordHasher::new(1).unwrap();
    assert!(
        hasher
            .verify("a long root password", Some(&hash))
            .await
            .unwrap()
    );

    // From the environment, several roles.
    let printed: Value = serde_json::from_slice(
        &test
            .run_with(
                &[
                    "users",
                    "create",
                    "--email",
                    "ops@example.com",
                    "--name",
                    "Ops",
                    "--role",
                    "admin",
                    "--role",
                    "reader",
                ],
                "",
                &[("VELLUM_ADMIN_PASSWORD", "another long password")],
            )
            .stdout,
    )
    .unwrap();
    let ops = vellum_storage::accounts::account(&db, printed["id"].as_i64().unwrap())
        .await
        .unwrap()
        .unwrap();
    let roles: Vec<&str> = ops.roles.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["admin", "reader"]);
    // The operator's creation is in the activity log, without a password.
    let entries = vellum_storage::activity::list(
        &db,
        &vellum_storage::activity::ActivityFilter::default(),
        1,
        10,
    )
    .await
    .unwrap()
    .items;
    assert_eq!(entries.len(), 2);
    assert!(
        entries
            .iter()
            .all(|e| e.event == "created" && e.user_id.is_none())
    );
    assert!(!entries[0].properties.to_string().contains("another long"));
}

#[tokio::test]
async fn users_create_refuses_bad_input_naming_the_flag() {
    let test = TestDatabase::new().await;
    let create = |email: &str, role: &str| -> Vec<String> {
        [
            "users",
            "create",
            "--email",
            email,
            "--name",
            "Someone",
            "--role",
            role,
            "--password-stdin",
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let first = create("taken@example.com", "admin");
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    assert!(
        test.run_with(&first, "long enough password\n", &[])
            .status
            .success()
    );
    for (email, role, password, expected) in [
        (
            "TAKEN@example.com",
            "admin",
            "long enough password\n",
            "--email: The email has already been taken.",
        ),
        (
            "new@example.com",
            "public",
            "long enough password\n",
            "--role: The public role cannot be assigned.",
        ),
        (
            "new@example.com",
            "ghost",
            "long enough password\n",
            "--role: The role \"ghost\" does not exist.",
        ),
        (
            "not an email",
            "admin",
            "long enough password\n",
            "--email: The email must be a valid email address.",
        ),
        (
            "new@example.com",
            "admin",
            "short\n",
            "password: The password must be 8 to 256 characters.",
        ),
    ] {
        let args = create(email, role);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = test.run_with(&args, password, &[]);
        assert!(!output.status.success(), "{args:?}");
        assert!(output.stdout.is_empty());
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Without --password-stdin and without the variable.
    let output = test.run_with(
        &[
            "users",
            "create",
            "--email",
            "new@example.com",
            "--name",
            "New",
        ],
        "",
        &[],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("VELLUM_ADMIN_PASSWORD"), "{stderr}");
    // Nothing but the first account exists.
    let db = test.connect().await;
    assert!(
        vellum_storage::accounts::credentials_by_email(&db, "new@example.com")
            .await
            .unwrap()
            .is_none()
    );
}
