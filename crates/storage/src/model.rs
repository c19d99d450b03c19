//! The stored model the repositories share: a [`Collection`] with its [`StoredField`]s, as
//! [`crate::collections`] loads it and items, links and unique claims are checked against it.
//! It lives apart from the repositories so none of them needs another to name it.

use time::OffsetDateTime;
use vellum_domain::{CollectionSchema, CollectionSlug, FieldDef};

use crate::StorageError;
use crate::sql::id_param;

/// A stored field: its id (item links point at it) and sort position, plus the definition.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredField {
    pub id: i64,
    pub sort: i32,
    pub def: FieldDef,
}

/// A collection with its fields in `sort` order.
#[derive(Debug, Clone)]
pub struct Collection {
    pub id: i64,
    pub slug: CollectionSlug,
    pub name: String,
    pub is_singleton: bool,
    pub created_at: Option<OffsetDateTime>,
    pub updated_at: Option<OffsetDateTime>,
    /// The admin app's presentation of the collection (issue 18's migration): see
    /// [`Presentation`].
    pub presentation: Presentation,
    pub fields: Vec<StoredField>,
    /// Built from `fields` when the collection is loaded.
    pub(crate) schema: CollectionSchema,
}

/// How the admin app shows a collection: what labels an item (a field's value, or a template
/// such as `{{title}} ({{sku}})`), the list's columns and the form's layout. Stored as written
/// (the application layer validates them against the fields); all optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Presentation {
    pub display_field: Option<String>,
    pub display_template: Option<String>,
    /// Field names, in column order.
    pub list_columns: Option<Vec<String>>,
    /// The form layout as the editor saved it (a JSON value the application layer checked).
    pub form_layout: Option<serde_json::Value>,
}

impl Collection {
    /// The schema the domain crate validates and flattens with.
    #[must_use]
    pub fn schema(&self) -> &CollectionSchema {
        &self.schema
    }

    /// The stored field called `name`.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&StoredField> {
        self.fields.iter().find(|f| f.def.name.as_str() == name)
    }

    /// The id as bound in SQL (the column is 32-bit). A collection handed out by this crate
    /// always fits; one that does not cannot exist.
    pub(crate) fn sql_id(&self) -> Result<i32, StorageError> {
        id_param(self.id).ok_or(StorageError::NotFound { what: "collection" })
    }
}
