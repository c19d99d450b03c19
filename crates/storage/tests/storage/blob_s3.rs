//! The blob store's contract (`common`) against a real S3-compatible server: the one `.ci/run`
//! starts (moto), or any other named by `VELLUM_TEST_S3_ENDPOINT` (bucket `VELLUM_TEST_S3_BUCKET`,
//! default `vellum-test`, created when the server allows it unsigned, as moto does). Without
//! the variable every test says why it is skipped and passes.
//!
//! Each test works under a key prefix of its own in the one bucket, so tests run in parallel and
//! "leaves nothing" means nothing under that prefix: no object and no open multipart upload, as
//! the server itself lists them (when it answers unsigned requests; moto does).
// Helpers outside `#[test]` functions are not covered by clippy.toml's test allowances.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3;
use object_store::prefix::PrefixStore;
use vellum_storage::blob::{BlobStore, ObjectBlobStore, S3Config};

use crate::common::{self, Recording, body, content, list, sha256_hex};

const ENDPOINT_VAR: &str = "VELLUM_TEST_S3_ENDPOINT";
const BUCKET_VAR: &str = "VELLUM_TEST_S3_BUCKET";
const DEFAULT_BUCKET: &str = "vellum-test";

/// S3's smallest part (but the last): what [`ObjectBlobStore::s3`] sends.
const MIB_5: usize = 5 * 1024 * 1024;

/// The server under test, from the environment; `None` (with the reason on stderr) without one.
fn server(test: &str) -> Option<S3Config> {
    let endpoint = std::env::var(ENDPOINT_VAR).ok().filter(|e| !e.is_empty());
    let Some(endpoint) = endpoint else {
        eprintln!("{test}: skipped: {ENDPOINT_VAR} not set (CI starts moto_server)");
        return None;
    };
    let bucket = std::env::var(BUCKET_VAR)
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| DEFAULT_BUCKET.to_owned());
    create_bucket(&endpoint, &bucket);
    Some(S3Config {
        bucket,
        endpoint: Some(endpoint),
    })
}

/// A blob store under a fresh key prefix of the test bucket, built as [`ObjectBlobStore::s3`]
/// builds its store, with every multipart upload and part recorded on the way.
struct S3Backend {
    config: S3Config,
    prefix: String,
    recording: Arc<Recording<PrefixStore<AmazonS3>>>,
    store: ObjectBlobStore,
}

impl S3Backend {
    fn new(test: &str) -> Option<Self> {
        let config = server(test)?;
        let mut builder = config.builder();
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            // Without keys object_store asks the instance metadata service, which is not there.
            builder = builder
                .with_access_key_id("vellum-test")
                .with_secret_access_key("vellum-test");
        }
        let s3 = builder.build().unwrap();
        let prefix = format!("test-{}", uuid::Uuid::new_v4());
        let recording = Arc::new(Recording::new(PrefixStore::new(s3, prefix.as_str())));
        let store = ObjectBlobStore::new(recording.clone());
        Some(Self {
            config,
            prefix,
            recording,
            store,
        })
    }

    /// The multipart uploads the server still holds under this test's prefix, or `None` when it
    /// does not list them for an unsigned request.
    fn server_open_uploads(&self) -> Option<Vec<String>> {
        let endpoint = self.config.endpoint.as_deref()?;
        let query = format!("/{}?uploads&prefix={}/", self.config.bucket, self.prefix);
        let (status, xml) = unsigned_request(endpoint, "GET", &query)?;
        if status != 200 {
            return None;
        }
        let own = format!("{}/", self.prefix);
        Some(
            xml.split("<Upload>")
                .skip(1)
                .filter_map(|upload| between(upload, "<Key>", "</Key>"))
                .filter_map(|key| key.strip_prefix(&own).map(str::to_owned))
                .collect(),
        )
    }
}

#[async_trait]
impl common::Backend for S3Backend {
    fn store(&self) -> &ObjectBlobStore {
        &self.store
    }

    fn name(&self) -> &'static str {
        "s3"
    }

    /// The objects under the prefix, the uploads the store started and did not end, and the
    /// uploads the server still holds (the ones S3 bills for).
    async fn everything(&self) -> Vec<String> {
        let mut found = list(&self.recording.objects).await;
        let open = self.recording.open_uploads();
        found.extend(open.into_iter().map(|l| format!("open upload {l}")));
        match tokio::task::block_in_place(|| self.server_open_uploads()) {
            Some(uploads) => {
                found.extend(uploads.into_iter().map(|l| format!("server upload {l}")));
            }
            None => eprintln!(
                "note: the server does not list multipart uploads for unsigned requests; \
                 only the client's view of open uploads is checked"
            ),
        }
        found.sort();
        found
    }
}

/// Creates the bucket with an unsigned `PUT /bucket`, which moto accepts. Other servers refuse
/// it; the bucket must then exist already, and the tests say so when it does not.
fn create_bucket(endpoint: &str, bucket: &str) {
    match unsigned_request(endpoint, "PUT", &format!("/{bucket}")) {
        // 409: it exists already (BucketAlreadyOwnedByYou or BucketAlreadyExists).
        Some((200 | 409, _)) => {}
        Some((status, body)) => eprintln!(
            "note: creating bucket {bucket} unsigned answered {status}; it must exist: {body}"
        ),
        None => eprintln!("note: bucket {bucket} not created (not a plain http:// endpoint)"),
    }
}

/// One unsigned HTTP/1.0 request (so the answer is neither chunked nor kept alive), for the
/// few calls object_store does not make: create a bucket, list multipart uploads. `None` for an
/// endpoint that is not plain `http://host:port`.
fn unsigned_request(endpoint: &str, method: &str, path: &str) -> Option<(u16, String)> {
    let authority = endpoint.strip_prefix("http://")?.trim_end_matches('/');
    let mut stream = TcpStream::connect(authority)
        .unwrap_or_else(|error| panic!("{ENDPOINT_VAR}={endpoint} does not answer: {error}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.0\r\nHost: {authority}\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok())?;
    Some((status, body.to_owned()))
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let len = text.get(start..)?.find(close)?;
    text.get(start..start + len)
}

/// Runs one contract check against the server, or prints why it cannot.
macro_rules! contract {
    ($($check:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $check() {
            let Some(backend) = S3Backend::new(stringify!($check)) else {
                return;
            };
            common::$check(&backend).await;
        }
    )*};
}

contract!(
    empty_upload_is_stored_under_the_hash_of_nothing,
    the_same_content_twice_is_stored_once,
    an_upload_over_the_limit_stops_reading_and_leaves_nothing,
    an_upload_of_exactly_the_limit_is_accepted,
    a_stream_that_fails_midway_leaves_nothing,
    a_cancelled_upload_leaves_nothing,
    range_reads_return_exactly_the_requested_bytes,
    a_missing_blob_is_not_found,
    delete_is_idempotent,
    put_bytes_round_trips_and_replaces,
    bad_keys_are_refused_by_every_operation,
    identical_uploads_published_at_once_all_succeed,
    a_blob_deleted_during_a_publish_is_put_back_by_publishing_again,
    publish_refuses_a_staged_copy_outside_the_staging_area,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_chunk_upload_round_trips_with_its_hash_and_size() {
    let Some(backend) = S3Backend::new("multi_chunk_upload_round_trips_with_its_hash_and_size")
    else {
        return;
    };
    common::multi_chunk_upload_round_trips(&backend, 10_500).await;
    // Under a part's size: one part, the last, which S3 allows to be small.
    assert_eq!(backend.recording.parts(), [10_500]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_upload_goes_in_parts_of_5_mib() {
    let Some(backend) = S3Backend::new("a_large_upload_goes_in_parts_of_5_mib") else {
        return;
    };
    // Three parts: S3 refuses to complete an upload whose parts but the last are under 5 MiB,
    // so the server's accepting it is part of the check.
    let len = 2 * MIB_5 + 1024 * 1024 + 7;
    common::multi_chunk_upload_round_trips(&backend, len).await;
    assert_eq!(backend.recording.parts(), [MIB_5, MIB_5, len - 2 * MIB_5]);
}

/// `ObjectBlobStore::s3` itself, configured from the environment as the server configures it,
/// on the bucket's root (keys made unique by the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_constructor_reaches_the_bucket() {
    let test = "the_s3_constructor_reaches_the_bucket";
    let Some(config) = server(test) else {
        return;
    };
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        eprintln!("{test}: skipped: AWS_ACCESS_KEY_ID not set (any value works for moto)");
        return;
    }
    let store = ObjectBlobStore::s3(&config).unwrap();
    let unique = uuid::Uuid::new_v4().to_string();

    let key = format!("transforms/{unique}/w-10.webp");
    store
        .put_bytes(&key, Bytes::from(unique.clone()))
        .await
        .unwrap();
    assert_eq!(store.head(&key).await.unwrap(), Some(36));
    let blob = store.get(&key, Some(0..8)).await.unwrap();
    assert_eq!((blob.size, blob.range.clone()), (36, 0..8));
    let bytes: Vec<Bytes> = blob.stream.try_collect().await.unwrap();
    assert_eq!(bytes.concat(), unique.as_bytes()[..8]);

    let data = [unique.as_bytes(), &content(2_000)].concat();
    let stored = store
        .put_stream(body(vec![Bytes::from(data.clone())]), None)
        .await
        .unwrap();
    assert_eq!(stored.sha256, sha256_hex(&data));
    assert!(common::read_all(&store, &stored.key).await == data);

    store.delete(&key).await.unwrap();
    store.delete(&stored.key).await.unwrap();
    assert_eq!(store.head(&key).await.unwrap(), None);
    assert_eq!(store.head(&stored.key).await.unwrap(), None);
}

/// `sweep_staging` on a bucket: objects under `tmp/` older than the cutoff go (what a crash
/// between an upload's completion and its move into place leaves), nothing else does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeping_removes_only_stale_staging_objects() {
    let Some(backend) = S3Backend::new("sweeping_removes_only_stale_staging_objects") else {
        return;
    };
    let store = &backend.store;
    let stored = store
        .put_stream(body(vec![Bytes::from(content(3000))]), None)
        .await
        .unwrap();
    store
        .put_bytes("derived/h/small", Bytes::from_static(b"out"))
        .await
        .unwrap();
    for key in ["tmp/dead", "tmp/deeper/dead", "tmpfile/x"] {
        object_store::ObjectStoreExt::put(
            backend.recording.as_ref(),
            &object_store::path::Path::from(key),
            Bytes::from_static(b"x").into(),
        )
        .await
        .unwrap();
    }
    let hour = Duration::from_secs(3600);
    assert_eq!(store.sweep_staging(hour).await.unwrap(), 0);
    // S3 keeps `last_modified` in whole seconds, and objects cannot be backdated.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(store.sweep_staging(Duration::ZERO).await.unwrap(), 2);
    let mut expected = vec![
        "derived/h/small".to_owned(),
        stored.key.clone(),
        "tmpfile/x".to_owned(),
    ];
    expected.sort();
    assert_eq!(common::Backend::everything(&backend).await, expected);
    for key in ["derived/h/small", stored.key.as_str(), "tmpfile/x"] {
        object_store::ObjectStoreExt::delete(
            backend.recording.as_ref(),
            &object_store::path::Path::from(key),
        )
        .await
        .unwrap();
    }
}
