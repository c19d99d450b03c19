//! The file manager's browse, folders, metadata, tags and favorites (issue 29, part A): every
//! route allowed with exactly its permission and refused without it (403) or without a session
//! (401); 404s; every validation 422 (a move into a folder's own subtree among them); the sort
//! orders; search, tag and MIME family filters; the trash view; favorites per user; activity
//! entries; the public API seeing changes at once; a folder of many files paging correctly in a
//! number of statements that does not grow with the page.

use std::sync::atomic::Ordering;

use actix_web::http::Method;
use serde_json::{Value, json};
use vellum_policy::{FileAction, Visibility};
use vellum_storage::files::{NewFile, create_file, soft_delete_file};

use super::Session;
use super::access_support::{error_fields, send, signed_in_with};
use super::users::check_routes;
use crate::files::{folder, project};
use crate::support::{TestApp, op};

/// Every permission of the files area.
pub const FILE_PERMISSIONS: [&str; 12] = [
    "can-show-files",
    "can-create-files",
    "can-edit-files",
    "can-delete-files",
    "can-restore-files",
    "can-force-delete-files",
    "can-download-files",
    "can-favorite-files",
    "can-copy-files",
    "can-replace-files",
    "can-tag-files",
    "can-update-file-metadata",
];

/// The files project and a super-admin session.
async fn app_and_root() -> (TestApp, Session) {
    let app = TestApp::new(project()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    (app, root)
}

/// A file row without bytes, straight into storage.
async fn seed(app: &TestApp, parent: Option<i64>, name: &str, mime: &str, size: i64) -> i64 {
    let id = create_file(
        &app.db.conn,
        &op(FileAction::Create),
        NewFile {
            parent_id: parent,
            filename: name.to_owned(),
            mime_type: Some(mime.to_owned()),
            extension: name.rsplit_once('.').map(|(_, e)| e.to_owned()),
            filesize: Some(size),
            width: None,
            height: None,
            content_hash: None,
            storage_key: None,
            title: None,
        },
    )
    .await
    .unwrap()
    .id;
    app.state.invalidate().await;
    id
}

async fn trash(app: &TestApp, id: i64) {
    soft_delete_file(&app.db.conn, &op(FileAction::Delete), id)
        .await
        .unwrap();
    app.state.invalidate().await;
}

/// GETs `path` as `s`, asserting 200; the body.
async fn get(app: &TestApp, s: &Session, path: &str) -> Value {
    let (status, body) = send(app, Method::GET, path, s, None).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// The filenames of a list response, in order.
fn names(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no list: {body}"))
        .iter()
        .map(|f| f["filename"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts `status` is 422 naming exactly `fields`.
fn assert_422(status: u16, body: &Value, fields: &[&str], what: &str) {
    assert_eq!(status, 422, "{what}: {body}");
    let mut found = error_fields(body);
    found.sort();
    assert_eq!(found, fields, "{what}: {body}");
}

/// The `files` activity entries, newest first: (event, subject id, changed keys).
pub(super) async fn file_activity(app: &TestApp, s: &Session) -> Vec<(String, String, Value)> {
    let body = get(app, s, "/activity-logs?log_name=files&per_page=100").await;
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

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 3).await;
    let other = seed(&app, None, "b.txt", "text/plain", 3).await;
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{file}/tags"),
        &root,
        Some(json!({"tags": ["keep", "drop"]})),
    )
    .await;
    assert_eq!(status, 200);
    check_routes(
        &app,
        &FILE_PERMISSIONS,
        vec![
            (Method::GET, "/files".into(), "can-show-files", None, 200),
            (
                Method::GET,
                format!("/files/{file}"),
                "can-show-files",
                None,
                200,
            ),
            (
                Method::GET,
                "/file-tags".into(),
                "can-show-files",
                None,
                200,
            ),
            (
                Method::POST,
                "/files/folders".into(),
                "can-create-files",
                Some(json!({"name": "Photos"})),
                201,
            ),
            (
                Method::PUT,
                format!("/files/{file}"),
                "can-edit-files",
                Some(json!({"filename": "renamed.txt", "access": "private"})),
                200,
            ),
            (
                Method::PUT,
                format!("/files/{other}"),
                "can-update-file-metadata",
                Some(json!({"title": "T", "alt_text": "A", "custom_fields": {"k": 1}})),
                200,
            ),
            (
                Method::POST,
                format!("/files/{file}/tags"),
                "can-tag-files",
                Some(json!({"tags": ["new"]})),
                200,
            ),
            (
                Method::DELETE,
                format!("/files/{file}/tags/drop"),
                "can-tag-files",
                None,
                204,
            ),
            (
                Method::POST,
                format!("/files/{file}/favorite"),
                "can-favorite-files",
                None,
                200,
            ),
            (
                Method::DELETE,
                format!("/files/{file}/favorite"),
                "can-favorite-files",
                None,
                204,
            ),
        ],
    )
    .await;
    // The refusals changed nothing; the allowed calls did.
    let shown = get(&app, &root, &format!("/files/{file}")).await["data"].clone();
    assert_eq!(shown["filename"], "renamed.txt");
    assert_eq!(shown["access"], "private");
    assert_eq!(shown["tags"], json!(["keep", "new"]));
    let other = get(&app, &root, &format!("/files/{other}")).await["data"].clone();
    assert_eq!(other["title"], "T");
    assert_eq!(other["alt_text"], "A");
    assert_eq!(other["custom_fields"], json!({"k": 1}));
    let top = get(&app, &root, "/files").await;
    assert_eq!(names(&top), ["Photos", "b.txt", "renamed.txt"]);
}

#[actix_web::test]
async fn a_put_naming_both_kinds_of_key_needs_both_permissions() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 3).await;
    let both = json!({"filename": "b.txt", "title": "Title"});
    let path = format!("/files/{file}");
    let edit = signed_in_with(&app, "edit@example.com", &["can-edit-files"]).await;
    let meta = signed_in_with(&app, "meta@example.com", &["can-update-file-metadata"]).await;
    let show = signed_in_with(&app, "show@example.com", &["can-show-files"]).await;
    let all = signed_in_with(
        &app,
        "all@example.com",
        &["can-edit-files", "can-update-file-metadata"],
    )
    .await;
    for (who, body) in [
        (&edit, both.clone()),
        (&meta, both.clone()),
        (&edit, json!({"focal_point_x": 0.5})),
        (&meta, json!({"parent_id": null})),
        (&meta, json!({"access": "private"})),
        // Permissions are checked on the keys, before their values.
        (&edit, json!({"title": 42})),
        (&show, json!({"title": "x"})),
        (&show, json!({})),
    ] {
        let (status, res) = send(&app, Method::PUT, &path, who, Some(body.clone())).await;
        assert_eq!(status, 403, "{body}: {res}");
        assert_eq!(res, json!({"message": "Forbidden."}));
    }
    let unchanged = get(&app, &root, &path).await["data"].clone();
    assert_eq!(unchanged["filename"], "a.txt");
    assert_eq!(unchanged["title"], Value::Null);
    let (status, res) = send(&app, Method::PUT, &path, &all, Some(both)).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["filename"], "b.txt");
    assert_eq!(res["data"]["title"], "Title");
}

#[actix_web::test]
async fn unknown_missing_and_trashed_rows_are_404() {
    let (app, root) = app_and_root().await;
    let gone = seed(&app, None, "gone.txt", "text/plain", 1).await;
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{gone}/tags"),
        &root,
        Some(json!({"tags": ["t"]})),
    )
    .await;
    assert_eq!(status, 200);
    trash(&app, gone).await;
    let live = seed(&app, None, "live.txt", "text/plain", 1).await;
    for id in ["999999", "abc", "0", "-1", "99999999999"] {
        for (method, path, body) in [
            (Method::GET, format!("/files/{id}"), None),
            (
                Method::PUT,
                format!("/files/{id}"),
                Some(json!({"title": "x"})),
            ),
            (
                Method::POST,
                format!("/files/{id}/tags"),
                Some(json!({"tags": ["t"]})),
            ),
            (Method::DELETE, format!("/files/{id}/tags/t"), None),
            (Method::POST, format!("/files/{id}/favorite"), None),
            (Method::DELETE, format!("/files/{id}/favorite"), None),
        ] {
            let (status, res) = send(&app, method.clone(), &path, &root, body).await;
            assert_eq!(status, 404, "{method} {path}: {res}");
            assert_eq!(res, json!({"message": "Not found."}));
        }
    }
    // A row in the trash is shown, but not edited, tagged or favorited until restored.
    let (status, _) = send(&app, Method::GET, &format!("/files/{gone}"), &root, None).await;
    assert_eq!(status, 200);
    for (method, path, body) in [
        (
            Method::PUT,
            format!("/files/{gone}"),
            Some(json!({"title": "x"})),
        ),
        (
            Method::POST,
            format!("/files/{gone}/tags"),
            Some(json!({"tags": ["u"]})),
        ),
        (Method::DELETE, format!("/files/{gone}/tags/t"), None),
        (Method::POST, format!("/files/{gone}/favorite"), None),
        // A tag the file does not carry.
        (Method::DELETE, format!("/files/{live}/tags/never"), None),
    ] {
        let (status, res) = send(&app, method.clone(), &path, &root, body).await;
        assert_eq!(status, 404, "{method} {path}: {res}");
    }
}

#[actix_web::test]
async fn every_list_parameter_is_validated() {
    let (app, root) = app_and_root().await;
    let long = "x".repeat(256);
    for (query, fields) in [
        ("per_page=0", vec!["per_page"]),
        ("per_page=101", vec!["per_page"]),
        ("page=0", vec!["page"]),
        ("page=x", vec!["page"]),
        ("sort=owner", vec!["sort"]),
        ("direction=up", vec!["direction"]),
        ("mime=pdf", vec!["mime"]),
        ("trashed=maybe", vec!["trashed"]),
        ("favorites=2", vec!["favorites"]),
        ("parent_id=abc", vec!["parent_id"]),
        ("parent_id=-3", vec!["parent_id"]),
        ("tag=%20%20", vec!["tag"]),
        ("search=a%00b", vec!["search"]),
        (&format!("search={long}") as &str, vec!["search"]),
        (
            "sort=owner&direction=up&mime=x",
            vec!["direction", "mime", "sort"],
        ),
    ] {
        let (status, body) = send(&app, Method::GET, &format!("/files?{query}"), &root, None).await;
        assert_422(status, &body, &fields, query);
    }
    // Exactly 255 characters and 100 per page are allowed.
    get(
        &app,
        &root,
        &format!("/files?search={}&per_page=100", "x".repeat(255)),
    )
    .await;
}

#[actix_web::test]
async fn folders_are_created_with_their_rules() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 1).await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/files/folders",
        &root,
        Some(json!({"name": "Private", "access": "private"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let private = body["data"]["id"].as_i64().unwrap();
    assert_eq!(body["data"]["type"], "folder");
    assert_eq!(body["data"]["access"], "private");
    assert_eq!(body["data"]["effective_access"], "private");
    assert_eq!(body["data"]["url"], Value::Null);
    assert_eq!(body["data"]["deleted_at"], Value::Null);
    assert_eq!(body["data"]["tags"], json!([]));
    assert_eq!(body["data"]["favorite"], false);
    let (status, body) = send(
        &app,
        Method::POST,
        "/files/folders",
        &root,
        Some(json!({"name": "Inner", "parent_id": private})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["parent_id"], private);
    assert_eq!(body["data"]["access"], Value::Null);
    assert_eq!(body["data"]["effective_access"], "private");

    let long = "n".repeat(256);
    for (body, fields) in [
        (json!({}), vec!["name"]),
        (json!({"name": 5}), vec!["name"]),
        (json!({"name": ""}), vec!["name"]),
        (json!({"name": "a/b"}), vec!["name"]),
        (json!({"name": ".."}), vec!["name"]),
        (json!({"name": "tab\there"}), vec!["name"]),
        (json!({"name": long}), vec!["name"]),
        (json!({"name": "x", "parent_id": "1"}), vec!["parent_id"]),
        (json!({"name": "x", "parent_id": 0}), vec!["parent_id"]),
        (json!({"name": "x", "access": "secret"}), vec!["access"]),
        (json!({"name": "x", "colour": "red"}), vec!["colour"]),
        (json!({"name": "x\u{0}"}), vec!["name"]),
        (json!([1]), vec!["body"]),
        // The tree's rules: a taken name, a parent that is a file or does not exist.
        (json!({"name": "Private"}), vec!["name"]),
        (json!({"name": "Inner", "parent_id": private}), vec!["name"]),
        (json!({"name": "x", "parent_id": file}), vec!["parent_id"]),
        (
            json!({"name": "x", "parent_id": 999_999}),
            vec!["parent_id"],
        ),
    ] {
        let (status, res) = send(
            &app,
            Method::POST,
            "/files/folders",
            &root,
            Some(body.clone()),
        )
        .await;
        assert_422(status, &res, &fields, &body.to_string());
    }
    // None of the refused bodies left a row.
    let top = get(&app, &root, "/files").await;
    assert_eq!(names(&top), ["Private", "a.txt"]);
    assert_eq!(top["meta"]["total"], 2);
}

#[actix_web::test]
async fn every_update_field_is_validated() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 1).await;
    let path = format!("/files/{file}");
    let many: serde_json::Map<String, Value> =
        (0..51).map(|i| (format!("k{i}"), json!(i))).collect();
    let big = json!({"blob": "x".repeat(16 * 1024)});
    for (body, fields) in [
        (json!({}), vec!["body"]),
        (json!({"filename": ""}), vec!["filename"]),
        (json!({"filename": "a/b.txt"}), vec!["filename"]),
        (json!({"filename": 3}), vec!["filename"]),
        (json!({"filename": "f".repeat(256)}), vec!["filename"]),
        (json!({"parent_id": "x"}), vec!["parent_id"]),
        (json!({"parent_id": file}), vec!["parent_id"]),
        (json!({"parent_id": 999_999}), vec!["parent_id"]),
        (json!({"access": "hidden"}), vec!["access"]),
        (json!({"title": 123}), vec!["title"]),
        (json!({"description": ["x"]}), vec!["description"]),
        (json!({"location": "l".repeat(65_536)}), vec!["location"]),
        (json!({"alt_text": "a".repeat(2_001)}), vec!["alt_text"]),
        (json!({"download_name": "../x.txt"}), vec!["download_name"]),
        (json!({"focal_point_x": 1.5}), vec!["focal_point_x"]),
        (json!({"focal_point_y": -0.1}), vec!["focal_point_y"]),
        (json!({"focal_point_x": "0.5"}), vec!["focal_point_x"]),
        (json!({"custom_fields": [1]}), vec!["custom_fields"]),
        (json!({"custom_fields": "x"}), vec!["custom_fields"]),
        (json!({"custom_fields": many}), vec!["custom_fields"]),
        (json!({"custom_fields": big}), vec!["custom_fields"]),
        (json!({"title": "a\u{0}"}), vec!["title"]),
        (json!({"name": "x.txt"}), vec!["name"]),
        (
            json!({"title": 1, "focal_point_y": 2, "filename": ""}),
            vec!["filename", "focal_point_y", "title"],
        ),
    ] {
        let (status, res) = send(&app, Method::PUT, &path, &root, Some(body.clone())).await;
        let what: String = body.to_string().chars().take(80).collect();
        assert_422(status, &res, &fields, &what);
    }
    let unchanged = get(&app, &root, &path).await["data"].clone();
    assert_eq!(unchanged["filename"], "a.txt");
    assert_eq!(unchanged["custom_fields"], Value::Null);

    // Every field at once, then cleared with null.
    let (status, res) = send(
        &app,
        Method::PUT,
        &path,
        &root,
        Some(json!({
            "title": "T", "description": "D", "alt_text": "A", "location": "L",
            "download_name": "nice.txt", "focal_point_x": 0, "focal_point_y": 1,
            "custom_fields": {"credit": "me", "n": [1, 2]}, "access": "public",
        })),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    let data = &res["data"];
    for (key, value) in [
        ("title", json!("T")),
        ("description", json!("D")),
        ("alt_text", json!("A")),
        ("location", json!("L")),
        ("download_name", json!("nice.txt")),
        ("focal_point_x", json!(0.0)),
        ("focal_point_y", json!(1.0)),
        ("custom_fields", json!({"credit": "me", "n": [1, 2]})),
        ("access", json!("public")),
    ] {
        assert_eq!(data[key], value, "{key}: {data}");
    }
    let cleared = json!({
        "title": null, "alt_text": null, "custom_fields": null, "focal_point_x": null,
        "access": null,
    });
    let (status, res) = send(&app, Method::PUT, &path, &root, Some(cleared)).await;
    assert_eq!(status, 200, "{res}");
    for key in [
        "title",
        "alt_text",
        "custom_fields",
        "focal_point_x",
        "access",
    ] {
        assert_eq!(res["data"][key], Value::Null, "{key}");
    }
    assert_eq!(res["data"]["description"], "D");
    assert_eq!(res["data"]["effective_access"], "public");
}

#[actix_web::test]
async fn moves_follow_the_tree_and_never_make_a_cycle() {
    let (app, root) = app_and_root().await;
    let a = folder(&app, None, "A", Some(Visibility::Private)).await;
    let b = folder(&app, Some(a), "B", None).await;
    let c = folder(&app, Some(b), "C", None).await;
    let other = folder(&app, None, "Other", None).await;
    let twin = folder(&app, Some(other), "B", None).await;
    let file = seed(&app, Some(c), "deep.txt", "text/plain", 1).await;
    for (id, target) in [(a, a), (a, b), (a, c), (b, c)] {
        let (status, res) = send(
            &app,
            Method::PUT,
            &format!("/files/{id}"),
            &root,
            Some(json!({"parent_id": target})),
        )
        .await;
        assert_422(status, &res, &["parent_id"], &format!("{id} into {target}"));
    }
    // A folder name already taken among the new siblings.
    let (status, res) = send(
        &app,
        Method::PUT,
        &format!("/files/{b}"),
        &root,
        Some(json!({"parent_id": other})),
    )
    .await;
    assert_422(status, &res, &["filename"], "name taken at the target");
    let (status, res) = send(
        &app,
        Method::PUT,
        &format!("/files/{twin}"),
        &root,
        Some(json!({"filename": "Renamed"})),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    // The file inherits the private folder's access until it moves out.
    assert_eq!(
        get(&app, &root, &format!("/files/{file}")).await["data"]["effective_access"],
        "private"
    );
    let (status, res) = send(
        &app,
        Method::PUT,
        &format!("/files/{file}"),
        &root,
        Some(json!({"parent_id": other})),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["parent_id"], other);
    assert_eq!(res["data"]["effective_access"], "public");
    // A folder moves with its subtree; to the top level with null.
    let (status, res) = send(
        &app,
        Method::PUT,
        &format!("/files/{b}"),
        &root,
        Some(json!({"parent_id": null})),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["parent_id"], Value::Null);
    assert_eq!(
        names(&get(&app, &root, &format!("/files?parent_id={b}")).await),
        ["C"]
    );
    assert_eq!(
        names(&get(&app, &root, "/files").await),
        ["A", "B", "Other"]
    );
    assert_eq!(
        names(&get(&app, &root, &format!("/files?parent_id={other}")).await),
        ["Renamed", "deep.txt"]
    );
}

#[actix_web::test]
async fn sort_orders_keep_folders_first() {
    let (app, root) = app_and_root().await;
    let dir = folder(&app, None, "dir", None).await;
    folder(&app, Some(dir), "zeta", None).await;
    folder(&app, Some(dir), "Alpha", None).await;
    // Created in this order, so `date` (last change) follows it, folders among themselves too.
    seed(&app, Some(dir), "b.png", "image/png", 300).await;
    seed(&app, Some(dir), "C.pdf", "application/pdf", 100).await;
    seed(&app, Some(dir), "a.zip", "application/zip", 200).await;
    let order = |query: &'static str| {
        let app = &app;
        let root = &root;
        async move { names(&get(app, root, &format!("/files?parent_id={dir}&{query}")).await) }
    };
    assert_eq!(
        order("").await,
        ["Alpha", "zeta", "a.zip", "b.png", "C.pdf"]
    );
    assert_eq!(
        order("sort=name&direction=desc").await,
        ["zeta", "Alpha", "C.pdf", "b.png", "a.zip"]
    );
    assert_eq!(
        order("sort=size").await,
        ["Alpha", "zeta", "C.pdf", "a.zip", "b.png"]
    );
    assert_eq!(
        order("sort=size&direction=desc").await,
        ["Alpha", "zeta", "b.png", "a.zip", "C.pdf"]
    );
    assert_eq!(
        order("sort=type").await,
        ["Alpha", "zeta", "C.pdf", "a.zip", "b.png"]
    );
    assert_eq!(
        order("sort=type&direction=desc").await,
        ["Alpha", "zeta", "b.png", "a.zip", "C.pdf"]
    );
    assert_eq!(
        order("sort=date").await,
        ["zeta", "Alpha", "b.png", "C.pdf", "a.zip"]
    );
    assert_eq!(
        order("sort=date&direction=desc").await,
        ["Alpha", "zeta", "a.zip", "C.pdf", "b.png"]
    );
}

#[actix_web::test]
async fn search_tag_and_mime_filter_the_whole_tree() {
    let (app, root) = app_and_root().await;
    let dir = folder(&app, None, "Reports", None).await;
    let sub = folder(&app, Some(dir), "2024", None).await;
    let photo = seed(&app, Some(sub), "Report-cover.JPG", "image/jpeg", 10).await;
    let pdf = seed(&app, Some(dir), "report.pdf", "application/pdf", 10).await;
    let note = seed(&app, None, "notes.txt", "text/plain", 10).await;
    let song = seed(&app, None, "song.mp3", "audio/mpeg", 10).await;
    let clip = seed(&app, Some(sub), "clip.mp4", "video/mp4", 10).await;
    let zip = seed(&app, None, "all.zip", "application/zip", 10).await;
    let blob = seed(&app, None, "blob.bin", "application/octet-stream", 10).await;
    let _ = (song, clip, zip, blob);
    for (id, tags) in [(photo, json!(["Cover", "2024"])), (pdf, json!(["2024"]))] {
        let (status, _) = send(
            &app,
            Method::POST,
            &format!("/files/{id}/tags"),
            &root,
            Some(json!({ "tags": tags })),
        )
        .await;
        assert_eq!(status, 200);
    }
    let list = |query: String| {
        let app = &app;
        let root = &root;
        async move { names(&get(app, root, &format!("/files?{query}")).await) }
    };
    // Search: case-insensitive, every folder, folders included; `%` and `_` literal.
    assert_eq!(
        list("search=REPORT".into()).await,
        ["Reports", "Report-cover.JPG", "report.pdf"]
    );
    assert_eq!(
        list(format!("search=report&parent_id={dir}")).await,
        ["report.pdf"]
    );
    assert!(list("search=%25".into()).await.is_empty());
    // Tag: exact, normalized.
    assert_eq!(
        list("tag=2024".into()).await,
        ["Report-cover.JPG", "report.pdf"]
    );
    assert_eq!(list("tag=%20COVER%20".into()).await, ["Report-cover.JPG"]);
    assert!(list("tag=cov".into()).await.is_empty());
    assert_eq!(
        list(format!("tag=2024&parent_id={sub}")).await,
        ["Report-cover.JPG"]
    );
    // MIME family: files only.
    for (family, expected) in [
        ("image", vec!["Report-cover.JPG"]),
        ("video", vec!["clip.mp4"]),
        ("audio", vec!["song.mp3"]),
        ("document", vec!["notes.txt", "report.pdf"]),
        ("archive", vec!["all.zip"]),
        ("other", vec!["blob.bin"]),
    ] {
        assert_eq!(list(format!("mime={family}")).await, expected, "{family}");
    }
    assert_eq!(
        list("mime=document&search=note".into()).await,
        ["notes.txt"]
    );
    assert_eq!(list("mime=document&tag=2024".into()).await, ["report.pdf"]);
    // Without a filter, the top level only.
    assert_eq!(
        list(String::new()).await,
        ["Reports", "all.zip", "blob.bin", "notes.txt", "song.mp3"]
    );
    // The tag list counts live files.
    trash(&app, pdf).await;
    let tags = get(&app, &root, "/file-tags").await;
    assert_eq!(
        tags,
        json!({"data": [{"tag": "2024", "files": 1}, {"tag": "cover", "files": 1}]})
    );
    let _ = note;
}

#[actix_web::test]
async fn the_trash_view_shows_what_was_deleted() {
    let (app, root) = app_and_root().await;
    let dir = folder(&app, None, "Old", None).await;
    let inner = seed(&app, Some(dir), "inner.txt", "text/plain", 1).await;
    let earlier = seed(&app, Some(dir), "earlier.txt", "text/plain", 1).await;
    let loose = seed(&app, None, "loose.txt", "text/plain", 1).await;
    seed(&app, None, "kept.txt", "text/plain", 1).await;
    trash(&app, earlier).await;
    trash(&app, dir).await;
    trash(&app, loose).await;
    // The top of the trash: the folder (with what went with it), the loose file, and the file
    // deleted on its own before its folder.
    assert_eq!(
        names(&get(&app, &root, "/files?trashed=only").await),
        ["Old", "earlier.txt", "loose.txt"]
    );
    assert_eq!(
        names(&get(&app, &root, &format!("/files?trashed=only&parent_id={dir}")).await),
        ["earlier.txt", "inner.txt"]
    );
    assert_eq!(
        names(&get(&app, &root, "/files?trashed=1&search=inner").await),
        ["inner.txt"]
    );
    // The live view no longer has them.
    assert_eq!(names(&get(&app, &root, "/files").await), ["kept.txt"]);
    assert!(names(&get(&app, &root, "/files?search=inner").await).is_empty());
    let shown = get(&app, &root, &format!("/files/{inner}")).await["data"].clone();
    assert!(shown["deleted_at"].is_string(), "{shown}");
    assert_eq!(shown["url"], Value::Null);
    assert_eq!(shown["transforms"], json!({}));
    let live = get(&app, &root, "/files").await["data"][0].clone();
    assert_eq!(live["deleted_at"], Value::Null);
    assert!(live["url"].is_string());
}

#[actix_web::test]
async fn favorites_belong_to_each_user() {
    let (app, root) = app_and_root().await;
    let ann = signed_in_with(
        &app,
        "ann@example.com",
        &["can-show-files", "can-favorite-files"],
    )
    .await;
    let bob = signed_in_with(
        &app,
        "bob@example.com",
        &["can-show-files", "can-favorite-files"],
    )
    .await;
    let dir = folder(&app, None, "Deep", None).await;
    let a = seed(&app, Some(dir), "ann.txt", "text/plain", 1).await;
    let b = seed(&app, None, "bob.txt", "text/plain", 1).await;
    let (status, res) = send(
        &app,
        Method::POST,
        &format!("/files/{a}/favorite"),
        &ann,
        None,
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["favorite"], true);
    // Twice is harmless.
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{a}/favorite"),
        &ann,
        None,
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{b}/favorite"),
        &bob,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        names(&get(&app, &ann, "/files?favorites=1").await),
        ["ann.txt"]
    );
    assert_eq!(
        names(&get(&app, &bob, "/files?favorites=1").await),
        ["bob.txt"]
    );
    assert!(names(&get(&app, &root, "/files?favorites=1").await).is_empty());
    assert_eq!(
        get(&app, &ann, &format!("/files/{a}")).await["data"]["favorite"],
        true
    );
    assert_eq!(
        get(&app, &bob, &format!("/files/{a}")).await["data"]["favorite"],
        false
    );
    let listed = get(&app, &bob, "/files").await;
    let flags: Vec<(String, bool)> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["filename"].as_str().unwrap().to_owned(),
                f["favorite"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [("Deep".to_owned(), false), ("bob.txt".to_owned(), true)]
    );
    // A trashed favorite leaves the view (and comes back with a restore, as the row is kept).
    trash(&app, dir).await;
    assert!(names(&get(&app, &ann, "/files?favorites=1").await).is_empty());
    assert_eq!(
        names(&get(&app, &ann, "/files?favorites=1&trashed=only").await),
        ["ann.txt"]
    );
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{b}/favorite"),
        &bob,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{b}/favorite"),
        &bob,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(names(&get(&app, &bob, "/files?favorites=1").await).is_empty());
}

#[actix_web::test]
async fn tags_are_normalized_bounded_and_removed_one_at_a_time() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 1).await;
    let path = format!("/files/{file}/tags");
    let fifty_one: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    for (body, fields) in [
        (json!({}), vec!["tags"]),
        (json!({"tags": "x"}), vec!["tags"]),
        (json!({"tags": []}), vec!["tags"]),
        (json!({ "tags": fifty_one }), vec!["tags"]),
        (json!({"tags": ["ok", 3]}), vec!["tags.1"]),
        (json!({"tags": ["   ", "ok"]}), vec!["tags.0"]),
        (json!({"tags": ["t".repeat(65)]}), vec!["tags.0"]),
        (json!({"tags": ["a\nb"]}), vec!["tags.0"]),
    ] {
        let (status, res) = send(&app, Method::POST, &path, &root, Some(body.clone())).await;
        assert_422(status, &res, &fields, &body.to_string());
    }
    let (status, res) = send(
        &app,
        Method::POST,
        &path,
        &root,
        Some(json!({"tags": [" Summer ", "summer", "ÉTÉ", "beach"]})),
    )
    .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["data"]["tags"], json!(["beach", "summer", "été"]));
    // At most 100 per file: 97 more are refused whole.
    let many: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
    let (status, _) = send(
        &app,
        Method::POST,
        &path,
        &root,
        Some(json!({ "tags": many })),
    )
    .await;
    assert_eq!(status, 200);
    let more: Vec<String> = (0..48).map(|i| format!("n{i}")).collect();
    let (status, res) = send(
        &app,
        Method::POST,
        &path,
        &root,
        Some(json!({ "tags": more })),
    )
    .await;
    assert_422(status, &res, &["tags"], "over 100 tags");
    assert_eq!(
        get(&app, &root, &format!("/files/{file}")).await["data"]["tags"]
            .as_array()
            .unwrap()
            .len(),
        53
    );
    let (status, _) = send(&app, Method::DELETE, &format!("{path}/SUMMER"), &root, None).await;
    assert_eq!(status, 204);
    let (status, _) = send(&app, Method::DELETE, &format!("{path}/summer"), &root, None).await;
    assert_eq!(status, 404);
    let tags = get(&app, &root, &format!("/files/{file}")).await["data"]["tags"].clone();
    assert!(
        !tags.as_array().unwrap().contains(&json!("summer")),
        "{tags}"
    );
}

#[actix_web::test]
async fn every_change_is_in_the_activity_log() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 1).await;
    let (status, body) = send(
        &app,
        Method::POST,
        "/files/folders",
        &root,
        Some(json!({"name": "F"})),
    )
    .await;
    assert_eq!(status, 201);
    let folder_id = body["data"]["id"].as_i64().unwrap();
    for (method, path, body) in [
        (
            Method::PUT,
            format!("/files/{file}"),
            Some(json!({"title": "T", "parent_id": folder_id})),
        ),
        (
            Method::POST,
            format!("/files/{file}/tags"),
            Some(json!({"tags": ["x"]})),
        ),
        (Method::DELETE, format!("/files/{file}/tags/x"), None),
        (Method::POST, format!("/files/{file}/favorite"), None),
        (Method::DELETE, format!("/files/{file}/favorite"), None),
    ] {
        let (status, res) = send(&app, method, &path, &root, body).await;
        assert!(status == 200 || status == 204, "{path}: {res}");
    }
    let entries = file_activity(&app, &root).await;
    let events: Vec<(&str, String)> = entries
        .iter()
        .map(|(e, id, _)| (e.as_str(), id.clone()))
        .collect();
    let (f, d) = (file.to_string(), folder_id.to_string());
    assert_eq!(
        events,
        [
            ("unfavorited", f.clone()),
            ("favorited", f.clone()),
            ("untagged", f.clone()),
            ("tagged", f.clone()),
            ("updated", f.clone()),
            ("created", d.clone()),
        ]
    );
    let updated = &entries[4].2;
    assert_eq!(updated["parent_id"], folder_id, "{updated}");
    // Reads and refused writes record nothing.
    get(&app, &root, "/files").await;
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/files/{file}"),
        &root,
        Some(json!({"title": 1})),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(file_activity(&app, &root).await.len(), 6);
}

#[actix_web::test]
async fn the_public_api_sees_changes_at_once() {
    let (app, root) = app_and_root().await;
    let file = seed(&app, None, "a.txt", "text/plain", 1).await;
    let public = format!("/api/v1/files/{file}");
    let before = app.get_as("viewer-key", &public).await;
    assert_eq!(before.status, 200);
    assert_eq!(before.json()["data"]["title"], Value::Null);
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/files/{file}"),
        &root,
        Some(json!({"title": "New"})),
    )
    .await;
    assert_eq!(status, 200);
    let after = app.get_as("viewer-key", &public).await;
    assert_eq!(after.json()["data"]["title"], "New");
    // Made private: a key without read_private is refused at once, and the list omits it.
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/files/{file}"),
        &root,
        Some(json!({"access": "private"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(app.get_as("viewer-key", &public).await.status, 403);
    assert_eq!(app.get_as("private-key", &public).await.status, 200);
    // A new folder is listed by the public API at once.
    let listed = app.get_as("viewer-key", "/api/v1/files").await;
    assert_eq!(listed.json()["meta"]["total"], 0);
    let (status, _) = send(
        &app,
        Method::POST,
        "/files/folders",
        &root,
        Some(json!({"name": "New"})),
    )
    .await;
    assert_eq!(status, 201);
    let listed = app.get_as("viewer-key", "/api/v1/files").await;
    assert_eq!(listed.json()["meta"]["total"], 1);
}

#[actix_web::test]
async fn a_folder_of_many_files_pages_correctly_in_a_fixed_number_of_statements() {
    let (app, counter) =
        crate::support::with_statement_counter(project(), vellum_http::HttpConfig::default()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    let dir = folder(&app, None, "Many", None).await;
    let mut expected = Vec::new();
    for i in 0..230 {
        let name = format!("file-{i:04}.txt");
        let id = seed(&app, Some(dir), &name, "text/plain", i).await;
        if i % 2 == 0 {
            vellum_storage::files::tags::add_tags(&app.db.conn, id, &["even".to_owned()])
                .await
                .unwrap();
        }
        expected.push(name);
    }
    seed(&app, None, "elsewhere.txt", "text/plain", 1).await;
    let mut seen = Vec::new();
    for page in 1..=3 {
        let body = get(
            &app,
            &root,
            &format!("/files?parent_id={dir}&per_page=100&page={page}"),
        )
        .await;
        assert_eq!(body["meta"]["total"], 230);
        assert_eq!(body["meta"]["last_page"], 3);
        assert_eq!(body["meta"]["current_page"], page);
        let data = body["data"].as_array().unwrap();
        assert_eq!(data.len(), if page < 3 { 100 } else { 30 });
        for f in data {
            let even = f["filesize"].as_i64().unwrap() % 2 == 0;
            assert_eq!(
                f["tags"],
                if even { json!(["even"]) } else { json!([]) },
                "{f}"
            );
        }
        seen.extend(names(&body));
    }
    assert_eq!(seen, expected);
    let beyond = get(
        &app,
        &root,
        &format!("/files?parent_id={dir}&per_page=100&page=4"),
    )
    .await;
    assert_eq!(beyond["data"], json!([]));
    assert_eq!(beyond["meta"]["total"], 230);
    // Tags and favorites are read once per page, not once per row.
    let statements = |per_page: u32| {
        let app = &app;
        let root = &root;
        let counter = &counter;
        async move {
            let before = counter.load(Ordering::SeqCst);
            get(
                app,
                root,
                &format!("/files?parent_id={dir}&per_page={per_page}"),
            )
            .await;
            counter.load(Ordering::SeqCst) - before
        }
    };
    // Warm the session and snapshot caches first.
    statements(1).await;
    let one = statements(1).await;
    let hundred = statements(100).await;
    assert_eq!(one, hundred, "statements per page grow with its size");
}
