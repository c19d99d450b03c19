//! `export`: the current project as a manifest that `apply` on an empty database reproduces.
//! No secrets: API keys are listed without one, so applying the export creates them with new
//! secrets.

use std::collections::BTreeMap;

use sea_orm::ConnectionTrait;
use serde_json::{Map, Value, json};
use time::format_description::well_known::Rfc3339;
use vellum_storage::files::{self, FileKind, ListFiles, ParentFilter};
use vellum_storage::{collections, items, keys, project, roles};

use crate::ManifestError;

/// The project as a manifest; seed items only with `include_items`.
///
/// # Errors
/// A database error.
pub async fn export<C: ConnectionTrait>(
    db: &C,
    include_items: bool,
) -> Result<Value, ManifestError> {
    let mut manifest = Map::new();
    manifest.insert(
        "settings".into(),
        Value::Object(project::load_settings(db).await?.to_json()),
    );

    let all = collections::list_collections(db).await?;
    let slugs: BTreeMap<i64, String> = all.iter().map(|c| (c.id, c.slug.to_string())).collect();
    let mut out = Vec::new();
    for collection in &all {
        let fields: Vec<Value> = collection
            .fields
            .iter()
            .map(|f| name_relations(f.def.to_json(), &slugs))
            .collect();
        let mut entry = json!({
            "slug": collection.slug.as_str(),
            "name": collection.name,
            "is_singleton": collection.is_singleton,
            "fields": fields,
        });
        // Only when set: `apply` leaves what a manifest does not name as it is.
        let shown = &collection.presentation;
        for (key, value) in [
            ("display_field", &shown.display_field),
            ("display_template", &shown.display_template),
        ] {
            if let (Some(value), Some(obj)) = (value, entry.as_object_mut()) {
                obj.insert(key.into(), Value::String(value.clone()));
            }
        }
        out.push(entry);
    }
    manifest.insert("collections".into(), Value::Array(out));

    let mut roles = Vec::new();
    // Every role in creation order, in two queries rather than one per role.
    for role in roles::load_roles(db).await? {
        if role.name == "super-admin" {
            continue;
        }
        let mut obj = Map::new();
        obj.insert("name".into(), Value::String(role.name.clone()));
        if let Value::Object(matrices) = role.to_json() {
            obj.extend(matrices);
        }
        roles.push(Value::Object(obj));
    }
    manifest.insert("roles".into(), Value::Array(roles));

    let keys: Vec<Value> = keys::list_api_keys(db)
        .await?
        .into_iter()
        .filter(|k| k.revoked_at.is_none())
        .map(|k| {
            let mut obj = Map::new();
            obj.insert("name".into(), Value::String(k.name));
            obj.insert("role".into(), Value::String(k.role));
            let ips = k.ip_allowlist.entries();
            if !ips.is_empty() {
                obj.insert("ip_allowlist".into(), json!(ips));
            }
            if let Some(t) = k.expires_at.and_then(|t| t.format(&Rfc3339).ok()) {
                obj.insert("expires_at".into(), Value::String(t));
            }
            Value::Object(obj)
        })
        .collect();
    manifest.insert("api_keys".into(), Value::Array(keys));

    manifest.insert(
        "webhooks".into(),
        Value::Array(crate::webhooks::export_webhooks(db).await?),
    );
    manifest.insert("folders".into(), Value::Array(folders(db).await?));

    if include_items {
        let mut seeds = Map::new();
        for collection in &all {
            let list: Vec<Value> = items::all_live_items(db, collection)
                .await?
                .into_iter()
                .map(|item| json!({ "data": item.data }))
                .collect();
            if !list.is_empty() {
                seeds.insert(collection.slug.to_string(), Value::Array(list));
            }
        }
        manifest.insert("items".into(), Value::Object(seeds));
    }
    Ok(Value::Object(manifest))
}

/// Relation targets by slug again, as manifests write them (ids differ between databases).
fn name_relations(mut field: Value, slugs: &BTreeMap<i64, String>) -> Value {
    let Some(settings) = field.get_mut("settings").and_then(Value::as_object_mut) else {
        return field;
    };
    if let Some(id) = settings
        .get("related_collection_id")
        .and_then(Value::as_i64)
        && let Some(slug) = slugs.get(&id)
    {
        settings.remove("related_collection_id");
        settings.insert("related_collection".into(), Value::String(slug.clone()));
    }
    if let Some(ids) = settings
        .get("allowed_collection_ids")
        .and_then(Value::as_array)
    {
        let named: Option<Vec<Value>> = ids
            .iter()
            .map(|id| {
                id.as_i64()
                    .and_then(|id| slugs.get(&id))
                    .map(|s| Value::String(s.clone()))
            })
            .collect();
        if let Some(named) = named {
            settings.remove("allowed_collection_ids");
            settings.insert("allowed_collections".into(), Value::Array(named));
        }
    }
    field
}

/// Folders parents first, each naming its parent by name, as `apply` reads them.
async fn folders<C: ConnectionTrait>(db: &C) -> Result<Vec<Value>, ManifestError> {
    let mut out = Vec::new();
    let mut queue: Vec<(Option<i64>, Option<String>)> = vec![(None, None)];
    while let Some((parent, parent_name)) = queue.pop() {
        let page = files::list_files(
            db,
            ListFiles {
                parent: parent.map_or(ParentFilter::Root, ParentFilter::Folder),
                search: None,
                include_private: true,
                page: 1,
                per_page: 10_000,
            },
        )
        .await?;
        for folder in page
            .items
            .into_iter()
            .filter(|f| f.kind == FileKind::Folder)
        {
            out.push(json!({
                "name": folder.filename,
                "parent": parent_name,
                "access": folder.access.map(vellum_policy::Visibility::as_str),
            }));
            queue.push((Some(folder.id), Some(folder.filename)));
        }
    }
    Ok(out)
}
