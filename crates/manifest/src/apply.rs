//! `apply`: make the database match a manifest, in one transaction, idempotently.

use std::collections::BTreeMap;

use sea_orm::{ConnectionTrait, TransactionSession, TransactionTrait};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use vellum_domain::{WriteContext, WriteMode, prepare_write};
use vellum_policy::{ApiKeySecret, IpAllowlist, Role, Visibility};
use vellum_storage::StorageError;
use vellum_storage::collections;
use vellum_storage::files::{self, FileKind, FilePatch, ListFiles, ParentFilter};
use vellum_storage::keys::{self, NewApiKey};
use vellum_storage::{items, project};
use vellum_storage::{roles, seed};

use crate::collection::{self, CollectionInput};
use crate::path::join;
use crate::{ManifestError, schema};

/// What an apply did that the operator must see: the secrets of the keys it created (shown once,
/// never stored in clear), and the existing keys whose secret it replaced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub api_keys: BTreeMap<String, String>,
    /// The names of existing keys given another `secret` in the manifest, in manifest order:
    /// their previous secret no longer authenticates. Not part of [`ApplyReport::to_json`] (the
    /// contract's stdout object); the operator wrote these secrets, so none is shown.
    pub rotated_keys: Vec<String>,
}

impl ApplyReport {
    /// The contract's stdout object: `{"api_keys": {"<name>": "<secret>"}}`.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let keys: Map<String, Value> = self
            .api_keys
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        serde_json::json!({ "api_keys": keys })
    }
}

/// Makes the database match `manifest`. The caller has migrated the database.
///
/// # Errors
/// [`ManifestError::Invalid`] naming the first offending path (nothing is changed), or a
/// database error (rolled back).
pub async fn apply<C: ConnectionTrait + TransactionTrait>(
    db: &C,
    manifest: &Value,
) -> Result<ApplyReport, ManifestError> {
    schema::check(manifest)?;
    let collections = check_collections(manifest)?;
    let tx = db.begin().await?;
    seed::seed_system(&tx).await?;
    apply_settings(&tx, manifest).await?;
    apply_collections(&tx, collections).await?;
    apply_roles(&tx, manifest).await?;
    let report = apply_keys(&tx, manifest).await?;
    crate::webhooks::apply_webhooks(&tx, manifest).await?;
    apply_folders(&tx, manifest).await?;
    apply_items(&tx, manifest).await?;
    tx.commit().await?;
    vellum_storage::refresh_statistics(db).await?;
    Ok(report)
}

fn array<'a>(manifest: &'a Value, key: &str) -> &'a [Value] {
    manifest
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Every collection checked (shape, slug, field definitions, display field and template) before
/// anything is written; relation targets are still slugs, resolved against the database later.
fn check_collections(manifest: &Value) -> Result<Vec<CollectionInput>, ManifestError> {
    let mut all: Vec<CollectionInput> = Vec::new();
    for (i, raw) in array(manifest, "collections").iter().enumerate() {
        let at = format!("collections[{i}]");
        let input = collection::check_collection(raw, &at)?;
        // Two entries for one slug would silently make the last one win.
        if all.iter().any(|c| c.slug == input.slug) {
            return Err(ManifestError::invalid(
                join(&at, "slug"),
                format!("duplicate collection slug \"{}\"", input.slug),
            ));
        }
        all.push(input);
    }
    Ok(all)
}

async fn apply_settings<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<(), ManifestError> {
    let Some(settings) = manifest.get("settings").and_then(Value::as_object) else {
        return Ok(());
    };
    let current = project::load_settings(tx).await?.to_json();
    let changed: Map<String, Value> = settings
        .iter()
        .filter(|(k, v)| current.get(k.as_str()) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    project::set_settings(tx, &changed)
        .await
        .map_err(|e| match e {
            // "setting <key>: <problem>" names the key; "settings: <problem>" is about the
            // settings together (a default locale that is not enabled).
            StorageError::Conflict { message, .. } => match message.strip_prefix("setting ") {
                Some(rest) => match rest.split_once(": ") {
                    Some((key, problem)) => ManifestError::invalid(join("settings", key), problem),
                    None => ManifestError::invalid("settings", message),
                },
                None => ManifestError::invalid(
                    "settings",
                    message.strip_prefix("settings: ").unwrap_or(&message),
                ),
            },
            other => other.into(),
        })
}

async fn apply_collections<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    checked: Vec<CollectionInput>,
) -> Result<(), ManifestError> {
    // Every collection exists first, so relations may point forwards and at each other.
    for input in &checked {
        collection::create_empty(tx, input).await?;
    }
    let ids = collection::slug_ids(tx).await?;
    for (i, input) in checked.iter().enumerate() {
        collection::save_collection(tx, input, &ids, &format!("collections[{i}]")).await?;
    }
    Ok(())
}

async fn apply_roles<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<(), ManifestError> {
    for (i, raw) in array(manifest, "roles").iter().enumerate() {
        let at = format!("roles[{i}]");
        let name = text(raw, "name");
        if name == "super-admin" {
            return Err(ManifestError::invalid(
                join(&at, "name"),
                "super-admin bypasses every gate; it has no matrices to set",
            ));
        }
        let mut matrices = raw.clone();
        if let Some(obj) = matrices.as_object_mut() {
            obj.remove("name");
        }
        let role = Role::from_json(name, &matrices).map_err(|e| match e {
            vellum_policy::PolicyError::InvalidGrant { path, message } => {
                ManifestError::invalid(join(&at, &path), message)
            }
            other => ManifestError::invalid(at.clone(), other),
        })?;
        check_rule_fields(tx, &at, &role).await?;
        let existing = roles::load_role(tx, name).await?;
        // Compared as JSON: PostgreSQL's jsonb may reorder a stored item filter's keys, which
        // changes the in-memory order of its conditions but not their meaning.
        if existing.is_some_and(|r| r.to_json() == role.to_json()) {
            continue;
        }
        roles::save_role(tx, &role).await.map_err(|e| match e {
            StorageError::Conflict { message, .. } => ManifestError::invalid(at.clone(), message),
            other => other.into(),
        })?;
    }
    Ok(())
}

/// Rules must name fields the collection has: a typo in `rules.fields` would otherwise leave the
/// real field readable, and one in `item_filter` would hide every item, both silently.
async fn check_rule_fields<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    at: &str,
    role: &Role,
) -> Result<(), ManifestError> {
    for (slug, grant) in &role.collections {
        let grant_at = format!("{at}.collection_permissions.{slug}");
        let Some(collection) = collections::collection_by_slug(tx, slug.as_str()).await? else {
            return Err(ManifestError::invalid(
                grant_at,
                format!("unknown collection \"{slug}\""),
            ));
        };
        let schema = collection.schema();
        for field in grant.fields.keys() {
            if schema.field(field.as_str()).is_none() {
                return Err(ManifestError::invalid(
                    format!("{grant_at}.rules.fields.{field}"),
                    format!("collection \"{slug}\" has no field \"{field}\""),
                ));
            }
        }
        if let Some(filter) = &grant.item_filter {
            for field in filter.fields() {
                if let vellum_policy::FilterField::Data(name) = field
                    && schema.field(name.as_str()).is_none()
                {
                    return Err(ManifestError::invalid(
                        format!("{grant_at}.rules.item_filter.{name}"),
                        format!("collection \"{slug}\" has no field \"{name}\""),
                    ));
                }
            }
        }
    }
    Ok(())
}

async fn apply_keys<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<ApplyReport, ManifestError> {
    let mut report = ApplyReport::default();
    for (i, raw) in array(manifest, "api_keys").iter().enumerate() {
        let at = format!("api_keys[{i}]");
        let name = text(raw, "name");
        let role = text(raw, "role");
        let ips: Vec<&str> = array(raw, "ip_allowlist")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let ip_allowlist = IpAllowlist::parse(ips)
            .map_err(|e| ManifestError::invalid(join(&at, "ip_allowlist"), e))?;
        let expires_at = match raw.get("expires_at").and_then(Value::as_str) {
            Some(t) => Some(
                OffsetDateTime::parse(t, &Rfc3339)
                    .map_err(|e| format!("must be an RFC 3339 date-time: {e}"))
                    // Stored in UTC: an offset can push the instant past year 9999 (found by
                    // tests/manifest/fuzz_manifest.rs; the driver panicked encoding it).
                    // Below year 0 (0000-01-01T00:00+01:00 is year -1 in UTC) is a valid
                    // `OffsetDateTime` too, but not one the databases store and read back.
                    .and_then(|t| {
                        t.checked_to_offset(time::UtcOffset::UTC)
                            .filter(|t| (0..=9999).contains(&t.year()))
                            .ok_or_else(|| "must fall within years 0 to 9999 in UTC".to_owned())
                    })
                    .map_err(|message| ManifestError::invalid(join(&at, "expires_at"), message))?,
            ),
            None => None,
        };
        let given = match raw.get("secret").and_then(Value::as_str) {
            Some(s) => Some(
                ApiKeySecret::parse(s)
                    .map_err(|e| ManifestError::invalid(join(&at, "secret"), e))?,
            ),
            None => None,
        };
        if roles::load_role(tx, role).await?.is_none() {
            return Err(ManifestError::invalid(
                join(&at, "role"),
                format!("unknown role \"{role}\""),
            ));
        }
        if let Some(existing) = keys::api_key_by_name(tx, name).await? {
            // What the key may do follows the manifest (a tightened IP allowlist must take
            // effect). Its secret, shown when it was created, is never shown again; it is kept
            // unless the manifest names another one, which replaces it (rotation: an operator
            // who edits a leaked secret must not be left with the leaked one still valid). A
            // revoked key stays revoked either way, as it always has.
            keys::update_api_key(tx, name, role, &ip_allowlist, expires_at).await?;
            if let Some(given) = given
                && keys::rotate_api_key_secret(tx, existing.id, &given.key_id(), &given.digest())
                    .await
                    .map_err(|e| match e {
                        StorageError::Conflict { message, .. } => {
                            ManifestError::invalid(join(&at, "secret"), message)
                        }
                        other => other.into(),
                    })?
            {
                report.rotated_keys.push(name.to_owned());
            }
            continue;
        }
        let secret = match given {
            Some(secret) => secret,
            None => ApiKeySecret::generate().map_err(|e| ManifestError::invalid(&at, e))?,
        };
        keys::create_api_key(
            tx,
            NewApiKey {
                name,
                role,
                secret: &secret,
                ip_allowlist: &ip_allowlist,
                expires_at,
            },
        )
        .await
        .map_err(|e| match e {
            StorageError::Conflict { message, .. } => ManifestError::invalid(at.clone(), message),
            other => other.into(),
        })?;
        report
            .api_keys
            .insert(name.to_owned(), secret.expose().to_owned());
    }
    Ok(report)
}

async fn apply_folders<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<(), ManifestError> {
    let mut by_name: BTreeMap<String, i64> = BTreeMap::new();
    for (i, raw) in array(manifest, "folders").iter().enumerate() {
        let at = format!("folders[{i}]");
        let name = text(raw, "name");
        let parent = match raw.get("parent").and_then(Value::as_str) {
            Some(p) => Some(*by_name.get(p).ok_or_else(|| {
                ManifestError::invalid(
                    join(&at, "parent"),
                    format!("\"{p}\" is not a folder listed earlier"),
                )
            })?),
            None => None,
        };
        let access = Visibility::parse_access(raw.get("access").and_then(Value::as_str));
        let existing = files::list_files(
            tx,
            ListFiles {
                parent: parent.map_or(ParentFilter::Root, ParentFilter::Folder),
                search: Some(name),
                include_private: true,
                page: 1,
                per_page: 1000,
            },
        )
        .await?
        .items
        .into_iter()
        .find(|f| f.kind == FileKind::Folder && f.filename == name);
        let id = match existing {
            Some(folder) if folder.access == access => folder.id,
            Some(folder) => {
                let patch = FilePatch {
                    access: Some(access),
                    ..FilePatch::default()
                };
                let grant = vellum_policy::Role::super_admin()
                    .authorize_file_write(vellum_policy::FileAction::Update)
                    .map_err(|d| StorageError::conflict(d.to_string()))?;
                files::update_file(tx, &grant, folder.id, patch).await?.id
            }
            None => {
                let grant = vellum_policy::Role::super_admin()
                    .authorize_file_write(vellum_policy::FileAction::Create)
                    .map_err(|d| StorageError::conflict(d.to_string()))?;
                files::create_folder(tx, &grant, parent, name, access)
                    .await
                    .map_err(|e| match e {
                        StorageError::Conflict { message, .. } => {
                            ManifestError::invalid(at.clone(), message)
                        }
                        other => other.into(),
                    })?
                    .id
            }
        };
        by_name.insert(name.to_owned(), id);
    }
    Ok(())
}

/// Seed items are written only into a collection that has none yet (live or deleted), so a
/// second apply never duplicates them and never touches content editors have changed since.
async fn apply_items<C: ConnectionTrait + TransactionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<(), ManifestError> {
    let Some(seeds) = manifest.get("items").and_then(Value::as_object) else {
        return Ok(());
    };
    let settings = project::load_settings(tx).await?;
    let locales = settings
        .locales()
        .map_err(|e| ManifestError::invalid("settings", e))?;
    let hash_key = project::hash_key(tx).await?;
    for (slug, list) in seeds {
        let at = join("items", slug);
        let collection = collections::collection_by_slug(tx, slug)
            .await?
            .ok_or_else(|| ManifestError::invalid(&at, format!("unknown collection \"{slug}\"")))?;
        if items::count_all_items(tx, &collection).await? > 0 {
            continue;
        }
        let ctx = WriteContext {
            locales: &locales,
            locale: locales.default_locale(),
            hash_key: &hash_key,
        };
        for (k, seed) in list
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
        {
            let at = format!("{at}[{k}].data");
            let empty = Map::new();
            let data = seed
                .get("data")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let write = prepare_write(collection.schema(), data, WriteMode::Create, &ctx).map_err(
                |errors| {
                    let (field, messages) = errors
                        .iter()
                        .next()
                        .map(|(f, m)| (f.to_owned(), m.join(" ")))
                        .unwrap_or_default();
                    ManifestError::invalid(join(&at, &field), messages)
                },
            )?;
            items::seed_item(tx, &collection, &write)
                .await
                .map_err(|e| match e {
                    StorageError::Invalid(errors) => {
                        let (field, messages) = errors
                            .iter()
                            .next()
                            .map(|(f, m)| (f.to_owned(), m.join(" ")))
                            .unwrap_or_default();
                        ManifestError::invalid(join(&at, &field), messages)
                    }
                    other => other.into(),
                })?;
        }
    }
    Ok(())
}
