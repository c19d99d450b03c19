//! The response and request shapes of the OpenAPI description ([`crate::openapi`]), declared as
//! types because handlers build their JSON from the application layer's resources; what keeps
//! them honest is the black-box suite, which validates every response it receives against the
//! description (`crates/http/tests/api/openapi.rs`), and schemathesis in CI.

pub mod access;
pub mod admin;
pub mod admin_items;
pub mod ai;
pub mod chat;
pub mod file_admin_blobs;
pub mod file_admin_browse;
pub mod file_admin_trash;
pub mod jobs;
pub mod presentation;
pub mod schema_admin;
pub mod users;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// The spec's CollectionSummary.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionSummary {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub is_singleton: bool,
}

/// The spec's CollectionFieldSummary.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionFieldSummary {
    pub id: i64,
    /// The key of this field inside item `data`.
    pub name: String,
    /// One of the field types (`string`, `number`, `image`, `many_to_one`, …).
    #[serde(rename = "type")]
    pub field_type: String,
    pub translatable: bool,
    /// Free-form per field type.
    #[schema(required = true)]
    pub settings: Option<BTreeMap<String, Value>>,
}

/// The spec's CollectionResource: the summary plus the fields the role may read.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionResource {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub is_singleton: bool,
    pub fields: Vec<CollectionFieldSummary>,
}

/// The spec's MiniUser (with `include=users`).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MiniUser {
    pub id: i64,
    pub name: String,
    #[schema(required = true)]
    pub email: Option<String>,
}

/// The spec's CollectionItemResource (also NestedCollectionItemResource): every key is always
/// present.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionItemResource {
    pub id: i64,
    pub collection_id: i64,
    /// Field values keyed by field name, flattened to the resolved locale. File fields hold a
    /// FileFieldValue; with `include=<relation>` relations hold nested items.
    pub data: BTreeMap<String, Value>,
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub updated_at: Option<String>,
    #[schema(required = true)]
    pub user_created_id: Option<i64>,
    #[schema(required = true)]
    pub user_updated_id: Option<i64>,
    /// Null unless `include` contains `users`.
    #[schema(required = true)]
    pub user_created: Option<MiniUser>,
    /// Null unless `include` contains `users`.
    #[schema(required = true)]
    pub user_updated: Option<MiniUser>,
}

/// The spec's ExpandedFileField (`include=files`).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpandedFileField {
    pub id: i64,
    pub filename: String,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub mime_type: Option<String>,
    #[schema(required = true)]
    pub width: Option<i64>,
    #[schema(required = true)]
    pub height: Option<i64>,
    #[schema(required = true)]
    pub filesize: Option<i64>,
    pub url: String,
    /// Transform key to URL.
    pub transforms: BTreeMap<String, String>,
}

/// Only `denied`.
#[derive(Debug, ToSchema, Serialize)]
pub enum Denied {
    #[serde(rename = "denied")]
    Denied,
}

/// The spec's FileFieldAccessDenied: a public file the role may not read.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileFieldAccessDenied {
    pub id: i64,
    #[schema(inline)]
    pub access: Denied,
}

/// The spec's FileFieldValue union: the value of an image, file or files field.
#[derive(Debug, ToSchema, Serialize)]
#[serde(untagged)]
pub enum FileFieldValue {
    Expanded(ExpandedFileField),
    Denied(FileFieldAccessDenied),
    Id(i64),
    Ids(Vec<i64>),
    Null(()),
}

/// The spec's FileResource: every key is always present.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileResource {
    pub id: i64,
    /// The containing folder.
    #[schema(required = true)]
    pub parent_id: Option<i64>,
    /// `file` or `folder`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(file|folder)$")]
    pub kind: String,
    /// The effective visibility: `public` or `private`.
    #[schema(pattern = "^(public|private)$")]
    pub access: String,
    pub filename: String,
    #[schema(required = true)]
    pub title: Option<String>,
    #[schema(required = true)]
    pub description: Option<String>,
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
    #[schema(required = true)]
    pub focal_point_x: Option<f64>,
    #[schema(required = true)]
    pub focal_point_y: Option<f64>,
    /// Null for folders.
    #[schema(required = true)]
    pub url: Option<String>,
    /// Transform key to URL (empty unless a JPEG, PNG, WebP or GIF image).
    pub transforms: BTreeMap<String, String>,
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub updated_at: Option<String>,
}

/// The `meta` of a PaginatedEnvelope.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PaginationMeta {
    #[schema(minimum = 1)]
    pub current_page: i64,
    #[schema(minimum = 1)]
    pub last_page: i64,
    #[schema(minimum = 1, maximum = 100)]
    pub per_page: i64,
    #[schema(minimum = 0)]
    pub total: i64,
}

/// CreateCollectionItemRequest and UpdateCollectionItemRequest.
#[derive(Debug, ToSchema, Serialize)]
pub struct ItemWriteRequest {
    /// Field values keyed by field name (partial on update).
    pub data: BTreeMap<String, Value>,
}

/// The spec's UpdateFileRequest: every property optional.
#[derive(Debug, ToSchema, Serialize)]
pub struct UpdateFileRequest {
    pub title: Option<String>,
    pub description: Option<String>,
    /// Where the file was made or what it shows (editor metadata).
    pub location: Option<String>,
    /// The file name offered on download; content is then served as an attachment.
    pub download_name: Option<String>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub focal_point_x: Option<f64>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub focal_point_y: Option<f64>,
    /// Renames the file.
    #[schema(nullable = false)]
    pub name: Option<String>,
}

/// The upload body (`multipart/form-data`).
#[derive(Debug, ToSchema, Serialize)]
pub struct UploadFileForm {
    #[schema(value_type = String, format = Binary, content_media_type = "application/octet-stream")]
    pub file: Vec<u8>,
    /// The folder to upload into.
    pub parent_id: Option<i64>,
    /// The file name to store instead of the part's.
    pub name: Option<String>,
}

/// Every error but 422.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub message: String,
}

/// 422: every problem keyed by field or query parameter.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationErrorBody {
    pub message: String,
    pub errors: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionList {
    pub data: Vec<CollectionSummary>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionEnvelope {
    pub data: CollectionResource,
}

/// PaginatedEnvelope<CollectionItemResource>.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemPage {
    pub data: Vec<CollectionItemResource>,
    pub meta: PaginationMeta,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemEnvelope {
    pub data: CollectionItemResource,
}

/// What a write answers for a resource the actor may write but not read (no collection `read`
/// grant, or an item outside the role's item filter; a file without the files `read` grant):
/// its id and nothing else. A write grant never widens what the actor reads.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WriteReceipt {
    pub id: i64,
}

/// The item a create or update wrote: as the actor's show of it renders it, or a receipt.
#[derive(Debug, ToSchema, Serialize)]
#[serde(untagged)]
pub enum ItemWritten {
    Item(Box<CollectionItemResource>),
    Receipt(WriteReceipt),
}

/// The response of POST and PATCH on items.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemWriteEnvelope {
    pub data: ItemWritten,
}

/// The file an upload or metadata update wrote: as the actor's show of it renders it, or a
/// receipt.
#[derive(Debug, ToSchema, Serialize)]
#[serde(untagged)]
pub enum FileWritten {
    File(Box<FileResource>),
    Receipt(WriteReceipt),
}

/// The response of POST and PATCH on files.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileWriteEnvelope {
    pub data: FileWritten,
}

/// PaginatedEnvelope<FileResource>.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilePage {
    pub data: Vec<FileResource>,
    pub meta: PaginationMeta,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileEnvelope {
    pub data: FileResource,
}

/// 401: an unknown, revoked or expired API key.
#[derive(Debug, utoipa::ToResponse)]
#[response(description = "Invalid API key.")]
pub struct Unauthenticated(pub ErrorBody);

/// 403: the origin gate, the key's IP allowlist, a missing grant, a field rule or an item filter.
#[derive(Debug, utoipa::ToResponse)]
#[response(description = "Forbidden: origin gate, IP allowlist, grant, field rule or item filter.")]
pub struct Forbidden(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "Unknown collection, item or file, or one outside the role's item filter."
)]
pub struct NotFound(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(description = "Invalid input; `errors` is keyed by field or query parameter.")]
pub struct Invalid(pub ValidationErrorBody);

/// 422 on an item write: besides a value's type and rules, its links are checked.
#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "Invalid item data; `errors` is keyed by field path (`title`, `content.2.author`). Besides a value's type and rules: a relation, m2a or file field linking an id that is not a live item of the field's related collection (or of the collection an m2a entry names), or not a live file, named in the message (\"The tags field links items not found in collection `tags`: 99999.\"); a field holding more links than its `max_links` setting allows, default 1000 (\"The tags field may hold at most 1000 links; got 5000.\")."
)]
pub struct ItemInvalid(pub ValidationErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(description = "The request body is larger than the configured limit.")]
pub struct TooLarge(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "The request body stalled (`VELLUM_BODY_READ_TIMEOUT`) or was not received within `VELLUM_REQUEST_TIMEOUT`."
)]
pub struct BodyTimeout(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "A dependency (database, blob store) is unavailable (unreachable, disk full, I/O error), or the transform budget is full. Retry after the `Retry-After` header (seconds), which every 503 carries."
)]
pub struct Unavailable(pub ErrorBody);

/// Query parameters of an items list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemListParams {
    /// 1-based page.
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
    /// An enabled content locale (default: the project's default locale).
    #[param(nullable = false)]
    pub locale: Option<String>,
    /// `true`: translatable fields as their full locale maps.
    #[param(nullable = false)]
    pub include_all_translations: Option<bool>,
    /// Comma-separated: `files`, `users`, relation field names; unknown tokens are ignored.
    #[param(nullable = false)]
    pub include: Option<String>,
    /// `filter[field]=v` (contains) or `filter[field][_op]=v` with `_eq`, `_neq`, `_in`, `_gt`,
    /// `_gte`, `_lt`, `_lte`, `_contains`, `_null`, `_nnull`; AND-ed, at most 32 conditions and
    /// 100 `_in` values. Each operand (each `_in` value) is at most 1,024 characters; a longer
    /// one gets 422 with `errors` naming the parameter (`filter[title][_contains]`).
    #[param(style = DeepObject, explode, value_type = Option<Object>, nullable = false)]
    pub filter: Option<BTreeMap<String, Value>>,
    /// Comma-separated fields, `-` for descending (`id`, `created_at`, `updated_at` too).
    #[param(nullable = false)]
    pub sort: Option<String>,
}

/// Query parameters of an item read or write. On a write, `locale` also says where plain values
/// of translatable fields are stored; the other two shape the returned item.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemParams {
    #[param(nullable = false)]
    pub locale: Option<String>,
    #[param(nullable = false)]
    pub include_all_translations: Option<bool>,
    #[param(nullable = false)]
    pub include: Option<String>,
}

/// Query parameters of the files list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FileListParams {
    /// A folder id, or `null` for the root (the default without `search`).
    #[param(value_type = Option<String>, nullable = false)]
    pub parent_id: Option<String>,
    /// Filename and title, case-insensitive; without `parent_id` every folder.
    #[param(max_length = 255, nullable = false)]
    pub search: Option<String>,
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}
