//! `GET /collections` and `GET /collections/{slug}`.

use actix_web::http::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestApp, blog};

#[actix_web::test]
async fn only_readable_collections_are_listed() {
    let app = TestApp::new(blog()).await;
    let res = app.get("/api/v1/collections").await;
    assert_eq!(res.status, StatusCode::OK);
    let slugs: Vec<String> = res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(slugs, ["authors", "articles"]);
    let none = app.get_as("reader-key", "/api/v1/collections").await;
    assert_eq!(none.status, StatusCode::OK);
    assert_eq!(none.json(), json!({"data": []}));
}

/// `blog()` plus a singleton collection only super-admin and `editor` (create only) know of.
fn blog_with_settings_page() -> Value {
    let mut manifest = blog();
    manifest["collections"].as_array_mut().unwrap().push(
        json!({"slug": "site", "name": "Site settings", "is_singleton": true, "fields": [
            {"name": "tagline", "type": "string", "translatable": true, "settings": {}}
        ]}),
    );
    let roles = manifest["roles"].as_array_mut().unwrap();
    let editor = roles.iter_mut().find(|r| r["name"] == "editor").unwrap();
    editor["collection_permissions"]["site"] =
        json!({"create": true, "update": true, "delete": true});
    manifest
}

/// Summaries of `GET /collections` as `key` (None: anonymous).
async fn listed(app: &TestApp, key: Option<&str>) -> Value {
    let res = match key {
        Some(key) => app.get_as(key, "/api/v1/collections").await,
        None => app.get("/api/v1/collections").await,
    };
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let body = res.json();
    assert_eq!(body.as_object().unwrap().len(), 1, "only data: {body}");
    body
}

#[actix_web::test]
async fn super_admin_lists_every_collection_as_exact_summaries() {
    let app = TestApp::new(blog_with_settings_page()).await;
    let body = listed(&app, Some("admin-key")).await;
    let data = body["data"].as_array().unwrap();
    let ids: Vec<i64> = data.iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert_eq!(
        body,
        json!({"data": [
            {"id": ids[0], "name": "Authors", "slug": "authors", "is_singleton": false},
            {"id": ids[1], "name": "Tags", "slug": "tags", "is_singleton": false},
            {"id": ids[2], "name": "Articles", "slug": "articles", "is_singleton": false},
            {"id": ids[3], "name": "Site settings", "slug": "site", "is_singleton": true}
        ]})
    );
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 4, "ids are distinct: {ids:?}");
    // A CollectionSummary has exactly four keys.
    for summary in data {
        assert_eq!(summary.as_object().unwrap().len(), 4, "{summary}");
    }
}

#[actix_web::test]
async fn each_role_lists_exactly_the_collections_it_may_read() {
    let app = TestApp::new(blog_with_settings_page()).await;
    let slugs = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["slug"].as_str().unwrap().to_owned())
            .collect()
    };
    // Create/update/delete without read does not list `site` for the editor.
    assert_eq!(
        slugs(&listed(&app, Some("editor-key")).await),
        ["authors", "tags", "articles"]
    );
    assert_eq!(slugs(&listed(&app, None).await), ["authors", "articles"]);
    assert_eq!(listed(&app, Some("reader-key")).await, json!({"data": []}));
    // The summaries a role sees are the same objects super-admin sees.
    let all = listed(&app, Some("admin-key")).await;
    let public = listed(&app, None).await;
    for summary in public["data"].as_array().unwrap() {
        assert!(
            all["data"].as_array().unwrap().contains(summary),
            "{summary}"
        );
    }
}

#[actix_web::test]
async fn a_project_without_collections_lists_an_empty_array() {
    let app =
        TestApp::new(json!({"api_keys": [{"name": "admin-key", "role": "super-admin"}]})).await;
    assert_eq!(listed(&app, None).await, json!({"data": []}));
    assert_eq!(listed(&app, Some("admin-key")).await, json!({"data": []}));
}

#[actix_web::test]
async fn show_is_the_summary_plus_every_readable_field_in_order() {
    let app = TestApp::new(blog()).await;
    let res = app
        .get_as("admin-key", "/api/v1/collections/articles")
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    assert_eq!(body.as_object().unwrap().len(), 1, "only data: {body}");
    let data = &body["data"];
    let mut keys: Vec<&str> = data
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["fields", "id", "is_singleton", "name", "slug"]);
    let summaries = listed(&app, Some("admin-key")).await;
    let summary = summaries["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["slug"] == "articles")
        .unwrap()
        .clone();
    for key in ["id", "name", "slug", "is_singleton"] {
        assert_eq!(data[key], summary[key], "{key}");
    }
    let collection_id = |slug: &str| {
        summaries["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["slug"] == slug)
            .unwrap()["id"]
            .clone()
    };
    let fields = data["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "title",
            "status",
            "views",
            "cover",
            "author",
            "tags",
            "internal_notes"
        ]
    );
    let types: Vec<&str> = fields.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "string",
            "select",
            "number",
            "image",
            "many_to_one",
            "many_to_many",
            "textarea"
        ]
    );
    let mut field_ids = Vec::new();
    for field in fields {
        for key in ["id", "name", "type", "settings"] {
            assert!(field.get(key).is_some(), "{key} missing: {field}");
        }
        field_ids.push(
            field["id"]
                .as_i64()
                .unwrap_or_else(|| panic!("integer id: {field}")),
        );
        assert!(
            field["settings"].is_object() || field["settings"].is_null(),
            "{field}"
        );
    }
    field_ids.sort_unstable();
    field_ids.dedup();
    assert_eq!(field_ids.len(), fields.len(), "distinct field ids");
    assert_eq!(fields[0]["settings"]["required"], true);
    assert_eq!(
        fields[1]["settings"]["options"],
        json!(["draft", "published"])
    );
    // Relations name their target by id, never by the manifest's slug.
    assert_eq!(
        fields[4]["settings"]["related_collection_id"],
        collection_id("authors")
    );
    assert_eq!(
        fields[5]["settings"]["related_collection_id"],
        collection_id("tags")
    );
    assert!(fields[4]["settings"].get("related_collection").is_none());
}

#[actix_web::test]
async fn a_field_the_role_cannot_read_is_not_listed() {
    let app = TestApp::new(blog()).await;
    let admin = app
        .get_as("admin-key", "/api/v1/collections/articles")
        .await
        .json();
    for res in [
        app.get("/api/v1/collections/articles").await,
        app.get_as("editor-key", "/api/v1/collections/articles")
            .await,
    ] {
        assert_eq!(res.status, StatusCode::OK);
        let body = res.json();
        let mut expected = admin.clone();
        expected["data"]["fields"]
            .as_array_mut()
            .unwrap()
            .retain(|f| f["name"] != "internal_notes");
        assert_eq!(body, expected);
        assert!(!String::from_utf8_lossy(&res.body).contains("internal_notes"));
    }
    // Fields without rules are all listed for a role with a plain read grant.
    let authors = app.get("/api/v1/collections/authors").await.json();
    let names: Vec<&str> = authors["data"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["name", "email"]);
}

#[actix_web::test]
async fn show_without_read_is_403_and_an_unknown_slug_is_404() {
    let app = TestApp::new(blog_with_settings_page()).await;
    for (key, slug) in [
        (Some("reader-key"), "articles"),
        (None, "tags"),
        (None, "site"),
        // Create, update and delete do not include read.
        (Some("editor-key"), "site"),
    ] {
        let path = format!("/api/v1/collections/{slug}");
        let res = match key {
            Some(key) => app.get_as(key, &path).await,
            None => app.get(&path).await,
        };
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{key:?} {slug}");
        assert_eq!(res.json(), json!({"message": "Forbidden."}));
    }
    for path in [
        "/api/v1/collections/nope",
        "/api/v1/collections/Articles",
        "/api/v1/collections/articles%20",
    ] {
        for key in [None, Some("reader-key"), Some("admin-key")] {
            let res = match key {
                Some(key) => app.get_as(key, path).await,
                None => app.get(path).await,
            };
            assert_eq!(res.status, StatusCode::NOT_FOUND, "{key:?} {path}");
            assert_eq!(res.json(), json!({"message": "Not found."}));
        }
    }
}

#[actix_web::test]
async fn a_singleton_shows_is_singleton_true() {
    let app = TestApp::new(blog_with_settings_page()).await;
    let res = app.get_as("admin-key", "/api/v1/collections/site").await;
    assert_eq!(res.status, StatusCode::OK);
    let body = res.json();
    assert_eq!(body["data"]["is_singleton"], true);
    assert_eq!(body["data"]["name"], "Site settings");
    assert_eq!(body["data"]["fields"][0]["name"], "tagline");
    assert_eq!(body["data"]["fields"][0]["type"], "string");
}
