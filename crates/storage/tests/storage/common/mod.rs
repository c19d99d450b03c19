//! The blob store's contract, shared by the test binaries that run it against a backend:
//! `blob.rs` (a local directory, object_store's in-memory store, an S3-like in-memory store) and
//! `blob_s3.rs` (a real S3-compatible server). Each check takes a [`Backend`], which knows how to
//! list everything it holds, staging data and open multipart uploads included, so that "leaves
//! nothing" means the same everywhere.
// Helpers outside `#[test]` functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::future::join_all;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};
use sha2::{Digest, Sha256};
use vellum_storage::StorageError;
use vellum_storage::blob::{BlobStore, ObjectBlobStore, StoredBlob};

/// A store under test, and a way to see everything it holds.
#[async_trait]
pub trait Backend: Sync {
    fn store(&self) -> &ObjectBlobStore;

    /// Names the backend in assertion messages.
    fn name(&self) -> &'static str;

    /// Everything the backend holds, staging data and unfinished uploads included, sorted.
    async fn everything(&self) -> Vec<String>;
}

/// A store that, like S3, keeps a multipart upload open until it is completed or aborted
/// (dropping it does nothing, whatever `S` does), and records the size of every part it is sent.
/// Over object_store's in-memory store it stands in for S3; over a real bucket it shows the parts
/// the blob store sent, which the server accepted.
#[derive(Debug, Default)]
pub struct Recording<S> {
    pub objects: S,
    open: Arc<Mutex<Vec<String>>>,
    parts: Arc<Mutex<Vec<usize>>>,
}

impl<S> Recording<S> {
    pub fn new(objects: S) -> Self {
        Self {
            objects,
            open: Arc::default(),
            parts: Arc::default(),
        }
    }

    /// The uploads started and neither completed nor aborted, by location.
    pub fn open_uploads(&self) -> Vec<String> {
        self.open.lock().unwrap().clone()
    }

    /// The size of every part sent so far, in order.
    pub fn parts(&self) -> Vec<usize> {
        self.parts.lock().unwrap().clone()
    }
}

impl<S> std::fmt::Display for Recording<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recording")
    }
}

#[async_trait]
impl<S: ObjectStore> ObjectStore for Recording<S> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.objects.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        let inner = self.objects.put_multipart_opts(location, opts).await?;
        self.open.lock().unwrap().push(location.to_string());
        Ok(Box::new(RecordingUpload {
            inner,
            location: location.to_string(),
            open: self.open.clone(),
            parts: self.parts.clone(),
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.objects.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.objects.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.objects.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.objects.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.objects.copy_opts(from, to, options).await
    }
}

#[derive(Debug)]
struct RecordingUpload {
    inner: Box<dyn MultipartUpload>,
    location: String,
    open: Arc<Mutex<Vec<String>>>,
    parts: Arc<Mutex<Vec<usize>>>,
}

impl RecordingUpload {
    fn close(&self) {
        self.open.lock().unwrap().retain(|l| l != &self.location);
    }
}

#[async_trait]
impl MultipartUpload for RecordingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.parts.lock().unwrap().push(data.content_length());
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let result = self.inner.complete().await?;
        self.close();
        Ok(result)
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.close();
        self.inner.abort().await
    }
}

/// Every object's location, as the store lists them.
pub async fn list(store: &dyn ObjectStore) -> Vec<String> {
    store
        .list(None)
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap()
}

/// Deterministic, non-repeating-looking content, so that a chunk written twice or out of order
/// changes the hash.
pub fn content(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + i / 251) % 256).unwrap())
        .collect()
}

/// Cuts `data` into chunks of uneven sizes, as a network would.
pub fn chunks(data: &[u8]) -> Vec<Bytes> {
    let sizes = [1, 7, 300, 999, 1000, 1001, 4096, 13];
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < data.len() {
        let end = (at + sizes[i % sizes.len()]).min(data.len());
        out.push(Bytes::copy_from_slice(&data[at..end]));
        at = end;
        i += 1;
    }
    out
}

pub fn body(chunks: Vec<Bytes>) -> BoxStream<'static, Result<Bytes, io::Error>> {
    stream::iter(chunks.into_iter().map(Ok)).boxed()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

pub async fn read_all(store: &ObjectBlobStore, key: &str) -> Vec<u8> {
    read_range(store, key, None).await
}

pub async fn read_range(
    store: &ObjectBlobStore,
    key: &str,
    range: Option<std::ops::Range<u64>>,
) -> Vec<u8> {
    let blob = store.get(key, range).await.unwrap();
    let parts: Vec<Bytes> = blob.stream.try_collect().await.unwrap();
    parts.concat()
}

/// A stream that counts how many chunks were pulled from it.
fn counted(
    chunks: Vec<Bytes>,
    pulled: Arc<AtomicUsize>,
) -> BoxStream<'static, Result<Bytes, io::Error>> {
    stream::iter(chunks)
        .map(move |chunk| {
            pulled.fetch_add(1, Ordering::SeqCst);
            Ok(chunk)
        })
        .boxed()
}

async fn assert_holds_nothing(backend: &dyn Backend) {
    assert_eq!(
        backend.everything().await,
        Vec::<String>::new(),
        "{}",
        backend.name()
    );
}

/// Uploads `len` bytes in uneven chunks and checks key, hash, size, content and that only the
/// blob itself is left. Returns the blob for backend-specific checks.
pub async fn multi_chunk_upload_round_trips(backend: &dyn Backend, len: usize) -> StoredBlob {
    let data = content(len);
    let expected_hash = sha256_hex(&data);
    let pieces = chunks(&data);
    assert!(pieces.len() > 10, "the upload must really be chunked");
    let stored = backend
        .store()
        .put_stream(body(pieces), None)
        .await
        .unwrap();

    let expected = StoredBlob {
        key: format!("sha256/{}/{expected_hash}", &expected_hash[..2]),
        sha256: expected_hash.clone(),
        size: u64::try_from(len).unwrap(),
    };
    assert_eq!(stored, expected, "{}", backend.name());
    assert!(
        read_all(backend.store(), &stored.key).await == data,
        "{}: the content read back differs",
        backend.name()
    );
    assert_eq!(
        backend.store().head(&stored.key).await.unwrap(),
        Some(expected.size),
        "{}",
        backend.name()
    );
    // Only the blob itself: the temporary upload was moved, not copied.
    assert_eq!(
        backend.everything().await,
        vec![stored.key.clone()],
        "{}",
        backend.name()
    );
    stored
}

pub async fn empty_upload_is_stored_under_the_hash_of_nothing(backend: &dyn Backend) {
    let store = backend.store();
    let stored = store.put_stream(body(vec![]), Some(0)).await.unwrap();
    assert_eq!(stored.sha256, sha256_hex(b""), "{}", backend.name());
    assert_eq!(stored.size, 0);
    assert_eq!(store.head(&stored.key).await.unwrap(), Some(0));
    assert!(read_all(store, &stored.key).await.is_empty());
}

pub async fn the_same_content_twice_is_stored_once(backend: &dyn Backend) {
    let store = backend.store();
    let data = content(3_000);
    let first = store.put_stream(body(chunks(&data)), None).await.unwrap();
    // Chunked differently: the key depends on the bytes, not on how they arrived.
    let second = store
        .put_stream(body(vec![Bytes::from(data.clone())]), None)
        .await
        .unwrap();
    assert_eq!(first, second, "{}", backend.name());
    assert_eq!(
        backend.everything().await,
        vec![first.key.clone()],
        "{}",
        backend.name()
    );

    let mut other = data.clone();
    other[1_500] ^= 1;
    let third = store
        .put_stream(body(vec![Bytes::from(other)]), None)
        .await
        .unwrap();
    assert_ne!(third.key, first.key, "{}", backend.name());
    assert_eq!(backend.everything().await.len(), 2, "{}", backend.name());
}

pub async fn an_upload_over_the_limit_stops_reading_and_leaves_nothing(backend: &dyn Backend) {
    // 10 chunks of 500 bytes; the limit is crossed by the 7th (3500 > 3200).
    let pieces: Vec<Bytes> = (0..10).map(|i| Bytes::from(vec![i; 500])).collect();
    let pulled = Arc::new(AtomicUsize::new(0));
    let err = backend
        .store()
        .put_stream(counted(pieces, pulled.clone()), Some(3_200))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLarge { limit: 3_200 }),
        "{}: {err:?}",
        backend.name()
    );
    assert_eq!(
        pulled.load(Ordering::SeqCst),
        7,
        "{}: reading must stop at the chunk that crosses the limit",
        backend.name()
    );
    assert_holds_nothing(backend).await;
}

pub async fn an_upload_of_exactly_the_limit_is_accepted(backend: &dyn Backend) {
    let data = content(3_200);
    let stored = backend
        .store()
        .put_stream(body(chunks(&data)), Some(3_200))
        .await
        .unwrap();
    assert_eq!(stored.size, 3_200, "{}", backend.name());
    assert!(read_all(backend.store(), &stored.key).await == data);
}

pub async fn a_stream_that_fails_midway_leaves_nothing(backend: &dyn Backend) {
    // Enough data before the error that several parts were already written (with small parts).
    let mut items: Vec<Result<Bytes, io::Error>> =
        chunks(&content(5_000)).into_iter().map(Ok).collect();
    items.push(Err(io::Error::new(
        io::ErrorKind::ConnectionReset,
        "client went away",
    )));
    items.push(Ok(Bytes::from_static(b"never read")));
    let err = backend
        .store()
        .put_stream(stream::iter(items).boxed(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StorageError::Io { source, .. } if source.kind() == io::ErrorKind::ConnectionReset),
        "{}: {err:?}",
        backend.name()
    );
    assert_holds_nothing(backend).await;
}

pub async fn a_cancelled_upload_leaves_nothing(backend: &dyn Backend) {
    // Some data, then a client that never sends the rest: the request is dropped on timeout.
    let stalled = stream::iter(chunks(&content(2_500)).into_iter().map(Ok))
        .chain(stream::pending())
        .boxed();
    let outcome = tokio::time::timeout(
        Duration::from_millis(200),
        backend.store().put_stream(stalled, None),
    )
    .await;
    assert!(
        outcome.is_err(),
        "{}: the upload must still be waiting",
        backend.name()
    );

    // The cleanup runs in a task spawned on drop (a blocking one on disk): give it time.
    let mut left = backend.everything().await;
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = backend.everything().await;
    }
    assert_eq!(left, Vec::<String>::new(), "{}", backend.name());
}

pub async fn range_reads_return_exactly_the_requested_bytes(backend: &dyn Backend) {
    let store = backend.store();
    let data = content(5_000);
    let stored = store.put_stream(body(chunks(&data)), None).await.unwrap();
    for range in [0..1, 0..5_000, 1..2, 999..1_001, 4_096..4_999, 4_999..5_000] {
        let blob = store.get(&stored.key, Some(range.clone())).await.unwrap();
        assert_eq!(blob.size, 5_000, "{} {range:?}", backend.name());
        assert_eq!(blob.range, range, "{}", backend.name());
        let bytes: Vec<Bytes> = blob.stream.try_collect().await.unwrap();
        let start = usize::try_from(range.start).unwrap();
        let end = usize::try_from(range.end).unwrap();
        assert_eq!(
            bytes.concat(),
            &data[start..end],
            "{} {range:?}",
            backend.name()
        );
    }

    // A range that runs past the end is cut at the end, and says so.
    let blob = store.get(&stored.key, Some(4_990..9_000)).await.unwrap();
    assert_eq!(blob.range, 4_990..5_000, "{}", backend.name());
    assert_eq!(
        read_range(store, &stored.key, Some(4_990..9_000)).await,
        &data[4_990..],
        "{}",
        backend.name()
    );

    // The whole object: the range reported is all of it.
    let blob = store.get(&stored.key, None).await.unwrap();
    assert_eq!((blob.size, blob.range), (5_000, 0..5_000));

    // Built from bounds: clippy rejects a reversed range literal, which is the point here.
    for empty in [(3, 3), (10, 2)].map(|(start, end)| start..end) {
        let err = store
            .get(&stored.key, Some(empty.clone()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StorageError::Conflict { .. }),
            "{} {empty:?}: {err:?}",
            backend.name()
        );
    }
}

pub async fn a_missing_blob_is_not_found(backend: &dyn Backend) {
    let store = backend.store();
    let key = format!("sha256/00/{}", "0".repeat(64));
    let err = store.get(&key, None).await.unwrap_err();
    assert!(
        matches!(err, StorageError::NotFound { what: "blob" }),
        "{}: {err:?}",
        backend.name()
    );
    let err = store.get(&key, Some(0..10)).await.unwrap_err();
    assert!(
        matches!(err, StorageError::NotFound { what: "blob" }),
        "{}: {err:?}",
        backend.name()
    );
    assert_eq!(store.head(&key).await.unwrap(), None);
}

pub async fn delete_is_idempotent(backend: &dyn Backend) {
    let store = backend.store();
    let stored = store
        .put_stream(body(vec![Bytes::from_static(b"bye")]), None)
        .await
        .unwrap();
    store.delete(&stored.key).await.unwrap();
    assert_eq!(store.head(&stored.key).await.unwrap(), None);
    assert!(matches!(
        store.get(&stored.key, None).await.unwrap_err(),
        StorageError::NotFound { .. }
    ));
    assert_holds_nothing(backend).await;
    store.delete(&stored.key).await.unwrap();
    store.delete("never/existed").await.unwrap();
}

pub async fn put_bytes_round_trips_and_replaces(backend: &dyn Backend) {
    let store = backend.store();
    let key = format!("transforms/{}/w-100.webp", "ab".repeat(32));
    store
        .put_bytes(&key, Bytes::from_static(b"first version"))
        .await
        .unwrap();
    assert_eq!(read_all(store, &key).await, b"first version");
    store
        .put_bytes(&key, Bytes::from_static(b"second"))
        .await
        .unwrap();
    assert_eq!(read_all(store, &key).await, b"second");
    assert_eq!(store.head(&key).await.unwrap(), Some(6));
    assert_eq!(
        backend.everything().await,
        vec![key.clone()],
        "{}",
        backend.name()
    );
}

pub async fn bad_keys_are_refused_by_every_operation(backend: &dyn Backend) {
    let store = backend.store();
    for key in [
        "../escape",
        "/abs",
        "a//b",
        "a/",
        "",
        "a b",
        "tmp/x",
        "x/../../y",
    ] {
        let refused = |result: Result<(), StorageError>| {
            assert!(
                matches!(result, Err(StorageError::Conflict { .. })),
                "{} {key:?}: {result:?}",
                backend.name()
            );
        };
        refused(store.put_bytes(key, Bytes::from_static(b"x")).await);
        refused(store.get(key, None).await.map(drop));
        refused(store.head(key).await.map(drop));
        refused(store.delete(key).await);
    }
    assert_holds_nothing(backend).await;
}

/// Identical uploads published at the same moment all succeed and leave one blob: finding the
/// key already there, or another copy landing first, is the content being stored, not an error
/// (review finding R12: on the local disk such races answered 503).
pub async fn identical_uploads_published_at_once_all_succeed(backend: &dyn Backend) {
    let store = backend.store();
    let data = content(3_000);
    for round in 0..5 {
        let staged: Vec<_> = join_all((0..4).map(|_| store.stage(body(chunks(&data)), None)))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let key = staged[0].blob.key.clone();
        for published in join_all(staged.iter().map(|s| store.publish(s))).await {
            published.unwrap_or_else(|e| panic!("{} round {round}: {e:?}", backend.name()));
        }
        assert!(read_all(store, &key).await == data, "{}", backend.name());
        for s in staged {
            store.release(s).await;
        }
        assert_eq!(
            backend.everything().await,
            vec![key.clone()],
            "{}",
            backend.name()
        );
        // The next round publishes onto an empty store again.
        store.delete(&key).await.unwrap();
    }
    // The same through `put_stream`, which stages, publishes and releases.
    let stored: Vec<StoredBlob> =
        join_all((0..4).map(|_| store.put_stream(body(chunks(&data)), None)))
            .await
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("{}: {e:?}", backend.name())))
            .collect();
    assert!(
        stored.windows(2).all(|w| w[0] == w[1]),
        "{}",
        backend.name()
    );
    assert_eq!(
        backend.everything().await,
        vec![stored[0].key.clone()],
        "{}",
        backend.name()
    );
}

/// A delete racing publishes of the same key may win (nothing orders them), but the staged
/// copy outlives the publish, so publishing again, which is what the transaction writing the
/// row does under its lock, puts the blob back. Neither the publishes nor the delete fail.
pub async fn a_blob_deleted_during_a_publish_is_put_back_by_publishing_again(
    backend: &dyn Backend,
) {
    let store = backend.store();
    let data = content(3_000);

    // In order first: published, deleted (another upload's cleanup), published again.
    let staged = store.stage(body(chunks(&data)), None).await.unwrap();
    let key = staged.blob.key.clone();
    store.publish(&staged).await.unwrap();
    store.delete(&key).await.unwrap();
    assert_eq!(store.head(&key).await.unwrap(), None);
    store.publish(&staged).await.unwrap();
    assert!(read_all(store, &key).await == data, "{}", backend.name());
    store.release(staged).await;
    store.delete(&key).await.unwrap();

    // Then at once, round after round: two uploads publish while a cleanup deletes the key.
    for round in 0..10 {
        let first = store.stage(body(chunks(&data)), None).await.unwrap();
        let second = store
            .stage(body(vec![Bytes::from(data.clone())]), None)
            .await
            .unwrap();
        let (a, b, deleted) = futures_util::join!(
            store.publish(&first),
            store.publish(&second),
            store.delete(&key)
        );
        for outcome in [a, b, deleted] {
            outcome.unwrap_or_else(|e| panic!("{} round {round}: {e:?}", backend.name()));
        }
        // Whatever the order was, the second publish holds.
        store.publish(&first).await.unwrap();
        assert!(
            read_all(store, &key).await == data,
            "{} round {round}: the blob must be back",
            backend.name()
        );
        store.release(first).await;
        store.release(second).await;
        assert_eq!(
            backend.everything().await,
            vec![key.clone()],
            "{}",
            backend.name()
        );
        store.delete(&key).await.unwrap();
    }
    assert_holds_nothing(backend).await;
}

/// `publish` only copies from the staging area: a staged copy naming any other object is
/// refused, so it cannot be used to place arbitrary bytes under a content key.
pub async fn publish_refuses_a_staged_copy_outside_the_staging_area(backend: &dyn Backend) {
    let store = backend.store();
    store
        .put_bytes("derived/x/y", Bytes::from_static(b"not staged"))
        .await
        .unwrap();
    let real = store
        .stage(body(vec![Bytes::from_static(b"real")]), None)
        .await
        .unwrap();
    for staging in ["derived/x/y", "tmp", "tmp/a/b", "../tmp/x", ""] {
        let forged = vellum_storage::blob::StagedBlob {
            blob: real.blob.clone(),
            staging: staging.to_owned(),
        };
        let err = store.publish(&forged).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Conflict { .. }),
            "{} {staging:?}: {err:?}",
            backend.name()
        );
    }
    assert_eq!(store.head(&real.blob.key).await.unwrap(), None);
    store.release(real).await;
    store.delete("derived/x/y").await.unwrap();
    assert_holds_nothing(backend).await;
}
