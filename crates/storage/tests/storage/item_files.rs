//! The `item_files` reverse index: filled for items that predate it when `migrate` applies its
//! migration (live and trashed items, top-level file fields, file slots nested in blocks and
//! translated values), rebuilt idempotently by `backfill`. Runs on SQLite always and on
//! PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};
use vellum_domain::{CollectionSlug, FieldDef};
use vellum_migration::{Migrator, MigratorTrait};
use vellum_storage::collections::{CollectionDef, save_collection};
use vellum_storage::item_files::{MIGRATION, backfill, rows_of_item};
use vellum_storage::testing::TestDb;

fn fields() -> Vec<FieldDef> {
    [
        json!({"name": "title", "type": "string"}),
        json!({"name": "cover", "type": "image"}),
        json!({"name": "gallery", "type": "files", "translatable": true}),
        json!({"name": "body", "type": "blocks", "settings": {"block_types": [
            {"key": "figure", "fields": [{"name": "pic", "type": "file"}]}
        ]}}),
    ]
    .iter()
    .map(|f| FieldDef::from_json(f).unwrap())
    .collect()
}

/// Inserts an item the way a database from before the index holds it: `data` only.
async fn raw_item(db: &TestDb, collection_id: i64, data: &Value, trashed: bool) -> i64 {
    let pg = db.backend() == DbBackend::Postgres;
    let (p1, json) = if pg {
        ("$1", "CAST($2 AS jsonb)")
    } else {
        ("?", "jsonb(?)")
    };
    let deleted = match (trashed, pg) {
        (false, _) => "NULL",
        (true, true) => "CURRENT_TIMESTAMP",
        (true, false) => "'2026-01-01 00:00:00'",
    };
    let sql = format!(
        "INSERT INTO items (collection_id, data, deleted_at) VALUES ({p1}, {json}, {deleted}) RETURNING id"
    );
    let row = db
        .conn
        .query_one_raw(Statement::from_sql_and_values(
            db.backend(),
            sql,
            [
                i32::try_from(collection_id).unwrap().into(),
                data.to_string().into(),
            ],
        ))
        .await
        .unwrap()
        .unwrap();
    i64::from(row.try_get::<i32>("", "id").unwrap())
}

#[tokio::test]
async fn migrate_fills_the_index_for_items_that_predate_it() {
    let db = TestDb::empty().await.unwrap();
    // Everything before the index; `migrate` below applies it and what follows.
    let before = Migrator::migrations()
        .iter()
        .position(|m| m.name() == MIGRATION)
        .expect("the index's migration is listed");
    Migrator::up(
        db.conn.sea_orm_connection(),
        Some(u32::try_from(before).unwrap()),
    )
    .await
    .unwrap();
    let (collection, _) = save_collection(
        &db.conn,
        &CollectionDef {
            slug: CollectionSlug::parse("posts").unwrap(),
            name: "Posts".to_owned(),
            is_singleton: false,
            fields: fields(),
        },
    )
    .await
    .unwrap();
    let field = |name: &str| collection.field(name).unwrap().id;
    let full = raw_item(
        &db,
        collection.id,
        &json!({
            "title": "a",
            "cover": 7,
            "gallery": {"en": [8, 9], "de": [9, 10]},
            "body": [
                {"type": "figure", "data": {"pic": 11}},
                {"type": "figure", "data": {"pic": 7}},
                {"type": "unknown", "data": {"pic": 99}}
            ]
        }),
        false,
    )
    .await;
    let trashed = raw_item(&db, collection.id, &json!({"cover": 12}), true).await;
    let plain = raw_item(&db, collection.id, &json!({"title": "no files"}), false).await;

    vellum_storage::migrate(&db.conn).await.unwrap();

    let mut expected = vec![
        (field("cover"), 7),
        (field("gallery"), 8),
        (field("gallery"), 9),
        (field("gallery"), 10),
        (field("body"), 7),
        (field("body"), 11),
    ];
    expected.sort_unstable();
    assert_eq!(rows_of_item(&db.conn, full).await.unwrap(), expected);
    assert_eq!(
        rows_of_item(&db.conn, trashed).await.unwrap(),
        [(field("cover"), 12)]
    );
    assert!(rows_of_item(&db.conn, plain).await.unwrap().is_empty());
    // Running again rewrites rather than adds; a current schema does not backfill at all.
    assert_eq!(
        backfill(
            &db.conn,
            &vellum_storage::collections::list_collections(&db.conn)
                .await
                .unwrap()
        )
        .await
        .unwrap(),
        3
    );
    assert_eq!(rows_of_item(&db.conn, full).await.unwrap(), expected);
    db.conn
        .execute_unprepared("DELETE FROM item_files")
        .await
        .unwrap();
    vellum_storage::migrate(&db.conn).await.unwrap();
    assert!(rows_of_item(&db.conn, full).await.unwrap().is_empty());
    backfill(
        &db.conn,
        &vellum_storage::collections::list_collections(&db.conn)
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(rows_of_item(&db.conn, full).await.unwrap(), expected);
}
