//! The shapes of the admin app's collection item routes (`/collections/{collection}/items…`) in
//! the OpenAPI description, checked against every response by the black-box suite.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::{CollectionItemResource, CollectionResource, PaginationMeta};

/// Query parameters of the admin item list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminItemListParams {
    /// 1-based page.
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
    /// The public API's grammar: `filter[field]=v` or `filter[field][_op]=v`, AND-ed; any field
    /// of the collection (admin lists are not limited by field rules).
    #[param(style = DeepObject, explode, value_type = Option<Object>, nullable = false)]
    pub filter: Option<BTreeMap<String, Value>>,
    /// One field: `id` (default), `created_at`, `updated_at`, or a text, number, boolean or
    /// single-relation field of the collection.
    #[param(nullable = false)]
    pub sort: Option<String>,
    /// `asc` (default) or `desc`.
    #[param(nullable = false, pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
    /// `1`: soft-deleted items only (the trash); `0` or absent: live items.
    #[param(nullable = false, pattern = "^(0|1|true|false)$")]
    pub trashed: Option<String>,
    /// An enabled content locale (default: the project's default locale).
    #[param(nullable = false)]
    pub locale: Option<String>,
    #[param(nullable = false)]
    pub include_all_translations: Option<bool>,
    /// Comma-separated: `files`, `users`, relation field names.
    #[param(nullable = false)]
    pub include: Option<String>,
}

/// Query parameters of the export: the list's, and the format.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminItemExportParams {
    /// `csv` or `json` (required).
    #[param(nullable = false, pattern = "^(csv|json)$")]
    pub format: String,
    #[param(style = DeepObject, explode, value_type = Option<Object>, nullable = false)]
    pub filter: Option<BTreeMap<String, Value>>,
    #[param(nullable = false)]
    pub sort: Option<String>,
    #[param(nullable = false, pattern = "^(asc|desc)$")]
    pub direction: Option<String>,
    #[param(nullable = false, pattern = "^(0|1|true|false)$")]
    pub trashed: Option<String>,
    /// The locale translatable values are written in.
    #[param(nullable = false)]
    pub locale: Option<String>,
}

/// Query parameters of the preview: the role, and the public show's parameters.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewParams {
    /// The name of an existing role.
    #[param(nullable = false)]
    pub role: String,
    #[param(nullable = false)]
    pub locale: Option<String>,
    #[param(nullable = false)]
    pub include_all_translations: Option<bool>,
    #[param(nullable = false)]
    pub include: Option<String>,
}

/// The content locales of the create form.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormLocales {
    pub enabled: Vec<String>,
    pub default: String,
}

/// What the create form needs.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemForm {
    /// The collection with every field (type, settings, translatable).
    pub collection: CollectionResource,
    /// Each field's `default_value`, by field name (fields without one are absent).
    pub defaults: BTreeMap<String, Value>,
    pub locales: FormLocales,
    /// The saved form layout, or null.
    #[schema(required = true)]
    pub form_layout: Option<Value>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemFormEnvelope {
    pub data: ItemForm,
}

/// Whether the item is in the trash.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminItemMeta {
    #[schema(required = true, format = DateTime)]
    pub deleted_at: Option<String>,
}

/// An item (live or soft-deleted) and its deletion time.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminItemEnvelope {
    pub data: CollectionItemResource,
    pub meta: AdminItemMeta,
}

/// An item the admin app wrote (`{"data": item}`).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminItemWritten {
    pub data: CollectionItemResource,
}

/// The bulk request.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkItemsRequest {
    /// `delete` (needs `can-delete-collections`), `restore` (`can-restore-collections`) or
    /// `force_delete` (`can-force-delete-collections`).
    #[schema(pattern = "^(delete|restore|force_delete)$")]
    pub action: String,
    /// 1 to 100 item ids; repeated ids count once.
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<i64>,
}

/// One id a bulk action did not apply to.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkItemFailure {
    pub id: i64,
    pub message: String,
}

/// Which ids the action applied to and why each other did not.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkItemsResult {
    pub succeeded: Vec<i64>,
    pub failed: Vec<BulkItemFailure>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BulkItemsEnvelope {
    pub data: BulkItemsResult,
}

/// A revision: the item's complete `data` after one write, as stored (translatable values as
/// locale maps).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemRevision {
    pub id: i64,
    pub item_id: i64,
    #[schema(required = true)]
    pub user_id: Option<i64>,
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    pub data: BTreeMap<String, Value>,
}

/// A page of revisions, newest first.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemRevisionPage {
    pub data: Vec<ItemRevision>,
    pub meta: PaginationMeta,
}

/// A policy decision and the rule behind it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyDecision {
    pub allowed: bool,
    /// `super_admin`, `collection_grant`, `item_filter`, …
    pub rule: String,
    /// The decision in words.
    pub reason: String,
}

/// The role's item filter and whether the item passes it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewItemFilter {
    /// As configured; null without one.
    #[schema(required = true)]
    pub filter: Option<Value>,
    /// Null without a filter, or when the read grant already denies.
    #[schema(required = true)]
    pub passes: Option<bool>,
}

/// An expansion the role gets in a lesser form.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DowngradedExpansion {
    pub field: String,
    /// The related item's or file's id; null when the whole field is hidden.
    #[schema(required = true)]
    pub id: Option<i64>,
    /// `hidden_field`, `lean` (a related item the role may not see), `denied` or `hidden` (a
    /// file).
    pub outcome: String,
    pub reason: String,
}

/// Why the role reads what it reads.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewExplanation {
    /// The read grant on the collection.
    pub grant: PolicyDecision,
    /// Whether the role sees this item (read grant, then item filter).
    pub item: PolicyDecision,
    pub item_filter: PreviewItemFilter,
    pub redacted_fields: Vec<String>,
    pub downgraded_expansions: Vec<DowngradedExpansion>,
}

/// The item as a role's public API renders it.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemPreview {
    pub role: String,
    pub readable: bool,
    /// Exactly the `data` of `GET /api/v1/collections/{collection}/items/{item}` as the role;
    /// null when `readable` is false.
    #[schema(required = true)]
    pub payload: Option<CollectionItemResource>,
    pub explanation: PreviewExplanation,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemPreviewEnvelope {
    pub data: ItemPreview,
}
