//! The file manager's byte routes (issue 29, part B): `POST /files/upload` (many files, all or
//! none, capped per file), `POST /files/{file}/replace` (new bytes under the same id, the old
//! derivatives and cached responses gone, never a mix under concurrent reads), `POST
//! /files/{file}/copy` (one blob for both rows) and `GET|HEAD /files/{file}/download` (an
//! attachment with a safe name, private files included). Every route with and without its
//! permission; nothing left in the database or the blob store by a refused request.

use std::cell::Cell;
use std::ops::Range;
use std::sync::Arc;

use actix_web::http::Method;
use bytes::Bytes;
use futures_util::TryStreamExt as _;
use futures_util::stream::BoxStream;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use vellum_http::{Backends, HttpConfig};
use vellum_storage::StorageError;
use vellum_storage::blob::{BlobStore, BlobStream, StagedBlob};
use vellum_storage::files::{FilePatch, Visibility};

use super::access_support::{error_fields, send};
use super::files_browse::{FILE_PERMISSIONS, file_activity};
use super::users::session_with;
use super::{Session, admin_request};
use crate::files::{folder, opaque_bytes, set_access};
use crate::support::{
    BASE_URL, BOUNDARY, Part, REDIS_ENV, Response, TestApp, blob_key, multipart, op, png,
    sha256_hex,
};

/// A project whose file manager caps each file at `cap` bytes; anonymous callers read public
/// files through the public API.
fn manifest(cap: u64) -> Value {
    json!({
        "settings": {"content_locales": ["en"], "default_locale": "en", "files_max_upload_bytes": cap},
        "roles": [{"name": "public", "file_permissions": {"read": true}}],
    })
}

/// A blob store whose reads wait a moment before opening the blob, as a remote store does: the
/// window in which a replace can commit and delete the bytes a reader's row still names.
#[derive(Debug)]
struct SlowReads(vellum_storage::blob::ObjectBlobStore);

#[async_trait::async_trait]
impl BlobStore for SlowReads {
    async fn stage(
        &self,
        body: BoxStream<'_, Result<Bytes, std::io::Error>>,
        limit: Option<u64>,
    ) -> Result<StagedBlob, StorageError> {
        self.0.stage(body, limit).await
    }
    async fn publish(&self, staged: &StagedBlob) -> Result<(), StorageError> {
        self.0.publish(staged).await
    }
    async fn release(&self, staged: StagedBlob) {
        self.0.release(staged).await;
    }
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        self.0.put_bytes(key, bytes).await
    }
    async fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<BlobStream, StorageError> {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        self.0.get(key, range).await
    }
    async fn head(&self, key: &str) -> Result<Option<u64>, StorageError> {
        self.0.head(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        self.0.delete(key).await
    }
}

/// Where a test's blobs live, listable by the test: memory, or a fresh key prefix of the
/// S3-compatible server named by `VELLUM_TEST_S3_ENDPOINT` (as `files_races.rs` reaches it).
type Store = Arc<dyn ObjectStore>;

fn test_store() -> (Store, usize) {
    let Some(endpoint) = std::env::var("VELLUM_TEST_S3_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    else {
        // Small parts, so a file of a few hundred KiB is written as a multipart upload.
        return (Arc::new(InMemory::new()), 64 * 1024);
    };
    let bucket = std::env::var("VELLUM_TEST_S3_BUCKET")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "vellum-test".to_owned());
    let config = vellum_storage::blob::S3Config {
        bucket,
        endpoint: Some(endpoint),
    };
    let mut builder = config.builder();
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        builder = builder
            .with_access_key_id("vellum-test")
            .with_secret_access_key("vellum-test");
    }
    let prefix = format!("test-{}", uuid::Uuid::new_v4());
    let store = object_store::prefix::PrefixStore::new(builder.build().unwrap(), prefix.as_str());
    // S3 refuses parts under 5 MiB.
    (Arc::new(store), 5 * 1024 * 1024)
}

/// An app over a blob store the test can list, and a super-admin session.
async fn app_with_store(cap: u64) -> (TestApp, Store, Session) {
    app_over(cap, false).await
}

/// As [`app_with_store`]; with `slow`, blob reads go through [`SlowReads`].
async fn app_over(cap: u64, slow: bool) -> (TestApp, Store, Session) {
    let db = vellum_storage::testing::TestDb::new().await.unwrap();
    vellum_storage::seed::seed_system(&db.conn).await.unwrap();
    let report = vellum_manifest::apply(&db.conn, &manifest(cap))
        .await
        .unwrap();
    let config = HttpConfig {
        base_url: BASE_URL.to_owned(),
        ..HttpConfig::default()
    };
    let (memory, part_size) = test_store();
    let store =
        vellum_storage::blob::ObjectBlobStore::new(memory.clone()).with_part_size(part_size);
    let blobs: Arc<dyn BlobStore> = if slow {
        Arc::new(SlowReads(store))
    } else {
        Arc::new(store)
    };
    let backends = match std::env::var(REDIS_ENV) {
        Ok(url) if !url.trim().is_empty() => {
            let redis = vellum_http::cache::RedisBackend::new(url.trim(), 4)
                .unwrap()
                .with_namespace(&format!("vellum-test-{}:", uuid::Uuid::new_v4()));
            Backends::redis(&config, blobs, redis)
        }
        _ => Backends::local(&config, blobs),
    };
    let state = vellum_http::AppState::with_backends(db.conn.clone(), config, backends)
        .await
        .unwrap();
    let app = TestApp {
        db,
        state,
        keys: report.api_keys,
    };
    let root = app.signed_in("root@example.com", &["super-admin"]).await;
    (app, memory, root)
}

/// Every object in the blob store (staging included), sorted.
async fn objects(store: &Store) -> Vec<String> {
    let mut keys: Vec<String> = store
        .list(None)
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap();
    keys.sort();
    keys
}

/// How many `files` rows exist, soft-deleted ones included.
async fn file_rows(app: &TestApp) -> i64 {
    let conn = &app.db.conn;
    let row = conn
        .query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            "SELECT COUNT(*) AS n FROM files",
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get::<i64>("", "n").unwrap()
}

/// A multipart admin request as `session` (None: anonymous).
async fn send_form(
    app: &TestApp,
    path: &str,
    session: Option<&Session>,
    parts: &[Part],
) -> Response {
    let req = admin_request(Method::POST, path, session, None)
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        ))
        .set_payload(multipart(parts));
    app.send(req).await
}

fn file(name: &str, bytes: &[u8]) -> Part {
    Part::file(name, "application/octet-stream", bytes)
}

/// Uploads `parts` through `POST /files/upload` as `s` and answers the created files.
async fn upload(app: &TestApp, s: &Session, parts: &[Part]) -> Vec<Value> {
    let res = send_form(app, "/files/upload", Some(s), parts).await;
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json()["data"].as_array().unwrap().clone()
}

fn id_of(file: &Value) -> i64 {
    file["id"].as_i64().unwrap()
}

/// The stored row of `id`.
async fn stored(app: &TestApp, id: i64) -> vellum_storage::files::StoredFile {
    vellum_storage::files::get_file(&app.db.conn, id)
        .await
        .unwrap()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Permissions

/// One route: its permission, how to send it, and the status it answers when allowed.
enum Call {
    Form(String, Vec<Part>, u16),
    Json(Method, String, Option<Value>, u16),
}

async fn call(app: &TestApp, route: &Call, s: Option<&Session>) -> Response {
    match route {
        Call::Form(path, parts, _) => send_form(app, path, s, parts).await,
        Call::Json(method, path, body, _) => {
            app.send(admin_request(method.clone(), path, s, body.clone()))
                .await
        }
    }
}

#[actix_web::test]
async fn every_route_needs_its_permission_and_a_session() {
    let (app, _, root) = app_with_store(10_000).await;
    let files = upload(&app, &root, &[file("a.bin", &opaque_bytes(100, 1))]).await;
    let id = id_of(&files[0]);
    let routes = [
        (
            "can-create-files",
            Call::Form(
                "/files/upload".into(),
                vec![file("new.bin", &opaque_bytes(10, 2))],
                201,
            ),
        ),
        (
            "can-replace-files",
            Call::Form(
                format!("/files/{id}/replace"),
                vec![file("r.bin", &opaque_bytes(20, 3))],
                200,
            ),
        ),
        (
            "can-copy-files",
            Call::Json(
                Method::POST,
                format!("/files/{id}/copy"),
                Some(json!({})),
                201,
            ),
        ),
        (
            "can-download-files",
            Call::Json(Method::GET, format!("/files/{id}/download"), None, 200),
        ),
        (
            "can-download-files",
            Call::Json(Method::HEAD, format!("/files/{id}/download"), None, 200),
        ),
    ];
    let rows_before = file_rows(&app).await;
    for (i, (permission, route)) in routes.iter().enumerate() {
        let anonymous = call(&app, route, None).await;
        assert_eq!(anonymous.status, 401, "{permission} anonymous");
        if !anonymous.body.is_empty() {
            assert_eq!(anonymous.json(), json!({"message": "Unauthenticated."}));
        }
        let others: Vec<&str> = FILE_PERMISSIONS
            .iter()
            .copied()
            .filter(|p| p != permission)
            .collect();
        let denied = session_with(&app, &format!("denied{i}"), &others).await;
        let res = call(&app, route, Some(&denied)).await;
        assert_eq!(res.status, 403, "{permission} without it");
        if !res.body.is_empty() {
            assert_eq!(res.json(), json!({"message": "Forbidden."}));
        }
    }
    assert_eq!(file_rows(&app).await, rows_before, "refusals write nothing");
    for (i, (permission, route)) in routes.iter().enumerate() {
        let allowed = session_with(&app, &format!("allowed{i}"), &[permission]).await;
        let res = call(&app, route, Some(&allowed)).await;
        let expected = match route {
            Call::Form(.., status) | Call::Json(.., status) => *status,
        };
        assert_eq!(
            res.status,
            expected,
            "{permission}: {}",
            String::from_utf8_lossy(&res.body)
        );
    }
    // One upload and one copy were allowed.
    assert_eq!(file_rows(&app).await, rows_before + 2);
}

#[actix_web::test]
async fn unknown_deleted_and_folder_targets() {
    let (app, _, root) = app_with_store(10_000).await;
    let dir = folder(&app, None, "Docs", None).await;
    let files = upload(&app, &root, &[file("gone.bin", &opaque_bytes(50, 4))]).await;
    let gone = id_of(&files[0]);
    vellum_storage::files::soft_delete_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Delete),
        gone,
    )
    .await
    .unwrap();
    let new_bytes = [file("x.bin", &opaque_bytes(10, 5))];
    for id in ["999999", "abc", "0", &gone.to_string()] {
        let res = send_form(
            &app,
            &format!("/files/{id}/replace"),
            Some(&root),
            &new_bytes,
        )
        .await;
        assert_eq!(res.status, 404, "replace {id}");
        let (status, _) = send(
            &app,
            Method::POST,
            &format!("/files/{id}/copy"),
            &root,
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 404, "copy {id}");
        let (status, _) = send(
            &app,
            Method::GET,
            &format!("/files/{id}/download"),
            &root,
            None,
        )
        .await;
        assert_eq!(status, 404, "download {id}");
    }
    let res = send_form(
        &app,
        &format!("/files/{dir}/replace"),
        Some(&root),
        &new_bytes,
    )
    .await;
    assert_eq!(res.status, 422);
    assert_eq!(error_fields(&res.json()), ["file"]);
    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{dir}/copy"),
        &root,
        Some(json!({})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_fields(&body), ["file"]);
    let (status, _) = send(
        &app,
        Method::GET,
        &format!("/files/{dir}/download"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 404, "a folder has nothing to download");
}

// ---------------------------------------------------------------------------------------------
// POST /files/upload

#[actix_web::test]
async fn many_files_upload_at_once_into_a_folder_with_sniffed_types() {
    let (app, store, root) = app_with_store(1_000_000).await;
    let dir = folder(&app, None, "Media", None).await;
    let image = png(40, 30);
    let files = upload(
        &app,
        &root,
        &[
            file("photo.png", &image),
            Part::text("parent_id", &dir.to_string()),
            // The client's type is never trusted: markup is labelled as what a browser makes of it.
            Part::file("notes.txt", "text/plain", b"<svg onload=alert(1)>"),
            Part::file("../../etc/page.txt", "image/png", b"<html><p>hi"),
            file("data.bin", &opaque_bytes(3000, 6)),
        ],
    )
    .await;
    let summary: Vec<(String, String, Value)> = files
        .iter()
        .map(|f| {
            (
                f["filename"].as_str().unwrap().to_owned(),
                f["mime_type"].as_str().unwrap().to_owned(),
                f["parent_id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("photo.png".to_owned(), "image/png".to_owned(), json!(dir)),
            (
                "notes.txt".to_owned(),
                "image/svg+xml".to_owned(),
                json!(dir)
            ),
            ("page.txt".to_owned(), "text/html".to_owned(), json!(dir)),
            (
                "data.bin".to_owned(),
                "application/octet-stream".to_owned(),
                json!(dir)
            ),
        ]
    );
    assert_eq!(files[0]["width"], 40);
    assert_eq!(files[0]["height"], 30);
    assert_eq!(files[3]["filesize"], 3000);
    // The public API sees them at once, with their bytes.
    let listed = app
        .get(&format!("/api/v1/files?parent_id={dir}"))
        .await
        .json();
    assert_eq!(listed["meta"]["total"], 4, "{listed}");
    let content = app
        .get(&format!("/api/v1/files/{}/content", id_of(&files[0])))
        .await;
    assert_eq!(content.body, image);
    // One content object per file, no staging left.
    assert_eq!(objects(&store).await.len(), 4);
    assert!(
        objects(&store)
            .await
            .iter()
            .all(|k| k.starts_with("sha256/"))
    );
    let log = file_activity(&app, &root).await;
    let mut uploaded: Vec<String> = log
        .iter()
        .filter(|(event, ..)| event == "uploaded")
        .map(|(_, id, _)| id.clone())
        .collect();
    uploaded.sort();
    let mut ids: Vec<String> = files.iter().map(|f| id_of(f).to_string()).collect();
    ids.sort();
    assert_eq!(uploaded, ids);
}

#[actix_web::test]
async fn a_file_over_the_cap_refuses_the_whole_upload_and_leaves_nothing() {
    let (app, store, root) = app_with_store(1000).await;
    // Bytes another file already has: their blob must survive the refused batch.
    let kept = opaque_bytes(600, 7);
    upload(&app, &root, &[file("kept.bin", &kept)]).await;
    let before = objects(&store).await;
    let rows = file_rows(&app).await;
    for parts in [
        vec![
            file("first.bin", &opaque_bytes(500, 8)),
            file("big one.bin", &opaque_bytes(1001, 9)),
            file("third.bin", &opaque_bytes(10, 10)),
        ],
        vec![
            file("again.bin", &kept),
            file("fine.bin", &opaque_bytes(1000, 11)),
            file("huge.bin", &opaque_bytes(300_000, 12)),
        ],
    ] {
        let res = send_form(&app, "/files/upload", Some(&root), &parts).await;
        assert_eq!(res.status, 422, "{}", String::from_utf8_lossy(&res.body));
        let body = res.json();
        let over = parts.iter().position(|p| p.bytes.len() > 1000).unwrap();
        assert_eq!(error_fields(&body), [format!("file.{over}")]);
        let name = parts[over].filename.clone().unwrap();
        let message = body["errors"][format!("file.{over}")][0].as_str().unwrap();
        assert!(
            message.contains(&format!("{name:?}")) && message.contains("1000 bytes"),
            "{message}"
        );
        assert_eq!(file_rows(&app).await, rows, "no row written");
        assert_eq!(
            objects(&store).await,
            before,
            "no blob, no staged copy left"
        );
    }
    // Exactly the cap is fine.
    let ok = upload(&app, &root, &[file("cap.bin", &opaque_bytes(1000, 13))]).await;
    assert_eq!(ok[0]["filesize"], 1000);
}

#[actix_web::test]
async fn a_parent_that_is_not_a_live_folder_leaves_nothing_behind() {
    let (app, store, root) = app_with_store(100_000).await;
    let files = upload(&app, &root, &[file("plain.bin", &opaque_bytes(10, 14))]).await;
    let not_folder = id_of(&files[0]);
    let before = objects(&store).await;
    let rows = file_rows(&app).await;
    for parent in ["999999".to_owned(), not_folder.to_string(), "-3".to_owned()] {
        let res = send_form(
            &app,
            "/files/upload",
            Some(&root),
            &[
                file("a.bin", &opaque_bytes(2000, 15)),
                file("b.bin", &opaque_bytes(3000, 16)),
                Part::text("parent_id", &parent),
            ],
        )
        .await;
        assert_eq!(res.status, 422, "parent {parent}");
        assert_eq!(error_fields(&res.json()), ["parent_id"], "parent {parent}");
        assert_eq!(file_rows(&app).await, rows);
        // The blobs were published before the rows failed: they are gone again.
        assert_eq!(objects(&store).await, before, "parent {parent}");
    }
}

#[actix_web::test]
async fn an_upload_needs_one_to_a_hundred_files() {
    let (app, store, root) = app_with_store(100_000).await;
    let res = send_form(
        &app,
        "/files/upload",
        Some(&root),
        &[Part::text("parent_id", "")],
    )
    .await;
    assert_eq!(res.status, 422);
    assert_eq!(error_fields(&res.json()), ["file"]);

    let parts: Vec<Part> = (0..101u8)
        .map(|i| file(&format!("f{i}.bin"), &opaque_bytes(5, i)))
        .collect();
    let res = send_form(&app, "/files/upload", Some(&root), &parts).await;
    assert_eq!(res.status, 422);
    let body = res.json();
    assert_eq!(error_fields(&body), ["file"]);
    assert!(body["errors"]["file"][0].as_str().unwrap().contains("100"));
    assert_eq!(file_rows(&app).await, 0);
    assert!(objects(&store).await.is_empty());

    let files = upload(&app, &root, &parts[..100]).await;
    assert_eq!(files.len(), 100);
    assert_eq!(files[99]["filename"], "f99.bin");
}

// ---------------------------------------------------------------------------------------------
// POST /files/{file}/replace

#[actix_web::test]
async fn replace_switches_the_bytes_and_drops_every_derivative_of_the_old_ones() {
    let (app, store, root) = app_with_store(1_000_000).await;
    let old = png(64, 48);
    let new = png(30, 90);
    let files = upload(&app, &root, &[file("cover.png", &old)]).await;
    let id = id_of(&files[0]);
    vellum_storage::files::update_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Update),
        id,
        FilePatch {
            title: Some(Some("Cover".to_owned())),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    app.state.invalidate().await;
    // A derivative of the old bytes, and cached responses of the show and the content.
    let small = app
        .get(&format!("/api/v1/files/{id}/transforms/small"))
        .await;
    assert_eq!(small.status, 200);
    assert_eq!(
        vellum_storage::files::list_transforms(&app.db.conn, &sha256_hex(&old))
            .await
            .unwrap()
            .len(),
        1
    );
    let shown = app.get(&format!("/api/v1/files/{id}")).await.json();
    assert_eq!(shown["data"]["width"], 64);
    let old_objects = objects(&store).await;
    assert_eq!(old_objects.len(), 2, "{old_objects:?}");

    let res = send_form(
        &app,
        &format!("/files/{id}/replace"),
        Some(&root),
        &[file("ignored-name.png", &new)],
    )
    .await;
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let data = res.json()["data"].clone();
    assert_eq!(data["id"], id);
    assert_eq!(data["filename"], "cover.png", "the name is kept");
    assert_eq!(data["title"], "Cover", "metadata is kept");
    assert_eq!(
        (data["width"].clone(), data["height"].clone()),
        (json!(30), json!(90))
    );
    assert_eq!(data["filesize"], new.len());

    // Every reader sees the new bytes at once: the cached show, the content, the transform.
    let shown = app.get(&format!("/api/v1/files/{id}")).await.json();
    assert_eq!(shown["data"]["width"], 30);
    let content = app.get(&format!("/api/v1/files/{id}/content")).await;
    assert_eq!(content.body, new);
    assert_eq!(
        content.header("etag"),
        Some(format!("\"{}\"", sha256_hex(&new)).as_str())
    );
    let small = app
        .get(&format!("/api/v1/files/{id}/transforms/small"))
        .await;
    assert_eq!(small.status, 200);
    assert!(small.header("etag").unwrap().contains(&sha256_hex(&new)));
    let decoded = image::load_from_memory(&small.body).unwrap();
    assert!(
        decoded.height() > decoded.width(),
        "rendered from the new, tall image"
    );
    // The old bytes and their derivative are gone, records included.
    assert!(
        vellum_storage::files::list_transforms(&app.db.conn, &sha256_hex(&old))
            .await
            .unwrap()
            .is_empty()
    );
    let now = objects(&store).await;
    assert!(!now.contains(&blob_key(&old)), "{now:?}");
    assert!(
        now.iter().all(|k| !k.contains(&sha256_hex(&old))),
        "{now:?}"
    );
    assert!(now.contains(&blob_key(&new)));
    assert_eq!(now.len(), 2, "the new blob and its one derivative: {now:?}");

    let log = file_activity(&app, &root).await;
    let (event, subject, properties) = &log[0];
    assert_eq!(
        (event.as_str(), subject.as_str()),
        ("replaced", id.to_string().as_str())
    );
    assert!(
        properties.to_string().contains(&sha256_hex(&new)),
        "{properties}"
    );
}

#[actix_web::test]
async fn replace_keeps_bytes_another_file_shares_and_refuses_without_a_trace() {
    let (app, store, root) = app_with_store(1000).await;
    let shared = opaque_bytes(400, 17);
    let files = upload(
        &app,
        &root,
        &[file("one.bin", &shared), file("two.bin", &shared)],
    )
    .await;
    let (one, two) = (id_of(&files[0]), id_of(&files[1]));
    assert_eq!(
        objects(&store).await,
        [blob_key(&shared)],
        "identical bytes: one blob"
    );

    // Over the cap, no file part, a bad form: the file keeps its bytes and nothing is stored.
    let before = objects(&store).await;
    for parts in [
        vec![file("big.bin", &opaque_bytes(1001, 18))],
        vec![Part::text("name", "x")],
    ] {
        let res = send_form(&app, &format!("/files/{one}/replace"), Some(&root), &parts).await;
        assert_eq!(res.status, 422);
        assert_eq!(error_fields(&res.json()), ["file"]);
        assert_eq!(objects(&store).await, before);
        assert_eq!(
            stored(&app, one).await.content_hash,
            Some(sha256_hex(&shared))
        );
    }

    let fresh = opaque_bytes(300, 19);
    let res = send_form(
        &app,
        &format!("/files/{one}/replace"),
        Some(&root),
        &[file("n.bin", &fresh)],
    )
    .await;
    assert_eq!(res.status, 200);
    // The other file still names the old blob, so it stays.
    assert_eq!(objects(&store).await, {
        let mut keys = vec![blob_key(&shared), blob_key(&fresh)];
        keys.sort();
        keys
    });
    assert_eq!(
        app.get(&format!("/api/v1/files/{two}/content")).await.body,
        shared
    );
    assert_eq!(
        app.get(&format!("/api/v1/files/{one}/content")).await.body,
        fresh
    );
}

/// A replace under concurrent reads of the content: every answer is wholly the old bytes or
/// wholly the new ones, with the ETag of what it carries, and never an error.
#[actix_web::test]
async fn concurrent_reads_during_a_replace_never_mix_old_and_new_bytes() {
    let (app, _, root) = app_over(2_000_000, true).await;
    let old = opaque_bytes(400_000, 20);
    let new = opaque_bytes(500_000, 21);
    let files = upload(&app, &root, &[file("big.bin", &old)]).await;
    let id = id_of(&files[0]);
    let path = format!("/api/v1/files/{id}/content");
    let replaced = Cell::new(false);
    let seen = Cell::new((0, 0));
    let read = || reader(&app, &path, &replaced, (&old, &new), &seen);
    let writer = async {
        // Let the readers finish some reads of the old bytes first (a fixed number of yields
        // was not always enough on a loaded machine).
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while seen.get().0 == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("a reader finished a read of the old bytes");
        let res = send_form(
            &app,
            &format!("/files/{id}/replace"),
            Some(&root),
            &[file("n.bin", &new)],
        )
        .await;
        assert_eq!(res.status, 200);
        replaced.set(true);
    };
    futures_util::join!(read(), read(), read(), read(), writer);
    let (old_seen, new_seen) = seen.get();
    assert!(old_seen > 0, "some reads happened before the replace");
    assert!(new_seen >= 12, "every reader saw the new bytes after it");
}

/// Reads `path` until three reads started after `replaced` was set; checks each answer is one
/// of `(old, new)` whole, with its own ETag, and counts them in `seen`.
async fn reader(
    app: &TestApp,
    path: &str,
    replaced: &Cell<bool>,
    (old, new): (&[u8], &[u8]),
    seen: &Cell<(usize, usize)>,
) {
    let mut after_replace = 0;
    while after_replace < 3 {
        let done = replaced.get();
        let res = app.get(path).await;
        assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
        let etag = res.header("etag").unwrap().to_owned();
        let (o, n) = seen.get();
        if res.body == old {
            assert!(!done, "old bytes after the replace returned");
            assert_eq!(etag, format!("\"{}\"", sha256_hex(old)));
            seen.set((o + 1, n));
        } else {
            assert!(res.body == new, "a mix of old and new bytes");
            assert_eq!(etag, format!("\"{}\"", sha256_hex(new)));
            seen.set((o, n + 1));
        }
        if done {
            after_replace += 1;
        }
    }
}

/// With a shared cache (Redis), another replica's cached responses of the old file go stale
/// at the replace.
#[actix_web::test]
async fn another_replica_stops_answering_the_old_file() {
    let Ok(url) = std::env::var(REDIS_ENV) else {
        return;
    };
    let (app, _, root) = app_with_store(1_000_000).await;
    let files = upload(&app, &root, &[file("a.png", &png(20, 10))]).await;
    let id = id_of(&files[0]);
    let config = HttpConfig {
        base_url: BASE_URL.to_owned(),
        ..HttpConfig::default()
    };
    let (replica, _) = super::replicas(&app, &config, Some(url.trim())).await;
    let path = format!("/api/v1/files/{id}");
    let shown = crate::support::send_to(&replica, TestApp::request(Method::GET, &path)).await;
    assert_eq!(shown.json()["data"]["width"], 20);
    let res = send_form(
        &app,
        &format!("/files/{id}/replace"),
        Some(&root),
        &[file("b.png", &png(33, 10))],
    )
    .await;
    assert_eq!(res.status, 200);
    let shown = crate::support::send_to(&replica, TestApp::request(Method::GET, &path)).await;
    assert_eq!(shown.json()["data"]["width"], 33);
}

// ---------------------------------------------------------------------------------------------
// POST /files/{file}/copy

#[actix_web::test]
async fn a_copy_shares_the_blob_and_takes_the_metadata() {
    let (app, store, root) = app_with_store(100_000).await;
    let dir = folder(&app, None, "Copies", None).await;
    let bytes = opaque_bytes(5000, 22);
    let files = upload(&app, &root, &[file("report.bin", &bytes)]).await;
    let source = id_of(&files[0]);
    vellum_storage::files::update_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Update),
        source,
        FilePatch {
            title: Some(Some("Q3".to_owned())),
            description: Some(Some("Numbers".to_owned())),
            focal_point_x: Some(Some(0.25)),
            access: Some(Some(Visibility::Private)),
            alt_text: Some(Some("A chart".to_owned())),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    vellum_storage::files::tags::add_tags(&app.db.conn, source, &["q3".to_owned()])
        .await
        .unwrap();

    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{source}/copy"),
        &root,
        Some(json!({"parent_id": dir, "filename": "dir/report copy.bin"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let copy = body["data"].clone();
    let copy_id = id_of(&copy);
    assert_ne!(copy_id, source);
    assert_eq!(copy["parent_id"], dir);
    assert_eq!(
        copy["filename"], "report copy.bin",
        "directories are cleaned away"
    );
    assert_eq!(copy["title"], "Q3");
    assert_eq!(copy["description"], "Numbers");
    assert_eq!(copy["focal_point_x"], 0.25);
    assert_eq!(copy["access"], "private");
    assert_eq!(copy["alt_text"], "A chart");
    assert_eq!(copy["tags"], json!(["q3"]), "tags go with the copy");
    assert_eq!(copy["filesize"], 5000);
    let (a, b) = (stored(&app, source).await, stored(&app, copy_id).await);
    assert_eq!(a.storage_key, b.storage_key);
    assert_eq!(
        objects(&store).await,
        [blob_key(&bytes)],
        "the bytes are stored once"
    );

    // Without a body the copy lands next to the source, under the same name.
    let (status, body) = send(
        &app,
        Method::POST,
        &format!("/files/{source}/copy"),
        &root,
        None,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["parent_id"], Value::Null);
    assert_eq!(body["data"]["filename"], "report.bin");
    // Replacing the source leaves the copies' bytes alone.
    let res = send_form(
        &app,
        &format!("/files/{source}/replace"),
        Some(&root),
        &[file("x", &opaque_bytes(10, 23))],
    )
    .await;
    assert_eq!(res.status, 200);
    assert!(objects(&store).await.contains(&blob_key(&bytes)));
    let download = app
        .admin(
            Method::GET,
            &format!("/files/{copy_id}/download"),
            Some(&root),
            None,
        )
        .await;
    assert_eq!(download.status, 200);
    assert_eq!(download.body, bytes);

    let log = file_activity(&app, &root).await;
    assert!(
        log.iter().any(|(event, id, props)| event == "copied"
            && *id == copy_id.to_string()
            && props["source_id"] == source),
        "{log:?}"
    );

    for (body, field) in [
        (json!({"parent_id": 999_999}), "parent_id"),
        (json!({"parent_id": source}), "parent_id"),
        (json!({"parent_id": "x"}), "parent_id"),
        (json!({"filename": "  "}), "filename"),
        (json!({"filename": 5}), "filename"),
        (json!({"filename": "a".repeat(256)}), "filename"),
    ] {
        let (status, res) = send(
            &app,
            Method::POST,
            &format!("/files/{source}/copy"),
            &root,
            Some(body.clone()),
        )
        .await;
        assert_eq!(status, 422, "{body}: {res}");
        assert_eq!(error_fields(&res), [field], "{body}");
    }
}

// ---------------------------------------------------------------------------------------------
// GET /files/{file}/download

#[actix_web::test]
async fn download_is_an_attachment_with_a_safe_name_private_files_included() {
    let (app, _, root) = app_with_store(100_000).await;
    let bytes = b"<html><script>alert(1)</script>".to_vec();
    let files = upload(&app, &root, &[file("résumé.html", &bytes)]).await;
    let id = id_of(&files[0]);
    set_access(&app, id, Some(Visibility::Private)).await;
    assert_ne!(
        app.get(&format!("/api/v1/files/{id}/content")).await.status,
        200,
        "private to the public API"
    );
    let path = format!("/files/{id}/download");
    let res = app.admin(Method::GET, &path, Some(&root), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.body, bytes);
    assert_eq!(
        res.header("content-disposition"),
        Some("attachment; filename=\"r_sum_.html\"; filename*=UTF-8''r%C3%A9sum%C3%A9.html")
    );
    assert_eq!(res.header("cache-control"), Some("private, no-cache"));
    assert_eq!(res.header("content-security-policy"), Some("sandbox"));
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    let etag = format!("\"{}\"", sha256_hex(&bytes));
    assert_eq!(res.header("etag"), Some(etag.as_str()));

    // Validators and ranges as for the public content; HEAD without the bytes.
    let res = app
        .send(
            admin_request(Method::GET, &path, Some(&root), None)
                .insert_header(("if-none-match", etag.clone())),
        )
        .await;
    assert_eq!(res.status, 304);
    let res = app
        .send(
            admin_request(Method::GET, &path, Some(&root), None)
                .insert_header(("range", "bytes=0-5")),
        )
        .await;
    assert_eq!(res.status, 206);
    assert_eq!(res.body, &bytes[..6]);
    let head = app.admin(Method::HEAD, &path, Some(&root), None).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header("content-length"),
        Some(bytes.len().to_string().as_str())
    );
    assert!(
        head.header("content-disposition")
            .unwrap()
            .starts_with("attachment;")
    );

    // A download name with quotes, CR LF and path separators cannot break out of the header.
    vellum_storage::files::update_file(
        &app.db.conn,
        &op(vellum_policy::FileAction::Update),
        id,
        FilePatch {
            download_name: Some(Some("rapport \"final\"\r\n../é.pdf".to_owned())),
            ..FilePatch::default()
        },
    )
    .await
    .unwrap();
    let res = app.admin(Method::GET, &path, Some(&root), None).await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.header("content-disposition"),
        Some(
            "attachment; filename=\"rapport _final___..__.pdf\"; \
             filename*=UTF-8''rapport%20%22final%22%0D%0A..%2F%C3%A9.pdf"
        )
    );
}
