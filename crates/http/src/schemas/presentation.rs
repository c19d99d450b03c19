//! The shapes of the admin app's collection presentation routes (list columns, form layout),
//! the relation picker's options and the singleton upsert in the OpenAPI description, checked
//! against every response by the black-box suite.

use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::PaginationMeta;

/// `PUT /collections/{collection}/list-columns`: 1 to 50 distinct names of the collection's
/// fields or of `id`, `created_at`, `updated_at`, in column order.
#[derive(Debug, ToSchema, Serialize)]
pub struct ListColumnsRequest {
    #[schema(min_items = 1, max_items = 50)]
    pub columns: Vec<String>,
}

/// The list's columns as stored.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListColumns {
    pub columns: Vec<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListColumnsEnvelope {
    pub data: ListColumns,
}

/// One section of a form layout: a titled group of fields, each field placed once in the
/// whole layout.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormSection {
    /// Always `section` (optional in requests).
    #[serde(rename = "type")]
    #[schema(pattern = "^section$")]
    pub kind: String,
    #[schema(min_length = 1, max_length = 255)]
    pub title: String,
    #[schema(min_items = 1)]
    pub fields: Vec<String>,
    /// Whether the form shows the section folded (default false).
    pub collapsed: bool,
}

/// `PUT /collections/{collection}/form-layout`: at most 100 sections (64 KiB of JSON); `[]`
/// clears the layout.
#[derive(Debug, ToSchema, Serialize)]
pub struct FormLayoutRequest {
    #[schema(max_items = 100)]
    pub layout: Vec<FormSection>,
}

/// The form layout as stored (`[]`: none; the form shows the fields in schema order).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormLayout {
    pub layout: Vec<FormSection>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FormLayoutEnvelope {
    pub data: FormLayout,
}

/// Query parameters of the relation picker.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OptionsParams {
    /// A relation field of this collection, by id.
    #[param(minimum = 1)]
    pub field_id: i64,
    /// The target collection: required for an m2a field (one of its allowed collections).
    #[param(minimum = 1, nullable = false)]
    pub related_collection_id: Option<i64>,
    /// Items whose display field contains this text, in any ASCII case.
    #[param(max_length = 255, nullable = false)]
    pub search: Option<String>,
    /// 1-based page.
    #[param(minimum = 1, nullable = false)]
    pub page: Option<i64>,
    /// Default 20.
    #[param(minimum = 1, maximum = 100, nullable = false)]
    pub per_page: Option<i64>,
}

/// An item a relation field can point at, with its label.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemOption {
    pub id: i64,
    /// The display template or field rendered, or `#<id>`.
    pub label: String,
}

/// A page of options.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ItemOptionPage {
    pub data: Vec<ItemOption>,
    pub meta: PaginationMeta,
}
