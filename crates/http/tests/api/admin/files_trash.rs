//! The file manager's trash, force delete, "where used" and bulk actions (issue 29, part C):
//! every route allowed with exactly its permission and refused without it (403) or without a
//! session (401); 404s; soft delete hides from the public API at once; restore brings back what
//! was deleted together; force delete refuses while items (live or trashed, top-level fields or
//! block slots) reference the file, and deletes a blob only when no other row names it; usage
//! grouped per collection and gated by `can-show-collections`; bulk partial failures; activity.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::Session;
use super::access_support::{error_fields, send};
use super::files_browse::FILE_PERMISSIONS;
use super::users::{check_routes, session_with};
use crate::support::{Part, TestApp, blob_key, blog, png};

/// The blog, articles labelled by a template, and `pages` whose `body` blocks hold a file slot.
fn manifest() -> Value {
    let mut manifest = blog();
    let collections = manifest["collections"].as_array_mut().unwrap();
    collections[2]["display_template"] = json!("{{title}} ({{status}})");
    collections.push(json!({"slug": "pages", "name": "Pages", "fields": [
        {"name": "title", "type": "string", "settings": {}},
        {"name": "body", "type": "blocks", "settings": {"block_types": [
            {"key": "figure", "fields": [{"name": "pic", "type": "file", "settings": {}}]}
        ]}}
    ]}));
    manifest
}

async fn setup() -> (TestApp, Session) {
    let app = TestApp::new(manifest()).await;
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    (app, root)
}

/// Uploads `bytes` as `name` (into `parent`) through the public API; answers the id.
async fn upload(app: &TestApp, name: &str, bytes: &[u8], parent: Option<i64>) -> i64 {
    let mut parts = vec![Part::file(name, "application/octet-stream", bytes)];
    if let Some(parent) = parent {
        parts.push(Part::text("parent_id", &parent.to_string()));
    }
    let res = app.upload(Some("admin-key"), &parts).await;
    assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.body);
    res.json()["data"]["id"].as_i64().unwrap()
}

async fn folder(app: &TestApp, name: &str, parent: Option<i64>) -> i64 {
    crate::files::folder(app, parent, name, None).await
}

/// The public API's status for file `id` (as the super-admin key).
async fn public_status(app: &TestApp, id: i64) -> u16 {
    app.get_as("admin-key", &format!("/api/v1/files/{id}"))
        .await
        .status
        .as_u16()
}

async fn create_item(app: &TestApp, s: &Session, collection: &str, data: Value) -> i64 {
    super::items::create(app, s, collection, data).await
}

async fn bulk(app: &TestApp, s: &Session, body: Value) -> (u16, Value) {
    send(app, Method::POST, "/files/bulk", s, Some(body)).await
}

/// The activity entries of the `files` log, oldest first: (event, subject id).
async fn file_activity(app: &TestApp, s: &Session) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = super::files_browse::file_activity(app, s)
        .await
        .into_iter()
        .map(|(event, subject, _)| (event, subject))
        .collect();
    entries.reverse();
    entries
}

#[actix_web::test]
async fn every_route_needs_its_permission() {
    let (app, root) = setup().await;
    let deleted = upload(&app, "a.txt", b"a", None).await;
    let restored = upload(&app, "b.txt", b"b", None).await;
    let forced = upload(&app, "c.txt", b"c", None).await;
    let used = upload(&app, "d.txt", b"d", None).await;
    let bulked = upload(&app, "e.txt", b"e", None).await;
    let moved = upload(&app, "f.txt", b"f", None).await;
    let target = folder(&app, "target", None).await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{restored}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    check_routes(
        &app,
        &FILE_PERMISSIONS,
        vec![
            (
                Method::DELETE,
                format!("/files/{deleted}"),
                "can-delete-files",
                None,
                204,
            ),
            (
                Method::POST,
                format!("/files/{restored}/restore"),
                "can-restore-files",
                None,
                200,
            ),
            (
                Method::DELETE,
                format!("/files/{forced}/force"),
                "can-force-delete-files",
                None,
                204,
            ),
            (
                Method::GET,
                format!("/files/{used}/usage"),
                "can-show-files",
                None,
                200,
            ),
            (
                Method::POST,
                "/files/bulk".into(),
                "can-delete-files",
                Some(json!({"action": "delete", "ids": [bulked]})),
                200,
            ),
            (
                Method::POST,
                "/files/bulk".into(),
                "can-edit-files",
                Some(json!({"action": "move", "ids": [moved], "parent_id": target})),
                200,
            ),
        ],
    )
    .await;
    // What the allowed calls did.
    assert_eq!(public_status(&app, deleted).await, 404);
    assert_eq!(public_status(&app, restored).await, 200);
    assert_eq!(public_status(&app, forced).await, 404);
    assert_eq!(public_status(&app, bulked).await, 404);
    let shown = app
        .get_as("admin-key", &format!("/api/v1/files/{moved}"))
        .await
        .json();
    assert_eq!(shown["data"]["parent_id"], target);

    // Unknown ids: 404 on every route (the permission is checked first).
    for (method, path) in [
        (Method::DELETE, "/files/99999"),
        (Method::POST, "/files/99999/restore"),
        (Method::DELETE, "/files/99999/force"),
        (Method::GET, "/files/99999/usage"),
        (Method::GET, "/files/abc/usage"),
        (Method::DELETE, "/files/0/force"),
    ] {
        let (status, body) = send(&app, method.clone(), path, &root, None).await;
        assert_eq!(status, 404, "{method} {path}");
        assert_eq!(body, json!({"message": "Not found."}));
    }
}

#[actix_web::test]
async fn bulk_actions_each_need_their_own_permission() {
    let (app, _root) = setup().await;
    let file = upload(&app, "a.txt", b"a", None).await;
    let sessions = [
        ("delete", "can-delete-files"),
        ("restore", "can-restore-files"),
        ("force_delete", "can-force-delete-files"),
        ("move", "can-edit-files"),
        ("tag", "can-tag-files"),
    ];
    for (i, (action, _)) in sessions.iter().enumerate() {
        for (j, (_, permission)) in sessions.iter().enumerate() {
            if i == j {
                continue;
            }
            let s = session_with(&app, &format!("u{i}-{j}"), &[permission]).await;
            let body = json!({"action": action, "ids": [file], "parent_id": null, "tags": ["x"]});
            let (status, answer) = bulk(&app, &s, body).await;
            assert_eq!(
                (status, answer),
                (403, json!({"message": "Forbidden."})),
                "{action} with {permission}"
            );
        }
    }
    assert_eq!(public_status(&app, file).await, 200, "nothing changed");
}

#[actix_web::test]
async fn soft_delete_hides_at_once_and_restore_brings_back_what_went_together() {
    let (app, root) = setup().await;
    let docs = folder(&app, "docs", None).await;
    let sub = folder(&app, "sub", Some(docs)).await;
    let x = upload(&app, "x.txt", b"x", Some(docs)).await;
    let y = upload(&app, "y.txt", b"y", Some(sub)).await;
    let earlier = upload(&app, "z.txt", b"z", Some(docs)).await;
    // Read (and cache) through the public API first.
    assert_eq!(public_status(&app, x).await, 200);
    assert_eq!(public_status(&app, y).await, 200);
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{earlier}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);

    let (status, body) = send(&app, Method::DELETE, &format!("/files/{docs}"), &root, None).await;
    assert_eq!((status, body), (204, Value::Null));
    for id in [docs, sub, x, y] {
        assert_eq!(public_status(&app, id).await, 404, "{id} is hidden at once");
    }
    let content = app
        .get_as("admin-key", &format!("/api/v1/files/{x}/content"))
        .await;
    assert_eq!(content.status, 404);
    let root_list = app.get_as("admin-key", "/api/v1/files").await.json();
    assert_eq!(root_list["data"], json!([]));
    // Deleting again: it is not live any more.
    let (status, _) = send(&app, Method::DELETE, &format!("/files/{x}"), &root, None).await;
    assert_eq!(status, 404);

    // A file inside a deleted folder cannot come back on its own.
    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{x}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(error_fields(&body), ["parent_id"]);

    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{docs}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["id"], docs);
    assert_eq!(body["data"]["type"], "folder");
    for id in [docs, sub, x, y] {
        assert_eq!(public_status(&app, id).await, 200, "{id} came back");
    }
    assert_eq!(
        public_status(&app, earlier).await,
        404,
        "deleted before, on its own: stays in the trash"
    );
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{earlier}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(public_status(&app, earlier).await, 200);

    // Restoring what is live is refused.
    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{x}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(error_fields(&body), ["file"]);

    // A folder whose name a new live folder took meanwhile.
    let (status, _) = send(&app, Method::DELETE, &format!("/files/{docs}"), &root, None).await;
    assert_eq!(status, 204);
    folder(&app, "docs", None).await;
    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{docs}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(error_fields(&body), ["filename"]);
    assert_eq!(public_status(&app, x).await, 404, "nothing came back");
}

#[actix_web::test]
async fn force_delete_refuses_while_items_reference_the_file() {
    let (app, root) = setup().await;
    let cover = upload(&app, "cover.png", &png(4, 4), None).await;
    let trashed_cover = upload(&app, "old.png", &png(5, 5), None).await;
    let media = folder(&app, "media", None).await;
    let nested = folder(&app, "nested", Some(media)).await;
    let pic = upload(&app, "pic.txt", b"pic", Some(nested)).await;

    let live = create_item(
        &app,
        &root,
        "articles",
        json!({"title": "Live", "status": "draft", "cover": cover}),
    )
    .await;
    let trashed = create_item(
        &app,
        &root,
        "articles",
        json!({"title": "Gone", "cover": trashed_cover}),
    )
    .await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/articles/items/{trashed}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let page = create_item(
        &app,
        &root,
        "pages",
        json!({"title": "Home", "body": [
            {"type": "figure", "data": {"pic": pic}},
            {"type": "figure", "data": {"pic": pic}}
        ]}),
    )
    .await;

    let force = |id: i64| {
        let (app, root) = (&app, &root);
        async move {
            send(
                app,
                Method::DELETE,
                &format!("/files/{id}/force"),
                root,
                None,
            )
            .await
        }
    };
    let (status, body) = force(cover).await;
    assert_eq!(status, 409);
    assert_eq!(
        body["items"],
        json!([{"collection": "articles", "id": live}])
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&format!("articles {live}")),
        "{body}"
    );
    let (status, body) = force(trashed_cover).await;
    assert_eq!(status, 409, "a trashed item still references it");
    assert_eq!(
        body["items"],
        json!([{"collection": "articles", "id": trashed}])
    );
    // A folder: anything in its subtree, here a block slot of a page.
    let (status, body) = force(media).await;
    assert_eq!(status, 409);
    assert_eq!(body["items"], json!([{"collection": "pages", "id": page}]));
    // A file soft-deleted by the folder is still protected.
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{media}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = force(pic).await;
    assert_eq!(status, 409);
    for id in [cover, trashed_cover] {
        assert_eq!(public_status(&app, id).await, 200, "nothing was deleted");
    }

    // Detach each reference the way an editor would; then the deletes go through.
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("/collections/articles/items/{live}"),
        &root,
        Some(json!({"data": {"cover": null}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/articles/items/{trashed}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, body) = send(
        &app,
        Method::PUT,
        &format!("/collections/pages/items/{page}"),
        &root,
        Some(json!({"data": {"body": [{"type": "figure", "data": {"pic": null}}]}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for id in [cover, trashed_cover, media] {
        let (status, body) = force(id).await;
        assert_eq!((status, body), (204, Value::Null), "{id}");
    }
    for id in [cover, trashed_cover, media, nested, pic] {
        let (status, _) = send(
            &app,
            Method::GET,
            &format!("/files/{id}/usage"),
            &root,
            None,
        )
        .await;
        assert_eq!(status, 404, "{id} is gone, trash and all");
    }
}

#[actix_web::test]
async fn force_delete_keeps_a_shared_blob_and_removes_an_unshared_one() {
    let (app, root) = setup().await;
    let bytes = png(8, 8);
    let first = upload(&app, "one.png", &bytes, None).await;
    let second = upload(&app, "two.png", &bytes, None).await;
    let key = blob_key(&bytes);
    // A transform record of the shared content.
    let res = app
        .get_as(
            "admin-key",
            &format!("/api/v1/files/{first}/transforms/thumbnail"),
        )
        .await;
    assert_eq!(res.status, 200);
    let hash = crate::support::sha256_hex(&bytes);
    let transforms = vellum_storage::files::list_transforms(&app.db.conn, &hash)
        .await
        .unwrap();
    assert_eq!(transforms.len(), 1);

    // Soft-deleted first: force delete takes trashed files too.
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{first}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{first}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(
        app.state.blobs().head(&key).await.unwrap().is_some(),
        "shared"
    );
    let content = app
        .get_as("admin-key", &format!("/api/v1/files/{second}/content"))
        .await;
    assert_eq!(content.status, 200);
    assert_eq!(content.body, bytes);
    assert_eq!(
        vellum_storage::files::list_transforms(&app.db.conn, &hash)
            .await
            .unwrap()
            .len(),
        1,
        "the other file still has this content"
    );
    let (status, _) = send(
        &app,
        Method::POST,
        &format!("/files/{first}/restore"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404, "the row is gone");

    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/files/{second}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(
        app.state.blobs().head(&key).await.unwrap().is_none(),
        "unshared"
    );
    assert!(
        app.state
            .blobs()
            .head(&transforms[0].storage_key)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        vellum_storage::files::list_transforms(&app.db.conn, &hash)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(public_status(&app, second).await, 404);
}

#[actix_web::test]
async fn usage_groups_items_per_collection_and_needs_the_collections_permission() {
    let (app, root) = setup().await;
    let box_ = folder(&app, "box", None).await;
    let file = upload(&app, "shared.txt", b"shared", Some(box_)).await;
    let unused = upload(&app, "unused.txt", b"unused", None).await;
    let a = create_item(
        &app,
        &root,
        "articles",
        json!({"title": "First", "status": "published", "cover": file}),
    )
    .await;
    let b = create_item(
        &app,
        &root,
        "articles",
        json!({"title": "Second", "cover": file}),
    )
    .await;
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/articles/items/{b}"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    let page = create_item(
        &app,
        &root,
        "pages",
        json!({"body": [{"type": "figure", "data": {"pic": file}}]}),
    )
    .await;
    let expected = json!({"data": {
        "collections": [
            {"collection": "articles", "name": "Articles", "items": [
                {"id": a, "label": "First (published)", "trashed": false},
                {"id": b, "label": "Second ()", "trashed": true}
            ]},
            {"collection": "pages", "name": "Pages", "items": [
                {"id": page, "label": format!("#{page}"), "trashed": false}
            ]}
        ],
        "messages": [],
        "hidden": false,
        "truncated": false
    }});
    let usage = |s: Session, id: i64| {
        let app = &app;
        async move { send(app, Method::GET, &format!("/files/{id}/usage"), &s, None).await }
    };
    assert_eq!(usage(root.clone(), file).await, (200, expected.clone()));
    // A folder's usage is its contents'.
    assert_eq!(usage(root.clone(), box_).await, (200, expected.clone()));
    let reader = session_with(&app, "both", &["can-show-files", "can-show-collections"]).await;
    assert_eq!(usage(reader, file).await, (200, expected));
    let files_only = session_with(&app, "files-only", &["can-show-files"]).await;
    let hidden = json!({"data": {
        "collections": [], "messages": [], "hidden": true, "truncated": false
    }});
    assert_eq!(usage(files_only, file).await, (200, hidden));
    let none = json!({"data": {
        "collections": [], "messages": [], "hidden": false, "truncated": false
    }});
    assert_eq!(usage(root.clone(), unused).await, (200, none.clone()));

    // The index follows item writes: a changed value, a removed block slot.
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/collections/articles/items/{a}"),
        &root,
        Some(json!({"data": {"cover": unused}})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = send(
        &app,
        Method::PUT,
        &format!("/collections/pages/items/{page}"),
        &root,
        Some(json!({"data": {"body": []}})),
    )
    .await;
    assert_eq!(status, 200);
    let (_, body) = usage(root.clone(), file).await;
    assert_eq!(
        body["data"]["collections"],
        json!([{"collection": "articles", "name": "Articles", "items": [
            {"id": b, "label": "Second ()", "trashed": true}
        ]}])
    );
    let (_, body) = usage(root.clone(), unused).await;
    assert_eq!(body["data"]["collections"][0]["items"][0]["id"], a);
    // A force-deleted item takes its references with it.
    let (status, _) = send(
        &app,
        Method::DELETE,
        &format!("/collections/articles/items/{b}/force"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(usage(root, file).await, (200, none));
}

#[actix_web::test]
async fn bulk_reports_failures_per_id() {
    let (app, root) = setup().await;
    let target = folder(&app, "target", None).await;
    let inner = folder(&app, "inner", Some(target)).await;
    let a = upload(&app, "a.txt", b"a", None).await;
    let b = upload(&app, "b.txt", b"b", None).await;
    let used = upload(&app, "used.txt", b"used", None).await;
    let article = create_item(
        &app,
        &root,
        "articles",
        json!({"title": "T", "cover": used}),
    )
    .await;

    // Move: a folder into its own subfolder fails alone.
    let (status, body) = bulk(
        &app,
        &root,
        json!({"action": "move", "ids": [a, target, 99999, a], "parent_id": inner}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["done"], json!([a]));
    let failed = body["data"]["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{body}");
    assert_eq!(
        (failed[0]["id"].as_i64(), failed[0]["status"].as_u64()),
        (Some(target), Some(422))
    );
    assert_eq!(
        failed[1],
        json!({"id": 99999, "status": 404, "message": "Not found."})
    );
    let shown = app
        .get_as("admin-key", &format!("/api/v1/files/{a}"))
        .await
        .json();
    assert_eq!(shown["data"]["parent_id"], inner);
    // Back to the top level.
    let (status, body) = bulk(
        &app,
        &root,
        json!({"action": "move", "ids": [a], "parent_id": null}),
    )
    .await;
    assert_eq!((status, &body["data"]["done"]), (200, &json!([a])));

    let (status, body) = bulk(
        &app,
        &root,
        json!({"action": "delete", "ids": [a, b, 99999]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"],
        json!({"done": [a, b], "failed": [{"id": 99999, "status": 404, "message": "Not found."}]})
    );
    let (_, body) = bulk(&app, &root, json!({"action": "restore", "ids": [a, used]})).await;
    assert_eq!(body["data"]["done"], json!([a]));
    assert_eq!(body["data"]["failed"][0]["id"], used);
    assert_eq!(body["data"]["failed"][0]["status"], 422);
    let (_, body) = bulk(
        &app,
        &root,
        json!({"action": "force_delete", "ids": [used, b]}),
    )
    .await;
    assert_eq!(body["data"]["done"], json!([b]));
    let failure = &body["data"]["failed"][0];
    assert_eq!(
        (failure["id"].as_i64(), failure["status"].as_u64()),
        (Some(used), Some(409))
    );
    assert!(
        failure["message"]
            .as_str()
            .unwrap()
            .contains(&format!("articles {article}")),
        "{failure}"
    );
    assert_eq!(public_status(&app, used).await, 200);
    assert_eq!(public_status(&app, a).await, 200);

    // Whole-request refusals.
    for (body, field) in [
        (json!({"action": "tag", "ids": [a]}), "tags"),
        (json!({"action": "untag", "ids": [a], "tags": []}), "tags"),
        (json!({"action": "shred", "ids": [a]}), "action"),
        (json!({"action": "delete", "ids": []}), "ids"),
        (json!({"action": "delete", "ids": [0]}), "ids"),
        (
            json!({"action": "delete", "ids": (1..=101).collect::<Vec<i64>>()}),
            "ids",
        ),
        (json!({"action": "move", "ids": [a]}), "parent_id"),
        (
            json!({"action": "move", "ids": [a], "parent_id": a}),
            "parent_id",
        ),
        (
            json!({"action": "move", "ids": [a], "parent_id": 99999}),
            "parent_id",
        ),
    ] {
        let (status, answer) = bulk(&app, &root, body.clone()).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(error_fields(&answer), [field], "{body}");
    }
    let anonymous = app
        .admin(
            Method::POST,
            "/files/bulk",
            None,
            Some(json!({"action": "delete", "ids": [a]})),
        )
        .await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(public_status(&app, a).await, 200);
}

#[actix_web::test]
async fn every_change_is_in_the_activity_log() {
    let (app, root) = setup().await;
    let target = folder(&app, "target", None).await;
    let a = upload(&app, "a.txt", b"a", None).await;
    let b = upload(&app, "b.txt", b"b", None).await;
    for (method, path) in [
        (Method::DELETE, format!("/files/{a}")),
        (Method::POST, format!("/files/{a}/restore")),
        (Method::DELETE, format!("/files/{a}/force")),
    ] {
        let (status, body) = send(&app, method, &path, &root, None).await;
        assert!(status == 200 || status == 204, "{path}: {body}");
    }
    for body in [
        json!({"action": "move", "ids": [b], "parent_id": target}),
        json!({"action": "delete", "ids": [b]}),
        json!({"action": "restore", "ids": [b]}),
        json!({"action": "force_delete", "ids": [b]}),
    ] {
        let (status, _) = bulk(&app, &root, body).await;
        assert_eq!(status, 200);
    }
    // Refusals record nothing.
    let (status, _) = send(&app, Method::DELETE, "/files/99999/force", &root, None).await;
    assert_eq!(status, 404);
    let (a, b) = (a.to_string(), b.to_string());
    let expected: Vec<(String, String)> = [
        ("deleted", &a),
        ("restored", &a),
        ("force_deleted", &a),
        ("moved", &b),
        ("deleted", &b),
        ("restored", &b),
        ("force_deleted", &b),
    ]
    .into_iter()
    .map(|(e, id)| (e.to_owned(), id.clone()))
    .collect();
    assert_eq!(file_activity(&app, &root).await, expected);
}

#[actix_web::test]
async fn bulk_tags_and_untags_many_files() {
    let (app, root) = setup().await;
    let a = upload(&app, "a.txt", b"a", None).await;
    let b = upload(&app, "b.txt", b"b", None).await;
    let gone = upload(&app, "c.txt", b"c", None).await;
    let (status, _) = send(&app, Method::DELETE, &format!("/files/{gone}"), &root, None).await;
    assert_eq!(status, 204);
    let (status, answer) = bulk(
        &app,
        &root,
        json!({"action": "tag", "ids": [a, b, gone], "tags": ["Summer ", "sea"]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["done"], json!([a, b]));
    assert_eq!(
        (
            answer["data"]["failed"][0]["id"].as_i64(),
            answer["data"]["failed"][0]["status"].as_u64()
        ),
        (Some(gone), Some(404))
    );
    let tags = |id: i64| {
        let app = &app;
        let root = &root;
        async move {
            let (_, shown) = send(app, Method::GET, &format!("/files/{id}"), root, None).await;
            shown["data"]["tags"].clone()
        }
    };
    assert_eq!(tags(a).await, json!(["sea", "summer"]));
    let (status, listed) = send(&app, Method::GET, "/files?tag=summer", &root, None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["meta"]["total"], 2, "{listed}");
    let (status, answer) = bulk(
        &app,
        &root,
        json!({"action": "untag", "ids": [a, b], "tags": ["summer", "winter"]}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["done"], json!([a, b]));
    assert_eq!(tags(b).await, json!(["sea"]));
    let log = file_activity(&app, &root).await;
    assert_eq!(
        log.iter().filter(|(event, _)| event == "untagged").count(),
        2,
        "{log:?}"
    );
}
