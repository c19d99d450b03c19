//! Where the bytes of uploaded files live.
//!
//! The database only records a file's metadata and its blob key; the bytes go to a [`BlobStore`].
//! The trait is small on purpose: the HTTP layer needs to stream an upload in and a (ranged)
//! download out, and the imaging layer needs to park small derived images under keys it chooses.
//! Anything richer (listing, presigned URLs) would tie callers to one backend.
//!
//! [`ObjectBlobStore`] implements it on the `object_store` crate, so the local directory
//! (`VELLUM_FILES_DIR`) and an S3-compatible bucket ([`ObjectBlobStore::s3`]) behave the same way,
//! down to the tests: one contract runs against both (`tests/storage/blob.rs`, `tests/storage/blob_s3.rs`).
//!
//! Uploads are content-addressed (`sha256/<2 hex>/<64 hex>`): the key is only known once the last
//! byte is read, so an upload is first streamed to a staged object under `tmp/`
//! ([`BlobStore::stage`]) and copied into place ([`BlobStore::publish`]) once the request is
//! known to be valid. Identical files therefore share one blob, and a failed or oversized upload
//! never leaves a half-written object under a key someone could read.
//!
//! Sharing is what makes deletion dangerous: a blob may only go when no file row names it, and
//! an upload of the same bytes may be between its publish and its row at that very moment. The
//! rules that keep an acknowledged upload's bytes (review finding R12):
//!
//! - A refused upload releases its staged copy and touches nothing else: it never published.
//! - A content blob is deleted only by [`crate::files::delete_unused_blob`], which re-checks in
//!   the database's write transaction, under the lock file rows are created under, that no row
//!   names it, and deletes it before that transaction ends.
//! - The row of an upload is written by [`crate::files::create_uploaded_file`], which publishes
//!   again under that same lock before committing. A delete that slipped in after the first
//!   publish is thereby undone from the staged copy, which is kept until the row is committed.
//!   Once the row is committed, every later delete sees it and keeps the blob.
//! - A publish that finds the key already there, or fails while a concurrent publish of the same
//!   key lands, has succeeded: the bytes are the same.
//!
//! Errors are logged at `debug` only: most of them (a too-large upload, a missing blob) are the
//! caller's business, and the HTTP layer logs the ones that matter once, with the request id.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    GetOptions, MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, PutResult, UploadPart,
    WriteMultipart,
};
use sha2::{Digest, Sha256};
use tracing::instrument;

use crate::StorageError;

/// Prefix of uploads in progress. Reserved: callers cannot name keys under it, so a derived blob
/// can never collide with (or be swept away as) a temporary upload.
const TEMP_PREFIX: &str = "tmp";

/// Prefix of content-addressed blobs, named after the hash so that a later change of algorithm can
/// live beside the old blobs instead of replacing them.
const CONTENT_PREFIX: &str = "sha256";

/// S3 rejects multipart parts under 5 MiB (except the last), so that is the floor for any store
/// that might be remote.
const REMOTE_PART_SIZE: usize = 5 * 1024 * 1024;

/// The local filesystem has no minimum part size; smaller parts bound the memory an upload holds.
const LOCAL_PART_SIZE: usize = 1024 * 1024;

/// How many parts may be in flight at once. With one part being filled, an upload holds at most
/// `(MAX_PARTS_IN_FLIGHT + 1) * part_size` bytes, whatever the file's size.
const MAX_PARTS_IN_FLIGHT: usize = 2;

/// S3's limit on key length; enforced for every backend so that a key that works locally also
/// works in a bucket.
const MAX_KEY_LEN: usize = 1024;

/// A content-addressed blob ([`BlobStore::stage`], [`BlobStore::put_stream`]): what the files
/// table records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    /// The key to read the blob back with (`sha256/<first 2 hex>/<full hex>`).
    pub key: String,
    /// SHA-256 of the content, lowercase hex: the file's checksum and the base of derived keys.
    pub sha256: String,
    /// Number of bytes, counted while streaming (the client's `Content-Length` is not trusted).
    pub size: u64,
}

/// An upload written to the staging area by [`BlobStore::stage`], not yet (or not only) under its
/// content-addressed key. Hand it to [`BlobStore::publish`] and, once the outcome is decided, to
/// [`BlobStore::release`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedBlob {
    /// What the upload will be stored as.
    pub blob: StoredBlob,
    /// Where the store keeps the staged copy (`tmp/<uuid>` for [`ObjectBlobStore`]). Not a key
    /// for [`BlobStore::get`]: only the store that made it reads it.
    pub staging: String,
}

/// A blob being read. The total `size` is given beside the stream because a ranged response
/// needs it for `Content-Range` before the first byte is sent.
pub struct BlobStream {
    /// Size of the whole object, whatever range was asked for.
    pub size: u64,
    /// The bytes actually streamed, half-open. Equal to the requested range unless it ran past the
    /// end of the object, in which case it is cut at `size` (as HTTP range requests are).
    pub range: Range<u64>,
    /// The bytes of `range`. An error here means the backend failed mid-read; the response is
    /// already under way, so the caller can only abort it.
    pub stream: BoxStream<'static, Result<Bytes, StorageError>>,
}

impl std::fmt::Debug for BlobStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStream")
            .field("size", &self.size)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// Storage for file bytes, so that the HTTP and imaging layers do not depend on where the bytes
/// live (a local directory or a bucket).
///
/// Keys are validated by every method: ASCII letters, digits, `.`, `_`, `-` and `/`, no empty,
/// `.` or `..` segment, no leading `/`, nothing under the reserved `tmp/` prefix. A key built from
/// user input can therefore never reach outside the store.
#[async_trait]
pub trait BlobStore: Send + Sync + std::fmt::Debug {
    /// Streams an upload to the staging area (`tmp/`) without ever holding all of it in memory,
    /// and returns its content-addressed key with the staged copy. Nothing is published yet: a
    /// caller that refuses the upload afterwards (an invalid form) [releases](Self::release) the
    /// staged copy and so removes only what its own request wrote, never a blob another upload
    /// of the same bytes shares.
    ///
    /// Reading stops as soon as more than `limit` bytes have arrived, so an oversized upload
    /// costs at most `limit` bytes of work.
    ///
    /// # Errors
    ///
    /// [`StorageError::TooLarge`] past `limit`, [`StorageError::Io`] when `body` yields an error
    /// (the client went away), [`StorageError::Blob`] when the backend fails. In every case the
    /// temporary data is deleted and nothing is stored.
    async fn stage(
        &self,
        body: BoxStream<'_, Result<Bytes, std::io::Error>>,
        limit: Option<u64>,
    ) -> Result<StagedBlob, StorageError>;

    /// Makes the content-addressed key of `staged` hold its bytes: nothing to do when the blob is
    /// already there (identical content uploaded before, or a concurrent publish of the same key
    /// that landed first: the same bytes either way), otherwise a copy from the staged one, which
    /// is kept until [`release`](Self::release).
    ///
    /// Idempotent, and cheap when the blob is there (one `head`), so that the transaction that
    /// writes the row naming the blob can call it again under its lock: a blob deleted by a
    /// concurrent cleanup between the first publish and the row is put back from the staged copy
    /// (see [`crate::files::create_uploaded_file`]).
    ///
    /// # Errors
    ///
    /// [`StorageError::Conflict`] for a staged copy this store did not make,
    /// [`StorageError::Blob`] when the backend fails (and the blob is still missing).
    async fn publish(&self, staged: &StagedBlob) -> Result<(), StorageError>;

    /// Deletes the staged copy of an upload, published or not. Best effort and never an error:
    /// the caller's outcome is already decided, and a staged copy left behind is swept with the
    /// rest of the staging area ([`sweep_staging`](Self::sweep_staging)).
    async fn release(&self, staged: StagedBlob);

    /// Stores an upload and returns its content-addressed key: [`stage`](Self::stage), then
    /// [`publish`](Self::publish) and [`release`](Self::release). For content that no row will
    /// name (tests, tools); an upload that becomes a file row goes through
    /// [`crate::files::create_uploaded_file`], which keeps the staged copy until the row holds.
    /// Storing content that is already present keeps the existing blob (same key).
    ///
    /// # Errors
    ///
    /// As [`stage`](Self::stage) and [`publish`](Self::publish); the staged copy is deleted in
    /// every case.
    async fn put_stream(
        &self,
        body: BoxStream<'_, Result<Bytes, std::io::Error>>,
        limit: Option<u64>,
    ) -> Result<StoredBlob, StorageError> {
        let staged = self.stage(body, limit).await?;
        let published = self.publish(&staged).await;
        let blob = staged.blob.clone();
        self.release(staged).await;
        published.map(|()| blob)
    }

    /// Stores a small blob under a key the caller chooses, replacing any previous one. Meant for
    /// derived data (image transforms keyed by content hash and transform) that is computed in
    /// memory anyway and can be recomputed, so it needs neither streaming nor content addressing.
    ///
    /// # Errors
    ///
    /// [`StorageError::Conflict`] for an invalid key, [`StorageError::Blob`] when the backend fails.
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<(), StorageError>;

    /// Streams a blob, or the half-open byte `range` of it.
    ///
    /// A range that runs past the end is cut at the end. Resolve ranges against
    /// [`head`](Self::head) first: a range that starts at or past the end is refused by the
    /// backend, with an error that differs from backend to backend.
    ///
    /// # Errors
    ///
    /// [`StorageError::NotFound`] (`what: "blob"`) when there is no such blob,
    /// [`StorageError::Conflict`] for an invalid key or an empty or reversed range,
    /// [`StorageError::Blob`] when the backend fails.
    async fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<BlobStream, StorageError>;

    /// The size of a blob, or `None` when there is none: lets a caller answer `HEAD`, resolve a
    /// `Range` header or skip recomputing a derived blob without opening a stream.
    ///
    /// # Errors
    ///
    /// [`StorageError::Conflict`] for an invalid key, [`StorageError::Blob`] when the backend fails.
    async fn head(&self, key: &str) -> Result<Option<u64>, StorageError>;

    /// Deletes a blob. A missing blob is not an error, so that a cleanup that was interrupted can
    /// simply be run again.
    ///
    /// # Errors
    ///
    /// [`StorageError::Conflict`] for an invalid key, [`StorageError::Blob`] when the backend fails.
    async fn delete(&self, key: &str) -> Result<(), StorageError>;

    /// Deletes the staging data of uploads (everything under the reserved `tmp/` prefix) last
    /// written more than `older_than` ago, and returns how many objects it removed. Nothing
    /// outside `tmp/` is ever touched.
    ///
    /// An upload streams to `tmp/` and its staged copy is released once its row is written; a
    /// process killed midway leaves its staging data behind for good. Call this at start-up with `older_than` at least
    /// the longest an upload can take, so that uploads still running on another replica sharing
    /// the store are left alone.
    ///
    /// The default does nothing and returns 0: for stores without a staging area (test doubles).
    ///
    /// # Errors
    ///
    /// [`StorageError::Blob`] or [`StorageError::Io`] when the staging area cannot be listed.
    /// An object that cannot be deleted is logged and skipped, so one bad entry does not stop the
    /// sweep.
    async fn sweep_staging(&self, older_than: Duration) -> Result<u64, StorageError> {
        let _ = older_than;
        Ok(0)
    }
}

/// Where an S3-compatible bucket is. Only what Vellum's own configuration names
/// (`VELLUM_S3_BUCKET`, `VELLUM_S3_ENDPOINT`): region and credentials come from the usual AWS
/// variables, read by [`ObjectBlobStore::s3`], so that instance roles, session tokens and the
/// rest of the AWS conventions work without Vellum knowing about each of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The bucket's name. It must exist: Vellum never creates buckets, whose policies and
    /// lifecycle rules are the operator's.
    pub bucket: String,
    /// The server's URL for S3-compatible services (MinIO, moto, R2, …), e.g.
    /// `http://127.0.0.1:9000`; `None` for AWS itself (or `AWS_ENDPOINT` from the environment).
    pub endpoint: Option<String>,
}

impl S3Config {
    /// The builder [`ObjectBlobStore::s3`] builds from: region and credentials from the
    /// environment, then this configuration on top.
    ///
    /// Public so that a caller can adjust what Vellum does not configure (client options, retries)
    /// or wrap the store (the tests give each test its own key prefix) and pass the result to
    /// [`ObjectBlobStore::new`].
    #[must_use]
    pub fn builder(&self) -> AmazonS3Builder {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&self.bucket);
        if let Some(endpoint) = &self.endpoint {
            // Custom endpoints are usually reached by address or by a name without a wildcard
            // DNS entry or certificate for `<bucket>.<host>`, so the bucket goes in the path.
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false);
            // object_store refuses plain HTTP unless told otherwise. An operator who writes an
            // `http://` endpoint has said so already; a second switch would only be a trap.
            if endpoint
                .get(..7)
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
            {
                builder = builder.with_allow_http(true);
            }
        }
        builder
    }
}

/// A [`BlobStore`] on any `object_store` backend.
///
/// The crate is built with object_store's `fs` and `aws` features: a local directory
/// ([`ObjectBlobStore::local`]) or an S3-compatible bucket ([`ObjectBlobStore::s3`]), with TLS by
/// rustls (no OpenSSL). An upload whose future is dropped midway (the request was cancelled) is
/// aborted from a spawned task; a lifecycle rule for incomplete multipart uploads on the bucket
/// still covers a crash.
#[derive(Debug, Clone)]
pub struct ObjectBlobStore {
    inner: Arc<dyn ObjectStore>,
    part_size: usize,
    /// The directory of a [local](Self::local) store. Its staging files (`tmp/<uuid>#<n>`, what
    /// object_store writes a multipart upload to) are invisible to object_store's `list`, so
    /// [`BlobStore::sweep_staging`] walks the directory itself.
    local_root: Option<PathBuf>,
}

impl ObjectBlobStore {
    /// A store on any `object_store` backend, configured by the caller (an S3 bucket, …).
    #[must_use]
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            part_size: REMOTE_PART_SIZE,
            local_root: None,
        }
    }

    /// The default store: a directory on the local disk (`VELLUM_FILES_DIR`), created if missing.
    ///
    /// Writes are fsynced before they are published: the database row that points at a blob is
    /// committed once it is published, and must not outlive the bytes after a power cut.
    ///
    /// # Errors
    ///
    /// [`StorageError::Io`] when the directory cannot be created, [`StorageError::Blob`] when it
    /// cannot be opened (not a directory, no permission).
    pub fn local(dir: &std::path::Path) -> Result<Self, StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::Io {
            op: "create files directory",
            source,
        })?;
        let fs = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|source| StorageError::Blob {
                op: "open files directory",
                source,
            })?
            .with_fsync(true)
            // Directories stay once made (256 fan-out ones under `sha256/`, `tmp/`, one per
            // content with derivatives). Removing a directory as its last file went raced with
            // requests writing into it: a publish whose `tmp/` vanished between its rename and
            // the rename's fsync failed, and identical uploads in parallel got 503s (review R12).
            .with_automatic_cleanup(false);
        Ok(Self {
            inner: Arc::new(fs),
            part_size: LOCAL_PART_SIZE,
            local_root: Some(dir.to_path_buf()),
        })
    }

    /// A store in an S3-compatible bucket, for several replicas sharing one set of blobs.
    ///
    /// Region and credentials come from the usual AWS variables (`AWS_REGION` or
    /// `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, and
    /// the others `object_store` knows, such as web identity tokens); without keys, the instance's
    /// role is asked. See [`S3Config::builder`] for what the configuration adds. Parts are
    /// 5 MiB, the smallest S3 accepts, so an upload holds at most 15 MiB in memory.
    ///
    /// Nothing is sent yet: a wrong bucket or credentials show on the first request (the readiness
    /// probe's business), not here.
    ///
    /// # Errors
    ///
    /// [`StorageError::Blob`] when the configuration is refused (an empty bucket name, an invalid
    /// `AWS_*` value). Its message names the problem, never a credential's value.
    pub fn s3(config: &S3Config) -> Result<Self, StorageError> {
        if config.bucket.is_empty() {
            return Err(StorageError::Blob {
                op: "configure S3 bucket",
                source: object_store::Error::Generic {
                    store: "S3",
                    source: "the bucket name is empty".into(),
                },
            });
        }
        let s3 = config
            .builder()
            .build()
            .map_err(|source| StorageError::Blob {
                op: "configure S3 bucket",
                source,
            })?;
        Ok(Self::new(Arc::new(s3)))
    }

    /// A store that keeps everything in memory, for tests of the layers above.
    #[must_use]
    pub fn in_memory() -> Self {
        Self {
            inner: Arc::new(InMemory::new()),
            part_size: LOCAL_PART_SIZE,
            local_root: None,
        }
    }

    /// Changes how many bytes an upload buffers before handing a part to the backend (at least 1).
    /// Tests use tiny parts to exercise multipart uploads with small files; S3 rejects parts under
    /// 5 MiB, the default for [`ObjectBlobStore::new`].
    #[must_use]
    pub fn with_part_size(mut self, part_size: usize) -> Self {
        // A part size of zero would make `WriteMultipart` loop forever on the first chunk.
        self.part_size = part_size.max(1);
        self
    }

    /// Whether `dest` holds an object.
    async fn exists(&self, dest: &Path) -> Result<bool, StorageError> {
        match self.inner.head(dest).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(source) => Err(StorageError::Blob {
                op: "look up blob",
                source,
            }),
        }
    }
}

/// The store path of a staged copy, checked to be one [`BlobStore::stage`] could have made: a
/// [`StagedBlob`] is a plain struct, and `publish` must not become a way to copy any object to a
/// content key.
fn staging_path(staging: &str) -> Result<Path, StorageError> {
    let path = Path::parse(staging).map_err(|error| {
        StorageError::conflict(format!("invalid staged upload {staging:?}: {error}"))
    })?;
    let mut parts = path.parts();
    let under_staging = parts.next().is_some_and(|p| p.as_ref() == TEMP_PREFIX)
        && parts.next().is_some()
        && parts.next().is_none();
    if under_staging {
        Ok(path)
    } else {
        Err(StorageError::conflict(format!(
            "invalid staged upload {staging:?}: not in the staging area"
        )))
    }
}

#[async_trait]
impl BlobStore for ObjectBlobStore {
    #[instrument(skip_all, fields(limit = ?limit, key = tracing::field::Empty), err(level = "debug"))]
    async fn stage(
        &self,
        body: BoxStream<'_, Result<Bytes, std::io::Error>>,
        limit: Option<u64>,
    ) -> Result<StagedBlob, StorageError> {
        let temp = Path::from_iter([TEMP_PREFIX, &uuid::Uuid::new_v4().to_string()]);
        let upload =
            self.inner
                .put_multipart(&temp)
                .await
                .map_err(|source| StorageError::Blob {
                    op: "start upload",
                    source,
                })?;
        let upload = Box::new(AbortOnDrop {
            upload: Some(upload),
        });
        let mut writer = WriteMultipart::new_with_chunk_size(upload, self.part_size);

        let (sha256, size) = match copy_body(body, &mut writer, limit).await {
            Ok(done) => done,
            Err(error) => {
                // Removes the staging file (local) or the uploaded parts (S3).
                if let Err(abort_error) = writer.abort().await {
                    tracing::warn!(%temp, error = &abort_error as &dyn std::error::Error, "could not abort a failed upload");
                }
                return Err(error);
            }
        };
        // `finish` aborts the upload itself when it fails.
        writer.finish().await.map_err(|source| StorageError::Blob {
            op: "finish upload",
            source,
        })?;

        let key = content_key(&sha256);
        tracing::Span::current().record("key", key.as_str());
        Ok(StagedBlob {
            blob: StoredBlob { key, sha256, size },
            staging: temp.to_string(),
        })
    }

    /// A copy, not a move: the staged copy must outlive the first publish, so that the row's
    /// transaction can put the blob back if a concurrent cleanup deleted it meanwhile. On the
    /// local disk the copy is a hard link (no bytes written twice); on S3 a server-side copy,
    /// as a rename was already (S3 has none).
    #[instrument(skip_all, fields(key = %staged.blob.key), err(level = "debug"))]
    async fn publish(&self, staged: &StagedBlob) -> Result<(), StorageError> {
        let dest = parse_key(&staged.blob.key)?;
        let temp = staging_path(&staged.staging)?;
        if self.exists(&dest).await? {
            return Ok(());
        }
        match self.inner.copy(&temp, &dest).await {
            Ok(()) => Ok(()),
            // Two copies racing for one key carry the same bytes and each replaces the key
            // atomically, so a failure that leaves the blob in place (another request's copy
            // landed) is the outcome that was asked for, not an outage.
            Err(source) => match self.exists(&dest).await {
                Ok(true) => Ok(()),
                Ok(false) | Err(_) => Err(StorageError::Blob {
                    op: "publish upload",
                    source,
                }),
            },
        }
    }

    #[instrument(skip_all, fields(key = %staged.blob.key))]
    async fn release(&self, staged: StagedBlob) {
        let Ok(temp) = staging_path(&staged.staging) else {
            return;
        };
        match self.inner.delete(&temp).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(error) => {
                // The outcome stands; the start-up sweep of `tmp/` takes what is left.
                tracing::warn!(%temp, error = &error as &dyn std::error::Error, "could not delete a staged upload");
            }
        }
    }

    #[instrument(skip_all, fields(key = %key, size = bytes.len()), err(level = "debug"))]
    async fn put_bytes(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let path = parse_key(key)?;
        self.inner
            .put(&path, PutPayload::from_bytes(bytes))
            .await
            .map(drop)
            .map_err(|source| StorageError::Blob {
                op: "write blob",
                source,
            })
    }

    #[instrument(skip_all, fields(key = %key, range = ?range), err(level = "debug"))]
    async fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<BlobStream, StorageError> {
        let path = parse_key(key)?;
        if let Some(range) = &range
            && range.start >= range.end
        {
            return Err(StorageError::conflict(format!(
                "the byte range {}..{} is empty",
                range.start, range.end
            )));
        }
        let result = self
            .inner
            .get_opts(&path, GetOptions::new().with_range(range))
            .await
            .map_err(|source| not_found_or(source, "read blob"))?;
        let size = result.meta.size;
        let range = result.range.clone();
        let stream = match result.payload {
            object_store::GetResultPayload::File(file, _) => file_stream(file, range.clone()),
            object_store::GetResultPayload::Stream(stream) => stream
                .map_err(|source| StorageError::Blob {
                    op: "read blob",
                    source,
                })
                .boxed(),
        };
        Ok(BlobStream {
            size,
            range,
            stream,
        })
    }

    #[instrument(skip_all, fields(key = %key), err(level = "debug"))]
    async fn head(&self, key: &str) -> Result<Option<u64>, StorageError> {
        let path = parse_key(key)?;
        match self.inner.head(&path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(source) => Err(StorageError::Blob {
                op: "look up blob",
                source,
            }),
        }
    }

    #[instrument(skip_all, fields(key = %key), err(level = "debug"))]
    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        let path = parse_key(key)?;
        match self.inner.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(StorageError::Blob {
                op: "delete blob",
                source,
            }),
        }
    }

    /// On a local store, walks `<dir>/tmp` and removes regular files (staging files and finished
    /// uploads never released) whose modification time is older than the cutoff: a
    /// running upload rewrites its staging file with every part, so it always looks recent.
    /// Elsewhere (S3), lists `tmp/` and deletes objects whose `last_modified` is older. S3 keeps
    /// the parts of an *unfinished* multipart upload outside any listing; those are the bucket's
    /// lifecycle rule's business ("abort incomplete multipart uploads"), as for a crash today.
    #[instrument(skip_all, fields(older_than = ?older_than, removed = tracing::field::Empty), err)]
    async fn sweep_staging(&self, older_than: Duration) -> Result<u64, StorageError> {
        let Some(cutoff) = SystemTime::now().checked_sub(older_than) else {
            return Ok(0);
        };
        let removed = match &self.local_root {
            Some(root) => {
                let staging = root.join(TEMP_PREFIX);
                tokio::task::spawn_blocking(move || sweep_dir(&staging, cutoff))
                    .await
                    .map_err(|error| StorageError::Io {
                        op: "sweep staging uploads",
                        source: std::io::Error::other(error),
                    })??
            }
            None => self.sweep_listed(cutoff).await?,
        };
        tracing::Span::current().record("removed", removed);
        if removed > 0 {
            tracing::info!(removed, "removed staging data of interrupted uploads");
        }
        Ok(removed)
    }
}

impl ObjectBlobStore {
    /// [`BlobStore::sweep_staging`] through object_store's listing of `tmp/` (S3, in memory).
    /// The prefix is matched by whole path segments, so `tmpfile/…` is not under it.
    async fn sweep_listed(&self, cutoff: SystemTime) -> Result<u64, StorageError> {
        let cutoff_ms = match cutoff.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
            Err(_) => return Ok(0),
        };
        let prefix = Path::from(TEMP_PREFIX);
        let mut listing = self.inner.list(Some(&prefix));
        let mut removed = 0;
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|source| StorageError::Blob {
                op: "list staging uploads",
                source,
            })?;
            if meta.last_modified.timestamp_millis() >= cutoff_ms {
                continue;
            }
            match self.inner.delete(&meta.location).await {
                Ok(()) => removed += 1,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(error) => {
                    let location = &meta.location;
                    tracing::warn!(%location, error = &error as &dyn std::error::Error, "could not delete a stale staging upload");
                }
            }
        }
        Ok(removed)
    }
}

/// Removes the regular files under `dir` (recursively) modified before `cutoff`; a missing `dir`
/// holds nothing. Symbolic links and other special files are left alone (never followed), and
/// so are directories: the staging area is flat, and an empty directory costs nothing.
fn sweep_dir(dir: &std::path::Path, cutoff: SystemTime) -> Result<u64, StorageError> {
    let io = |source| StorageError::Io {
        op: "sweep staging uploads",
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io(error)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(io(error)),
        };
        if meta.is_dir() {
            removed += sweep_dir(&path, cutoff)?;
            continue;
        }
        if !meta.is_file() || meta.modified().map_err(io)? >= cutoff {
            continue;
        }
        match std::fs::remove_file(&path) {
            Ok(()) => removed += 1,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                let path = path.display();
                tracing::warn!(%path, error = &error as &dyn std::error::Error, "could not delete a stale staging upload");
            }
        }
    }
    Ok(removed)
}

/// Streams `body` into `writer`, hashing and counting as it goes. Split out so that the caller has
/// one place to abort the upload, whichever way this fails.
async fn copy_body(
    mut body: BoxStream<'_, Result<Bytes, std::io::Error>>,
    writer: &mut WriteMultipart,
    limit: Option<u64>,
) -> Result<(String, u64), StorageError> {
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|source| StorageError::Io {
            op: "read upload",
            source,
        })?;
        size = size.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if let Some(limit) = limit
            && size > limit
        {
            // Checked before the chunk is written, so nothing past the limit is ever stored.
            return Err(StorageError::TooLarge { limit });
        }
        hasher.update(&chunk);
        // Back-pressure: without it a fast client and a slow backend would pile parts up in memory.
        writer
            .wait_for_capacity(MAX_PARTS_IN_FLIGHT)
            .await
            .map_err(|source| StorageError::Blob {
                op: "write upload",
                source,
            })?;
        writer.put(chunk);
    }
    Ok((hex::encode(hasher.finalize()), size))
}

/// Aborts a multipart upload that is dropped before it completed or was aborted.
///
/// When a client disconnects, the future running [`BlobStore::stage`] is dropped at some
/// `.await` and never reaches its own cleanup. The local store removes its staging file on drop,
/// but S3 keeps (and bills) the parts of an unfinished upload until it is aborted, so the abort is
/// sent from a spawned task. Without a Tokio runtime there is nowhere to run it; the bucket's
/// lifecycle rule for incomplete uploads is then the only cleanup.
#[derive(Debug)]
struct AbortOnDrop {
    /// `None` once the upload completed or was aborted: nothing is left to clean up.
    upload: Option<Box<dyn MultipartUpload>>,
}

impl AbortOnDrop {
    fn ended() -> object_store::Error {
        object_store::Error::Generic {
            store: "blob",
            source: "the upload already ended".into(),
        }
    }
}

#[async_trait]
impl MultipartUpload for AbortOnDrop {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        match &mut self.upload {
            Some(upload) => upload.put_part(data),
            None => Box::pin(async { Err(Self::ended()) }),
        }
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let upload = self.upload.as_mut().ok_or_else(Self::ended)?;
        let result = upload.complete().await?;
        self.upload = None;
        Ok(result)
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        let mut upload = self.upload.take().ok_or_else(Self::ended)?;
        upload.abort().await
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        let Some(mut upload) = self.upload.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = upload.abort().await {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "could not abort a cancelled upload"
                    );
                }
            });
        }
    }
}

/// How much of a local file one blocking read returns. object_store reads 8 KiB per call on the
/// blocking pool, so a 150 KB image cost 19 thread round trips (most of a content request's time
/// in the profile); most files and transforms now take one.
const LOCAL_READ_CHUNK: u64 = 256 * 1024;

/// `range` of a local file, read on the blocking pool in [`LOCAL_READ_CHUNK`]s.
fn file_stream(
    file: std::fs::File,
    range: Range<u64>,
) -> BoxStream<'static, Result<Bytes, StorageError>> {
    futures_util::stream::try_unfold((file, range.start), move |(file, position)| {
        let end = range.end;
        async move {
            if position >= end {
                return Ok(None);
            }
            let len = (end - position).min(LOCAL_READ_CHUNK);
            // The buffer is allocated here, on the task's own thread, which also frees it once
            // the response is written. Allocated on the blocking pool's thread instead, each
            // freed buffer went back to that thread's allocator heap, dozens of such threads
            // kept them, and 32 concurrent downloads left the server at 127 MiB of heap for
            // good (issue 23); now the pool's threads allocate nothing.
            let mut buf = vec![0; usize::try_from(len).unwrap_or(0)];
            let read = tokio::task::spawn_blocking(move || {
                use std::io::{Read as _, Seek as _, SeekFrom};
                let mut file = file;
                file.seek(SeekFrom::Start(position))?;
                file.read_exact(&mut buf)?;
                Ok::<_, std::io::Error>((file, buf))
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|read| read)
            .map_err(|source| StorageError::Io {
                op: "read blob",
                source,
            })?;
            let (file, buf) = read;
            Ok(Some((Bytes::from(buf), (file, position + len))))
        }
    })
    .boxed()
}

/// The key of content with this SHA-256. The two-character directory keeps any one directory of
/// a local store to a few thousand entries, however many files there are.
fn content_key(sha256: &str) -> String {
    let fan_out = sha256.get(..2).unwrap_or(sha256);
    format!("{CONTENT_PREFIX}/{fan_out}/{sha256}")
}

fn not_found_or(source: object_store::Error, op: &'static str) -> StorageError {
    match source {
        object_store::Error::NotFound { .. } => StorageError::NotFound { what: "blob" },
        source => StorageError::Blob { op, source },
    }
}

/// Checks a caller's key and turns it into a store path. Stricter than `object_store` needs:
/// the rules are what makes a key safe as a path on disk and portable to S3, and they are checked
/// here, once, rather than trusted to each backend.
fn parse_key(key: &str) -> Result<Path, StorageError> {
    if key.len() > MAX_KEY_LEN {
        return Err(StorageError::conflict(format!(
            "a blob key must be at most {MAX_KEY_LEN} bytes long"
        )));
    }
    let invalid = |why: &str| StorageError::conflict(format!("invalid blob key {key:?}: {why}"));
    if key.is_empty() {
        return Err(invalid("it is empty"));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
    {
        return Err(invalid(
            "only ASCII letters, digits, '.', '_', '-' and '/' are allowed",
        ));
    }
    if key.starts_with('/') {
        return Err(invalid("it must not start with '/'"));
    }
    if key.contains("..") {
        return Err(invalid("it must not contain '..'"));
    }
    let mut segments = key.split('/');
    if segments.clone().any(str::is_empty) {
        return Err(invalid("it has an empty segment"));
    }
    if segments.clone().any(|segment| segment == ".") {
        return Err(invalid("it has a '.' segment"));
    }
    if segments.next() == Some(TEMP_PREFIX) {
        return Err(invalid(
            "the 'tmp/' prefix is reserved for uploads in progress",
        ));
    }
    Path::parse(key).map_err(|error| invalid(&error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_keys_the_system_builds() {
        let hash = "ab".repeat(32);
        for key in [
            content_key(&hash),
            format!("transforms/{hash}/w-100_h-50.webp"),
            "a".to_owned(),
            "a/b/c.d-e_f".to_owned(),
            "tmpfile/x".to_owned(),
            "x/tmp/y".to_owned(),
        ] {
            let path = parse_key(&key).unwrap();
            assert_eq!(path.as_ref(), key, "the store path must be the key itself");
        }
    }

    #[test]
    fn rejects_keys_that_could_escape_or_are_not_portable() {
        let too_long = "a".repeat(MAX_KEY_LEN + 1);
        for key in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/..",
            "..",
            "a..b",
            "./a",
            "a/./b",
            ".",
            "a//b",
            "a/",
            "a\\b",
            "a b",
            "a#1",
            "é",
            "a\0b",
            "tmp/x",
            "tmp",
            too_long.as_str(),
        ] {
            let err = parse_key(key).unwrap_err();
            assert!(
                matches!(err, StorageError::Conflict { ref message, .. } if message.contains("blob key")),
                "{key:?}: {err:?}"
            );
        }
    }

    #[test]
    fn longest_allowed_key_is_accepted() {
        parse_key(&"a".repeat(MAX_KEY_LEN)).unwrap();
    }

    #[test]
    fn content_keys_fan_out_on_the_first_two_hex_digits() {
        let hash = format!("3f{}", "0".repeat(62));
        assert_eq!(content_key(&hash), format!("sha256/3f/{hash}"));
    }

    #[test]
    fn an_empty_bucket_name_is_refused() {
        let config = S3Config {
            bucket: String::new(),
            endpoint: Some("http://127.0.0.1:1".to_owned()),
        };
        let err = ObjectBlobStore::s3(&config).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::Blob {
                    op: "configure S3 bucket",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn an_s3_store_is_built_without_contacting_the_server() {
        // Port 1 on loopback: nothing answers there, and nothing is asked yet.
        let config = S3Config {
            bucket: "vellum".to_owned(),
            endpoint: Some("http://127.0.0.1:1".to_owned()),
        };
        let store = ObjectBlobStore::s3(&config).unwrap();
        assert_eq!(store.part_size, REMOTE_PART_SIZE);
    }

    #[test]
    fn part_size_is_never_zero() {
        // A zero part size would hang `WriteMultipart::put` forever.
        assert_eq!(ObjectBlobStore::in_memory().with_part_size(0).part_size, 1);
    }
}
