//! `GET /files/{id}/content`: the original bytes, their headers (`Content-Type`,
//! `Content-Length`, `ETag`, `Cache-Control`, `Last-Modified`, `Content-Disposition`),
//! `If-None-Match`, `Range`, active content never served inline, and the grant mapping.

use std::str::FromStr as _;

use actix_web::http::header::HttpDate;
use actix_web::http::{Method, StatusCode};
use serde_json::json;
use vellum_storage::files::Visibility;

use crate::files::{
    assert_forbidden, assert_not_found, file_path, folder, id_of, opaque_bytes, project, set_access,
};
use crate::support::{Part, Response, TestApp, png, sha256_hex};

fn content_path(id: i64) -> String {
    format!("{}/content", file_path(id))
}

/// Uploads `bytes` as `filename` into `parent` (as super-admin) and returns the new id.
async fn upload_into(app: &TestApp, parent: Option<i64>, filename: &str, bytes: &[u8]) -> i64 {
    id_of(&app.upload_into(parent, filename, bytes).await)
}

fn assert_ok(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
}

#[actix_web::test]
async fn content_is_the_original_bytes_with_type_length_and_validators() {
    let app = TestApp::new(project()).await;
    let image = png(300, 200);
    let opaque = opaque_bytes(4321, 1);
    // Larger than one 5 MiB blob part, so the stream crosses part boundaries.
    let big = opaque_bytes(6 * 1024 * 1024 + 17, 2);
    for (bytes, filename, mime) in [
        (&image, "pic.png", "image/png"),
        (&opaque, "data.bin", "application/octet-stream"),
        (&big, "big.bin", "application/octet-stream"),
    ] {
        let id = upload_into(&app, None, filename, bytes).await;
        for key in [None, Some("viewer-key")] {
            let res = app.get_with(key, &content_path(id), &[]).await;
            assert_ok(&res, filename);
            assert_eq!(res.body.len(), bytes.len(), "{filename}");
            assert_eq!(
                sha256_hex(&res.body),
                sha256_hex(bytes),
                "{filename}: identical bytes"
            );
            assert_eq!(res.header("content-type"), Some(mime), "{filename}");
            assert_eq!(
                res.header("content-length"),
                Some(bytes.len().to_string().as_str()),
                "{filename}"
            );
            let etag = res
                .header("etag")
                .unwrap_or_else(|| panic!("{filename}: no ETag"));
            assert!(
                etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"'),
                "{filename}: a strong, quoted ETag: {etag}"
            );
            let cache = res.header("cache-control").unwrap_or_default();
            assert!(cache.starts_with("public"), "{filename}: {cache}");
            let modified = res
                .header("last-modified")
                .unwrap_or_else(|| panic!("{filename}: no Last-Modified"));
            HttpDate::from_str(modified).unwrap_or_else(|e| panic!("{modified}: {e}"));
            assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
            assert_eq!(res.header("accept-ranges"), Some("bytes"));
            assert_eq!(res.header("content-range"), None);
            assert!(
                !res.header("content-disposition")
                    .unwrap_or_default()
                    .contains("filename"),
                "{filename}: no download name without download_name"
            );
        }
    }
}

#[actix_web::test]
async fn private_content_is_never_publicly_cacheable() {
    let app = TestApp::new(project()).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let bytes = png(10, 10);
    let id = upload_into(&app, Some(vault), "p.png", &bytes).await;
    for key in ["private-key", "privonly-key", "admin-key"] {
        let res = app.get_as(key, &content_path(id)).await;
        assert_ok(&res, key);
        assert_eq!(res.body, bytes);
        let cache = res
            .header("cache-control")
            .unwrap_or_else(|| panic!("{key}: no Cache-Control"));
        assert!(!cache.contains("public"), "{key}: {cache}");
        // A 304 is no more cacheable than the 200.
        let etag = res.header("etag").unwrap().to_owned();
        let res = app
            .get_with(Some(key), &content_path(id), &[("if-none-match", &etag)])
            .await;
        assert_eq!(res.status, StatusCode::NOT_MODIFIED);
        assert!(
            !res.header("cache-control")
                .unwrap_or_default()
                .contains("public")
        );
    }
    // Once its folder is public, so is the file's cache policy.
    set_access(&app, vault, Some(Visibility::Public)).await;
    let res = app.get(&content_path(id)).await;
    assert_ok(&res, "public now");
    assert!(
        res.header("cache-control")
            .unwrap_or_default()
            .starts_with("public")
    );
}

#[actix_web::test]
async fn if_none_match_with_the_etag_is_304_with_an_empty_body() {
    let app = TestApp::new(project()).await;
    let bytes = png(50, 40);
    let id = upload_into(&app, None, "e.png", &bytes).await;
    let first = app.get(&content_path(id)).await;
    assert_ok(&first, "first");
    let etag = first.header("etag").unwrap().to_owned();
    for header in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
        "*".to_owned(),
    ] {
        let res = app
            .get_with(None, &content_path(id), &[("if-none-match", &header)])
            .await;
        assert_eq!(
            res.status,
            StatusCode::NOT_MODIFIED,
            "If-None-Match: {header}"
        );
        assert!(res.body.is_empty(), "{header}: {:?}", res.body);
        assert_eq!(res.header("etag"), Some(etag.as_str()), "{header}");
    }
    let res = app
        .get_with(
            None,
            &content_path(id),
            &[("if-none-match", "\"something-else\"")],
        )
        .await;
    assert_ok(&res, "other etag");
    assert_eq!(res.body, bytes);
    // Other content has another validator, which does not match.
    let other = upload_into(&app, None, "other.png", &png(51, 40)).await;
    let res = app.get(&content_path(other)).await;
    assert_ne!(res.header("etag"), Some(etag.as_str()));
    let res = app
        .get_with(None, &content_path(other), &[("if-none-match", &etag)])
        .await;
    assert_ok(&res, "another file's etag");
}

#[actix_web::test]
async fn ranges_are_honoured() {
    let app = TestApp::new(project()).await;
    let bytes = opaque_bytes(1000, 3);
    let size = bytes.len();
    let id = upload_into(&app, None, "r.bin", &bytes).await;
    for (range, start, end) in [
        ("bytes=0-9", 0, 9),
        ("bytes=-5", size - 5, size - 1),
        ("bytes=990-", 990, size - 1),
        ("bytes=5-5", 5, 5),
        ("bytes=900-5000", 900, size - 1),
        ("bytes=-5000", 0, size - 1),
    ] {
        let res = app
            .get_with(None, &content_path(id), &[("range", range)])
            .await;
        assert_eq!(
            res.status,
            StatusCode::PARTIAL_CONTENT,
            "{range}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        assert_eq!(
            res.header("content-range"),
            Some(format!("bytes {start}-{end}/{size}").as_str()),
            "{range}"
        );
        assert_eq!(res.body, bytes[start..=end], "{range}");
        assert_eq!(
            res.header("content-length"),
            Some((end - start + 1).to_string().as_str()),
            "{range}"
        );
        assert_eq!(res.header("content-type"), Some("application/octet-stream"));
        assert!(res.header("etag").is_some(), "{range}");
    }
    let res = app
        .get_with(None, &content_path(id), &[("range", "bytes=0-9")])
        .await;
    assert_eq!(res.body.len(), 10);

    for range in ["bytes=1000-", "bytes=1000-1005", "bytes=5000-6000"] {
        let res = app
            .get_with(None, &content_path(id), &[("range", range)])
            .await;
        assert_eq!(res.status, StatusCode::RANGE_NOT_SATISFIABLE, "{range}");
        assert_eq!(
            res.header("content-range"),
            Some(format!("bytes */{size}").as_str()),
            "{range}"
        );
    }
    // A Range the server does not understand is ignored: the whole content.
    let res = app
        .get_with(None, &content_path(id), &[("range", "lines=0-9")])
        .await;
    assert_ok(&res, "unknown unit");
    assert_eq!(res.body, bytes);
}

#[actix_web::test]
async fn download_name_makes_an_attachment_of_that_name() {
    let app = TestApp::new(project()).await;
    let id = upload_into(&app, None, "stored-name.png", &png(4, 4)).await;
    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &file_path(id),
            json!({"download_name": "Quarterly Report.png"}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.json());
    let res = app.get(&content_path(id)).await;
    assert_ok(&res, "with download_name");
    let disposition = res.header("content-disposition").unwrap_or_default();
    assert!(
        disposition.starts_with("attachment; filename=\"Quarterly Report.png\""),
        "{disposition}"
    );
    // A ranged response carries it too.
    let res = app
        .get_with(None, &content_path(id), &[("range", "bytes=0-3")])
        .await;
    assert_eq!(res.status, StatusCode::PARTIAL_CONTENT);
    assert!(
        res.header("content-disposition")
            .unwrap_or_default()
            .starts_with("attachment")
    );

    // Non-ASCII names survive (RFC 6266 / 5987) and quotes cannot break out of the parameter.
    for name in ["Bericht-ä.png", "say \"hi\".png"] {
        let res = app
            .json(
                Method::PATCH,
                Some("admin-key"),
                &file_path(id),
                json!({"download_name": name}),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK, "{name}: {:?}", res.json());
        let res = app.get(&content_path(id)).await;
        let disposition = res.header("content-disposition").unwrap_or_default();
        assert!(
            disposition.starts_with("attachment; filename=\""),
            "{name}: {disposition}"
        );
        let plain = disposition
            .trim_start_matches("attachment; filename=\"")
            .split('"')
            .next()
            .unwrap();
        assert!(
            !plain.contains('\\') && plain.is_ascii(),
            "{name}: {disposition}"
        );
    }
    let res = app.get(&content_path(id)).await;
    let disposition = res.header("content-disposition").unwrap_or_default();
    assert_eq!(disposition.matches('"').count(), 2, "{disposition}");

    // Cleared: no attachment for an image any more.
    app.json(
        Method::PATCH,
        Some("admin-key"),
        &file_path(id),
        json!({"download_name": null}),
    )
    .await;
    let res = app.get(&content_path(id)).await;
    assert!(
        !res.header("content-disposition")
            .unwrap_or_default()
            .starts_with("attachment"),
        "{:?}",
        res.header("content-disposition")
    );
}

#[actix_web::test]
async fn html_and_svg_uploads_are_never_served_inline() {
    let app = TestApp::new(project()).await;
    // (file name, the part's claimed Content-Type, bytes): the server sniffs the bytes and
    // ignores both the extension and the claim.
    let cases: [(&str, &str, &[u8]); 11] = [
        ("page.html", "application/octet-stream", b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>"),
        ("lower.htm", "application/octet-stream", b"<html><head></head><body onload=\"alert(1)\">x</body></html>"),
        (
            "icon.svg",
            "application/octet-stream",
            b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"><script>alert(2)</script></svg>",
        ),
        ("bare.svg", "application/octet-stream", b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(3)</script></svg>"),
        // Lying extensions and claimed types.
        ("image.png", "image/png", b"<svg onload=alert(4)>"),
        ("photo.jpg", "text/html", b"<html><script>alert(5)</script></html>"),
        ("photo2.jpg", "image/jpeg", b"<script>alert(6)</script>"),
        ("page.xhtml", "application/xhtml+xml", b"<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><script>alert(7)</script></html>"),
        ("spaced.gif", "image/gif", b"\r\n  \t<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(8)\"/>"),
        ("bom.webp", "image/webp", b"\xEF\xBB\xBF<!doctype html><p onclick=alert(9)>x"),
        ("upper.png", "image/png", b"<SVG ONLOAD=alert(10)></SVG>"),
    ];
    for (filename, client_type, bytes) in cases {
        let res = app
            .upload(
                Some("admin-key"),
                &[Part::file(filename, client_type, bytes)],
            )
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{filename}");
        let file = res.json()["data"].clone();
        let mime = file["mime_type"].as_str().unwrap_or_default().to_owned();
        assert!(
            !mime.starts_with("image/") || mime == "image/svg+xml",
            "{filename} passes for an image: {mime}"
        );
        assert_eq!(file["transforms"], json!({}), "{filename}");
        let id = id_of(&file);
        let res = app.get(&content_path(id)).await;
        assert_ok(&res, filename);
        assert_eq!(res.body, bytes, "{filename}");
        assert_eq!(
            res.header("x-content-type-options"),
            Some("nosniff"),
            "{filename}"
        );
        assert_eq!(
            res.header("content-disposition"),
            Some("attachment"),
            "{filename} ({mime}) would render inline"
        );
        assert_eq!(
            res.header("content-security-policy"),
            Some("sandbox"),
            "{filename} ({mime})"
        );
        let res = app
            .get(&format!("{}/transforms/thumbnail", file_path(id)))
            .await;
        assert_not_found(&res, filename);
    }
}

#[actix_web::test]
async fn content_is_403_and_404_like_show() {
    let app = TestApp::new(project()).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let public = upload_into(&app, None, "pub.png", &png(3, 3)).await;
    let private = upload_into(&app, Some(vault), "priv.png", &png(4, 4)).await;
    let gone = upload_into(&app, None, "gone.png", &png(5, 5)).await;
    assert_eq!(
        app.delete(Some("admin-key"), &file_path(gone)).await.status,
        StatusCode::NO_CONTENT
    );

    for key in ["viewer-key", "nofiles-key", "creator-key"] {
        assert_forbidden(&app.get_as(key, &content_path(private)).await, key);
    }
    assert_forbidden(&app.get(&content_path(private)).await, "anonymous, private");
    for key in ["privonly-key", "nofiles-key", "updater-key"] {
        assert_forbidden(&app.get_as(key, &content_path(public)).await, key);
    }
    for path in [
        content_path(999_999),
        content_path(gone),
        "/api/v1/files/abc/content".to_owned(),
        "/api/v1/files/0/content".to_owned(),
        content_path(vault),
    ] {
        assert_not_found(&app.get_as("admin-key", &path).await, &path);
    }
    // A public folder has no content either.
    let open = folder(&app, None, "open", None).await;
    assert_not_found(
        &app.get_as("viewer-key", &content_path(open)).await,
        "public folder",
    );
}

/// A blob store whose backend is gone (a bucket that does not answer): every operation fails.
#[derive(Debug)]
struct UnreachableBlobs;

fn unreachable(op: &'static str) -> vellum_storage::StorageError {
    vellum_storage::StorageError::Blob {
        op,
        source: object_store::Error::Generic {
            store: "S3",
            source: "connection refused".into(),
        },
    }
}

#[async_trait::async_trait]
impl vellum_storage::blob::BlobStore for UnreachableBlobs {
    async fn stage(
        &self,
        _body: futures_util::stream::BoxStream<'_, Result<bytes::Bytes, std::io::Error>>,
        _limit: Option<u64>,
    ) -> Result<vellum_storage::blob::StagedBlob, vellum_storage::StorageError> {
        Err(unreachable("put"))
    }
    async fn publish(
        &self,
        _staged: &vellum_storage::blob::StagedBlob,
    ) -> Result<(), vellum_storage::StorageError> {
        Err(unreachable("copy"))
    }
    async fn release(&self, _staged: vellum_storage::blob::StagedBlob) {}
    async fn put_bytes(
        &self,
        _key: &str,
        _bytes: bytes::Bytes,
    ) -> Result<(), vellum_storage::StorageError> {
        Err(unreachable("put"))
    }
    async fn get(
        &self,
        _key: &str,
        _range: Option<std::ops::Range<u64>>,
    ) -> Result<vellum_storage::blob::BlobStream, vellum_storage::StorageError> {
        Err(unreachable("get"))
    }
    async fn head(&self, _key: &str) -> Result<Option<u64>, vellum_storage::StorageError> {
        Err(unreachable("head"))
    }
    async fn delete(&self, _key: &str) -> Result<(), vellum_storage::StorageError> {
        Err(unreachable("delete"))
    }
}

/// The blob store failing is a dependency outage: 503 with the envelope, for uploads, content and
/// transforms alike, while metadata (the database) is still served.
#[actix_web::test]
async fn an_unreachable_blob_store_gives_503_and_metadata_still_works() {
    let mut app = TestApp::new(project()).await;
    let id = upload_into(&app, None, "cover.png", &png(40, 30)).await;
    let config = vellum_http::HttpConfig {
        base_url: crate::support::BASE_URL.to_owned(),
        ..vellum_http::HttpConfig::default()
    };
    app.state = vellum_http::AppState::with_blobs(
        app.db.conn.clone(),
        config,
        std::sync::Arc::new(UnreachableBlobs),
    )
    .await
    .unwrap();
    let upload = app
        .upload(
            Some("admin-key"),
            &[Part::file("x.bin", "application/octet-stream", b"bytes")],
        )
        .await;
    let content = app.get_as("admin-key", &content_path(id)).await;
    let transform = app
        .get_as(
            "admin-key",
            &format!("{}/transforms/thumbnail", file_path(id)),
        )
        .await;
    for (what, res) in [
        ("upload", &upload),
        ("content", &content),
        ("transform", &transform),
    ] {
        assert_eq!(res.status, StatusCode::SERVICE_UNAVAILABLE, "{what}");
        assert_eq!(
            res.json(),
            json!({"message": "Service unavailable."}),
            "{what}"
        );
    }
    assert_ok(&app.get_as("admin-key", &file_path(id)).await, "show");
}

/// HEAD of `path` as `key` (None: anonymous) with extra request headers.
async fn head_with(
    app: &TestApp,
    key: Option<&str>,
    path: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut req = TestApp::request(Method::HEAD, path);
    for (name, value) in headers {
        req = req.insert_header(((*name).to_owned(), (*value).to_owned()));
    }
    app.send(app.authed(req, key)).await
}

/// The response's headers but the request id, sorted, for comparing a HEAD with its GET.
fn comparable_headers(res: &Response) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = res
        .headers
        .iter()
        // Per request, not per resource: the id, and what the request cost (timing, and the
        // statements, as the GET and the HEAD may find the answer remembered or not).
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "x-request-id" | "server-timing" | "x-query-count"
            )
        })
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    headers.sort();
    headers
}

/// A HEAD/GET pair: the key, the path, the request headers and the expected status.
type HeadCase<'a> = (Option<&'a str>, String, Vec<(&'a str, &'a str)>, StatusCode);

/// HEAD answers exactly the GET's status and headers (length, type, validators, range,
/// disposition) with no body, for every outcome: 200, 206, 304, 416, 403 and 404 (issue 18).
#[actix_web::test]
async fn head_answers_the_get_status_and_headers_without_the_body() {
    let app = TestApp::new(project()).await;
    let bytes = opaque_bytes(1000, 4);
    let id = upload_into(&app, None, "h.bin", &bytes).await;
    let page = upload_into(&app, None, "page.html", b"<p>hi</p>").await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let private = upload_into(&app, Some(vault), "p.png", &png(4, 4)).await;
    let etag = app
        .get_with(None, &content_path(id), &[])
        .await
        .header("etag")
        .unwrap()
        .to_owned();
    let cases: Vec<HeadCase<'_>> = vec![
        (None, content_path(id), vec![], StatusCode::OK),
        (Some("viewer-key"), content_path(id), vec![], StatusCode::OK),
        (None, content_path(page), vec![], StatusCode::OK),
        (
            None,
            content_path(id),
            vec![("range", "bytes=10-19")],
            StatusCode::PARTIAL_CONTENT,
        ),
        (
            None,
            content_path(id),
            vec![("if-none-match", etag.as_str())],
            StatusCode::NOT_MODIFIED,
        ),
        (
            None,
            content_path(id),
            vec![("range", "bytes=5000-")],
            StatusCode::RANGE_NOT_SATISFIABLE,
        ),
        (None, content_path(private), vec![], StatusCode::FORBIDDEN),
        (
            Some("admin-key"),
            content_path(999_999),
            vec![],
            StatusCode::NOT_FOUND,
        ),
    ];
    for (key, path, headers, status) in cases {
        let what = format!("{path} {headers:?}");
        let get = app.get_with(key, &path, &headers).await;
        let head = head_with(&app, key, &path, &headers).await;
        assert_eq!(get.status, status, "{what}");
        assert_eq!(head.status, status, "{what}");
        assert_eq!(
            comparable_headers(&head),
            comparable_headers(&get),
            "{what}"
        );
        if status == StatusCode::OK || status == StatusCode::PARTIAL_CONTENT {
            assert!(head.body.is_empty(), "{what}: HEAD has no body");
            assert_eq!(
                head.header("content-length"),
                Some(get.body.len().to_string().as_str()),
                "{what}"
            );
        }
    }
    let head = head_with(&app, None, &content_path(id), &[]).await;
    assert_eq!(head.header("content-length"), Some("1000"));
    assert_eq!(
        head.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(head.header("etag"), Some(etag.as_str()));
    let ranged = head_with(&app, None, &content_path(id), &[("range", "bytes=10-19")]).await;
    assert_eq!(ranged.header("content-range"), Some("bytes 10-19/1000"));
    assert_eq!(ranged.header("content-length"), Some("10"));
}
