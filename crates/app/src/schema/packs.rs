//! Packs: ready-made fields and collections, written in the manifest's shapes and saved through
//! the same code path as everything else in the schema editor.
//!
//! Field packs (`POST /collections/{collection}/field-packs/{pack}`) append their fields to a
//! collection, skipping names it already has. Collection packs (`POST /collections/packs/{pack}`)
//! create a collection (optional `name` and `slug`) and, first, the collections its relation
//! fields need that do not exist yet; existing ones are reused by slug.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_domain::CollectionSlug;
use vellum_manifest::collection::{self as manifest, check_field, resolve_field, slug_ids};

use super::{CollectionDefinition, defs, input_with, load, manifest_error, save};
use crate::activity::{self, Change};
use crate::context::AppState;
use crate::error::AppError;
use crate::input::Input;
use crate::principal::Principal;

/// The field packs, by name.
pub const FIELD_PACKS: [&str; 4] = ["seo_inline", "publishing", "contact", "social"];

/// The collection packs, by name.
pub const COLLECTION_PACKS: [&str; 5] = ["seo", "categories", "pages", "articles", "products"];

fn field_pack(pack: &str) -> Option<Vec<Json>> {
    let text = |name: &str| json!({"name": name, "type": "string"});
    Some(match pack {
        "seo_inline" => vec![
            text("meta_title"),
            json!({"name": "meta_description", "type": "textarea"}),
            json!({"name": "og_image", "type": "image"}),
            text("canonical_url"),
        ],
        "publishing" => vec![
            json!({"name": "status", "type": "select", "settings": {"options": ["draft", "published", "archived"], "default_value": "draft"}}),
            json!({"name": "published_at", "type": "date", "settings": {"date_mode": "datetime"}}),
            json!({"name": "featured", "type": "boolean", "settings": {"default_value": false}}),
        ],
        "contact" => vec![
            text("email"),
            text("phone"),
            json!({"name": "address", "type": "textarea"}),
            text("website"),
        ],
        "social" => vec![
            text("facebook_url"),
            text("twitter_url"),
            text("instagram_url"),
            text("linkedin_url"),
        ],
        _ => return None,
    })
}

/// A collection pack: its default slug and name, the packs it depends on, and its fields
/// (relations to a dependency by the dependency's default slug).
fn collection_pack(pack: &str) -> Option<(&'static str, &'static [&'static str], Vec<Json>)> {
    let slug_field = json!({"name": "slug", "type": "string", "settings": {"required": true, "validation_rules": [{"operator": "unique"}]}});
    let seo =
        json!({"name": "seo", "type": "many_to_one", "settings": {"related_collection": "seo"}});
    let categories = json!({"name": "categories", "type": "relation_many", "settings": {"related_collection": "categories"}});
    let mut publishing = field_pack("publishing").unwrap_or_default();
    Some(match pack {
        "seo" => ("SEO", &[][..], field_pack("seo_inline").unwrap_or_default()),
        "categories" => (
            "Categories",
            &[][..],
            vec![
                json!({"name": "name", "type": "string", "settings": {"required": true}}),
                slug_field,
                json!({"name": "description", "type": "textarea"}),
                json!({"name": "parent", "type": "many_to_one", "settings": {"related_collection": "categories"}}),
            ],
        ),
        "pages" => {
            let mut fields = vec![
                json!({"name": "title", "type": "string", "settings": {"required": true}}),
                slug_field,
                json!({"name": "body", "type": "wysiwyg"}),
                seo,
            ];
            fields.append(&mut publishing);
            ("Pages", &["seo"][..], fields)
        }
        "articles" => {
            let mut fields = vec![
                json!({"name": "title", "type": "string", "settings": {"required": true}}),
                slug_field,
                json!({"name": "excerpt", "type": "textarea"}),
                json!({"name": "body", "type": "wysiwyg"}),
                json!({"name": "cover", "type": "image"}),
                categories,
                seo,
            ];
            fields.append(&mut publishing);
            ("Articles", &["categories", "seo"][..], fields)
        }
        "products" => (
            "Products",
            &["categories"][..],
            vec![
                json!({"name": "name", "type": "string", "settings": {"required": true}}),
                slug_field,
                json!({"name": "sku", "type": "string", "settings": {"validation_rules": [{"operator": "unique"}]}}),
                json!({"name": "price", "type": "number"}),
                json!({"name": "description", "type": "wysiwyg"}),
                json!({"name": "images", "type": "files"}),
                categories,
            ],
        ),
        _ => return None,
    })
}

/// What a field pack did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldPackResult {
    pub collection: CollectionDefinition,
    /// Fields added, in order.
    pub added: Vec<String>,
    /// Fields of the pack the collection already had (left as they were).
    pub skipped: Vec<String>,
}

/// `POST /collections/{collection}/field-packs/{pack}`.
///
/// # Errors
/// 403 without `can-edit-collections`; 404 for an unknown collection or pack; the database.
pub async fn add_field_pack(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    pack: &str,
) -> Result<FieldPackResult, AppError> {
    principal.require("can-edit-collections")?;
    let fields = field_pack(pack).ok_or(AppError::NotFound)?;
    let db = state.db();
    let collection = load(db, slug).await?;
    let ids = slug_ids(db).await.map_err(manifest_error)?;
    let mut all = defs(&collection);
    let (mut added, mut skipped) = (Vec::new(), Vec::new());
    for raw in &fields {
        let def = check_field(raw, "").map_err(manifest_error)?;
        if collection.field(def.name.as_str()).is_some() {
            skipped.push(def.name.to_string());
            continue;
        }
        all.push(resolve_field(raw, &ids, "").map_err(manifest_error)?);
        added.push(def.name.to_string());
    }
    let saved = if added.is_empty() {
        collection
    } else {
        let saved = save(db, &input_with(&collection, all)).await?;
        activity::record(
            state,
            Some(principal.user_id()),
            Change::new("collections", "field_pack_added")
                .subject("collection", &saved.slug)
                .changed(added.clone())
                .extra(json!({ "pack": pack })),
        )
        .await;
        state.invalidate().await;
        saved
    };
    Ok(FieldPackResult {
        collection: CollectionDefinition::from(&saved),
        added,
        skipped,
    })
}

/// What a collection pack did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectionPackResult {
    pub collection: CollectionDefinition,
    /// Collections created for the pack's relations (dependencies first).
    pub created: Vec<String>,
    /// Dependencies that existed already and were reused.
    pub reused: Vec<String>,
}

/// `POST /collections/packs/{pack}` with an optional body `{name?, slug?}`.
///
/// # Errors
/// 403 without `can-create-collections`; 404 for an unknown pack; 422 for a bad or taken
/// `slug` or a bad `name`; the database.
pub async fn create_collection_pack(
    state: &AppState,
    principal: &Principal,
    pack: &str,
    body: &Json,
) -> Result<CollectionPackResult, AppError> {
    principal.require("can-create-collections")?;
    let (default_name, deps, fields) = collection_pack(pack).ok_or(AppError::NotFound)?;
    let empty = json!({});
    let body = if body.is_null() { &empty } else { body };
    let mut input = Input::new(body)?;
    let name = input.optional_str("name", 255).flatten().map(str::to_owned);
    let slug = input.optional_str("slug", 255).flatten().map(str::to_owned);
    if let Some(slug) = &slug
        && let Err(e) = CollectionSlug::parse(slug)
    {
        input.error("slug", e.to_string());
    }
    input.finish()?;
    let db = state.db();
    let (mut created, mut reused) = (Vec::new(), Vec::new());
    for dep in deps {
        if vellum_storage::collections::collection_by_slug(db, dep)
            .await?
            .is_some()
        {
            reused.push((*dep).to_owned());
            continue;
        }
        let (dep_name, _, dep_fields) = collection_pack(dep).ok_or(AppError::NotFound)?;
        create(db, dep, dep_name, dep_fields).await?;
        created.push((*dep).to_owned());
    }
    let slug = slug.unwrap_or_else(|| pack.to_owned());
    // A relation of the pack to itself (a category's parent) follows the slug chosen.
    let fields = fields
        .into_iter()
        .map(|mut f| {
            if let Some(target) = f.pointer_mut("/settings/related_collection")
                && target.as_str() == Some(pack)
            {
                *target = Json::String(slug.clone());
            }
            f
        })
        .collect();
    let saved = create(db, &slug, name.as_deref().unwrap_or(default_name), fields).await?;
    activity::record(
        state,
        Some(principal.user_id()),
        Change::new("collections", "created")
            .subject("collection", &saved.slug)
            .extra(json!({ "pack": pack, "created": created })),
    )
    .await;
    state.invalidate().await;
    Ok(CollectionPackResult {
        collection: CollectionDefinition::from(&saved),
        created,
        reused,
    })
}

async fn create(
    db: &vellum_storage::Database,
    slug: &str,
    name: &str,
    fields: Vec<Json>,
) -> Result<vellum_storage::model::Collection, AppError> {
    let raw = json!({"slug": slug, "name": name, "fields": fields});
    let input = manifest::check_collection(&raw, "").map_err(manifest_error)?;
    manifest::create_collection(db, &input)
        .await
        .map_err(manifest_error)
}
