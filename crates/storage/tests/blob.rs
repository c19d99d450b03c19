//! The blob store's contract, run against every backend the tests can reach: a local directory,
//! object_store's in-memory store, and an in-memory store that keeps multipart uploads open until
//! they are completed or aborted, as S3 does (and bills for).
// Helpers outside `#[test]` functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io;
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use vellum_storage::StorageError;
use vellum_storage::blob::{BlobStore, ObjectBlobStore, StoredBlob};

/// Small parts so that a few kilobytes already make a multipart upload of several parts.
const PART_SIZE: usize = 1000;

/// An in-memory store that, like S3, keeps a multipart upload open until it is completed or
/// aborted (dropping it does nothing), and records the size of every part it is sent.
#[derive(Debug, Default)]
struct S3Like {
    objects: InMemory,
    open: Arc<Mutex<Vec<String>>>,
    parts: Arc<Mutex<Vec<usize>>>,
}

impl std::fmt::Display for S3Like {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("S3Like")
    }
}

#[async_trait]
impl ObjectStore for S3Like {
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
        Ok(Box::new(S3LikeUpload {
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
struct S3LikeUpload {
    inner: Box<dyn MultipartUpload>,
    location: String,
    open: Arc<Mutex<Vec<String>>>,
    parts: Arc<Mutex<Vec<usize>>>,
}

impl S3LikeUpload {
    fn close(&self) {
        self.open.lock().unwrap().retain(|l| l != &self.location);
    }
}

#[async_trait]
impl MultipartUpload for S3LikeUpload {
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

enum Where {
    Disk(TempDir),
    Memory(Arc<InMemory>),
    S3Like(Arc<S3Like>),
}

struct Backend {
    store: ObjectBlobStore,
    at: Where,
}

impl Backend {
    fn disk() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectBlobStore::local(dir.path())
            .unwrap()
            .with_part_size(PART_SIZE);
        Self {
            store,
            at: Where::Disk(dir),
        }
    }

    fn memory() -> Self {
        let memory = Arc::new(InMemory::new());
        let store = ObjectBlobStore::new(memory.clone()).with_part_size(PART_SIZE);
        Self {
            store,
            at: Where::Memory(memory),
        }
    }

    fn s3_like() -> Self {
        let s3 = Arc::new(S3Like::default());
        let store = ObjectBlobStore::new(s3.clone()).with_part_size(PART_SIZE);
        Self {
            store,
            at: Where::S3Like(s3),
        }
    }

    fn all() -> [Self; 3] {
        [Self::disk(), Self::memory(), Self::s3_like()]
    }

    fn name(&self) -> &'static str {
        match self.at {
            Where::Disk(_) => "disk",
            Where::Memory(_) => "memory",
            Where::S3Like(_) => "s3-like",
        }
    }

    /// Everything the backend holds, staging data included: on disk every regular file under the
    /// directory (found by walking it, not through object_store, which hides its staging files);
    /// on the S3-like store, the uploads still open as well as the objects.
    async fn everything(&self) -> Vec<String> {
        let mut found = match &self.at {
            Where::Disk(dir) => {
                let mut files = Vec::new();
                walk(dir.path(), dir.path(), &mut files);
                files
            }
            Where::Memory(memory) => list(memory.as_ref()).await,
            Where::S3Like(s3) => {
                let mut found = list(&s3.objects).await;
                let open = s3.open.lock().unwrap().clone();
                found.extend(open.into_iter().map(|l| format!("open upload {l}")));
                found
            }
        };
        found.sort();
        found
    }
}

async fn list(store: &dyn ObjectStore) -> Vec<String> {
    store
        .list(None)
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .unwrap()
}

fn walk(root: &FsPath, dir: &FsPath, files: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.is_dir() {
            walk(root, &path, files);
        } else {
            let relative = path.strip_prefix(root).unwrap();
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// Deterministic, non-repeating-looking content, so that a chunk written twice or out of order
/// changes the hash.
fn content(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from((i * 31 + i / 251) % 256).unwrap())
        .collect()
}

/// Cuts `data` into chunks of uneven sizes, as a network would.
fn chunks(data: &[u8]) -> Vec<Bytes> {
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

fn body(chunks: Vec<Bytes>) -> BoxStream<'static, Result<Bytes, io::Error>> {
    stream::iter(chunks.into_iter().map(Ok)).boxed()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

async fn read_all(store: &ObjectBlobStore, key: &str) -> Vec<u8> {
    read_range(store, key, None).await
}

async fn read_range(
    store: &ObjectBlobStore,
    key: &str,
    range: Option<std::ops::Range<u64>>,
) -> Vec<u8> {
    let blob = store.get(key, range).await.unwrap();
    let parts: Vec<Bytes> = blob.stream.try_collect().await.unwrap();
    parts.concat()
}

#[tokio::test]
async fn multi_chunk_upload_round_trips_with_its_hash_and_size() {
    let data = content(10_500);
    let expected_hash = sha256_hex(&data);
    for backend in Backend::all() {
        let pieces = chunks(&data);
        assert!(pieces.len() > 10, "the upload must really be chunked");
        let stored = backend.store.put_stream(body(pieces), None).await.unwrap();

        let expected = StoredBlob {
            key: format!("sha256/{}/{expected_hash}", &expected_hash[..2]),
            sha256: expected_hash.clone(),
            size: 10_500,
        };
        assert_eq!(stored, expected, "{}", backend.name());
        assert_eq!(
            read_all(&backend.store, &stored.key).await,
            data,
            "{}",
            backend.name()
        );
        assert_eq!(backend.store.head(&stored.key).await.unwrap(), Some(10_500));
        // Only the blob itself: the temporary upload was moved, not copied.
        assert_eq!(
            backend.everything().await,
            vec![stored.key.clone()],
            "{}",
            backend.name()
        );
        if let Where::S3Like(s3) = &backend.at {
            // Streamed: the backend got the file part by part, never more than a part at once.
            let parts = s3.parts.lock().unwrap().clone();
            assert_eq!(parts, [vec![PART_SIZE; 10], vec![500]].concat());
        }
    }
}

#[tokio::test]
async fn empty_upload_is_stored_under_the_hash_of_nothing() {
    for backend in Backend::all() {
        let stored = backend
            .store
            .put_stream(body(vec![]), Some(0))
            .await
            .unwrap();
        assert_eq!(stored.sha256, sha256_hex(b""), "{}", backend.name());
        assert_eq!(stored.size, 0);
        assert_eq!(backend.store.head(&stored.key).await.unwrap(), Some(0));
        assert!(read_all(&backend.store, &stored.key).await.is_empty());
    }
}

#[tokio::test]
async fn the_same_content_twice_is_stored_once() {
    let data = content(3_000);
    for backend in Backend::all() {
        let first = backend
            .store
            .put_stream(body(chunks(&data)), None)
            .await
            .unwrap();
        // Chunked differently: the key depends on the bytes, not on how they arrived.
        let second = backend
            .store
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
        let third = backend
            .store
            .put_stream(body(vec![Bytes::from(other)]), None)
            .await
            .unwrap();
        assert_ne!(third.key, first.key, "{}", backend.name());
        assert_eq!(backend.everything().await.len(), 2, "{}", backend.name());
    }
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

#[tokio::test]
async fn an_upload_over_the_limit_stops_reading_and_leaves_nothing() {
    for backend in Backend::all() {
        // 10 chunks of 500 bytes; the limit is crossed by the 7th (3500 > 3200).
        let pieces: Vec<Bytes> = (0..10).map(|i| Bytes::from(vec![i; 500])).collect();
        let pulled = Arc::new(AtomicUsize::new(0));
        let err = backend
            .store
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
        assert_eq!(
            backend.everything().await,
            Vec::<String>::new(),
            "{}",
            backend.name()
        );
    }
}

#[tokio::test]
async fn an_upload_of_exactly_the_limit_is_accepted() {
    for backend in Backend::all() {
        let data = content(3_200);
        let stored = backend
            .store
            .put_stream(body(chunks(&data)), Some(3_200))
            .await
            .unwrap();
        assert_eq!(stored.size, 3_200, "{}", backend.name());
        assert_eq!(read_all(&backend.store, &stored.key).await, data);
    }
}

#[tokio::test]
async fn a_stream_that_fails_midway_leaves_nothing() {
    for backend in Backend::all() {
        // Enough data before the error that several parts were already written.
        let mut items: Vec<Result<Bytes, io::Error>> =
            chunks(&content(5_000)).into_iter().map(Ok).collect();
        items.push(Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "client went away",
        )));
        items.push(Ok(Bytes::from_static(b"never read")));
        let err = backend
            .store
            .put_stream(stream::iter(items).boxed(), None)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StorageError::Io { source, .. } if source.kind() == io::ErrorKind::ConnectionReset),
            "{}: {err:?}",
            backend.name()
        );
        assert_eq!(
            backend.everything().await,
            Vec::<String>::new(),
            "{}",
            backend.name()
        );
    }
}

#[tokio::test]
async fn a_cancelled_upload_leaves_nothing() {
    for backend in Backend::all() {
        // Some data, then a client that never sends the rest: the request is dropped on timeout.
        let stalled = stream::iter(chunks(&content(2_500)).into_iter().map(Ok))
            .chain(stream::pending())
            .boxed();
        let outcome = tokio::time::timeout(
            Duration::from_millis(200),
            backend.store.put_stream(stalled, None),
        )
        .await;
        assert!(
            outcome.is_err(),
            "{}: the upload must still be waiting",
            backend.name()
        );

        // On disk the staging file is removed by a blocking task spawned on drop: give it time.
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
}

#[tokio::test]
async fn range_reads_return_exactly_the_requested_bytes() {
    let data = content(5_000);
    for backend in Backend::all() {
        let stored = backend
            .store
            .put_stream(body(chunks(&data)), None)
            .await
            .unwrap();
        for range in [0..1, 0..5_000, 1..2, 999..1_001, 4_096..4_999, 4_999..5_000] {
            let blob = backend
                .store
                .get(&stored.key, Some(range.clone()))
                .await
                .unwrap();
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
        let blob = backend
            .store
            .get(&stored.key, Some(4_990..9_000))
            .await
            .unwrap();
        assert_eq!(blob.range, 4_990..5_000, "{}", backend.name());
        assert_eq!(
            read_range(&backend.store, &stored.key, Some(4_990..9_000)).await,
            &data[4_990..],
            "{}",
            backend.name()
        );

        // The whole object: the range reported is all of it.
        let blob = backend.store.get(&stored.key, None).await.unwrap();
        assert_eq!((blob.size, blob.range), (5_000, 0..5_000));

        // Built from bounds: clippy rejects a reversed range literal, which is the point here.
        for empty in [(3, 3), (10, 2)].map(|(start, end)| start..end) {
            let err = backend
                .store
                .get(&stored.key, Some(empty.clone()))
                .await
                .unwrap_err();
            assert!(
                matches!(err, StorageError::Conflict(_)),
                "{} {empty:?}: {err:?}",
                backend.name()
            );
        }
    }
}

#[tokio::test]
async fn a_missing_blob_is_not_found() {
    for backend in Backend::all() {
        let key = format!("sha256/00/{}", "0".repeat(64));
        let err = backend.store.get(&key, None).await.unwrap_err();
        assert!(
            matches!(err, StorageError::NotFound { what: "blob" }),
            "{}: {err:?}",
            backend.name()
        );
        let err = backend.store.get(&key, Some(0..10)).await.unwrap_err();
        assert!(
            matches!(err, StorageError::NotFound { what: "blob" }),
            "{}: {err:?}",
            backend.name()
        );
        assert_eq!(backend.store.head(&key).await.unwrap(), None);
    }
}

#[tokio::test]
async fn delete_is_idempotent() {
    for backend in Backend::all() {
        let stored = backend
            .store
            .put_stream(body(vec![Bytes::from_static(b"bye")]), None)
            .await
            .unwrap();
        backend.store.delete(&stored.key).await.unwrap();
        assert_eq!(backend.store.head(&stored.key).await.unwrap(), None);
        assert!(matches!(
            backend.store.get(&stored.key, None).await.unwrap_err(),
            StorageError::NotFound { .. }
        ));
        assert_eq!(
            backend.everything().await,
            Vec::<String>::new(),
            "{}",
            backend.name()
        );
        backend.store.delete(&stored.key).await.unwrap();
        backend.store.delete("never/existed").await.unwrap();
    }
}

#[tokio::test]
async fn put_bytes_round_trips_and_replaces() {
    let key = format!("transforms/{}/w-100.webp", "ab".repeat(32));
    for backend in Backend::all() {
        backend
            .store
            .put_bytes(&key, Bytes::from_static(b"first version"))
            .await
            .unwrap();
        assert_eq!(read_all(&backend.store, &key).await, b"first version");
        backend
            .store
            .put_bytes(&key, Bytes::from_static(b"second"))
            .await
            .unwrap();
        assert_eq!(read_all(&backend.store, &key).await, b"second");
        assert_eq!(backend.store.head(&key).await.unwrap(), Some(6));
        assert_eq!(
            backend.everything().await,
            vec![key.clone()],
            "{}",
            backend.name()
        );
    }
}

#[tokio::test]
async fn bad_keys_are_refused_by_every_operation() {
    for backend in Backend::all() {
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
                    matches!(result, Err(StorageError::Conflict(_))),
                    "{} {key:?}: {result:?}",
                    backend.name()
                );
            };
            refused(backend.store.put_bytes(key, Bytes::from_static(b"x")).await);
            refused(backend.store.get(key, None).await.map(drop));
            refused(backend.store.head(key).await.map(drop));
            refused(backend.store.delete(key).await);
        }
        assert_eq!(backend.everything().await, Vec::<String>::new());
        if let Where::Disk(dir) = &backend.at {
            // Nothing was written next to the store's directory either.
            let parent = dir.path().parent().unwrap();
            assert!(!parent.join("escape").exists());
        }
    }
}

#[tokio::test]
async fn local_blobs_are_plain_files_that_outlive_the_store() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("files").join("nested");
    let data = content(1_234);
    let stored = {
        let store = ObjectBlobStore::local(&dir).unwrap();
        store.put_stream(body(chunks(&data)), None).await.unwrap()
    };
    assert_eq!(std::fs::read(dir.join(&stored.key)).unwrap(), data);

    let reopened = ObjectBlobStore::local(&dir).unwrap();
    assert_eq!(read_all(&reopened, &stored.key).await, data);
}

#[tokio::test]
async fn local_store_refuses_a_path_that_is_a_file() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = ObjectBlobStore::local(&file).unwrap_err();
    assert!(matches!(err, StorageError::Io { .. }), "{err:?}");
}

#[tokio::test]
async fn the_store_works_as_a_trait_object() {
    // The HTTP and imaging layers hold an `Arc<dyn BlobStore>`.
    let store: Arc<dyn BlobStore> = Arc::new(ObjectBlobStore::in_memory());
    let stored = store
        .put_stream(body(vec![Bytes::from_static(b"hello")]), Some(5))
        .await
        .unwrap();
    assert_eq!(stored.sha256, sha256_hex(b"hello"));
    assert_eq!(store.head(&stored.key).await.unwrap(), Some(5));
}
