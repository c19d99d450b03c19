//! The admin app's collection items (`/collections/{collection}/items…`, issue 18): every route
//! allowed with exactly its permission and refused without it (403) or without a session (401);
//! 404s; the list's filter, sort, direction and trash; create and update through the public
//! API's validation; soft delete, restore and force delete (links and unique claims go);
//! revisions and their restore; every write in the activity log and visible to the public API
//! at once. Export, bulk actions and the preview as a role are in `items_export.rs`,
//! `items_bulk.rs` and `items_preview.rs`.

use actix_web::http::Method;
use serde_json::{Value, json};

use super::Session;
use super::access_support::{error_fields, send};
use super::users::check_routes;
use crate::support::{TestApp, blog};

/// Every permission of the collections area.
pub const COLLECTION_PERMISSIONS: [&str; 6] = [
    "can-show-collections",
    "can-create-collections",
    "can-edit-collections",
    "can-delete-collections",
    "can-restore-collections",
    "can-force-delete-collections",
];

/// The blog project (authors 1, tags 2 and 3, articles 4 and 5) plus `products` with a unique
/// `sku`, a `name`, a `price` and a `note`.
pub fn manifest() -> Value {
    let mut manifest = blog();
    manifest["collections"]
        .as_array_mut()
        .unwrap()
        .push(json!({"slug": "products", "name": "Products", "fields": [
            {"name": "sku", "type": "string", "settings": {"validation_rules": [{"operator": "unique"}]}},
            {"name": "name", "type": "string", "settings": {}},
            {"name": "price", "type": "number", "settings": {"default_value": 1}},
            {"name": "note", "type": "textarea", "settings": {}}
        ]}));
    manifest
}

/// The app of [`manifest`] and a super-admin session.
pub async fn app_and_root() -> (TestApp, Session) {
    let app = TestApp::new(manifest()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    (app, root)
}

/// Creates an item through the admin app as `s`; answers its id.
pub async fn create(app: &TestApp, s: &Session, collection: &str, data: Value) -> i64 {
    let (status, body) = send(
        app,
        Method::POST,
        &format!("/collections/{collection}/items"),
        s,
        Some(json!({ "data": data })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_i64().unwrap()
}

/// The ids of a list response, in order.
pub fn ids(body: &Value) -> Vec<i64> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no list: {body}"))
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect()
}

/// The activity entries of the `items` log, newest first: (event, subject id, properties).
pub async fn item_activity(app: &TestApp, s: &Session) -> Vec<(String, String, Value)> {
    let (status, body) = send(
        app,
        Method::GET,
        "/activity-logs?log_name=items&per_page=100",
        s,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["subject_id"].as_str().unwrap().to_owned(),
                e["properties"].clone(),
            )
        })
        .collect()
}

async fn first_revision(app: &TestApp, item: i64) -> i64 {
    vellum_storage::items::revisions(&app.db.conn, item)
        .await
        .unwrap()[0]
        .id
}

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let (app, root) = app_and_root().await;
    let deleted = create(&app, &root, "articles", json!({"title": "to delete"})).await;
    let trashed = create(&app, &root, "articles", json!({"title": "trashed"})).await;
    let forced = create(&app, &root, "articles", json!({"title": "forced"})).await;
    let bulked = create(&app, &root, "articles", json!({"title": "bulk"})).await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/articles/items/{trashed}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let revision = first_revision(&app, 4).await;
    let items = "/collections/articles/items";
    check_routes(
        &app,
        &COLLECTION_PERMISSIONS,
        vec![
            (Method::GET, items.into(), "can-show-collections", None, 200),
            (
                Method::GET,
                format!("{items}/export?format=csv"),
                "can-show-collections",
                None,
                200,
            ),
            (
                Method::GET,
                format!("{items}/new"),
                "can-create-collections",
                None,
                200,
            ),
            (
                Method::POST,
                items.into(),
                "can-create-collections",
                Some(json!({"data": {"title": "new"}})),
                201,
            ),
            (
                Method::GET,
                format!("{items}/4"),
                "can-show-collections",
                None,
                200,
            ),
            (
                Method::PUT,
                format!("{items}/4"),
                "can-edit-collections",
                Some(json!({"data": {"views": 11}})),
                200,
            ),
            (
                Method::POST,
                format!("{items}/bulk"),
                "can-delete-collections",
                Some(json!({"action": "delete", "ids": [bulked]})),
                200,
            ),
            (
                Method::DELETE,
                format!("{items}/{deleted}"),
                "can-delete-collections",
                None,
                204,
            ),
            (
                Method::POST,
                format!("{items}/{trashed}/restore"),
                "can-restore-collections",
                None,
                200,
            ),
            (
                Method::DELETE,
                format!("{items}/{forced}/force"),
                "can-force-delete-collections",
                None,
                204,
            ),
            (
                Method::GET,
                format!("{items}/4/revisions"),
                "can-show-collections",
                None,
                200,
            ),
            (
                Method::POST,
                format!("{items}/4/revisions/{revision}/restore"),
                "can-edit-collections",
                None,
                200,
            ),
            (
                Method::GET,
                format!("{items}/4/preview-as-role?role=public"),
                "can-show-collections",
                None,
                200,
            ),
        ],
    )
    .await;
}

#[actix_web::test]
async fn unknown_collections_items_and_revisions_are_404() {
    let (app, root) = app_and_root().await;
    let not_found = json!({"message": "Not found."});
    let other_revision = first_revision(&app, 5).await;
    for (method, path) in [
        (Method::GET, "/collections/nope/items".to_owned()),
        (
            Method::GET,
            "/collections/nope/items/export?format=csv".to_owned(),
        ),
        (Method::GET, "/collections/nope/items/new".to_owned()),
        (Method::GET, "/collections/nope/items/4".to_owned()),
        (Method::GET, "/collections/articles/items/999".to_owned()),
        (Method::GET, "/collections/articles/items/abc".to_owned()),
        (Method::GET, "/collections/articles/items/0".to_owned()),
        // An author's id is no article.
        (Method::GET, "/collections/articles/items/1".to_owned()),
        (Method::DELETE, "/collections/articles/items/999".to_owned()),
        (
            Method::POST,
            "/collections/articles/items/999/restore".to_owned(),
        ),
        (
            Method::DELETE,
            "/collections/articles/items/999/force".to_owned(),
        ),
        (
            Method::DELETE,
            "/collections/articles/items/1/force".to_owned(),
        ),
        (
            Method::GET,
            "/collections/articles/items/999/revisions".to_owned(),
        ),
        (
            Method::POST,
            "/collections/articles/items/4/revisions/999999/restore".to_owned(),
        ),
        // A revision of another item.
        (
            Method::POST,
            format!("/collections/articles/items/4/revisions/{other_revision}/restore"),
        ),
        (
            Method::GET,
            "/collections/articles/items/999/preview-as-role?role=public".to_owned(),
        ),
    ] {
        let (status, body) = send(&app, method.clone(), &path, &root, None).await;
        assert_eq!((status, &body), (404, &not_found), "{method} {path}");
    }
    let (status, body) = send(
        &app,
        Method::PUT,
        "/collections/articles/items/999",
        &root,
        Some(json!({"data": {"views": 1}})),
    )
    .await;
    assert_eq!((status, body), (404, not_found));
    // The author is still there: nothing was deleted by the 404s above.
    let (status, _) = send(
        &app,
        Method::GET,
        "/collections/authors/items/1",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200);
}

#[actix_web::test]
async fn the_list_filters_sorts_and_pages() {
    let (app, root) = app_and_root().await;
    for (sku, name, price) in [
        ("a", "Cheap", 3),
        ("b", "Dear", 30),
        ("c", "Mid", 10),
        ("d", "Free", 0),
    ] {
        create(
            &app,
            &root,
            "products",
            json!({"sku": sku, "name": name, "price": price}),
        )
        .await;
    }
    let list = |query: &str| {
        let path = format!("/collections/products/items?{query}");
        let (app, root) = (&app, &root);
        async move { send(app, Method::GET, &path, root, None).await }
    };
    let (status, body) = list("").await;
    assert_eq!(status, 200);
    let all = ids(&body);
    assert_eq!(all.len(), 4);
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "id ascending by default: {all:?}"
    );
    assert_eq!(
        body["meta"],
        json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 4})
    );

    let (_, body) = list("sort=price&direction=desc").await;
    let prices: Vec<i64> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["price"].as_i64().unwrap())
        .collect();
    assert_eq!(prices, [30, 10, 3, 0]);
    let (_, body) = list("sort=name").await;
    let names: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["data"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Cheap", "Dear", "Free", "Mid"]);
    let (_, body) = list("direction=desc").await;
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(ids(&body), reversed);

    let (_, body) = list("filter[price][_gte]=3&sort=price").await;
    assert_eq!(body["meta"]["total"], 3);
    assert_eq!(body["data"][0]["data"]["sku"], "a");
    let (_, body) = list("per_page=3&page=2&sort=price").await;
    assert_eq!(
        body["meta"],
        json!({"current_page": 2, "last_page": 2, "per_page": 3, "total": 4})
    );
    assert_eq!(body["data"][0]["data"]["price"], 30);

    for (query, field) in [
        ("sort=nope", "sort"),
        ("sort=-price", "sort"),
        ("sort=price,name", "sort"),
        ("direction=sideways", "direction"),
        ("filter[nope]=1", "filter[nope]"),
        ("trashed=only", "trashed"),
        ("per_page=101", "per_page"),
        ("locale=fr", "locale"),
    ] {
        let (status, body) = list(query).await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(error_fields(&body), [field], "{query}");
    }
    // Lists (and blocks) are no sort key.
    let (status, body) = send(
        &app,
        Method::GET,
        "/collections/articles/items?sort=tags",
        &root,
        None,
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["sort".to_owned()])
    );
    // Every problem at once.
    let (status, body) = list("sort=nope&direction=up&page=0").await;
    assert_eq!(status, 422);
    assert_eq!(error_fields(&body), ["direction", "page", "sort"]);
}

#[actix_web::test]
async fn the_list_shows_every_field_and_expands_above_roles() {
    let (app, root) = app_and_root().await;
    let (status, body) = send(
        &app,
        Method::GET,
        "/collections/articles/items?include=author&locale=de&filter[status]=published",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), [4]);
    let item = &body["data"][0]["data"];
    // Field rules do not apply: the notes every role is denied are shown.
    assert_eq!(item["internal_notes"], "secret");
    assert_eq!(item["title"], "Hallo");
    assert_eq!(item["author"]["data"]["name"], "Ada");
}

#[actix_web::test]
async fn the_trash_lists_only_deleted_items_and_restore_brings_them_back() {
    let (app, root) = app_and_root().await;
    let item5 = "/collections/articles/items/5";
    let (status, body) = send(&app, Method::DELETE, item5, &root, None).await;
    assert_eq!((status, body), (204, Value::Null));
    let (status, body) = send(&app, Method::DELETE, item5, &root, None).await;
    assert_eq!(status, 404, "deleting twice: {body}");

    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4]);
    let (_, trash) = send(
        &app,
        Method::GET,
        "/collections/articles/items?trashed=1",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&trash), [5]);
    assert_eq!(trash["meta"]["total"], 1);
    let (_, trash) = send(
        &app,
        Method::GET,
        "/collections/articles/items?trashed=1&filter[status]=published",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&trash), Vec::<i64>::new());

    let (status, shown) = send(&app, Method::GET, item5, &root, None).await;
    assert_eq!(status, 200);
    assert!(shown["meta"]["deleted_at"].is_string(), "{shown}");
    assert_eq!(shown["data"]["data"]["internal_notes"], "wip");

    let (status, restored) =
        send(&app, Method::POST, &format!("{item5}/restore"), &root, None).await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["data"]["id"], 5);
    assert_eq!(restored["meta"], json!({"deleted_at": null}));
    let (_, live) = send(
        &app,
        Method::GET,
        "/collections/articles/items",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&live), [4, 5]);
    let (_, trash) = send(
        &app,
        Method::GET,
        "/collections/articles/items?trashed=1",
        &root,
        None,
    )
    .await;
    assert_eq!(ids(&trash), Vec::<i64>::new());

    let (status, body) = send(&app, Method::POST, &format!("{item5}/restore"), &root, None).await;
    assert_eq!(status, 422);
    assert_eq!(body["errors"]["item"], json!(["The item is not deleted."]));

    let events: Vec<(String, String)> = item_activity(&app, &root)
        .await
        .into_iter()
        .map(|(e, id, p)| {
            assert_eq!(p["collection"], "articles");
            (e, id)
        })
        .collect();
    assert_eq!(
        events,
        [
            ("restored".to_owned(), "5".to_owned()),
            ("deleted".to_owned(), "5".to_owned())
        ]
    );
}

#[actix_web::test]
async fn create_and_update_validate_as_the_public_api_and_are_logged() {
    let (app, root) = app_and_root().await;
    let items = "/collections/articles/items";
    let (status, body) = send(&app, Method::POST, items, &root, Some(json!({"data": {}}))).await;
    assert_eq!(status, 422);
    assert_eq!(
        body["errors"]["title"],
        json!(["The title field is required."])
    );
    let (status, body) = send(
        &app,
        Method::POST,
        items,
        &root,
        Some(json!({"data": {"title": "x", "views": "many"}})),
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["views".to_owned()])
    );
    let (status, body) = send(
        &app,
        Method::POST,
        items,
        &root,
        Some(json!({"title": "no data"})),
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["data".to_owned()])
    );

    let (status, created) = send(
        &app,
        Method::POST,
        &format!("{items}?locale=de"),
        &root,
        Some(json!({"data": {"title": {"en": "New", "de": "Neu"}, "internal_notes": "admin only", "author": 1}})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["data"]["id"].as_i64().unwrap();
    assert_eq!(created["data"]["data"]["title"], "Neu");
    assert_eq!(created["data"]["data"]["internal_notes"], "admin only");
    let account = send(&app, Method::GET, "/account", &root, None).await.1;
    assert_eq!(created["data"]["user_created_id"], account["data"]["id"]);

    let (status, updated) = send(
        &app,
        Method::PUT,
        &format!("{items}/{id}"),
        &root,
        Some(json!({"data": {"views": 7}})),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["data"]["data"]["views"], 7);
    // Only the fields sent change.
    let (_, shown) = send(
        &app,
        Method::GET,
        &format!("{items}/{id}?locale=de"),
        &root,
        None,
    )
    .await;
    assert_eq!(shown["data"]["data"]["title"], "Neu");
    assert_eq!(shown["data"]["data"]["internal_notes"], "admin only");
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("{items}/{id}"),
        &root,
        Some(json!({"data": {"views": "x"}})),
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["views".to_owned()])
    );
    // PATCH is the public API's verb, not the admin app's.
    let (status, _) = send(
        &app,
        Method::PATCH,
        &format!("{items}/{id}"),
        &root,
        Some(json!({"data": {"views": 8}})),
    )
    .await;
    assert_eq!(status, 404);

    let log = item_activity(&app, &root).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].0, "updated");
    assert_eq!(log[0].1, id.to_string());
    assert_eq!(
        log[0].2,
        json!({"changed": ["views"], "collection": "articles"})
    );
    assert_eq!(log[1].0, "created");
    assert_eq!(
        log[1].2["changed"],
        json!(["author", "internal_notes", "title"])
    );
}

#[actix_web::test]
async fn the_create_form_offers_fields_defaults_and_locales() {
    let (app, root) = app_and_root().await;
    let (status, body) = send(
        &app,
        Method::GET,
        "/collections/products/items/new",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let form = &body["data"];
    assert_eq!(form["collection"]["slug"], "products");
    let names: Vec<&str> = form["collection"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sku", "name", "price", "note"]);
    assert_eq!(form["collection"]["fields"][2]["type"], "number");
    assert_eq!(form["defaults"], json!({"price": 1}));
    assert_eq!(
        form["locales"],
        json!({"enabled": ["en", "de"], "default": "en"})
    );
    assert_eq!(form["form_layout"], Value::Null);
    // Hidden-from-every-role fields are on the form too.
    let (_, body) = send(
        &app,
        Method::GET,
        "/collections/articles/items/new",
        &root,
        None,
    )
    .await;
    let article_fields = body["data"]["collection"]["fields"].as_array().unwrap();
    assert!(
        article_fields
            .iter()
            .any(|f| f["name"] == "internal_notes" && f["translatable"] == false)
    );
    assert!(
        article_fields
            .iter()
            .any(|f| f["name"] == "title" && f["translatable"] == true)
    );
}

#[actix_web::test]
async fn admin_writes_reach_the_public_api_at_once() {
    let (app, root) = app_and_root().await;
    let public = "/api/v1/collections/articles/items/4";
    let before = app.get(public).await;
    assert_eq!(before.json()["data"]["data"]["title"], "Hello");
    // Cached now; an admin write must move the epoch.
    let (status, _) = send(
        &app,
        Method::PUT,
        "/collections/articles/items/4",
        &root,
        Some(json!({"data": {"title": "Changed"}})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        app.get(public).await.json()["data"]["data"]["title"],
        "Changed"
    );
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/articles/items/4",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(app.get(public).await.status, 404);
    let (status, _) = send(
        &app,
        Method::POST,
        "/collections/articles/items/4/restore",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(app.get(public).await.status, 200);
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/articles/items/4/force",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(app.get(public).await.status, 404);
}

#[actix_web::test]
async fn force_delete_removes_links_revisions_and_unique_claims() {
    let (app, root) = app_and_root().await;
    let products = "/collections/products/items";
    let first = create(&app, &root, "products", json!({"sku": "A-1"})).await;
    let (status, body) = send(
        &app,
        Method::POST,
        products,
        &root,
        Some(json!({"data": {"sku": "A-1"}})),
    )
    .await;
    assert_eq!((status, error_fields(&body)), (422, vec!["sku".to_owned()]));
    // A soft-deleted item keeps its claim (a restore can never collide)...
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("{products}/{first}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = send(
        &app,
        Method::POST,
        products,
        &root,
        Some(json!({"data": {"sku": "A-1"}})),
    )
    .await;
    assert_eq!(status, 422);
    // ...force delete releases it, from the trash or live.
    let (status, body) = send(
        &app,
        Method::DELETE,
        &format!("{products}/{first}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!((status, body), (204, Value::Null));
    let second = create(&app, &root, "products", json!({"sku": "A-1"})).await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("{products}/{second}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    create(&app, &root, "products", json!({"sku": "A-1"})).await;
    let (status, _) = send(
        &app,
        Method::GET,
        &format!("{products}/{first}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404);

    // Article 4 links author 1 and tags 2, 3: its link rows and revisions go with it.
    let snapshot = app.state.snapshot().await.unwrap();
    let articles = snapshot.collection("articles").unwrap();
    let author = articles.field("author").unwrap().id;
    let tags = articles.field("tags").unwrap().id;
    let links = |field| vellum_storage::links::links_for_items(&app.db.conn, field, &[4]);
    assert_eq!(links(author).await.unwrap().len(), 1);
    assert_eq!(links(tags).await.unwrap().len(), 2);
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/articles/items/4/force",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(links(author).await.unwrap().is_empty());
    assert!(links(tags).await.unwrap().is_empty());
    assert!(
        vellum_storage::items::revisions(&app.db.conn, 4)
            .await
            .unwrap()
            .is_empty()
    );
    let (status, _) = send(
        &app,
        Method::GET,
        "/collections/articles/items/4/revisions",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = send(
        &app,
        Method::DELETE,
        "/collections/articles/items/4/force",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404);
    // The author it linked stays.
    let (status, _) = send(
        &app,
        Method::GET,
        "/collections/authors/items/1",
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200);

    let log = item_activity(&app, &root).await;
    assert_eq!(log[0].0, "force_deleted");
    assert_eq!(
        (log[0].1.as_str(), &log[0].2["collection"]),
        ("4", &json!("articles"))
    );
}

#[actix_web::test]
async fn revisions_are_listed_newest_first_and_restored_as_a_new_update() {
    let (app, root) = app_and_root().await;
    let item = "/collections/articles/items/4";
    let (status, _) = send(
        &app,
        Method::PUT,
        item,
        &root,
        Some(json!({"data": {"title": "Changed", "views": 99}})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, page) = send(&app, Method::GET, &format!("{item}/revisions"), &root, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["meta"]["total"], 2);
    let revisions = page["data"].as_array().unwrap().clone();
    assert!(
        revisions[0]["id"].as_i64() > revisions[1]["id"].as_i64(),
        "newest first"
    );
    assert_eq!(
        revisions[0]["data"]["title"],
        json!({"en": "Changed", "de": "Hallo"})
    );
    assert_eq!(
        revisions[1]["data"]["title"],
        json!({"en": "Hello", "de": "Hallo"})
    );
    assert_eq!(revisions[1]["item_id"], 4);
    let original = revisions[1]["id"].as_i64().unwrap();

    let (status, restored) = send(
        &app,
        Method::POST,
        &format!("{item}/revisions/{original}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["data"]["data"]["title"], "Hello");
    assert_eq!(restored["data"]["data"]["views"], 10);
    let (_, page) = send(
        &app,
        Method::GET,
        &format!("{item}/revisions?per_page=2"),
        &root,
        None,
    )
    .await;
    assert_eq!(
        page["meta"],
        json!({"current_page": 1, "last_page": 2, "per_page": 2, "total": 3})
    );
    // A new revision on top with the old values; history is not rewritten.
    assert!(page["data"][0]["id"].as_i64().unwrap() > revisions[0]["id"].as_i64().unwrap());
    assert_eq!(page["data"][0]["data"], revisions[1]["data"]);
    assert_eq!(page["data"][1], revisions[0]);
    let (_, last) = send(
        &app,
        Method::GET,
        &format!("{item}/revisions?per_page=2&page=2"),
        &root,
        None,
    )
    .await;
    assert_eq!(last["data"][0], revisions[1]);
    let (status, body) = send(
        &app,
        Method::GET,
        &format!("{item}/revisions?per_page=0"),
        &root,
        None,
    )
    .await;
    assert_eq!(
        (status, error_fields(&body)),
        (422, vec!["per_page".to_owned()])
    );

    let log = item_activity(&app, &root).await;
    assert_eq!(log[0].0, "revision_restored");
    assert_eq!(log[0].2["revision_id"], original);

    // Revisions survive soft delete; restoring one needs a live item.
    let (status, _) = send(&app, Method::DELETE, item, &root, None).await;
    assert_eq!(status, 204);
    let (status, page) = send(&app, Method::GET, &format!("{item}/revisions"), &root, None).await;
    assert_eq!((status, page["meta"]["total"].as_i64()), (200, Some(3)));
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("{item}/revisions/{original}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn a_revision_restore_goes_through_validation() {
    let (app, root) = app_and_root().await;
    let first = create(&app, &root, "products", json!({"sku": "A"})).await;
    let old = first_revision(&app, first).await;
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/collections/products/items/{first}"),
        &root,
        Some(json!({"data": {"sku": "B"}})),
    )
    .await;
    assert_eq!(status, 200);
    create(&app, &root, "products", json!({"sku": "A"})).await;
    let path = format!("/collections/products/items/{first}/revisions/{old}/restore");
    let (status, body) = send(&app, Method::POST, &path, &root, None).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["sku"]);
    let revisions = vellum_storage::items::revisions(&app.db.conn, first)
        .await
        .unwrap();
    assert_eq!(revisions.len(), 2, "a refused restore writes nothing");
}
