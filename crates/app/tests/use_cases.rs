//! The use cases called directly, as a surface other than HTTP calls them: no web framework,
//! only an `AppState`, an `Actor` and the inputs a caller received. Runs on SQLite, and on
//! PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::{Value, json};
use vellum_app::{Actor, AppConfig, AppError, AppState, collections, explain, files, items};
use vellum_policy::{CollectionAction, Reason};
use vellum_storage::testing::TestDb;

fn manifest() -> Value {
    json!({
        "collections": [
            {"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "settings": {"required": true}},
                {"name": "status", "type": "select", "settings": {"options": ["draft", "published"]}},
                {"name": "notes", "type": "textarea", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "articles": {"read": true, "rules": {
                    "fields": {"notes": {"read": false}},
                    "item_filter": {"status": {"_eq": "published"}}
                }}
            }},
            {"name": "writer", "collection_permissions": {
                "articles": {"create": true, "read": true, "update": true, "rules": {
                    "fields": {"notes": {"create": false, "update": false}}
                }}
            }}
        ],
        "items": {"articles": [
            {"data": {"title": "Live", "status": "published", "notes": "n1"}},
            {"data": {"title": "Draft", "status": "draft", "notes": "n2"}}
        ]}
    })
}

async fn state() -> (AppState, TestDb) {
    let db = TestDb::new().await.unwrap();
    vellum_manifest::apply(&db.conn, &manifest()).await.unwrap();
    let state = AppState::new(db.conn.clone(), AppConfig::default())
        .await
        .unwrap();
    (state, db)
}

fn text(rendered: &serde_json::value::RawValue) -> Value {
    serde_json::from_str(rendered.get()).unwrap()
}

#[tokio::test]
async fn a_role_reads_what_its_grants_and_item_filter_allow() {
    let (state, _db) = state().await;
    let public = Actor::with_role(&state, "public").await.unwrap();
    let page = items::list(&state, &public, "articles", "").await.unwrap();
    assert_eq!(page.meta.total, 1);
    let first = text(&page.data[0]);
    assert_eq!(first["data"]["title"], "Live");
    assert!(first["data"].get("notes").is_none(), "{first}");
    // The draft is outside the item filter: not found, as over HTTP.
    let hidden = items::show(&state, &public, "articles", "2", "").await;
    assert!(matches!(hidden, Err(AppError::NotFound)), "{hidden:?}");
    assert!(matches!(
        items::show(&state, &public, "nowhere", "1", "").await,
        Err(AppError::NotFound)
    ));
    assert_eq!(collections::list(&public).len(), 1);
    assert!(matches!(
        files::list(&state, &public, "").await,
        Err(AppError::Forbidden(Reason::FileGrant { .. }))
    ));
}

#[tokio::test]
async fn a_write_checks_the_grant_before_reading_its_body() {
    let (state, _db) = state().await;
    let public = Actor::with_role(&state, "public").await.unwrap();
    let body_read = std::cell::Cell::new(false);
    let body = async {
        body_read.set(true);
        Ok::<_, AppError>(br#"{"data": {"title": "x"}}"#.to_vec())
    };
    let refused = items::create(&state, &public, "articles", "", body).await;
    assert!(
        matches!(
            refused,
            Err(AppError::Forbidden(Reason::CollectionGrant { .. }))
        ),
        "{refused:?}"
    );
    assert!(
        !body_read.get(),
        "the body of a refused write is never read"
    );

    let writer = Actor::with_role(&state, "writer").await.unwrap();
    let denied = items::create(&state, &writer, "articles", "", async {
        Ok::<_, AppError>(br#"{"data": {"title": "x", "notes": "no"}}"#.to_vec())
    })
    .await;
    match denied {
        Err(AppError::Forbidden(Reason::FieldRules { fields, .. })) => {
            assert_eq!(fields.len(), 1);
            assert_eq!(fields[0].as_str(), "notes");
        }
        other => panic!("{other:?}"),
    }
    let created = items::create(&state, &writer, "articles", "", async {
        Ok::<_, AppError>(br#"{"data": {"title": "New", "status": "draft"}}"#.to_vec())
    })
    .await
    .unwrap();
    assert_eq!(text(&created)["data"]["title"], "New");
    let invalid = items::create(&state, &writer, "articles", "", async {
        Ok::<_, AppError>(br#"{"data": {"status": "draft"}}"#.to_vec())
    })
    .await;
    match invalid {
        Err(AppError::Invalid(errors)) => assert!(errors.get("title").is_some()),
        other => panic!("{other:?}"),
    }
}

/// `explain` and the read path share the snapshot and the item view: for every item, explain
/// says "visible" exactly when show finds it.
#[tokio::test]
async fn explain_agrees_with_show_for_every_item() {
    let (state, _db) = state().await;
    for role in ["public", "writer"] {
        let actor = Actor::with_role(&state, role).await.unwrap();
        for id in 1..=2_i64 {
            let explained =
                explain::item(&state, role, "articles", CollectionAction::Read, Some(id))
                    .await
                    .unwrap();
            let (_, seen) = explained.item.unwrap();
            let shown = items::show(&state, &actor, "articles", &id.to_string(), "").await;
            assert_eq!(
                seen.allowed,
                shown.is_ok(),
                "{role} item {id}: {seen:?} {shown:?}"
            );
        }
    }
    let unknown = explain::item(&state, "nobody", "articles", CollectionAction::Read, None).await;
    match unknown {
        Err(AppError::Invalid(errors)) => assert!(errors.get("role").is_some()),
        other => panic!("{other:?}"),
    }
}
