//! One collection of a manifest: checked, its relation targets resolved, saved. `apply` runs it
//! for every collection of a manifest and the admin app's schema routes (issue 18) for the one
//! collection or field a request carries, so both refuse the same input with the same message
//! (one code path): the manifest schema's `$defs/collection` and `$defs/field`, then
//! [`FieldDef::from_json`], then the database (relation targets by slug).

use std::collections::BTreeMap;

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use serde_json::Value;
use vellum_domain::{CollectionSchema, CollectionSlug, FieldDef, check_display};
use vellum_storage::StorageError;
use vellum_storage::collections::{self, CollectionDef};
use vellum_storage::model::{Collection, Presentation};

use crate::path::join;
use crate::{ManifestError, schema};

/// A collection entry (a manifest's `collections[i]` or the admin app's body), checked.
#[derive(Debug, Clone)]
pub struct CollectionInput {
    pub slug: CollectionSlug,
    pub name: String,
    pub is_singleton: bool,
    /// Each field as written (relation targets by slug) with its checked definition.
    pub fields: Vec<(Value, FieldDef)>,
    /// `None` when absent (left as it is), `Some(None)` for an explicit null (cleared).
    pub display_field: Option<Option<String>>,
    pub display_template: Option<Option<String>>,
}

/// Checks one collection entry: its shape, its slug and every field definition (names unique).
/// Paths in errors start with `at` (`collections[1]`, or empty for a request body).
///
/// # Errors
/// [`ManifestError::Invalid`] naming the first offending path.
pub fn check_collection(raw: &Value, at: &str) -> Result<CollectionInput, ManifestError> {
    schema::check_def(raw, "collection", at)?;
    let slug = CollectionSlug::parse(text(raw, "slug"))
        .map_err(|e| ManifestError::invalid(join(at, "slug"), e))?;
    let mut fields: Vec<(Value, FieldDef)> = Vec::new();
    let list = raw
        .get("fields")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (j, field) in list.iter().enumerate() {
        let field_at = join(at, &format!("fields[{j}]"));
        let def = FieldDef::from_json(field).map_err(|e| domain_error(&field_at, &e))?;
        if fields.iter().any(|(_, d)| d.name == def.name) {
            return Err(ManifestError::invalid(
                join(&field_at, "name"),
                format!("duplicate field name \"{}\"", def.name),
            ));
        }
        fields.push((field.clone(), def));
    }
    let optional = |key: &str| -> Option<Option<String>> {
        raw.get(key)
            .map(|v| v.as_str().map(str::to_owned).filter(|s| !s.is_empty()))
    };
    let input = CollectionInput {
        name: match raw.get("name").and_then(Value::as_str) {
            Some(name) => name.to_owned(),
            None => slug.to_string(),
        },
        slug,
        is_singleton: raw
            .get("is_singleton")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        fields,
        display_field: optional("display_field"),
        display_template: optional("display_template"),
    };
    let schema = CollectionSchema::new(input.fields.iter().map(|(_, d)| d.clone()).collect())
        .map_err(|e| ManifestError::invalid(join(at, "fields"), e))?;
    check_presentation(
        &schema,
        input.display_field.clone().flatten().as_deref(),
        input.display_template.clone().flatten().as_deref(),
        at,
    )?;
    Ok(input)
}

/// Checks one field definition (`$defs/field`, then the domain crate); relation targets may
/// still be slugs.
///
/// # Errors
/// [`ManifestError::Invalid`] naming the offending path under `at`.
pub fn check_field(raw: &Value, at: &str) -> Result<FieldDef, ManifestError> {
    schema::check_def(raw, "field", at)?;
    FieldDef::from_json(raw).map_err(|e| domain_error(at, &e))
}

/// The display field and template against `schema`: the first problem, under `at`.
///
/// # Errors
/// [`ManifestError::Invalid`] at `display_field` or `display_template`.
pub fn check_presentation(
    schema: &CollectionSchema,
    field: Option<&str>,
    template: Option<&str>,
    at: &str,
) -> Result<(), ManifestError> {
    match check_display(schema, field, template).iter().next() {
        Some((key, messages)) => Err(ManifestError::invalid(join(at, key), messages.join(" "))),
        None => Ok(()),
    }
}

/// Every collection's id by slug, for [`resolve_field`].
///
/// # Errors
/// A database error.
pub async fn slug_ids<C: ConnectionTrait>(db: &C) -> Result<BTreeMap<String, i64>, ManifestError> {
    Ok(collections::list_collections(db)
        .await?
        .into_iter()
        .map(|c| (c.slug.to_string(), c.id))
        .collect())
}

/// The field as stored: relation targets named by slug (`related_collection`,
/// `allowed_collections`) replaced by ids, then checked by the domain crate again.
///
/// # Errors
/// [`ManifestError::Invalid`] for an unknown collection or a bad definition, under `at`.
pub fn resolve_field(
    raw: &Value,
    ids: &BTreeMap<String, i64>,
    at: &str,
) -> Result<FieldDef, ManifestError> {
    let resolved = resolve_relations(raw, ids, at)?;
    FieldDef::from_json(&resolved).map_err(|e| domain_error(at, &e))
}

/// Saves a checked collection: its fields exactly as listed (see
/// [`collections::save_collection`]), and the display field and template when given. The
/// collection must exist when a field targets it by slug, itself included.
///
/// # Errors
/// [`ManifestError::Invalid`] under `at` (an unknown relation target, a duplicate among existing
/// values of a field made `unique`); a database error.
pub async fn save_collection<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    input: &CollectionInput,
    ids: &BTreeMap<String, i64>,
    at: &str,
) -> Result<(Collection, bool), ManifestError> {
    let mut fields = Vec::with_capacity(input.fields.len());
    for (j, (raw, _)) in input.fields.iter().enumerate() {
        fields.push(resolve_field(raw, ids, &join(at, &format!("fields[{j}]")))?);
    }
    let def = CollectionDef {
        slug: input.slug.clone(),
        name: input.name.clone(),
        is_singleton: input.is_singleton,
        fields,
    };
    let (saved, mut changed) = collections::save_collection(db, &def)
        .await
        .map_err(|e| conflict_at(e, at))?;
    let presentation = merged_presentation(&saved, input);
    if presentation != saved.presentation {
        collections::set_presentation(db, saved.id, &presentation).await?;
        changed = true;
    }
    let saved = collections::collection_by_id(db, saved.id)
        .await?
        .ok_or(StorageError::NotFound { what: "collection" })?;
    Ok((saved, changed))
}

/// Creates a collection that does not exist yet, in one transaction (so a field may target the
/// collection itself by slug).
///
/// # Errors
/// [`ManifestError::Invalid`] at `slug` when the collection exists; as [`save_collection`].
pub async fn create_collection<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    input: &CollectionInput,
) -> Result<Collection, ManifestError> {
    let tx = db.begin().await?;
    if collections::collection_by_slug(&tx, input.slug.as_str())
        .await?
        .is_some()
    {
        return Err(ManifestError::invalid(
            "slug",
            format!("The collection \"{}\" already exists.", input.slug),
        ));
    }
    create_empty(&tx, input).await?;
    let ids = slug_ids(&tx).await?;
    let (saved, _) = save_collection(&tx, input, &ids, "").await?;
    tx.commit().await?;
    Ok(saved)
}

/// Creates the collection without fields when it does not exist (so relations may point at it
/// before its fields are saved).
pub(crate) async fn create_empty<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    input: &CollectionInput,
) -> Result<(), ManifestError> {
    if collections::collection_by_slug(tx, input.slug.as_str())
        .await?
        .is_none()
    {
        let def = CollectionDef {
            slug: input.slug.clone(),
            name: input.name.clone(),
            is_singleton: input.is_singleton,
            fields: Vec::new(),
        };
        collections::save_collection(tx, &def).await?;
    }
    Ok(())
}

/// The stored presentation with the input's display field and template where given; one left
/// as it was but naming a field that is gone is cleared.
fn merged_presentation(saved: &Collection, input: &CollectionInput) -> Presentation {
    let mut presentation = saved.presentation.clone();
    if let Some(field) = &input.display_field {
        presentation.display_field.clone_from(field);
    }
    if let Some(template) = &input.display_template {
        presentation.display_template.clone_from(template);
    }
    let errors = check_display(
        saved.schema(),
        presentation.display_field.as_deref(),
        presentation.display_template.as_deref(),
    );
    if errors.get("display_field").is_some() {
        presentation.display_field = None;
    }
    if errors.get("display_template").is_some() {
        presentation.display_template = None;
    }
    presentation
}

/// A storage conflict (a duplicate among values made unique) as an invalid manifest at `at`.
pub(crate) fn conflict_at(err: StorageError, at: &str) -> ManifestError {
    match err {
        StorageError::Conflict { message, .. } => ManifestError::invalid(at, message),
        other => other.into(),
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A domain error under `at`: its own path (`type`, `settings.date_mode`) is appended.
pub(crate) fn domain_error(at: &str, err: &vellum_domain::DomainError) -> ManifestError {
    match err {
        vellum_domain::DomainError::InvalidSettings { path, message } => {
            ManifestError::invalid(join(at, path), message)
        }
        other => ManifestError::invalid(at, other),
    }
}

/// Replaces relation targets named by slug (`related_collection`, `allowed_collections`) with
/// the ids the server stores (`related_collection_id`, `allowed_collection_ids`).
fn resolve_relations(
    raw: &Value,
    ids: &BTreeMap<String, i64>,
    at: &str,
) -> Result<Value, ManifestError> {
    let mut field = raw.clone();
    let Some(settings) = field.get_mut("settings").and_then(Value::as_object_mut) else {
        return Ok(field);
    };
    if let Some(slug) = settings.remove("related_collection") {
        let slug = slug.as_str().unwrap_or_default().to_owned();
        let id = ids.get(&slug).ok_or_else(|| {
            ManifestError::invalid(
                join(at, "settings.related_collection"),
                format!("unknown collection \"{slug}\""),
            )
        })?;
        settings.insert("related_collection_id".into(), Value::from(*id));
    }
    if let Some(list) = settings.remove("allowed_collections") {
        let mut resolved = Vec::new();
        for (k, slug) in list
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
        {
            let slug = slug.as_str().unwrap_or_default();
            let id = ids.get(slug).ok_or_else(|| {
                ManifestError::invalid(
                    join(at, &format!("settings.allowed_collections[{k}]")),
                    format!("unknown collection \"{slug}\""),
                )
            })?;
            resolved.push(Value::from(*id));
        }
        settings.insert("allowed_collection_ids".into(), Value::Array(resolved));
    }
    Ok(field)
}
