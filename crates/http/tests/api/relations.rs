//! Relation and file values on write: every link must point at a live item of the field's related
//! collection (or a live file), and a field holds at most `max_links` links (default 1,000). The
//! security review's reproductions (R9), black-box, with the 422 bodies clients see.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, blog};

const ARTICLES: &str = "/api/v1/collections/articles/items";

/// The blog project (author Ada is item 1, tags `rust` and `cms` are 2 and 3), plus `links`, a
/// collection whose `picks` field allows only two links, and an editor grant on it.
fn manifest() -> Value {
    let mut m = blog();
    m["collections"]
        .as_array_mut()
        .unwrap()
        .push(json!({"slug": "links", "name": "Links", "fields": [
            {"name": "picks", "type": "one_to_many", "settings": {"related_collection": "tags", "max_links": 2}},
            {"name": "mixed", "type": "m2a", "settings": {"allowed_collections": ["authors", "tags"]}}
        ]}));
    m["roles"][1]["collection_permissions"]["links"] =
        json!({"create": true, "read": true, "update": true});
    m
}

fn invalid(errors: Value) -> Value {
    json!({"message": "The given data was invalid.", "errors": errors})
}

async fn post(app: &TestApp, path: &str, data: Value) -> crate::support::Response {
    app.json(
        Method::POST,
        Some("editor-key"),
        path,
        json!({"data": data}),
    )
    .await
}

#[actix_web::test]
async fn the_reviews_reproductions_answer_422_naming_the_field_and_the_ids() {
    let app = TestApp::new(manifest()).await;
    let cases = [
        (
            json!({"title": "x", "tags": [99_999]}),
            json!({"tags": ["The tags field links items not found in collection `tags`: 99999."]}),
        ),
        (
            json!({"title": "x", "author": 99_999}),
            json!({"author": ["The author field links items not found in collection `authors`: 99999."]}),
        ),
        // Item 1 is the author Ada, not a tag.
        (
            json!({"title": "x", "tags": [1]}),
            json!({"tags": ["The tags field links items not found in collection `tags`: 1."]}),
        ),
        (
            json!({"title": "x", "cover": 99_999}),
            json!({"cover": ["The cover field links files not found: 99999."]}),
        ),
        (
            json!({"title": "x", "tags": (100_000..105_000).collect::<Vec<i64>>()}),
            json!({"tags": ["The tags field may hold at most 1000 links; got 5000."]}),
        ),
    ];
    for (data, errors) in cases {
        let res = post(&app, ARTICLES, data.clone()).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{data}");
        assert_eq!(res.json(), invalid(errors), "{data}");
    }
    // Nothing was written: the two seeded articles are all there is.
    let list = app.get_as("admin-key", ARTICLES).await.json();
    assert_eq!(list["meta"]["total"], 2);

    // The same writes with real targets are created.
    let res = post(
        &app,
        ARTICLES,
        json!({"title": "x", "author": 1, "tags": [2, 3]}),
    )
    .await;
    assert_eq!(res.status, StatusCode::CREATED);
    assert_eq!(
        res.json()["data"]["data"]["tags"],
        json!([{"related_item_id": 2, "meta": {}}, {"related_item_id": 3, "meta": {}}])
    );
}

#[actix_web::test]
async fn a_thousand_live_tags_are_accepted_and_one_more_is_refused() {
    // 1,000 more tags: items 2 to 1001 are tags, 1002 and 1003 too.
    let mut m = manifest();
    let seeds = m["items"]["tags"].as_array_mut().unwrap();
    seeds.extend((0..1000).map(|i| json!({"data": {"label": format!("t{i}")}})));
    let app = TestApp::new(m).await;
    let mut tags: Vec<i64> = (2..=1001).collect();
    let res = post(
        &app,
        ARTICLES,
        json!({"title": "big", "status": "published", "tags": tags.clone()}),
    )
    .await;
    assert_eq!(res.status, StatusCode::CREATED);
    let id = res.json()["data"]["id"].as_i64().unwrap();
    let shown = app.get_as("admin-key", &format!("{ARTICLES}/{id}")).await;
    assert_eq!(
        shown.json()["data"]["data"]["tags"]
            .as_array()
            .unwrap()
            .len(),
        1000
    );

    tags.push(2);
    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &format!("{ARTICLES}/{id}"),
            json!({"data": {"tags": tags}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json(),
        invalid(json!({"tags": ["The tags field may hold at most 1000 links; got 1001."]}))
    );
}

#[actix_web::test]
async fn a_patch_checks_the_links_it_adds_and_changes_nothing_when_refused() {
    let app = TestApp::new(manifest()).await;
    // Article 4 (the first seeded one) links author 1 and tags 2 and 3.
    let path = format!("{ARTICLES}/4");
    let before = app.get_as("admin-key", &path).await.json();
    assert_eq!(before["data"]["data"]["author"], 1);

    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &path,
            json!({"data": {"tags": [2, 3, 4, 88_888]}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Item 4 is this article, not a tag.
    assert_eq!(
        res.json(),
        invalid(
            json!({"tags": ["The tags field links items not found in collection `tags`: 4, 88888."]})
        )
    );
    assert_eq!(app.get_as("admin-key", &path).await.json(), before);

    // Deleting a tag leaves the link in place, lean; the item can still be written back as read.
    let res = app
        .delete(Some("admin-key"), "/api/v1/collections/tags/items/3")
        .await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);
    let read = app
        .get_as("admin-key", &format!("{path}?include=tags"))
        .await
        .json();
    assert_eq!(
        read["data"]["data"]["tags"][1],
        json!({"related_item_id": 3, "meta": {}})
    );
    assert_eq!(read["data"]["data"]["tags"][0]["item"]["id"], 2);
    let res = app
        .json(
            Method::PATCH,
            Some("editor-key"),
            &path,
            json!({"data": {"title": "again", "tags": before["data"]["data"]["tags"]}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    // A new link to the deleted tag is refused.
    let res = post(&app, ARTICLES, json!({"title": "x", "tags": [3]})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[actix_web::test]
async fn max_links_is_a_field_setting_and_m2a_entries_must_be_in_their_collection() {
    let app = TestApp::new(manifest()).await;
    let links = "/api/v1/collections/links/items";
    let res = post(&app, links, json!({"picks": [2, 3, 2]})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json(),
        invalid(json!({"picks": ["The picks field may hold at most 2 links; got 3."]}))
    );
    let mut ids = Vec::new();
    for slug in ["authors", "tags"] {
        let res = app
            .get_as("admin-key", &format!("/api/v1/collections/{slug}"))
            .await;
        ids.push(res.json()["data"]["id"].as_i64().unwrap());
    }
    let (authors, tags) = (ids[0], ids[1]);
    // Tag 2 named under `authors`, author 1 under `tags`.
    let res = post(
        &app,
        links,
        json!({"mixed": [
            {"related_collection_id": authors, "related_item_id": 2},
            {"related_collection_id": tags, "related_item_id": 1}
        ]}),
    )
    .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        res.json(),
        invalid(json!({"mixed": [
            "The mixed field links items not found in collection `authors`: 2.",
            "The mixed field links items not found in collection `tags`: 1."
        ]}))
    );
    let res = post(
        &app,
        links,
        json!({"picks": [2, 3], "mixed": [
            {"related_collection_id": authors, "related_item_id": 1},
            {"related_collection_id": tags, "related_item_id": 2}
        ]}),
    )
    .await;
    assert_eq!(res.status, StatusCode::CREATED);
}

#[actix_web::test]
async fn the_openapi_description_tells_item_writes_what_their_422_checks() {
    let doc = vellum_http::openapi::document();
    let described = &doc["components"]["responses"]["ItemInvalid"]["description"];
    let text = described.as_str().unwrap();
    for needle in ["not found in collection", "max_links", "live file"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    for (path, method) in [
        ("/api/v1/collections/{slug}/items", "post"),
        ("/api/v1/collections/{slug}/items/{id}", "patch"),
    ] {
        assert_eq!(
            doc["paths"][path][method]["responses"]["422"]["$ref"],
            "#/components/responses/ItemInvalid",
            "{method} {path}"
        );
    }
}
