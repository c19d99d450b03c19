//! The manifest's `webhooks` section (issue 24): webhooks matched by name. The schema checks the
//! shape (http or https URL, known events, a `whsec_` secret); here the collections must exist and
//! a new webhook must bring its secret (the manifest is the operator's file, and secrets are never
//! exported, so an applied export keeps every existing secret). The SSRF guard is not applied
//! here: the operator sets `VELLUM_WEBHOOK_ALLOWED_NETWORKS` as well, and every delivery is
//! checked when it connects.

use sea_orm::ConnectionTrait;
use serde_json::{Map, Value, json};
use vellum_storage::collections;
use vellum_storage::webhooks::{self, WebhookSettings};

use crate::ManifestError;
use crate::path::join;

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) async fn apply_webhooks<C: ConnectionTrait>(
    tx: &C,
    manifest: &Value,
) -> Result<(), ManifestError> {
    for (i, raw) in array(manifest, "webhooks").iter().enumerate() {
        let at = format!("webhooks[{i}]");
        let name = text(raw, "name");
        let mut slugs = Vec::new();
        for (j, slug) in array(raw, "collections").iter().enumerate() {
            let slug = slug.as_str().unwrap_or_default();
            if collections::collection_by_slug(tx, slug).await?.is_none() {
                return Err(ManifestError::invalid(
                    format!("{at}.collections[{j}]"),
                    format!("unknown collection \"{slug}\""),
                ));
            }
            slugs.push(slug.to_owned());
        }
        let existing = webhooks::find_by_name(tx, name).await?;
        let secret = match (raw.get("secret").and_then(Value::as_str), &existing) {
            (Some(secret), _) => secret.to_owned(),
            (None, Some(existing)) => existing.secret.clone(),
            (None, None) => {
                return Err(ManifestError::invalid(
                    join(&at, "secret"),
                    "a new webhook needs its secret (whsec_ and base64)",
                ));
            }
        };
        let settings = WebhookSettings {
            name: name.to_owned(),
            url: text(raw, "url").to_owned(),
            events: raw.get("events").cloned().unwrap_or(json!([])).to_string(),
            collections: Value::from(slugs).to_string(),
            secret,
            enabled: raw.get("enabled").and_then(Value::as_bool).unwrap_or(true),
        };
        match existing {
            Some(existing) => {
                webhooks::update(tx, i64::from(existing.id), &settings).await?;
            }
            None => {
                webhooks::create(tx, &settings).await?;
            }
        }
    }
    Ok(())
}

/// The webhooks as the manifest writes them, without their secrets.
pub(crate) async fn export_webhooks<C: ConnectionTrait>(
    db: &C,
) -> Result<Vec<Value>, ManifestError> {
    Ok(webhooks::all(db)
        .await?
        .into_iter()
        .map(|hook| {
            let mut obj = Map::new();
            obj.insert("name".into(), Value::String(hook.name));
            obj.insert("url".into(), Value::String(hook.url));
            obj.insert(
                "events".into(),
                serde_json::from_str(&hook.events).unwrap_or(json!([])),
            );
            let collections: Value = serde_json::from_str(&hook.collections).unwrap_or(json!([]));
            if collections.as_array().is_some_and(|c| !c.is_empty()) {
                obj.insert("collections".into(), collections);
            }
            if !hook.enabled {
                obj.insert("enabled".into(), Value::Bool(false));
            }
            Value::Object(obj)
        })
        .collect())
}
