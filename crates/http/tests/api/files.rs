//! The files endpoints' metadata side: upload (sniffing, names, folders, the size cap), list,
//! show, update, soft delete, folder access inheritance, URLs, every row of the file grant mapping,
//! and the response cache after file writes.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use vellum_storage::files::{FilePatch, NewFile, Visibility, create_file, create_folder};

use crate::support::{BASE_URL, Part, Response, TestApp, blob_key, op, png};

/// A project for the files tests: a `posts` collection with an image field, and one role (with a
/// key of the same name plus `-key`) per files grant: `viewer` (read), `private` (read and
/// read_private), `privonly` (read_private only), `creator`, `updater`, `deleter` (each only
/// that write grant, so their writes answer `{id}` only), `curator` (every files grant),
/// `nofiles` (none). Anonymous callers (`public`) have files `read`. `admin-key` is super-admin.
pub fn project() -> Value {
    let posts = json!({"posts": {"read": true}});
    json!({
        "settings": {"content_locales": ["en"], "default_locale": "en"},
        "collections": [
            {"slug": "posts", "name": "Posts", "fields": [
                {"name": "title", "type": "string", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": posts, "file_permissions": {"read": true}},
            {"name": "viewer", "collection_permissions": posts, "file_permissions": {"read": true}},
            {"name": "private", "collection_permissions": posts,
             "file_permissions": {"read": true, "read_private": true}},
            {"name": "privonly", "collection_permissions": posts,
             "file_permissions": {"read_private": true}},
            {"name": "creator", "file_permissions": {"create": true}},
            {"name": "updater", "file_permissions": {"update": true}},
            {"name": "deleter", "file_permissions": {"delete": true}},
            {"name": "curator", "collection_permissions": posts, "file_permissions":
                {"create": true, "read": true, "read_private": true, "update": true, "delete": true}},
            {"name": "nofiles", "collection_permissions": posts}
        ],
        "api_keys": [
            {"name": "admin-key", "role": "super-admin"},
            {"name": "viewer-key", "role": "viewer"},
            {"name": "private-key", "role": "private"},
            {"name": "privonly-key", "role": "privonly"},
            {"name": "creator-key", "role": "creator"},
            {"name": "updater-key", "role": "updater"},
            {"name": "deleter-key", "role": "deleter"},
            {"name": "curator-key", "role": "curator"},
            {"name": "nofiles-key", "role": "nofiles"}
        ]
    })
}

/// Creates a folder directly in storage (as the admin app would) and invalidates the caches.
pub async fn folder(
    app: &TestApp,
    parent: Option<i64>,
    name: &str,
    access: Option<Visibility>,
) -> i64 {
    let id = create_folder(
        &app.db.conn,
        &crate::support::op(vellum_policy::FileAction::Create),
        parent,
        name,
        access,
    )
    .await
    .unwrap()
    .id;
    app.state.invalidate().await;
    id
}

/// Sets a row's own `access` directly in storage (the admin app's job; the API has no field for
/// it).
pub async fn set_access(app: &TestApp, id: i64, access: Option<Visibility>) {
    vellum_storage::files::update_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Update),
        id,
        FilePatch {
            access: Some(access),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    app.state.invalidate().await;
}

/// A file row without bytes, straight into storage (for list tests that never read content).
async fn seed(app: &TestApp, parent: Option<i64>, filename: &str, title: Option<&str>) -> i64 {
    create_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Create),
        NewFile {
            parent_id: parent,
            filename: filename.to_owned(),
            mime_type: Some("application/octet-stream".to_owned()),
            extension: None,
            filesize: Some(10),
            width: None,
            height: None,
            content_hash: None,
            storage_key: None,
            title: title.map(str::to_owned),
        },
    )
    .await
    .unwrap()
    .id
}

/// `/api/v1/files/{id}`.
pub fn file_path(id: i64) -> String {
    format!("/api/v1/files/{id}")
}

/// The `url` and `transforms` of file `id` (an image or not).
pub fn urls(id: i64, image: bool) -> (Value, Value) {
    let base = format!("{BASE_URL}/api/v1/files/{id}");
    let transforms = if image {
        json!({
            "thumbnail": format!("{base}/transforms/thumbnail"),
            "small": format!("{base}/transforms/small"),
            "medium": format!("{base}/transforms/medium"),
            "large": format!("{base}/transforms/large"),
        })
    } else {
        json!({})
    };
    (json!(format!("{base}/content")), transforms)
}

/// The id of a FileResource.
pub fn id_of(resource: &Value) -> i64 {
    resource["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no id in {resource}"))
}

/// The filenames of a list response, in order.
fn names(res: &Response) -> Vec<String> {
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts a 422 whose `errors` name exactly `fields`.
pub fn assert_invalid(res: &Response, fields: &[&str], what: &str) {
    assert_eq!(
        res.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    assert_eq!(body["message"], "The given data was invalid.", "{what}");
    let errors = body["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("{what}: no errors in {body}"));
    let mut keys: Vec<&str> = errors.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, fields, "{what}: {body}");
    for (field, messages) in errors {
        let messages = messages.as_array().unwrap();
        assert!(
            !messages.is_empty()
                && messages
                    .iter()
                    .all(|m| m.as_str().is_some_and(|m| !m.is_empty())),
            "{what}: {field}: {messages:?}"
        );
    }
}

pub fn assert_forbidden(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::FORBIDDEN,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(res.json(), json!({"message": "Forbidden."}), "{what}");
}

pub fn assert_not_found(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::NOT_FOUND,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(res.json(), json!({"message": "Not found."}), "{what}");
}

/// The `meta.total` of `GET /files?search=…` as super-admin (searches every folder).
async fn total_matching(app: &TestApp, search: &str) -> i64 {
    let res = app
        .get_as("admin-key", &format!("/api/v1/files?search={search}"))
        .await;
    assert_eq!(res.status, StatusCode::OK);
    res.json()["meta"]["total"].as_i64().unwrap()
}

/// `n` bytes no image sniffer recognizes, different for each `seed`.
pub fn opaque_bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from((i * 31 + usize::from(seed) * 7 + 11) % 251).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// POST /files

#[actix_web::test]
async fn upload_returns_all_eighteen_keys_with_the_sniffed_type_and_size() {
    let app = TestApp::new(project()).await;
    let bytes = png(40, 30);
    let res = app
        .upload(
            Some("curator-key"),
            &[Part::file("../../x.png", "text/plain", &bytes)],
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::CREATED,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert!(
        res.header("content-type")
            .unwrap()
            .starts_with("application/json"),
        "{:?}",
        res.headers
    );
    let body = res.json();
    let data = &body["data"];
    let mut keys: Vec<&str> = data
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "access",
            "created_at",
            "description",
            "extension",
            "filename",
            "filesize",
            "focal_point_x",
            "focal_point_y",
            "height",
            "id",
            "mime_type",
            "parent_id",
            "title",
            "transforms",
            "type",
            "updated_at",
            "url",
            "width",
        ]
    );
    for key in ["created_at", "updated_at"] {
        let at = data[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {data}"));
        OffsetDateTime::parse(at, &Rfc3339).unwrap_or_else(|e| panic!("{key} {at}: {e}"));
    }
    let id = id_of(data);
    let (url, transforms) = urls(id, true);
    assert_eq!(
        body,
        json!({"data": {
            "id": id,
            "parent_id": null,
            "type": "file",
            "access": "public",
            "filename": "x.png",
            "title": null,
            "description": null,
            "mime_type": "image/png",
            "extension": "png",
            "filesize": bytes.len(),
            "width": 40,
            "height": 30,
            "focal_point_x": null,
            "focal_point_y": null,
            "url": url,
            "transforms": transforms,
            "created_at": data["created_at"],
            "updated_at": data["updated_at"],
        }})
    );
    // Show gives the same resource.
    let shown = app.get_as("viewer-key", &file_path(id)).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.json(), body);
    // The bytes are stored under their content address.
    assert_eq!(
        app.state.blobs().head(&blob_key(&bytes)).await.unwrap(),
        Some(u64::try_from(bytes.len()).unwrap())
    );
}

#[actix_web::test]
async fn the_type_is_sniffed_from_the_bytes_never_from_the_client() {
    let app = TestApp::new(project()).await;
    let html = b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>";
    let res = app
        .upload(
            Some("admin-key"),
            &[Part::file("evil.png", "image/png", html)],
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    let data = res.json()["data"].clone();
    let mime = data["mime_type"].as_str().unwrap_or_default();
    assert!(!mime.starts_with("image/"), "HTML sniffed as {mime}");
    assert_eq!(data["width"], Value::Null);
    assert_eq!(data["height"], Value::Null);
    assert_eq!(data["transforms"], json!({}), "not an image: no transforms");
    assert_eq!(data["filename"], "evil.png", "the name is the client's");
    assert_eq!(data["filesize"], html.len());

    // A real JPEG declared as anything is a JPEG.
    let jpeg = crate::support::jpeg(64, 48);
    let data = app
        .upload(
            Some("admin-key"),
            &[Part::file("photo.bin", "application/x-msdownload", &jpeg)],
        )
        .await
        .json()["data"]
        .clone();
    assert_eq!(data["mime_type"], "image/jpeg");
    assert_eq!(
        (data["width"].clone(), data["height"].clone()),
        (json!(64), json!(48))
    );
    assert_eq!(data["transforms"], urls(id_of(&data), true).1);
}

#[actix_web::test]
async fn the_filename_loses_directories_and_control_characters() {
    let app = TestApp::new(project()).await;
    let cases: [(Vec<Part>, &str); 5] = [
        (vec![Part::file("../../x.png", "image/png", b"a")], "x.png"),
        (
            vec![Part::file("dir/sub/re\tport.pdf", "application/pdf", b"b")],
            "report.pdf",
        ),
        (
            vec![Part::file("/etc/passwd", "text/plain", b"c")],
            "passwd",
        ),
        (
            vec![
                Part::file("ignored.txt", "text/plain", b"d"),
                Part::text("name", "a\u{1}b\u{7f}c\r\n.txt"),
            ],
            "abc.txt",
        ),
        (
            vec![
                Part::text("name", "nested/dir/y.png"),
                Part::file("ignored.txt", "text/plain", b"e"),
            ],
            "y.png",
        ),
    ];
    for (parts, expected) in cases {
        let res = app.upload(Some("admin-key"), &parts).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{expected}: {:?}",
            res.json()
        );
        assert_eq!(res.json()["data"]["filename"], expected);
    }
    // A part name that is nothing but a directory gives no name at all.
    let res = app
        .upload(Some("admin-key"), &[Part::file("../", "text/plain", b"f")])
        .await;
    assert_invalid(&res, &["name"], "directory-only name");
    // Names are at most 255 characters.
    let res = app
        .upload(
            Some("admin-key"),
            &[
                Part::file("g.txt", "text/plain", b"g"),
                Part::text("name", &"n".repeat(256)),
            ],
        )
        .await;
    assert_invalid(&res, &["name"], "256-character name");
}

#[actix_web::test]
async fn a_non_ascii_part_file_name_is_kept() {
    // Browsers send the file name of a multipart part as raw UTF-8 (HTML's form encoding).
    let app = TestApp::new(project()).await;
    let res = app
        .upload(
            Some("admin-key"),
            &[Part::file("café – 東京.png", "image/png", &png(2, 2))],
        )
        .await;
    assert_eq!(
        res.status,
        StatusCode::CREATED,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(res.json()["data"]["filename"], "café – 東京.png");
    // The same name through the `name` part.
    let res = app
        .upload(
            Some("admin-key"),
            &[
                Part::file("x.png", "image/png", &png(2, 3)),
                Part::text("name", "résumé.png"),
            ],
        )
        .await;
    assert_eq!(res.json()["data"]["filename"], "résumé.png");
}

#[actix_web::test]
async fn an_empty_file_is_a_file() {
    let app = TestApp::new(project()).await;
    let data = app.upload_file(Some("admin-key"), "empty.txt", b"").await;
    assert_eq!(data["filesize"], 0);
    assert_eq!(data["width"], Value::Null);
    let res = app
        .get(&format!("{}/content", file_path(id_of(&data))))
        .await;
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert!(res.body.is_empty());
    assert_eq!(res.header("content-length"), Some("0"));
}

#[actix_web::test]
async fn the_name_part_overrides_the_part_file_name() {
    let app = TestApp::new(project()).await;
    for parts in [
        vec![
            Part::file("original.png", "image/png", &png(2, 2)),
            Part::text("name", "renamed.png"),
        ],
        vec![
            Part::text("name", "renamed.png"),
            Part::file("original.png", "image/png", &png(3, 3)),
        ],
    ] {
        let res = app.upload(Some("admin-key"), &parts).await;
        assert_eq!(res.status, StatusCode::CREATED);
        assert_eq!(res.json()["data"]["filename"], "renamed.png");
    }
    assert_eq!(total_matching(&app, "original").await, 0);
    assert_eq!(total_matching(&app, "renamed").await, 2);
}

#[actix_web::test]
async fn an_upload_goes_into_the_folder_named_by_parent_id() {
    let mut manifest = project();
    manifest["folders"] = json!([
        {"name": "press", "parent": null, "access": null},
        {"name": "kits", "parent": "press", "access": null}
    ]);
    let app = TestApp::new(manifest).await;
    let root = app.get_as("admin-key", "/api/v1/files").await.json();
    let press = root["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["filename"] == "press")
        .unwrap_or_else(|| panic!("manifest folder missing: {root}"))
        .clone();
    assert_eq!(press["type"], "folder");
    let press_id = id_of(&press);
    let kits = app
        .get_as("admin-key", &format!("/api/v1/files?parent_id={press_id}"))
        .await
        .json();
    let kits_id = id_of(&kits["data"][0]);
    assert_eq!(kits["data"][0]["filename"], "kits");

    for (parent, parent_part) in [
        (press_id, press_id.to_string()),
        (kits_id, format!(" {kits_id} ")),
    ] {
        let res = app
            .upload(
                Some("curator-key"),
                &[
                    Part::text("parent_id", &parent_part),
                    Part::file("in-folder.png", "image/png", &png(5, 5)),
                ],
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.json());
        let data = res.json()["data"].clone();
        assert_eq!(data["parent_id"], parent);
        let listed = app
            .get_as("viewer-key", &format!("/api/v1/files?parent_id={parent}"))
            .await;
        assert!(
            listed.json()["data"].as_array().unwrap().contains(&data),
            "{:?}",
            listed.json()
        );
    }
    // The root holds only the folder; parent_id=null in the form means the root.
    assert_eq!(
        names(&app.get_as("viewer-key", "/api/v1/files").await),
        ["press"]
    );
    let res = app
        .upload(
            Some("creator-key"),
            &[
                Part::file("top.png", "image/png", &png(6, 6)),
                Part::text("parent_id", "null"),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    assert_eq!(res.json()["data"]["parent_id"], Value::Null);
}

#[actix_web::test]
async fn a_parent_that_is_not_a_live_folder_is_422_and_stores_nothing() {
    let app = TestApp::new(project()).await;
    let a_file = id_of(
        &app.upload_file(Some("admin-key"), "plain.bin", b"plain")
            .await,
    );
    let gone = folder(&app, None, "gone", None).await;
    let res = app.delete(Some("admin-key"), &file_path(gone)).await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);

    for (i, parent) in [
        a_file.to_string(),
        "999999".to_owned(),
        gone.to_string(),
        "abc".to_owned(),
        "0".to_owned(),
        "-3".to_owned(),
        "1.5".to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes = opaque_bytes(300, u8::try_from(i).unwrap());
        // Before and after the file part: the file may already be streamed when parent_id comes.
        for parts in [
            vec![
                Part::text("parent_id", &parent),
                Part::file("orphan.bin", "application/octet-stream", &bytes),
            ],
            vec![
                Part::file("orphan.bin", "application/octet-stream", &bytes),
                Part::text("parent_id", &parent),
            ],
        ] {
            let res = app.upload(Some("admin-key"), &parts).await;
            assert_invalid(&res, &["parent_id"], &format!("parent_id={parent}"));
            assert_eq!(
                app.state.blobs().head(&blob_key(&bytes)).await.unwrap(),
                None,
                "parent_id={parent}: the rejected upload's blob is gone"
            );
        }
    }
    assert_eq!(total_matching(&app, "orphan").await, 0, "no row written");
}

#[actix_web::test]
async fn an_upload_without_a_file_part_is_422() {
    let app = TestApp::new(project()).await;
    let res = app
        .upload(Some("admin-key"), &[Part::text("name", "nothing.txt")])
        .await;
    assert_invalid(&res, &["file"], "name only");
    let res = app.upload(Some("admin-key"), &[]).await;
    assert_invalid(&res, &["file"], "empty form");
    // A part with another name is not the file.
    let res = app
        .upload(
            Some("admin-key"),
            &[Part {
                name: "upload".to_owned(),
                ..Part::file("x.png", "image/png", &png(2, 2))
            }],
        )
        .await;
    assert_invalid(&res, &["file"], "wrong part name");
    // Not multipart at all.
    let res = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/files",
            json!({"file": "x"}),
        )
        .await;
    assert_invalid(&res, &["file"], "a JSON body");
    let listed = app.get_as("admin-key", "/api/v1/files").await.json();
    assert_eq!(listed["meta"]["total"], 0, "{listed}");
}

#[actix_web::test]
async fn an_upload_over_the_cap_is_422_and_leaves_no_row_and_no_blob() {
    let mut manifest = project();
    manifest["settings"]["files_max_upload_bytes"] = json!(1000);
    let app = TestApp::new(manifest).await;

    for (seed, size) in [(1, 1001), (2, 200_000)] {
        let bytes = opaque_bytes(size, seed);
        let res = app
            .upload(
                Some("admin-key"),
                &[Part::file("big.bin", "application/octet-stream", &bytes)],
            )
            .await;
        assert_invalid(&res, &["file"], &format!("{size} bytes"));
        assert_eq!(
            app.state.blobs().head(&blob_key(&bytes)).await.unwrap(),
            None,
            "{size} bytes: no blob under the content's key"
        );
    }
    let listed = app
        .get_as("admin-key", "/api/v1/files?search=big")
        .await
        .json();
    assert_eq!(listed["meta"]["total"], 0, "{listed}");
    assert_eq!(
        app.get_as("admin-key", "/api/v1/files").await.json()["meta"]["total"],
        0
    );

    // Exactly the cap is allowed, and uploads keep working after the refusals.
    for (seed, size) in [(3, 1000), (4, 10)] {
        let bytes = opaque_bytes(size, seed);
        let data = app.upload_file(Some("admin-key"), "ok.bin", &bytes).await;
        assert_eq!(data["filesize"], size);
        assert_eq!(
            app.state.blobs().head(&blob_key(&bytes)).await.unwrap(),
            Some(u64::try_from(size).unwrap())
        );
    }
    assert_eq!(
        app.get_as("admin-key", "/api/v1/files").await.json()["meta"]["total"],
        2
    );
}

#[actix_web::test]
async fn an_upload_without_the_create_grant_is_403_and_stores_nothing() {
    let app = TestApp::new(project()).await;
    let bytes = opaque_bytes(500, 9);
    for key in [
        None,
        Some("viewer-key"),
        Some("private-key"),
        Some("updater-key"),
        Some("deleter-key"),
        Some("nofiles-key"),
    ] {
        let res = app
            .upload(
                key,
                &[Part::file("denied.bin", "application/octet-stream", &bytes)],
            )
            .await;
        assert_forbidden(&res, &format!("{key:?}"));
    }
    assert_eq!(
        app.state.blobs().head(&blob_key(&bytes)).await.unwrap(),
        None
    );
    assert_eq!(
        app.get_as("admin-key", "/api/v1/files").await.json()["meta"]["total"],
        0
    );
}

// ---------------------------------------------------------------------------------------------
// GET /files

/// The root holds folders `docs` (inherits public) and `vault` (private) and files `alpha.png`
/// (title "Sunset") and `Beta.txt`; `docs` holds `gamma.pdf` (title "ALPHA report"); `vault`
/// holds `secret.png` (title "alpha secret").
struct Tree {
    app: TestApp,
    docs: i64,
    vault: i64,
    alpha: i64,
    gamma: i64,
    secret: i64,
}

async fn tree() -> Tree {
    let app = TestApp::new(project()).await;
    let docs = folder(&app, None, "docs", None).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let alpha = seed(&app, None, "alpha.png", Some("Sunset")).await;
    seed(&app, None, "Beta.txt", None).await;
    let gamma = seed(&app, Some(docs), "gamma.pdf", Some("ALPHA report")).await;
    let secret = seed(&app, Some(vault), "secret.png", Some("alpha secret")).await;
    Tree {
        app,
        docs,
        vault,
        alpha,
        gamma,
        secret,
    }
}

#[actix_web::test]
async fn the_list_shows_the_root_and_omits_private_entries_without_read_private() {
    let t = tree().await;
    for path in [
        "/api/v1/files",
        "/api/v1/files?parent_id=null",
        "/api/v1/files?parent_id=",
    ] {
        for key in ["admin-key", "private-key"] {
            let res = t.app.get_as(key, path).await;
            assert_eq!(
                names(&res),
                ["docs", "vault", "alpha.png", "Beta.txt"],
                "{key} {path}"
            );
            assert_eq!(
                res.json()["meta"],
                json!({"current_page": 1, "last_page": 1, "per_page": 15, "total": 4}),
                "{key} {path}"
            );
        }
        for res in [
            t.app.get_as("viewer-key", path).await,
            t.app.get(path).await,
        ] {
            assert_eq!(names(&res), ["docs", "alpha.png", "Beta.txt"], "{path}");
            assert_eq!(
                res.json()["meta"]["total"],
                3,
                "private entries leave the total too"
            );
        }
    }
    // Entries are whole FileResources with the effective access.
    let listed = t.app.get_as("admin-key", "/api/v1/files").await.json();
    let data = listed["data"].as_array().unwrap();
    assert_eq!(data[0]["access"], "public");
    assert_eq!(data[1]["access"], "private");
    for entry in data {
        let shown = t
            .app
            .get_as("admin-key", &file_path(id_of(entry)))
            .await
            .json();
        assert_eq!(&shown["data"], entry);
    }
}

#[actix_web::test]
async fn parent_id_lists_the_direct_children_of_one_folder() {
    let t = tree().await;
    let docs = format!("/api/v1/files?parent_id={}", t.docs);
    assert_eq!(
        names(&t.app.get_as("viewer-key", &docs).await),
        ["gamma.pdf"]
    );
    let vault = format!("/api/v1/files?parent_id={}", t.vault);
    assert_eq!(
        names(&t.app.get_as("private-key", &vault).await),
        ["secret.png"]
    );
    let res = t.app.get_as("viewer-key", &vault).await;
    assert_eq!(names(&res), Vec::<String>::new());
    assert_eq!(res.json()["meta"]["total"], 0);
    // A file's id or an unknown id is an empty folder, not an error.
    let res = t
        .app
        .get_as(
            "viewer-key",
            &format!("/api/v1/files?parent_id={}", t.alpha),
        )
        .await;
    assert_eq!(names(&res), Vec::<String>::new());
    let res = t
        .app
        .get_as("viewer-key", "/api/v1/files?parent_id=999999")
        .await;
    assert_eq!(names(&res), Vec::<String>::new());
    let res = t
        .app
        .get_as("viewer-key", "/api/v1/files?parent_id=abc")
        .await;
    assert_invalid(&res, &["parent_id"], "parent_id=abc");
}

#[actix_web::test]
async fn search_matches_filename_and_title_case_insensitively_in_every_folder() {
    let t = tree().await;
    // Without parent_id: every folder.
    assert_eq!(
        names(
            &t.app
                .get_as("viewer-key", "/api/v1/files?search=ALPHA")
                .await
        ),
        ["alpha.png", "gamma.pdf"],
        "filename match at the root, title match in docs; the private one omitted"
    );
    let res = t
        .app
        .get_as("private-key", "/api/v1/files?search=alpha")
        .await;
    assert_eq!(names(&res), ["alpha.png", "gamma.pdf", "secret.png"]);
    assert_eq!(res.json()["meta"]["total"], 3);
    assert_eq!(
        names(
            &t.app
                .get_as("viewer-key", "/api/v1/files?search=sunSET")
                .await
        ),
        ["alpha.png"]
    );
    assert_eq!(
        names(
            &t.app
                .get_as("viewer-key", "/api/v1/files?search=beta")
                .await
        ),
        ["Beta.txt"]
    );
    // A private match is omitted from data and from the total.
    let res = t
        .app
        .get_as("viewer-key", "/api/v1/files?search=secret")
        .await;
    assert_eq!(names(&res), Vec::<String>::new());
    assert_eq!(res.json()["meta"]["total"], 0);
    // With parent_id: that folder only.
    let path = format!("/api/v1/files?search=alpha&parent_id={}", t.docs);
    assert_eq!(
        names(&t.app.get_as("viewer-key", &path).await),
        ["gamma.pdf"]
    );
    assert_eq!(
        names(
            &t.app
                .get_as("viewer-key", "/api/v1/files?search=alpha&parent_id=null")
                .await
        ),
        ["alpha.png"]
    );
    // LIKE wildcards are taken literally.
    for term in ["%25", "_", "a%25a", "%5C", "%5C%25"] {
        let res = t
            .app
            .get_as("admin-key", &format!("/api/v1/files?search={term}"))
            .await;
        assert_eq!(names(&res), Vec::<String>::new(), "search={term}");
    }
}

#[actix_web::test]
async fn a_search_longer_than_255_characters_is_422() {
    let t = tree().await;
    let res = t
        .app
        .get_as(
            "viewer-key",
            &format!("/api/v1/files?search={}", "a".repeat(256)),
        )
        .await;
    assert_invalid(&res, &["search"], "256 characters");
    // Characters, not bytes.
    let res = t
        .app
        .get_as(
            "viewer-key",
            &format!("/api/v1/files?search={}", "%C3%A9".repeat(255)),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "255 two-byte characters");
    let res = t
        .app
        .get_as(
            "viewer-key",
            &format!("/api/v1/files?search={}", "a".repeat(255)),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
}

#[actix_web::test]
async fn the_list_paginates() {
    let t = tree().await;
    let res = t
        .app
        .get_as("admin-key", "/api/v1/files?per_page=3&page=2")
        .await;
    assert_eq!(names(&res), ["Beta.txt"]);
    assert_eq!(
        res.json()["meta"],
        json!({"current_page": 2, "last_page": 2, "per_page": 3, "total": 4})
    );
    let res = t
        .app
        .get_as("admin-key", "/api/v1/files?per_page=3&page=9")
        .await;
    assert_eq!(names(&res), Vec::<String>::new());
    assert_eq!(
        res.json()["meta"],
        json!({"current_page": 9, "last_page": 2, "per_page": 3, "total": 4})
    );
    let res = t.app.get_as("viewer-key", "/api/v1/files?per_page=2").await;
    assert_eq!(names(&res), ["docs", "alpha.png"]);
    assert_eq!(
        res.json()["meta"],
        json!({"current_page": 1, "last_page": 2, "per_page": 2, "total": 3})
    );
    for (query, field) in [
        ("per_page=0", "per_page"),
        ("per_page=101", "per_page"),
        ("page=0", "page"),
        ("page=abc", "page"),
    ] {
        let res = t
            .app
            .get_as("viewer-key", &format!("/api/v1/files?{query}"))
            .await;
        assert_invalid(&res, &[field], query);
    }
}

#[actix_web::test]
async fn listing_without_files_read_is_403() {
    let t = tree().await;
    for key in [
        "nofiles-key",
        "privonly-key",
        "creator-key",
        "updater-key",
        "deleter-key",
    ] {
        assert_forbidden(&t.app.get_as(key, "/api/v1/files").await, key);
        assert_forbidden(&t.app.get_as(key, "/api/v1/files?search=alpha").await, key);
    }
}

// ---------------------------------------------------------------------------------------------
// GET /files/{id}

#[actix_web::test]
async fn show_follows_the_effective_visibility() {
    let t = tree().await;
    // Public file: read.
    for key in [
        None,
        Some("viewer-key"),
        Some("private-key"),
        Some("admin-key"),
    ] {
        let res = t
            .app
            .send(
                t.app
                    .authed(TestApp::request(Method::GET, &file_path(t.alpha)), key),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{key:?}");
        assert_eq!(res.json()["data"]["filename"], "alpha.png");
        assert_eq!(res.json()["data"]["access"], "public");
    }
    for key in ["privonly-key", "nofiles-key", "creator-key"] {
        assert_forbidden(&t.app.get_as(key, &file_path(t.alpha)).await, key);
    }
    // Private folder and the file in it: read_private.
    for id in [t.vault, t.secret] {
        for key in ["private-key", "privonly-key", "admin-key"] {
            let res = t.app.get_as(key, &file_path(id)).await;
            assert_eq!(res.status, StatusCode::OK, "{key} {id}");
            assert_eq!(res.json()["data"]["access"], "private");
        }
        for key in ["viewer-key", "nofiles-key", "creator-key"] {
            assert_forbidden(&t.app.get_as(key, &file_path(id)).await, key);
        }
        assert_forbidden(&t.app.get(&file_path(id)).await, "anonymous");
    }
    // A folder's resource.
    let res = t.app.get_as("viewer-key", &file_path(t.docs)).await;
    let data = res.json()["data"].clone();
    assert_eq!(data["type"], "folder");
    assert_eq!(data["url"], Value::Null);
    assert_eq!(data["transforms"], json!({}));
    assert_eq!(data["parent_id"], Value::Null);
    assert_eq!(data["filename"], "docs");
    let gamma = t.app.get_as("viewer-key", &file_path(t.gamma)).await.json();
    assert_eq!(gamma["data"]["parent_id"], t.docs);
}

#[actix_web::test]
async fn show_is_404_for_unknown_deleted_and_malformed_ids() {
    let t = tree().await;
    let res = t.app.delete(Some("admin-key"), &file_path(t.alpha)).await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);
    for path in [
        file_path(999_999),
        file_path(t.alpha),
        "/api/v1/files/abc".to_owned(),
        "/api/v1/files/0".to_owned(),
        "/api/v1/files/-1".to_owned(),
        "/api/v1/files/1.0".to_owned(),
        "/api/v1/files/99999999999999999999".to_owned(),
    ] {
        assert_not_found(&t.app.get_as("admin-key", &path).await, &path);
        assert_not_found(&t.app.get_as("viewer-key", &path).await, &path);
    }
}

#[actix_web::test]
async fn access_is_inherited_through_three_folder_levels() {
    let app = TestApp::new(project()).await;
    let top = folder(&app, None, "top", Some(Visibility::Private)).await;
    let child = folder(&app, Some(top), "child", None).await;
    let grandchild = folder(&app, Some(child), "grandchild", None).await;
    let res = app
        .upload(
            Some("creator-key"),
            &[
                Part::text("parent_id", &grandchild.to_string()),
                Part::file("deep.png", "image/png", &png(4, 4)),
            ],
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    let file = id_of(&res.json()["data"]);
    // The creator may not read private files: its upload answers only the id (A2).
    assert_eq!(res.json(), json!({"data": {"id": file}}));
    assert_eq!(
        app.get_as("admin-key", &file_path(file)).await.json()["data"]["access"],
        "private",
        "uploads inherit (access null)"
    );

    for id in [child, grandchild, file] {
        assert_forbidden(
            &app.get_as("viewer-key", &file_path(id)).await,
            "viewer, private chain",
        );
        let res = app.get_as("private-key", &file_path(id)).await;
        assert_eq!(res.json()["data"]["access"], "private");
    }
    let search = app.get_as("viewer-key", "/api/v1/files?search=deep").await;
    assert_eq!(search.json()["meta"]["total"], 0);

    // The child's own `public` overrides the root's `private` for everything below it.
    set_access(&app, child, Some(Visibility::Public)).await;
    for id in [child, grandchild, file] {
        let res = app.get_as("viewer-key", &file_path(id)).await;
        assert_eq!(res.status, StatusCode::OK, "{id}");
        assert_eq!(res.json()["data"]["access"], "public");
    }
    assert_forbidden(
        &app.get_as("viewer-key", &file_path(top)).await,
        "top stays private",
    );
    assert_eq!(
        names(&app.get_as("viewer-key", "/api/v1/files?search=deep").await),
        ["deep.png"]
    );
    assert_eq!(
        names(
            &app.get_as("viewer-key", &format!("/api/v1/files?parent_id={top}"))
                .await
        ),
        ["child"]
    );

    // A file's own access beats its folders'.
    set_access(&app, file, Some(Visibility::Private)).await;
    assert_forbidden(
        &app.get_as("viewer-key", &file_path(file)).await,
        "own private",
    );
    set_access(&app, child, None).await;
    set_access(&app, file, Some(Visibility::Public)).await;
    let res = app.get_as("viewer-key", &file_path(file)).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["data"]["access"], "public");
}

// ---------------------------------------------------------------------------------------------
// PATCH /files/{id}

#[actix_web::test]
async fn patch_updates_metadata_and_returns_it() {
    let app = TestApp::new(project()).await;
    let bytes = png(8, 6);
    let created = app
        .upload_file(Some("admin-key"), "before.png", &bytes)
        .await;
    let id = id_of(&created);
    let res = app
        .json(
            Method::PATCH,
            Some("curator-key"),
            &file_path(id),
            json!({
                "title": "Sunrise",
                "description": "Over the harbour",
                "location": "Harbour",
                "download_name": "sunrise-download.png",
                "focal_point_x": 0.25,
                "focal_point_y": 1,
                "name": "sunrise.png",
                "unknown": "ignored"
            }),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let data = res.json()["data"].clone();
    let mut expected = created.clone();
    expected["title"] = json!("Sunrise");
    expected["description"] = json!("Over the harbour");
    expected["filename"] = json!("sunrise.png");
    expected["focal_point_x"] = json!(0.25);
    expected["focal_point_y"] = json!(1.0);
    expected["updated_at"] = data["updated_at"].clone();
    assert_eq!(data, expected);
    assert_eq!(
        app.get_as("viewer-key", &file_path(id)).await.json()["data"],
        data
    );
    let stored = vellum_storage::files::get_file(&app.db.conn, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.location.as_deref(), Some("Harbour"));
    assert_eq!(
        stored.download_name.as_deref(),
        Some("sunrise-download.png")
    );

    // Partial: only what is sent changes; null clears.
    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &file_path(id),
            json!({"title": null}),
        )
        .await;
    let data = res.json()["data"].clone();
    assert_eq!(data["title"], Value::Null);
    assert_eq!(data["description"], "Over the harbour");
    assert_eq!(data["filename"], "sunrise.png");
    assert_eq!(data["focal_point_x"], json!(0.25));
    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &file_path(id),
            json!({"focal_point_x": null, "focal_point_y": 0, "download_name": null}),
        )
        .await;
    let data = res.json()["data"].clone();
    assert_eq!(data["focal_point_x"], Value::Null);
    assert_eq!(data["focal_point_y"].as_f64(), Some(0.0));
    let stored = vellum_storage::files::get_file(&app.db.conn, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.download_name, None);
    assert_eq!(stored.location.as_deref(), Some("Harbour"));
    // An empty object changes nothing but is fine.
    let res = app
        .json(Method::PATCH, Some("admin-key"), &file_path(id), json!({}))
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["data"]["description"], "Over the harbour");
}

#[actix_web::test]
async fn invalid_patches_are_422_and_write_nothing() {
    let app = TestApp::new(project()).await;
    let created = app
        .upload_file(Some("admin-key"), "keep.png", &png(3, 3))
        .await;
    let id = id_of(&created);
    for (body, fields) in [
        (json!({"focal_point_x": 1.5}), vec!["focal_point_x"]),
        (json!({"focal_point_x": -0.01}), vec!["focal_point_x"]),
        (json!({"focal_point_y": 2}), vec!["focal_point_y"]),
        (json!({"focal_point_x": "0.5"}), vec!["focal_point_x"]),
        (json!({"name": ""}), vec!["name"]),
        (json!({"name": "a/b"}), vec!["name"]),
        (json!({"name": "a\\b"}), vec!["name"]),
        (json!({"name": ".."}), vec!["name"]),
        (json!({"name": "tab\there.png"}), vec!["name"]),
        (json!({"name": null}), vec!["name"]),
        (json!({"name": 7}), vec!["name"]),
        (json!({"name": "x".repeat(256)}), vec!["name"]),
        (json!({"title": 5}), vec!["title"]),
        (json!({"download_name": "../x.png"}), vec!["download_name"]),
        (
            json!({"title": "Changed", "focal_point_x": 3}),
            vec!["focal_point_x"],
        ),
        (
            json!({"title": "Changed", "name": "", "focal_point_y": -1}),
            vec!["focal_point_y", "name"],
        ),
    ] {
        let res = app
            .json(
                Method::PATCH,
                Some("admin-key"),
                &file_path(id),
                body.clone(),
            )
            .await;
        assert_invalid(&res, &fields, &body.to_string());
    }
    for body in [&b"not json"[..], b"[1, 2]", b"\"title\""] {
        let res = app
            .send(
                app.authed(
                    TestApp::request(Method::PATCH, &file_path(id)),
                    Some("admin-key"),
                )
                .insert_header(("content-type", "application/json"))
                .set_payload(body.to_vec()),
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
    let shown = app.get_as("admin-key", &file_path(id)).await.json()["data"].clone();
    assert_eq!(shown, created, "nothing written");

    // Folder names are unique per parent.
    folder(&app, None, "one", None).await;
    let two = folder(&app, None, "two", None).await;
    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &file_path(two),
            json!({"name": "one"}),
        )
        .await;
    assert_invalid(&res, &["name"], "a sibling folder's name");
}

#[actix_web::test]
async fn patch_needs_the_update_grant_and_a_live_file() {
    let app = TestApp::new(project()).await;
    let id = id_of(
        &app.upload_file(Some("admin-key"), "p.png", &png(2, 2))
            .await,
    );
    for key in [
        None,
        Some("viewer-key"),
        Some("private-key"),
        Some("creator-key"),
        Some("deleter-key"),
    ] {
        let res = app
            .json(Method::PATCH, key, &file_path(id), json!({"title": "nope"}))
            .await;
        assert_forbidden(&res, &format!("{key:?}"));
    }
    assert_eq!(
        app.get_as("admin-key", &file_path(id)).await.json()["data"]["title"],
        Value::Null
    );
    for path in [file_path(999_999), "/api/v1/files/abc".to_owned()] {
        let res = app
            .json(
                Method::PATCH,
                Some("updater-key"),
                &path,
                json!({"title": "x"}),
            )
            .await;
        assert_not_found(&res, &path);
    }
    assert_eq!(
        app.delete(Some("admin-key"), &file_path(id)).await.status,
        StatusCode::NO_CONTENT
    );
    let res = app
        .json(
            Method::PATCH,
            Some("updater-key"),
            &file_path(id),
            json!({"title": "x"}),
        )
        .await;
    assert_not_found(&res, "deleted");
}

// ---------------------------------------------------------------------------------------------
// DELETE /files/{id}

#[actix_web::test]
async fn delete_is_204_with_an_empty_body_then_404() {
    let app = TestApp::new(project()).await;
    let id = id_of(
        &app.upload_file(Some("admin-key"), "bye.png", &png(2, 2))
            .await,
    );
    let res = app.delete(Some("deleter-key"), &file_path(id)).await;
    assert_eq!(res.status, StatusCode::NO_CONTENT);
    assert!(res.body.is_empty(), "{:?}", res.body);
    assert_not_found(
        &app.get_as("admin-key", &file_path(id)).await,
        "show after delete",
    );
    assert_not_found(
        &app.get_as("admin-key", &format!("{}/content", file_path(id)))
            .await,
        "content",
    );
    assert_not_found(
        &app.delete(Some("deleter-key"), &file_path(id)).await,
        "second delete",
    );
    assert_eq!(
        app.get_as("admin-key", "/api/v1/files").await.json()["meta"]["total"],
        0
    );
    for path in [file_path(999_999), "/api/v1/files/abc".to_owned()] {
        assert_not_found(&app.delete(Some("deleter-key"), &path).await, &path);
    }
}

#[actix_web::test]
async fn delete_needs_the_delete_grant() {
    let app = TestApp::new(project()).await;
    let id = id_of(
        &app.upload_file(Some("admin-key"), "stay.png", &png(2, 2))
            .await,
    );
    for key in [
        None,
        Some("viewer-key"),
        Some("private-key"),
        Some("creator-key"),
        Some("updater-key"),
    ] {
        assert_forbidden(&app.delete(key, &file_path(id)).await, &format!("{key:?}"));
    }
    assert_eq!(
        app.get_as("viewer-key", &file_path(id)).await.status,
        StatusCode::OK
    );
}

#[actix_web::test]
async fn deleting_a_folder_takes_its_contents() {
    let app = TestApp::new(project()).await;
    let outer = folder(&app, None, "outer", None).await;
    let inner = folder(&app, Some(outer), "inner", None).await;
    let res = app
        .upload(
            Some("admin-key"),
            &[
                Part::text("parent_id", &inner.to_string()),
                Part::file("f.png", "image/png", &png(2, 2)),
            ],
        )
        .await;
    let file = id_of(&res.json()["data"]);
    assert_eq!(
        app.delete(Some("deleter-key"), &file_path(outer))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    for id in [outer, inner, file] {
        assert_not_found(
            &app.get_as("admin-key", &file_path(id)).await,
            &id.to_string(),
        );
    }
    assert_eq!(
        app.get_as("admin-key", "/api/v1/files?search=f")
            .await
            .json()["meta"]["total"],
        0
    );
}

// ---------------------------------------------------------------------------------------------
// URLs

#[actix_web::test]
async fn url_and_transforms_are_absolute_for_images_empty_otherwise() {
    let app = TestApp::new(project()).await;
    let image = app
        .upload_file(Some("admin-key"), "i.png", &png(3, 2))
        .await;
    let (url, transforms) = urls(id_of(&image), true);
    assert_eq!(image["url"], url);
    assert_eq!(
        image["url"],
        format!("http://cms.test/api/v1/files/{}/content", id_of(&image))
    );
    assert_eq!(
        image["transforms"],
        json!({
            "thumbnail": format!("http://cms.test/api/v1/files/{}/transforms/thumbnail", id_of(&image)),
            "small": format!("http://cms.test/api/v1/files/{}/transforms/small", id_of(&image)),
            "medium": format!("http://cms.test/api/v1/files/{}/transforms/medium", id_of(&image)),
            "large": format!("http://cms.test/api/v1/files/{}/transforms/large", id_of(&image)),
        })
    );
    assert_eq!(image["transforms"], transforms);

    let text = app
        .upload_file(Some("admin-key"), "t.txt", b"just some text")
        .await;
    assert_eq!(text["url"], urls(id_of(&text), false).0);
    assert_eq!(text["transforms"], json!({}));

    let dir = folder(&app, None, "dir", None).await;
    let shown = app.get_as("admin-key", &file_path(dir)).await.json();
    assert_eq!(shown["data"]["url"], Value::Null);
    assert_eq!(shown["data"]["transforms"], json!({}));
    assert_eq!(shown["data"]["mime_type"], Value::Null);
    assert_eq!(shown["data"]["filesize"], Value::Null);
}

// ---------------------------------------------------------------------------------------------
// The file grant mapping, row by row

#[actix_web::test]
async fn every_row_of_the_file_grant_mapping() {
    let app = TestApp::new(project()).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let public = id_of(
        &app.upload_file(Some("admin-key"), "pub.png", &png(20, 10))
            .await,
    );
    let res = app
        .upload(
            Some("admin-key"),
            &[
                Part::text("parent_id", &vault.to_string()),
                Part::file("priv.png", "image/png", &png(10, 20)),
            ],
        )
        .await;
    let private = id_of(&res.json()["data"]);

    // POST /files: create.
    for (key, ok) in [
        (Some("creator-key"), true),
        (Some("admin-key"), true),
        (None, false),
        (Some("viewer-key"), false),
        (Some("private-key"), false),
        (Some("privonly-key"), false),
        (Some("updater-key"), false),
        (Some("deleter-key"), false),
        (Some("nofiles-key"), false),
    ] {
        let res = app
            .upload(
                key,
                &[Part::file("new.bin", "application/octet-stream", b"new")],
            )
            .await;
        if ok {
            assert_eq!(res.status, StatusCode::CREATED, "create as {key:?}");
        } else {
            assert_forbidden(&res, &format!("create as {key:?}"));
        }
    }

    // Reads of a public file: read. Reads of a private file: read_private.
    let reads = |id: i64| {
        vec![
            file_path(id),
            format!("{}/content", file_path(id)),
            format!("{}/transforms/small", file_path(id)),
        ]
    };
    let readers: [(Option<&str>, bool, bool); 9] = [
        // (key, may read public, may read private)
        (None, true, false),
        (Some("viewer-key"), true, false),
        (Some("private-key"), true, true),
        (Some("privonly-key"), false, true),
        (Some("admin-key"), true, true),
        (Some("creator-key"), false, false),
        (Some("updater-key"), false, false),
        (Some("deleter-key"), false, false),
        (Some("nofiles-key"), false, false),
    ];
    for (key, public_ok, private_ok) in readers {
        for (id, ok) in [(public, public_ok), (private, private_ok)] {
            for path in reads(id) {
                let res = app
                    .send(app.authed(TestApp::request(Method::GET, &path), key))
                    .await;
                if ok {
                    assert_eq!(res.status, StatusCode::OK, "{key:?} {path}");
                } else {
                    assert_forbidden(&res, &format!("{key:?} {path}"));
                }
            }
        }
        // The list: read, with private entries only for read_private.
        let res = app
            .send(app.authed(TestApp::request(Method::GET, "/api/v1/files"), key))
            .await;
        if public_ok {
            let listed = names(&res);
            assert!(listed.contains(&"pub.png".to_owned()), "{key:?} {listed:?}");
            assert_eq!(
                listed.contains(&"vault".to_owned()),
                private_ok,
                "{key:?} {listed:?}"
            );
        } else {
            assert_forbidden(&res, &format!("list as {key:?}"));
        }
    }

    // Expansion in items: public files need read, private ones read_private.
    let item = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/posts/items",
            json!({"data": {"title": "p", "cover": public}}),
        )
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    let hidden = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/posts/items",
            json!({"data": {"title": "h", "cover": private}}),
        )
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    assert_eq!(cover(&app, "viewer-key", item).await["id"], public);
    assert_eq!(
        cover(&app, "viewer-key", item).await["url"],
        urls(public, true).0
    );
    assert_eq!(
        cover(&app, "nofiles-key", item).await,
        json!({"id": public, "access": "denied"})
    );
    assert_eq!(
        cover(&app, "privonly-key", item).await,
        json!({"id": public, "access": "denied"})
    );
    assert_eq!(cover(&app, "viewer-key", hidden).await, Value::Null);
    assert_eq!(cover(&app, "nofiles-key", hidden).await, Value::Null);
    assert_eq!(cover(&app, "private-key", hidden).await["id"], private);
    assert_eq!(cover(&app, "privonly-key", hidden).await["id"], private);

    // PATCH: update; a write reaches a private file only with read_private (as show does), and
    // answers only the id to a role that may not read the file.
    for (key, public_ok, private_ok) in [
        (Some("updater-key"), true, false),
        (Some("curator-key"), true, true),
        (None, false, false),
        (Some("viewer-key"), false, false),
        (Some("private-key"), false, false),
        (Some("creator-key"), false, false),
        (Some("deleter-key"), false, false),
        (Some("nofiles-key"), false, false),
    ] {
        for (id, ok) in [(public, public_ok), (private, private_ok)] {
            let res = app
                .json(Method::PATCH, key, &file_path(id), json!({"title": "t"}))
                .await;
            if ok {
                assert_eq!(res.status, StatusCode::OK, "patch as {key:?}");
            } else {
                assert_forbidden(&res, &format!("patch {id} as {key:?}"));
            }
        }
    }
    let receipt = app
        .json(
            Method::PATCH,
            Some("updater-key"),
            &file_path(public),
            json!({}),
        )
        .await;
    assert_eq!(receipt.json(), json!({"data": {"id": public}}));

    // DELETE: delete.
    for key in [
        None,
        Some("viewer-key"),
        Some("private-key"),
        Some("creator-key"),
        Some("updater-key"),
        Some("nofiles-key"),
    ] {
        for id in [public, private] {
            assert_forbidden(
                &app.delete(key, &file_path(id)).await,
                &format!("delete as {key:?}"),
            );
        }
    }
    assert_forbidden(
        &app.delete(Some("deleter-key"), &file_path(private)).await,
        "delete of a private file without read_private",
    );
    assert_eq!(
        app.delete(Some("deleter-key"), &file_path(public))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.delete(Some("curator-key"), &file_path(private))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
}

/// The `cover` of posts item `item` read with `include=files` as `key`.
async fn cover(app: &TestApp, key: &str, item: i64) -> Value {
    let res = app
        .get_as(
            key,
            &format!("/api/v1/collections/posts/items/{item}?include=files"),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{key}");
    res.json()["data"]["data"]["cover"].clone()
}

// ---------------------------------------------------------------------------------------------
// The response cache after file writes

#[actix_web::test]
async fn file_writes_through_the_api_make_the_next_cached_item_read_fresh() {
    let app = TestApp::new(project()).await;
    // The item's cover must exist when the item is written (file ids are checked on write).
    let uploaded = app
        .upload_file(Some("curator-key"), "cover.png", &png(12, 8))
        .await;
    assert_eq!(uploaded["id"], 1, "the first file of a fresh project");
    let item = app
        .json(
            Method::POST,
            Some("admin-key"),
            "/api/v1/collections/posts/items",
            json!({"data": {"title": "p", "cover": 1}}),
        )
        .await
        .json()["data"]["id"]
        .as_i64()
        .unwrap();
    let path = format!("/api/v1/collections/posts/items/{item}?include=files");
    let first = app.get_as("viewer-key", &path).await;
    assert_eq!(first.json()["data"]["data"]["cover"]["id"], 1);
    let again = app.get_as("viewer-key", &path).await;
    assert_eq!(again.header("x-cache"), Some("hit"), "the read is cached");

    // Upload (of another file): the next read is fresh.
    let second = app
        .upload_file(Some("curator-key"), "other.png", &png(4, 4))
        .await;
    assert_eq!(second["id"], 2);
    let res = app.get_as("viewer-key", &path).await;
    assert_ne!(res.header("x-cache"), Some("hit"), "upload invalidates");
    let (url, transforms) = urls(1, true);
    assert_eq!(
        res.json()["data"]["data"]["cover"],
        json!({
            "id": 1,
            "filename": "cover.png",
            "title": null,
            "mime_type": "image/png",
            "width": 12,
            "height": 8,
            "filesize": uploaded["filesize"],
            "url": url,
            "transforms": transforms,
        })
    );
    assert_eq!(
        app.get_as("viewer-key", &path).await.header("x-cache"),
        Some("hit")
    );

    // PATCH: the next read sees the new title.
    let res = app
        .json(
            Method::PATCH,
            Some("updater-key"),
            &file_path(1),
            json!({"title": "Cover"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let res = app.get_as("viewer-key", &path).await;
    assert_ne!(res.header("x-cache"), Some("hit"), "patch invalidates");
    assert_eq!(res.json()["data"]["data"]["cover"]["title"], "Cover");
    assert_eq!(
        app.get_as("viewer-key", &path).await.header("x-cache"),
        Some("hit")
    );

    // DELETE: the next read no longer expands it.
    assert_eq!(
        app.delete(Some("deleter-key"), &file_path(1)).await.status,
        StatusCode::NO_CONTENT
    );
    let res = app.get_as("viewer-key", &path).await;
    assert_ne!(res.header("x-cache"), Some("hit"), "delete invalidates");
    assert_eq!(res.json()["data"]["data"]["cover"], Value::Null);
}
