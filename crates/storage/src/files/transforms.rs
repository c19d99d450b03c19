//! The cache records of image transforms: outputs are cached per content hash
//! (`file_transforms`) and kept under a byte cap per original: [`record_transform`] evicts the
//! least recently used outputs of the same content in the transaction that records a new one,
//! and hands back the blob keys to delete.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

use super::IDS_PER_QUERY;
use crate::StorageError;
use crate::sql::{Sql, begin_write, id_param, now};

/// A cached transform output, shared by every file with the same content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTransform {
    pub storage_key: String,
    pub mime_type: String,
    pub filesize: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
    /// When the output was last saved or [touched](touch_transform): the order in which
    /// [`record_transform`] evicts. Whole seconds.
    pub last_used_at: OffsetDateTime,
}

impl StoredTransform {
    /// Whether serving this output at `now` should [touch](touch_transform) it: its
    /// `last_used_at` is at least [`TOUCH_INTERVAL`] old. Reading the answer from the row just
    /// found throttles touches across requests and replicas without any memory of its own, so a
    /// popular derivative costs one small write a minute, not one per request.
    #[must_use]
    pub fn needs_touch(&self, now: OffsetDateTime) -> bool {
        now - self.last_used_at >= TOUCH_INTERVAL
    }
}

/// How stale a derivative's `last_used_at` may get while it is being served before it is
/// [touched](touch_transform) again (see [`StoredTransform::needs_touch`]). Least-recently-used
/// order is therefore exact to about a minute, which is all eviction needs.
pub const TOUCH_INTERVAL: time::Duration = time::Duration::MINUTE;

/// How many bytes of derivatives one original (one content hash) may keep:
/// `factor × original size + floor_bytes`.
///
/// With [`DerivativeCap::DEFAULT`] (factor 4, floor 1 MiB) an anonymous client asking for every
/// `size-N` of a public image makes the server store at most four times the image plus 1 MiB,
/// plus one output (the one just saved is never evicted, so a single output larger than the cap
/// is still kept until the next save). Each stored output is a re-encoding of at most the
/// original's pixels, so a handful of the largest derivatives fit: the presets and the sizes
/// actually in use stay cached, and a scan over all 4,096 `size-N` keys only churns the cache
/// instead of growing it. The floor keeps small originals (an icon of a few KiB) from thrashing
/// their thumbnails: 1 MiB holds dozens of small outputs whatever the original's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerivativeCap {
    /// Multiple of the original's size.
    pub factor: u64,
    /// Bytes allowed on top, whatever the original's size.
    pub floor_bytes: u64,
}

impl DerivativeCap {
    /// What the server uses unless configured otherwise: 4 × the original + 1 MiB.
    pub const DEFAULT: Self = Self {
        factor: 4,
        floor_bytes: 1024 * 1024,
    };

    /// The cap for an original of `original_size` bytes (saturating: never overflows).
    #[must_use]
    pub fn bytes_for(self, original_size: u64) -> u64 {
        self.factor
            .saturating_mul(original_size)
            .saturating_add(self.floor_bytes)
    }
}

impl Default for DerivativeCap {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What [`record_transform`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedTransform {
    /// The record that holds for the saved key (the first one saved when two renders raced).
    /// When its `storage_key` differs from the one just written, the caller's new blob is
    /// unused (and the caller may delete it if no row names it).
    pub transform: StoredTransform,
    /// Blob keys of the outputs evicted to keep the cap, least recently used first. Their rows
    /// are gone (committed); the caller deletes these blobs now, after the commit. Keys still
    /// named by another transform row or by a file are left out, so deleting every key listed
    /// is always safe.
    pub evicted: Vec<String>,
}

/// One stored derivative of a content hash, as [`list_transforms`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformEntry {
    pub key: String,
    pub storage_key: String,
    pub filesize: Option<i64>,
    pub last_used_at: OffsetDateTime,
}

/// A transform output just written to the blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTransform<'a> {
    /// The file whose request produced it; the record goes when that file is purged.
    pub file_id: i64,
    pub content_hash: &'a str,
    pub key: &'a str,
    pub storage_key: &'a str,
    pub mime_type: &'a str,
    pub filesize: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
}

/// First key of the PostgreSQL advisory locks that serialize [`record_transform`] per content
/// hash ("VTFR"); the second key is a hash of the content hash. The two-key form is a lock space
/// of its own, apart from the folder tree's (`TREE_LOCK_KEY`).
const TRANSFORM_LOCK_CLASS: i32 = 0x5654_4652;

/// The cached output of transform `key` for content `content_hash`, if one was saved.
///
/// A read only: it never writes, so serving a cached derivative takes no write lock. The caller
/// touches what it serves when [`StoredTransform::needs_touch`] says so (see [`touch_transform`]).
/// A row may outlive its blob for a moment (eviction deletes the row, then the blob; a re-render
/// racing an eviction may lose its blob): check the blob with `head` and re-render when it is
/// missing.
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err, fields(key))]
pub async fn find_transform<C: ConnectionTrait>(
    db: &C,
    content_hash: &str,
    key: &str,
) -> Result<Option<StoredTransform>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT storage_key, mime_type, filesize, width, height, last_used_at \
         FROM file_transforms WHERE content_hash = ",
    )
    .bind(content_hash)
    .push(" AND \"key\" = ")
    .bind(key);
    sql.one_as::<TransformRow, _>(db)
        .await?
        .map(StoredTransform::try_from)
        .transpose()
}

/// Records a transform output under the per-original byte cap `cap_bytes` (see
/// [`DerivativeCap`]), evicting least-recently-used outputs of the same content, and returns the
/// record that holds with the blob keys to delete.
///
/// One transaction: the row is inserted with `last_used_at = at` (when the key is already
/// recorded, the first record is kept (two renders of one output may race: both callers then serve the first blob) and touched instead); then,
/// while the summed `filesize` of the content's derivatives exceeds `cap_bytes`, the least
/// recently used *other* rows are deleted (ties: the oldest row first). The row of `new.key` is
/// never evicted by its own save, so the total after a save is at most `cap_bytes`, or that one
/// output alone when it is larger than the cap.
///
/// **The caller deletes the blobs in [`RecordedTransform::evicted`] after this returns**: the
/// row goes first, so a concurrent reader never finds a row whose blob is gone for more than a
/// moment (and re-checks with `head` anyway). Blob deletion failing leaves an orphan blob, never
/// a dangling row.
///
/// Concurrent saves for one content are serialized, so the cap holds whatever the interleaving
/// and every row is either kept or reported evicted exactly once: on SQLite by the database's
/// write lock taken at `BEGIN IMMEDIATE` (as the file-tree writes do); on PostgreSQL by a
/// transaction-scoped advisory lock per content hash (`pg_advisory_xact_lock(class, hash)`), so
/// saves of different images and tree writes do not wait for each other. `at` is truncated to
/// whole seconds.
///
/// # Errors
/// [`StorageError::NotFound`] when `file_id` cannot be an id; [`StorageError::Conflict`] when
/// `new.filesize` is missing or negative (a capped output must say how big it is);
/// [`StorageError::Db`] when a query fails (also when `file_id` names no file).
#[instrument(skip_all, err, fields(file_id = new.file_id, key = new.key, cap_bytes = cap_bytes))]
pub async fn record_transform<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    new: &NewTransform<'_>,
    cap_bytes: u64,
    at: OffsetDateTime,
) -> Result<RecordedTransform, StorageError> {
    let file_id = id_param(new.file_id).ok_or(StorageError::NotFound { what: "file" })?;
    if new.filesize.is_none_or(|size| size < 0) {
        return Err(StorageError::conflict(
            "a transform output recorded under a cap needs its size".to_owned(),
        ));
    }
    let at = whole_seconds(at);
    let txn = begin_write(db).await?;
    lock_transforms(&txn, new.content_hash).await?;
    let backend = txn.get_database_backend();

    let mut sql = Sql::new(backend);
    sql.push(
        "INSERT INTO file_transforms (file_id, content_hash, \"key\", storage_key, mime_type, \
         filesize, width, height, created_at, last_used_at) VALUES (",
    )
    .bind(file_id)
    .push(", ")
    .bind(new.content_hash)
    .push(", ")
    .bind(new.key)
    .push(", ")
    .bind(new.storage_key)
    .push(", ")
    .bind(new.mime_type)
    .push(", ")
    .bind(new.filesize)
    .push(", ")
    .bind(new.width)
    .push(", ")
    .bind(new.height)
    .push(", ")
    .bind(now())
    .push(", ")
    .bind(at)
    .push(") ON CONFLICT (content_hash, \"key\") DO NOTHING");
    if sql.execute(&txn).await? == 0 {
        // Already recorded (a racing render won, or a re-save): keep that record, count the
        // save as a use.
        touch_transform(&txn, new.content_hash, new.key, at).await?;
    }

    let evicted = evict_over_cap(&txn, new.content_hash, new.key, cap_bytes).await?;
    let evicted = unreferenced_keys(&txn, evicted).await?;
    let transform = find_transform(&txn, new.content_hash, new.key)
        .await?
        .ok_or_else(|| StorageError::corrupt("a saved transform record cannot be read back"))?;
    txn.commit().await?;
    Ok(RecordedTransform { transform, evicted })
}

/// Marks the output of `key` for `content_hash` as used at `at` (truncated to whole seconds);
/// `last_used_at` only ever moves forward. Returns whether a row changed (false when there is no
/// such record, e.g. it was just evicted, or it was already used at `at` or later).
///
/// One single-row `UPDATE`, no lock of its own: a touch racing an eviction either lands first
/// (the row is then recent and another is evicted) or finds no row. It is still a write (on
/// SQLite it takes the database's write lock for a moment), so the HTTP layer calls it only when
/// [`StoredTransform::needs_touch`] says so: at most once a minute per derivative.
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err, fields(key))]
pub async fn touch_transform<C: ConnectionTrait>(
    db: &C,
    content_hash: &str,
    key: &str,
    at: OffsetDateTime,
) -> Result<bool, StorageError> {
    let at = whole_seconds(at);
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("UPDATE file_transforms SET last_used_at = ")
        .bind(at)
        .push(" WHERE content_hash = ")
        .bind(content_hash)
        .push(" AND \"key\" = ")
        .bind(key)
        .push(" AND last_used_at < ")
        .bind(at);
    Ok(sql.execute(db).await? > 0)
}

/// Every stored derivative of `content_hash`, least recently used first (the order
/// [`record_transform`] evicts in). For tests, operators and the path that deletes a file's
/// derivatives with its content ([`delete_transforms`]).
///
/// # Errors
/// [`StorageError::Db`] when the query fails.
#[instrument(skip_all, err)]
pub async fn list_transforms<C: ConnectionTrait>(
    db: &C,
    content_hash: &str,
) -> Result<Vec<TransformEntry>, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT \"key\", storage_key, filesize, last_used_at FROM file_transforms \
         WHERE content_hash = ",
    )
    .bind(content_hash)
    .push(" ORDER BY last_used_at, id");
    sql.all_as::<EntryRow, _>(db)
        .await?
        .into_iter()
        .map(|row| {
            Ok(TransformEntry {
                key: row.key,
                storage_key: row.storage_key,
                filesize: row.filesize,
                last_used_at: last_used(row.last_used_at)?,
            })
        })
        .collect()
}

/// Deletes every derivative record of `content_hash` and returns the blob keys to delete after
/// the commit (keys another transform row or a file still names are left out). For the path
/// that purges content no file uses any more.
///
/// # Errors
/// [`StorageError::Db`] when a query fails.
#[instrument(skip_all, err)]
pub async fn delete_transforms<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    content_hash: &str,
) -> Result<Vec<String>, StorageError> {
    let txn = begin_write(db).await?;
    lock_transforms(&txn, content_hash).await?;
    let keys: Vec<String> = list_transforms(&txn, content_hash)
        .await?
        .into_iter()
        .map(|entry| entry.storage_key)
        .collect();
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("DELETE FROM file_transforms WHERE content_hash = ")
        .bind(content_hash);
    sql.execute(&txn).await?;
    let keys = unreferenced_keys(&txn, keys).await?;
    txn.commit().await?;
    Ok(keys)
}

/// Deletes the least recently used rows of `content_hash` other than `keep` until the summed
/// `filesize` is at most `cap_bytes`, and returns their storage keys in eviction order. Runs
/// inside [`record_transform`]'s transaction, under its lock.
async fn evict_over_cap<C: ConnectionTrait>(
    txn: &C,
    content_hash: &str,
    keep: &str,
    cap_bytes: u64,
) -> Result<Vec<String>, StorageError> {
    // SUM of a bigint is numeric on PostgreSQL: cast it back so both backends give an i64.
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push(
        "SELECT CAST(COALESCE(SUM(filesize), 0) AS BIGINT) AS total FROM file_transforms \
         WHERE content_hash = ",
    )
    .bind(content_hash);
    let total = sql
        .one_as::<TotalRow, _>(txn)
        .await?
        .map_or(0, |row| row.total);
    let mut total = u64::try_from(total).unwrap_or(0);
    if total <= cap_bytes {
        return Ok(Vec::new());
    }
    // Over the cap: walk the others from the least recently used. How many rows one content can
    // have is bounded by the transform keys (presets and `size-N`), so reading them is cheap,
    // and this only runs when a save pushed the total over.
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("SELECT id, storage_key, filesize FROM file_transforms WHERE content_hash = ")
        .bind(content_hash)
        .push(" AND \"key\" <> ")
        .bind(keep)
        .push(" ORDER BY last_used_at, id");
    let mut ids = Vec::new();
    let mut keys = Vec::new();
    for row in sql.all_as::<EvictRow, _>(txn).await? {
        if total <= cap_bytes {
            break;
        }
        let size = row
            .filesize
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0);
        total = total.saturating_sub(size);
        ids.push(row.id);
        keys.push(row.storage_key);
    }
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("DELETE FROM file_transforms WHERE id IN ");
        sql.bind_list(chunk.iter().copied());
        sql.execute(txn).await?;
    }
    Ok(keys)
}

/// `keys` without those a transform row or a file row still names, in order and deduplicated:
/// the blobs that may be deleted.
pub(super) async fn unreferenced_keys<C: ConnectionTrait>(
    txn: &C,
    mut keys: Vec<String>,
) -> Result<Vec<String>, StorageError> {
    let mut seen = std::collections::HashSet::new();
    keys.retain(|key| seen.insert(key.clone()));
    let mut used = std::collections::HashSet::new();
    for chunk in keys.chunks(IDS_PER_QUERY / 2) {
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push("SELECT storage_key FROM file_transforms WHERE storage_key IN ");
        sql.bind_list(chunk.iter().map(String::as_str));
        sql.push(" UNION SELECT storage_key FROM files WHERE storage_key IN ");
        sql.bind_list(chunk.iter().map(String::as_str));
        for row in sql.all_as::<KeyRow, _>(txn).await? {
            used.insert(row.storage_key);
        }
    }
    keys.retain(|key| !used.contains(key));
    Ok(keys)
}

/// Serializes [`record_transform`] and [`delete_transforms`] for one content hash on PostgreSQL;
/// on SQLite `BEGIN IMMEDIATE` already holds the database's write lock. Released at commit or
/// rollback.
pub(super) async fn lock_transforms<C: ConnectionTrait>(
    txn: &C,
    content_hash: &str,
) -> Result<(), StorageError> {
    if txn.get_database_backend() == DbBackend::Postgres {
        let mut sql = Sql::new(DbBackend::Postgres);
        sql.push("SELECT pg_advisory_xact_lock(")
            .bind(TRANSFORM_LOCK_CLASS)
            .push(", ")
            .bind(lock_slot(content_hash))
            .push(")");
        sql.execute(txn).await?;
    }
    Ok(())
}

/// The second advisory-lock key of a content hash: 32-bit FNV-1a of its bytes. Two hashes that
/// share a slot only wait for each other; nothing else depends on it.
fn lock_slot(content_hash: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for byte in content_hash.bytes() {
        h ^= u32::from(byte);
        h = h.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(h.to_ne_bytes())
}

/// `at` without its fraction of a second. On SQLite timestamps are RFC 3339 text, which compares
/// in time order only between values of the same shape (`…:05Z` sorts after `…:05.5Z`); whole
/// seconds give every `last_used_at` one shape, and minute-grained touches need no more.
fn whole_seconds(at: OffsetDateTime) -> OffsetDateTime {
    at.to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .unwrap_or(at)
}

fn last_used(at: Option<OffsetDateTime>) -> Result<OffsetDateTime, StorageError> {
    at.ok_or_else(|| StorageError::corrupt("a transform record has no last_used_at"))
}

/// A transform record as [`find_transform`] reads it.
#[derive(FromQueryResult)]
struct TransformRow {
    storage_key: String,
    mime_type: String,
    filesize: Option<i64>,
    width: Option<i32>,
    height: Option<i32>,
    last_used_at: Option<OffsetDateTime>,
}

impl TryFrom<TransformRow> for StoredTransform {
    type Error = StorageError;

    fn try_from(row: TransformRow) -> Result<Self, StorageError> {
        Ok(StoredTransform {
            storage_key: row.storage_key,
            mime_type: row.mime_type,
            filesize: row.filesize,
            width: row.width,
            height: row.height,
            last_used_at: last_used(row.last_used_at)?,
        })
    }
}

/// A transform record as [`list_transforms`] reads it.
#[derive(FromQueryResult)]
struct EntryRow {
    key: String,
    storage_key: String,
    filesize: Option<i64>,
    last_used_at: Option<OffsetDateTime>,
}

/// An eviction candidate.
#[derive(FromQueryResult)]
struct EvictRow {
    id: i32,
    storage_key: String,
    filesize: Option<i64>,
}

/// A blob key still named by a row.
#[derive(FromQueryResult)]
struct KeyRow {
    storage_key: String,
}

/// The bytes of a content's outputs together.
#[derive(FromQueryResult)]
struct TotalRow {
    total: i64,
}
