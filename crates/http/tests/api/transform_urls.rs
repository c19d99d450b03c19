//! Signed, content-addressed transform URLs (issue 24, opt-in): by default the `transforms`
//! values are exactly the operator contract's URLs and every `size-N` is served; with
//! `VELLUM_SIGNED_TRANSFORMS` on they carry `?v=…&s=…`, current signed URLs are answered
//! `immutable`, forged ones 403, unsigned `size-N` 404, and a signature never replaces the grant.

use actix_web::http::{Method, StatusCode};
use serde_json::{Value, json};
use vellum_app::{SigningKey, TransformUrlsConfig};
use vellum_http::HttpConfig;
use vellum_storage::files::Visibility;

use crate::files::{assert_forbidden, assert_not_found, file_path, folder, id_of, project, urls};
use crate::support::{BASE_URL, Response, TestApp, jpeg, png, send_to};

const IMMUTABLE_PUBLIC: &str = "public, max-age=31536000, immutable";
const IMMUTABLE_PRIVATE: &str = "private, max-age=31536000, immutable";
const NORMAL_PUBLIC: &str = "public, max-age=300";

/// Signing on, with `sizes` advertised and the project's generated key.
fn signing(sizes: &[u32]) -> HttpConfig {
    HttpConfig {
        transform_urls: TransformUrlsConfig {
            signed: true,
            sizes: sizes.to_vec(),
            signing_key: None,
        },
        ..HttpConfig::default()
    }
}

/// Uploads `bytes` as super-admin into `parent`; returns the FileResource.
async fn upload(app: &TestApp, parent: Option<i64>, name: &str, bytes: &[u8]) -> Value {
    app.upload_into(parent, name, bytes).await
}

/// The path (and query) of an absolute `transforms` value.
fn path_of(url: &Value) -> String {
    url.as_str()
        .unwrap_or_else(|| panic!("not a URL: {url}"))
        .strip_prefix(BASE_URL)
        .unwrap_or_else(|| panic!("not under the base URL: {url}"))
        .to_owned()
}

/// The contract URL of transform `key` of file `id`, as a path.
fn plain(id: i64, key: &str) -> String {
    format!("{}/transforms/{key}", file_path(id))
}

/// Asserts a 200 image answer and returns its `Cache-Control`.
fn served(res: &Response, what: &str) -> String {
    assert_eq!(
        res.status,
        StatusCode::OK,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body[..res.body.len().min(300)])
    );
    assert!(
        image::load_from_memory(&res.body).is_ok(),
        "{what}: an image"
    );
    res.header("cache-control")
        .unwrap_or_else(|| panic!("{what}: no Cache-Control"))
        .to_owned()
}

fn assert_invalid_signature(res: &Response, what: &str) {
    assert_eq!(
        res.status,
        StatusCode::FORBIDDEN,
        "{what}: {:?}",
        String::from_utf8_lossy(&res.body)
    );
    assert_eq!(
        res.json(),
        json!({"message": "Invalid signature."}),
        "{what}"
    );
}

/// `(v, s)` of a signed URL, checking their shape: 16 lowercase hex digits, 22 base64url
/// characters, and nothing else in the query.
fn signature_of(url: &Value) -> (String, String) {
    let url = url.as_str().unwrap();
    let (_, query) = url
        .split_once('?')
        .unwrap_or_else(|| panic!("unsigned: {url}"));
    let (v, s) = query
        .strip_prefix("v=")
        .and_then(|rest| rest.split_once("&s="))
        .unwrap_or_else(|| panic!("not ?v=…&s=…: {url}"));
    assert!(
        v.len() == 16
            && v.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{url}"
    );
    assert!(
        s.len() == 22
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{url}"
    );
    (v.to_owned(), s.to_owned())
}

#[actix_web::test]
async fn by_default_the_urls_are_the_contracts_and_every_size_is_served() {
    let app = TestApp::new(project()).await;
    let file = upload(&app, None, "a.jpg", &jpeg(300, 200)).await;
    let id = id_of(&file);
    let (url, transforms) = urls(id, true);
    assert_eq!((&file["url"], &file["transforms"]), (&url, &transforms));
    let shown = app.get(&file_path(id)).await.json();
    assert_eq!(shown["data"]["transforms"], transforms);

    let cache = served(&app.get(&plain(id, "size-37")).await, "size-37");
    assert_eq!(cache, NORMAL_PUBLIC);
    // `v` and `s` mean nothing while signing is off: ignored as any unknown parameter.
    let res = app
        .get(&format!(
            "{}?v=0123456789abcdef&s=forged",
            plain(id, "small")
        ))
        .await;
    assert_eq!(served(&res, "ignored signature"), NORMAL_PUBLIC);
}

#[actix_web::test]
async fn extra_sizes_without_signing_are_plain_urls() {
    let config = HttpConfig {
        transform_urls: TransformUrlsConfig {
            sizes: vec![37, 800],
            ..TransformUrlsConfig::default()
        },
        ..HttpConfig::default()
    };
    let app = TestApp::with_config(project(), config).await;
    let id = id_of(&upload(&app, None, "a.png", &png(120, 80)).await);
    let base = format!("{BASE_URL}/api/v1/files/{id}/transforms");
    let shown = app.get(&file_path(id)).await.json();
    assert_eq!(
        shown["data"]["transforms"],
        json!({
            "thumbnail": format!("{base}/thumbnail"),
            "small": format!("{base}/small"),
            "medium": format!("{base}/medium"),
            "large": format!("{base}/large"),
            "size-37": format!("{base}/size-37"),
            "size-800": format!("{base}/size-800"),
        })
    );
    // Not an image: still no transforms.
    let text = upload(&app, None, "notes.txt", b"plain words").await;
    assert_eq!(text["transforms"], json!({}));
}

#[actix_web::test]
async fn signed_urls_are_immutable_and_forged_ones_refused() {
    let app = TestApp::with_config(project(), signing(&[37])).await;
    let file = upload(&app, None, "a.jpg", &jpeg(700, 500)).await;
    let id = id_of(&file);
    let transforms = file["transforms"].as_object().unwrap().clone();
    let keys: Vec<&str> = transforms.keys().map(String::as_str).collect();
    assert_eq!(keys, ["thumbnail", "small", "medium", "large", "size-37"]);
    for (key, url) in &transforms {
        assert!(
            url.as_str()
                .unwrap()
                .starts_with(&format!("{BASE_URL}{}?", plain(id, key))),
            "{url}"
        );
        signature_of(url);
        // Twice: the second answer comes from the warm path, and is as immutable.
        for round in 0..2 {
            let res = app.get(&path_of(url)).await;
            assert_eq!(served(&res, key), IMMUTABLE_PUBLIC, "{key} {round}");
        }
    }
    // The show and the list render the same signed URLs.
    let shown = app.get(&file_path(id)).await.json();
    assert_eq!(
        shown["data"]["transforms"],
        Value::Object(transforms.clone())
    );

    let (v, s) = signature_of(&transforms["size-37"]);
    let mut tampered = s.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let size = plain(id, "size-37");
    for (query, what) in [
        (format!("v={v}&s={tampered}"), "tampered s"),
        (format!("v={v}"), "v without s"),
        (format!("s={s}"), "s without v"),
        (format!("v={v}&s="), "empty s"),
        (format!("v=0000000000000000&s={s}"), "another v"),
        (format!("v={v}&s={}", "A".repeat(5000)), "a long s"),
        (format!("v={}&s={s}", "f".repeat(5000)), "a long v"),
        (format!("v={v}&s=%C3%A9%00%FF"), "a non-ASCII s"),
        (format!("v={v}&s={}", &s[..21]), "a truncated s"),
    ] {
        assert_invalid_signature(&app.get(&format!("{size}?{query}")).await, what);
    }
    // A signature is for one file and one key.
    assert_invalid_signature(
        &app.get(&format!("{}?v={v}&s={s}", plain(id, "size-38")))
            .await,
        "another key",
    );
    let other = id_of(&upload(&app, None, "b.jpg", &jpeg(700, 500)).await);
    assert_invalid_signature(
        &app.get(&format!("{}?v={v}&s={s}", plain(other, "size-37")))
            .await,
        "another file",
    );

    // Unsigned: the presets as before, no `size-N` at all (advertised or not).
    let cache = served(&app.get(&plain(id, "small")).await, "unsigned small");
    assert_eq!(cache, NORMAL_PUBLIC);
    for key in ["size-37", "size-38", "size-4096"] {
        assert_not_found(&app.get(&plain(id, key)).await, key);
    }
    // HEAD answers the GET's headers.
    let head = app
        .send(TestApp::request(
            Method::HEAD,
            &path_of(&transforms["size-37"]),
        ))
        .await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.header("cache-control"), Some(IMMUTABLE_PUBLIC));
}

#[actix_web::test]
async fn a_focal_point_edit_changes_the_thumbnail_url_and_retires_the_old_one() {
    let app = TestApp::with_config(project(), signing(&[])).await;
    let before = upload(&app, None, "a.png", &png(400, 200)).await;
    let id = id_of(&before);
    let old_thumbnail = before["transforms"]["thumbnail"].clone();
    assert_eq!(
        served(&app.get(&path_of(&old_thumbnail)).await, "before"),
        IMMUTABLE_PUBLIC
    );

    let res = app
        .json(
            Method::PATCH,
            Some("admin-key"),
            &file_path(id),
            json!({"focal_point_x": 0.1, "focal_point_y": 0.5}),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
    let after = res.json()["data"]["transforms"].clone();
    assert_ne!(after["thumbnail"], old_thumbnail, "a new thumbnail URL");
    assert_ne!(
        signature_of(&after["thumbnail"]).0,
        signature_of(&old_thumbnail).0
    );
    // The fit presets do not depend on the focal point: their URLs (and CDN entries) stay.
    for key in ["small", "medium", "large"] {
        assert_eq!(after[key], before["transforms"][key], "{key}");
    }

    // The old URL still answers (its signature is the server's), with the current crop and the
    // ordinary Cache-Control: what it names is gone.
    let old = app.get(&path_of(&old_thumbnail)).await;
    assert_eq!(served(&old, "old URL"), NORMAL_PUBLIC);
    let new = app.get(&path_of(&after["thumbnail"])).await;
    assert_eq!(served(&new, "new URL"), IMMUTABLE_PUBLIC);
    assert_eq!(old.body, new.body, "both serve the current crop");
    assert_eq!(old.header("etag"), new.header("etag"));
    // Warm: the remembered answer keeps telling them apart.
    let old = app.get(&path_of(&old_thumbnail)).await;
    assert_eq!(served(&old, "old URL, warm"), NORMAL_PUBLIC);
}

#[actix_web::test]
async fn a_signed_url_of_a_private_file_still_needs_the_grant() {
    let app = TestApp::with_config(project(), signing(&[64])).await;
    let vault = folder(&app, None, "vault", Some(Visibility::Private)).await;
    let file = upload(&app, Some(vault), "p.png", &png(300, 300)).await;
    let id = id_of(&file);
    for key in ["thumbnail", "size-64"] {
        let path = path_of(&file["transforms"][key]);
        // Before and after the output is stored and remembered.
        for round in 0..2 {
            assert_forbidden(&app.get(&path).await, &format!("anonymous {key} {round}"));
            assert_forbidden(
                &app.get_as("viewer-key", &path).await,
                &format!("viewer {key} {round}"),
            );
            let res = app.get_as("private-key", &path).await;
            assert_eq!(served(&res, key), IMMUTABLE_PRIVATE, "{key} {round}");
        }
    }
    // A missing file is 404 as ever.
    assert_not_found(&app.get(&plain(id + 100, "small")).await, "missing");
}

#[actix_web::test]
async fn replicas_share_the_generated_key_and_a_configured_key_replaces_it() {
    let app = TestApp::with_config(project(), signing(&[])).await;
    let id = id_of(&upload(&app, None, "a.png", &png(50, 50)).await);
    let show = || TestApp::request(Method::GET, &file_path(id));
    let first = app.send(show()).await.json()["data"]["transforms"].clone();

    // Another replica over the same database: the stored key, the same URLs.
    let mut config = signing(&[]);
    config.base_url = BASE_URL.to_owned();
    let replica = vellum_http::AppState::new(app.db.conn.clone(), config.clone())
        .await
        .unwrap();
    let second = send_to(&replica, show()).await.json()["data"]["transforms"].clone();
    assert_eq!(first, second);

    // A configured key signs otherwise.
    config.transform_urls.signing_key = Some(SigningKey::new(vec![7_u8; 32]).unwrap());
    let configured = vellum_http::AppState::new(app.db.conn.clone(), config)
        .await
        .unwrap();
    let third = send_to(&configured, show()).await.json()["data"]["transforms"].clone();
    assert_ne!(first["small"], third["small"]);
    assert_eq!(
        signature_of(&first["small"]).0,
        signature_of(&third["small"]).0,
        "the version names the output, whatever the key"
    );
    // A URL signed with another key is forged here.
    assert_invalid_signature(&app.get(&path_of(&third["small"])).await, "other key");
}
