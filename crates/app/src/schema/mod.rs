//! Schema editing in the admin app (issue 18): collections and fields created, changed,
//! reordered and deleted, field packs and collection packs.
//!
//! One code path with the manifest: bodies are the manifest's collection and field shapes,
//! checked by `vellum_manifest::collection` (the manifest schema's `$defs`, the domain crate,
//! relation targets by slug) and saved by it, so `vellum-admin apply` and these routes refuse
//! the same input with the same message. Changes that touch stored values (a type,
//! translatability or relation target change, a rename, a removal) answer a dry run first
//! unless `?confirm=true`, and run in short batches ([`passes`]) so readers are never blocked.
//! Every change moves the epoch on every replica and records one activity row.

pub mod collections;
pub mod fields;
pub mod packs;
mod passes;

use serde::Serialize;
use serde_json::Value as Json;
use vellum_domain::FieldDef;
use vellum_manifest::ManifestError;
use vellum_manifest::collection::{self as manifest, CollectionInput};
use vellum_storage::Database;
use vellum_storage::model::{Collection, StoredField};

use crate::error::AppError;
use crate::query::{first, pairs};
use crate::resources::timestamp;

/// A field as the schema editor shows it (settings as stored: relation targets by id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDefinition {
    pub id: i64,
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub translatable: bool,
    pub settings: Json,
    pub sort: i32,
}

impl From<&StoredField> for FieldDefinition {
    fn from(field: &StoredField) -> Self {
        Self {
            id: field.id,
            name: field.def.name.to_string(),
            field_type: field.def.field_type.as_str().to_owned(),
            translatable: field.def.translatable,
            settings: field.def.settings.to_json(),
            sort: field.sort,
        }
    }
}

/// A collection's full definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectionDefinition {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub is_singleton: bool,
    pub display_field: Option<String>,
    pub display_template: Option<String>,
    pub fields: Vec<FieldDefinition>,
    pub created_at: Json,
    pub updated_at: Json,
}

impl From<&Collection> for CollectionDefinition {
    fn from(c: &Collection) -> Self {
        Self {
            id: c.id,
            slug: c.slug.to_string(),
            name: c.name.clone(),
            is_singleton: c.is_singleton,
            display_field: c.presentation.display_field.clone(),
            display_template: c.presentation.display_template.clone(),
            fields: c.fields.iter().map(FieldDefinition::from).collect(),
            created_at: timestamp(c.created_at),
            updated_at: timestamp(c.updated_at),
        }
    }
}

/// What a change that touches stored values would do (a dry run) or did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValueChanges {
    /// True when nothing was changed: repeat with `?confirm=true` to apply.
    pub dry_run: bool,
    pub confirm_required: bool,
    /// Items whose stored value changes (or is removed).
    pub items: u64,
}

/// `?confirm=true` (or `1`): apply a change that touches stored values instead of a dry run.
#[must_use]
pub fn confirmed(query: &str) -> bool {
    matches!(
        first(&pairs(query), "confirm"),
        Some("true" | "1" | "on" | "yes")
    )
}

/// A manifest refusal as the admin app's 422 (the manifest path as the key: `fields[2].type`,
/// `settings.options`), or the storage error it wraps.
pub(crate) fn manifest_error(err: ManifestError) -> AppError {
    match err {
        ManifestError::Invalid(invalid) => {
            let key = if invalid.path.is_empty() {
                "body".to_owned()
            } else {
                invalid.path
            };
            AppError::invalid(key, invalid.message)
        }
        ManifestError::Storage(e) => e.into(),
        other => AppError::internal(other),
    }
}

/// The collection `slug` as stored now (not from the snapshot, which may be a moment old).
pub(crate) async fn load(db: &Database, slug: &str) -> Result<Collection, AppError> {
    vellum_storage::collections::collection_by_slug(db, slug)
        .await?
        .ok_or(AppError::NotFound)
}

/// The collection as the manifest describes it, with `fields` instead of its own (stored
/// definitions: relation targets already ids) and the display settings left as they are.
pub(crate) fn input_with(collection: &Collection, fields: Vec<FieldDef>) -> CollectionInput {
    CollectionInput {
        slug: collection.slug.clone(),
        name: collection.name.clone(),
        is_singleton: collection.is_singleton,
        fields: fields.into_iter().map(|d| (d.to_json(), d)).collect(),
        display_field: None,
        display_template: None,
    }
}

/// Saves `input` through the manifest's code path; answers the stored collection.
pub(crate) async fn save(db: &Database, input: &CollectionInput) -> Result<Collection, AppError> {
    let ids = manifest::slug_ids(db).await.map_err(manifest_error)?;
    let (saved, _) = manifest::save_collection(db, input, &ids, "")
        .await
        .map_err(manifest_error)?;
    Ok(saved)
}

/// The stored field definitions of `collection`.
pub(crate) fn defs(collection: &Collection) -> Vec<FieldDef> {
    collection.fields.iter().map(|f| f.def.clone()).collect()
}

/// Runs a schema change that rewrites stored values on a task of its own and waits for it.
///
/// A request's future is dropped when its client goes away or the HTTP layer's request timeout
/// ends (30 s by default), and a change over a large collection can take longer: dropped
/// between two batches, it would leave the definition switched and the values half converted.
/// On its own task the change always runs to its end (the caller may still get a timeout while
/// it finishes; the activity log records the outcome).
pub(crate) async fn detached<T, F>(work: F) -> Result<T, AppError>
where
    F: std::future::Future<Output = Result<T, AppError>> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(work).await.map_err(AppError::internal)?
}
