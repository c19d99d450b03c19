//! The admin file manager's reads: a folder's entries (or a search over the whole tree) filtered
//! by name, tag, MIME family and the user's favorites, sorted, in the trash or out of it, and one
//! row whatever its state. Rows come with what the public FileResource leaves out: the stored
//! `access`, `alt_text`, `custom_fields` and `deleted_at`.
//!
//! A page is read in two statements. The first filters and sorts plain `files` rows (the
//! indexes on `parent_id`, `deleted_at`, `mime_type` and `file_tags (tag, file_id)` apply) and
//! answers the total with the page's ids, so they agree even while others write. Only then is
//! effective access resolved, for the page's rows alone ([`super::push_visible_cte`]'s walk up
//! the tree): the file manager acts above roles, so no row is dropped for being private and the
//! walk need not run over a whole folder of 10,000 entries to count them.

use std::collections::HashMap;

use sea_orm::{ConnectionTrait, DbBackend, FromQueryResult};
use serde_json::Value as Json;
use tracing::instrument;

use super::{COLUMNS, FileRow, ParentFilter, StoredFile, push_resolved_cte};
use crate::StorageError;
use crate::sql::{Sql, id_param, json_out, like_pattern, parse_json};

/// The admin file manager's MIME families. A folder belongs to none, so a family filter shows
/// files only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MimeFamily {
    Image,
    Video,
    Audio,
    /// Text, PDF, office and OpenDocument formats, RTF, EPUB, JSON and XML.
    Document,
    /// Zip, tar, gzip, bzip2, xz, zstd, 7-Zip and RAR.
    Archive,
    /// A file in none of the families above, or without a MIME type.
    Other,
}

/// MIME types (besides `text/*`) counted as documents.
const DOCUMENT_TYPES: &[&str] = &[
    "application/pdf",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation",
    "application/rtf",
    "application/epub+zip",
    "application/json",
    "application/xml",
];

/// MIME types counted as archives.
const ARCHIVE_TYPES: &[&str] = &[
    "application/zip",
    "application/x-tar",
    "application/gzip",
    "application/x-gzip",
    "application/x-bzip2",
    "application/x-xz",
    "application/zstd",
    "application/x-7z-compressed",
    "application/vnd.rar",
    "application/x-rar-compressed",
];

impl MimeFamily {
    /// The query value (`image`, `video`, `audio`, `document`, `archive`, `other`).
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "image" => Self::Image,
            "video" => Self::Video,
            "audio" => Self::Audio,
            "document" => Self::Document,
            "archive" => Self::Archive,
            "other" => Self::Other,
            _ => return None,
        })
    }

    /// The family of one MIME type, as the filter decides it.
    #[must_use]
    pub fn of(mime: Option<&str>) -> Self {
        let Some(mime) = mime else {
            return Self::Other;
        };
        if mime.starts_with("image/") {
            Self::Image
        } else if mime.starts_with("video/") {
            Self::Video
        } else if mime.starts_with("audio/") {
            Self::Audio
        } else if mime.starts_with("text/") || DOCUMENT_TYPES.contains(&mime) {
            Self::Document
        } else if ARCHIVE_TYPES.contains(&mime) {
            Self::Archive
        } else {
            Self::Other
        }
    }

    /// The condition over `f.mime_type` (constants only: nothing here comes from a request).
    fn condition(self) -> String {
        let list = |types: &[&str]| {
            let quoted: Vec<String> = types.iter().map(|t| format!("'{t}'")).collect();
            format!("f.mime_type IN ({})", quoted.join(", "))
        };
        match self {
            Self::Image => "f.mime_type LIKE 'image/%'".to_owned(),
            Self::Video => "f.mime_type LIKE 'video/%'".to_owned(),
            Self::Audio => "f.mime_type LIKE 'audio/%'".to_owned(),
            Self::Document => format!("(f.mime_type LIKE 'text/%' OR {})", list(DOCUMENT_TYPES)),
            Self::Archive => list(ARCHIVE_TYPES),
            Self::Other => {
                let known: Vec<String> = [Self::Image, Self::Video, Self::Audio]
                    .into_iter()
                    .map(Self::condition)
                    .chain([Self::Document.condition(), Self::Archive.condition()])
                    .collect();
                format!("(f.mime_type IS NULL OR NOT ({}))", known.join(" OR "))
            }
        }
    }
}

/// What a page is sorted by; folders always come first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrowseSort {
    /// Case-insensitive name (see [`super::list_files`] on backends and non-ASCII letters).
    #[default]
    Name,
    /// `filesize` (folders and files without a size count as 0).
    Size,
    /// `updated_at`: the last change.
    Date,
    /// `mime_type` (none sorts first), then name.
    Type,
}

impl BrowseSort {
    /// The query value (`name`, `size`, `date`, `type`).
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "name" => Self::Name,
            "size" => Self::Size,
            "date" => Self::Date,
            "type" => Self::Type,
            _ => return None,
        })
    }
}

/// Where a browse looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// One folder's direct entries ([`ParentFilter::Root`]: the top level), or the whole tree.
    Parent(ParentFilter),
    /// The trash's top level: every soft-deleted row that was not deleted together with its
    /// folder (restoring one of these brings back what went with it).
    TrashTop,
}

/// A browse query after the application layer parsed and bounded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrowseFiles<'a> {
    pub place: Place,
    /// Case-insensitive substring of `filename` or `title`, taken literally.
    pub search: Option<&'a str>,
    /// Rows carrying exactly this tag.
    pub tag: Option<&'a str>,
    pub mime: Option<MimeFamily>,
    pub sort: BrowseSort,
    pub descending: bool,
    /// Soft-deleted rows instead of live ones.
    pub trashed: bool,
    /// Only this user's favorites.
    pub favorites_of: Option<i64>,
    /// 1-based; 0 counts as 1.
    pub page: u64,
    /// At least 1; the application layer enforces the maximum.
    pub per_page: u64,
}

/// A row as the file manager shows it: the public columns and the admin-only ones.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminFile {
    /// `deleted_at` is set for a row in the trash.
    pub file: StoredFile,
    pub alt_text: Option<String>,
    /// A JSON object, or `None`.
    pub custom_fields: Option<Json>,
}

/// One page of [`browse_files`].
#[derive(Debug, Clone, PartialEq)]
pub struct AdminFilePage {
    pub items: Vec<AdminFile>,
    pub total: u64,
    pub current_page: u64,
    pub per_page: u64,
    /// At least 1.
    pub last_page: u64,
}

/// One page of rows for `query`; see the module docs for how it is read.
///
/// # Errors
/// [`StorageError::Db`] when a query fails; [`StorageError::Corrupt`] on an unreadable row.
#[instrument(skip_all, err, fields(page = query.page, per_page = query.per_page))]
pub async fn browse_files<C: ConnectionTrait>(
    db: &C,
    query: BrowseFiles<'_>,
) -> Result<AdminFilePage, StorageError> {
    let page = query.page.max(1);
    let per_page = query.per_page.max(1);
    let offset = (page - 1).saturating_mul(per_page);
    let backend = db.get_database_backend();
    let collate = if backend == DbBackend::Postgres {
        " COLLATE \"C\""
    } else {
        ""
    };
    // PostgreSQL compares text by the database's locale, SQLite by bytes: "C" makes the order
    // the same on both. It is applied in the select list, because PostgreSQL's ORDER BY only
    // takes an output column's alias bare.
    let key = match query.sort {
        BrowseSort::Name => format!("lower(f.filename){collate}"),
        BrowseSort::Size => "COALESCE(f.filesize, 0)".to_owned(),
        BrowseSort::Date => "f.updated_at".to_owned(),
        BrowseSort::Type => format!("COALESCE(f.mime_type, ''){collate}"),
    };
    let dir = if query.descending { " DESC" } else { "" };
    // Name ties follow the direction when sorting by name, ascending otherwise; the id last,
    // so pages never overlap when every key repeats. A row without `updated_at` (none is
    // written so) sorts as the oldest.
    let name_dir = if query.sort == BrowseSort::Name {
        dir
    } else {
        ""
    };
    let order = |p: &str| {
        let known = if query.sort == BrowseSort::Date {
            format!("{p}s_known{dir}, ")
        } else {
            String::new()
        };
        format!(
            "{p}s_kind, {known}{p}s_key{dir}, {p}s_name{name_dir}, {p}s_exact{name_dir}, \
             {p}id{name_dir}"
        )
    };
    let mut sql = Sql::new(backend);
    sql.push("SELECT t.total, p.id FROM (SELECT COUNT(*) AS total FROM files f WHERE ");
    push_filter(&mut sql, &query);
    sql.push(
        ") t LEFT JOIN (SELECT f.id, \
         CASE WHEN f.type = 'folder' THEN 0 ELSE 1 END AS s_kind, \
         CASE WHEN f.updated_at IS NULL THEN 0 ELSE 1 END AS s_known, ",
    )
    .push(&key)
    .push(" AS s_key, lower(f.filename)")
    .push(collate)
    .push(" AS s_name, f.filename")
    .push(collate)
    .push(" AS s_exact FROM files f WHERE ");
    push_filter(&mut sql, &query);
    sql.push(" ORDER BY ")
        .push(&order(""))
        .push(" LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(offset).unwrap_or(i64::MAX))
        .push(") p ON 1 = 1 ORDER BY ")
        .push(&order("p."));

    let mut total = 0;
    let mut ids = Vec::new();
    for row in sql.all_as::<PageRow, _>(db).await? {
        total = row.total;
        // The LEFT JOIN yields one row of nulls when the page is empty.
        if let Some(id) = row.id {
            ids.push(i64::from(id));
        }
    }
    let mut by_id: HashMap<i64, AdminFile> = find_admin_files(db, &ids)
        .await?
        .into_iter()
        .map(|f| (f.file.id, f))
        .collect();
    // A row force-deleted between the two statements is left out of the page.
    let items = ids.iter().filter_map(|id| by_id.remove(id)).collect();
    let total = u64::try_from(total).map_err(StorageError::corrupt)?;
    Ok(AdminFilePage {
        items,
        total,
        current_page: page,
        per_page,
        last_page: total.div_ceil(per_page).max(1),
    })
}

/// One row, live or in the trash, or `None` when there is no such row.
///
/// # Errors
/// [`StorageError::Db`] when the query fails; [`StorageError::Corrupt`] on an unreadable row.
#[instrument(skip_all, err, fields(file_id = id))]
pub async fn find_admin_file<C: ConnectionTrait>(
    db: &C,
    id: i64,
) -> Result<Option<AdminFile>, StorageError> {
    Ok(find_admin_files(db, &[id]).await?.into_iter().next())
}

/// Rows among `ids` (live or trashed; at most a page's worth, the caller's bound), in no
/// particular order, with their effective access resolved in one statement.
///
/// # Errors
/// [`StorageError::Db`] when the query fails; [`StorageError::Corrupt`] on an unreadable row.
pub async fn find_admin_files<C: ConnectionTrait>(
    db: &C,
    ids: &[i64],
) -> Result<Vec<AdminFile>, StorageError> {
    let ids: Vec<i32> = ids.iter().copied().filter_map(id_param).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    let mut sql = Sql::new(backend);
    push_resolved_cte(&mut sql, false, |sql| {
        sql.push("f.id IN ");
        sql.bind_list(ids.iter().copied());
    });
    sql.push("SELECT ")
        .push(COLUMNS)
        .push(", alt_text, ")
        .push(&json_out(backend, "custom_fields"))
        .push(" AS custom_fields FROM visible");
    let mut files = Vec::with_capacity(ids.len());
    for row in sql.all(db).await? {
        let extra = ExtraRow::from_query_result(&row, "")?;
        let custom_fields = match parse_json(extra.custom_fields.as_deref())? {
            Json::Null => None,
            value => Some(value),
        };
        files.push(AdminFile {
            file: StoredFile::try_from(FileRow::from_query_result(&row, "")?)?,
            alt_text: extra.alt_text,
            custom_fields,
        });
    }
    Ok(files)
}

/// The `WHERE` of both halves of [`browse_files`], over alias `f`.
fn push_filter(sql: &mut Sql, query: &BrowseFiles<'_>) {
    sql.push(if query.trashed {
        "f.deleted_at IS NOT NULL"
    } else {
        "f.deleted_at IS NULL"
    });
    match query.place {
        Place::Parent(ParentFilter::Root) => {
            sql.push(" AND f.parent_id IS NULL");
        }
        Place::Parent(ParentFilter::Folder(id)) => {
            // An id outside i32 binds NULL, which matches nothing: an empty folder.
            sql.push(" AND f.parent_id = ").bind(id_param(id));
        }
        Place::Parent(ParentFilter::Any) => {}
        Place::TrashTop => {
            sql.push(
                " AND NOT EXISTS (SELECT 1 FROM files d WHERE d.id = f.parent_id \
                 AND d.deleted_at = f.deleted_at)",
            );
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
    if let Some(tag) = query.tag {
        sql.push(" AND EXISTS (SELECT 1 FROM file_tags g WHERE g.file_id = f.id AND g.tag = ")
            .bind(tag)
            .push(")");
    }
    if let Some(family) = query.mime {
        sql.push(" AND f.type = 'file' AND ")
            .push(&family.condition());
    }
    if let Some(user) = query.favorites_of {
        sql.push(
            " AND EXISTS (SELECT 1 FROM file_favorites v WHERE v.file_id = f.id AND v.user_id = ",
        )
        .bind(id_param(user))
        .push(")");
    }
}

/// A row of the first statement: the total, and one id unless the page is empty.
#[derive(FromQueryResult)]
struct PageRow {
    total: i64,
    id: Option<i32>,
}

/// The admin-only columns of [`find_admin_files`].
#[derive(FromQueryResult)]
struct ExtraRow {
    alt_text: Option<String>,
    custom_fields: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_parse_and_classify() {
        for (raw, family) in [
            ("image", MimeFamily::Image),
            ("video", MimeFamily::Video),
            ("audio", MimeFamily::Audio),
            ("document", MimeFamily::Document),
            ("archive", MimeFamily::Archive),
            ("other", MimeFamily::Other),
        ] {
            assert_eq!(MimeFamily::parse(raw), Some(family));
        }
        assert_eq!(MimeFamily::parse("Image"), None);
        assert_eq!(MimeFamily::of(Some("image/png")), MimeFamily::Image);
        assert_eq!(MimeFamily::of(Some("text/plain")), MimeFamily::Document);
        assert_eq!(
            MimeFamily::of(Some("application/pdf")),
            MimeFamily::Document
        );
        assert_eq!(MimeFamily::of(Some("application/zip")), MimeFamily::Archive);
        assert_eq!(
            MimeFamily::of(Some("application/octet-stream")),
            MimeFamily::Other
        );
        assert_eq!(MimeFamily::of(None), MimeFamily::Other);
    }

    #[test]
    fn the_other_family_excludes_every_known_one() {
        let other = MimeFamily::Other.condition();
        assert!(other.contains("image/%") && other.contains("application/zip"));
        assert!(other.starts_with("(f.mime_type IS NULL OR NOT ("));
    }
}
