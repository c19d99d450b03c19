//! The schema editor (`/collections…`, issue 18): every route allowed with exactly its
//! permission and refused without it; the manifest's validation and messages; display settings;
//! fields added, reordered, changed (dry run, conversion, refusal naming items), renamed (data,
//! rules, item filters, export) and deleted; collections deleted (dry run, refusal while
//! targeted); and every change seen by the public API at once (the epoch moves).

use actix_web::http::Method;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use super::access_support::send;
use super::users::check_routes;
use crate::support::{TestApp, blog};

const COLLECTION_PERMISSIONS: [&str; 4] = [
    "can-show-collections",
    "can-create-collections",
    "can-edit-collections",
    "can-delete-collections",
];

/// A project with `notes` (a text `price`, a `title`) holding three items, plus the blog.
fn project() -> Value {
    let mut manifest = blog();
    manifest["collections"].as_array_mut().unwrap().push(
        json!({"slug": "notes", "name": "Notes", "fields": [
            {"name": "title", "type": "string"},
            {"name": "price", "type": "string"}
        ]}),
    );
    manifest["items"]["notes"] = json!([
        {"data": {"title": "a", "price": "12"}},
        {"data": {"title": "b", "price": "7.5"}},
        {"data": {"title": "c"}}
    ]);
    manifest
}

async fn root(app: &TestApp) -> super::Session {
    app.signed_in("root@example.com", &["super-admin"]).await
}

/// The public API's view of collection `slug` (as the super-admin key): field names in order.
async fn public_fields(app: &TestApp, slug: &str) -> Vec<String> {
    let res = app
        .get_as("admin-key", &format!("/api/v1/collections/{slug}"))
        .await;
    assert_eq!(res.status, 200);
    res.json()["data"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Item `id` of `slug` as the public API shows it to the super-admin key (all translations).
async fn item(app: &TestApp, slug: &str, id: i64) -> Value {
    let res = app
        .get_as(
            "admin-key",
            &format!("/api/v1/collections/{slug}/items/{id}?include_all_translations=true"),
        )
        .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    res.json()["data"]["data"].clone()
}

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let app = TestApp::new(project()).await;
    check_routes(
        &app,
        &COLLECTION_PERMISSIONS,
        vec![
            (
                Method::GET,
                "/collections".into(),
                "can-show-collections",
                None,
                200,
            ),
            (
                Method::GET,
                "/collections/notes".into(),
                "can-show-collections",
                None,
                200,
            ),
            (
                Method::POST,
                "/collections".into(),
                "can-create-collections",
                Some(json!({"slug": "pages", "fields": [{"name": "title", "type": "string"}]})),
                201,
            ),
            (
                Method::POST,
                "/collections/packs/seo".into(),
                "can-create-collections",
                None,
                201,
            ),
            (
                Method::PUT,
                "/collections/notes".into(),
                "can-edit-collections",
                Some(json!({"name": "Notes again"})),
                200,
            ),
            (
                Method::POST,
                "/collections/notes/fields".into(),
                "can-edit-collections",
                Some(json!({"name": "body", "type": "textarea"})),
                201,
            ),
            (
                Method::PUT,
                "/collections/notes/fields/title".into(),
                "can-edit-collections",
                Some(json!({"settings": {"required": true}})),
                200,
            ),
            (
                Method::PUT,
                "/collections/notes/field-order".into(),
                "can-edit-collections",
                Some(json!({"fields": ["price", "title", "body"]})),
                200,
            ),
            (
                Method::POST,
                "/collections/notes/field-packs/social".into(),
                "can-edit-collections",
                None,
                200,
            ),
            (
                Method::DELETE,
                "/collections/notes/fields/body".into(),
                "can-edit-collections",
                None,
                200,
            ),
            (
                Method::DELETE,
                "/collections/notes".into(),
                "can-delete-collections",
                None,
                200,
            ),
        ],
    )
    .await;
}

#[actix_web::test]
async fn create_checks_like_apply_and_shows_the_definition() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let bad = json!({"slug": "pages", "fields": [
        {"name": "title", "type": "string"},
        {"name": "body", "type": "strng"}
    ]});
    let (status, body) = send(&app, Method::POST, "/collections", &s, Some(bad.clone())).await;
    assert_eq!(status, 422);
    // The same message, at the same path inside the collection, as `vellum-admin apply`.
    let Err(vellum_manifest::ManifestError::Invalid(invalid)) =
        vellum_manifest::apply(&app.db.conn, &json!({"collections": [bad]})).await
    else {
        panic!("apply accepted it");
    };
    assert_eq!(invalid.path, "collections[0].fields[1].type");
    assert_eq!(body["errors"]["fields[1].type"], json!([invalid.message]));
    // The schema layer too (an unknown key).
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections",
        &s,
        Some(json!({"slug": "pages", "fields": [{"name": "t", "type": "string", "colour": 1}]})),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        body["errors"]["fields[0]"][0]
            .as_str()
            .unwrap()
            .contains("colour"),
        "{body}"
    );
    // A taken slug, an unknown relation target.
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections",
        &s,
        Some(json!({"slug": "notes", "fields": []})),
    )
    .await;
    assert_eq!(
        (status, body["errors"]["slug"][0].as_str()),
        (422, Some("The collection \"notes\" already exists."))
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections",
        &s,
        Some(json!({"slug": "pages", "fields": [{"name": "up", "type": "many_to_one", "settings": {"related_collection": "nope"}}]})),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"]["fields[0].settings.related_collection"],
        json!(["unknown collection \"nope\""])
    );

    let res = app
        .admin(
            Method::POST,
            "/collections",
            Some(&s),
            Some(json!({"slug": "pages", "name": "Pages", "display_field": "title", "fields": [
                {"name": "title", "type": "string"},
                {"name": "parent", "type": "many_to_one", "settings": {"related_collection": "pages"}}
            ]})),
        )
        .await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(res.header("location"), Some("/collections/pages"));
    let created = res.json()["data"].clone();
    assert_eq!(created["display_field"], "title");
    assert_eq!(
        created["fields"][1]["settings"]["related_collection_id"],
        created["id"]
    );
    let (_, shown) = send(&app, Method::GET, "/collections/pages", &s, None).await;
    assert_eq!(shown["data"], created);
    assert_eq!(public_fields(&app, "pages").await, ["title", "parent"]);
    let (_, list) = send(&app, Method::GET, "/collections", &s, None).await;
    let notes = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["slug"] == "notes")
        .unwrap()
        .clone();
    assert_eq!(notes["fields_count"], 2);
    assert_eq!(notes["items_count"], 3);
    let (status, _) = send(&app, Method::GET, "/collections/nope", &s, None).await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn update_sets_name_singleton_and_display_checked_against_fields() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes",
        &s,
        Some(json!({"display_field": "nope", "display_template": "{{title}} {{sku}}", "is_singleton": true})),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        super::access_support::error_fields(&body),
        ["display_field", "display_template", "is_singleton"]
    );
    assert!(
        body["errors"]["display_template"][0]
            .as_str()
            .unwrap()
            .contains("\"sku\"")
    );
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes",
        &s,
        Some(json!({"name": "Memos", "display_field": "title", "display_template": "{{title}} ({{ price }})"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["name"], "Memos");
    assert_eq!(body["data"]["display_template"], "{{title}} ({{ price }})");
    // The manifest describes it, and a second apply of the export changes nothing.
    let export = vellum_manifest::export(&app.db.conn, false).await.unwrap();
    let notes = export["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["slug"] == "notes")
        .unwrap()
        .clone();
    assert_eq!(notes["display_field"], "title");
    vellum_manifest::apply(&app.db.conn, &export).await.unwrap();
    // A singleton holds one item at most: an empty collection may become one.
    send(
        &app,
        Method::POST,
        "/collections",
        &s,
        Some(json!({"slug": "home", "fields": []})),
    )
    .await;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/home",
        &s,
        Some(json!({"is_singleton": true})),
    )
    .await;
    assert_eq!(
        (status, body["data"]["is_singleton"].clone()),
        (200, json!(true))
    );
    let res = app.get_as("admin-key", "/api/v1/collections/home").await;
    assert_eq!(res.json()["data"]["is_singleton"], true);
    // Null clears.
    let (_, body) = send(
        &app,
        Method::PUT,
        "/collections/notes",
        &s,
        Some(json!({"display_field": null})),
    )
    .await;
    assert_eq!(body["data"]["display_field"], Value::Null);
}

#[actix_web::test]
async fn fields_are_added_reordered_and_deleted() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/notes/fields",
        &s,
        Some(json!({"name": "title", "type": "string"})),
    )
    .await;
    assert_eq!(
        (status, body["errors"]["name"].clone()),
        (422, json!(["duplicate field name \"title\""]))
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/notes/fields",
        &s,
        Some(json!({"name": "when", "type": "date", "settings": {"date_mode": "week"}})),
    )
    .await;
    assert_eq!(status, 422);
    assert!(body["errors"]["settings.date_mode"].is_array(), "{body}");
    let (status, _) = send(
        &app,
        Method::POST,
        "/collections/notes/fields",
        &s,
        Some(json!({"name": "body", "type": "textarea"})),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        public_fields(&app, "notes").await,
        ["title", "price", "body"]
    );

    for bad in [
        json!({"fields": ["title", "price"]}),
        json!({"fields": ["title", "price", "body", "body"]}),
        json!({"fields": ["title", "price", "nope"]}),
        json!({}),
    ] {
        let (status, body) = send(
            &app,
            Method::PUT,
            "/collections/notes/field-order",
            &s,
            Some(bad.clone()),
        )
        .await;
        assert_eq!(status, 422, "{bad}");
        assert!(body["errors"]["fields"].is_array(), "{body}");
    }
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes/field-order",
        &s,
        Some(json!({"fields": ["body", "price", "title"]})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["fields"][0]["name"], "body");
    assert_eq!(
        public_fields(&app, "notes").await,
        ["body", "price", "title"]
    );

    // Two of the three notes hold a price: the dry run says so and changes nothing.
    let (status, body) = send(
        &app,
        Method::DELETE,
        "/collections/notes/fields/price",
        &s,
        None,
    )
    .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"data": {"dry_run": true, "confirm_required": true, "items": 2}})
        )
    );
    assert_eq!(
        public_fields(&app, "notes").await,
        ["body", "price", "title"]
    );
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/notes/fields/price?confirm=true",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(public_fields(&app, "notes").await, ["body", "title"]);
    let stored = vellum_storage::collections::collection_by_slug(&app.db.conn, "notes")
        .await
        .unwrap()
        .unwrap();
    let values =
        vellum_storage::field_changes::field_values(&app.db.conn, &stored, "price", 0, 100)
            .await
            .unwrap();
    assert!(values.iter().all(|v| v.value.is_null()), "{values:?}");
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/notes/fields/price",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 404);
    // A field an item filter reads cannot go (the role would see more).
    let (status, body) = send(
        &app,
        Method::DELETE,
        "/collections/articles/fields/status?confirm=true",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        body["errors"]["status"][0]
            .as_str()
            .unwrap()
            .contains("public"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_type_change_is_a_dry_run_then_converts_or_is_refused_naming_items() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes/fields/price",
        &s,
        Some(json!({"type": "number"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["dry_run"], true);
    assert_eq!(body["data"]["changes"], 2);
    assert_eq!(body["data"]["field"]["type"], "number");
    // Nothing changed yet.
    let notes = vellum_storage::collections::collection_by_slug(&app.db.conn, "notes")
        .await
        .unwrap()
        .unwrap();
    let first = notes
        .fields
        .iter()
        .find(|f| f.def.name.as_str() == "price")
        .unwrap();
    assert_eq!(first.def.field_type.as_str(), "string");
    let ids: Vec<i64> =
        vellum_storage::field_changes::field_values(&app.db.conn, &notes, "price", 0, 100)
            .await
            .unwrap()
            .iter()
            .map(|v| v.item_id)
            .collect();
    assert_eq!(item(&app, "notes", ids[0]).await["price"], "12");

    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes/fields/price?confirm=true",
        &s,
        Some(json!({"type": "number"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["data"]["dry_run"].clone(),
            body["data"]["changes"].clone()
        ),
        (json!(false), json!(2))
    );
    assert_eq!(item(&app, "notes", ids[0]).await["price"], 12);
    assert_eq!(item(&app, "notes", ids[1]).await["price"], 7.5);
    assert_eq!(item(&app, "notes", ids[2]).await["price"], Value::Null);
    let res = app
        .get_as(
            "admin-key",
            "/api/v1/collections/notes/items?filter[price][_gt]=10",
        )
        .await;
    assert_eq!(res.json()["meta"]["total"], 1);

    // Back to text, then a value that is not a number refuses, naming the item.
    send(
        &app,
        Method::PUT,
        "/collections/notes/fields/price?confirm=true",
        &s,
        Some(json!({"type": "string"})),
    )
    .await;
    assert_eq!(item(&app, "notes", ids[0]).await["price"], "12");
    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &format!("/api/v1/collections/notes/items/{}", ids[2]),
            json!({"data": {"price": "abc"}}),
        )
        .await;
    assert_eq!(res.status, 200);
    for query in ["", "?confirm=true"] {
        let (status, body) = send(
            &app,
            Method::PUT,
            &format!("/collections/notes/fields/price{query}"),
            &s,
            Some(json!({"type": "number"})),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        let message = body["errors"]["price"][0].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "1 items hold values that cannot be converted: {}",
                ids[2]
            )),
            "{message}"
        );
        assert!(message.contains("must be a number"), "{message}");
    }
    assert_eq!(item(&app, "notes", ids[2]).await["price"], "abc");
}

#[actix_web::test]
async fn translatability_and_relation_targets_convert_or_refuse() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let notes = vellum_storage::collections::collection_by_slug(&app.db.conn, "notes")
        .await
        .unwrap()
        .unwrap();
    let id = vellum_storage::field_changes::field_values(&app.db.conn, &notes, "title", 0, 1)
        .await
        .unwrap()[0]
        .item_id;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/notes/fields/title?confirm=true",
        &s,
        Some(json!({"translatable": true})),
    )
    .await;
    assert_eq!(
        (status, body["data"]["changes"].clone()),
        (200, json!(3)),
        "{body}"
    );
    assert_eq!(item(&app, "notes", id).await["title"], json!({"en": "a"}));
    let (status, _) = send(
        &app,
        Method::PUT,
        "/collections/notes/fields/title?confirm=true",
        &s,
        Some(json!({"translatable": false})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(item(&app, "notes", id).await["title"], "a");

    // articles.author targets authors; pointing it at tags would break the linked article.
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/fields/author",
        &s,
        Some(json!({"settings": {"related_collection": "tags"}})),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        body["errors"]["author"][0]
            .as_str()
            .unwrap()
            .starts_with("1 items hold values that cannot be converted: 4"),
        "{body}"
    );
}

#[actix_web::test]
async fn a_rename_moves_values_rules_item_filters_presentation_and_export() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    send(
        &app,
        Method::PUT,
        "/collections/articles",
        &s,
        Some(json!({"display_field": "status", "display_template": "{{title}} [{{status}}]"})),
    )
    .await;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/fields/status",
        &s,
        Some(json!({"name": "views"})),
    )
    .await;
    assert_eq!(
        (status, body["errors"]["name"].clone()),
        (422, json!(["duplicate field name \"views\""]))
    );
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/fields/status",
        &s,
        Some(json!({"name": "state"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["field"]["name"], "state");
    let (status, _) = send(
        &app,
        Method::PUT,
        "/collections/articles/fields/internal_notes",
        &s,
        Some(json!({"name": "notes"})),
    )
    .await;
    assert_eq!(status, 200);
    // Values moved.
    assert_eq!(item(&app, "articles", 4).await["state"], "published");
    assert!(item(&app, "articles", 4).await.get("status").is_none());
    // The public role's item filter and field rule follow: one article, its notes hidden.
    let res = app.get("/api/v1/collections/articles/items").await;
    assert_eq!(res.status, 200);
    let page = res.json();
    assert_eq!(page["meta"]["total"], 1, "{page}");
    assert_eq!(page["data"][0]["data"]["state"], "published");
    assert!(page["data"][0]["data"].get("notes").is_none(), "{page}");
    // The presentation and the manifest follow.
    let (_, shown) = send(&app, Method::GET, "/collections/articles", &s, None).await;
    assert_eq!(shown["data"]["display_field"], "state");
    assert_eq!(shown["data"]["display_template"], "{{title}} [{{state}}]");
    let export = vellum_manifest::export(&app.db.conn, false).await.unwrap();
    let articles = export["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["slug"] == "articles")
        .unwrap()
        .clone();
    let names: Vec<&str> = articles["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "title", "state", "views", "cover", "author", "tags", "notes"
        ]
    );
    let public = export["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "public")
        .unwrap()
        .clone();
    assert_eq!(
        public["collection_permissions"]["articles"]["rules"],
        json!({"fields": {"notes": {"read": false}}, "item_filter": {"state": {"_eq": "published"}}})
    );
    vellum_manifest::apply(&app.db.conn, &export).await.unwrap();
}

#[actix_web::test]
async fn a_collection_is_deleted_after_a_dry_run_unless_a_relation_targets_it() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let (status, body) = send(
        &app,
        Method::DELETE,
        "/collections/authors?confirm=true",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        body["errors"]["collection"][0]
            .as_str()
            .unwrap()
            .contains("articles.author"),
        "{body}"
    );
    let (status, body) = send(&app, Method::DELETE, "/collections/notes", &s, None).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"data": {"dry_run": true, "confirm_required": true, "items": 3}})
        )
    );
    assert_eq!(
        app.get_as("admin-key", "/api/v1/collections/notes")
            .await
            .status,
        200
    );
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/notes?confirm=true",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(
        app.get_as("admin-key", "/api/v1/collections/notes")
            .await
            .status,
        404
    );
    let (status, _) = send(&app, Method::GET, "/collections/notes", &s, None).await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn packs_add_fields_and_collections() {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    send(
        &app,
        Method::POST,
        "/collections/notes/fields",
        &s,
        Some(json!({"name": "status", "type": "string"})),
    )
    .await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/notes/field-packs/publishing",
        &s,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["added"], json!(["published_at", "featured"]));
    assert_eq!(body["data"]["skipped"], json!(["status"]));
    assert_eq!(
        public_fields(&app, "notes").await,
        ["title", "price", "status", "published_at", "featured"]
    );
    for path in [
        "/collections/notes/field-packs/nope",
        "/collections/nope/field-packs/social",
        "/collections/packs/nope",
    ] {
        let (status, _) = send(&app, Method::POST, path, &s, None).await;
        assert_eq!(status, 404, "{path}");
    }

    // articles needs categories and seo; categories exists already (reused, untouched).
    send(
        &app,
        Method::POST,
        "/collections",
        &s,
        Some(json!({"slug": "categories", "fields": [{"name": "label", "type": "string"}]})),
    )
    .await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/packs/articles",
        &s,
        Some(json!({"slug": "posts", "name": "Posts"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["created"], json!(["seo"]));
    assert_eq!(body["data"]["reused"], json!(["categories"]));
    assert_eq!(body["data"]["collection"]["slug"], "posts");
    assert_eq!(body["data"]["collection"]["name"], "Posts");
    let fields: Vec<&str> = body["data"]["collection"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"status") && fields.contains(&"categories"),
        "{fields:?}"
    );
    assert_eq!(public_fields(&app, "categories").await, ["label"]);
    assert!(
        public_fields(&app, "seo")
            .await
            .contains(&"meta_title".to_owned())
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/packs/articles",
        &s,
        Some(json!({"slug": "posts"})),
    )
    .await;
    assert_eq!(
        (status, body["errors"]["slug"].clone()),
        (422, json!(["The collection \"posts\" already exists."]))
    );
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/packs/categories",
        &s,
        Some(json!({"slug": "Bad Slug"})),
    )
    .await;
    assert_eq!(status, 422);
    assert!(body["errors"]["slug"].is_array());
    // A self-relation follows the chosen slug.
    let (status, body) = send(
        &app,
        Method::POST,
        "/collections/packs/categories",
        &s,
        Some(json!({"slug": "topics"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let collection = &body["data"]["collection"];
    let parent = collection["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "parent")
        .unwrap();
    assert_eq!(
        parent["settings"]["related_collection_id"],
        collection["id"]
    );
}

/// The project with `codes`: a text `code` under a `unique` rule, holding `values` in order.
async fn codes(values: &[&str]) -> (TestApp, Vec<i64>) {
    let mut manifest = project();
    manifest["collections"].as_array_mut().unwrap().push(json!({
        "slug": "codes", "name": "Codes", "fields": [
            {"name": "code", "type": "string", "settings": {"validation_rules": [{"operator": "unique"}]}}
        ]
    }));
    manifest["items"]["codes"] = values
        .iter()
        .map(|v| json!({"data": {"code": v}}))
        .collect();
    let app = TestApp::new(manifest).await;
    let codes = vellum_storage::collections::collection_by_slug(&app.db.conn, "codes")
        .await
        .unwrap()
        .unwrap();
    let ids = vellum_storage::field_changes::field_values(&app.db.conn, &codes, "code", 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|v| v.item_id)
        .collect();
    (app, ids)
}

async fn create_code(app: &TestApp, code: Value) -> (u16, Value) {
    let res = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/codes/items",
            json!({"data": {"code": code}}),
        )
        .await;
    (res.status.as_u16(), res.json())
}

#[actix_web::test]
async fn a_unique_field_whose_converted_values_collide_is_refused_before_anything_changes() {
    // "1" and "1.0" are different strings but the same number.
    let (app, ids) = codes(&["1", "2", "1.0"]).await;
    let s = root(&app).await;
    for query in ["", "?confirm=true"] {
        let (status, body) = send(
            &app,
            Method::PUT,
            &format!("/collections/codes/fields/code{query}"),
            &s,
            Some(json!({"type": "number"})),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        let message = body["errors"]["code"][0].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "1 items hold values that cannot be converted: {}",
                ids[2]
            )),
            "{message}"
        );
        assert!(
            message.contains(&format!("would equal item {}'s", ids[0])),
            "{message}"
        );
    }
    // Nothing changed: the type, the values, and the claims (a taken text is still refused).
    assert_eq!(public_fields(&app, "codes").await, ["code"]);
    let res = app.get_as("admin-key", "/api/v1/collections/codes").await;
    assert_eq!(res.json()["data"]["fields"][0]["type"], "string");
    assert_eq!(item(&app, "codes", ids[2]).await["code"], "1.0");
    assert_eq!(create_code(&app, json!("2")).await.0, 422);
    assert_eq!(create_code(&app, json!("3")).await.0, 201);
}

#[actix_web::test]
async fn a_unique_field_converts_in_one_step_and_claims_the_converted_values() {
    let (app, ids) = codes(&["1", "2.50", "7"]).await;
    let s = root(&app).await;
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/codes/fields/code?confirm=true",
        &s,
        Some(json!({"type": "number"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["changes"], 3);
    assert_eq!(item(&app, "codes", ids[1]).await["code"], 2.5);
    // The claims are the converted numbers: 2.5 and 7.0 are taken, 3 is free.
    let (status, body) = create_code(&app, json!(2.5)).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["errors"]["code"],
        json!(["The code has already been taken."])
    );
    assert_eq!(create_code(&app, json!(7.0)).await.0, 422);
    assert_eq!(create_code(&app, json!(3)).await.0, 201);
}

#[actix_web::test]
async fn a_rename_moves_every_kind_of_value_at_once_and_a_late_write_under_the_old_name_is_caught_up()
 {
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let before = item(&app, "articles", 4).await;
    assert!(before["tags"].is_array(), "{before}");
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/fields/tags",
        &s,
        Some(json!({"name": "labels"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Arrays (and every other JSON type) move as themselves, not as text.
    let after = item(&app, "articles", 4).await;
    assert_eq!(after["labels"], before["tags"], "{after}");
    assert!(after.get("tags").is_none(), "{after}");
    // No item keeps the old key: the move was one statement, not a pass still under way.
    let articles = vellum_storage::collections::collection_by_slug(&app.db.conn, "articles")
        .await
        .unwrap()
        .unwrap();
    let old = vellum_storage::field_changes::field_values(&app.db.conn, &articles, "tags", 0, 500)
        .await
        .unwrap();
    assert!(old.iter().all(|v| v.value.is_null()), "{old:?}");

    // A request that had read the old definition writes `tags` after the rename: the catch-up
    // moves it, and its value (the newer one) replaces the moved one.
    let backend = app.db.conn.get_database_backend();
    let sql = if backend == sea_orm::DbBackend::Postgres {
        "UPDATE items SET data = data || $1::jsonb WHERE id = $2"
    } else {
        "UPDATE items SET data = jsonb_patch(data, jsonb(?)) WHERE id = ?"
    };
    app.db
        .conn
        .execute_raw(sea_orm::Statement::from_sql_and_values(
            backend,
            sql,
            [json!({"tags": []}).to_string().into(), 4i32.into()],
        ))
        .await
        .unwrap();
    let moved = vellum_storage::field_changes::move_key(&app.db.conn, &articles, "tags", "labels")
        .await
        .unwrap();
    assert_eq!(moved, 1);
    let stored =
        vellum_storage::field_changes::field_values(&app.db.conn, &articles, "labels", 3, 1)
            .await
            .unwrap();
    assert_eq!((stored[0].item_id, stored[0].value.clone()), (4, json!([])));
    let stored = vellum_storage::field_changes::field_values(&app.db.conn, &articles, "tags", 3, 1)
        .await
        .unwrap();
    assert_eq!(stored[0].value, Value::Null);
}

#[actix_web::test]
async fn a_schema_change_reaches_every_replica() {
    schema_change_on_replicas(None).await;
    if let Ok(url) = std::env::var(crate::support::REDIS_ENV)
        && !url.trim().is_empty()
    {
        schema_change_on_replicas(Some(url.trim())).await;
    }
}

/// A rename and a type change made on replica A: replica B's public API answers with the new
/// definition and values, at once when the replicas share the epoch through Redis, otherwise
/// within its snapshot's lifetime (shortened here); B's cached answers are not served stale.
async fn schema_change_on_replicas(redis: Option<&str>) {
    use super::{admin_at, create_user, replicas, sign_in_at};
    use std::time::Duration;
    let app = TestApp::new(project()).await;
    create_user(&app.state, "root@example.com", "Root", &["super-admin"]).await;
    let config = vellum_http::HttpConfig {
        snapshot_ttl: Duration::from_millis(300),
        ..vellum_http::HttpConfig::default()
    };
    let (a, b) = replicas(&app, &config, redis).await;
    let s = sign_in_at(&a, "root@example.com", super::PASSWORD).await;
    let read_on_b = || async {
        let req = app.authed(
            TestApp::request(Method::GET, "/api/v1/collections/notes/items?sort=id"),
            Some("admin-key"),
        );
        let res = crate::support::send_to(&b, req).await;
        assert_eq!(res.status, 200);
        res.json()["data"][0]["data"].clone()
    };
    assert_eq!(read_on_b().await["price"], "12");
    assert_eq!(read_on_b().await["price"], "12", "now cached on B");
    for (body, confirm) in [
        (json!({"name": "cost"}), ""),
        (json!({"type": "number"}), "?confirm=true"),
    ] {
        let field = if confirm.is_empty() { "price" } else { "cost" };
        let res = admin_at(
            &a,
            Method::PUT,
            &format!("/collections/notes/fields/{field}{confirm}"),
            Some(&s),
            Some(body),
        )
        .await;
        assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    }
    if redis.is_none() {
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
    let data = read_on_b().await;
    assert_eq!(data["cost"], 12, "{data}");
    assert!(data.get("price").is_none(), "{data}");
}

#[actix_web::test]
async fn a_confirmed_change_runs_to_its_end_when_its_request_is_dropped() {
    use std::time::Duration;
    let app = TestApp::new(project()).await;
    let s = root(&app).await;
    let token = vellum_app::identity::token::SessionToken::from_cookie(s.token()).unwrap();
    let principal = vellum_app::accounts::authenticate(&app.state, &token)
        .await
        .unwrap()
        .unwrap();
    let notes = vellum_storage::collections::collection_by_slug(&app.db.conn, "notes")
        .await
        .unwrap()
        .unwrap();
    let first = vellum_storage::field_changes::field_values(&app.db.conn, &notes, "price", 0, 1)
        .await
        .unwrap()[0]
        .item_id;
    let body = json!({"type": "number"});
    let change = vellum_app::schema::fields::update(
        &app.state,
        &principal,
        "notes",
        "price",
        "confirm=true",
        &body,
    );
    // The request's future is dropped once the change has started (a client gone away, the
    // request timeout): the change still runs to its end instead of stopping between batches.
    let dropped = tokio::time::timeout(Duration::from_micros(1), change).await;
    assert!(
        dropped.is_err(),
        "a change does not finish in a microsecond"
    );
    let mut converted = Value::Null;
    for _ in 0..200 {
        converted = item(&app, "notes", first).await["price"].clone();
        if converted == json!(12) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(converted, json!(12));
    let res = app.get_as("admin-key", "/api/v1/collections/notes").await;
    assert_eq!(res.json()["data"]["fields"][1]["type"], "number");
}
