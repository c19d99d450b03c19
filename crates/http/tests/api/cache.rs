//! The public API response cache: hits replay the same body, every write makes the next read of
//! every role fresh, roles never share entries, and only 200 responses are kept.

use std::sync::Arc;

use actix_web::http::{Method, StatusCode};
use actix_web::test;
use serde_json::{Value, json};
use vellum_http::cache::{MAX_ENTRY_BYTES, RedisBackend};
use vellum_http::{AppState, Backends, HttpConfig};
use vellum_policy::MAX_OPERAND_CHARS;
use vellum_storage::blob::ObjectBlobStore;

use crate::support::{REDIS_ENV, Response, TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// GET as `key` (None: anonymous).
async fn read(app: &TestApp, key: Option<&str>, path: &str) -> Response {
    match key {
        Some(key) => app.get_as(key, path).await,
        None => app.get(path).await,
    }
}

fn assert_hit(res: &Response, what: &str) {
    assert_eq!(res.status, StatusCode::OK, "{what}");
    assert_eq!(res.header("x-cache"), Some("hit"), "{what}");
}

fn assert_not_hit(res: &Response, what: &str) {
    assert_ne!(res.header("x-cache"), Some("hit"), "{what}");
}

/// The roles of the blog, as key names (None: public).
const ROLES: [Option<&str>; 3] = [None, Some("editor-key"), Some("admin-key")];

/// Reads `path` as every role twice, so each has a cached entry; returns the bodies.
async fn warm(app: &TestApp, path: &str) -> Vec<Value> {
    let mut bodies = Vec::new();
    for key in ROLES {
        let first = read(app, key, path).await;
        assert_eq!(first.status, StatusCode::OK, "{key:?}");
        let second = read(app, key, path).await;
        assert_hit(&second, &format!("{key:?} warm {path}"));
        bodies.push(second.json());
    }
    bodies
}

#[actix_web::test]
async fn a_second_identical_get_is_a_hit_with_the_same_body() {
    let app = TestApp::new(blog()).await;
    for path in [
        ARTICLES,
        "/api/v1/collections",
        "/api/v1/collections/articles",
        "/api/v1/collections/authors/items?locale=de",
    ] {
        let first = app.get(path).await;
        assert_eq!(first.status, StatusCode::OK, "{path}");
        assert_eq!(first.header("x-cache"), Some("miss"), "{path}");
        let second = app.get(path).await;
        assert_hit(&second, path);
        assert_eq!(second.body, first.body, "{path}");
        assert_eq!(
            second.header("content-type"),
            first.header("content-type"),
            "{path}"
        );
        assert!(second.header("x-request-id").is_some(), "{path}");
    }
}

#[actix_web::test]
async fn a_create_makes_the_next_read_of_every_role_fresh() {
    let app = TestApp::new(blog()).await;
    let before = warm(&app, ARTICLES).await;
    let totals: Vec<&Value> = before.iter().map(|b| &b["meta"]["total"]).collect();
    assert_eq!(totals, [&json!(1), &json!(2), &json!(2)]);
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "Fresh", "status": "published"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    for (key, expected) in ROLES.into_iter().zip([2, 3, 3]) {
        let res = read(&app, key, ARTICLES).await;
        assert_eq!(res.status, StatusCode::OK);
        assert_not_hit(&res, &format!("{key:?} after create"));
        assert_eq!(res.json()["meta"]["total"], expected, "{key:?}");
        assert_hit(
            &read(&app, key, ARTICLES).await,
            &format!("{key:?} re-cached"),
        );
    }
}

#[actix_web::test]
async fn an_update_makes_the_next_read_of_every_role_fresh() {
    let app = TestApp::new(blog()).await;
    let id = app.get(ARTICLES).await.json()["data"][0]["id"]
        .as_i64()
        .unwrap();
    let show = format!("{ARTICLES}/{id}");
    warm(&app, ARTICLES).await;
    warm(&app, &show).await;
    let patched = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &show,
            json!({"data": {"title": "Changed"}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{:?}", patched.json());
    for key in ROLES {
        let list = read(&app, key, ARTICLES).await;
        assert_not_hit(&list, &format!("{key:?} list after update"));
        let list = list.json();
        let item = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == id)
            .unwrap();
        assert_eq!(item["data"]["title"], "Changed", "{key:?}");
        let one = read(&app, key, &show).await;
        assert_not_hit(&one, &format!("{key:?} show after update"));
        assert_eq!(one.json()["data"]["data"]["title"], "Changed", "{key:?}");
    }
}

#[actix_web::test]
async fn a_delete_makes_the_next_read_of_every_role_fresh() {
    let app = TestApp::new(blog()).await;
    let id = app.get(ARTICLES).await.json()["data"][0]["id"]
        .as_i64()
        .unwrap();
    let show = format!("{ARTICLES}/{id}");
    warm(&app, ARTICLES).await;
    warm(&app, &show).await;
    let deleted = app.delete(Some("editor-key"), &show).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    for (key, expected) in ROLES.into_iter().zip([0, 1, 1]) {
        let list = read(&app, key, ARTICLES).await;
        assert_not_hit(&list, &format!("{key:?} list after delete"));
        assert_eq!(list.json()["meta"]["total"], expected, "{key:?}");
        let one = read(&app, key, &show).await;
        assert_eq!(one.status, StatusCode::NOT_FOUND, "{key:?}");
        assert_eq!(one.json(), json!({"message": "Not found."}));
    }
}

#[actix_web::test]
async fn roles_never_share_entries() {
    let app = TestApp::new(blog()).await;
    let public = app.get(ARTICLES).await;
    assert_eq!(public.json()["meta"]["total"], 1);
    assert_hit(&app.get(ARTICLES).await, "public");
    let editor = app.get_as("editor-key", ARTICLES).await;
    assert_eq!(editor.header("x-cache"), Some("miss"));
    assert_eq!(editor.json()["meta"]["total"], 2);
    let editor = app.get_as("editor-key", ARTICLES).await;
    assert_hit(&editor, "editor");
    assert_eq!(editor.json()["meta"]["total"], 2);
    let admin = app.get_as("admin-key", ARTICLES).await;
    assert_eq!(admin.header("x-cache"), Some("miss"));
    assert_eq!(admin.json()["data"][1]["data"]["internal_notes"], "wip");
    let public = app.get(ARTICLES).await;
    assert_hit(&public, "public again");
    assert_eq!(public.json()["meta"]["total"], 1);
    assert!(
        public.json()["data"][0]["data"]
            .get("internal_notes")
            .is_none()
    );
    // A role without read is refused, not served someone else's entry.
    let reader = app.get_as("reader-key", ARTICLES).await;
    assert_eq!(reader.status, StatusCode::FORBIDDEN);
}

#[actix_web::test]
async fn query_order_is_normalized() {
    let app = TestApp::new(blog()).await;
    let a = app
        .get_as("editor-key", &format!("{ARTICLES}?page=1&per_page=1"))
        .await;
    assert_eq!(a.header("x-cache"), Some("miss"));
    let b = app
        .get_as("editor-key", &format!("{ARTICLES}?per_page=1&page=1"))
        .await;
    assert_hit(&b, "reordered query");
    assert_eq!(a.body, b.body);
    let c = app
        .get_as("editor-key", &format!("{ARTICLES}?per_page=1&page=2"))
        .await;
    assert_eq!(
        c.header("x-cache"),
        Some("miss"),
        "another page is another entry"
    );
    assert_ne!(c.json()["data"], a.json()["data"]);
    let d = app
        .get_as(
            "editor-key",
            &format!("{ARTICLES}?locale=de&page=1&per_page=1"),
        )
        .await;
    assert_eq!(
        d.header("x-cache"),
        Some("miss"),
        "another locale is another entry"
    );
    assert_eq!(d.json()["data"][0]["data"]["title"], "Hallo");
}

#[actix_web::test]
async fn with_the_cache_off_nothing_is_a_hit() {
    let config = HttpConfig {
        cache: false,
        ..Default::default()
    };
    let app = TestApp::with_config(blog(), config).await;
    let first = app.get(ARTICLES).await;
    for _ in 0..3 {
        let res = app.get(ARTICLES).await;
        assert_eq!(res.status, StatusCode::OK);
        assert_not_hit(&res, "cache off");
        assert_eq!(res.body, first.body);
    }
    assert_not_hit(&app.get_as("editor-key", ARTICLES).await, "cache off");
    assert_not_hit(&app.get_as("editor-key", ARTICLES).await, "cache off");
}

/// Without the response cache, a list's total is counted once per epoch and filter: the next
/// page costs one statement less, and every kind of write makes the next total exact again.
#[actix_web::test]
async fn list_totals_are_remembered_until_the_next_write() {
    use std::sync::atomic::Ordering;
    let config = HttpConfig {
        cache: false,
        ..Default::default()
    };
    let (app, counter) = crate::support::with_statement_counter(blog(), config).await;
    let total = |res: &Response| res.json()["meta"]["total"].clone();
    let read = |path: &'static str| {
        let app = &app;
        async move { app.get_as("editor-key", path).await }
    };
    // Warm the snapshot, then measure a first count and a remembered one.
    assert_eq!(total(&read(ARTICLES).await), 2);
    // The key's `last_used_at` is written in the background after its first use.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    counter.store(0, Ordering::SeqCst);
    let draft = "/api/v1/collections/articles/items?filter[status][_eq]=draft";
    assert_eq!(total(&read(draft).await), 1);
    let counted = counter.swap(0, Ordering::SeqCst);
    let next_page = "/api/v1/collections/articles/items?filter[status][_eq]=draft&per_page=5";
    assert_eq!(total(&read(next_page).await), 1);
    assert_eq!(counter.swap(0, Ordering::SeqCst), counted - 1);
    assert_eq!(total(&read(draft).await), 1);
    assert_eq!(counter.swap(0, Ordering::SeqCst), counted - 1);

    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "Third", "status": "draft"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["data"]["id"].as_i64().unwrap();
    assert_eq!(total(&read(ARTICLES).await), 3);
    let filtered = read("/api/v1/collections/articles/items?filter[status][_eq]=draft").await;
    assert_eq!(total(&filtered), 2);
    let updated = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{ARTICLES}/{id}"),
            json!({"data": {"status": "published"}}),
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    let filtered = read("/api/v1/collections/articles/items?filter[status][_eq]=draft").await;
    assert_eq!(total(&filtered), 1);
    let deleted = app
        .delete(Some("editor-key"), &format!("{ARTICLES}/{id}"))
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(total(&read(ARTICLES).await), 2);
    // The public role's item filter gives its own total.
    assert_eq!(total(&app.get(ARTICLES).await), 1);
}

/// A write through the API changes content, not the project: the next request does not reload
/// the snapshot (settings, schema, roles) from the database.
#[actix_web::test]
async fn a_content_write_does_not_reload_the_project() {
    use std::sync::atomic::Ordering;
    let config = HttpConfig {
        cache: false,
        ..Default::default()
    };
    let (app, counter) = crate::support::with_statement_counter(blog(), config).await;
    let first = app.get_as("editor-key", ARTICLES).await.json()["data"][0]["id"].clone();
    let show = format!("{ARTICLES}/{first}");
    assert_eq!(app.get_as("editor-key", &show).await.status, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    counter.store(0, Ordering::SeqCst);
    assert_eq!(app.get_as("editor-key", &show).await.status, StatusCode::OK);
    let one_read = counter.swap(0, Ordering::SeqCst);
    for title in ["a", "b"] {
        let created = app
            .json(
                Method::POST,
                Some("editor-key"),
                ARTICLES,
                json!({"data": {"title": title, "status": "draft"}}),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED);
        counter.store(0, Ordering::SeqCst);
        assert_eq!(app.get_as("editor-key", &show).await.status, StatusCode::OK);
        assert_eq!(
            counter.swap(0, Ordering::SeqCst),
            one_read,
            "after creating {title}"
        );
    }
}

/// Invalidation is per collection (issue 24): a write stales the answers that can contain it
/// (its collection, the collections whose relations reach it, files for file fields) and leaves
/// the others warm; a change of the project stales everything.
#[actix_web::test]
async fn a_write_stales_only_the_collections_that_can_show_it() {
    let app = TestApp::new(blog()).await;
    const AUTHORS: &str = "/api/v1/collections/authors/items";
    const TAGS: &str = "/api/v1/collections/tags/items";
    // articles: many_to_one authors, many_to_many tags, an image field.
    let warm_all = || async {
        for path in [ARTICLES, AUTHORS, TAGS] {
            app.get_as("admin-key", path).await;
            assert_hit(
                &app.get_as("admin-key", path).await,
                &format!("warm {path}"),
            );
        }
    };
    let expect = |stale: &'static [&'static str], fresh: &'static [&'static str], what| {
        let app = &app;
        async move {
            for path in stale {
                let res = app.get_as("admin-key", path).await;
                assert_eq!(res.status, StatusCode::OK, "{what}: {path}");
                assert_not_hit(&res, &format!("{what}: {path} must be stale"));
            }
            for path in fresh {
                assert_hit(
                    &app.get_as("admin-key", path).await,
                    &format!("{what}: {path} must stay warm"),
                );
            }
        }
    };

    warm_all().await;
    crate::support::post_item(&app, "tags", json!({"label": "new"})).await;
    expect(&[TAGS, ARTICLES], &[AUTHORS], "a tag written").await;

    warm_all().await;
    crate::support::post_item(&app, "authors", json!({"name": "Grace"})).await;
    expect(&[AUTHORS, ARTICLES], &[TAGS], "an author written").await;

    warm_all().await;
    crate::support::post_item(&app, "articles", json!({"title": "New"})).await;
    expect(&[ARTICLES], &[AUTHORS, TAGS], "an article written").await;
    let total = app.get_as("admin-key", ARTICLES).await.json()["meta"]["total"].clone();
    assert_eq!(total, 3, "the list total is the fresh one");

    warm_all().await;
    app.upload_file(Some("admin-key"), "notes.txt", b"hello")
        .await;
    expect(&[ARTICLES], &[AUTHORS, TAGS], "a file uploaded").await;

    warm_all().await;
    app.state.invalidate().await;
    expect(&[ARTICLES, AUTHORS, TAGS], &[], "the project changed").await;
}

#[actix_web::test]
async fn only_200_responses_are_cached() {
    let app = TestApp::new(blog()).await;
    let cases = [
        (None, format!("{ARTICLES}/999"), StatusCode::NOT_FOUND),
        (
            None,
            "/api/v1/collections/nope/items".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        (
            None,
            "/api/v1/collections/tags/items".to_owned(),
            StatusCode::FORBIDDEN,
        ),
        (
            None,
            format!("{ARTICLES}?per_page=0"),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Some("reader-key"),
            ARTICLES.to_owned(),
            StatusCode::FORBIDDEN,
        ),
    ];
    for (key, path, status) in &cases {
        for _ in 0..2 {
            let res = read(&app, *key, path).await;
            assert_eq!(res.status, *status, "{key:?} {path}");
            assert_not_hit(&res, &format!("{key:?} {path}"));
            assert!(res.json()["message"].is_string());
        }
    }
    // A 404 does not stay cached once the item exists: ask for the id the next item will
    // (most likely) get, then create it.
    let mut max_id = 0;
    for slug in ["articles", "authors", "tags"] {
        let list = app
            .get_as("admin-key", &format!("/api/v1/collections/{slug}/items"))
            .await
            .json();
        for item in list["data"].as_array().unwrap() {
            max_id = max_id.max(item["id"].as_i64().unwrap());
        }
    }
    let next = format!("{ARTICLES}/{}", max_id + 1);
    for _ in 0..2 {
        let missing = app.get_as("editor-key", &next).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
    }
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": "Six"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["data"]["id"].as_i64().unwrap();
    let found = app.get_as("editor-key", &format!("{ARTICLES}/{id}")).await;
    assert_eq!(found.status, StatusCode::OK);
    assert_eq!(found.json()["data"]["data"]["title"], "Six");
}

#[actix_web::test]
async fn a_change_behind_the_servers_back_is_visible_after_invalidation() {
    let mut app = TestApp::new(blog()).await;
    warm(&app, ARTICLES).await;
    warm(&app, "/api/v1/collections").await;
    // Another manifest: public may now read every article and the tags.
    let mut changed = blog();
    changed["roles"][0] = json!({"name": "public", "collection_permissions": {
        "articles": {"read": true},
        "authors": {"read": true},
        "tags": {"read": true}
    }, "file_permissions": {"read": true}});
    app.apply(changed).await;
    let list = app.get(ARTICLES).await;
    assert_not_hit(&list, "after apply");
    let list = list.json();
    assert_eq!(list["meta"]["total"], 2);
    assert_eq!(list["data"][1]["data"]["internal_notes"], "wip");
    let collections = app.get("/api/v1/collections").await;
    assert_not_hit(&collections, "collections after apply");
    assert_eq!(collections.json()["data"].as_array().unwrap().len(), 3);
    assert_eq!(
        app.get("/api/v1/collections/tags/items").await.status,
        StatusCode::OK
    );
}

#[actix_web::test]
async fn a_grant_change_behind_the_servers_back_is_seen_once_the_snapshot_expires() {
    let config = HttpConfig {
        snapshot_ttl: std::time::Duration::ZERO,
        ..Default::default()
    };
    let app = TestApp::with_config(blog(), config).await;
    warm(&app, ARTICLES).await;
    // As `vellum-admin apply` would: straight to the database, no invalidation.
    let mut changed = blog();
    changed["roles"][0]["collection_permissions"]["articles"] = json!({"read": true});
    vellum_manifest::apply(&app.db.conn, &changed)
        .await
        .unwrap();
    let list = app.get(ARTICLES).await;
    assert_not_hit(&list, "after a grant change");
    assert_eq!(list.json()["meta"]["total"], 2);
    // The editor's entry was computed under the old project too.
    assert_not_hit(
        &app.get_as("editor-key", ARTICLES).await,
        "editor after a grant change",
    );
}

// ---------------------------------------------------------------------------------------------
// Bounded entries (issue 28, R3 and R6): keys by meaning, a size cap per entry
// ---------------------------------------------------------------------------------------------

/// Another replica of `app`'s database over `backends` (in-process or Redis, whatever the
/// environment says for `app` itself).
async fn replica_with(app: &TestApp, backends: impl FnOnce(&HttpConfig) -> Backends) -> AppState {
    let config = HttpConfig {
        base_url: crate::support::BASE_URL.to_owned(),
        ..HttpConfig::default()
    };
    let backends = backends(&config);
    AppState::with_backends(app.db.conn.clone(), config, backends)
        .await
        .unwrap()
}

fn blobs() -> Arc<ObjectBlobStore> {
    Arc::new(ObjectBlobStore::in_memory())
}

/// 1,000 anonymous lists differing only in a parameter no handler reads make one entry, and all
/// but the first are hits; the same for the other cached routes.
async fn unknown_parameters_add_at_most_one_entry(state: &AppState) {
    let service = test::init_service(vellum_http::app(state.clone())).await;
    let get = |path: String| {
        let service = &service;
        async move {
            let req = TestApp::request(Method::GET, &path).to_request();
            let res = test::call_service(service, req).await;
            let status = res.status();
            let cache = res
                .headers()
                .get("x-cache")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body: Value = test::read_body_json(res).await;
            (status, cache, body)
        }
    };
    assert_eq!(state.cached_entries().await, Some(0));
    let mut id = Value::Null;
    for i in 0..1000 {
        let (status, cache, body) = get(format!("{ARTICLES}?u={i}&per_page=10&zz{i}=1")).await;
        assert_eq!(status, StatusCode::OK, "{i}");
        let expected = if i == 0 { "miss" } else { "hit" };
        assert_eq!(cache.as_deref(), Some(expected), "{i}");
        id = body["data"][0]["id"].clone();
    }
    assert_eq!(state.cached_entries().await, Some(1));
    for path in [
        format!("{ARTICLES}/{id}"),
        "/api/v1/collections".to_owned(),
        "/api/v1/collections/articles".to_owned(),
    ] {
        for i in 0..50 {
            let (status, ..) = get(format!("{path}?page={i}&u={i}")).await;
            assert_eq!(status, StatusCode::OK, "{path}");
        }
    }
    assert_eq!(state.cached_entries().await, Some(4));
}

#[actix_web::test]
async fn unknown_parameters_add_no_entry_in_the_in_process_cache() {
    let app = TestApp::new(blog()).await;
    let state = replica_with(&app, |config| Backends::local(config, blobs())).await;
    unknown_parameters_add_at_most_one_entry(&state).await;
}

#[actix_web::test]
async fn unknown_parameters_add_no_entry_in_redis() {
    let Some(url) = std::env::var(REDIS_ENV)
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("skipped: {REDIS_ENV} is not set");
        return;
    };
    let app = TestApp::new(blog()).await;
    let namespace = format!("vellum-test-{}:", uuid::Uuid::new_v4());
    let redis = RedisBackend::new(url.trim(), 4)
        .unwrap()
        .with_namespace(&namespace);
    let state = replica_with(&app, |config| Backends::redis(config, blobs(), redis)).await;
    unknown_parameters_add_at_most_one_entry(&state).await;
}

/// A response over the per-entry cap is served whole, every time, and never stored; smaller ones
/// still are. Runs on whichever cache the test apps use (Redis when configured).
#[actix_web::test]
async fn a_response_over_the_entry_cap_is_served_but_not_cached() {
    let app = TestApp::new(blog()).await;
    let title = "t".repeat(MAX_ENTRY_BYTES + 1);
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            ARTICLES,
            json!({"data": {"title": title, "status": "draft"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["data"]["id"].as_i64().unwrap();
    let show = format!("{ARTICLES}/{id}");
    let before = app.state.cached_entries().await;
    for _ in 0..3 {
        let res = app.get_as("editor-key", &show).await;
        assert_eq!(res.status, StatusCode::OK);
        assert_eq!(res.header("x-cache"), Some("miss"));
        assert!(res.body.len() > MAX_ENTRY_BYTES);
        assert_eq!(res.json()["data"]["data"]["title"].as_str(), Some(&*title));
    }
    assert_eq!(app.state.cached_entries().await, before);
    let small = format!("{ARTICLES}?per_page=1");
    assert_eq!(
        app.get_as("editor-key", &small).await.header("x-cache"),
        Some("miss")
    );
    assert_hit(&app.get_as("editor-key", &small).await, "a small page");
    assert_eq!(
        app.state.cached_entries().await,
        before.map(|n| n + 1),
        "the small page is one entry"
    );
}

/// An over-long filter operand is refused before the cache is consulted: never answered from an
/// entry, never stored.
#[actix_web::test]
async fn an_over_long_filter_operand_is_never_cached() {
    let app = TestApp::new(blog()).await;
    let path = format!(
        "{ARTICLES}?filter[title]={}",
        "x".repeat(MAX_OPERAND_CHARS + 1)
    );
    for _ in 0..2 {
        let res = app.get(&path).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_not_hit(&res, "over-long operand");
    }
    assert_eq!(app.state.cached_entries().await, Some(0));
}

/// Public answers carry their cache tags (issue 24), on a miss and on a hit alike; with
/// `include`, the related collections' tags too.
#[actix_web::test]
async fn public_answers_carry_surrogate_keys_and_cache_tags() {
    let app = TestApp::new(blog()).await;
    for _ in 0..2 {
        let res = app.get("/api/v1/collections/articles/items/4").await;
        assert_eq!(res.status, 200);
        assert_eq!(
            res.header("surrogate-key"),
            Some("vellum collection:articles item:articles:4")
        );
        assert_eq!(
            res.header("cache-tag"),
            Some("vellum,collection:articles,item:articles:4")
        );
    }
    let res = app
        .get("/api/v1/collections/articles/items?include=author")
        .await;
    assert_eq!(
        res.header("surrogate-key"),
        Some("vellum collection:articles items:articles collection:authors collection:tags files")
    );
    let missing = app.get("/api/v1/collections/articles/items/999").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("surrogate-key"), None);
}
