//! Roles, grants, API keys, users and groups on a fresh database (SQLite, or PostgreSQL when
//! `VELLUM_TEST_POSTGRES_URL` is set).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use sea_orm::{ConnectionTrait, Statement};
use serde_json::json;
use time::OffsetDateTime;
use time::macros::datetime;
use vellum_policy::{ApiKeySecret, IpAllowlist, KeyCheck, PERMISSIONS, READER_PERMISSIONS, Role};
use vellum_storage::Database;
use vellum_storage::StorageError;
use vellum_storage::keys::{self, NewApiKey};
use vellum_storage::roles::{self, RoleSummary};
use vellum_storage::testing::TestDb;
use vellum_storage::{groups, seed, users};

async fn count(db: &Database, sql: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

async fn add_collection(db: &Database, slug: &str) {
    let now = if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        "now()"
    } else {
        "CURRENT_TIMESTAMP"
    };
    db.execute_unprepared(&format!(
        "INSERT INTO collections (slug, name, is_singleton, created_at, updated_at) \
         VALUES ('{slug}', '{slug}', false, {now}, {now})"
    ))
    .await
    .unwrap();
}

fn editor() -> Role {
    Role::from_json(
        "editor",
        &json!({
            "collection_permissions": {
                "articles": {
                    "create": true, "read": true, "update": true, "delete": false,
                    "rules": {
                        "fields": {"internal_notes": {"read": false, "create": false, "update": false},
                                   "slug": {"update": false}},
                        "item_filter": {"status": {"_eq": "published"}, "views": {"_gt": 10}}
                    }
                },
                "authors": {"read": true}
            },
            "file_permissions": {"create": true, "read": true, "read_private": false, "update": true}
        }),
    )
    .unwrap()
}

async fn seeded() -> TestDb {
    let db = TestDb::new().await.unwrap();
    seed::seed_system(&db.conn).await.unwrap();
    db
}

const TABLES: [&str; 4] = ["permissions", "roles", "role_permissions", "settings"];

#[tokio::test]
async fn seeding_is_idempotent_and_follows_the_catalog() {
    let db = seeded().await;
    let mut first = Vec::new();
    for t in TABLES {
        first.push(count(&db.conn, &format!("SELECT COUNT(*) FROM {t}")).await);
    }
    let hash_key = count(
        &db.conn,
        "SELECT COUNT(*) FROM settings WHERE key = 'hash_key'",
    )
    .await;
    assert_eq!(hash_key, 1, "the fingerprint secret is seeded");
    assert_eq!(first[0], i64::try_from(PERMISSIONS.len()).unwrap());
    assert_eq!(first[1], 4);

    seed::seed_system(&db.conn).await.unwrap();
    for (t, before) in TABLES.iter().zip(&first) {
        let after = count(&db.conn, &format!("SELECT COUNT(*) FROM {t}")).await;
        assert_eq!(after, *before, "{t}");
    }

    let roles = roles::list_roles(&db.conn).await.unwrap();
    let names: Vec<(&str, bool)> = roles
        .iter()
        .map(|r: &RoleSummary| (r.name.as_str(), r.is_system))
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

    let mut all: Vec<String> = PERMISSIONS.iter().map(ToString::to_string).collect();
    all.sort();
    let mut reader: Vec<String> = READER_PERMISSIONS.iter().map(ToString::to_string).collect();
    reader.sort();
    assert_eq!(
        roles::role_permissions(&db.conn, "super-admin")
            .await
            .unwrap(),
        all
    );
    assert_eq!(
        roles::role_permissions(&db.conn, "admin").await.unwrap(),
        all
    );
    assert_eq!(
        roles::role_permissions(&db.conn, "reader").await.unwrap(),
        reader
    );
    assert!(
        roles::role_permissions(&db.conn, "public")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn reseeding_keeps_operator_changes_and_drops_unknown_permissions() {
    let db = seeded().await;
    db.conn
        .execute_unprepared(
            "DELETE FROM role_permissions WHERE role_id = (SELECT id FROM roles WHERE name = 'admin') \
             AND permission_id = (SELECT id FROM permissions WHERE name = 'can-use-ai')",
        )
        .await
        .unwrap();
    db.conn
        .execute_unprepared("INSERT INTO permissions (name) VALUES ('can-do-anything')")
        .await
        .unwrap();
    seed::seed_system(&db.conn).await.unwrap();
    let admin = roles::role_permissions(&db.conn, "admin").await.unwrap();
    assert_eq!(admin.len(), PERMISSIONS.len() - 1);
    assert!(!admin.iter().any(|p| p == "can-use-ai"));
    assert_eq!(
        count(
            &db.conn,
            "SELECT COUNT(*) FROM permissions WHERE name = 'can-do-anything'"
        )
        .await,
        0
    );
    // A deleted seeded role comes back with its permissions.
    roles::delete_role(&db.conn, "reader").await.unwrap();
    seed::seed_system(&db.conn).await.unwrap();
    assert_eq!(
        roles::role_permissions(&db.conn, "reader")
            .await
            .unwrap()
            .len(),
        READER_PERMISSIONS.len()
    );
}

/// Asserts `loaded` is `expected` as the access model sees it. PostgreSQL's JSONB does not keep
/// object key order, so an item filter written `{status, views}` comes back `{views, status}`:
/// the same conjunction with its conditions in another order. `to_json()` compares objects
/// regardless of key order; the conditions are compared as a set. SQLite keeps the order, so
/// there the whole value must be equal.
fn assert_same_role(db: &TestDb, loaded: &Role, expected: &Role) {
    assert_eq!(loaded.to_json(), expected.to_json());
    assert_eq!(loaded.name, expected.name);
    assert_eq!(loaded.files, expected.files);
    assert_eq!(
        loaded.collections.keys().collect::<Vec<_>>(),
        expected.collections.keys().collect::<Vec<_>>()
    );
    for (slug, grant) in &expected.collections {
        let got = &loaded.collections[slug];
        assert_eq!(
            (got.create, got.read, got.update, got.delete),
            (grant.create, grant.read, grant.update, grant.delete),
            "{slug}"
        );
        assert_eq!(got.fields, grant.fields, "{slug}");
        let conditions = |g: &vellum_policy::CollectionGrant| {
            g.item_filter
                .as_ref()
                .map(|f| f.conditions().to_vec())
                .unwrap_or_default()
        };
        let (got_c, want_c) = (conditions(got), conditions(grant));
        assert_eq!(got_c.len(), want_c.len(), "{slug}");
        assert!(got_c.iter().all(|c| want_c.contains(c)), "{slug}");
    }
    if db.backend() == sea_orm::DbBackend::Sqlite {
        assert_eq!(loaded, expected);
    }
}

#[tokio::test]
async fn roles_round_trip_with_rules_and_filters() {
    let db = seeded().await;
    add_collection(&db.conn, "articles").await;
    add_collection(&db.conn, "authors").await;
    let role = editor();
    let id = roles::save_role(&db.conn, &role).await.unwrap();
    let loaded = roles::load_role(&db.conn, "editor").await.unwrap().unwrap();
    assert_same_role(&db, &loaded, &role);
    let by_id = roles::load_role_by_id(&db.conn, id).await.unwrap().unwrap();
    assert_same_role(&db, &by_id, &role);
    assert_eq!(roles::load_role(&db.conn, "nobody").await.unwrap(), None);
    assert_eq!(
        roles::load_role_by_id(&db.conn, i64::MAX).await.unwrap(),
        None
    );

    // Saving the same role again keeps its id and its content.
    assert_eq!(roles::save_role(&db.conn, &role).await.unwrap(), id);
    let again = roles::load_role(&db.conn, "editor").await.unwrap().unwrap();
    assert_same_role(&db, &again, &role);
    let summary = roles::list_roles(&db.conn).await.unwrap();
    let editor = summary.iter().find(|r| r.name == "editor").unwrap();
    assert_eq!((editor.id, editor.is_system), (id, false));

    // A seeded role with no grants loads as an empty matrix.
    let public = roles::load_role(&db.conn, "public").await.unwrap().unwrap();
    assert!(public.collections.is_empty());
    assert_eq!(public.files, vellum_policy::FileGrants::default());
}

#[tokio::test]
async fn saving_replaces_the_grants() {
    let db = seeded().await;
    add_collection(&db.conn, "articles").await;
    add_collection(&db.conn, "authors").await;
    roles::save_role(&db.conn, &editor()).await.unwrap();
    let narrower = Role::from_json(
        "editor",
        &json!({"collection_permissions": {"articles": {"read": true}}, "file_permissions": {"read": true}}),
    )
    .unwrap();
    roles::save_role(&db.conn, &narrower).await.unwrap();
    let loaded = roles::load_role(&db.conn, "editor").await.unwrap().unwrap();
    assert_eq!(loaded, narrower);
    assert!(!loaded.collections.keys().any(|s| s.as_str() == "authors"));
    assert!(!loaded.files.create);
    assert_eq!(
        count(&db.conn, "SELECT COUNT(*) FROM collection_grants").await,
        1
    );
}

#[tokio::test]
async fn unknown_collection_is_refused_and_nothing_is_written() {
    let db = seeded().await;
    add_collection(&db.conn, "articles").await;
    // "authors" does not exist: neither the role nor any grant may be written.
    let err = roles::save_role(&db.conn, &editor()).await.unwrap_err();
    match err {
        StorageError::Conflict { message: msg, .. } => {
            assert!(msg.contains("\"authors\""), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(roles::load_role(&db.conn, "editor").await.unwrap(), None);
    assert_eq!(
        count(&db.conn, "SELECT COUNT(*) FROM collection_grants").await,
        0
    );
    assert_eq!(count(&db.conn, "SELECT COUNT(*) FROM file_grants").await, 0);

    // An existing role keeps its previous grants when an update is refused.
    let narrow = Role::from_json(
        "editor",
        &json!({"collection_permissions": {"articles": {"read": true}}}),
    )
    .unwrap();
    roles::save_role(&db.conn, &narrow).await.unwrap();
    assert!(roles::save_role(&db.conn, &editor()).await.is_err());
    assert_eq!(
        roles::load_role(&db.conn, "editor").await.unwrap(),
        Some(narrow)
    );
}

#[tokio::test]
async fn system_roles_follow_the_role_rules() {
    let db = seeded().await;
    for name in ["super-admin", "public"] {
        let err = roles::delete_role(&db.conn, name).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Conflict { .. }),
            "{name}: {err:?}"
        );
        assert!(roles::load_role(&db.conn, name).await.unwrap().is_some());
    }
    assert!(matches!(
        roles::delete_role(&db.conn, "nobody").await.unwrap_err(),
        StorageError::NotFound { .. }
    ));
    // Only the public role's matrices are editable, and they are.
    add_collection(&db.conn, "articles").await;
    let public = Role::from_json(
        "public",
        &json!({"collection_permissions": {"articles": {"read": true}}, "file_permissions": {"read": true}}),
    )
    .unwrap();
    roles::save_role(&db.conn, &public).await.unwrap();
    assert_eq!(
        roles::load_role(&db.conn, "public").await.unwrap(),
        Some(public)
    );
    let roles = roles::list_roles(&db.conn).await.unwrap();
    assert!(roles.iter().find(|r| r.name == "public").unwrap().is_system);

    let custom = Role::from_json("custom", &json!({})).unwrap();
    roles::save_role(&db.conn, &custom).await.unwrap();
    roles::delete_role(&db.conn, "custom").await.unwrap();
    assert_eq!(roles::load_role(&db.conn, "custom").await.unwrap(), None);
}

fn secret() -> ApiKeySecret {
    ApiKeySecret::parse("ek_0123456789abcdef0123456789abcdef").unwrap()
}

#[tokio::test]
async fn api_keys_store_only_a_digest_and_check_secrets() {
    let db = seeded().await;
    let s = secret();
    let ips = IpAllowlist::parse(["127.0.0.1/32", "::1/128"]).unwrap();
    let expires = datetime!(2099-01-01 0:00 UTC);
    let created = keys::create_api_key(
        &db.conn,
        NewApiKey {
            name: "site-build",
            role: "reader",
            secret: &s,
            ip_allowlist: &ips,
            expires_at: Some(expires),
        },
    )
    .await
    .unwrap();
    assert_eq!(created.key_id, s.key_id());
    assert_eq!(created.role, "reader");
    assert_eq!(created.revoked_at, None);

    // The table holds the key id and a digest, never the secret.
    let row = db
        .conn
        .query_one_raw(Statement::from_string(
            db.backend(),
            "SELECT key_id, digest FROM api_keys",
        ))
        .await
        .unwrap()
        .unwrap();
    let key_id: String = row.try_get("", "key_id").unwrap();
    let digest: String = row.try_get("", "digest").unwrap();
    assert_eq!(key_id, "0123456789ab");
    assert_eq!(digest, s.digest().to_hex());
    assert!(!digest.contains(s.expose()) && !digest.contains("0123456789abcdef"));

    let now = OffsetDateTime::now_utc();
    let found = keys::find_api_key(&db.conn, &s.key_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, created.id);
    assert_eq!(found.record.role, "reader");
    assert_eq!(found.record.ip_allowlist, ips);
    assert_eq!(found.record.expires_at, Some(expires));
    assert_eq!(found.record.check(&s, now), KeyCheck::Valid);
    let wrong = ApiKeySecret::parse("ek_0123456789abXXXXXXXXXXXXXXXXXXXX").unwrap();
    assert_eq!(found.record.check(&wrong, now), KeyCheck::WrongSecret);
    let other = ApiKeySecret::parse("ek_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz").unwrap();
    assert!(
        keys::find_api_key(&db.conn, &other.key_id())
            .await
            .unwrap()
            .is_none()
    );

    // The list never carries the digest or the secret.
    let list = keys::list_api_keys(&db.conn).await.unwrap();
    assert_eq!(list, std::slice::from_ref(&created));
    let shown = format!("{list:?}");
    assert!(!shown.contains(&digest), "{shown}");
    assert!(!shown.contains(s.expose()), "{shown}");

    // Revoke: find still answers, with a record that no longer authenticates.
    keys::revoke_api_key(&db.conn, "site-build").await.unwrap();
    let revoked = keys::find_api_key(&db.conn, &s.key_id())
        .await
        .unwrap()
        .unwrap();
    assert!(revoked.record.revoked);
    assert_eq!(revoked.record.check(&s, now), KeyCheck::Revoked);
    let first = keys::list_api_keys(&db.conn).await.unwrap()[0]
        .revoked_at
        .unwrap();
    keys::revoke_api_key(&db.conn, "site-build").await.unwrap();
    assert_eq!(
        keys::list_api_keys(&db.conn).await.unwrap()[0].revoked_at,
        Some(first),
        "revoking again keeps the first revocation time"
    );
    assert!(matches!(
        keys::revoke_api_key(&db.conn, "nope").await.unwrap_err(),
        StorageError::NotFound { .. }
    ));
}

fn new_key<'a>(
    name: &'a str,
    role: &'a str,
    secret: &'a ApiKeySecret,
    ips: &'a IpAllowlist,
) -> NewApiKey<'a> {
    NewApiKey {
        name,
        role,
        secret,
        ip_allowlist: ips,
        expires_at: None,
    }
}

/// Regression (tests/fuzz_manifest.rs on PostgreSQL): an expiry whose offset pushes it past year
/// 9999 in UTC made the driver panic while encoding it; it is refused on both backends, and an
/// offset expiry within range is stored as the same instant.
#[tokio::test]
async fn an_expiry_past_year_9999_in_utc_is_refused() {
    use time::format_description::well_known::Rfc3339;
    let db = seeded().await;
    let s = secret();
    let any = IpAllowlist::default();
    let late = time::OffsetDateTime::parse("9999-12-31T23:00:00-02:00", &Rfc3339).unwrap();
    let key = NewApiKey {
        expires_at: Some(late),
        ..new_key("late", "admin", &s, &any)
    };
    let err = keys::create_api_key(&db.conn, key).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let fine = time::OffsetDateTime::parse("9999-12-31T20:00:00-02:00", &Rfc3339).unwrap();
    let key = NewApiKey {
        expires_at: Some(fine),
        ..new_key("fine", "admin", &s, &any)
    };
    let created = keys::create_api_key(&db.conn, key).await.unwrap();
    assert_eq!(created.expires_at, Some(fine));
    let err = keys::update_api_key(&db.conn, "fine", "admin", &any, Some(late))
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
}

#[tokio::test]
async fn api_key_conflicts_and_touch() {
    let db = seeded().await;
    let s = secret();
    let any = IpAllowlist::default();
    let created = keys::create_api_key(&db.conn, new_key("k", "admin", &s, &any))
        .await
        .unwrap();
    assert!(created.ip_allowlist.is_empty());

    let other = ApiKeySecret::parse("ek_ffffffffffffffffffffffffffffffff").unwrap();
    let err = keys::create_api_key(&db.conn, new_key("k", "admin", &other, &any))
        .await
        .unwrap_err();
    match err {
        StorageError::Conflict { message: msg, .. } => assert!(msg.contains("\"k\""), "{msg}"),
        e => panic!("{e:?}"),
    }
    let err = keys::create_api_key(&db.conn, new_key("k2", "admin", &s, &any))
        .await
        .unwrap_err();
    match err {
        StorageError::Conflict { message: msg, .. } => assert!(msg.contains("key id"), "{msg}"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        keys::create_api_key(&db.conn, new_key("k3", "ghost", &other, &any))
            .await
            .unwrap_err(),
        StorageError::NotFound { what: "role" }
    ));
    assert_eq!(keys::list_api_keys(&db.conn).await.unwrap().len(), 1);

    let at = datetime!(2026-11-23 10:00:00.123456 UTC);
    keys::touch_api_key(&db.conn, created.id, at).await.unwrap();
    let listed = keys::api_key_by_name(&db.conn, "k").await.unwrap().unwrap();
    assert_eq!(listed.last_used_at, Some(at));
    // A key gone in the meantime is not an error.
    keys::touch_api_key(&db.conn, created.id + 1000, at)
        .await
        .unwrap();

    // Deleting the role takes its keys with it: no fallback to another role.
    let custom = Role::from_json("temp", &json!({})).unwrap();
    roles::save_role(&db.conn, &custom).await.unwrap();
    keys::create_api_key(&db.conn, new_key("t", "temp", &other, &any))
        .await
        .unwrap();
    roles::delete_role(&db.conn, "temp").await.unwrap();
    assert!(
        keys::find_api_key(&db.conn, &other.key_id())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn users_groups_and_roles() {
    let db = seeded().await;
    let ann = users::create_user(&db.conn, "Ann", Some("ann@example.com"))
        .await
        .unwrap();
    let bob = users::create_user(&db.conn, "Bob", None).await.unwrap();
    assert!(matches!(
        users::create_user(&db.conn, "Ann 2", Some("ann@example.com"))
            .await
            .unwrap_err(),
        StorageError::Conflict { .. }
    ));

    let users = users::users_by_ids(&db.conn, &[bob.id, ann.id, bob.id, 999_999, i64::MAX])
        .await
        .unwrap();
    assert_eq!(users, [ann.clone(), bob.clone()]);
    assert!(users::users_by_ids(&db.conn, &[]).await.unwrap().is_empty());

    // public is not assignable to users, neither directly nor through a group.
    let err = users::assign_role(&db.conn, ann.id, "public")
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let group = groups::create_group(&db.conn, "editors").await.unwrap();
    assert!(matches!(
        groups::attach_role_to_group(&db.conn, group.id, "public")
            .await
            .unwrap_err(),
        StorageError::Conflict { .. }
    ));
    assert!(
        users::roles_of_user(&db.conn, ann.id)
            .await
            .unwrap()
            .is_empty()
    );

    users::assign_role(&db.conn, ann.id, "reader")
        .await
        .unwrap();
    users::assign_role(&db.conn, ann.id, "reader")
        .await
        .unwrap();
    groups::add_user_to_group(&db.conn, group.id, ann.id)
        .await
        .unwrap();
    groups::add_user_to_group(&db.conn, group.id, bob.id)
        .await
        .unwrap();
    groups::add_user_to_group(&db.conn, group.id, bob.id)
        .await
        .unwrap();
    groups::attach_role_to_group(&db.conn, group.id, "admin")
        .await
        .unwrap();
    groups::attach_role_to_group(&db.conn, group.id, "reader")
        .await
        .unwrap();
    assert_eq!(
        users::roles_of_user(&db.conn, ann.id).await.unwrap(),
        ["admin", "reader"]
    );
    assert_eq!(
        users::roles_of_user(&db.conn, bob.id).await.unwrap(),
        ["admin", "reader"]
    );

    assert!(matches!(
        users::assign_role(&db.conn, 999_999, "reader")
            .await
            .unwrap_err(),
        StorageError::NotFound { what: "user" }
    ));
    assert!(matches!(
        users::assign_role(&db.conn, ann.id, "ghost")
            .await
            .unwrap_err(),
        StorageError::NotFound { what: "role" }
    ));
    assert!(matches!(
        groups::add_user_to_group(&db.conn, 999_999, ann.id)
            .await
            .unwrap_err(),
        StorageError::NotFound { what: "group" }
    ));
    assert!(matches!(
        groups::create_group(&db.conn, "editors").await.unwrap_err(),
        StorageError::Conflict { .. }
    ));
}

/// Two administrators deleting the last two super-admins at the same moment: the access writes
/// take turns, so the second sees the first's delete and is refused (on PostgreSQL under READ
/// COMMITTED this needs the advisory lock).
#[tokio::test]
async fn concurrent_deletes_keep_one_super_admin() {
    let db = seeded().await;
    let mut ids = Vec::new();
    for name in ["One", "Two"] {
        let user = users::create_user(&db.conn, name, None).await.unwrap();
        users::assign_role(&db.conn, user.id, "super-admin")
            .await
            .unwrap();
        ids.push(user.id);
    }
    for _ in 0..5 {
        let (a, b) = tokio::join!(
            users::soft_delete_user(&db.conn, ids[0]),
            users::soft_delete_user(&db.conn, ids[1])
        );
        let refused: Vec<_> = [&a, &b]
            .into_iter()
            .filter(|r| matches!(r, Err(StorageError::Conflict { field, .. }) if field == "user"))
            .collect();
        assert_eq!(refused.len(), 1, "{a:?} {b:?}");
        assert_eq!(
            count(
                &db.conn,
                "SELECT COUNT(*) FROM users WHERE deleted_at IS NULL"
            )
            .await,
            1
        );
        for id in &ids {
            users::restore_user(&db.conn, *id).await.unwrap();
        }
    }
}

/// A user's list entry, with its direct roles and groups; search and trash.
#[tokio::test]
async fn users_list_with_their_roles_and_groups() {
    use vellum_storage::listing::{ListQuery, Trashed};
    let db = seeded().await;
    let group = groups::create_group(&db.conn, "staff").await.unwrap();
    let id = users::insert_user(
        &db.conn,
        &users::NewUser {
            name: "Ada",
            email: "Ada@Example.com",
            password_hash: None,
            email_verified_at: None,
            roles: &["reader".to_owned(), "admin".to_owned()],
            group_ids: &[group.id],
        },
    )
    .await
    .unwrap();
    let user = users::find_user(&db.conn, id).await.unwrap().unwrap();
    assert_eq!(user.roles, ["admin", "reader"]);
    assert_eq!(
        user.groups,
        [users::GroupRef {
            id: group.id,
            name: "staff".to_owned()
        }]
    );
    // The same email in another case, `public`, an unknown group: refused, nothing written.
    for (email, roles, groups, field) in [
        ("ada@example.COM", vec![], vec![], "email"),
        ("b@example.com", vec!["public".to_owned()], vec![], "roles"),
        ("b@example.com", vec![], vec![999_999], "group_ids"),
    ] {
        let err = users::insert_user(
            &db.conn,
            &users::NewUser {
                name: "B",
                email,
                password_hash: None,
                email_verified_at: None,
                roles: &roles,
                group_ids: &groups,
            },
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&err, StorageError::Conflict { field: f, .. } if f == field),
            "{err:?}"
        );
    }
    let query = |search: Option<&str>, trashed| ListQuery {
        search: search.map(str::to_owned),
        trashed,
        page: 1,
        per_page: 10,
    };
    let page = users::list_users(&db.conn, &query(Some("EXAMPLE"), Trashed::Without))
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items, [user]);
    users::soft_delete_user(&db.conn, id).await.unwrap();
    assert_eq!(
        users::list_users(&db.conn, &query(None, Trashed::Without))
            .await
            .unwrap()
            .total,
        0
    );
    assert_eq!(
        users::list_users(&db.conn, &query(None, Trashed::Only))
            .await
            .unwrap()
            .total,
        1
    );
}
