//! The shapes of the admin app's schema editor (`/collections…`: collections, fields, packs) in
//! the OpenAPI description, checked against every response by the black-box suite.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// `?confirm=true` applies a change that touches stored values; without it the answer is a dry
/// run that changes nothing.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConfirmParams {
    #[param(nullable = false)]
    pub confirm: Option<bool>,
}

/// A field as the schema editor shows it (settings as stored: relation targets by id).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDefinition {
    pub id: i64,
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub translatable: bool,
    #[schema(required = true)]
    pub settings: Option<BTreeMap<String, Value>>,
    pub sort: i32,
}

/// A collection's full definition.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionDefinition {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub is_singleton: bool,
    /// The field whose value labels an item (options picker, labels).
    #[schema(required = true)]
    pub display_field: Option<String>,
    /// A label such as `{{title}} ({{sku}})`.
    #[schema(required = true)]
    pub display_template: Option<String>,
    pub fields: Vec<FieldDefinition>,
    #[schema(required = true, format = DateTime)]
    pub created_at: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub updated_at: Option<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionDefinitionEnvelope {
    pub data: CollectionDefinition,
}

/// A collection in the schema editor's list.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionOverview {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub is_singleton: bool,
    #[schema(minimum = 0)]
    pub fields_count: i64,
    /// Items not soft-deleted.
    #[schema(minimum = 0)]
    pub items_count: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionOverviewList {
    pub data: Vec<CollectionOverview>,
}

/// One field in the manifest's shape (`$defs/field` of `docs/manifest.schema.json`); relation
/// targets by slug (`related_collection`, `allowed_collections`) or id.
#[derive(Debug, ToSchema, Serialize)]
pub struct FieldWrite {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub translatable: Option<bool>,
    pub settings: Option<BTreeMap<String, Value>>,
}

/// One collection in the manifest's shape (`$defs/collection`).
#[derive(Debug, ToSchema, Serialize)]
pub struct CreateCollectionRequest {
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]*$")]
    pub slug: String,
    pub name: Option<String>,
    pub is_singleton: Option<bool>,
    pub display_field: Option<String>,
    pub display_template: Option<String>,
    pub fields: Vec<FieldWrite>,
}

/// Any of the keys; `null` clears the display field or template.
#[derive(Debug, ToSchema, Serialize)]
pub struct UpdateCollectionRequest {
    pub name: Option<String>,
    pub is_singleton: Option<bool>,
    pub display_field: Option<String>,
    pub display_template: Option<String>,
}

/// Any of the keys; `settings` replaces the field's settings whole, `name` renames it.
#[derive(Debug, ToSchema, Serialize)]
pub struct UpdateFieldRequest {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub field_type: Option<String>,
    pub translatable: Option<bool>,
    pub settings: Option<BTreeMap<String, Value>>,
}

/// Every field name of the collection, once each, in the new order.
#[derive(Debug, ToSchema, Serialize)]
pub struct FieldOrderRequest {
    pub fields: Vec<String>,
}

/// A dry run of a deletion: how many items would lose something.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValueChanges {
    pub dry_run: bool,
    pub confirm_required: bool,
    #[schema(minimum = 0)]
    pub items: i64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValueChangesEnvelope {
    pub data: ValueChanges,
}

/// A field change: done, or (`dry_run`) what it would do.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FieldChange {
    pub dry_run: bool,
    pub confirm_required: bool,
    /// Items whose stored value is (or would be) converted.
    #[schema(minimum = 0)]
    pub changes: i64,
    pub field: FieldDefinition,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FieldChangeEnvelope {
    pub data: FieldChange,
}

/// What a field pack did.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FieldPackResult {
    pub collection: CollectionDefinition,
    pub added: Vec<String>,
    /// Fields of the pack the collection already had.
    pub skipped: Vec<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FieldPackEnvelope {
    pub data: FieldPackResult,
}

/// Optional name and slug of the collection a pack creates.
#[derive(Debug, ToSchema, Serialize)]
pub struct CollectionPackRequest {
    pub name: Option<String>,
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]*$")]
    pub slug: Option<String>,
}

/// What a collection pack did.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionPackResult {
    pub collection: CollectionDefinition,
    /// Dependencies created first.
    pub created: Vec<String>,
    /// Dependencies that existed and were reused.
    pub reused: Vec<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectionPackEnvelope {
    pub data: CollectionPackResult,
}
