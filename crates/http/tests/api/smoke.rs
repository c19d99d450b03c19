//! The first requests a new user makes.

use actix_web::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, blog};

#[actix_web::test]
async fn anonymous_reads_published_articles_without_hidden_fields() {
    let app = TestApp::new(blog()).await;
    let res = app
        .get("/api/v1/collections/articles/items?locale=de")
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let body = res.json();
    assert_eq!(
        body["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 1})
    );
    let item = &body["data"][0];
    assert_eq!(item["data"]["title"], "Hallo");
    assert!(item["data"].get("internal_notes").is_none());
    assert_eq!(item.as_object().unwrap().len(), 9);
}

#[actix_web::test]
async fn an_editor_creates_and_the_next_anonymous_read_sees_it() {
    let app = TestApp::new(blog()).await;
    let before = app.get("/api/v1/collections/articles/items").await.json();
    assert_eq!(before["meta"]["total"], 1);
    let created = app
        .json(
            Method::POST,
            Some("editor-key"),
            "/api/v1/collections/articles/items",
            json!({"data": {"title": "New", "status": "published"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{:?}", created.json());
    let after = app.get("/api/v1/collections/articles/items").await.json();
    assert_eq!(after["meta"]["total"], 2);
}
