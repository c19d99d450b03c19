//! `include=files`, `include=users` and `include=<relation>` on item list and show: the file grant
//! mapping, depth-1 hydration, access on related items, and batched loading.

use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_domain::{WriteContext, WriteMode, prepare_write};
use vellum_http::HttpConfig;
use vellum_policy::{CollectionAction, Role};
use vellum_storage::files::{NewFile, Visibility, create_file, create_folder};
use vellum_storage::items::{FilterScope, create_item};

use crate::support::{BASE_URL, TestApp, op, post_item, with_statement_counter};

/// Pages with every kind of file slot and relation; authors (with their own file and relations);
/// tags. Roles: `public` (files read), `nofiles` (no files grant), `private` (read and
/// read_private), `privonly` (read_private without read), `limited` (no tags, only the author
/// "Ada", author emails and page secrets hidden).
fn media() -> Value {
    json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "tags", "name": "Tags", "fields": [
                {"name": "label", "type": "string", "settings": {}}
            ]},
            {"slug": "authors", "name": "Authors", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "email", "type": "string", "settings": {}},
                {"name": "avatar", "type": "image", "settings": {}},
                {"name": "tags", "type": "many_to_many", "settings": {"related_collection": "tags"}},
                {"name": "mentor", "type": "many_to_one", "settings": {"related_collection": "authors"}}
            ]},
            {"slug": "pages", "name": "Pages", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "gallery", "type": "image", "settings": {"allow_multiple": true}},
                {"name": "attachments", "type": "files", "settings": {}},
                {"name": "doc", "type": "file", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors"}},
                {"name": "tags", "type": "many_to_many", "settings": {
                    "related_collection": "tags",
                    "junction_fields": [{"name": "weight", "type": "number"}]
                }},
                {"name": "related", "type": "m2a", "settings": {"allowed_collections": ["authors", "tags"]}},
                {"name": "content", "type": "blocks", "settings": {"block_types": [
                    {"key": "hero", "fields": [
                        {"name": "heading", "type": "string", "settings": {}},
                        {"name": "image", "type": "image", "settings": {}}
                    ]},
                    {"key": "strip", "fields": [
                        {"name": "images", "type": "files", "settings": {}}
                    ]}
                ]}},
                {"name": "secret", "type": "textarea", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read": true}},
            {"name": "nofiles", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }},
            {"name": "private", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read_private": true, "read": true}},
            {"name": "privonly", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read_private": true}},
            {"name": "limited", "collection_permissions": {
                "pages": {"read": true, "rules": {"fields": {"secret": {"read": false}}}},
                "authors": {"read": true, "rules": {
                    "fields": {"email": {"read": false}},
                    "item_filter": {"name": {"_eq": "Ada"}}
                }}
            }, "file_permissions": {"read": true}}
        ],
        "api_keys": [
            {"name": "admin-key", "role": "super-admin"},
            {"name": "nofiles-key", "role": "nofiles"},
            {"name": "private-key", "role": "private"},
            {"name": "limited-key", "role": "limited"},
            {"name": "privonly-key", "role": "privonly"}
        ]
    })
}

/// Ids of what [`setup`] created.
#[allow(dead_code)]
struct Fixture {
    app: TestApp,
    tags_cid: i64,
    authors_cid: i64,
    pages_cid: i64,
    /// Public image at the root.
    cover: i64,
    /// Public PDF at the root.
    doc: i64,
    /// PNG in the private folder (inherits private).
    hidden: i64,
    /// GIF two levels below the private folder (inherits private through a null folder).
    deep: i64,
    /// WebP in a public folder inside the private one.
    open: i64,
    rust: i64,
    cms: i64,
    ada: i64,
    bob: i64,
    /// The page with everything.
    home: i64,
    /// A page by Bob.
    about: i64,
}

async fn file(
    app: &TestApp,
    parent: Option<i64>,
    filename: &str,
    mime: &str,
    size: Option<(i32, i32)>,
    title: Option<&str>,
) -> i64 {
    create_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Create),
        NewFile {
            parent_id: parent,
            filename: filename.to_owned(),
            mime_type: Some(mime.to_owned()),
            extension: filename.rsplit('.').next().map(str::to_owned),
            filesize: Some(1000 + i64::try_from(filename.len()).unwrap()),
            width: size.map(|s| s.0),
            height: size.map(|s| s.1),
            content_hash: None,
            storage_key: None,
            title: title.map(str::to_owned),
        },
    )
    .await
    .unwrap()
    .id
}

async fn collection_id(app: &TestApp, slug: &str) -> i64 {
    app.get_as("admin-key", &format!("/api/v1/collections/{slug}"))
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap()
}

async fn setup() -> Fixture {
    let app = TestApp::new(media()).await;
    let conn = &app.db.conn;
    let private = create_folder(
        conn,
        &crate::support::op(vellum_policy::FileAction::Create),
        None,
        "private",
        Some(Visibility::Private),
    )
    .await
    .unwrap();
    let inner = create_folder(
        conn,
        &crate::support::op(vellum_policy::FileAction::Create),
        Some(private.id),
        "inner",
        None,
    )
    .await
    .unwrap();
    let opened = create_folder(
        conn,
        &crate::support::op(vellum_policy::FileAction::Create),
        Some(private.id),
        "open",
        Some(Visibility::Public),
    )
    .await
    .unwrap();
    let cover = file(
        &app,
        None,
        "cover.jpg",
        "image/jpeg",
        Some((640, 480)),
        Some("Cover"),
    )
    .await;
    let doc = file(&app, None, "terms.pdf", "application/pdf", None, None).await;
    let hidden = file(
        &app,
        Some(private.id),
        "hidden.png",
        "image/png",
        Some((10, 20)),
        Some("Hidden"),
    )
    .await;
    let deep = file(
        &app,
        Some(inner.id),
        "deep.gif",
        "image/gif",
        Some((30, 40)),
        None,
    )
    .await;
    let open = file(
        &app,
        Some(opened.id),
        "open.webp",
        "image/webp",
        Some((50, 60)),
        Some("Open"),
    )
    .await;
    app.state.invalidate().await;

    let tags_cid = collection_id(&app, "tags").await;
    let authors_cid = collection_id(&app, "authors").await;
    let pages_cid = collection_id(&app, "pages").await;
    let rust = post_item(&app, "tags", json!({"label": "rust"})).await;
    let cms = post_item(&app, "tags", json!({"label": "cms"})).await;
    let bob = post_item(
        &app,
        "authors",
        json!({"name": "Bob", "email": "bob@example.com", "avatar": hidden}),
    )
    .await;
    let ada = post_item(
        &app,
        "authors",
        json!({"name": "Ada", "email": "ada@example.com", "avatar": cover, "tags": [rust], "mentor": bob}),
    )
    .await;
    let home = post_item(
        &app,
        "pages",
        json!({
            "title": {"en": "Home", "de": "Start"},
            "cover": cover,
            "gallery": [cover, hidden, open, deep],
            "attachments": [doc, hidden],
            "doc": hidden,
            "author": ada,
            "tags": [{"related_item_id": rust, "meta": {"weight": 2}}, {"related_item_id": cms}],
            "related": [
                {"related_collection_id": authors_cid, "related_item_id": bob},
                {"related_collection_id": tags_cid, "related_item_id": rust}
            ],
            "content": [
                {"type": "hero", "data": {"heading": "Hi", "image": cover}},
                {"type": "hero", "data": {"heading": "Psst", "image": hidden}},
                {"type": "strip", "data": {"images": [hidden, doc, deep]}}
            ],
            "secret": "TOP-SECRET"
        }),
    )
    .await;
    let about = post_item(
        &app,
        "pages",
        json!({"title": "About", "author": bob, "doc": doc}),
    )
    .await;
    Fixture {
        app,
        tags_cid,
        authors_cid,
        pages_cid,
        cover,
        doc,
        hidden,
        deep,
        open,
        rust,
        cms,
        ada,
        bob,
        home,
        about,
    }
}

/// The ExpandedFileField of a file as the fixture created it.
fn expanded(
    id: i64,
    filename: &str,
    title: Option<&str>,
    mime: &str,
    size: Option<(i32, i32)>,
) -> Value {
    let base = format!("{BASE_URL}/api/v1/files/{id}");
    let transforms = if mime.starts_with("image/") {
        json!({
            "thumbnail": format!("{base}/transforms/thumbnail"),
            "small": format!("{base}/transforms/small"),
            "medium": format!("{base}/transforms/medium"),
            "large": format!("{base}/transforms/large"),
        })
    } else {
        json!({})
    };
    json!({
        "id": id,
        "filename": filename,
        "title": title,
        "mime_type": mime,
        "width": size.map(|s| s.0),
        "height": size.map(|s| s.1),
        "filesize": 1000 + filename.len(),
        "url": format!("{base}/content"),
        "transforms": transforms,
    })
}

fn denied(id: i64) -> Value {
    json!({"id": id, "access": "denied"})
}

impl Fixture {
    fn cover_x(&self) -> Value {
        expanded(
            self.cover,
            "cover.jpg",
            Some("Cover"),
            "image/jpeg",
            Some((640, 480)),
        )
    }
    fn doc_x(&self) -> Value {
        expanded(self.doc, "terms.pdf", None, "application/pdf", None)
    }
    fn hidden_x(&self) -> Value {
        expanded(
            self.hidden,
            "hidden.png",
            Some("Hidden"),
            "image/png",
            Some((10, 20)),
        )
    }
    fn deep_x(&self) -> Value {
        expanded(self.deep, "deep.gif", None, "image/gif", Some((30, 40)))
    }
    fn open_x(&self) -> Value {
        expanded(
            self.open,
            "open.webp",
            Some("Open"),
            "image/webp",
            Some((50, 60)),
        )
    }

    /// GET `path` as `key` (None: anonymous), asserting 200.
    async fn get(&self, key: Option<&str>, path: &str) -> Value {
        let res = match key {
            Some(key) => self.app.get_as(key, path).await,
            None => self.app.get(path).await,
        };
        assert_eq!(
            res.status,
            StatusCode::OK,
            "{path}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        res.json()
    }

    /// The home page shown with `query`, and checked against its entry in the list.
    async fn home(&self, key: Option<&str>, query: &str) -> Value {
        let shown = self
            .get(
                key,
                &format!("/api/v1/collections/pages/items/{}?{query}", self.home),
            )
            .await;
        let listed = self
            .get(key, &format!("/api/v1/collections/pages/items?{query}"))
            .await;
        let entry = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == self.home)
            .unwrap()
            .clone();
        assert_eq!(shown["data"], entry, "show and list render the same");
        entry
    }

    /// The content blocks of `data` without their generated ids.
    fn blocks(data: &Value) -> Vec<Value> {
        data["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let mut b = b.clone();
                assert!(b["id"].is_string(), "{b}");
                b.as_object_mut().unwrap().remove("id");
                b
            })
            .collect()
    }
}

/// Asserts the nine keys of (Nested)CollectionItemResource.
fn assert_nine_keys(item: &Value) {
    let mut keys: Vec<&str> = item
        .as_object()
        .unwrap_or_else(|| panic!("not a resource: {item}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "collection_id",
            "created_at",
            "data",
            "id",
            "updated_at",
            "user_created",
            "user_created_id",
            "user_updated",
            "user_updated_id"
        ],
        "{item}"
    );
}

// ---------------------------------------------------------------------------------------------
// include=files

#[actix_web::test]
async fn without_include_files_every_file_slot_is_a_raw_id() {
    let f = setup().await;
    for key in [None, Some("nofiles-key"), Some("admin-key")] {
        let item = f.home(key, "").await;
        let data = &item["data"];
        assert_eq!(data["cover"], f.cover);
        assert_eq!(data["gallery"], json!([f.cover, f.hidden, f.open, f.deep]));
        assert_eq!(data["attachments"], json!([f.doc, f.hidden]));
        assert_eq!(data["doc"], f.hidden);
        assert_eq!(
            Fixture::blocks(data),
            [
                json!({"type": "hero", "data": {"heading": "Hi", "image": f.cover}}),
                json!({"type": "hero", "data": {"heading": "Psst", "image": f.hidden}}),
                json!({"type": "strip", "data": {"images": [f.hidden, f.doc, f.deep]}}),
            ]
        );
    }
}

#[actix_web::test]
async fn public_files_expand_and_private_ones_are_null_or_omitted_without_read_private() {
    let f = setup().await;
    let item = f.home(None, "include=files").await;
    let data = &item["data"];
    assert_eq!(data["cover"], f.cover_x());
    // The only shape of an expanded file: exactly these keys.
    let mut keys: Vec<&str> = data["cover"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "filename",
            "filesize",
            "height",
            "id",
            "mime_type",
            "title",
            "transforms",
            "url",
            "width"
        ]
    );
    // Private (inherited from the folder, also two levels down) is omitted from arrays; a
    // public folder inside a private one makes its files public.
    assert_eq!(data["gallery"], json!([f.cover_x(), f.open_x()]));
    assert_eq!(data["attachments"], json!([f.doc_x()]));
    assert_eq!(data["doc"], Value::Null);
    assert_eq!(
        Fixture::blocks(data),
        [
            json!({"type": "hero", "data": {"heading": "Hi", "image": f.cover_x()}}),
            json!({"type": "hero", "data": {"heading": "Psst", "image": null}}),
            json!({"type": "strip", "data": {"images": [f.doc_x()]}}),
        ]
    );
    // Not even the ids of unreadable private files leak.
    let body = serde_json::to_string(&item).unwrap();
    for name in ["hidden.png", "deep.gif"] {
        assert!(!body.contains(name), "{name} leaked: {body}");
    }
    for id in [f.hidden, f.deep] {
        assert!(
            !body.contains(&format!("/files/{id}/")),
            "file {id} leaked: {body}"
        );
    }
}

#[actix_web::test]
async fn without_files_read_public_files_are_denied_markers() {
    let f = setup().await;
    let item = f.home(Some("nofiles-key"), "include=files").await;
    let data = &item["data"];
    assert_eq!(data["cover"], denied(f.cover));
    assert_eq!(data["gallery"], json!([denied(f.cover), denied(f.open)]));
    assert_eq!(data["attachments"], json!([denied(f.doc)]));
    assert_eq!(data["doc"], Value::Null);
    assert_eq!(
        Fixture::blocks(data),
        [
            json!({"type": "hero", "data": {"heading": "Hi", "image": denied(f.cover)}}),
            json!({"type": "hero", "data": {"heading": "Psst", "image": null}}),
            json!({"type": "strip", "data": {"images": [denied(f.doc)]}}),
        ]
    );
    let body = serde_json::to_string(&item).unwrap();
    assert!(
        !body.contains("/api/v1/files/"),
        "a denied file carries no URL: {body}"
    );
}

#[actix_web::test]
async fn with_read_private_private_files_expand() {
    let f = setup().await;
    for key in ["private-key", "admin-key"] {
        let item = f.home(Some(key), "include=files").await;
        let data = &item["data"];
        assert_eq!(data["cover"], f.cover_x(), "{key}");
        assert_eq!(
            data["gallery"],
            json!([f.cover_x(), f.hidden_x(), f.open_x(), f.deep_x()]),
            "{key}"
        );
        assert_eq!(
            data["attachments"],
            json!([f.doc_x(), f.hidden_x()]),
            "{key}"
        );
        assert_eq!(data["doc"], f.hidden_x(), "{key}");
        assert_eq!(
            Fixture::blocks(data),
            [
                json!({"type": "hero", "data": {"heading": "Hi", "image": f.cover_x()}}),
                json!({"type": "hero", "data": {"heading": "Psst", "image": f.hidden_x()}}),
                json!({"type": "strip", "data": {"images": [f.hidden_x(), f.doc_x(), f.deep_x()]}}),
            ],
            "{key}"
        );
    }
}

#[actix_web::test]
async fn read_private_without_read_expands_private_files_and_denies_public_ones() {
    let f = setup().await;
    let item = f.home(Some("privonly-key"), "include=files").await;
    let data = &item["data"];
    assert_eq!(data["cover"], denied(f.cover));
    assert_eq!(
        data["gallery"],
        json!([denied(f.cover), f.hidden_x(), denied(f.open), f.deep_x()])
    );
    assert_eq!(data["attachments"], json!([denied(f.doc), f.hidden_x()]));
    assert_eq!(data["doc"], f.hidden_x());
}

#[actix_web::test]
async fn a_deleted_file_expands_to_null_and_is_omitted_from_arrays() {
    let f = setup().await;
    // A write must name live files; the files go after the page links them.
    let ghost = file(&f.app, None, "ghost.png", "image/png", Some((2, 2)), None).await;
    let other = file(&f.app, None, "other.png", "image/png", Some((2, 2)), None).await;
    let page = post_item(
        &f.app,
        "pages",
        json!({"title": "Ghosts", "cover": ghost, "gallery": [other, f.cover]}),
    )
    .await;
    for id in [ghost, other] {
        let res = f
            .app
            .delete(Some("admin-key"), &format!("/api/v1/files/{id}"))
            .await;
        assert_eq!(res.status, StatusCode::NO_CONTENT);
    }
    let item = f
        .get(
            None,
            &format!("/api/v1/collections/pages/items/{page}?include=files"),
        )
        .await;
    assert_eq!(item["data"]["data"]["cover"], Value::Null);
    assert_eq!(item["data"]["data"]["gallery"], json!([f.cover_x()]));
}

#[actix_web::test]
async fn files_inside_related_items_expand_by_the_same_rules() {
    let f = setup().await;
    let item = f.home(None, "include=files,author,related").await;
    let author = &item["data"]["author"];
    assert_eq!(author["data"]["avatar"], f.cover_x());
    let bob = &item["data"]["related"][0]["item"];
    assert_eq!(bob["id"], f.bob);
    assert_eq!(
        bob["data"]["avatar"],
        Value::Null,
        "private avatar without read_private"
    );
    let nofiles = f.home(Some("nofiles-key"), "include=files,author").await;
    assert_eq!(nofiles["data"]["author"]["data"]["avatar"], denied(f.cover));
    // Without `files`, nested file slots stay raw ids.
    let raw = f.home(None, "include=author").await;
    assert_eq!(raw["data"]["author"]["data"]["avatar"], f.cover);
}

// ---------------------------------------------------------------------------------------------
// include=users

/// Writes an item as user `user` through the storage layer (API keys act for no user).
async fn insert_as_user(app: &TestApp, slug: &str, data: &Value, user: Option<i64>) -> i64 {
    let conn = &app.db.conn;
    let collection = vellum_storage::collections::collection_by_slug(conn, slug)
        .await
        .unwrap()
        .unwrap();
    let settings = vellum_storage::project::load_settings(conn).await.unwrap();
    let locales = settings.locales().unwrap();
    let hash_key = vellum_storage::project::hash_key(conn).await.unwrap();
    let ctx = WriteContext {
        locales: &locales,
        locale: locales.default_locale(),
        hash_key: &hash_key,
    };
    let write = prepare_write(
        collection.schema(),
        data.as_object().unwrap(),
        WriteMode::Create,
        &ctx,
    )
    .unwrap();
    let grant = Role::from_json("super-admin", &json!({}))
        .unwrap()
        .authorize_item_write(
            &collection.slug,
            CollectionAction::Create,
            std::iter::empty(),
        )
        .unwrap();
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &locales,
        locale: locales.default_locale(),
    };
    let item = create_item(conn, &collection, &scope, &grant, &write, user)
        .await
        .unwrap();
    app.state.invalidate().await;
    item.id
}

#[actix_web::test]
async fn items_written_through_api_keys_have_no_user() {
    let f = setup().await;
    for query in ["", "include=users", "include=users,author"] {
        let item = f.home(None, query).await;
        assert_eq!(item["user_created_id"], Value::Null, "{query}");
        assert_eq!(item["user_updated_id"], Value::Null, "{query}");
        assert_eq!(item["user_created"], Value::Null, "{query}");
        assert_eq!(item["user_updated"], Value::Null, "{query}");
    }
}

#[actix_web::test]
async fn include_users_fills_mini_users_on_items_and_nested_items() {
    let f = setup().await;
    let conn = &f.app.db.conn;
    let grace = vellum_storage::users::create_user(conn, "Grace", Some("grace@example.com"))
        .await
        .unwrap();
    let linus = vellum_storage::users::create_user(conn, "Linus", None)
        .await
        .unwrap();
    let author = insert_as_user(&f.app, "authors", &json!({"name": "Linus"}), Some(linus.id)).await;
    let page = insert_as_user(
        &f.app,
        "pages",
        &json!({"title": "By Grace", "author": author}),
        Some(grace.id),
    )
    .await;
    let path = format!("/api/v1/collections/pages/items/{page}");

    let lean = f.get(None, &path).await["data"].clone();
    assert_nine_keys(&lean);
    assert_eq!(lean["user_created_id"], grace.id);
    assert_eq!(lean["user_updated_id"], grace.id);
    assert_eq!(
        lean["user_created"],
        Value::Null,
        "null unless include has users"
    );
    assert_eq!(lean["user_updated"], Value::Null);

    let full = f.get(None, &format!("{path}?include=users")).await["data"].clone();
    let grace_json = json!({"id": grace.id, "name": "Grace", "email": "grace@example.com"});
    assert_eq!(full["user_created"], grace_json);
    assert_eq!(full["user_updated"], grace_json);
    assert_eq!(
        full["data"]["author"], author,
        "users does not expand relations"
    );

    let nested = f.get(None, &format!("{path}?include=users,author")).await["data"].clone();
    let linus_json = json!({"id": linus.id, "name": "Linus", "email": null});
    assert_eq!(nested["data"]["author"]["user_created"], linus_json);
    assert_eq!(nested["data"]["author"]["user_updated"], linus_json);
    assert_eq!(nested["data"]["author"]["user_created_id"], linus.id);
    // Without `users`, nested items carry ids but no users either.
    let no_users = f.get(None, &format!("{path}?include=author")).await["data"].clone();
    assert_eq!(no_users["data"]["author"]["user_created_id"], linus.id);
    assert_eq!(no_users["data"]["author"]["user_created"], Value::Null);

    // The list renders the same users.
    let listed = f
        .get(
            None,
            &format!("/api/v1/collections/pages/items?include=users&filter[id][_eq]={page}"),
        )
        .await;
    assert_eq!(listed["data"][0]["user_created"], grace_json);
    // `Users` is not `users`.
    let wrong_case = f.get(None, &format!("{path}?include=Users")).await["data"].clone();
    assert_eq!(wrong_case, lean);

    // An update through an API key acts for no user: the creator stays, the updater is none.
    let res = f
        .app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &format!("{path}?include=users"),
            json!({"data": {"title": "Edited"}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let updated = f.get(None, &format!("{path}?include=users")).await["data"].clone();
    assert_eq!(updated["user_created_id"], grace.id);
    assert_eq!(updated["user_created"], grace_json);
    assert_eq!(updated["user_updated_id"], Value::Null);
    assert_eq!(updated["user_updated"], Value::Null);
    assert_eq!(
        res.json()["data"],
        updated,
        "the update response renders the same"
    );
}

// ---------------------------------------------------------------------------------------------
// include=<relation>

#[actix_web::test]
async fn many_to_one_becomes_a_nested_resource_without_further_expansion() {
    let f = setup().await;
    let lean = f.home(None, "").await;
    assert_eq!(lean["data"]["author"], f.ada);
    let item = f.home(None, "include=author,tags,mentor,related").await;
    let author = &item["data"]["author"];
    assert_nine_keys(author);
    let ada = f
        .get(
            None,
            &format!("/api/v1/collections/authors/items/{}", f.ada),
        )
        .await["data"]
        .clone();
    // Depth 1: the nested author is exactly the lean author resource; its own relations (`tags`,
    // `mentor`) stay lean although their names are in `include`.
    assert_eq!(*author, ada);
    assert_eq!(author["collection_id"], f.authors_cid);
    assert_eq!(author["data"]["mentor"], f.bob);
    assert_eq!(
        author["data"]["tags"],
        json!([{"related_item_id": f.rust, "meta": {}}])
    );
}

#[actix_web::test]
async fn a_self_relation_expands_one_level_only() {
    let f = setup().await;
    // Close the loop: Bob's mentor is Ada, Ada's is Bob.
    let res = f
        .app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &format!("/api/v1/collections/authors/items/{}", f.bob),
            json!({"data": {"mentor": f.ada}}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let list = f
        .get(None, "/api/v1/collections/authors/items?include=mentor")
        .await;
    let data = list["data"].as_array().unwrap();
    let bob = data.iter().find(|i| i["id"] == f.bob).unwrap();
    let ada = data.iter().find(|i| i["id"] == f.ada).unwrap();
    assert_nine_keys(&bob["data"]["mentor"]);
    assert_eq!(bob["data"]["mentor"]["id"], f.ada);
    assert_eq!(
        bob["data"]["mentor"]["data"]["mentor"], f.bob,
        "no second level"
    );
    assert_eq!(ada["data"]["mentor"]["id"], f.bob);
    assert_eq!(
        ada["data"]["mentor"]["data"]["mentor"], f.ada,
        "no second level"
    );
}

#[actix_web::test]
async fn many_to_many_entries_become_item_and_meta() {
    let f = setup().await;
    let lean = f.home(None, "").await;
    assert_eq!(
        lean["data"]["tags"],
        json!([{"related_item_id": f.rust, "meta": {"weight": 2}}, {"related_item_id": f.cms, "meta": {}}])
    );
    let item = f.home(None, "include=tags").await;
    let rust = f
        .get(None, &format!("/api/v1/collections/tags/items/{}", f.rust))
        .await["data"]
        .clone();
    let cms = f
        .get(None, &format!("/api/v1/collections/tags/items/{}", f.cms))
        .await["data"]
        .clone();
    assert_eq!(
        item["data"]["tags"],
        json!([{"item": rust, "meta": {"weight": 2}}, {"item": cms, "meta": {}}])
    );
    assert_eq!(
        item["data"]["tags"][0]["item"]["data"],
        json!({"label": "rust"})
    );
    // Only the named relation is expanded.
    assert_eq!(item["data"]["author"], f.ada);
    assert_eq!(item["data"]["related"], lean["data"]["related"]);
}

#[actix_web::test]
async fn m2a_entries_gain_the_item() {
    let f = setup().await;
    let lean = f.home(None, "").await;
    assert_eq!(
        lean["data"]["related"],
        json!([
            {"related_collection_id": f.authors_cid, "related_item_id": f.bob},
            {"related_collection_id": f.tags_cid, "related_item_id": f.rust}
        ])
    );
    let item = f.home(None, "include=related").await;
    let bob = f
        .get(
            None,
            &format!("/api/v1/collections/authors/items/{}", f.bob),
        )
        .await["data"]
        .clone();
    let rust = f
        .get(None, &format!("/api/v1/collections/tags/items/{}", f.rust))
        .await["data"]
        .clone();
    assert_eq!(
        item["data"]["related"],
        json!([
            {"related_collection_id": f.authors_cid, "related_item_id": f.bob, "item": bob},
            {"related_collection_id": f.tags_cid, "related_item_id": f.rust, "item": rust}
        ])
    );
}

#[actix_web::test]
async fn related_items_the_role_cannot_read_stay_lean_and_nested_fields_are_redacted() {
    let f = setup().await;
    let lean = f.home(Some("limited-key"), "").await;
    assert!(lean["data"].get("secret").is_none());
    let item = f
        .home(Some("limited-key"), "include=author,tags,related")
        .await;
    let data = &item["data"];
    assert!(data.get("secret").is_none());
    // Ada passes the authors item filter; her email is hidden from this role.
    let author = &data["author"];
    assert_nine_keys(author);
    assert_eq!(author["id"], f.ada);
    assert!(author["data"].get("email").is_none(), "{author}");
    assert_eq!(
        author["data"],
        json!({"name": "Ada", "avatar": f.cover, "tags": [{"related_item_id": f.rust, "meta": {}}], "mentor": f.bob})
    );
    // No grant on tags: lean links. Bob is outside the item filter: lean link.
    assert_eq!(data["tags"], lean["data"]["tags"]);
    assert_eq!(data["related"], lean["data"]["related"]);
    let body = serde_json::to_string(&item).unwrap();
    for leaked in [
        "ada@example.com",
        "bob@example.com",
        "\"Bob\"",
        "\"rust\"",
        "TOP-SECRET",
    ] {
        assert!(!body.contains(leaked), "{leaked} leaked: {body}");
    }
    // A many_to_one to an item outside the filter stays its id.
    let about = f
        .get(
            Some("limited-key"),
            &format!("/api/v1/collections/pages/items/{}?include=author", f.about),
        )
        .await;
    assert_eq!(about["data"]["data"]["author"], f.bob);
}

#[actix_web::test]
async fn unknown_and_wrongly_cased_include_tokens_are_ignored() {
    let f = setup().await;
    let lean = f.home(None, "").await;
    for query in [
        "include=Author",
        "include=FILES",
        "include=bogus",
        "include=title,secret",
        "include=",
        "include=,,",
    ] {
        assert_eq!(f.home(None, query).await, lean, "{query}");
    }
    let expected = f.home(None, "include=author,files").await;
    for query in [
        "include=bogus,author,files",
        "include=files,,author,Author",
        "include=author,files,author",
        "include=%20author%20,files",
    ] {
        assert_eq!(f.home(None, query).await, expected, "{query}");
    }
}

// ---------------------------------------------------------------------------------------------
// Batching

/// A page of pages with a cover, an author, two tags and a creating user each.
fn catalogue() -> Value {
    json!({
        "collections": [
            {"slug": "tags", "name": "Tags", "fields": [{"name": "label", "type": "string", "settings": {}}]},
            {"slug": "authors", "name": "Authors", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "avatar", "type": "image", "settings": {}}
            ]},
            {"slug": "pages", "name": "Pages", "fields": [
                {"name": "title", "type": "string", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "gallery", "type": "files", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors"}},
                {"name": "tags", "type": "many_to_many", "settings": {"related_collection": "tags"}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "pages": {"read": true}, "authors": {"read": true}, "tags": {"read": true}
            }, "file_permissions": {"read": true}}
        ]
    })
}

#[actix_web::test]
async fn expansion_costs_the_same_number_of_statements_for_10_and_100_items() {
    let config = HttpConfig {
        cache: false,
        snapshot_ttl: Duration::from_secs(3600),
        ..HttpConfig::default()
    };
    let (app, counter) = with_statement_counter(catalogue(), config).await;
    let conn = &app.db.conn;
    let mut users = Vec::new();
    for i in 0..10 {
        users.push(
            vellum_storage::users::create_user(conn, &format!("user {i}"), None)
                .await
                .unwrap()
                .id,
        );
    }
    let mut files = Vec::new();
    for i in 0..30 {
        files.push(
            file(
                &app,
                None,
                &format!("f{i}.jpg"),
                "image/jpeg",
                Some((1, 1)),
                None,
            )
            .await,
        );
    }
    let mut tags = Vec::new();
    for i in 0..20 {
        tags.push(
            insert_as_user(
                &app,
                "tags",
                &json!({"label": format!("t{i}")}),
                Some(users[i % 10]),
            )
            .await,
        );
    }
    let mut authors = Vec::new();
    for i in 0..25 {
        let data = json!({"name": format!("a{i}"), "avatar": files[i % 30]});
        authors.push(insert_as_user(&app, "authors", &data, Some(users[(i + 3) % 10])).await);
    }
    for i in 0..100 {
        let data = json!({
            "title": format!("p{i}"),
            "cover": files[i % 30],
            "gallery": [files[(i + 1) % 30], files[(i + 2) % 30]],
            "author": authors[i % 25],
            "tags": [tags[i % 20], tags[(i + 7) % 20]],
        });
        insert_as_user(&app, "pages", &data, Some(users[i % 10])).await;
    }

    let count = |query: String| {
        let app = &app;
        let counter = &counter;
        async move {
            let before = counter.load(Ordering::SeqCst);
            let res = app.get(&query).await;
            assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
            let body = res.json();
            (counter.load(Ordering::SeqCst) - before, body)
        }
    };
    let include = "include=files,users,author,tags";
    // Warm up: the snapshot is built once.
    count(format!(
        "/api/v1/collections/pages/items?per_page=1&{include}"
    ))
    .await;
    let (ten, small) = count(format!(
        "/api/v1/collections/pages/items?per_page=10&{include}"
    ))
    .await;
    let (hundred, large) = count(format!(
        "/api/v1/collections/pages/items?per_page=100&{include}"
    ))
    .await;
    assert_eq!(small["data"].as_array().unwrap().len(), 10);
    assert_eq!(large["data"].as_array().unwrap().len(), 100);
    // The expansions really happened on every item.
    for item in large["data"].as_array().unwrap() {
        assert!(item["data"]["cover"]["url"].is_string(), "{item}");
        assert_eq!(item["data"]["gallery"].as_array().unwrap().len(), 2);
        assert!(
            item["data"]["author"]["data"]["avatar"].is_object(),
            "{item}"
        );
        assert!(item["data"]["tags"][1]["item"]["id"].is_i64(), "{item}");
        assert!(item["user_created"]["name"].is_string(), "{item}");
        assert!(
            item["data"]["author"]["user_created"]["name"].is_string(),
            "{item}"
        );
    }
    assert_eq!(
        ten, hundred,
        "statements for 10 items: {ten}, for 100: {hundred}"
    );
    // count, page, authors, tags, files, users: a small constant.
    assert!(hundred <= 8, "{hundred} statements for one page");
    let (plain, _) = count("/api/v1/collections/pages/items?per_page=100".to_owned()).await;
    assert!(plain <= 2, "{plain} statements for a lean page");
}

// ---------------------------------------------------------------------------------------------
// Item filters on related items

/// Item filters the lists evaluate in SQL and relation expansion evaluates in memory.
const RELATED_FILTERS: [&str; 14] = [
    r#"{"name": "ADA"}"#,
    r#"{"age": {"_eq": "42.0"}}"#,
    r#"{"age": {"_gt": 9}}"#,
    r#"{"age": {"_lte": "10"}}"#,
    r#"{"age": {"_in": "7,42"}}"#,
    r#"{"nickname": {"_null": true}}"#,
    r#"{"nickname": {"_neq": "x"}}"#,
    r#"{"active": {"_eq": 1}}"#,
    r#"{"active": {"_neq": true}}"#,
    r#"{"labels": {"_contains": "RU"}}"#,
    r#"{"name": {"_gte": "B"}}"#,
    r#"{"title": "hallo"}"#,
    r#"{"created_at": {"_gte": "2000-01-01"}}"#,
    r#"{"updated_at": {"_lt": "2000-01-01T00:00:00Z"}}"#,
];

#[actix_web::test]
async fn related_items_are_expanded_exactly_when_the_role_lists_them() {
    let roles: Vec<Value> = RELATED_FILTERS
        .iter()
        .enumerate()
        .map(|(i, filter)| {
            let filter: Value = serde_json::from_str(filter).unwrap();
            json!({"name": format!("f{i}"), "collection_permissions": {
                "posts": {"read": true},
                "people": {"read": true, "rules": {"item_filter": filter}}
            }})
        })
        .collect();
    let mut keys: Vec<Value> = (0..RELATED_FILTERS.len())
        .map(|i| json!({"name": format!("f{i}-key"), "role": format!("f{i}")}))
        .collect();
    keys.push(json!({"name": "admin-key", "role": "super-admin"}));
    let app = TestApp::new(json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "people", "name": "People", "fields": [
                {"name": "name", "type": "string", "settings": {}},
                {"name": "title", "type": "string", "translatable": true, "settings": {}},
                {"name": "age", "type": "number", "settings": {}},
                {"name": "active", "type": "boolean", "settings": {}},
                {"name": "nickname", "type": "string", "settings": {}},
                {"name": "labels", "type": "tag", "settings": {}}
            ]},
            {"slug": "posts", "name": "Posts", "fields": [
                {"name": "related", "type": "m2a", "settings": {"allowed_collections": ["people"]}},
                {"name": "people", "type": "many_to_many", "settings": {"related_collection": "people"}}
            ]}
        ],
        "roles": roles,
        "api_keys": keys
    }))
    .await;
    let people_cid = collection_id(&app, "people").await;
    let mut people = Vec::new();
    for data in [
        json!({"name": "Ada", "title": {"en": "hello", "de": "hallo"}, "age": 42, "active": true, "nickname": null, "labels": ["rust"]}),
        json!({"name": "bob", "title": {"en": "hallo"}, "age": 7, "active": false, "nickname": "x", "labels": []}),
        json!({"name": "Cadabra", "title": {"en": "x", "de": "y"}, "age": 10, "nickname": "", "labels": ["Rusty", "go"]}),
        json!({"name": "Zed", "age": 42.0, "active": true, "nickname": "y", "labels": ["go"]}),
        json!({"name": "ada lovelace", "active": true}),
    ] {
        people.push(post_item(&app, "people", data).await);
    }
    let related: Vec<Value> = people
        .iter()
        .map(|id| json!({"related_collection_id": people_cid, "related_item_id": id}))
        .collect();
    let page = post_item(&app, "posts", json!({"related": related, "people": people})).await;

    for (i, filter) in RELATED_FILTERS.iter().enumerate() {
        let key = format!("f{i}-key");
        for locale in ["en", "de"] {
            let label = format!("{filter} in {locale}");
            let listed = app
                .get_as(
                    &key,
                    &format!("/api/v1/collections/people/items?locale={locale}"),
                )
                .await;
            assert_eq!(
                listed.status,
                StatusCode::OK,
                "{label}: {:?}",
                listed.json()
            );
            let listed: Vec<i64> = listed.json()["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["id"].as_i64().unwrap())
                .collect();
            let shown = app
                .get_as(&key, &format!("/api/v1/collections/posts/items/{page}?locale={locale}&include=related,people"))
                .await
                .json();
            let expanded: Vec<i64> = shown["data"]["data"]["related"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e.get("item").map(|item| item["id"].as_i64().unwrap()))
                .collect();
            assert_eq!(expanded, listed, "m2a: {label}");
            let expanded: Vec<i64> = shown["data"]["data"]["people"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e.get("item").map(|item| item["id"].as_i64().unwrap()))
                .collect();
            assert_eq!(expanded, listed, "m2m: {label}");
            for id in &people {
                let res = app
                    .get_as(
                        &key,
                        &format!("/api/v1/collections/people/items/{id}?locale={locale}"),
                    )
                    .await;
                let expected = if listed.contains(id) {
                    StatusCode::OK
                } else {
                    StatusCode::NOT_FOUND
                };
                assert_eq!(res.status, expected, "show {id}: {label}");
            }
        }
    }
}

/// At most `EXPAND_PER_FIELD` (100) links of one relation field of one item are expanded; the
/// rest stay lean links in order, so the array still holds every link (its length is the true
/// count) and a response is bounded whatever the relation's size (security review 2026-11, R5).
#[actix_web::test]
async fn expansion_stops_after_100_links_per_field_and_keeps_the_rest_lean() {
    let f = setup().await;
    let mut tags = Vec::new();
    for i in 0..130 {
        tags.push(post_item(&f.app, "tags", json!({"label": format!("t{i}")})).await);
    }
    let links: Vec<Value> = tags
        .iter()
        .map(|id| json!({"related_item_id": id, "meta": {"weight": 1}}))
        .collect();
    let related: Vec<Value> = tags
        .iter()
        .map(|id| json!({"related_collection_id": f.tags_cid, "related_item_id": id}))
        .collect();
    let page = post_item(
        &f.app,
        "pages",
        json!({"title": "many", "tags": links, "related": related}),
    )
    .await;
    let path = format!("/api/v1/collections/pages/items/{page}?include=tags,related");
    for item in [
        f.get(None, &path).await["data"].clone(),
        f.get(
            None,
            "/api/v1/collections/pages/items?include=tags,related&filter[title][_eq]=many",
        )
        .await["data"][0]
            .clone(),
    ] {
        assert_nine_keys(&item);
        let expanded = item["data"]["tags"].as_array().unwrap();
        assert_eq!(expanded.len(), 130, "every link stays");
        for (i, (entry, id)) in expanded.iter().zip(&tags).enumerate() {
            if i < 100 {
                assert_eq!(entry["item"]["id"], *id, "entry {i}");
                assert_eq!(entry["item"]["data"]["label"], format!("t{i}"));
                assert_eq!(entry["meta"], json!({"weight": 1}));
            } else {
                assert_eq!(
                    *entry,
                    json!({"related_item_id": id, "meta": {"weight": 1}}),
                    "entry {i} stays lean"
                );
            }
        }
        let m2a = item["data"]["related"].as_array().unwrap();
        assert_eq!(m2a.len(), 130);
        assert_eq!(m2a[99]["item"]["id"], tags[99]);
        assert_eq!(
            m2a[100],
            json!({"related_collection_id": f.tags_cid, "related_item_id": tags[100]})
        );
    }
}
