//! The blob store's contract (`common`), run against every backend the tests can reach without a
//! server: a local directory, object_store's in-memory store, and an in-memory store that keeps
//! multipart uploads open until they are completed or aborted, as S3 does (and bills for).
//! `blob_s3.rs` runs the same contract against a real S3-compatible server.
// Helpers outside `#[test]` functions are not covered by clippy.toml's test allowances.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::memory::InMemory;
use tempfile::TempDir;
use vellum_storage::StorageError;
use vellum_storage::blob::{BlobStore, ObjectBlobStore};

use crate::common::{self, Recording, body, chunks, content, list, read_all, sha256_hex};

/// Small parts so that a few kilobytes already make a multipart upload of several parts.
const PART_SIZE: usize = 1000;

/// object_store's in-memory store made to behave like S3 (see [`Recording`]).
type S3Like = Recording<InMemory>;

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
        let s3 = Arc::new(S3Like::new(InMemory::new()));
        let store = ObjectBlobStore::new(s3.clone()).with_part_size(PART_SIZE);
        Self {
            store,
            at: Where::S3Like(s3),
        }
    }

    fn all() -> [Self; 3] {
        [Self::disk(), Self::memory(), Self::s3_like()]
    }
}

#[async_trait]
impl common::Backend for Backend {
    fn store(&self) -> &ObjectBlobStore {
        &self.store
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
                found.extend(
                    s3.open_uploads()
                        .into_iter()
                        .map(|l| format!("open upload {l}")),
                );
                found
            }
        };
        found.sort();
        found
    }
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

#[tokio::test]
async fn multi_chunk_upload_round_trips_with_its_hash_and_size() {
    for backend in Backend::all() {
        common::multi_chunk_upload_round_trips(&backend, 10_500).await;
        if let Where::S3Like(s3) = &backend.at {
            // Streamed: the backend got the file part by part, never more than a part at once.
            assert_eq!(s3.parts(), [vec![PART_SIZE; 10], vec![500]].concat());
        }
    }
}

#[tokio::test]
async fn empty_upload_is_stored_under_the_hash_of_nothing() {
    for backend in Backend::all() {
        common::empty_upload_is_stored_under_the_hash_of_nothing(&backend).await;
    }
}

#[tokio::test]
async fn the_same_content_twice_is_stored_once() {
    for backend in Backend::all() {
        common::the_same_content_twice_is_stored_once(&backend).await;
    }
}

#[tokio::test]
async fn an_upload_over_the_limit_stops_reading_and_leaves_nothing() {
    for backend in Backend::all() {
        common::an_upload_over_the_limit_stops_reading_and_leaves_nothing(&backend).await;
    }
}

#[tokio::test]
async fn an_upload_of_exactly_the_limit_is_accepted() {
    for backend in Backend::all() {
        common::an_upload_of_exactly_the_limit_is_accepted(&backend).await;
    }
}

#[tokio::test]
async fn a_stream_that_fails_midway_leaves_nothing() {
    for backend in Backend::all() {
        common::a_stream_that_fails_midway_leaves_nothing(&backend).await;
    }
}

#[tokio::test]
async fn a_cancelled_upload_leaves_nothing() {
    for backend in Backend::all() {
        common::a_cancelled_upload_leaves_nothing(&backend).await;
    }
}

#[tokio::test]
async fn identical_uploads_published_at_once_all_succeed() {
    for backend in Backend::all() {
        common::identical_uploads_published_at_once_all_succeed(&backend).await;
    }
}

#[tokio::test]
async fn a_blob_deleted_during_a_publish_is_put_back_by_publishing_again() {
    for backend in Backend::all() {
        common::a_blob_deleted_during_a_publish_is_put_back_by_publishing_again(&backend).await;
    }
}

#[tokio::test]
async fn publish_refuses_a_staged_copy_outside_the_staging_area() {
    for backend in Backend::all() {
        common::publish_refuses_a_staged_copy_outside_the_staging_area(&backend).await;
    }
}

/// On the local disk the races run on threads (the blocking pool and two workers), as the
/// server's do; the directories the blobs live in are never removed under a concurrent write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_publishes_and_deletes_on_threads_never_fail() {
    let backend = Backend::disk();
    common::identical_uploads_published_at_once_all_succeed(&backend).await;
    common::a_blob_deleted_during_a_publish_is_put_back_by_publishing_again(&backend).await;
}

#[tokio::test]
async fn range_reads_return_exactly_the_requested_bytes() {
    for backend in Backend::all() {
        common::range_reads_return_exactly_the_requested_bytes(&backend).await;
    }
}

#[tokio::test]
async fn a_missing_blob_is_not_found() {
    for backend in Backend::all() {
        common::a_missing_blob_is_not_found(&backend).await;
    }
}

#[tokio::test]
async fn delete_is_idempotent() {
    for backend in Backend::all() {
        common::delete_is_idempotent(&backend).await;
    }
}

#[tokio::test]
async fn put_bytes_round_trips_and_replaces() {
    for backend in Backend::all() {
        common::put_bytes_round_trips_and_replaces(&backend).await;
    }
}

#[tokio::test]
async fn bad_keys_are_refused_by_every_operation() {
    for backend in Backend::all() {
        common::bad_keys_are_refused_by_every_operation(&backend).await;
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

/// Local files are read in 256 KiB pieces: whole reads and ranges across piece boundaries give
/// exactly the requested bytes, in as many pieces as needed and no more.
#[tokio::test]
async fn local_reads_cross_chunk_boundaries_exactly() {
    use futures_util::TryStreamExt as _;
    let root = tempfile::tempdir().unwrap();
    let store = ObjectBlobStore::local(root.path()).unwrap();
    let data = content(600 * 1024 + 7);
    let stored = store.put_stream(body(chunks(&data)), None).await.unwrap();
    let whole = store.get(&stored.key, None).await.unwrap();
    let parts: Vec<Bytes> = whole.stream.try_collect().await.unwrap();
    assert_eq!(parts.len(), 3, "600 KiB in 256 KiB pieces");
    assert_eq!(parts.concat(), data);
    let k = 256 * 1024;
    for range in [0..1, k - 1..k + 1, 1..2 * k + 5, 2 * k..data.len(), 10..k] {
        let got = common::read_range(
            &store,
            &stored.key,
            Some(range.start as u64..range.end as u64),
        )
        .await;
        assert_eq!(got, data[range.clone()], "{range:?}");
    }
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

/// Writes `relative` under `dir` with a modification time `age` ago, as a crashed upload (or
/// any old file) would have left it.
fn old_file(dir: &FsPath, relative: &str, age: std::time::Duration) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    std::io::Write::write_all(&mut &file, b"partial upload").unwrap();
    file.set_modified(std::time::SystemTime::now() - age)
        .unwrap();
}

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

#[tokio::test]
async fn sweeping_a_local_store_removes_only_stale_staging_files() {
    let backend = Backend::disk();
    let Where::Disk(dir) = &backend.at else {
        unreachable!()
    };
    let store = &backend.store;
    // Nothing staged yet (not even a `tmp` directory): nothing to do.
    assert_eq!(store.sweep_staging(HOUR).await.unwrap(), 0);

    let stored = store
        .put_stream(body(vec![Bytes::from(content(3000))]), None)
        .await
        .unwrap();
    store
        .put_bytes("derived/h/small", Bytes::from_static(b"out"))
        .await
        .unwrap();
    // What a process killed midway leaves: object_store's staging file of a multipart upload
    // (invisible to its own listing), and a finished upload never moved into place.
    old_file(dir.path(), "tmp/11111111-dead#1", 2 * HOUR);
    old_file(dir.path(), "tmp/22222222-dead", 2 * HOUR);
    // An upload still running (recently written) and old files outside `tmp/`.
    old_file(
        dir.path(),
        "tmp/33333333-live#1",
        std::time::Duration::from_secs(5),
    );
    old_file(dir.path(), "derived/h/old", 2 * HOUR);
    old_file(dir.path(), "tmpfile/old", 2 * HOUR);
    let blob_path = dir.path().join(&stored.key);
    std::fs::File::options()
        .write(true)
        .open(&blob_path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - 2 * HOUR)
        .unwrap();

    assert_eq!(store.sweep_staging(HOUR).await.unwrap(), 2);
    let mut expected = vec![
        "derived/h/old".to_owned(),
        "derived/h/small".to_owned(),
        stored.key.clone(),
        "tmp/33333333-live#1".to_owned(),
        "tmpfile/old".to_owned(),
    ];
    expected.sort();
    assert_eq!(common::Backend::everything(&backend).await, expected);
    // Again: nothing more is stale.
    assert_eq!(store.sweep_staging(HOUR).await.unwrap(), 0);
    // With no grace at all, the running upload's file goes too; the rest stays.
    assert_eq!(
        store
            .sweep_staging(std::time::Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    expected.retain(|key| !key.starts_with("tmp/"));
    assert_eq!(common::Backend::everything(&backend).await, expected);
    assert!(read_all(store, &stored.key).await == content(3000));
}

#[tokio::test]
async fn sweeping_a_listed_store_removes_only_stale_staging_objects() {
    for backend in [Backend::memory(), Backend::s3_like()] {
        let name = common::Backend::name(&backend);
        let raw: &dyn object_store::ObjectStore = match &backend.at {
            Where::Memory(memory) => memory.as_ref(),
            Where::S3Like(s3) => s3.as_ref(),
            Where::Disk(_) => unreachable!(),
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
                raw,
                &object_store::path::Path::from(key),
                Bytes::from_static(b"x").into(),
            )
            .await
            .unwrap();
        }
        // Everything was just written: an hour's grace keeps it all.
        assert_eq!(store.sweep_staging(HOUR).await.unwrap(), 0, "{name}");
        // In-memory objects cannot be backdated: wait a moment and give no grace.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert_eq!(
            store
                .sweep_staging(std::time::Duration::ZERO)
                .await
                .unwrap(),
            2,
            "{name}"
        );
        let mut expected = vec![
            "derived/h/small".to_owned(),
            stored.key.clone(),
            "tmpfile/x".to_owned(),
        ];
        expected.sort();
        assert_eq!(
            common::Backend::everything(&backend).await,
            expected,
            "{name}"
        );
    }
}
