//! The admin app's collection presentation (issue 18): `PUT /collections/{c}/list-columns`,
//! `PUT /collections/{c}/form-layout`, `GET /collections/{c}/items/options` and
//! `PUT /collections/{c}/singleton-content`: permissions, validation, stored results, the
//! picker's paging, labels and search, and the singleton upsert's create-then-merge.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_storage::collections::{collection_by_slug, set_presentation};
use vellum_storage::model::{Collection, Presentation};

use super::access_support::{
    Route, assert_allowed, assert_denied, error_fields, send, signed_in_with,
};
use crate::support::TestApp;

/// `authors` (25 of them), `tags`, `articles` pointing at both (a display field, a template,
/// none, an m2a of both, a filter), and `site`, a singleton with a read-only field.
fn manifest() -> Value {
    let authors: Vec<Value> = (1..=25)
        .map(|i| json!({"data": {"name": format!("Author {i:02}"), "email": format!("a{i}@example.com")}}))
        .collect();
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "authors", "name": "Authors", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "email", "type": "string", "settings": {}}
            ]},
            {"slug": "tags", "name": "Tags", "fields": [
                {"name": "label", "type": "string", "translatable": true, "settings": {}},
                {"name": "weight", "type": "number", "settings": {}}
            ]},
            {"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "settings": {}},
                {"name": "views", "type": "number", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors", "display_field": "name"}},
                {"name": "editor", "type": "many_to_one", "settings": {"related_collection": "authors", "display_template": "{{name}} <{{email}}>"}},
                {"name": "tags", "type": "one_to_many", "settings": {"related_collection": "tags"}},
                {"name": "anything", "type": "m2a", "settings": {"allowed_collections": ["authors", "tags"]}},
                {"name": "heavy", "type": "one_to_many", "settings": {"related_collection": "tags", "filter": {"weight": {"_gte": 5}}}}
            ]},
            {"slug": "site", "name": "Site", "is_singleton": true, "fields": [
                {"name": "headline", "type": "string", "settings": {}},
                {"name": "links", "type": "tag", "settings": {}},
                {"name": "motto", "type": "string", "translatable": true, "settings": {}},
                {"name": "build", "type": "string", "settings": {"readonly": true}}
            ]}
        ],
        "api_keys": [{"name": "admin-key", "role": "super-admin"}],
        "items": {
            "authors": authors,
            "tags": [
                {"data": {"label": {"en": "Rust", "de": "Rost"}, "weight": 9}},
                {"data": {"label": {"en": "CMS"}, "weight": 1}},
                {"data": {"weight": 7}}
            ]
        }
    })
}

async fn stored(app: &TestApp, slug: &str) -> Collection {
    collection_by_slug(&app.db.conn, slug)
        .await
        .unwrap()
        .unwrap()
}

/// The stored id of `slug`'s field `name`.
async fn field_id(app: &TestApp, slug: &str, name: &str) -> i64 {
    stored(app, slug).await.field(name).unwrap().id
}

/// Sets `slug`'s presentation directly (as the schema editor would) and moves the epoch.
async fn present(app: &TestApp, slug: &str, presentation: Presentation) {
    let id = stored(app, slug).await.id;
    set_presentation(&app.db.conn, id, &presentation)
        .await
        .unwrap();
    app.state.invalidate().await;
}

// ---- list columns ------------------------------------------------------------------------------

#[actix_web::test]
async fn list_columns_need_can_edit_collections_and_are_stored() {
    let app = TestApp::new(manifest()).await;
    present(
        &app,
        "articles",
        Presentation {
            display_field: Some("title".into()),
            ..Presentation::default()
        },
    )
    .await;
    let outsider = signed_in_with(&app, "out@example.com", &["can-show-collections"]).await;
    let editor = signed_in_with(&app, "ed@example.com", &["can-edit-collections"]).await;
    let route = Route::new(
        Method::PUT,
        "/collections/articles/list-columns",
        Some(json!({"columns": ["title", "id", "author", "updated_at"]})),
    );
    assert_denied(&app, &route, &outsider).await;
    let body = assert_allowed(&app, &route, &editor, 200).await;
    assert_eq!(
        body,
        json!({"data": {"columns": ["title", "id", "author", "updated_at"]}})
    );
    let presentation = stored(&app, "articles").await.presentation;
    assert_eq!(
        presentation.list_columns,
        Some(vec![
            "title".to_owned(),
            "id".into(),
            "author".into(),
            "updated_at".into()
        ])
    );
    // The other parts of the presentation are left as they were.
    assert_eq!(presentation.display_field.as_deref(), Some("title"));
    // Logged.
    let auditor = signed_in_with(&app, "audit@example.com", &["can-show-activity-logs"]).await;
    let (status, log) = send(&app, Method::GET, "/activity-logs", &auditor, None).await;
    assert_eq!(status, 200, "{log}");
    let entry = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["log_name"] == "collections")
        .unwrap_or_else(|| panic!("not logged: {log}"));
    assert_eq!(entry["event"], "updated", "{log}");
    assert_eq!(entry["subject_type"], "collection", "{log}");
    assert_eq!(entry["subject_id"], "articles", "{log}");
    assert_eq!(
        entry["properties"]["changed"],
        json!(["list_columns"]),
        "{log}"
    );
    // Unknown collection.
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/nope/list-columns",
        &editor,
        Some(json!({"columns": ["id"]})),
    )
    .await;
    assert_eq!((status, body), (404, json!({"message": "Not found."})));
}

#[actix_web::test]
async fn list_columns_are_refused_naming_the_bad_entry() {
    let app = TestApp::new(manifest()).await;
    let editor = signed_in_with(&app, "ed@example.com", &["can-edit-collections"]).await;
    let too_many: Vec<String> = (0..51).map(|_| "id".to_owned()).collect();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["columns"]),
        (json!({"columns": "title"}), vec!["columns"]),
        (json!({"columns": []}), vec!["columns"]),
        (json!({"columns": too_many}), vec!["columns"]),
        (
            json!({"columns": ["title", "nope", 3, "title"]}),
            vec!["columns.1", "columns.2", "columns.3"],
        ),
        (json!({"columns": ["deleted_at"]}), vec!["columns.0"]),
    ];
    for (body, fields) in cases {
        let (status, answer) = send(
            &app,
            Method::PUT,
            "/collections/articles/list-columns",
            &editor,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(error_fields(&answer), fields, "{body}: {answer}");
    }
    let (_, answer) = send(
        &app,
        Method::PUT,
        "/collections/articles/list-columns",
        &editor,
        Some(json!({"columns": ["nope"]})),
    )
    .await;
    assert_eq!(
        answer["errors"]["columns.0"],
        json!(["The collection has no field \"nope\"."])
    );
    assert_eq!(
        stored(&app, "articles").await.presentation.list_columns,
        None
    );
}

// ---- form layout -------------------------------------------------------------------------------

#[actix_web::test]
async fn a_form_layout_is_checked_normalized_and_stored() {
    let app = TestApp::new(manifest()).await;
    let outsider = signed_in_with(&app, "out@example.com", &["can-show-collections"]).await;
    let editor = signed_in_with(&app, "ed@example.com", &["can-edit-collections"]).await;
    let route = Route::new(
        Method::PUT,
        "/collections/articles/form-layout",
        Some(json!({"layout": [
            {"title": "Main", "fields": ["title", "author"]},
            {"type": "section", "title": "More", "fields": ["tags", "views"], "collapsed": true}
        ]})),
    );
    assert_denied(&app, &route, &outsider).await;
    let body = assert_allowed(&app, &route, &editor, 200).await;
    let layout = json!([
        {"type": "section", "title": "Main", "fields": ["title", "author"], "collapsed": false},
        {"type": "section", "title": "More", "fields": ["tags", "views"], "collapsed": true}
    ]);
    assert_eq!(body, json!({"data": {"layout": layout}}));
    assert_eq!(
        stored(&app, "articles").await.presentation.form_layout,
        Some(layout)
    );
    // `[]` clears it.
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/form-layout",
        &editor,
        Some(json!({"layout": []})),
    )
    .await;
    assert_eq!((status, body), (200, json!({"data": {"layout": []}})));
    assert_eq!(
        stored(&app, "articles").await.presentation.form_layout,
        None
    );
}

#[actix_web::test]
async fn a_form_layout_is_refused_naming_each_problem() {
    let app = TestApp::new(manifest()).await;
    let editor = signed_in_with(&app, "ed@example.com", &["can-edit-collections"]).await;
    let section = |fields: Value| json!({"title": "S", "fields": fields});
    let many: Vec<Value> = (0..101)
        .map(|_| json!({"title": "S", "fields": ["title"]}))
        .collect();
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({}), vec!["layout"]),
        (json!({"layout": {"title": "S"}}), vec!["layout"]),
        (json!({"layout": many}), vec!["layout"]),
        (json!({"layout": ["x"]}), vec!["layout.0"]),
        (
            json!({"layout": [section(json!(["title", "nope"])), section(json!(["views", "title"]))]}),
            vec!["layout.0.fields.1", "layout.1.fields.1"],
        ),
        (
            json!({"layout": [section(json!([]))]}),
            vec!["layout.0.fields"],
        ),
        (
            json!({"layout": [section(json!("title"))]}),
            vec!["layout.0.fields"],
        ),
        (
            json!({"layout": [{"title": " ", "fields": ["title"], "type": "tab", "collapsed": "no"}]}),
            vec!["layout.0.collapsed", "layout.0.title", "layout.0.type"],
        ),
        (
            json!({"layout": [{"title": "S", "fields": ["title"], "width": 2}]}),
            vec!["layout.0"],
        ),
        (
            json!({"layout": [{"title": "x".repeat(256), "fields": ["title"]}]}),
            vec!["layout.0.title"],
        ),
    ];
    for (body, fields) in cases {
        let (status, answer) = send(
            &app,
            Method::PUT,
            "/collections/articles/form-layout",
            &editor,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(error_fields(&answer), fields, "{body}: {answer}");
    }
    assert_eq!(
        stored(&app, "articles").await.presentation.form_layout,
        None
    );
}

// ---- relation options --------------------------------------------------------------------------

/// The options page for `query` as `session`, asserting 200.
async fn options(app: &TestApp, session: &super::Session, query: &str) -> Value {
    let (status, body) = send(
        app,
        Method::GET,
        &format!("/collections/articles/items/options?{query}"),
        session,
        None,
    )
    .await;
    assert_eq!(status, 200, "{query}: {body}");
    body
}

fn labels(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn options_page_the_related_items_with_their_labels() {
    let app = TestApp::new(manifest()).await;
    let outsider = signed_in_with(&app, "out@example.com", &["can-edit-collections"]).await;
    let viewer = signed_in_with(&app, "view@example.com", &["can-show-collections"]).await;
    let author = field_id(&app, "articles", "author").await;
    let route = Route::new(
        Method::GET,
        format!("/collections/articles/items/options?field_id={author}"),
        None,
    );
    assert_denied(&app, &route, &outsider).await;
    // Default 20 per page, by id; the field's display field labels them.
    let first = assert_allowed(&app, &route, &viewer, 200).await;
    assert_eq!(
        first["meta"],
        json!({"current_page": 1, "last_page": 2, "per_page": 20, "total": 25})
    );
    assert_eq!(labels(&first).len(), 20);
    assert_eq!(labels(&first)[0], "Author 01");
    assert!(first["data"][0]["id"].as_i64().unwrap() > 0);
    assert_eq!(
        first["data"][0]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["id", "label"]
    );
    let second = options(&app, &viewer, &format!("field_id={author}&page=2")).await;
    assert_eq!(
        labels(&second),
        [
            "Author 21",
            "Author 22",
            "Author 23",
            "Author 24",
            "Author 25"
        ]
    );
    let small = options(
        &app,
        &viewer,
        &format!("field_id={author}&per_page=3&page=2"),
    )
    .await;
    assert_eq!(labels(&small), ["Author 04", "Author 05", "Author 06"]);
    assert_eq!(small["meta"]["last_page"], 9);
    // Search: the display field contains it, ignoring ASCII case.
    let found = options(
        &app,
        &viewer,
        &format!("field_id={author}&search=AUTHOR%201"),
    )
    .await;
    assert_eq!(found["meta"]["total"], 10);
    assert_eq!(labels(&found)[0], "Author 10");
    let none = options(&app, &viewer, &format!("field_id={author}&search=zzz")).await;
    assert_eq!(
        none,
        json!({"data": [], "meta": {"current_page": 1, "last_page": 1, "per_page": 20, "total": 0}})
    );
    // The field's template.
    let editor = field_id(&app, "articles", "editor").await;
    let page = options(&app, &viewer, &format!("field_id={editor}&per_page=2")).await;
    assert_eq!(
        labels(&page),
        ["Author 01 <a1@example.com>", "Author 02 <a2@example.com>"]
    );
}

#[actix_web::test]
async fn options_fall_back_to_the_collection_presentation_then_the_id() {
    let app = TestApp::new(manifest()).await;
    let viewer = signed_in_with(&app, "view@example.com", &["can-show-collections"]).await;
    let tags = field_id(&app, "articles", "tags").await;
    let bare = options(&app, &viewer, &format!("field_id={tags}")).await;
    let ids: Vec<i64> = bare["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        labels(&bare),
        ids.iter().map(|id| format!("#{id}")).collect::<Vec<_>>()
    );
    // Without a display field, a search names an id.
    let by_id = options(&app, &viewer, &format!("field_id={tags}&search={}", ids[1])).await;
    assert_eq!(
        by_id["data"],
        json!([{"id": ids[1], "label": format!("#{}", ids[1])}])
    );
    assert_eq!(
        options(&app, &viewer, &format!("field_id={tags}&search=rust")).await["meta"]["total"],
        0
    );
    // The collection's template (default locale), searched by its first field.
    present(
        &app,
        "tags",
        Presentation {
            display_template: Some("{{label}} ({{weight}})".into()),
            ..Presentation::default()
        },
    )
    .await;
    let page = options(&app, &viewer, &format!("field_id={tags}")).await;
    assert_eq!(labels(&page), ["Rust (9)", "CMS (1)", "(7)"]);
    let rust = options(&app, &viewer, &format!("field_id={tags}&search=rUs")).await;
    assert_eq!(labels(&rust), ["Rust (9)"]);
    // The collection's display field.
    present(
        &app,
        "tags",
        Presentation {
            display_field: Some("label".into()),
            ..Presentation::default()
        },
    )
    .await;
    let page = options(&app, &viewer, &format!("field_id={tags}")).await;
    assert_eq!(
        labels(&page),
        ["Rust", "CMS", format!("#{}", ids[2]).as_str()]
    );
    // The field's `filter` setting narrows what is offered.
    let heavy = field_id(&app, "articles", "heavy").await;
    let page = options(&app, &viewer, &format!("field_id={heavy}")).await;
    assert_eq!(labels(&page), ["Rust", format!("#{}", ids[2]).as_str()]);
}

#[actix_web::test]
async fn options_of_an_m2a_field_name_their_target() {
    let app = TestApp::new(manifest()).await;
    let viewer = signed_in_with(&app, "view@example.com", &["can-show-collections"]).await;
    let anything = field_id(&app, "articles", "anything").await;
    let tags = stored(&app, "tags").await.id;
    let articles = stored(&app, "articles").await.id;
    let (status, body) = send(
        &app,
        Method::GET,
        &format!("/collections/articles/items/options?field_id={anything}"),
        &viewer,
        None,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["related_collection_id"]);
    let page = options(
        &app,
        &viewer,
        &format!("field_id={anything}&related_collection_id={tags}"),
    )
    .await;
    assert_eq!(page["meta"]["total"], 3);
    let (status, body) = send(
        &app,
        Method::GET,
        &format!(
            "/collections/articles/items/options?field_id={anything}&related_collection_id={articles}"
        ),
        &viewer,
        None,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["related_collection_id"]);
}

#[actix_web::test]
async fn options_refuse_bad_parameters_naming_each() {
    let app = TestApp::new(manifest()).await;
    let viewer = signed_in_with(&app, "view@example.com", &["can-show-collections"]).await;
    let author = field_id(&app, "articles", "author").await;
    let title = field_id(&app, "articles", "title").await;
    let foreign = field_id(&app, "authors", "name").await;
    let tags = stored(&app, "tags").await.id;
    let long = "x".repeat(256);
    let cases: Vec<(String, Vec<&str>)> = vec![
        (String::new(), vec!["field_id"]),
        ("field_id=abc".into(), vec!["field_id"]),
        (format!("field_id={title}"), vec!["field_id"]),
        (format!("field_id={foreign}"), vec!["field_id"]),
        ("field_id=999999".into(), vec!["field_id"]),
        (
            format!("field_id={author}&per_page=0&page=0"),
            vec!["page", "per_page"],
        ),
        (format!("field_id={author}&per_page=101"), vec!["per_page"]),
        (format!("field_id={author}&search={long}"), vec!["search"]),
        (
            format!("field_id={author}&related_collection_id={tags}"),
            vec!["related_collection_id"],
        ),
        (
            format!("field_id={author}&related_collection_id=x"),
            vec!["related_collection_id"],
        ),
    ];
    for (query, fields) in cases {
        let (status, body) = send(
            &app,
            Method::GET,
            &format!("/collections/articles/items/options?{query}"),
            &viewer,
            None,
        )
        .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(error_fields(&body), fields, "{query}: {body}");
    }
    let page = options(&app, &viewer, &format!("field_id={author}&per_page=100")).await;
    assert_eq!(page["meta"]["per_page"], 100);
    assert_eq!(labels(&page).len(), 25);
    let (status, _) = send(
        &app,
        Method::GET,
        &format!("/collections/nope/items/options?field_id={author}"),
        &viewer,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

// ---- singleton content -------------------------------------------------------------------------

const SITE: &str = "/collections/site/singleton-content";

/// The singleton's items as the super-admin's key reads them (every translation).
async fn site_items(app: &TestApp) -> Vec<Value> {
    let res = app
        .get_as(
            "admin-key",
            "/api/v1/collections/site/items?include_all_translations=true",
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    res.json()["data"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn the_singleton_upsert_creates_then_merges_and_strips_readonly_fields() {
    let app = TestApp::new(manifest()).await;
    let outsider = signed_in_with(&app, "out@example.com", &["can-show-collections"]).await;
    let edit_only = signed_in_with(&app, "edit@example.com", &["can-edit-collections"]).await;
    let create_only = signed_in_with(&app, "make@example.com", &["can-create-collections"]).await;
    let both = signed_in_with(
        &app,
        "both@example.com",
        &["can-edit-collections", "can-create-collections"],
    )
    .await;
    let first = json!({"data": {
        "headline": "Hello", "links": ["a", "b"], "motto": "Carpe diem",
        "build": "forged", "id": 999, "created_at": "2000-01-01T00:00:00Z"
    }});
    let route = Route::new(Method::PUT, SITE, Some(first.clone()));
    assert_denied(&app, &route, &outsider).await;
    assert_denied(&app, &route, &create_only).await;
    // Creating also takes can-create-collections.
    let (status, body) = send(&app, Method::PUT, SITE, &edit_only, Some(first.clone())).await;
    assert_eq!((status, body), (403, json!({"message": "Forbidden."})));
    assert!(site_items(&app).await.is_empty());
    let created = assert_allowed(&app, &route, &both, 201).await;
    let data = &created["data"];
    let id = data["id"].as_i64().unwrap();
    assert_ne!(id, 999);
    assert_eq!(
        data["data"],
        json!({"headline": "Hello", "links": ["a", "b"], "motto": "Carpe diem", "build": null})
    );
    assert_ne!(data["created_at"], "2000-01-01T00:00:00.000000Z");
    // Then an update: only the fields sent change, a list is replaced whole, a translation is
    // merged into the stored ones, and the read-only field stays out.
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("{SITE}?locale=de"),
        &edit_only,
        Some(json!({"data": {"links": ["c"], "motto": "Nutze den Tag", "build": "x"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["id"], id);
    let items = site_items(&app).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0]["data"],
        json!({
            "headline": "Hello",
            "links": ["c"],
            "motto": {"en": "Carpe diem", "de": "Nutze den Tag"},
            "build": null
        })
    );
    // An unknown key is still a typo.
    let (status, body) = send(
        &app,
        Method::PUT,
        SITE,
        &edit_only,
        Some(json!({"data": {"headlin": "x"}})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["headlin"]);
    let (status, body) = send(
        &app,
        Method::PUT,
        SITE,
        &edit_only,
        Some(json!({"data": 3})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["data"]);
    // Not a singleton, or no such collection: 404.
    for path in [
        "/collections/articles/singleton-content",
        "/collections/nope/singleton-content",
    ] {
        let (status, body) = send(&app, Method::PUT, path, &both, Some(first.clone())).await;
        assert_eq!(
            (status, body),
            (404, json!({"message": "Not found."})),
            "{path}"
        );
    }
    // The public API refuses a second item, pointing here.
    let res = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/site/items",
            json!({"data": {"headline": "Second"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        res.json()["errors"]["data"][0]
            .as_str()
            .unwrap()
            .contains("PUT /collections/site/singleton-content"),
        "{:?}",
        res.json()
    );
    // Trashed, the item still holds the singleton: the upsert says so.
    let deleted = app
        .delete(
            Some("admin-key"),
            &format!("/api/v1/collections/site/items/{id}"),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let (status, body) = send(&app, Method::PUT, SITE, &both, Some(first)).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["data"]);
}

#[actix_web::test]
async fn concurrent_upserts_of_a_missing_singleton_make_one_item() {
    let app = TestApp::new(manifest()).await;
    let both = signed_in_with(
        &app,
        "both@example.com",
        &["can-edit-collections", "can-create-collections"],
    )
    .await;
    let puts = (0..3).map(|i| {
        send(
            &app,
            Method::PUT,
            SITE,
            &both,
            Some(json!({"data": {"headline": format!("H{i}")}})),
        )
    });
    let results = futures_util::future::join_all(puts).await;
    let statuses: Vec<u16> = results.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{results:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        2,
        "{results:?}"
    );
    assert_eq!(site_items(&app).await.len(), 1);
}
