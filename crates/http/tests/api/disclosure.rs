//! What a response may disclose: every answer honours the actor's read grant and the role's item
//! filter, whatever the request writes or names (security review 2026-11, A1–A3). A write grant
//! never widens what the actor reads; a role's item filter decides visibility in the default
//! locale, whatever `locale` the caller sends.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Part, TestApp, png};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// The review's reproduction: a published item 1 and a draft item 2 with a secret score, and
/// roles that may write without reading.
fn manifest() -> Value {
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "folders": [{"name": "vault", "parent": null, "access": "private"}],
        "collections": [
            {"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "translatable": true},
                {"name": "status", "type": "string"},
                {"name": "secret_score", "type": "number"},
                {"name": "internal_notes", "type": "textarea"}
            ]}
        ],
        "roles": [
            {"name": "writer", "collection_permissions": {"articles": {"update": true,
                "rules": {"fields": {"internal_notes": {"read": false}}}}},
             "file_permissions": {"update": true, "delete": true, "create": true}},
            {"name": "creator", "collection_permissions": {"articles": {"create": true}}},
            {"name": "published-writer", "collection_permissions": {"articles": {
                "read": true, "create": true, "update": true,
                "rules": {"fields": {"secret_score": {"read": false}},
                          "item_filter": {"status": {"_eq": "published"}}}}},
             "file_permissions": {"read": true, "update": true, "delete": true, "create": true}}
        ],
        "api_keys": [
            {"name": "writer", "role": "writer"},
            {"name": "creator", "role": "creator"},
            {"name": "pw", "role": "published-writer"},
            {"name": "admin", "role": "super-admin"}
        ],
        "items": {"articles": [
            {"data": {"title": {"en": "Hello"}, "status": "published", "secret_score": 1}},
            {"data": {"title": {"en": "Secret draft"}, "status": "draft", "secret_score": 99,
                      "internal_notes": "n"}}
        ]}
    })
}

fn forbidden() -> Value {
    json!({"message": "Forbidden."})
}

fn not_found() -> Value {
    json!({"message": "Not found."})
}

/// A1: an update-only role gets only the id back from PATCH, never the item; the same for a
/// create-only role's POST; the write itself still happens.
#[actix_web::test]
async fn a_write_without_read_answers_only_the_id() {
    let app = TestApp::new(manifest()).await;
    let item = format!("{ARTICLES}/2");
    let show = app.get_as("writer", &item).await;
    assert_eq!(show.status, StatusCode::FORBIDDEN);
    assert_eq!(show.json(), forbidden());

    let empty = app
        .json(Method::PATCH, Some("writer"), &item, json!({"data": {}}))
        .await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.json(), json!({"data": {"id": 2}}));

    let write = app
        .json(
            Method::PATCH,
            Some("writer"),
            &item,
            json!({"data": {"secret_score": 100}}),
        )
        .await;
    assert_eq!(write.status, StatusCode::OK);
    assert_eq!(write.json(), json!({"data": {"id": 2}}));
    let stored = app.get_as("admin", &item).await.json();
    assert_eq!(stored["data"]["data"]["secret_score"], 100, "{stored}");

    let missing = app
        .json(
            Method::PATCH,
            Some("writer"),
            &format!("{ARTICLES}/99"),
            json!({"data": {}}),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    let created = app
        .json(
            Method::POST,
            Some("creator"),
            ARTICLES,
            json!({"data": {"title": "From a form", "status": "draft"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["data"]["id"].as_i64().unwrap();
    assert_eq!(created.json(), json!({"data": {"id": id}}));
    let stored = app
        .get_as("admin", &format!("{ARTICLES}/{id}"))
        .await
        .json();
    assert_eq!(stored["data"]["data"]["title"], "From a form");

    let deleted = app.delete(Some("writer"), &item).await;
    assert_eq!(deleted.status, StatusCode::FORBIDDEN, "no delete grant");
}

/// A1: with `read`, a write's response is exactly what the actor's show renders: field rules
/// apply, and a write that leaves the filter is refused before anything is answered.
#[actix_web::test]
async fn a_write_with_read_renders_as_show_does() {
    let app = TestApp::new(manifest()).await;
    let item = format!("{ARTICLES}/1");
    let patched = app
        .json(
            Method::PATCH,
            Some("pw"),
            &item,
            json!({"data": {"title": "Hi"}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    let shown = app.get_as("pw", &item).await;
    assert_eq!(patched.json(), shown.json());
    assert!(patched.json()["data"]["data"].get("secret_score").is_none());

    let hidden = app
        .json(
            Method::PATCH,
            Some("pw"),
            &format!("{ARTICLES}/2"),
            json!({"data": {}}),
        )
        .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert_eq!(hidden.json(), not_found());
    let leaving = app
        .json(
            Method::PATCH,
            Some("pw"),
            &item,
            json!({"data": {"status": "draft"}}),
        )
        .await;
    assert_eq!(leaving.status, StatusCode::FORBIDDEN);
}

async fn vault_id(app: &TestApp) -> i64 {
    let root = app.get_as("admin", "/api/v1/files").await.json();
    root["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["filename"] == "vault")
        .and_then(|f| f["id"].as_i64())
        .expect("the vault folder")
}

/// A2: files `update` without `read_private` neither reads nor writes a private file: PATCH and
/// DELETE answer 403 as show does and change nothing; a public file the role may not read, or an
/// upload into a private folder, answers only its id.
#[actix_web::test]
async fn a_file_write_reaches_only_what_show_reaches() {
    let app = TestApp::new(manifest()).await;
    let vault = vault_id(&app).await;
    let private = app
        .upload(
            Some("admin"),
            &[
                Part::text("parent_id", &vault.to_string()),
                Part::file("privfile.png", "image/png", &png(2, 2)),
            ],
        )
        .await
        .json()["data"]
        .clone();
    let private_id = private["id"].as_i64().unwrap();
    let public_id = app.upload_file(Some("admin"), "open.png", &png(2, 2)).await["id"]
        .as_i64()
        .unwrap();

    for (key, id) in [
        ("writer", private_id),
        ("pw", private_id),
        ("writer", vault),
    ] {
        let path = format!("/api/v1/files/{id}");
        let show = app.get_as(key, &path).await;
        assert_eq!(show.status, StatusCode::FORBIDDEN, "{key} show {id}");
        let patch = app
            .json(Method::PATCH, Some(key), &path, json!({"title": "x"}))
            .await;
        assert_eq!(patch.status, show.status, "{key} PATCH {id}");
        assert_eq!(patch.json(), show.json());
        let delete = app.delete(Some(key), &path).await;
        assert_eq!(delete.status, StatusCode::FORBIDDEN, "{key} DELETE {id}");
    }
    let kept = app
        .get_as("admin", &format!("/api/v1/files/{private_id}"))
        .await
        .json();
    assert_eq!(kept["data"]["title"], Value::Null, "nothing was written");
    assert_eq!(kept["data"]["filename"], "privfile.png");

    // A public file, update without read: the id only.
    let public = app
        .json(
            Method::PATCH,
            Some("writer"),
            &format!("/api/v1/files/{public_id}"),
            json!({"title": "renamed"}),
        )
        .await;
    assert_eq!(public.status, StatusCode::OK);
    assert_eq!(public.json(), json!({"data": {"id": public_id}}));
    // With read: the FileResource, as show renders it.
    let read = app
        .json(
            Method::PATCH,
            Some("pw"),
            &format!("/api/v1/files/{public_id}"),
            json!({}),
        )
        .await;
    assert_eq!(
        read.json(),
        app.get_as("pw", &format!("/api/v1/files/{public_id}"))
            .await
            .json()
    );

    // Dropping a file into a private folder works, and answers only the id.
    let dropped = app
        .upload(
            Some("writer"),
            &[
                Part::text("parent_id", &vault.to_string()),
                Part::file("drop.png", "image/png", &png(2, 2)),
            ],
        )
        .await;
    assert_eq!(dropped.status, StatusCode::CREATED);
    let id = dropped.json()["data"]["id"].as_i64().unwrap();
    assert_eq!(dropped.json(), json!({"data": {"id": id}}));
    // Without read, an upload answers its id only.
    let uploaded = app
        .upload(
            Some("writer"),
            &[Part::file("mine.png", "image/png", &png(2, 2))],
        )
        .await;
    assert_eq!(uploaded.status, StatusCode::CREATED);
    let id = uploaded.json()["data"]["id"].as_i64().unwrap();
    assert_eq!(uploaded.json(), json!({"data": {"id": id}}));
}

/// The review's A3 project: per-locale publishing with a translatable `state`.
fn pages() -> Value {
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "pages", "name": "Pages", "fields": [
                {"name": "title", "type": "string", "translatable": true},
                {"name": "state", "type": "string", "translatable": true},
                {"name": "body", "type": "textarea", "translatable": true}
            ]},
            {"slug": "menus", "name": "Menus", "fields": [
                {"name": "label", "type": "string"},
                {"name": "page", "type": "many_to_one", "settings": {"related_collection": "pages"}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "pages": {"read": true, "rules": {"item_filter": {"state": {"_eq": "live"}}}},
                "menus": {"read": true}
            }},
            {"name": "page-editor", "collection_permissions": {
                "pages": {"read": true, "update": true, "delete": true,
                          "rules": {"item_filter": {"state": {"_eq": "live"}}}}
            }}
        ],
        "api_keys": [{"name": "pe", "role": "page-editor"}],
        "items": {
            "pages": [
                {"data": {"title": {"en": "Live page", "de": "Seite"}, "state": {"en": "live", "de": "live"}, "body": {"en": "ok"}}},
                {"data": {"title": {"en": "EN draft page", "de": "DE live page"}, "state": {"en": "draft", "de": "live"},
                          "body": {"en": "EN-UNPUBLISHED-BODY", "de": "de body"}}},
                {"data": {"title": {"en": "EN live", "de": "DE draft"}, "state": {"en": "live", "de": "draft"}}}
            ],
            "menus": [{"data": {"label": "m", "page": 2}}]
        }
    })
}

/// A3: a role's item filter is evaluated in the default locale, whatever `locale` the caller
/// sends: lists, totals, show, expansions and writes agree, and `include_all_translations`
/// cannot reach an item hidden in the default locale.
#[actix_web::test]
async fn the_item_filter_ignores_the_requested_locale() {
    let app = TestApp::new(pages()).await;
    for query in [
        "",
        "?locale=de",
        "?locale=de&include_all_translations=true",
        "?include_all_translations=1",
    ] {
        let list = app
            .get(&format!("/api/v1/collections/pages/items{query}"))
            .await;
        assert_eq!(list.status, StatusCode::OK);
        let body = list.json();
        let ids: Vec<i64> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [1, 3], "{query}: {body}");
        assert_eq!(body["meta"]["total"], 2, "{query}");
        assert!(!body.to_string().contains("EN-UNPUBLISHED-BODY"), "{query}");

        let hidden = app
            .get(&format!("/api/v1/collections/pages/items/2{query}"))
            .await;
        assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{query}");
        assert_eq!(hidden.json(), not_found());
    }
    // Items of all collections share one id sequence: the menu is item 4.
    for query in [
        "?include=page",
        "?include=page&locale=de&include_all_translations=true",
    ] {
        let menu = app
            .get(&format!("/api/v1/collections/menus/items{query}"))
            .await
            .json();
        assert_eq!(
            menu["data"][0]["data"]["page"], 2,
            "{query}: stays a lean link: {menu}"
        );
    }
    // A filter in the request's locale still narrows what the role sees.
    let de = app
        .get("/api/v1/collections/pages/items?locale=de&filter[state][_eq]=live")
        .await
        .json();
    assert_eq!(de["meta"]["total"], 1, "{de}");
    // Writes: the hidden item is not found in any locale; a visible one is written.
    let patch = app
        .json(
            Method::PATCH,
            Some("pe"),
            "/api/v1/collections/pages/items/2?locale=de",
            json!({"data": {"body": "x"}}),
        )
        .await;
    assert_eq!(patch.status, StatusCode::NOT_FOUND);
    let delete = app
        .send(app.authed(
            TestApp::request(
                Method::DELETE,
                "/api/v1/collections/pages/items/2?locale=de",
            ),
            Some("pe"),
        ))
        .await;
    assert_eq!(delete.status, StatusCode::NOT_FOUND);
    // Writing the German state of a visible page does not hide it: the filter reads English.
    let de_draft = app
        .json(
            Method::PATCH,
            Some("pe"),
            "/api/v1/collections/pages/items/1?locale=de",
            json!({"data": {"state": "draft"}}),
        )
        .await;
    assert_eq!(de_draft.status, StatusCode::OK, "{:?}", de_draft.json());
    assert_eq!(de_draft.json()["data"]["data"]["state"], "draft");
    // Moving the default locale out of the filter is refused.
    let en_draft = app
        .json(
            Method::PATCH,
            Some("pe"),
            "/api/v1/collections/pages/items/1",
            json!({"data": {"state": "draft"}}),
        )
        .await;
    assert_eq!(en_draft.status, StatusCode::FORBIDDEN);
}
