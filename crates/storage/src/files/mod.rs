//! The file manager's rows: files and folders in one tree (`files.parent_id`), their visibility,
//! and the cache records of image transforms.
//!
//! Effective visibility is resolved in SQL, for many rows at once, by a recursive CTE that walks up
//! `parent_id` (`push_visible_cte`); it implements the rule of
//! [`vellum_policy::effective_visibility`] (own `access`, else the nearest ancestor's, a null chain
//! reaching the root is public) so lists can be paginated and counted after private entries are
//! dropped, which a per-row check in Rust could not do without loading every row.
//!
//! Writes that change the shape of the tree (creating, moving, renaming a folder, creating a file,
//! soft-deleting) check their preconditions and write in one transaction. On PostgreSQL they also
//! take one transaction-scoped advisory lock first: under READ COMMITTED two concurrent writers
//! could otherwise both pass a check (two folders of the same name, a cycle built by two moves, a
//! file uploaded into a folder being deleted). On SQLite they begin IMMEDIATE, which takes the
//! single write lock up front and so serializes them the same way.
//!
//! Uploads share content-addressed blobs, so a blob outlives any one row. It is created before
//! its row and deleted only when no row names it; [`create_uploaded_file`] and
//! [`delete_unused_blob`] meet under the same lock so that the delete of a blob that looks unused
//! can never win against a row being written for it (see [`crate::blob`] for the whole protocol).
//! Soft-deleting a file keeps its blob (it can be restored).
//!
//! Transform outputs are cached per content hash (`file_transforms`) and kept under a byte cap
//! per original: [`record_transform`] evicts the least recently used outputs of the same content
//! in the transaction that records a new one, and hands back the blob keys to delete.

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult, TransactionSession, TransactionTrait};
use time::OffsetDateTime;
use tracing::instrument;

pub use vellum_policy::Visibility;

use vellum_policy::{Authorized, FileAction, FileWrite};

use crate::StorageError;
use crate::blob::{BlobStore, StagedBlob};
use crate::jobs::{Outbox, enqueue_outbox};
use tree::{check_folder_name_free, check_name, is_ancestor_or_self, live_parent, lock_tree};

pub mod browse;
pub mod copy;
pub mod favorites;
pub mod replace;
pub mod tags;
mod transforms;
pub mod trash;
pub(crate) mod tree;
pub mod upload;
use crate::sql::{Sql, begin_write, id_param, like_pattern, now};
pub use transforms::{
    DerivativeCap, NewTransform, RecordedTransform, StoredTransform, TOUCH_INTERVAL,
    TransformEntry, delete_transforms, find_transform, list_transforms, record_transform,
    touch_transform,
};

/// Whether a row is a file with content or a folder that only groups other rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    File,
    Folder,
}

impl FileKind {
    /// The stored `files.type` value, which is also the API's `type`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Folder => "folder",
        }
    }

    fn parse(raw: &str) -> Result<Self, StorageError> {
        match raw {
            "file" => Ok(Self::File),
            "folder" => Ok(Self::Folder),
            other => Err(StorageError::corrupt(format!(
                "unknown file type {other:?}"
            ))),
        }
    }
}

/// A live (not soft-deleted) row of `files` with its effective visibility.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    pub id: i64,
    pub parent_id: Option<i64>,
    pub kind: FileKind,
    /// The stored `access`; `None` inherits from the parent folder.
    pub access: Option<Visibility>,
    /// What access checks must use: the stored `access` resolved through the ancestors.
    pub effective: Visibility,
    pub filename: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub location: Option<String>,
    pub download_name: Option<String>,
    pub mime_type: Option<String>,
    pub extension: Option<String>,
    pub filesize: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub focal_point_x: Option<f64>,
    pub focal_point_y: Option<f64>,
    pub content_hash: Option<String>,
    pub storage_key: Option<String>,
    pub created_at: Option<OffsetDateTime>,
    pub updated_at: Option<OffsetDateTime>,
    /// Always `None` on rows read here (they are live); kept so the type mirrors the table.
    pub deleted_at: Option<OffsetDateTime>,
}

/// An uploaded file whose bytes are already in the blob store under `storage_key`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewFile {
    pub parent_id: Option<i64>,
    pub filename: String,
    pub mime_type: Option<String>,
    pub extension: Option<String>,
    pub filesize: Option<i64>,
    pub width: Option<i32>,
    pub height: Option<i32>,
    pub content_hash: Option<String>,
    pub storage_key: Option<String>,
    pub title: Option<String>,
}

/// Which folder a list looks into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentFilter {
    /// Rows at the top level (`parent_id` null).
    Root,
    /// Direct children of one folder (not its deeper descendants).
    Folder(i64),
    /// Every folder: what a search without `parent_id` means.
    Any,
}

/// A `GET /files` query after the HTTP layer parsed and validated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListFiles<'a> {
    pub parent: ParentFilter,
    /// A case-insensitive substring of `filename` or `title`, taken literally (`%`, `_` and `\`
    /// are not wildcards).
    pub search: Option<&'a str>,
    /// False for a role without `read_private`: effective-private rows are then left out of the
    /// items and of the total, so neither leaks that they exist.
    pub include_private: bool,
    /// 1-based; 0 counts as 1.
    pub page: u64,
    /// At least 1 (0 counts as 1); the HTTP layer enforces the maximum.
    pub per_page: u64,
}

/// One page of a file list.
#[derive(Debug, Clone, PartialEq)]
pub struct FilePage {
    pub items: Vec<StoredFile>,
    pub total: u64,
    pub current_page: u64,
    pub per_page: u64,
    /// At least 1, so an empty list still has a page to point at.
    pub last_page: u64,
}

/// A metadata update: `None` leaves a column alone, `Some(None)` clears a nullable one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilePatch {
    pub title: Option<Option<String>>,
    pub description: Option<Option<String>>,
    pub location: Option<Option<String>>,
    pub download_name: Option<Option<String>>,
    /// 0 to 1. The HTTP layer validates first so the 422 names the field; the check here only
    /// keeps a bad value out of the database.
    pub focal_point_x: Option<Option<f64>>,
    pub focal_point_y: Option<Option<f64>>,
    pub filename: Option<String>,
    pub access: Option<Option<Visibility>>,
    /// `Some(None)` moves the row to the top level.
    pub parent_id: Option<Option<i64>>,
    /// Text for assistive technology (the admin file manager's metadata).
    pub alt_text: Option<Option<String>>,
    /// A JSON object of the project's own metadata; the application layer bounds its size.
    pub custom_fields: Option<Option<serde_json::Value>>,
}

/// The columns every read selects from the `visible` CTE, in [`FileRow`]'s terms.
const COLUMNS: &str = "id, parent_id, type, access, filename, title, description, location, \
     download_name, mime_type, extension, filesize, width, height, focal_point_x, focal_point_y, \
     content_hash, storage_key, created_at, updated_at, deleted_at, effective_access";

/// How many ids [`get_files`] binds per statement: far above an item page's file fields, and
/// well under SQLite's limit on bound parameters.
const IDS_PER_QUERY: usize = 5_000;

/// One live file or folder, or `None` when it does not exist or is soft-deleted.
///
/// # Errors
/// [`StorageError::Db`] when the query fails; [`StorageError::Corrupt`] on an unreadable row.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn get_file<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<StoredFile>, StorageError> {
    let Some(id) = id_param(id) else {
        return Ok(None);
    };
    let mut sql = Sql::new(db.get_database_backend());
    push_visible_cte(&mut sql, |sql| {
        sql.push("f.id = ").bind(id);
    });
    sql.push("SELECT ").push(COLUMNS).push(" FROM visible");
    sql.one_as::<FileRow, _>(db)
        .await?
        .map(StoredFile::try_from)
        .transpose()
}

/// Live files among `ids`, ordered by id; missing and soft-deleted ids are left out. Item
/// expansion calls it once per page, so the visibility of every file field resolves in one query
/// (per 5 000 distinct ids) instead of one per item.
///
/// # Errors
/// [`StorageError::Db`] when the query fails; [`StorageError::Corrupt`] on an unreadable row.
#[instrument(skip_all, err, fields(count = ids.len()))]
pub async fn get_files<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<StoredFile>, StorageError> {
    let mut ids: Vec<i32> = ids.iter().copied().filter_map(id_param).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut files = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let mut sql = Sql::new(db.get_database_backend());
        push_visible_cte(&mut sql, |sql| {
            sql.push("f.id IN ");
            sql.bind_list(chunk.iter().copied());
        });
        sql.push("SELECT ")
            .push(COLUMNS)
            .push(" FROM visible ORDER BY id");
        for row in sql.all_as::<FileRow, _>(db).await? {
            files.push(StoredFile::try_from(row)?);
        }
    }
    Ok(files)
}

/// One page of live rows. Order: folders first, then by `lower(filename)` in byte order, then by
/// filename, then by id so pages never overlap when names repeat. SQLite's `lower` (and its
/// `LIKE`) folds ASCII letters only, PostgreSQL's all of Unicode: names and searches with
/// non-ASCII capitals may differ between the backends; ASCII behaves the same on both.
///
/// The total and the page come from one statement, so they agree even while others write.
///
/// # Errors
/// [`StorageError::Db`] when the query fails; [`StorageError::Corrupt`] on an unreadable row.
#[instrument(skip_all, err, fields(page = query.page, per_page = query.per_page))]
pub async fn list_files<C: ConnectionTrait>(
    db: &C,
    query: ListFiles<'_>,
) -> Result<FilePage, StorageError> {
    let page = query.page.max(1);
    let per_page = query.per_page.max(1);
    let offset = (page - 1).saturating_mul(per_page);
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    push_visible_cte(&mut sql, |sql| {
        match query.parent {
            ParentFilter::Root => {
                sql.push("f.parent_id IS NULL");
            }
            ParentFilter::Folder(id) => {
                // An id outside i32 binds NULL, which matches nothing: an empty folder.
                sql.push("f.parent_id = ").bind(id_param(id));
            }
            ParentFilter::Any => {
                sql.push("1 = 1");
            }
        }
        if let Some(term) = query.search {
            let pattern = like_pattern(term);
            sql.push(" AND (lower(f.filename) LIKE lower(")
                .bind(pattern.clone())
                .push(") ESCAPE '\\' OR lower(f.title) LIKE lower(")
                .bind(pattern)
                .push(") ESCAPE '\\')");
        }
    });
    // PostgreSQL compares text by the database's locale, SQLite by bytes: "C" makes the order
    // the same on both.
    let collate = if backend == DbBackend::Postgres {
        " COLLATE \"C\""
    } else {
        ""
    };
    let order = format!("sort_kind, sort_name{collate}, filename{collate}, id");
    sql.push("SELECT t.total, p.* FROM (SELECT COUNT(*) AS total FROM visible");
    if !query.include_private {
        sql.push(" WHERE effective_access = 'public'");
    }
    sql.push(") t LEFT JOIN (SELECT * FROM visible");
    if !query.include_private {
        sql.push(" WHERE effective_access = 'public'");
    }
    sql.push(" ORDER BY ")
        .push(&order)
        .push(" LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(offset).unwrap_or(i64::MAX))
        .push(") p ON 1 = 1 ORDER BY ")
        .push(&order);

    let mut total = 0;
    let mut items = Vec::new();
    for row in sql.all(db).await? {
        let page = PageRow::from_query_result(&row, "")?;
        total = page.total;
        // The LEFT JOIN yields one row of nulls when the page is empty.
        if page.id.is_some() {
            items.push(StoredFile::try_from(FileRow::from_query_result(&row, "")?)?);
        }
    }
    let total = u64::try_from(total).map_err(StorageError::corrupt)?;
    Ok(FilePage {
        items,
        total,
        current_page: page,
        per_page,
        last_page: total.div_ceil(per_page).max(1),
    })
}

/// Creates a folder under `parent_id` (`None`: the top level). Folder names are unique among
/// the live folders of one parent, because the project manifest finds folders by (parent, name).
///
/// Like every file write it takes the policy's capability: a files `create` grant.
///
/// # Errors
/// [`StorageError::Conflict`] when the name is empty or taken, or the parent is not a live
/// folder (or the capability is for another action); [`StorageError::Db`] when a query fails.
#[instrument(skip_all, err, fields(parent_id = parent_id))]
pub async fn create_folder<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    parent_id: Option<i64>,
    name: &str,
    access: Option<Visibility>,
) -> Result<StoredFile, StorageError> {
    check_file_capability(grant, FileAction::Create)?;
    check_name(name)?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let parent = live_parent(&txn, parent_id).await?;
    check_folder_name_free(&txn, parent, name, None).await?;
    let at = now();
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push(
        "INSERT INTO files (parent_id, type, access, filename, created_at, updated_at) VALUES (",
    )
    .bind(parent)
    .push(", ")
    .bind(FileKind::Folder.as_str())
    .push(", ")
    .bind(access.map(|a| a.as_str().to_owned()))
    .push(", ")
    .bind(name)
    .push(", ")
    .bind(at)
    .push(", ")
    .bind(at)
    .push(")");
    let id = sql.insert_returning_id(&txn).await?;
    let folder = reread(&txn, id).await?;
    txn.commit().await?;
    Ok(folder)
}

/// Records an uploaded file. It is stored with `access` null: an upload inherits its folder's
/// visibility until someone sets its own.
///
/// # Errors
/// [`StorageError::Conflict`] when the filename is empty or the parent is not a live folder;
/// [`StorageError::Db`] when a query fails.
#[instrument(skip_all, err, fields(parent_id = new.parent_id))]
pub async fn create_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    new: NewFile,
) -> Result<StoredFile, StorageError> {
    insert_file(db, grant, new, None, None).await
}

/// Records an upload whose bytes `blobs` holds staged ([`BlobStore::stage`]), naming its
/// content-addressed blob (`storage_key` and `content_hash` are taken from `staged`).
///
/// The row and the blob are made to hold together: after the insert, inside the transaction and
/// under the tree lock, the blob is published again ([`BlobStore::publish`]: one `head` when it
/// is there). Blobs are only deleted under that same lock by [`delete_unused_blob`], after it
/// found no row naming them, so a delete that ran between the caller's first publish and this
/// insert is undone here from the staged copy, and once this commits no delete can take the
/// blob: a 201 never names bytes that are gone (review finding R12). Publish first, outside the
/// lock, so that the copy of new content does not hold it; the staged copy is the caller's to
/// release afterwards, whatever the outcome.
///
/// # Errors
/// As [`create_file`]; a blob store error when the blob is missing and cannot be put back (the
/// row is then not written).
#[instrument(skip_all, err, fields(parent_id = new.parent_id, key = %staged.blob.key))]
pub async fn create_uploaded_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    new: NewFile,
    blobs: &dyn BlobStore,
    staged: &StagedBlob,
) -> Result<StoredFile, StorageError> {
    create_uploaded_file_queuing(db, grant, new, (blobs, staged), None).await
}

/// [`create_uploaded_file`], queuing `outbox`'s jobs for the new file in the same transaction.
///
/// # Errors
/// As [`create_uploaded_file`]; a failure to queue writes no row either.
pub async fn create_uploaded_file_queuing<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    mut new: NewFile,
    (blobs, staged): (&dyn BlobStore, &StagedBlob),
    outbox: Option<&Outbox<'_>>,
) -> Result<StoredFile, StorageError> {
    new.storage_key = Some(staged.blob.key.clone());
    new.content_hash = Some(staged.blob.sha256.clone());
    insert_file(db, grant, new, Some((blobs, staged)), outbox).await
}

/// Deletes content blob `key` if no file row names it (soft-deleted rows count: they can be
/// restored), and says whether it did. The check and the delete run in one write transaction
/// under the lock [`create_uploaded_file`] writes rows under, so a row committed before the
/// check keeps its blob, and a row committed after it finds the blob gone and puts it back from
/// its staged copy. For the cleanup of an upload whose row could not be written.
///
/// The delete happens while the lock is held (on SQLite, the database's write lock): one file
/// removal or one S3 `DELETE`, on a path that only failed uploads take.
///
/// # Errors
/// A database error (nothing is deleted), or the blob store's error deleting.
#[instrument(skip_all, err, fields(key = %key))]
pub async fn delete_unused_blob<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    blobs: &dyn BlobStore,
    key: &str,
) -> Result<bool, StorageError> {
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    if blob_in_use(&txn, key).await? {
        txn.commit().await?;
        return Ok(false);
    }
    blobs.delete(key).await?;
    txn.commit().await?;
    Ok(true)
}

/// The insert of [`create_file`] and [`create_uploaded_file`]; with `blob`, the blob is
/// published again under the lock before the commit.
async fn insert_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    new: NewFile,
    blob: Option<(&dyn BlobStore, &StagedBlob)>,
    outbox: Option<&Outbox<'_>>,
) -> Result<StoredFile, StorageError> {
    check_file_capability(grant, FileAction::Create)?;
    check_name(&new.filename)?;
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let parent = live_parent(&txn, new.parent_id).await?;
    let id = insert_row(&txn, parent, new).await?;
    let file = reread(&txn, id).await?;
    if let Some((blobs, staged)) = blob {
        blobs.publish(staged).await?;
    }
    enqueue_outbox(&txn, outbox, file.id).await?;
    txn.commit().await?;
    Ok(file)
}

/// The `INSERT` of one uploaded file under the already checked `parent`, inside the caller's
/// tree-locked transaction; answers the new id. Shared with the admin's many-file upload
/// ([`upload::create_uploaded_files`]), so both write the same columns.
async fn insert_row<C: ConnectionTrait>(
    txn: &C,
    parent: Option<i32>,
    new: NewFile,
) -> Result<i64, StorageError> {
    check_name(&new.filename)?;
    let at = now();
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push(
        "INSERT INTO files (parent_id, type, access, filename, title, mime_type, extension, \
         filesize, width, height, content_hash, storage_key, created_at, updated_at) VALUES (",
    )
    .bind(parent)
    .push(", ")
    .bind(FileKind::File.as_str())
    .push(", NULL, ")
    .bind(new.filename)
    .push(", ")
    .bind(new.title)
    .push(", ")
    .bind(new.mime_type)
    .push(", ")
    .bind(new.extension)
    .push(", ")
    .bind(new.filesize)
    .push(", ")
    .bind(new.width)
    .push(", ")
    .bind(new.height)
    .push(", ")
    .bind(new.content_hash)
    .push(", ")
    .bind(new.storage_key)
    .push(", ")
    .bind(at)
    .push(", ")
    .bind(at)
    .push(")");
    sql.insert_returning_id(txn).await
}

/// Applies the keys present in `patch` and stamps `updated_at`.
///
/// # Errors
/// [`StorageError::NotFound`] when the row is missing or soft-deleted;
/// [`StorageError::PrivateFile`] when it is effective-private and the capability does not reach
/// private files (nothing is written);
/// [`StorageError::Conflict`] when the new parent is not a live folder, a folder would move into
/// itself or one of its descendants, a folder name would repeat under its parent, the filename is
/// empty, or a focal point is outside 0 to 1; [`StorageError::Db`] when a query fails.
pub async fn update_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
    patch: FilePatch,
) -> Result<StoredFile, StorageError> {
    update_file_queuing(db, grant, id, patch, None).await
}

/// [`update_file`], queuing `outbox`'s jobs for the file in the same transaction.
///
/// # Errors
/// As [`update_file`]; a failure to queue writes nothing either.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn update_file_queuing<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
    patch: FilePatch,
    outbox: Option<&Outbox<'_>>,
) -> Result<StoredFile, StorageError> {
    check_file_capability(grant, FileAction::Update)?;
    let Some(id32) = id_param(id) else {
        return Err(StorageError::NotFound { what: "file" });
    };
    if let Some(name) = &patch.filename {
        check_name(name)?;
    }
    for point in [patch.focal_point_x, patch.focal_point_y]
        .into_iter()
        .flatten()
        .flatten()
    {
        if !(0.0..=1.0).contains(&point) {
            return Err(StorageError::conflict(
                "a focal point must be between 0 and 1".to_owned(),
            ));
        }
    }

    let txn = begin_write(db).await?;
    // The tree lock also keeps a folder's access from changing between the visibility check
    // below and the write.
    let moves_in_tree = patch.parent_id.is_some() || patch.filename.is_some();
    if moves_in_tree || !grant.get().reaches_private {
        lock_tree(&txn).await?;
    }
    let current = reachable_file(&txn, grant, id).await?;
    let kind = current.kind;
    let current_parent = current.parent_id.and_then(id_param);
    let current_name = current.filename;

    let new_parent = match patch.parent_id {
        Some(parent) => live_parent(&txn, parent).await?,
        None => current_parent,
    };
    if kind == FileKind::Folder {
        if patch.parent_id.is_some()
            && let Some(parent) = new_parent
            && is_ancestor_or_self(&txn, id32, parent).await?
        {
            return Err(StorageError::conflict_on(
                "parent_id",
                "a folder cannot be moved into itself or one of its own subfolders",
            ));
        }
        let new_name = patch.filename.as_deref().unwrap_or(&current_name);
        if new_parent != current_parent || new_name != current_name {
            check_folder_name_free(&txn, new_parent, new_name, Some(id32)).await?;
        }
    }

    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("UPDATE files SET updated_at = ").bind(now());
    let texts = [
        ("title", patch.title),
        ("description", patch.description),
        ("location", patch.location),
        ("download_name", patch.download_name),
        ("alt_text", patch.alt_text),
    ];
    for (column, value) in texts {
        if let Some(value) = value {
            sql.push(", ").push(column).push(" = ").bind(value);
        }
    }
    for (column, value) in [
        ("focal_point_x", patch.focal_point_x),
        ("focal_point_y", patch.focal_point_y),
    ] {
        if let Some(value) = value {
            sql.push(", ").push(column).push(" = ").bind(value);
        }
    }
    if let Some(fields) = &patch.custom_fields {
        sql.push(", custom_fields = ");
        match fields {
            Some(fields) => sql.bind_json(fields),
            None => sql.push("NULL"),
        };
    }
    if let Some(name) = patch.filename {
        sql.push(", filename = ").bind(name);
    }
    if let Some(access) = patch.access {
        sql.push(", access = ")
            .bind(access.map(|a| a.as_str().to_owned()));
    }
    if patch.parent_id.is_some() {
        sql.push(", parent_id = ").bind(new_parent);
    }
    sql.push(" WHERE id = ").bind(id32);
    sql.execute(&txn).await?;
    let file = reread(&txn, id).await?;
    enqueue_outbox(&txn, outbox, id).await?;
    txn.commit().await?;
    Ok(file)
}

/// Soft-deletes a file or a folder. A folder takes its live descendants with it, all stamped with
/// the same `deleted_at`: a live file under a deleted folder would be listed nowhere yet still be
/// reachable by id, and one timestamp lets a later restore find what went together.
///
/// # Errors
/// [`StorageError::NotFound`] when the row is missing or already deleted;
/// [`StorageError::PrivateFile`] when it is effective-private and the capability does not reach
/// private files (nothing is deleted); [`StorageError::Db`] when a query fails.
pub async fn soft_delete_file<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
) -> Result<(), StorageError> {
    soft_delete_file_queuing(db, grant, id, None).await
}

/// [`soft_delete_file`], queuing `outbox`'s jobs for the file in the same transaction.
///
/// # Errors
/// As [`soft_delete_file`]; a failure to queue deletes nothing either.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn soft_delete_file_queuing<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
    outbox: Option<&Outbox<'_>>,
) -> Result<(), StorageError> {
    check_file_capability(grant, FileAction::Delete)?;
    let at = now();
    let txn = begin_write(db).await?;
    lock_tree(&txn).await?;
    let file = reachable_file(&txn, grant, id).await?;
    let Some(id) = id_param(file.id) else {
        return Err(StorageError::NotFound { what: "file" });
    };
    let mut sql = Sql::new(txn.get_database_backend());
    sql.push("UPDATE files SET deleted_at = ")
        .bind(at)
        .push(" WHERE id = ")
        .bind(id)
        .push(" AND deleted_at IS NULL");
    sql.execute(&txn).await?;
    if file.kind == FileKind::Folder {
        // UNION (not UNION ALL) drops rows already seen, so a cycle in the tree ends the walk
        // instead of looping.
        let mut sql = Sql::new(txn.get_database_backend());
        sql.push(
            "WITH RECURSIVE tree(id) AS (SELECT id FROM files WHERE deleted_at IS NULL AND \
             parent_id = ",
        )
        .bind(id)
        .push(
            " UNION SELECT f.id FROM files f JOIN tree t ON f.parent_id = t.id \
             WHERE f.deleted_at IS NULL) UPDATE files SET deleted_at = ",
        )
        .bind(at)
        .push(" WHERE id IN (SELECT id FROM tree)");
        sql.execute(&txn).await?;
    }
    enqueue_outbox(&txn, outbox, file.id).await?;
    txn.commit().await?;
    Ok(())
}

/// Opens `WITH RECURSIVE … visible AS (…)`: the live rows matching `filter` (over alias `f`) with
/// their `effective_access` and sort keys. The caller appends the final `SELECT … FROM visible`.
///
/// `chain` walks from each row up through its ancestors and stops at the first non-null
/// `access`, so each row carries at most one resolved value. Values other than
/// `public`/`private` count as null, as in [`Visibility::parse_access`]. A chain that reaches the
/// root with only nulls is public; one that never reaches it (a cycle, a dangling parent) is
/// private: a broken tree must hide a file, not expose it. UNION (not UNION ALL) drops repeated
/// rows, which is what ends the walk around a cycle; no depth limit is needed, so no legitimate
/// deep tree is cut short. Deleted ancestors still count: their `access` was set for what they
/// held.
fn push_visible_cte(sql: &mut Sql, filter: impl FnOnce(&mut Sql)) {
    push_resolved_cte(sql, true, filter);
}

/// As [`push_visible_cte`]; with `live_only` false, soft-deleted rows match too (the admin file
/// manager's trash and its show of a trashed file).
fn push_resolved_cte(sql: &mut Sql, live_only: bool, filter: impl FnOnce(&mut Sql)) {
    sql.push("WITH RECURSIVE base AS (SELECT f.* FROM files f WHERE ");
    if live_only {
        sql.push("f.deleted_at IS NULL AND ");
    }
    sql.push("(");
    filter(sql);
    sql.push(
        ")), \
         chain(start_id, next_id, access) AS (\
           SELECT id, parent_id, CASE WHEN access IN ('public', 'private') THEN access END \
           FROM base \
           UNION \
           SELECT c.start_id, p.parent_id, \
                  CASE WHEN p.access IN ('public', 'private') THEN p.access END \
           FROM chain c JOIN files p ON p.id = c.next_id \
           WHERE c.access IS NULL), \
         vis AS (\
           SELECT start_id, COALESCE(MAX(access), \
             CASE WHEN MAX(CASE WHEN next_id IS NULL THEN 1 ELSE 0 END) = 1 \
             THEN 'public' ELSE 'private' END) AS effective_access \
           FROM chain GROUP BY start_id), \
         visible AS (\
           SELECT b.*, v.effective_access, \
                  CASE WHEN b.type = 'folder' THEN 0 ELSE 1 END AS sort_kind, \
                  lower(b.filename) AS sort_name \
           FROM base b JOIN vis v ON v.start_id = b.id) ",
    );
}

/// Refuses a capability issued for another action (a handler passing the wrong one is a bug,
/// never a request's doing).
fn check_file_capability(
    grant: &Authorized<FileWrite>,
    action: FileAction,
) -> Result<(), StorageError> {
    if grant.get().action == action {
        Ok(())
    } else {
        Err(StorageError::conflict(format!(
            "a files {} capability cannot {}",
            grant.get().action,
            action
        )))
    }
}

/// The live row `id` if the write may touch it: [`StorageError::NotFound`] when it does not
/// exist, [`StorageError::PrivateFile`] when it is effective-private and the capability does not
/// reach private files: the same two answers a show gives the same role.
async fn reachable_file<C: ConnectionTrait>(
    txn: &C,
    grant: &Authorized<FileWrite>,
    id: i64,
) -> Result<StoredFile, StorageError> {
    let file = get_file(txn, id)
        .await?
        .ok_or(StorageError::NotFound { what: "file" })?;
    if grant.get().reaches(file.effective) {
        Ok(file)
    } else {
        Err(StorageError::PrivateFile)
    }
}

/// Reads back a row just written inside `txn`, with its effective visibility.
async fn reread<C: ConnectionTrait>(txn: &C, id: i64) -> Result<StoredFile, StorageError> {
    get_file(txn, id)
        .await?
        .ok_or_else(|| StorageError::corrupt("a file just written cannot be read back"))
}

fn visibility(raw: &str) -> Result<Visibility, StorageError> {
    Visibility::parse_access(Some(raw))
        .ok_or_else(|| StorageError::corrupt(format!("unknown effective access {raw:?}")))
}

/// A row of the `visible` CTE ([`COLUMNS`]): a file or folder with its effective access.
#[derive(FromQueryResult)]
struct FileRow {
    id: i32,
    parent_id: Option<i32>,
    #[sea_orm(from_alias = "type")]
    kind: String,
    access: Option<String>,
    effective_access: String,
    filename: String,
    title: Option<String>,
    description: Option<String>,
    location: Option<String>,
    download_name: Option<String>,
    mime_type: Option<String>,
    extension: Option<String>,
    filesize: Option<i64>,
    width: Option<i32>,
    height: Option<i32>,
    focal_point_x: Option<f64>,
    focal_point_y: Option<f64>,
    content_hash: Option<String>,
    storage_key: Option<String>,
    created_at: Option<OffsetDateTime>,
    updated_at: Option<OffsetDateTime>,
    deleted_at: Option<OffsetDateTime>,
}

impl TryFrom<FileRow> for StoredFile {
    type Error = StorageError;

    fn try_from(row: FileRow) -> Result<Self, StorageError> {
        Ok(StoredFile {
            id: i64::from(row.id),
            parent_id: row.parent_id.map(i64::from),
            kind: FileKind::parse(&row.kind)?,
            access: Visibility::parse_access(row.access.as_deref()),
            effective: visibility(&row.effective_access)?,
            filename: row.filename,
            title: row.title,
            description: row.description,
            location: row.location,
            download_name: row.download_name,
            mime_type: row.mime_type,
            extension: row.extension,
            filesize: row.filesize,
            width: row.width,
            height: row.height,
            focal_point_x: row.focal_point_x,
            focal_point_y: row.focal_point_y,
            content_hash: row.content_hash,
            storage_key: row.storage_key,
            created_at: row.created_at,
            updated_at: row.updated_at,
            deleted_at: row.deleted_at,
        })
    }
}

/// The page row of [`list_files`]: the count of every visible row, and (unless the page is
/// empty, when the LEFT JOIN yields nulls) one file.
#[derive(FromQueryResult)]
struct PageRow {
    total: i64,
    id: Option<i32>,
}

/// Whether any file row (soft-deleted ones too: they can be restored) still points at blob
/// `key`. Content addressing shares one blob between identical uploads, so a blob may only be
/// deleted when this is false, and only as [`delete_unused_blob`] does it: checked and deleted
/// under the lock rows are created under, or a row being written for the same bytes loses them.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn blob_in_use<C: ConnectionTrait>(db: &C, key: &str) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM files WHERE storage_key = ")
        .bind(key);
    if sql.count(db).await? > 0 {
        return Ok(true);
    }
    // Chat attachments share the content-addressed blobs (saving one to the files is a row).
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT COUNT(*) AS n FROM chat_attachments WHERE storage_key = ")
        .bind(key);
    Ok(sql.count(db).await? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_pattern_takes_wildcards_literally() {
        assert_eq!(like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(like_pattern(""), "%%");
    }

    #[test]
    fn file_kind_round_trips() {
        for kind in [FileKind::File, FileKind::Folder] {
            assert_eq!(FileKind::parse(kind.as_str()).unwrap(), kind);
        }
        assert!(FileKind::parse("link").is_err());
    }
}
