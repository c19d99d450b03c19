//! Item writes: POST, PATCH and DELETE under `/api/v1/collections/{slug}/items`, with grants,
//! field rules, item filters, validation, revisions and `unique`.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::support::{Response, TestApp};

const POSTS: &str = "/api/v1/collections/posts/items";

/// `posts` with one field of each write shape under test; roles with different write grants:
/// `editor` (all four actions, `notes` neither readable nor writable), `writer` (create, read,
/// update; `views` not updatable; only published posts), `viewer` (read only).
fn manifest() -> Value {
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "posts", "name": "Posts", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {"required": true}},
                {"name": "summary", "type": "string", "translatable": true, "settings": {}},
                {"name": "status", "type": "select", "settings": {"options": ["draft", "published"]}},
                {"name": "views", "type": "number", "settings": {}},
                {"name": "featured", "type": "boolean", "settings": {}},
                {"name": "labels", "type": "tag", "settings": {}},
                {"name": "notes", "type": "textarea", "settings": {}},
                {"name": "sku", "type": "string", "settings": {"validation_rules": [{"operator": "unique"}]}}
            ]}
        ],
        "roles": [
            {"name": "editor", "collection_permissions": {
                "posts": {"create": true, "read": true, "update": true, "delete": true, "rules": {
                    "fields": {"notes": {"read": false, "create": false, "update": false}}
                }}
            }},
            {"name": "writer", "collection_permissions": {
                "posts": {"create": true, "read": true, "update": true, "rules": {
                    "fields": {"views": {"update": false}},
                    "item_filter": {"status": {"_eq": "published"}}
                }}
            }},
            {"name": "viewer", "collection_permissions": {"posts": {"read": true}}}
        ],
        "api_keys": [
            {"name": "editor-key", "role": "editor"},
            {"name": "writer-key", "role": "writer"},
            {"name": "viewer-key", "role": "viewer"},
            {"name": "admin-key", "role": "super-admin"}
        ],
        "items": {
            "posts": [
                {"data": {"title": {"en": "First", "de": "Erste"}, "status": "published", "views": 1, "notes": "n1", "sku": "A1"}},
                {"data": {"title": {"en": "Draft"}, "status": "draft", "views": 2, "sku": "B2"}}
            ]
        }
    })
}

fn forbidden() -> Value {
    json!({"message": "Forbidden."})
}

fn not_found() -> Value {
    json!({"message": "Not found."})
}

/// `meta.total` of the posts list as the super-admin sees it (every live item).
async fn total(app: &TestApp) -> u64 {
    let res = app.get_as("admin-key", POSTS).await;
    assert_eq!(res.status, StatusCode::OK);
    res.json()["meta"]["total"].as_u64().unwrap()
}

/// The stored item as the super-admin sees it, every translation included.
async fn stored(app: &TestApp, id: i64) -> Response {
    app.get_as(
        "admin-key",
        &format!("{POSTS}/{id}?include_all_translations=true"),
    )
    .await
}

fn assert_timestamp(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// A request with a raw body (not necessarily JSON) as key `key`.
async fn raw(app: &TestApp, method: Method, key: &str, path: &str, body: &'static str) -> Response {
    let secret = app.key(key).to_owned();
    app.send(
        TestApp::request(method, path)
            .insert_header(("authorization", format!("Bearer {secret}")))
            .insert_header(("content-type", "application/json"))
            .set_payload(body),
    )
    .await
}

#[actix_web::test]
async fn create_returns_201_with_the_whole_normalized_resource() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {
                "title": "Hello",
                "status": "published",
                "views": "12",
                "featured": "on",
                "labels": [" rust ", "rust", "", "cms"],
                "sku": "C3"
            }}),
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.json());
    assert!(
        res.header("content-type")
            .unwrap()
            .starts_with("application/json"),
        "{:?}",
        res.headers
    );
    let body = res.json();
    let item = body["data"].as_object().unwrap();
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    assert_eq!(item.len(), 9, "{body}");
    let id = item["id"].as_i64().unwrap();
    assert_eq!(id, 3);
    assert_timestamp(&item["created_at"]);
    assert_timestamp(&item["updated_at"]);
    let posts_id = app
        .get_as("admin-key", "/api/v1/collections/posts")
        .await
        .json()["data"]["id"]
        .clone();
    assert_eq!(item["collection_id"], posts_id);
    assert_eq!(item["user_created_id"], Value::Null);
    assert_eq!(item["user_updated_id"], Value::Null);
    assert_eq!(item["user_created"], Value::Null);
    assert_eq!(item["user_updated"], Value::Null);
    let data = item["data"].as_object().unwrap();
    assert_eq!(data.get("title"), Some(&json!("Hello")));
    assert_eq!(data.get("status"), Some(&json!("published")));
    assert_eq!(data.get("views"), Some(&json!(12)));
    assert_eq!(data.get("featured"), Some(&json!(true)));
    assert_eq!(data.get("labels"), Some(&json!(["rust", "cms"])));
    assert_eq!(data.get("sku"), Some(&json!("C3")));
    assert!(
        data.get("notes").is_none(),
        "a field the role cannot read is omitted: {body}"
    );

    // What was stored: the plain translatable value under the default locale.
    let stored = stored(&app, id).await.json();
    assert_eq!(stored["data"]["data"]["title"], json!({"en": "Hello"}));
    assert_eq!(stored["data"]["data"]["views"], json!(12));
    assert_eq!(total(&app).await, 3);
}

#[actix_web::test]
async fn a_plain_translatable_value_is_stored_under_the_request_locale_and_merged() {
    let app = TestApp::new(manifest()).await;
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            &format!("{POSTS}?locale=de"),
            json!({"data": {"title": {"en": "Cat"}, "summary": "Eine Katze"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.json());
    let body = created.json();
    assert_eq!(
        body["data"]["data"]["title"], "Cat",
        "de falls back to en: {body}"
    );
    assert_eq!(body["data"]["data"]["summary"], "Eine Katze");
    let id = body["data"]["id"].as_i64().unwrap();
    let all = stored(&app, id).await.json();
    assert_eq!(all["data"]["data"]["title"], json!({"en": "Cat"}));
    assert_eq!(all["data"]["data"]["summary"], json!({"de": "Eine Katze"}));

    // PATCH in German keeps the English title.
    let patched = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/{id}?locale=de"),
            json!({"data": {"title": "Katze"}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{:?}", patched.json());
    assert_eq!(patched.json()["data"]["data"]["title"], "Katze");
    let all = stored(&app, id).await.json();
    assert_eq!(
        all["data"]["data"]["title"],
        json!({"en": "Cat", "de": "Katze"})
    );
    assert_eq!(all["data"]["data"]["summary"], json!({"de": "Eine Katze"}));
    let en = app
        .get_as("editor-key", &format!("{POSTS}/{id}"))
        .await
        .json();
    assert_eq!(en["data"]["data"]["title"], "Cat");
    let de = app
        .get_as("editor-key", &format!("{POSTS}/{id}?locale=de"))
        .await
        .json();
    assert_eq!(de["data"]["data"]["title"], "Katze");
}

#[actix_web::test]
async fn create_validation_reports_every_field() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"views": "lots", "featured": "maybe", "status": "gone", "nope": 1}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json(),
        json!({
            "message": "The given data was invalid.",
            "errors": {
                "title": ["The title field is required."],
                "views": ["The views field must be a number."],
                "featured": ["The featured field must be true or false."],
                "status": ["The status field must be one of the field's options."],
                "nope": ["The nope field does not exist."]
            }
        })
    );
    assert_eq!(total(&app).await, 2, "nothing written");
}

#[actix_web::test]
async fn a_body_without_a_data_object_is_422_on_data() {
    let app = TestApp::new(manifest()).await;
    let bodies = [
        "not json at all",
        "",
        "[1, 2]",
        "{}",
        r#"{"title": "x"}"#,
        r#"{"data": null}"#,
        r#"{"data": "title"}"#,
        r#"{"data": [1]}"#,
    ];
    for body in bodies {
        for (method, path) in [
            (Method::POST, POSTS.to_owned()),
            (Method::PATCH, format!("{POSTS}/1")),
        ] {
            let res = raw(&app, method.clone(), "editor-key", &path, body).await;
            assert_eq!(
                res.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{method} {body:?}"
            );
            let json = res.json();
            assert_eq!(
                json["message"], "The given data was invalid.",
                "{body:?}: {json}"
            );
            let errors = json["errors"].as_object().unwrap();
            assert_eq!(
                errors.keys().collect::<Vec<_>>(),
                ["data"],
                "{body:?}: {json}"
            );
            let messages = errors["data"].as_array().unwrap();
            assert!(
                !messages.is_empty() && messages.iter().all(Value::is_string),
                "{json}"
            );
        }
    }
    assert_eq!(total(&app).await, 2);
    assert_eq!(
        stored(&app, 1).await.json()["data"]["data"]["title"],
        json!({"en": "First", "de": "Erste"})
    );
}

#[actix_web::test]
async fn create_without_the_create_grant_is_forbidden() {
    let app = TestApp::new(manifest()).await;
    let body = json!({"data": {"title": "Nope"}});
    let viewer = app
        .json(Method::POST, Some("viewer-key"), POSTS, body.clone())
        .await;
    assert_eq!(viewer.status, StatusCode::FORBIDDEN);
    assert_eq!(viewer.json(), forbidden());
    let anonymous = app.json(Method::POST, None, POSTS, body).await;
    assert_eq!(anonymous.status, StatusCode::FORBIDDEN);
    assert_eq!(anonymous.json(), forbidden());
    assert_eq!(total(&app).await, 2);
}

#[actix_web::test]
async fn create_naming_a_field_without_create_is_forbidden_and_writes_nothing() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"title": "Sneaky", "notes": "x"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), forbidden());
    // Even a null value names the field.
    let res = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"title": "Sneaky", "notes": null}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(total(&app).await, 2);
}

#[actix_web::test]
async fn create_outside_the_item_filter_is_forbidden_and_writes_nothing() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::POST,
            Some("writer-key"),
            POSTS,
            json!({"data": {"title": "Hidden", "status": "draft"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), forbidden());
    // No status at all is outside `status _eq published` too.
    let res = app
        .json(
            Method::POST,
            Some("writer-key"),
            POSTS,
            json!({"data": {"title": "Bare"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(total(&app).await, 2);

    let ok = app
        .json(
            Method::POST,
            Some("writer-key"),
            POSTS,
            json!({"data": {"title": "Visible", "status": "published"}}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{:?}", ok.json());
    assert_eq!(ok.json()["data"]["data"]["title"], "Visible");
    assert_eq!(total(&app).await, 3);
}

#[actix_web::test]
async fn patch_updates_only_the_given_fields() {
    let app = TestApp::new(manifest()).await;
    let before = stored(&app, 1).await.json();
    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"views": "7", "featured": false}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let body = res.json();
    let item = body["data"].as_object().unwrap();
    assert_eq!(item.len(), 9);
    assert_eq!(item["id"], 1);
    assert_eq!(item["user_updated_id"], Value::Null);
    assert_timestamp(&item["updated_at"]);
    assert_eq!(item["created_at"], before["data"]["created_at"]);
    assert_eq!(item["data"]["views"], 7);
    assert_eq!(item["data"]["featured"], false);
    assert_eq!(item["data"]["title"], "First");
    assert!(item["data"].get("notes").is_none(), "{body}");

    let after = stored(&app, 1).await.json();
    let mut expected = before["data"]["data"].clone();
    expected["views"] = json!(7);
    expected["featured"] = json!(false);
    assert_eq!(
        after["data"]["data"], expected,
        "untouched fields keep their values"
    );
    assert_eq!(after["data"]["data"]["notes"], "n1");
}

#[actix_web::test]
async fn patch_of_a_missing_deleted_or_filtered_item_is_404() {
    let app = TestApp::new(manifest()).await;
    let body = json!({"data": {"views": 3}});
    let unknown = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/999"),
            body.clone(),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json(), not_found());
    let not_an_id = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/abc"),
            body.clone(),
        )
        .await;
    assert_eq!(not_an_id.status, StatusCode::NOT_FOUND);

    // Item 2 is a draft: outside the writer's filter, so it does not exist for the writer.
    let filtered = app
        .json(
            Method::PATCH,
            Some("writer-key"),
            &format!("{POSTS}/2"),
            json!({"data": {"title": "x"}}),
        )
        .await;
    assert_eq!(filtered.status, StatusCode::NOT_FOUND);
    assert_eq!(filtered.json(), not_found());
    assert_eq!(
        stored(&app, 2).await.json()["data"]["data"]["title"],
        json!({"en": "Draft"})
    );

    assert_eq!(
        app.delete(Some("editor-key"), &format!("{POSTS}/2"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    let deleted = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/2"),
            body,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NOT_FOUND);
    assert_eq!(deleted.json(), not_found());
}

#[actix_web::test]
async fn patch_without_the_update_grant_or_field_update_is_forbidden() {
    let app = TestApp::new(manifest()).await;
    let viewer = app
        .json(
            Method::PATCH,
            Some("viewer-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"views": 3}}),
        )
        .await;
    assert_eq!(viewer.status, StatusCode::FORBIDDEN);
    assert_eq!(viewer.json(), forbidden());
    let anonymous = app
        .json(
            Method::PATCH,
            None,
            &format!("{POSTS}/1"),
            json!({"data": {"views": 3}}),
        )
        .await;
    assert_eq!(anonymous.status, StatusCode::FORBIDDEN);
    assert_eq!(anonymous.json(), forbidden());

    // `views` is `update: false` for the writer; together with an allowed field nothing is written.
    let field = app
        .json(
            Method::PATCH,
            Some("writer-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"title": "Changed", "views": 3}}),
        )
        .await;
    assert_eq!(field.status, StatusCode::FORBIDDEN);
    assert_eq!(field.json(), forbidden());
    let notes = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"notes": "x"}}),
        )
        .await;
    assert_eq!(notes.status, StatusCode::FORBIDDEN);
    assert_eq!(notes.json(), forbidden());

    let after = stored(&app, 1).await.json();
    assert_eq!(
        after["data"]["data"]["title"],
        json!({"en": "First", "de": "Erste"})
    );
    assert_eq!(after["data"]["data"]["views"], 1);
    assert_eq!(after["data"]["data"]["notes"], "n1");
    // The writer may still change what it may update.
    let ok = app
        .json(
            Method::PATCH,
            Some("writer-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"title": "Changed"}}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::OK, "{:?}", ok.json());
}

#[actix_web::test]
async fn patch_moving_the_item_outside_the_filter_is_forbidden_and_writes_nothing() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::PATCH,
            Some("writer-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"status": "draft", "title": "Gone"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.json(), forbidden());
    let after = stored(&app, 1).await.json();
    assert_eq!(after["data"]["data"]["status"], "published");
    assert_eq!(
        after["data"]["data"]["title"],
        json!({"en": "First", "de": "Erste"})
    );
    let revisions = vellum_storage::items::revisions(&app.db.conn, 1)
        .await
        .unwrap();
    assert_eq!(revisions.len(), 1, "no revision for a refused update");
    assert_eq!(
        app.get_as("writer-key", &format!("{POSTS}/1")).await.status,
        StatusCode::OK
    );
}

#[actix_web::test]
async fn patch_with_an_invalid_value_is_422_and_writes_nothing() {
    let app = TestApp::new(manifest()).await;
    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"views": [1], "title": "", "extra": true}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json(),
        json!({
            "message": "The given data was invalid.",
            "errors": {
                "views": ["The views field must be a number."],
                "title": ["The title field is required."],
                "extra": ["The extra field does not exist."]
            }
        })
    );
    let after = stored(&app, 1).await.json();
    assert_eq!(after["data"]["data"]["views"], 1);
    assert_eq!(
        after["data"]["data"]["title"],
        json!({"en": "First", "de": "Erste"})
    );
}

#[actix_web::test]
async fn delete_is_204_empty_then_the_item_is_gone() {
    let app = TestApp::new(manifest()).await;
    assert_eq!(total(&app).await, 2);
    let res = app.delete(Some("editor-key"), &format!("{POSTS}/1")).await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);
    assert!(
        res.body.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );

    let show = app.get_as("admin-key", &format!("{POSTS}/1")).await;
    assert_eq!(show.status, StatusCode::NOT_FOUND);
    assert_eq!(show.json(), not_found());
    let editor = app.get_as("editor-key", &format!("{POSTS}/1")).await;
    assert_eq!(editor.status, StatusCode::NOT_FOUND);
    assert_eq!(total(&app).await, 1);
    let listed = app.get_as("editor-key", POSTS).await.json();
    assert_eq!(listed["meta"]["total"], 1);
    assert_eq!(listed["data"][0]["id"], 2);

    let again = app.delete(Some("editor-key"), &format!("{POSTS}/1")).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(again.json(), not_found());
    let unknown = app
        .delete(Some("editor-key"), &format!("{POSTS}/999"))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json(), not_found());
    // History is kept.
    assert_eq!(
        vellum_storage::items::revisions(&app.db.conn, 1)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[actix_web::test]
async fn delete_without_the_delete_grant_is_forbidden() {
    let app = TestApp::new(manifest()).await;
    for key in [Some("writer-key"), Some("viewer-key"), None] {
        let res = app.delete(key, &format!("{POSTS}/1")).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{key:?}");
        assert_eq!(res.json(), forbidden());
    }
    assert_eq!(total(&app).await, 2);
    assert_eq!(
        app.get_as("admin-key", &format!("{POSTS}/1")).await.status,
        StatusCode::OK
    );
}

#[actix_web::test]
async fn delete_outside_the_item_filter_is_404() {
    let mut m = manifest();
    m["roles"][1]["collection_permissions"]["posts"]["delete"] = json!(true);
    let app = TestApp::new(m).await;
    let res = app.delete(Some("writer-key"), &format!("{POSTS}/2")).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json(), not_found());
    assert_eq!(total(&app).await, 2);
    assert_eq!(
        app.delete(Some("writer-key"), &format!("{POSTS}/1"))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(total(&app).await, 1);
}

#[actix_web::test]
async fn revisions_are_recorded_on_create_and_update() {
    let app = TestApp::new(manifest()).await;
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"title": "Rev", "views": 1}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let id = created.json()["data"]["id"].as_i64().unwrap();
    let revisions = vellum_storage::items::revisions(&app.db.conn, id)
        .await
        .unwrap();
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0].item_id, id);
    assert_eq!(revisions[0].user_id, None);
    assert_eq!(revisions[0].data.get("title"), Some(&json!({"en": "Rev"})));
    assert_eq!(revisions[0].data.get("views"), Some(&json!(1)));

    let patched = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/{id}"),
            json!({"data": {"views": 2}}),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    let revisions = vellum_storage::items::revisions(&app.db.conn, id)
        .await
        .unwrap();
    assert_eq!(revisions.len(), 2);
    assert!(revisions[0].id < revisions[1].id);
    assert_eq!(revisions[1].data.get("views"), Some(&json!(2)));
    assert_eq!(
        revisions[1].data.get("title"),
        Some(&json!({"en": "Rev"})),
        "a revision holds the complete data"
    );
    assert_eq!(
        revisions[0].data.get("views"),
        Some(&json!(1)),
        "older revisions are kept"
    );

    // Refused and invalid writes record nothing.
    let invalid = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/{id}"),
            json!({"data": {"views": "x"}}),
        )
        .await;
    assert_eq!(invalid.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        vellum_storage::items::revisions(&app.db.conn, id)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[actix_web::test]
async fn a_unique_value_already_taken_is_422() {
    let app = TestApp::new(manifest()).await;
    let expected = json!({
        "message": "The given data was invalid.",
        "errors": {"sku": ["The sku has already been taken."]}
    });
    let dup = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"title": "Dup", "sku": "A1"}}),
        )
        .await;
    assert_eq!(dup.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(dup.json(), expected);
    assert_eq!(total(&app).await, 2, "nothing written");

    let dup = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/2"),
            json!({"data": {"sku": "A1"}}),
        )
        .await;
    assert_eq!(dup.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(dup.json(), expected);
    assert_eq!(stored(&app, 2).await.json()["data"]["data"]["sku"], "B2");

    // An item keeps its own value; a fresh value is fine; a freed value can be reused.
    let same = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"sku": "A1", "views": 5}}),
        )
        .await;
    assert_eq!(same.status, StatusCode::OK, "{:?}", same.json());
    let fresh = app
        .json(
            Method::POST,
            Some("editor-key"),
            POSTS,
            json!({"data": {"title": "New", "sku": "Z9"}}),
        )
        .await;
    assert_eq!(fresh.status, StatusCode::CREATED, "{:?}", fresh.json());
    let moved = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/1"),
            json!({"data": {"sku": "A2"}}),
        )
        .await;
    assert_eq!(moved.status, StatusCode::OK, "{:?}", moved.json());
    let reuse = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{POSTS}/2"),
            json!({"data": {"sku": "A1"}}),
        )
        .await;
    assert_eq!(reuse.status, StatusCode::OK, "{:?}", reuse.json());
}

#[actix_web::test]
async fn writes_to_an_unknown_collection_are_404() {
    let app = TestApp::new(manifest()).await;
    let path = "/api/v1/collections/nope/items";
    let body = json!({"data": {"title": "x"}});
    for key in [Some("admin-key"), Some("editor-key"), None] {
        let post = app.json(Method::POST, key, path, body.clone()).await;
        assert_eq!(post.status, StatusCode::NOT_FOUND, "{key:?}");
        assert_eq!(post.json(), not_found());
        let patch = app
            .json(Method::PATCH, key, &format!("{path}/1"), body.clone())
            .await;
        assert_eq!(patch.status, StatusCode::NOT_FOUND, "{key:?}");
        assert_eq!(patch.json(), not_found());
        let delete = app.delete(key, &format!("{path}/1")).await;
        assert_eq!(delete.status, StatusCode::NOT_FOUND, "{key:?}");
        assert_eq!(delete.json(), not_found());
    }
}

/// A singleton collection with a required field, and a key for the super-admin.
fn singleton_manifest() -> Value {
    json!({
        "collections": [
            {"slug": "site", "name": "Site", "is_singleton": true, "fields": [
                {"name": "title", "type": "string", "settings": {}}
            ]}
        ],
        "api_keys": [{"name": "admin-key", "role": "super-admin"}]
    })
}

const SITE: &str = "/api/v1/collections/site/items";

/// A singleton holds one item: the public API creates it once and refuses a second create with a
/// 422 on `data` pointing to the singleton upsert (issue 18). A soft-deleted item still counts.
#[actix_web::test]
async fn a_singleton_takes_one_item_and_refuses_a_second_create() {
    let app = TestApp::new(singleton_manifest()).await;
    let body = || json!({"data": {"title": "Home"}});
    let first = app
        .json(Method::POST, Some("admin-key"), SITE, body())
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{:?}", first.json());
    let second = app
        .json(Method::POST, Some("admin-key"), SITE, body())
        .await;
    assert_eq!(second.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        second.json(),
        json!({
            "message": "The given data was invalid.",
            "errors": {"data": [
                "The collection site is a singleton and already has its item: update that item \
                 (admin app: PUT /collections/site/singleton-content)."
            ]}
        })
    );
    let list = app.get_as("admin-key", SITE).await.json();
    assert_eq!(list["meta"]["total"], 1, "{list}");
    // Soft-deleted, the item still counts: restoring it must never make two.
    let id = first.json()["data"]["id"].as_i64().unwrap();
    let deleted = app.delete(Some("admin-key"), &format!("{SITE}/{id}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let again = app
        .json(Method::POST, Some("admin-key"), SITE, body())
        .await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(again.json()["errors"]["data"].is_array());
}

/// Concurrent creates in an empty singleton: exactly one wins, whatever the interleaving (the
/// check runs under a lock inside the create's transaction).
#[actix_web::test]
async fn concurrent_creates_in_an_empty_singleton_make_one_item() {
    let app = TestApp::new(singleton_manifest()).await;
    let posts = (0..4).map(|i| {
        app.json(
            Method::POST,
            Some("admin-key"),
            SITE,
            json!({"data": {"title": format!("Home {i}")}}),
        )
    });
    let results = futures_util::future::join_all(posts).await;
    let statuses: Vec<StatusCode> = results.iter().map(|r| r.status).collect();
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::CREATED || *s == StatusCode::UNPROCESSABLE_ENTITY),
        "{statuses:?}"
    );
    let list = app.get_as("admin-key", SITE).await.json();
    assert_eq!(list["meta"]["total"], 1, "{list}");
}
