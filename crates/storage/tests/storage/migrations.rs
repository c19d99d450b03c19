//! The schema on both backends: applied from empty, applied twice (idempotent), rolled back and
//! applied again. Runs on SQLite always and on PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use sea_orm::{ConnectionTrait, DbBackend, Statement};
use vellum_migration::{Migrator, MigratorTrait};
use vellum_storage::testing::{POSTGRES_ENV, TestDb};

const TABLES: [&str; 46] = [
    "activity_log",
    "ai_attachments",
    "ai_conversations",
    "ai_messages",
    "ai_prompt_days",
    "api_keys",
    "chat_attachments",
    "chat_collection_notify",
    "chat_members",
    "chat_messages",
    "chat_reactions",
    "chat_uploads",
    "chat_user_states",
    "chats",
    "collection_grants",
    "collections",
    "fields",
    "file_favorites",
    "file_grants",
    "file_tags",
    "file_transforms",
    "files",
    "group_users",
    "groups",
    "item_files",
    "item_links",
    "item_revisions",
    "item_unique_values",
    "items",
    "jobs",
    "login_codes",
    "passkeys",
    "permissions",
    "realtime_events",
    "realtime_nodes",
    "realtime_presence",
    "role_groups",
    "role_permissions",
    "roles",
    "sessions",
    "settings",
    "user_roles",
    "users",
    "webauthn_ceremonies",
    "webhook_deliveries",
    "webhooks",
];

async fn tables(db: &TestDb) -> Vec<String> {
    let sql = match db.backend() {
        DbBackend::Sqlite => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'seaql_migrations' ORDER BY name"
        }
        _ => {
            "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> 'seaql_migrations' ORDER BY table_name"
        }
    };
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(db.backend(), sql))
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.try_get::<String>("", "name").unwrap())
        .collect()
}

async fn check(db: TestDb) {
    assert_eq!(tables(&db).await, TABLES, "{:?}", db.backend());
    // Applying again changes nothing.
    Migrator::up(db.conn.sea_orm_connection(), None)
        .await
        .unwrap();
    assert!(
        Migrator::get_pending_migrations(db.conn.sea_orm_connection())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(tables(&db).await, TABLES);
    // Down removes every table; up restores them.
    Migrator::down(db.conn.sea_orm_connection(), None)
        .await
        .unwrap();
    assert!(tables(&db).await.is_empty(), "{:?}", tables(&db).await);
    Migrator::up(db.conn.sea_orm_connection(), None)
        .await
        .unwrap();
    assert_eq!(tables(&db).await, TABLES);
}

#[tokio::test]
async fn schema_on_sqlite() {
    check(TestDb::sqlite().await.unwrap()).await;
}

#[tokio::test]
async fn schema_on_postgres_when_configured() {
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        eprintln!("{POSTGRES_ENV} not set: PostgreSQL variant not run");
        return;
    };
    let db = TestDb::postgres(&url).await.unwrap();
    let name: String = {
        let row = db
            .conn
            .query_one_raw(Statement::from_string(
                DbBackend::Postgres,
                "SELECT current_database() AS name",
            ))
            .await
            .unwrap()
            .unwrap();
        row.try_get("", "name").unwrap()
    };
    assert!(name.starts_with("vellum_test_"));
    check(db).await;
    // The per-test database is gone after drop.
    let admin = vellum_storage::connect(&url).await.unwrap();
    let left = admin
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            format!("SELECT 1 FROM pg_database WHERE datname = '{name}'"),
        ))
        .await
        .unwrap();
    assert!(left.is_empty(), "{name} was not dropped");
}

#[tokio::test]
async fn foreign_keys_cascade_on_sqlite_and_postgres() {
    let db = TestDb::new().await.unwrap();
    let b = db.backend();
    if b == DbBackend::Sqlite {
        db.conn
            .execute_unprepared("PRAGMA foreign_keys = ON")
            .await
            .unwrap();
    }
    db.conn
        .execute_unprepared("INSERT INTO collections (slug, name, is_singleton, created_at, updated_at) VALUES ('a', 'A', false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
        .await
        .unwrap();
    db.conn
        .execute_unprepared("INSERT INTO items (collection_id, data) SELECT id, '{}' FROM collections WHERE slug = 'a'")
        .await
        .unwrap();
    // A duplicate slug is refused by the unique index.
    let dup = db.conn
        .execute_unprepared("INSERT INTO collections (slug, name, is_singleton, created_at, updated_at) VALUES ('a', 'B', false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
        .await;
    assert!(dup.is_err());
    db.conn
        .execute_unprepared("DELETE FROM collections WHERE slug = 'a'")
        .await
        .unwrap();
    let left = db
        .conn
        .query_all_raw(Statement::from_string(b, "SELECT id FROM items"))
        .await
        .unwrap();
    assert!(
        left.is_empty(),
        "items of a deleted collection must cascade"
    );
}

/// `m20261125_000003_file_transform_last_used` on a database that already holds transform
/// records: each gets `last_used_at = created_at`, and the capped writes work on it at once.
#[tokio::test]
async fn last_used_at_is_backfilled_from_created_at_on_an_existing_database() {
    use time::OffsetDateTime;
    use vellum_policy::{FileAction, Role};
    use vellum_storage::files::{NewFile, NewTransform, create_file, find_transform};

    let db = TestDb::empty().await.unwrap();
    let b = db.backend();
    // The schema as it was before the migration.
    Migrator::up(db.conn.sea_orm_connection(), Some(2))
        .await
        .unwrap();
    let grant = Role::super_admin()
        .authorize_file_write(FileAction::Create)
        .unwrap();
    let file = create_file(
        &db.conn,
        &grant,
        NewFile {
            parent_id: None,
            filename: "old.png".to_owned(),
            mime_type: Some("image/png".to_owned()),
            extension: Some("png".to_owned()),
            filesize: Some(1000),
            width: Some(10),
            height: Some(10),
            content_hash: Some("h".to_owned()),
            storage_key: Some("sha256/h".to_owned()),
            title: None,
        },
    )
    .await
    .unwrap();
    let created = [
        OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        OffsetDateTime::from_unix_timestamp(1_700_000_060).unwrap(),
    ];
    let placeholders = if b == DbBackend::Postgres {
        "$1, $2, $3, $4"
    } else {
        "?, ?, ?, ?"
    };
    for (key, at) in ["a", "b"].into_iter().zip(created) {
        db.conn
            .execute_raw(Statement::from_sql_and_values(
                b,
                format!(
                    "INSERT INTO file_transforms (file_id, content_hash, \"key\", storage_key, \
                     mime_type, filesize, created_at) VALUES ({placeholders}, 'image/png', 100, \
                     {})",
                    if b == DbBackend::Postgres { "$5" } else { "?" }
                ),
                [
                    i32::try_from(file.id).unwrap().into(),
                    "h".into(),
                    key.into(),
                    format!("derived/h/{key}").into(),
                    at.into(),
                ],
            ))
            .await
            .unwrap();
    }

    Migrator::up(db.conn.sea_orm_connection(), None)
        .await
        .unwrap();
    assert!(
        Migrator::get_pending_migrations(db.conn.sea_orm_connection())
            .await
            .unwrap()
            .is_empty()
    );
    for (key, at) in ["a", "b"].into_iter().zip(created) {
        let found = find_transform(&db.conn, "h", key).await.unwrap().unwrap();
        assert_eq!(found.last_used_at, at, "{key}");
    }
    // The oldest is the first to go.
    let saved = vellum_storage::files::record_transform(
        &db.conn,
        &NewTransform {
            file_id: file.id,
            content_hash: "h",
            key: "c",
            storage_key: "derived/h/c",
            mime_type: "image/png",
            filesize: Some(100),
            width: None,
            height: None,
        },
        200,
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(saved.evicted, ["derived/h/a"]);
}
