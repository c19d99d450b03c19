//! Concurrent uploads of identical bytes (review finding R12): uploads are content-addressed, so
//! they share one blob, and neither a failed upload's cleanup nor a racing publish of the same
//! blob may cost another upload its content or answer 503. Every round sends its uploads at once
//! and checks, for every 201, that `/content` gives the bytes back.

use actix_web::http::StatusCode;
use futures_util::future::join_all;
use std::sync::Arc;
use vellum_storage::blob::{BlobStore, ObjectBlobStore};

use crate::files::{file_path, id_of, opaque_bytes, project};
use crate::support::{Part, Response, TestApp, sha256_hex};

/// Rounds of one accepted and two refused uploads: the old check-then-delete lost content in
/// the first round or two of every run; 20 rounds take a fraction of a second.
const ROUNDS: usize = 20;

/// Rounds of identical valid uploads: the old publish answered 503 in about one round in ten
/// on the local disk, so 50 rounds fail it in nearly every run (still under a second).
const VALID_ROUNDS: usize = 50;

/// 200 KB, as in the review's reproduction, unique per round so that every round races for a
/// blob of its own.
fn round_bytes(round: usize) -> Vec<u8> {
    let mut bytes = uuid::Uuid::new_v4().as_bytes().to_vec();
    bytes.extend(opaque_bytes(200_000, u8::try_from(round % 251).unwrap()));
    bytes
}

/// A name over the 255-character limit: the upload is read and stored, then refused (422).
fn too_long_name() -> String {
    format!("{}.bin", "x".repeat(300))
}

/// Where an app under test keeps its blobs.
enum Blobs<'a> {
    /// The local disk: the backend whose directories raced.
    Disk(&'a std::path::Path),
    /// Memory (the default of [`TestApp`]).
    Memory,
    /// A fresh key prefix of the S3-compatible server named by `VELLUM_TEST_S3_ENDPOINT`.
    S3(Arc<dyn object_store::ObjectStore>),
}

/// The S3-compatible test server, when `VELLUM_TEST_S3_ENDPOINT` names one (as in
/// `crates/storage/tests/blob_s3.rs`; the bucket must exist, which `.ci/run` sees to).
fn s3() -> Option<Blobs<'static>> {
    let endpoint = std::env::var("VELLUM_TEST_S3_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())?;
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
    Some(Blobs::S3(Arc::new(store)))
}

/// Every backend the test can reach: disk and memory always, S3 when configured.
fn backends(dir: &std::path::Path) -> Vec<(&'static str, Blobs<'_>)> {
    let mut all = vec![("disk", Blobs::Disk(dir)), ("memory", Blobs::Memory)];
    all.extend(s3().map(|s3| ("s3", s3)));
    all
}

/// An app over a fresh database whose files live in `blobs`.
async fn app_on(blobs: Blobs<'_>) -> TestApp {
    let mut app = TestApp::new(project()).await;
    let blobs: Arc<dyn BlobStore> = match blobs {
        Blobs::Memory => return app,
        Blobs::Disk(dir) => Arc::new(ObjectBlobStore::local(dir).unwrap()),
        Blobs::S3(store) => Arc::new(ObjectBlobStore::new(store)),
    };
    let config = vellum_http::HttpConfig {
        base_url: crate::support::BASE_URL.to_owned(),
        ..vellum_http::HttpConfig::default()
    };
    app.state = vellum_http::AppState::with_blobs(app.db.conn.clone(), config, blobs)
        .await
        .unwrap();
    app
}

/// Sends one upload of `bytes` per name, all at once, and returns the responses in order.
async fn upload_together(app: &TestApp, bytes: &[u8], names: &[String]) -> Vec<Response> {
    upload_into_together(
        app,
        bytes,
        &names.iter().map(|n| (n.as_str(), None)).collect::<Vec<_>>(),
    )
    .await
}

/// Sends one upload of `bytes` per `(name, parent_id)`, all at once.
async fn upload_into_together(
    app: &TestApp,
    bytes: &[u8],
    uploads: &[(&str, Option<&str>)],
) -> Vec<Response> {
    join_all(uploads.iter().map(|(name, parent)| async move {
        let mut parts = vec![Part::file(name, "application/octet-stream", bytes)];
        if let Some(parent) = parent {
            parts.push(Part::text("parent_id", parent));
        }
        app.upload(Some("admin-key"), &parts).await
    }))
    .await
}

/// Every 201 among `responses` serves `bytes` as its content.
async fn assert_created_serve(app: &TestApp, responses: &[Response], bytes: &[u8], what: &str) {
    for res in responses.iter().filter(|r| r.status == StatusCode::CREATED) {
        let id = id_of(&res.json()["data"]);
        let content = app
            .get_as("admin-key", &format!("{}/content", file_path(id)))
            .await;
        assert_eq!(
            content.status,
            StatusCode::OK,
            "{what}: file {id} was acknowledged (201) and lost its content"
        );
        assert!(
            sha256_hex(&content.body) == sha256_hex(bytes),
            "{what}: file {id} serves other bytes"
        );
    }
}

async fn one_valid_two_invalid(app: &TestApp, backend: &str) {
    let names = ["good.bin".to_owned(), too_long_name(), too_long_name()];
    for round in 0..ROUNDS {
        let bytes = round_bytes(round);
        let responses = upload_together(app, &bytes, &names).await;
        let statuses: Vec<StatusCode> = responses.iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [
                StatusCode::CREATED,
                StatusCode::UNPROCESSABLE_ENTITY,
                StatusCode::UNPROCESSABLE_ENTITY
            ],
            "{backend}, round {round}: no 503, and the invalid uploads are refused"
        );
        assert_created_serve(
            app,
            &responses,
            &bytes,
            &format!("{backend}, round {round}"),
        )
        .await;
    }
}

/// Uploads refused only when their row is written (their folder does not exist): these have
/// published the blob, and their cleanup deletes it unless a row names it.
async fn one_valid_two_into_a_missing_folder(app: &TestApp, backend: &str) {
    let uploads = [
        ("good.bin", None),
        ("lost.bin", Some("999999")),
        ("lost.bin", Some("999999")),
    ];
    for round in 0..ROUNDS {
        let bytes = round_bytes(round);
        let responses = upload_into_together(app, &bytes, &uploads).await;
        let statuses: Vec<StatusCode> = responses.iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [
                StatusCode::CREATED,
                StatusCode::UNPROCESSABLE_ENTITY,
                StatusCode::UNPROCESSABLE_ENTITY
            ],
            "{backend}, round {round}"
        );
        assert_created_serve(
            app,
            &responses,
            &bytes,
            &format!("{backend}, round {round}"),
        )
        .await;
    }
}

async fn three_valid(app: &TestApp, backend: &str) {
    let names: Vec<String> = (0..3).map(|i| format!("copy-{i}.bin")).collect();
    for round in 0..VALID_ROUNDS {
        let bytes = round_bytes(round);
        let responses = upload_together(app, &bytes, &names).await;
        for res in &responses {
            assert_eq!(
                res.status,
                StatusCode::CREATED,
                "{backend}, round {round}: {:?}",
                String::from_utf8_lossy(&res.body)
            );
        }
        assert_created_serve(
            app,
            &responses,
            &bytes,
            &format!("{backend}, round {round}"),
        )
        .await;
    }
}

/// The review's reproduction: one valid upload and two refused ones of the same bytes, released
/// together. The refused ones used to delete the shared blob while the valid one was still
/// writing its row: a 201 whose content was 404 for good.
#[actix_web::test]
async fn a_refused_upload_never_takes_the_content_of_an_accepted_one() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, blobs) in backends(dir.path()) {
        one_valid_two_invalid(&app_on(blobs).await, backend).await;
    }
}

/// The same when the refused uploads got as far as their row: their cleanup deletes the shared
/// blob only if no row names it, checked under the lock rows are written under, and a row written
/// just after such a delete puts the blob back.
#[actix_web::test]
async fn an_upload_refused_at_its_row_never_takes_the_content_of_an_accepted_one() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, blobs) in backends(dir.path()) {
        one_valid_two_into_a_missing_folder(&app_on(blobs).await, backend).await;
    }
}

/// Identical valid uploads in parallel all succeed: finding the blob already there, or a
/// directory emptied by another request, is the same content landing, not an outage (503).
#[actix_web::test]
async fn identical_uploads_in_parallel_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    for (backend, blobs) in backends(dir.path()) {
        three_valid(&app_on(blobs).await, backend).await;
    }
}
