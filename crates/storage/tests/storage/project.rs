//! Project settings and the fingerprint secret on a fresh database (SQLite, or PostgreSQL when
//! `VELLUM_TEST_POSTGRES_URL` is set).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Map, json};
use vellum_storage::StorageError;
use vellum_storage::project::{self, ProjectSettings};
use vellum_storage::testing::TestDb;

fn conflict_message(err: StorageError) -> String {
    match err {
        StorageError::Conflict { message: msg, .. } => msg,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[tokio::test]
async fn defaults_apply_until_set() {
    let db = TestDb::new().await.unwrap();
    let settings = project::load_settings(&db.conn).await.unwrap();
    assert_eq!(
        settings,
        ProjectSettings {
            content_locales: vec!["en".into()],
            default_locale: "en".into(),
            public_api_allowed_origins: vec![],
            files_max_upload_bytes: 52_428_800,
            chat_max_upload_bytes: Some(10_485_760),
            daily_prompt_limit: 100,
        }
    );
    assert_eq!(
        project::get_setting(&db.conn, "files_max_upload_bytes")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn set_and_get_round_trip() {
    let db = TestDb::new().await.unwrap();
    project::set_setting(&db.conn, "content_locales", json!(["en", "de"]))
        .await
        .unwrap();
    project::set_setting(&db.conn, "default_locale", json!("de"))
        .await
        .unwrap();
    project::set_setting(
        &db.conn,
        "public_api_allowed_origins",
        json!(["HTTPS://App.Example.com:443", "http://localhost:3000"]),
    )
    .await
    .unwrap();
    project::set_setting(&db.conn, "files_max_upload_bytes", json!(10_485_760))
        .await
        .unwrap();
    // Overwriting is an upsert, not a second row.
    project::set_setting(&db.conn, "daily_prompt_limit", json!(7))
        .await
        .unwrap();
    project::set_setting(&db.conn, "daily_prompt_limit", json!(0))
        .await
        .unwrap();

    assert_eq!(
        project::get_setting(&db.conn, "content_locales")
            .await
            .unwrap(),
        Some(json!(["en", "de"]))
    );
    // Origins are stored canonical.
    assert_eq!(
        project::get_setting(&db.conn, "public_api_allowed_origins")
            .await
            .unwrap(),
        Some(json!(["https://app.example.com", "http://localhost:3000"]))
    );
    let s = project::load_settings(&db.conn).await.unwrap();
    assert_eq!(s.content_locales, ["en", "de"]);
    assert_eq!(s.default_locale, "de");
    assert_eq!(
        s.public_api_allowed_origins,
        ["https://app.example.com", "http://localhost:3000"]
    );
    assert_eq!(s.files_max_upload_bytes, 10_485_760);
    assert_eq!(s.chat_max_upload_bytes, Some(10_485_760));
    assert_eq!(s.daily_prompt_limit, 0);
    assert!(
        s.origin_allowlist()
            .unwrap()
            .allows("https://app.example.com")
    );
    assert!(s.locales().unwrap().is_enabled("de"));

    // The text form the admin app enters is accepted too.
    project::set_setting(
        &db.conn,
        "public_api_allowed_origins",
        json!("https://a.test,\nhttps://b.test"),
    )
    .await
    .unwrap();
    assert_eq!(
        project::load_settings(&db.conn)
            .await
            .unwrap()
            .public_api_allowed_origins,
        ["https://a.test", "https://b.test"]
    );
    let rows = db
        .conn
        .query_one_raw(Statement::from_string(
            db.backend(),
            "SELECT COUNT(*) FROM settings WHERE key = 'daily_prompt_limit'",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap();
    assert_eq!(rows, 1);
}

#[tokio::test]
async fn invalid_values_are_refused_and_nothing_changes() {
    let db = TestDb::new().await.unwrap();
    let cases = [
        (
            "public_api_allowed_origins",
            json!(["https://app.example.com/path"]),
            "path",
        ),
        (
            "public_api_allowed_origins",
            json!(["ftp://app.example.com"]),
            "scheme",
        ),
        ("content_locales", json!(["en", "EN"]), "EN"),
        ("content_locales", json!([]), "at least one"),
        ("content_locales", json!(["de"]), "default locale"),
        ("default_locale", json!("fr"), "default locale"),
        ("files_max_upload_bytes", json!(-1), "non-negative"),
        ("files_max_upload_bytes", json!("10"), "non-negative"),
        ("chat_max_upload_bytes", json!(2.5), "non-negative"),
    ];
    for (key, value, needle) in cases {
        let msg = conflict_message(
            project::set_setting(&db.conn, key, value.clone())
                .await
                .unwrap_err(),
        );
        assert!(msg.contains(needle), "{key} {value}: {msg}");
        assert_eq!(
            project::get_setting(&db.conn, key).await.unwrap(),
            None,
            "{key}"
        );
    }
    assert_eq!(
        project::load_settings(&db.conn).await.unwrap(),
        ProjectSettings::default()
    );
}

#[tokio::test]
async fn unknown_keys_are_refused_listing_the_known_ones() {
    let db = TestDb::new().await.unwrap();
    let msg = conflict_message(
        project::set_setting(&db.conn, "colour", json!("blue"))
            .await
            .unwrap_err(),
    );
    for key in project::SETTING_KEYS {
        assert!(msg.contains(key), "{msg}");
    }
    // The fingerprint secret is not a setting: it can be neither read nor overwritten here.
    project::hash_key(&db.conn).await.unwrap();
    assert!(matches!(
        project::get_setting(&db.conn, "hash_key")
            .await
            .unwrap_err(),
        StorageError::Conflict { .. }
    ));
    assert!(matches!(
        project::set_setting(&db.conn, "hash_key", json!("00"))
            .await
            .unwrap_err(),
        StorageError::Conflict { .. }
    ));
}

#[tokio::test]
async fn locales_and_default_change_together() {
    let db = TestDb::new().await.unwrap();
    // From [en]/en to [de]/de: impossible one key at a time, fine together.
    let mut both = Map::new();
    both.insert("content_locales".into(), json!(["de"]));
    both.insert("default_locale".into(), json!("de"));
    project::set_settings(&db.conn, &both).await.unwrap();
    let s = project::load_settings(&db.conn).await.unwrap();
    assert_eq!(
        (s.content_locales, s.default_locale),
        (vec!["de".to_owned()], "de".to_owned())
    );

    // One bad value refuses the whole batch.
    let mut mixed = Map::new();
    mixed.insert("daily_prompt_limit".into(), json!(5));
    mixed.insert("default_locale".into(), json!("en"));
    assert!(project::set_settings(&db.conn, &mixed).await.is_err());
    assert_eq!(
        project::get_setting(&db.conn, "daily_prompt_limit")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn hash_key_is_created_once_and_stable() {
    let db = TestDb::new().await.unwrap();
    let first = project::hash_key(&db.conn).await.unwrap();
    let second = project::hash_key(&db.conn).await.unwrap();
    assert_eq!(
        first.fingerprint("alice@example.com"),
        second.fingerprint("alice@example.com")
    );
    // A different database gets a different secret: fingerprints are per project.
    let other_db = TestDb::new().await.unwrap();
    let other = project::hash_key(&other_db.conn).await.unwrap();
    assert_ne!(
        first.fingerprint("alice@example.com"),
        other.fingerprint("alice@example.com")
    );
    // Concurrent first uses agree on one secret.
    let fresh = TestDb::new().await.unwrap();
    let (a, b) = tokio::join!(
        project::hash_key(&fresh.conn),
        project::hash_key(&fresh.conn)
    );
    assert_eq!(a.unwrap().fingerprint("x"), b.unwrap().fingerprint("x"));
}
