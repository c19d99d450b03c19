//! Passkeys and WebAuthn ceremonies in the database: a ceremony is taken once and not after it
//! expires, the number in progress is capped, expired ones are cleared by the next start; a
//! passkey belongs to a live user, a credential is registered once, a user has at most
//! `MAX_PASSKEYS_PER_USER`, and a user deletes only its own. SQLite always, PostgreSQL when
//! `VELLUM_TEST_POSTGRES_URL` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use sea_orm::{ConnectionTrait, Statement};
use time::OffsetDateTime;
use vellum_storage::StorageError;
use vellum_storage::passkeys::{
    MAX_PASSKEYS_PER_USER, NewPasskey, delete_passkey, insert_passkey, passkeys_of_handle,
    passkeys_of_user, put_ceremony, record_use, take_ceremony,
};
use vellum_storage::testing::TestDb;

async fn user(db: &TestDb, name: &str) -> i64 {
    vellum_storage::users::create_user(&db.conn, name, Some(&format!("{name}@example.com")))
        .await
        .unwrap()
        .id
}

fn key<'a>(user_id: i64, handle: &'a str, id: &'a str) -> NewPasskey<'a> {
    NewPasskey {
        user_id,
        user_handle: handle,
        credential_id: id,
        name: "Laptop",
        credential: "{}",
    }
}

#[tokio::test]
async fn a_ceremony_is_taken_once_and_not_after_it_expires() {
    let db = TestDb::new().await.unwrap();
    let now = OffsetDateTime::now_utc();
    let later = now + Duration::from_secs(300);
    put_ceremony(&db.conn, "a", "state a", now, later)
        .await
        .unwrap();
    assert_eq!(
        take_ceremony(&db.conn, "a", now).await.unwrap().as_deref(),
        Some("state a")
    );
    assert_eq!(take_ceremony(&db.conn, "a", now).await.unwrap(), None);
    put_ceremony(&db.conn, "b", "state b", now, later)
        .await
        .unwrap();
    assert_eq!(
        take_ceremony(&db.conn, "b", later).await.unwrap(),
        None,
        "expired"
    );
    assert_eq!(
        take_ceremony(&db.conn, "b", now).await.unwrap(),
        None,
        "and gone"
    );
    // A start clears the expired ones.
    put_ceremony(&db.conn, "c", "c", now, now + Duration::from_secs(1))
        .await
        .unwrap();
    put_ceremony(&db.conn, "d", "d", later, later + Duration::from_secs(300))
        .await
        .unwrap();
    let rows = db
        .conn
        .query_all_raw(Statement::from_string(
            db.conn.get_database_backend(),
            "SELECT id FROM webauthn_ceremonies".to_owned(),
        ))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
}

#[tokio::test]
async fn passkeys_belong_to_live_users_once_each_and_are_capped() {
    let db = TestDb::new().await.unwrap();
    let now = OffsetDateTime::now_utc();
    let ada = user(&db, "ada").await;
    let bo = user(&db, "bo").await;
    let first = insert_passkey(&db.conn, &key(ada, "h-ada", "cred-1"), now)
        .await
        .unwrap();
    assert_eq!(
        (first.user_id, first.name.as_str(), first.last_used_at),
        (ada, "Laptop", None)
    );
    let err = insert_passkey(&db.conn, &key(bo, "h-bo", "cred-1"), now)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StorageError::Conflict { field, .. } if field == "credential"),
        "{err:?}"
    );
    let err = insert_passkey(&db.conn, &key(999_999, "h", "cred-x"), now)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound { .. }), "{err:?}");
    for n in 2..=MAX_PASSKEYS_PER_USER {
        insert_passkey(&db.conn, &key(ada, "h-ada", &format!("cred-{n}")), now)
            .await
            .unwrap();
    }
    let err = insert_passkey(&db.conn, &key(ada, "h-ada", "one-more"), now)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StorageError::Conflict { field, .. } if field == "passkeys"),
        "{err:?}"
    );
    assert_eq!(
        passkeys_of_user(&db.conn, ada).await.unwrap().len() as u64,
        MAX_PASSKEYS_PER_USER
    );
    assert_eq!(
        passkeys_of_handle(&db.conn, "h-ada").await.unwrap().len() as u64,
        MAX_PASSKEYS_PER_USER
    );
    assert!(
        passkeys_of_handle(&db.conn, "h-bo")
            .await
            .unwrap()
            .is_empty()
    );

    record_use(&db.conn, first.id, "{\"counter\":1}", now)
        .await
        .unwrap();
    let used = passkeys_of_user(&db.conn, ada).await.unwrap().remove(0);
    assert_eq!(used.credential, "{\"counter\":1}");
    assert!(used.last_used_at.is_some());

    assert!(
        !delete_passkey(&db.conn, bo, first.id).await.unwrap(),
        "not bo's"
    );
    assert!(delete_passkey(&db.conn, ada, first.id).await.unwrap());
    assert!(!delete_passkey(&db.conn, ada, first.id).await.unwrap());

    // A deleted user's passkeys no longer name it.
    vellum_storage::users::soft_delete_user(&db.conn, ada)
        .await
        .unwrap();
    assert!(
        passkeys_of_handle(&db.conn, "h-ada")
            .await
            .unwrap()
            .is_empty()
    );
}
