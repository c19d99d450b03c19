//! `GET /files/{id}/transforms/{key}`: preset and `size-N` dimensions (never upscaled), the
//! output format, invalid keys, non-images and corrupt images, stored outputs, concurrent first
//! requests, the grant mapping, validators, the focal point and the pixel limit.

use actix_web::http::{Method, StatusCode};
use image::{GenericImageView as _, ImageFormat, Rgb, RgbImage};
use serde_json::json;
use vellum_http::HttpConfig;
use vellum_storage::files::Visibility;

use crate::files::{assert_forbidden, assert_not_found, file_path, folder, id_of, project};
use crate::support::{
    BASE_URL, Part, Response, TestApp, blob_key, encode, jpeg, png, sha256_hex, test_image,
};

fn transform_path(id: i64, key: &str) -> String {
    format!("{}/transforms/{key}", file_path(id))
}

/// Uploads `bytes` (as super-admin) into `parent`; returns the id.
async fn upload_into(app: &TestApp, parent: Option<i64>, filename: &str, bytes: &[u8]) -> i64 {
    id_of(&app.upload_into(parent, filename, bytes).await)
}

/// The format and size of an image response (asserting 200 and a matching Content-Type).
fn decoded(res: &Response, what: &str) -> (ImageFormat, u32, u32) {
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
    );
    let format = image::guess_format(&res.body).unwrap_or_else(|e| panic!("{what}: {e}"));
    let img = image::load_from_memory(&res.body).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        res.header("content-type"),
        Some(format.to_mime_type()),
        "{what}: Content-Type names the format"
    );
    assert_eq!(
        res.header("content-length"),
        Some(res.body.len().to_string().as_str()),
        "{what}"
    );
    let (w, h) = img.dimensions();
    (format, w, h)
}

/// (source size, [(key, expected output size)]).
type Table = [((u32, u32), &'static [(&'static str, (u32, u32))]); 4];

const SIZES: Table = [
    (
        (1600, 1000),
        &[
            ("thumbnail", (200, 200)),
            ("small", (640, 400)),
            ("medium", (1280, 800)),
            ("large", (1600, 1000)),
            ("size-320", (320, 200)),
            ("size-1000", (1000, 625)),
            ("size-4096", (1600, 1000)),
            ("size-1", (1, 1)),
        ],
    ),
    (
        (1000, 1600),
        &[
            ("thumbnail", (200, 200)),
            ("small", (400, 640)),
            ("medium", (800, 1280)),
            ("large", (1000, 1600)),
            ("size-320", (200, 320)),
            ("size-1000", (625, 1000)),
            ("size-4096", (1000, 1600)),
        ],
    ),
    (
        (50, 30),
        &[
            ("thumbnail", (30, 30)),
            ("small", (50, 30)),
            ("medium", (50, 30)),
            ("large", (50, 30)),
            ("size-50", (50, 30)),
            ("size-40", (40, 24)),
            ("size-10", (10, 6)),
            ("size-4096", (50, 30)),
        ],
    ),
    (
        // Wider than a thumbnail but shorter: the square of the smaller side.
        (300, 150),
        &[
            ("thumbnail", (150, 150)),
            ("small", (300, 150)),
            ("size-200", (200, 100)),
        ],
    ),
];

async fn presets_keep_size_rules_and_format(format: ImageFormat) {
    let app = TestApp::new(project()).await;
    for ((w, h), expectations) in SIZES {
        let bytes = encode(&test_image(w, h), format);
        let id = upload_into(&app, None, &format!("src-{w}x{h}"), &bytes).await;
        for (key, (ew, eh)) in expectations {
            let what = format!("{format:?} {w}x{h} {key}");
            let res = app.get(&transform_path(id, key)).await;
            let (out_format, ow, oh) = decoded(&res, &what);
            assert_eq!(out_format, format, "{what}: the source's format");
            assert_eq!((ow, oh), (*ew, *eh), "{what}");
        }
    }
}

#[actix_web::test]
async fn jpeg_presets_fit_never_upscale_and_stay_jpeg() {
    presets_keep_size_rules_and_format(ImageFormat::Jpeg).await;
}

#[actix_web::test]
async fn png_presets_fit_never_upscale_and_stay_png() {
    presets_keep_size_rules_and_format(ImageFormat::Png).await;
}

#[actix_web::test]
async fn gif_and_webp_keep_their_format() {
    let app = TestApp::new(project()).await;
    for format in [ImageFormat::Gif, ImageFormat::WebP] {
        let bytes = encode(&test_image(300, 200), format);
        let id = upload_into(&app, None, "anim", &bytes).await;
        let shown = app.get(&file_path(id)).await.json();
        assert_eq!(shown["data"]["mime_type"], format.to_mime_type());
        for (key, size) in [
            ("size-150", (150, 100)),
            ("thumbnail", (200, 200)),
            ("small", (300, 200)),
        ] {
            let what = format!("{format:?} {key}");
            let (out, w, h) = decoded(&app.get(&transform_path(id, key)).await, &what);
            assert_eq!(out, format, "{what}");
            assert_eq!((w, h), size, "{what}");
        }
    }
}

#[actix_web::test]
async fn every_advertised_transform_url_answers() {
    let app = TestApp::new(project()).await;
    let res = app
        .upload(
            Some("admin-key"),
            &[Part::file("a.jpg", "image/jpeg", &jpeg(700, 500))],
        )
        .await;
    let transforms = res.json()["data"]["transforms"].clone();
    let map = transforms.as_object().unwrap();
    assert_eq!(map.len(), 4);
    for (key, url) in map {
        let path = url.as_str().unwrap().strip_prefix(BASE_URL).unwrap();
        let (format, w, h) = decoded(&app.get_as("viewer-key", path).await, key);
        assert_eq!(format, ImageFormat::Jpeg);
        assert!(w <= 700 && h <= 500, "{key}: {w}x{h}");
    }
}

#[actix_web::test]
async fn invalid_keys_non_images_and_missing_files_are_404() {
    let app = TestApp::new(project()).await;
    let image = upload_into(&app, None, "ok.png", &png(64, 64)).await;
    for key in [
        "size-0",
        "size-4097",
        "size-abc",
        "size-",
        "size--5",
        "size-1.5",
        "size-99999999999999999999",
        "bogus",
        "thumbnail2",
        "original",
    ] {
        assert_not_found(&app.get(&transform_path(image, key)).await, key);
    }
    // Non-images have no transforms, whatever the key.
    let text = upload_into(&app, None, "notes.txt", b"plain words, not pixels").await;
    let html = upload_into(&app, None, "x.png", b"<!DOCTYPE html><html></html>").await;
    let dir = folder(&app, None, "dir", None).await;
    let gone = upload_into(&app, None, "gone.png", &png(8, 8)).await;
    assert_eq!(
        app.delete(Some("admin-key"), &file_path(gone)).await.status,
        StatusCode::NO_CONTENT
    );
    for id in [text, html, dir, gone, 999_999] {
        for key in ["thumbnail", "small", "size-10"] {
            assert_not_found(
                &app.get_as("admin-key", &transform_path(id, key)).await,
                &format!("{id} {key}"),
            );
        }
    }
    assert_not_found(&app.get("/api/v1/files/abc/transforms/small").await, "abc");
}

/// 32-bit CRC of PNG chunks.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffff_u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A PNG signature and a valid IHDR claiming `width` x `height`, then `rest`.
fn png_header(width: u32, height: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut chunk = b"IHDR".to_vec();
    chunk.extend_from_slice(&width.to_be_bytes());
    chunk.extend_from_slice(&height.to_be_bytes());
    chunk.extend_from_slice(&[8, 2, 0, 0, 0]);
    out.extend_from_slice(&13u32.to_be_bytes());
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32(&chunk).to_be_bytes());
    out.extend_from_slice(rest);
    out
}

/// The bytes of `jpeg` up to the end of its SOF0 segment (no Huffman tables, no scan).
fn jpeg_through_sof(jpeg: &[u8]) -> Vec<u8> {
    let sof = jpeg
        .windows(2)
        .position(|w| w == [0xff, 0xc0])
        .expect("a baseline JPEG has SOF0");
    let len = usize::from(u16::from_be_bytes([jpeg[sof + 2], jpeg[sof + 3]]));
    jpeg[..sof + 2 + len].to_vec()
}

#[actix_web::test]
async fn a_corrupt_image_is_a_clean_client_error() {
    let app = TestApp::new(project()).await;
    let garbage: Vec<u8> = (0..4000u32)
        .map(|i| u8::try_from(i % 200).unwrap())
        .collect();
    let mut jfif_then_garbage = vec![
        0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0,
    ];
    jfif_then_garbage.extend_from_slice(&garbage);
    let mut headers_then_garbage = jpeg_through_sof(&jpeg(120, 80));
    headers_then_garbage.extend_from_slice(&garbage);
    let png_then_garbage = png_header(120, 80, &garbage);

    for (name, bytes, mime) in [
        ("jfif.jpg", &jfif_then_garbage, "image/jpeg"),
        ("sof.jpg", &headers_then_garbage, "image/jpeg"),
        ("broken.png", &png_then_garbage, "image/png"),
    ] {
        let id = upload_into(&app, None, name, bytes).await;
        let shown = app.get(&file_path(id)).await.json();
        assert_eq!(
            shown["data"]["mime_type"], mime,
            "{name} sniffs as an image"
        );
        for key in ["small", "thumbnail", "small"] {
            let res = app.get(&transform_path(id, key)).await;
            assert!(
                res.status.is_client_error(),
                "{name} {key}: {} {:?}",
                res.status,
                String::from_utf8_lossy(&res.body)
            );
            let body = res.json();
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}: {body}"
            );
        }
        // The bytes are still served as they are.
        assert_eq!(
            app.get(&format!("{}/content", file_path(id))).await.body,
            *bytes
        );
    }
    // The transform machinery still works afterwards.
    let ok = upload_into(&app, None, "fine.png", &png(30, 20)).await;
    assert_eq!(
        decoded(&app.get(&transform_path(ok, "small")).await, "fine").1,
        30
    );
}

#[actix_web::test]
async fn a_repeated_request_is_served_from_the_stored_output() {
    let app = TestApp::new(project()).await;
    let source = png(800, 500);
    let id = upload_into(&app, None, "cached.png", &source).await;
    let hash = sha256_hex(&source);
    assert_eq!(
        vellum_storage::files::find_transform(&app.db.conn, &hash, "small")
            .await
            .unwrap(),
        None
    );
    let first = app.get(&transform_path(id, "small")).await;
    assert_eq!(decoded(&first, "first").1, 640);
    let stored = vellum_storage::files::find_transform(&app.db.conn, &hash, "small")
        .await
        .unwrap()
        .expect("the output is recorded");
    assert_eq!((stored.width, stored.height), (Some(640), Some(400)));
    assert_eq!(
        stored.filesize,
        Some(i64::try_from(first.body.len()).unwrap())
    );
    assert_eq!(stored.mime_type, "image/png");

    // Without the source bytes, only a stored output can answer.
    app.state.blobs().delete(&blob_key(&source)).await.unwrap();
    let second = app.get(&transform_path(id, "small")).await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(second.body, first.body, "identical bytes");
    assert_eq!(second.header("etag"), first.header("etag"));
}

#[actix_web::test]
async fn concurrent_first_requests_both_succeed_with_identical_bytes() {
    let app = TestApp::new(project()).await;
    let source = jpeg(1600, 1200);
    let id = upload_into(&app, None, "race.jpg", &source).await;
    for key in ["medium", "thumbnail", "size-333"] {
        let path = transform_path(id, key);
        let (a, b) = tokio::join!(
            app.send(TestApp::request(Method::GET, &path)),
            app.send(TestApp::request(Method::GET, &path))
        );
        let da = decoded(&a, key);
        let db = decoded(&b, key);
        assert_eq!(da, db, "{key}");
        assert_eq!(a.body, b.body, "{key}: identical bytes");
        assert_eq!(a.header("etag"), b.header("etag"), "{key}");
    }
    assert!(
        vellum_storage::files::find_transform(&app.db.conn, &sha256_hex(&source), "medium")
            .await
            .unwrap()
            .is_some()
    );
}

#[actix_web::test]
async fn transforms_of_private_files_need_read_private() {
    let app = TestApp::new(project()).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let private = upload_into(&app, Some(vault), "p.png", &png(300, 300)).await;
    let public = upload_into(&app, None, "q.png", &png(300, 300)).await;
    for key in ["viewer-key", "nofiles-key", "creator-key"] {
        assert_forbidden(
            &app.get_as(key, &transform_path(private, "thumbnail")).await,
            key,
        );
    }
    assert_forbidden(
        &app.get(&transform_path(private, "small")).await,
        "anonymous",
    );
    for key in ["private-key", "privonly-key"] {
        let res = app.get_as(key, &transform_path(private, "thumbnail")).await;
        assert_eq!(decoded(&res, key).1, 200);
        let cache = res
            .header("cache-control")
            .unwrap_or_else(|| panic!("{key}: no Cache-Control"));
        assert!(!cache.contains("public"), "{key}: {cache}");
    }
    // Public file: read, and publicly cacheable.
    assert_forbidden(
        &app.get_as("privonly-key", &transform_path(public, "small"))
            .await,
        "privonly",
    );
    let res = app.get(&transform_path(public, "small")).await;
    assert_eq!(decoded(&res, "public").1, 300);
    assert!(
        res.header("cache-control")
            .unwrap_or_default()
            .starts_with("public")
    );

    // A private file whose output is already stored is still refused.
    assert_forbidden(
        &app.get_as("viewer-key", &transform_path(private, "thumbnail"))
            .await,
        "stored",
    );
}

#[actix_web::test]
async fn transforms_carry_etags_and_answer_304() {
    let app = TestApp::new(project()).await;
    let id = upload_into(&app, None, "v.jpg", &jpeg(900, 700)).await;
    let small = app.get(&transform_path(id, "small")).await;
    decoded(&small, "small");
    let etag = small.header("etag").expect("an ETag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(small.header("x-content-type-options") == Some("nosniff"));
    let res = app
        .get_with(
            None,
            &transform_path(id, "small"),
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(res.status, StatusCode::NOT_MODIFIED);
    assert!(res.body.is_empty());
    assert_eq!(res.header("etag"), Some(etag.as_str()));
    // Another key is another representation.
    let medium = app.get(&transform_path(id, "medium")).await;
    assert_ne!(medium.header("etag"), Some(etag.as_str()));
    let res = app
        .get_with(
            None,
            &transform_path(id, "medium"),
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body, medium.body);
    // So is the original.
    let content = app.get(&format!("{}/content", file_path(id))).await;
    assert_ne!(content.header("etag"), Some(etag.as_str()));
}

/// 400x200: the left half red, the right half blue.
fn halves() -> Vec<u8> {
    let img = RgbImage::from_fn(400, 200, |x, _| {
        if x < 200 {
            Rgb([255, 0, 0])
        } else {
            Rgb([0, 0, 255])
        }
    });
    encode(&img, ImageFormat::Png)
}

fn pixel(res: &Response, x: u32, y: u32) -> [u8; 3] {
    let img = image::load_from_memory(&res.body).unwrap().to_rgb8();
    img.get_pixel(x, y).0
}

#[actix_web::test]
async fn the_thumbnail_crops_around_the_focal_point() {
    let app = TestApp::new(project()).await;
    let id = upload_into(&app, None, "halves.png", &halves()).await;
    let (red, blue) = ([255, 0, 0], [0, 0, 255]);

    let centre = app.get(&transform_path(id, "thumbnail")).await;
    assert_eq!(decoded(&centre, "centre"), (ImageFormat::Png, 200, 200));
    assert_eq!(pixel(&centre, 20, 100), red, "default: centred");
    assert_eq!(pixel(&centre, 180, 100), blue, "default: centred");

    for (x, left, right) in [
        (0.0, red, red),
        (0.25, red, red),
        (1.0, blue, blue),
        (0.5, red, blue),
    ] {
        let res = app
            .json(
                Method::PATCH,
                Some("admin-key"),
                &file_path(id),
                json!({"focal_point_x": x, "focal_point_y": 0.5}),
            )
            .await;
        assert_eq!(res.status, StatusCode::OK);
        let res = app.get(&transform_path(id, "thumbnail")).await;
        assert_eq!(
            decoded(&res, &format!("focal {x}")),
            (ImageFormat::Png, 200, 200)
        );
        assert_eq!(pixel(&res, 20, 100), left, "focal x {x}");
        assert_eq!(pixel(&res, 180, 100), right, "focal x {x}");
        if (x - 0.5_f64).abs() > f64::EPSILON {
            assert_ne!(
                res.header("etag"),
                centre.header("etag"),
                "focal {x}: another representation"
            );
        }
    }
    // The focal point does not matter to the fitting presets.
    let res = app.get(&transform_path(id, "size-100")).await;
    assert_eq!(decoded(&res, "size-100"), (ImageFormat::Png, 100, 50));
    assert_eq!(pixel(&res, 10, 25), red);
    assert_eq!(pixel(&res, 90, 25), blue);
}

#[actix_web::test]
async fn an_image_over_the_pixel_limit_is_422() {
    let app = TestApp::with_config(
        project(),
        HttpConfig {
            max_image_pixels: 1000,
            ..HttpConfig::default()
        },
    )
    .await;
    let big = upload_into(&app, None, "big.png", &png(100, 100)).await;
    let res = app.get(&transform_path(big, "small")).await;
    assert_eq!(
        res.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        String::from_utf8_lossy(&res.body)
    );
    let body = res.json();
    assert_eq!(body["message"], "The given data was invalid.");
    assert!(
        body["errors"].as_object().is_some_and(|e| !e.is_empty()),
        "{body}"
    );
    // 30x30 = 900 pixels is within the limit.
    let small = upload_into(&app, None, "small.png", &png(30, 30)).await;
    assert_eq!(
        decoded(&app.get(&transform_path(small, "thumbnail")).await, "30x30").1,
        30
    );
}

#[actix_web::test]
async fn a_decompression_bomb_is_refused_before_decoding() {
    let app = TestApp::new(project()).await;
    // A few hundred bytes that claim 100000 x 100000 pixels (far above the default limit).
    let bomb = png_header(100_000, 100_000, &[0u8; 256]);
    let id = upload_into(&app, None, "bomb.png", &bomb).await;
    let shown = app.get(&file_path(id)).await.json();
    assert_eq!(
        (
            shown["data"]["width"].clone(),
            shown["data"]["height"].clone()
        ),
        (json!(100_000), json!(100_000))
    );
    for key in ["small", "thumbnail"] {
        let res = app.get(&transform_path(id, key)).await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{key}: {:?}",
            String::from_utf8_lossy(&res.body)
        );
        assert_eq!(res.json()["message"], "The given data was invalid.");
    }
}

/// Issue 27 (R2): every fit key whose box holds the whole image (all `size-N` at or above its
/// longer side, and presets larger than it) is one stored output, not one per key.
#[actix_web::test]
async fn keys_at_or_above_the_source_size_share_one_stored_output() {
    let app = TestApp::new(project()).await;
    let source = png(120, 80);
    let id = upload_into(&app, None, "small.png", &source).await;
    let mut bodies = Vec::new();
    for key in [
        "size-120",
        "size-121",
        "size-4096",
        "small",
        "medium",
        "large",
    ] {
        let res = app.get(&transform_path(id, key)).await;
        assert_eq!(decoded(&res, key), (ImageFormat::Png, 120, 80), "{key}");
        bodies.push(res.body.clone());
    }
    for n in 500..600 {
        let res = app.get(&transform_path(id, &format!("size-{n}"))).await;
        assert_eq!(res.status, StatusCode::OK, "size-{n}");
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    let stored = vellum_storage::files::list_transforms(&app.db.conn, &sha256_hex(&source))
        .await
        .unwrap();
    let keys: Vec<&str> = stored.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["size-120"]);
    // A key below the source size is its own output.
    let res = app.get(&transform_path(id, "size-60")).await;
    assert_eq!(decoded(&res, "size-60"), (ImageFormat::Png, 60, 40));
}

/// Issue 27 (R2): the outputs of one original are capped in bytes; past the cap the least
/// recently used are evicted, row and blob together, and render again on demand.
#[actix_web::test]
async fn stored_outputs_of_one_original_stay_under_the_byte_cap() {
    let config = HttpConfig {
        derivative_cap: vellum_storage::files::DerivativeCap {
            factor: 0,
            floor_bytes: 3_000,
        },
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(project(), config).await;
    let source = encode(&test_image(300, 200), ImageFormat::Png);
    let hash = sha256_hex(&source);
    let id = upload_into(&app, None, "noisy.png", &source).await;
    let mut largest = 0;
    for n in (20..=200).step_by(20) {
        let res = app.get(&transform_path(id, &format!("size-{n}"))).await;
        assert_eq!(res.status, StatusCode::OK, "size-{n}");
        largest = largest.max(res.body.len());
        let stored = vellum_storage::files::list_transforms(&app.db.conn, &hash)
            .await
            .unwrap();
        let total: i64 = stored.iter().filter_map(|t| t.filesize).sum();
        let total = usize::try_from(total).unwrap();
        assert!(
            total <= 3_000 + largest,
            "size-{n}: {total} bytes stored in {} outputs",
            stored.len()
        );
        // Every stored row has its blob; every evicted blob is gone.
        for t in &stored {
            assert!(
                app.state
                    .blobs()
                    .head(&t.storage_key)
                    .await
                    .unwrap()
                    .is_some()
            );
        }
    }
    let first = format!("derived/{hash}/size-20");
    assert!(
        app.state.blobs().head(&first).await.unwrap().is_none(),
        "the least recently used output was evicted with its blob"
    );
    let again = app.get(&transform_path(id, "size-20")).await;
    assert_eq!(decoded(&again, "size-20 again").1, 20);
}

/// HEAD of a transform answers the GET's status and headers without the bytes. On a transform
/// not stored yet it computes and stores it, as the GET would: its length and type are the
/// output's, so there is no cheaper honest answer (issue 18).
#[actix_web::test]
async fn head_of_a_transform_answers_the_get_headers_without_the_bytes() {
    let app = TestApp::new(project()).await;
    let source = png(800, 500);
    let id = upload_into(&app, None, "head.png", &source).await;
    let hash = sha256_hex(&source);
    let head = |path: String| {
        let app = &app;
        async move { app.send(TestApp::request(Method::HEAD, &path)).await }
    };
    let cold = head(transform_path(id, "small")).await;
    assert_eq!(cold.status, StatusCode::OK);
    assert!(cold.body.is_empty());
    let stored = vellum_storage::files::find_transform(&app.db.conn, &hash, "small")
        .await
        .unwrap()
        .expect("HEAD stored the output");
    let get = app.get(&transform_path(id, "small")).await;
    assert_eq!(decoded(&get, "after HEAD").1, 640);
    assert_eq!(
        stored.filesize,
        Some(i64::try_from(get.body.len()).unwrap())
    );
    for name in [
        "content-length",
        "content-type",
        "etag",
        "cache-control",
        "last-modified",
    ] {
        assert!(get.header(name).is_some(), "{name}");
        assert_eq!(cold.header(name), get.header(name), "{name}");
    }
    let warm = head(transform_path(id, "small")).await;
    assert_eq!(warm.status, StatusCode::OK);
    assert_eq!(warm.header("etag"), get.header("etag"));
    // Errors as the GET answers them.
    assert_eq!(
        head(transform_path(id, "size-0")).await.status,
        app.get(&transform_path(id, "size-0")).await.status
    );
    assert_not_found(
        &head(transform_path(999_999, "small")).await,
        "HEAD, no file",
    );
}
