//! The admin app's access configuration in the OpenAPI description: roles, permissions, API
//! keys, project settings, the dashboard and the activity log. Like every shape here they are
//! checked by the black-box suite, which validates each admin response it receives.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// One collection's grant, in the manifest's shape: only `true` flags are written (absent means
/// deny); `rules` holds `fields` (per-field `read`/`create`/`update` flags) and `item_filter`
/// (the query filter dialect).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionGrant {
    #[schema(nullable = false)]
    pub create: Option<bool>,
    #[schema(nullable = false)]
    pub read: Option<bool>,
    #[schema(nullable = false)]
    pub update: Option<bool>,
    #[schema(nullable = false)]
    pub delete: Option<bool>,
    #[schema(value_type = Option<Object>, nullable = false)]
    pub rules: Option<Value>,
}

/// The global files matrix: only `true` flags are written (absent means deny).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileGrants {
    #[schema(nullable = false)]
    pub create: Option<bool>,
    #[schema(nullable = false)]
    pub read: Option<bool>,
    #[schema(nullable = false)]
    pub read_private: Option<bool>,
    #[schema(nullable = false)]
    pub update: Option<bool>,
    #[schema(nullable = false)]
    pub delete: Option<bool>,
}

/// A role in the list.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSummary {
    pub id: i64,
    pub name: String,
    /// One of the four seeded roles (`super-admin`, `admin`, `reader`, `public`).
    pub is_system: bool,
    /// Admin permissions assigned to the role.
    #[schema(minimum = 0)]
    pub permissions_count: i64,
    /// Users (not deleted) holding the role directly or through a group.
    #[schema(minimum = 0)]
    pub users_count: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RolePage {
    pub data: Vec<RoleSummary>,
    pub meta: PaginationMeta,
}

/// A role with its admin permissions and both matrices.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub id: i64,
    pub name: String,
    pub is_system: bool,
    /// Ids of `permissions` rows, ascending.
    pub permission_ids: Vec<i64>,
    /// Keyed by collection slug.
    pub collection_permissions: BTreeMap<String, CollectionGrant>,
    pub file_permissions: FileGrants,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleEnvelope {
    pub data: Role,
}

/// A permission the role form offers.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionOption {
    pub id: i64,
    pub name: String,
}

/// A collection the role form offers a grant row for.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionOption {
    pub id: i64,
    pub slug: String,
    pub name: String,
}

/// The create page's data.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleForm {
    pub permissions: Vec<PermissionOption>,
    pub collections: Vec<CollectionOption>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleFormEnvelope {
    pub data: RoleForm,
}

/// The edit page's data: the role and the form's options.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleEdit {
    pub role: Role,
    pub permissions: Vec<PermissionOption>,
    pub collections: Vec<CollectionOption>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleEditEnvelope {
    pub data: RoleEdit,
}

/// `POST /settings/roles` and `PUT /settings/roles/{role}`. On update a field left out keeps its
/// value; `name` is required on both.
#[derive(Debug, ToSchema, Serialize)]
pub struct RoleWrite {
    #[schema(max_length = 255)]
    pub name: String,
    /// Ids of `permissions` rows (at most 1000); replaces the role's admin permissions.
    #[schema(nullable = false, max_items = 1000)]
    pub permission_ids: Option<Vec<i64>>,
    /// Keyed by collection slug (at most 1000); replaces the collection matrix.
    #[schema(nullable = false)]
    pub collection_permissions: Option<BTreeMap<String, CollectionGrant>>,
    /// Replaces the files matrix.
    #[schema(nullable = false)]
    pub file_permissions: Option<FileGrants>,
}

/// `POST /settings/roles/{role}/duplicate`.
#[derive(Debug, ToSchema, Serialize)]
pub struct RoleDuplicate {
    /// The new role's name (unique).
    #[schema(max_length = 255)]
    pub name: String,
}

/// Only `delete`.
#[derive(Debug, ToSchema, Serialize)]
pub enum BulkActionName {
    #[serde(rename = "delete")]
    Delete,
}

/// `POST /settings/roles/bulk-actions`.
#[derive(Debug, ToSchema, Serialize)]
pub struct RoleBulkAction {
    #[schema(inline)]
    pub action: BulkActionName,
    /// Role ids (1 to 100); ids of no role are ignored.
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<i64>,
}

/// What a bulk delete did, by role name.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleBulkResult {
    pub deleted: Vec<String>,
    /// `super-admin` and `public`, which are never deleted.
    pub skipped: Vec<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleBulkEnvelope {
    pub data: RoleBulkResult,
}

/// A permission row.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Permission {
    pub id: i64,
    /// A name of the catalog.
    pub name: String,
    /// Roles holding it.
    #[schema(minimum = 0)]
    pub roles_count: i64,
}

/// Every permission row (bounded by the catalog: not paginated).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionList {
    pub data: Vec<Permission>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionEnvelope {
    pub data: Permission,
}

/// `POST /settings/permissions` and `PUT /settings/permissions/{permission}`.
#[derive(Debug, ToSchema, Serialize)]
pub struct PermissionWrite {
    /// A catalog name no other row has.
    #[schema(max_length = 255)]
    pub name: String,
}

/// `POST /settings/permissions/sync`.
#[derive(Debug, ToSchema, Serialize)]
pub struct PermissionSync {
    /// Also delete the rows whose name is not in the catalog (default false).
    #[schema(nullable = false)]
    pub prune: Option<bool>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionSyncResult {
    /// Catalog names that got a row.
    #[schema(minimum = 0)]
    pub created: i64,
    /// Rows outside the catalog that were deleted.
    #[schema(minimum = 0)]
    pub pruned: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionSyncEnvelope {
    pub data: PermissionSyncResult,
}

/// An API key as listed: never its secret or digest.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKey {
    pub id: i64,
    pub name: String,
    /// The non-secret lookup id: the 12 characters after `ek_`.
    pub key_id: String,
    /// The role the key acts under.
    pub role: String,
    /// IPs and CIDR ranges the key may be used from; empty: any.
    pub ip_allowlist: Vec<String>,
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub revoked_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub last_used_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyPage {
    pub data: Vec<ApiKey>,
    pub meta: PaginationMeta,
}

/// A key just created, with its secret: shown this once, stored nowhere.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreatedApiKey {
    pub id: i64,
    pub name: String,
    pub key_id: String,
    pub role: String,
    pub ip_allowlist: Vec<String>,
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub revoked_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub last_used_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// `ek_` and 43 URL-safe base64 characters.
    #[schema(pattern = "^ek_[A-Za-z0-9_-]{32,256}$")]
    pub secret: String,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreatedApiKeyEnvelope {
    pub data: CreatedApiKey,
}

/// `POST /settings/api-keys`.
#[derive(Debug, ToSchema, Serialize)]
pub struct NewApiKey {
    /// Unique, without leading or trailing spaces.
    #[schema(max_length = 255)]
    pub name: String,
    /// An existing role other than `public`.
    #[schema(max_length = 255)]
    pub role: String,
    /// IPv4 or IPv6 addresses and CIDR ranges (at most 100); absent or empty: any address.
    #[schema(nullable = false, max_items = 100)]
    pub ip_allowlist: Option<Vec<String>>,
    /// RFC 3339; in the past is accepted (the key then never authenticates).
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
}

/// The manifest's `settings` object: every setting, effective values.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettings {
    /// Enabled content locales.
    pub content_locales: Vec<String>,
    /// One of `content_locales`.
    pub default_locale: String,
    /// The origin gate's allowlist (canonical origins); empty: the gate is off.
    pub public_api_allowed_origins: Vec<String>,
    #[schema(minimum = 0)]
    pub files_max_upload_bytes: i64,
    /// The cap on one chat attachment; null: no project cap (the server's ceiling, 2 GiB).
    #[schema(minimum = 0)]
    pub chat_max_upload_bytes: Option<i64>,
    /// AI prompts per user per day; 0 disables the cap.
    #[schema(minimum = 0)]
    pub daily_prompt_limit: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettingsEnvelope {
    pub data: ProjectSettings,
}

/// `PUT /settings/project`: the settings to change; the others keep their values. An unknown
/// key is 422.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettingsUpdate {
    #[schema(nullable = false, max_items = 100)]
    pub content_locales: Option<Vec<String>>,
    #[schema(nullable = false)]
    pub default_locale: Option<String>,
    /// An array of origins (at most 1000); text with one per line (or separated by commas or
    /// whitespace) is accepted too.
    #[schema(nullable = false, max_items = 1000)]
    pub public_api_allowed_origins: Option<Vec<String>>,
    #[schema(nullable = false, minimum = 0)]
    pub files_max_upload_bytes: Option<i64>,
    /// Null removes the project cap (the server's ceiling, 2 GiB, applies).
    #[schema(minimum = 0)]
    pub chat_max_upload_bytes: Option<i64>,
    #[schema(nullable = false, minimum = 0)]
    pub daily_prompt_limit: Option<i64>,
}

/// The dashboard's counts.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Dashboard {
    #[schema(minimum = 0)]
    pub collections: i64,
    /// Items not deleted.
    #[schema(minimum = 0)]
    pub items: i64,
    /// Files (not folders) not deleted.
    #[schema(minimum = 0)]
    pub files: i64,
    /// Users not deleted.
    #[schema(minimum = 0)]
    pub users: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardEnvelope {
    pub data: Dashboard,
}

/// Who made a change.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityUser {
    pub id: i64,
    pub name: String,
}

/// One entry of the activity log.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Activity {
    pub id: i64,
    /// The area: `auth`, `users`, `groups`, `roles`, `permissions`, `api_keys`, `settings`.
    pub log_name: String,
    /// What happened: `created`, `updated`, `deleted`, `duplicated`, `revoked`, `synced`, …
    pub event: String,
    #[schema(required = true)]
    pub subject_type: Option<String>,
    #[schema(required = true)]
    pub subject_id: Option<String>,
    /// `{"changed": [names of changed keys]}` plus ids and counts; never a value of a secret.
    pub properties: BTreeMap<String, Value>,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Null when no user made the change or the user was deleted.
    #[schema(required = true)]
    pub user: Option<ActivityUser>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityPage {
    pub data: Vec<Activity>,
    pub meta: PaginationMeta,
}

/// `page` and `per_page` of an admin list.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// 1-based page.
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}

/// The activity log's query: paging and exact-match filters (AND-ed).
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityParams {
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
    /// The user who made the change.
    #[param(minimum = 1, nullable = false)]
    pub user_id: Option<i64>,
    /// `user`, `group`, `role`, `permission`, `api_key`, `settings`, …
    #[param(max_length = 255, nullable = false)]
    pub subject_type: Option<String>,
    #[param(max_length = 255, nullable = false)]
    pub subject_id: Option<String>,
    #[param(max_length = 255, nullable = false)]
    pub log_name: Option<String>,
}
