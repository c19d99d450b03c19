//! Fields in the schema editor: `POST /collections/{collection}/fields`,
//! `PUT|DELETE /collections/{collection}/fields/{field}`,
//! `PUT /collections/{collection}/field-order`.

use serde::Serialize;
use serde_json::{Map, Value as Json};
use vellum_domain::{FieldDef, FieldName, changes_values, rename_placeholder};
use vellum_manifest::collection::{check_field, resolve_field, slug_ids};
use vellum_storage::field_changes;
use vellum_storage::model::{Collection, Presentation};

use super::passes::{self, FAILURES_SHOWN};
use super::{
    CollectionDefinition, FieldDefinition, ValueChanges, confirmed, defs, detached, input_with,
    load, manifest_error, save,
};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;

/// What `PUT /collections/{collection}/fields/{field}` did or, as a dry run, would do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    /// True when nothing was changed: the change touches stored values; repeat with
    /// `?confirm=true`.
    pub dry_run: bool,
    pub confirm_required: bool,
    /// Items whose stored value is (or would be) converted.
    pub changes: u64,
    /// The field as it is now (or, in a dry run, as it would be).
    pub field: Json,
}

async fn record(
    state: &AppState,
    principal: &Principal,
    event: &'static str,
    c: &Collection,
    field: &str,
    changed: Vec<String>,
) {
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", event)
            .subject("collection", &c.slug)
            .changed(changed)
            .extra(serde_json::json!({ "field": field })),
    )
    .await;
}

/// `POST /collections/{collection}/fields`: one field in the manifest's field shape, appended.
///
/// # Errors
/// 403 without `can-edit-collections`; 404; 422 at the manifest path of the problem (`type`,
/// `settings.options`, `name` when the collection has that field); the database.
pub async fn add(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<CollectionDefinition, AppError> {
    principal.require("can-edit-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    Input::new(body)?;
    let def = check_field(body, "").map_err(manifest_error)?;
    if collection.field(def.name.as_str()).is_some() {
        return Err(AppError::invalid(
            "name",
            format!("duplicate field name \"{}\"", def.name),
        ));
    }
    let ids = slug_ids(db).await.map_err(manifest_error)?;
    let def = resolve_field(body, &ids, "").map_err(manifest_error)?;
    let mut fields = defs(&collection);
    fields.push(def.clone());
    let saved = save(db, &input_with(&collection, fields)).await?;
    record(
        state,
        principal,
        "field_added",
        &saved,
        def.name.as_str(),
        vec![def.name.to_string()],
    )
    .await;
    state.invalidate().await;
    Ok(CollectionDefinition::from(&saved))
}

/// `PUT /collections/{collection}/field-order`: `{"fields": [every field name, in order]}`.
///
/// # Errors
/// 403 without `can-edit-collections`; 404; 422 unless `fields` is a permutation of the
/// collection's field names; the database.
pub async fn reorder(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    body: &Json,
) -> Result<CollectionDefinition, AppError> {
    principal.require("can-edit-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let mut input = Input::new(body)?;
    let names = input.optional_strings("fields", 10_000, 255);
    if names.is_none() && !input.has("fields") {
        input.error("fields", "The fields field is required.");
    }
    let mut ordered = Vec::new();
    if let Some(names) = names {
        for name in &names {
            match collection.field(name) {
                Some(f) if !ordered.iter().any(|d: &FieldDef| d.name == f.def.name) => {
                    ordered.push(f.def.clone());
                }
                _ => {}
            }
        }
        if ordered.len() != names.len() || ordered.len() != collection.fields.len() {
            input.error(
                "fields",
                "The fields field must list every field of the collection exactly once.",
            );
        }
    }
    input.finish()?;
    let saved = save(db, &input_with(&collection, ordered)).await?;
    record(
        state,
        principal,
        "fields_reordered",
        &saved,
        "",
        vec!["sort".to_owned()],
    )
    .await;
    state.invalidate().await;
    Ok(CollectionDefinition::from(&saved))
}

/// `PUT /collections/{collection}/fields/{field}`: any of `type`, `translatable`, `settings`
/// (replaced whole, relation targets by slug or id) and `name` (a rename). A change that
/// touches stored values (type, translatability, relation target) is a dry run unless
/// `?confirm=true`, and is refused while any stored value cannot be converted.
///
/// # Errors
/// 403 without `can-edit-collections`; 404 for an unknown collection or field; 422 at the
/// manifest path of a bad definition, at `name` for a taken or bad name, or at the field's name
/// listing the items whose values cannot be converted; the database.
pub async fn update(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    field: &str,
    query: &str,
    body: &Json,
) -> Result<FieldChange, AppError> {
    let (state, principal) = (state.clone(), principal.clone());
    let (slug, field, query, body) = (
        slug.to_owned(),
        field.to_owned(),
        query.to_owned(),
        body.clone(),
    );
    detached(async move { update_now(&state, &principal, &slug, &field, &query, &body).await })
        .await
}

async fn update_now(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    field: &str,
    query: &str,
    body: &Json,
) -> Result<FieldChange, AppError> {
    principal.require("can-edit-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let old = collection
        .field(field)
        .ok_or(AppError::NotFound)?
        .def
        .clone();
    let Json::Object(given) = body else {
        return Err(AppError::invalid(
            "body",
            "The request body must be a JSON object.",
        ));
    };
    let rename = match given.get("name").and_then(Json::as_str) {
        Some(to) if to != old.name.as_str() => Some(new_name(&collection, to)?),
        _ => None,
    };
    // The new definition under the old name, in the manifest's field shape.
    let mut raw: Map<String, Json> = match old.to_json() {
        Json::Object(map) => map,
        _ => Map::new(),
    };
    for (key, value) in given {
        raw.insert(key.clone(), value.clone());
    }
    raw.insert("name".into(), Json::String(old.name.to_string()));
    let raw = Json::Object(raw);
    check_field(&raw, "").map_err(manifest_error)?;
    let ids = slug_ids(db).await.map_err(manifest_error)?;
    let new = resolve_field(&raw, &ids, "").map_err(manifest_error)?;
    let confirm = confirmed(query);
    let mut changes = 0;
    let mut current = collection.clone();
    if changes_values(&old, &new) {
        let locales = state.snapshot().await?.locales.clone();
        let dry = passes::dry_run(state, &collection, &old, &new, &locales).await?;
        if dry.failure_count > 0 {
            return Err(refusal(&old, &dry));
        }
        if !confirm {
            let mut shown =
                FieldDefinition::from(collection.field(field).ok_or(AppError::NotFound)?);
            shown.field_type = new.field_type.as_str().to_owned();
            shown.translatable = new.translatable;
            shown.settings = new.settings.to_json();
            if let Some(to) = &rename {
                shown.name = to.to_string();
            }
            return Ok(FieldChange {
                dry_run: true,
                confirm_required: true,
                changes: dry.changes,
                field: serde_json::to_value(shown).map_err(AppError::internal)?,
            });
        }
        (current, changes) = passes::convert(state, &collection, &old, &new, &locales).await?;
    } else if new != old {
        let fields = defs(&collection)
            .into_iter()
            .map(|d| if d.name == old.name { new.clone() } else { d })
            .collect();
        current = save(db, &input_with(&collection, fields)).await?;
        state.invalidate().await;
    }
    let mut name = old.name.clone();
    if let Some(to) = rename {
        current = rename_field(state, &current, &old.name, &to).await?;
        name = to;
    }
    let changed: Vec<String> = given.keys().cloned().collect();
    record(
        state,
        principal,
        "field_updated",
        &current,
        name.as_str(),
        changed,
    )
    .await;
    let stored = current.field(name.as_str()).ok_or(AppError::NotFound)?;
    Ok(FieldChange {
        dry_run: false,
        confirm_required: false,
        changes,
        field: serde_json::to_value(FieldDefinition::from(stored)).map_err(AppError::internal)?,
    })
}

/// A valid field name the collection does not use yet.
fn new_name(collection: &Collection, to: &str) -> Result<FieldName, AppError> {
    let name = FieldName::parse(to).map_err(|e| AppError::invalid("name", e.to_string()))?;
    if collection.field(name.as_str()).is_some() {
        return Err(AppError::invalid(
            "name",
            format!("duplicate field name \"{name}\""),
        ));
    }
    Ok(name)
}

/// The 422 of a conversion that would break stored values: keyed by the field, naming the
/// items (the first [`FAILURES_SHOWN`]) and the first reason.
fn refusal(old: &FieldDef, dry: &passes::DryRun) -> AppError {
    let ids: Vec<String> = dry.failures.iter().map(|(id, _)| id.to_string()).collect();
    let reason = dry
        .failures
        .first()
        .map(|(id, r)| format!(" (item {id}: {r})"))
        .unwrap_or_default();
    let more = if dry.failure_count > FAILURES_SHOWN as u64 {
        format!(" and {} more", dry.failure_count - FAILURES_SHOWN as u64)
    } else {
        String::new()
    };
    AppError::invalid(
        old.name.as_str(),
        format!(
            "{} items hold values that cannot be converted: {}{more}{reason}.",
            dry.failure_count,
            ids.join(", ")
        ),
    )
}

/// Renames field `from` to `to`: the definition, every item's `data` key, unique claims, role
/// rules and item filters and the presentation in one transaction, then a catch-up for values
/// written under the old name by requests already under way.
async fn rename_field(
    state: &AppState,
    collection: &Collection,
    from: &FieldName,
    to: &FieldName,
) -> Result<Collection, AppError> {
    let presentation = renamed_presentation(&collection.presentation, from.as_str(), to.as_str());
    let renamed =
        field_changes::rename_field(state.db(), collection, from, to, &presentation, |rules| {
            vellum_policy::rename_rule_field(rules, from.as_str(), to.as_str())
        })
        .await?;
    state.invalidate().await;
    passes::catch_up_rename(state, &renamed, from, to).await?;
    Ok(renamed)
}

/// The presentation with field `from` called `to`: display field, template placeholders, list
/// columns, and every string naming it in the form layout.
fn renamed_presentation(p: &Presentation, from: &str, to: &str) -> Presentation {
    fn walk(value: &Json, from: &str, to: &str) -> Json {
        match value {
            Json::String(s) if s == from => Json::String(to.to_owned()),
            Json::Array(items) => Json::Array(items.iter().map(|v| walk(v, from, to)).collect()),
            Json::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), walk(v, from, to)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    Presentation {
        display_field: p
            .display_field
            .as_ref()
            .map(|f| if f == from { to.to_owned() } else { f.clone() }),
        display_template: p
            .display_template
            .as_ref()
            .map(|t| rename_placeholder(t, from, to)),
        list_columns: p.list_columns.as_ref().map(|cols| {
            cols.iter()
                .map(|c| if c == from { to.to_owned() } else { c.clone() })
                .collect()
        }),
        form_layout: p.form_layout.as_ref().map(|l| walk(l, from, to)),
    }
}

/// `DELETE /collections/{collection}/fields/{field}`: a dry run (how many items hold a value)
/// unless `?confirm=true`, which removes the field, its values, links, unique claims and field
/// rules, and its mentions in the presentation. Refused while a role's item filter on the
/// collection reads the field (removing the condition would widen what the role sees).
///
/// # Errors
/// 403 without `can-edit-collections`; 404; 422 naming the roles whose item filter reads the
/// field; the database.
pub async fn delete(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    field: &str,
    query: &str,
) -> Result<Option<ValueChanges>, AppError> {
    let (state, principal) = (state.clone(), principal.clone());
    let (slug, field, query) = (slug.to_owned(), field.to_owned(), query.to_owned());
    detached(async move { delete_now(&state, &principal, &slug, &field, &query).await }).await
}

async fn delete_now(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    field: &str,
    query: &str,
) -> Result<Option<ValueChanges>, AppError> {
    principal.require("can-edit-collections")?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let old = collection
        .field(field)
        .ok_or(AppError::NotFound)?
        .def
        .clone();
    let filtering: Vec<String> = vellum_storage::roles::load_roles(db)
        .await?
        .iter()
        .filter(|role| {
            role.collections.get(&collection.slug).is_some_and(|grant| {
                vellum_policy::item_filter_names(
                    grant.to_json().get("rules").unwrap_or(&Json::Null),
                    field,
                )
            })
        })
        .map(|role| role.name.clone())
        .collect();
    if !filtering.is_empty() {
        return Err(AppError::invalid(
            field,
            format!(
                "The item filter of role(s) {} reads this field; change it first.",
                filtering.join(", ")
            ),
        ));
    }
    let items = passes::count_values(state, &collection, field).await?;
    if !confirmed(query) {
        return Ok(Some(ValueChanges {
            dry_run: true,
            confirm_required: true,
            items,
        }));
    }
    let fields = defs(&collection)
        .into_iter()
        .filter(|d| d.name != old.name)
        .collect();
    let saved = save(db, &input_with(&collection, fields)).await?;
    field_changes::rewrite_grant_rules(db, &saved, |rules| {
        vellum_policy::drop_rule_field(rules, field)
    })
    .await?;
    let p = &collection.presentation;
    let presentation = Presentation {
        display_field: p.display_field.clone().filter(|f| f != field),
        display_template: p
            .display_template
            .clone()
            .filter(|t| !vellum_domain::template_placeholders(t).contains(&field)),
        list_columns: p
            .list_columns
            .as_ref()
            .map(|cols| cols.iter().filter(|c| *c != field).cloned().collect()),
        form_layout: p.form_layout.clone(),
    };
    vellum_storage::collections::set_presentation(db, saved.id, &presentation).await?;
    state.invalidate().await;
    passes::run_twice(state, |after| {
        field_changes::remove_key_batch(db, &saved, field, after)
    })
    .await?;
    record(
        state,
        principal,
        "field_deleted",
        &saved,
        field,
        vec![field.to_owned()],
    )
    .await;
    Ok(None)
}
