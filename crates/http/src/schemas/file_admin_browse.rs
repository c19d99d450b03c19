//! The shapes of the file manager's browse, folder, metadata, tag and favorite routes (issue 29,
//! part A) in the OpenAPI description, checked against every response by the black-box suite.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// A file or folder as the file manager shows it: the public FileResource's keys (with `access`
/// the stored value) and the file manager's own.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminFileResource {
    pub id: i64,
    #[schema(required = true)]
    pub parent_id: Option<i64>,
    /// `file` or `folder`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(file|folder)$")]
    pub kind: String,
    /// The stored access: `public`, `private`, or null (inherits from the folder).
    #[schema(required = true, pattern = "^(public|private)$")]
    pub access: Option<String>,
    /// The access that applies: the own, else the nearest ancestor's, else `public`.
    #[schema(pattern = "^(public|private)$")]
    pub effective_access: String,
    pub filename: String,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    #[schema(required = true)]
    pub alt_text: Option<String>,
    #[schema(required = true)]
    pub location: Option<String>,
    #[schema(required = true)]
    pub download_name: Option<String>,
    #[schema(required = true)]
    pub mime_type: Option<String>,
    #[schema(required = true)]
    pub extension: Option<String>,
    #[schema(required = true)]
    pub filesize: Option<i64>,
    #[schema(required = true)]
    pub width: Option<i64>,
    #[schema(required = true)]
    pub height: Option<i64>,
    #[schema(required = true, minimum = 0, maximum = 1)]
    pub focal_point_x: Option<f64>,
    #[schema(required = true, minimum = 0, maximum = 1)]
    pub focal_point_y: Option<f64>,
    /// The project's own metadata: an object, or null.
    #[schema(required = true)]
    pub custom_fields: Option<BTreeMap<String, Value>>,
    /// Sorted, lower-case.
    pub tags: Vec<String>,
    /// Whether the signed-in user marked it a favorite.
    pub favorite: bool,
    /// The public content URL; null for folders and for rows in the trash.
    #[schema(required = true)]
    pub url: Option<String>,
    /// Transform key to URL (empty unless a transformable image that is not in the trash).
    pub transforms: BTreeMap<String, String>,
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub updated_at: Option<String>,
    /// When it went to the trash; null for a live row.
    #[schema(required = true, format = DateTime)]
    pub deleted_at: Option<String>,
}

/// `{"data": AdminFileResource}`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminFileEnvelope {
    pub data: AdminFileResource,
}

/// A page of the file manager.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminFilePage {
    pub data: Vec<AdminFileResource>,
    pub meta: PaginationMeta,
}

/// Query parameters of `GET /files`.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminFileListParams {
    /// A folder id; absent, empty or `null`: the top level (or, with a filter and absent, the
    /// whole tree).
    #[param(nullable = false)]
    pub parent_id: Option<String>,
    /// Case-insensitive substring of the filename or title (at most 255 characters).
    #[param(nullable = false, max_length = 255)]
    pub search: Option<String>,
    /// Rows carrying this tag (compared trimmed and lower-cased).
    #[param(nullable = false)]
    pub tag: Option<String>,
    /// A MIME family: files only.
    #[param(
        nullable = false,
        pattern = "^(image|video|audio|document|archive|other)$"
    )]
    pub mime: Option<String>,
    /// `name` (default), `size`, `date` (last change) or `type` (MIME type); folders first.
    #[param(nullable = false, pattern = "^(name|size|date|type)$")]
    pub sort: Option<String>,
    /// `asc` (default) or `desc`.
    #[param(nullable = false, pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
    /// `only` (or `1`, `true`): the trash instead of live rows.
    #[param(nullable = false, pattern = "^(only|1|true|0|false)$")]
    pub trashed: Option<String>,
    /// `1` (or `true`): the signed-in user's favorites, anywhere in the tree.
    #[param(nullable = false, pattern = "^(1|true|0|false)$")]
    pub favorites: Option<String>,
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}

/// `POST /files/folders`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateFolderRequest {
    /// A plain name (no `/`, `\` or control characters), at most 255 characters, unique among
    /// the parent's live folders.
    pub name: String,
    /// The parent folder; absent or null: the top level.
    pub parent_id: Option<i64>,
    /// `public`, `private`, or null (inherit; the default).
    #[schema(pattern = "^(public|private)$")]
    pub access: Option<String>,
}

/// `PUT /files/{file}`: every key optional, at least one present. `filename`, `parent_id` and
/// `access` need `can-edit-files`; the others `can-update-file-metadata`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateAdminFileRequest {
    #[schema(max_length = 255)]
    pub filename: Option<String>,
    /// The new folder (null: the top level); a folder cannot move into its own subtree.
    pub parent_id: Option<i64>,
    #[schema(pattern = "^(public|private)$")]
    pub access: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    #[schema(max_length = 2000)]
    pub alt_text: Option<String>,
    pub location: Option<String>,
    #[schema(max_length = 255)]
    pub download_name: Option<String>,
    #[schema(minimum = 0, maximum = 1)]
    pub focal_point_x: Option<f64>,
    #[schema(minimum = 0, maximum = 1)]
    pub focal_point_y: Option<f64>,
    /// An object of at most 50 keys and 16 KiB of JSON, or null.
    pub custom_fields: Option<BTreeMap<String, Value>>,
}

/// `POST /files/{file}/tags`.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AddFileTagsRequest {
    /// 1 to 50 tags, each 1 to 64 characters once trimmed; stored lower-cased.
    #[schema(min_items = 1, max_items = 50)]
    pub tags: Vec<String>,
}

/// A tag and how many live files carry it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileTag {
    pub tag: String,
    #[schema(minimum = 1)]
    pub files: u64,
}

/// `GET /file-tags`: at most 1,000 tags, by tag.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileTagList {
    pub data: Vec<FileTag>,
}
