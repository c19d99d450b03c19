//! `TestApp`: a fresh database configured by a manifest, and one call per request.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use actix_web::http::header::HeaderMap;
use actix_web::http::{Method, StatusCode};
use actix_web::test::{self, TestRequest};
use serde_json::Value;
use vellum_http::cache::RedisBackend;
use vellum_http::{AppState, Backends, HttpConfig, app};
use vellum_storage::testing::TestDb;

/// The `base_url` every test app uses, so tests can compare file URLs exactly.
pub const BASE_URL: &str = "http://cms.test";

/// An app over its own database.
pub struct TestApp {
    pub db: TestDb,
    pub state: AppState,
    /// Secrets of the keys the manifest created, by key name.
    pub keys: BTreeMap<String, String>,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON (panics with the body text when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl TestApp {
    /// A fresh database with `manifest` applied, default configuration.
    pub async fn new(manifest: Value) -> Self {
        Self::with_config(manifest, HttpConfig::default()).await
    }

    /// As [`TestApp::new`] with a given configuration (`base_url` is forced to [`BASE_URL`]).
    pub async fn with_config(manifest: Value, mut config: HttpConfig) -> Self {
        let db = TestDb::new().await.unwrap();
        vellum_storage::seed::seed_system(&db.conn).await.unwrap();
        let report = vellum_manifest::apply(&db.conn, &manifest)
            .await
            .unwrap_or_else(|e| panic!("manifest does not apply: {e}"));
        config.base_url = BASE_URL.to_owned();
        let state = state_for(db.conn.clone(), config).await;
        Self {
            db,
            state,
            keys: report.api_keys,
        }
    }

    /// Applies another manifest to the running app's database, then invalidates its caches as
    /// any admin surface would.
    pub async fn apply(&mut self, manifest: Value) {
        let report = vellum_manifest::apply(&self.db.conn, &manifest)
            .await
            .unwrap_or_else(|e| panic!("manifest does not apply: {e}"));
        self.keys.extend(report.api_keys);
        self.state.invalidate().await;
    }

    /// The secret of key `name` created by a manifest.
    pub fn key(&self, name: &str) -> &str {
        self.keys
            .get(name)
            .unwrap_or_else(|| panic!("no key named {name}"))
    }

    /// Sends `req` (peer address 127.0.0.1 unless the request sets one) to a fresh service over
    /// this app's state.
    pub async fn send(&self, req: TestRequest) -> Response {
        send_to(&self.state, req).await
    }

    /// A request builder with the default peer address.
    pub fn request(method: Method, path: &str) -> TestRequest {
        TestRequest::default()
            .method(method)
            .uri(path)
            .peer_addr(SocketAddr::from(([127, 0, 0, 1], 40000)))
    }

    /// GET as anonymous.
    pub async fn get(&self, path: &str) -> Response {
        self.send(Self::request(Method::GET, path)).await
    }

    /// GET with `Authorization: Bearer <key named key>`.
    pub async fn get_as(&self, key: &str, path: &str) -> Response {
        let secret = self.key(key).to_owned();
        self.send(
            Self::request(Method::GET, path)
                .insert_header(("authorization", format!("Bearer {secret}"))),
        )
        .await
    }

    /// A JSON request as key `key` (None: anonymous).
    pub async fn json(
        &self,
        method: Method,
        key: Option<&str>,
        path: &str,
        body: Value,
    ) -> Response {
        let mut req = Self::request(method, path).set_json(body);
        if let Some(key) = key {
            let secret = self.key(key).to_owned();
            req = req.insert_header(("authorization", format!("Bearer {secret}")));
        }
        self.send(req).await
    }

    /// DELETE as key `key` (None: anonymous).
    pub async fn delete(&self, key: Option<&str>, path: &str) -> Response {
        let mut req = Self::request(Method::DELETE, path);
        if let Some(key) = key {
            let secret = self.key(key).to_owned();
            req = req.insert_header(("authorization", format!("Bearer {secret}")));
        }
        self.send(req).await
    }
}

/// A small project used by many tests: articles (translatable title, status, views, cover image,
/// author, tags, internal notes), authors, tags (seeded in that order, so author Ada is item 1,
/// tags `rust` and `cms` items 2 and 3, the articles 4 and 5); roles `public` (reads published articles,
/// authors), `editor` (writes articles but not internal notes), `reader` grants via key
/// `reader-key`; keys `editor-key`, `admin-key` (super-admin).
pub fn blog() -> Value {
    serde_json::json!({
        "settings": {"content_locales": ["en", "de"], "default_locale": "en"},
        "collections": [
            {"slug": "authors", "name": "Authors", "fields": [
                {"name": "name", "type": "string", "settings": {"required": true}},
                {"name": "email", "type": "string", "settings": {}}
            ]},
            {"slug": "tags", "name": "Tags", "fields": [
                {"name": "label", "type": "string", "settings": {}}
            ]},
            {"slug": "articles", "name": "Articles", "fields": [
                {"name": "title", "type": "string", "translatable": true, "settings": {"required": true}},
                {"name": "status", "type": "select", "settings": {"options": ["draft", "published"]}},
                {"name": "views", "type": "number", "settings": {}},
                {"name": "cover", "type": "image", "settings": {}},
                {"name": "author", "type": "many_to_one", "settings": {"related_collection": "authors"}},
                {"name": "tags", "type": "many_to_many", "settings": {"related_collection": "tags"}},
                {"name": "internal_notes", "type": "textarea", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {
                "articles": {"read": true, "rules": {
                    "fields": {"internal_notes": {"read": false}},
                    "item_filter": {"status": {"_eq": "published"}}
                }},
                "authors": {"read": true}
            }, "file_permissions": {"read": true}},
            {"name": "editor", "collection_permissions": {
                "articles": {"create": true, "read": true, "update": true, "delete": true, "rules": {
                    "fields": {"internal_notes": {"read": false, "create": false, "update": false}}
                }},
                "authors": {"read": true, "create": true},
                "tags": {"read": true}
            }, "file_permissions": {"read": true, "create": true}}
        ],
        "api_keys": [
            {"name": "editor-key", "role": "editor"},
            {"name": "reader-key", "role": "reader"},
            {"name": "admin-key", "role": "super-admin"}
        ],
        "items": {
            "authors": [{"data": {"name": "Ada", "email": "ada@example.com"}}],
            "tags": [{"data": {"label": "rust"}}, {"data": {"label": "cms"}}],
            "articles": [
                {"data": {"title": {"en": "Hello", "de": "Hallo"}, "status": "published", "views": 10, "author": 1, "tags": [2, 3], "internal_notes": "secret"}},
                {"data": {"title": {"en": "Draft"}, "status": "draft", "views": 5, "internal_notes": "wip"}}
            ]
        }
    })
}

/// Sends `req` to a fresh service over `state` (another replica of a [`TestApp`]'s database).
///
/// Every response is checked against the OpenAPI description ([`crate::openapi::check`]).
pub async fn send_to(state: &AppState, req: TestRequest) -> Response {
    let service = test::init_service(app(state.clone())).await;
    let req = req.to_request();
    let (method, path) = (req.method().clone(), req.path().to_owned());
    let res = test::call_service(&service, req).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = test::read_body(res).await.to_vec();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    crate::openapi::check(&method, &path, status, content_type, &body);
    Response {
        status,
        headers,
        body,
    }
}

/// Environment variable naming a Redis server: when set, every test app keeps its response
/// cache and epoch there (in a namespace of its own), as replicas do.
pub const REDIS_ENV: &str = "VELLUM_TEST_REDIS_URL";

/// The readiness body expected from a test app: with `database` as the database check, and a
/// passing Redis check when the apps use Redis.
pub fn ready_body(status: &str, database: &str) -> Value {
    let mut checks = serde_json::json!({"database": database});
    let redis = std::env::var(REDIS_ENV).is_ok_and(|u| !u.trim().is_empty());
    if redis {
        checks["redis"] = "ok".into();
    }
    let postgres =
        std::env::var(vellum_storage::testing::POSTGRES_ENV).is_ok_and(|u| !u.trim().is_empty());
    let realtime = match (redis, postgres) {
        (true, _) => "redis",
        (false, true) => "postgres",
        (false, false) => "local",
    };
    serde_json::json!({"status": status, "checks": checks, "realtime": realtime})
}

/// The app state over `conn`: in-process cache and epoch, or Redis when [`REDIS_ENV`] is set.
async fn state_for(conn: vellum_storage::Database, config: HttpConfig) -> AppState {
    let blobs = std::sync::Arc::new(vellum_storage::blob::ObjectBlobStore::in_memory());
    let backends = match std::env::var(REDIS_ENV) {
        Ok(url) if !url.trim().is_empty() => {
            let namespace = format!("vellum-test-{}:", uuid::Uuid::new_v4());
            let redis = RedisBackend::new(url.trim(), 4)
                .unwrap()
                .with_namespace(&namespace);
            Backends::redis(&config, blobs, redis)
        }
        _ => Backends::local(&config, blobs),
    };
    let state = AppState::with_backends(conn, config, backends)
        .await
        .unwrap();
    // As the server does: a worker when the configuration asks for one (webhook tests).
    vellum_app::jobs::start_worker(&state);
    state
}

/// As [`TestApp::with_config`], but every SQL statement the app's connection runs bumps the
/// returned counter (sea-orm's metric callback, installed before the state is built). Setup
/// done through `app.db.conn` is not counted.
pub async fn with_statement_counter(
    manifest: Value,
    mut config: HttpConfig,
) -> (TestApp, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let db = TestDb::new().await.unwrap();
    vellum_storage::seed::seed_system(&db.conn).await.unwrap();
    let report = vellum_manifest::apply(&db.conn, &manifest)
        .await
        .unwrap_or_else(|e| panic!("manifest does not apply: {e}"));
    let counter = Arc::new(AtomicUsize::new(0));
    let mut conn = db.conn.clone();
    let counted = Arc::clone(&counter);
    conn.on_query(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    config.base_url = BASE_URL.to_owned();
    let state = state_for(conn, config).await;
    let app = TestApp {
        db,
        state,
        keys: report.api_keys,
    };
    (app, counter)
}

/// The boundary of every multipart body [`multipart`] builds.
pub const BOUNDARY: &str = "vellum-test-boundary-7MA4YWxkTrZu0gW";

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

impl Part {
    /// The `file` part, with the file name and content type a client would send.
    pub fn file(filename: &str, content_type: &str, bytes: &[u8]) -> Self {
        Self {
            name: "file".to_owned(),
            filename: Some(filename.to_owned()),
            content_type: Some(content_type.to_owned()),
            bytes: bytes.to_vec(),
        }
    }

    /// A plain text part (`name`, `parent_id`, …).
    pub fn text(name: &str, value: &str) -> Self {
        Self {
            name: name.to_owned(),
            filename: None,
            content_type: None,
            bytes: value.as_bytes().to_vec(),
        }
    }
}

/// A `multipart/form-data` body with [`BOUNDARY`], built by hand.
pub fn multipart(parts: &[Part]) -> Vec<u8> {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(filename) = &part.filename {
            disposition.push_str(&format!("; filename=\"{filename}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(content_type) = &part.content_type {
            body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&part.bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

impl TestApp {
    /// `req` with `Authorization: Bearer <key named key>` (None: unchanged, anonymous).
    pub fn authed(&self, req: TestRequest, key: Option<&str>) -> TestRequest {
        match key {
            Some(key) => {
                let secret = self.key(key).to_owned();
                req.insert_header(("authorization", format!("Bearer {secret}")))
            }
            None => req,
        }
    }

    /// `POST /api/v1/files` with a multipart body of `parts`, as key `key` (None: anonymous).
    pub async fn upload(&self, key: Option<&str>, parts: &[Part]) -> Response {
        let req = Self::request(Method::POST, "/api/v1/files")
            .insert_header((
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            ))
            .set_payload(multipart(parts));
        self.send(self.authed(req, key)).await
    }

    /// Uploads one file as `key` and returns its FileResource (asserting 201).
    pub async fn upload_file(&self, key: Option<&str>, filename: &str, bytes: &[u8]) -> Value {
        let res = self
            .upload(
                key,
                &[Part::file(filename, "application/octet-stream", bytes)],
            )
            .await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "upload of {filename}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        res.json()["data"].clone()
    }

    /// Uploads `bytes` as `filename` into folder `parent` as `admin-key` (super-admin) and
    /// returns the FileResource (asserting 201).
    pub async fn upload_into(&self, parent: Option<i64>, filename: &str, bytes: &[u8]) -> Value {
        let mut parts = vec![Part::file(filename, "application/octet-stream", bytes)];
        if let Some(parent) = parent {
            parts.push(Part::text("parent_id", &parent.to_string()));
        }
        let res = self.upload(Some("admin-key"), &parts).await;
        assert_eq!(
            res.status,
            StatusCode::CREATED,
            "{:?}",
            String::from_utf8_lossy(&res.body)
        );
        res.json()["data"].clone()
    }

    /// GET `path` as `key` (None: anonymous) with extra request headers.
    pub async fn get_with(
        &self,
        key: Option<&str>,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Response {
        let mut req = Self::request(Method::GET, path);
        for (name, value) in headers {
            req = req.insert_header(((*name).to_owned(), (*value).to_owned()));
        }
        self.send(self.authed(req, key)).await
    }
}

/// POST an item as `admin-key` (a super-admin key every fixture that uses this declares);
/// returns the new id, asserting 201.
pub async fn post_item(app: &TestApp, slug: &str, data: Value) -> i64 {
    let res = app
        .json(
            Method::POST,
            Some("admin-key"),
            &format!("/api/v1/collections/{slug}/items"),
            serde_json::json!({ "data": data }),
        )
        .await;
    assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.json());
    res.json()["data"]["id"].as_i64().unwrap()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The content-addressed blob key of `bytes` (`sha256/<first 2 hex>/<full hex>`).
pub fn blob_key(bytes: &[u8]) -> String {
    let hex = sha256_hex(bytes);
    format!("sha256/{}/{hex}", &hex[..2])
}

/// A `width` x `height` RGB image with gradients in every channel (so resizes and crops show).
pub fn test_image(width: u32, height: u32) -> image::RgbImage {
    image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([
            u8::try_from(x * 255 / width.max(1)).unwrap_or(255),
            u8::try_from(y * 255 / height.max(1)).unwrap_or(255),
            u8::try_from((x + y) % 256).unwrap_or(0),
        ])
    })
}

/// `img` encoded as `format`.
pub fn encode(img: &image::RgbImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    match format {
        // GIF and WebP encoders want RGBA.
        image::ImageFormat::Gif | image::ImageFormat::WebP => {
            image::DynamicImage::ImageRgb8(img.clone())
                .to_rgba8()
                .write_to(&mut out, format)
                .unwrap();
        }
        _ => img.write_to(&mut out, format).unwrap(),
    }
    out.into_inner()
}

/// A `width` x `height` PNG.
pub fn png(width: u32, height: u32) -> Vec<u8> {
    encode(&test_image(width, height), image::ImageFormat::Png)
}

/// A `width` x `height` JPEG.
pub fn jpeg(width: u32, height: u32) -> Vec<u8> {
    encode(&test_image(width, height), image::ImageFormat::Jpeg)
}

/// The operator's capability for a file write, for tests that set up files below the HTTP layer.
pub fn op(
    action: vellum_policy::FileAction,
) -> vellum_policy::Authorized<vellum_policy::FileWrite> {
    vellum_policy::Role::super_admin()
        .authorize_file_write(action)
        .unwrap()
}
