//! The shapes of the file manager's trash, force delete, "where used" and bulk routes
//! (`/files/{file}`, `…/restore`, `…/force`, `…/usage`, `/files/bulk`; issue 29, part C) in the
//! OpenAPI description, checked against every response by the black-box suite.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// The bulk request.
#[derive(Debug, ToSchema, Serialize)]
pub struct FileBulkRequest {
    /// `move` (needs `can-edit-files`; `parent_id` required), `delete` (`can-delete-files`),
    /// `restore` (`can-restore-files`), `force_delete` (`can-force-delete-files`), `tag` or
    /// `untag` (`can-tag-files`; `tags` required).
    #[schema(pattern = "^(move|delete|restore|force_delete|tag|untag)$")]
    pub action: String,
    /// 1 to 100 file or folder ids; repeated ids count once.
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<i64>,
    /// For `move`: the live folder to move into, or null for the top level.
    pub parent_id: Option<i64>,
    /// For `tag` and `untag`.
    #[schema(max_items = 50)]
    pub tags: Option<Vec<String>>,
}

/// One id the bulk action did not apply to.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileBulkFailure {
    pub id: i64,
    /// What the single route would have answered: 404 (unknown, or not live for move and
    /// delete), 409 (force delete refused: items reference it) or 422.
    #[schema(minimum = 400, maximum = 499)]
    pub status: u16,
    pub message: String,
}

/// Which ids the action applied to and why each other did not, in the request's order.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileBulkResult {
    pub done: Vec<i64>,
    pub failed: Vec<FileBulkFailure>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileBulkEnvelope {
    pub data: FileBulkResult,
}

/// An item referencing a file.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileItemRef {
    /// The collection's slug.
    pub collection: String,
    pub id: i64,
}

/// 409 of a force delete: the items (live or in the trash, at most 50) that still reference the
/// file or something inside the folder.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileInUseBody {
    pub message: String,
    #[schema(max_items = 50)]
    pub items: Vec<FileItemRef>,
}

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "Items (live or in their collection's trash) still reference the file or something inside the folder; nothing was deleted."
)]
pub struct FileInUse(pub FileInUseBody);

/// One referencing item, labelled by its collection's display template or display field
/// (`#<id>` without either).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileUsageItem {
    pub id: i64,
    pub label: String,
    /// The item is in its collection's trash.
    pub trashed: bool,
}

/// The referencing items of one collection.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileUsageGroup {
    /// The collection's slug.
    pub collection: String,
    /// The collection's name.
    pub name: String,
    pub items: Vec<FileUsageItem>,
}

/// Where a file is used.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileUsage {
    /// By collection id; at most 100 items over all collections.
    pub collections: Vec<FileUsageGroup>,
    /// Team chat messages carrying the file: always empty until team chat exists.
    #[schema(max_items = 0)]
    pub messages: Vec<Value>,
    /// True when the user lacks `can-show-collections`: no items are listed.
    pub hidden: bool,
    /// More items reference the file than are listed.
    pub truncated: bool,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileUsageEnvelope {
    pub data: FileUsage,
}
