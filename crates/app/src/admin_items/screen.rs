//! What the item form page shows (`GET …/items/new` and `GET …/items/{item}` for a browser):
//! the collection's field definitions, the item's values with every translation, the content
//! locales, and whether the item is in the trash.

use serde_json::{Map, Value as Json};
use vellum_domain::FieldDef;

use super::{FormLocales, Target, new_form, open, show};
use crate::context::AppState;
use crate::error::AppError;
use crate::principal::Principal;

/// The item form's data.
#[derive(Debug, Clone)]
pub struct ItemScreen {
    pub slug: String,
    pub name: String,
    pub fields: Vec<FieldDef>,
    /// Each field's id, in the order of `fields` (the relation picker names a field by it).
    pub field_ids: Vec<i64>,
    /// `None` for a new item.
    pub id: Option<i64>,
    /// Each field's value: a plain value, or a locale map for a translatable field (the
    /// defaults for a new item).
    pub values: Map<String, Json>,
    pub locales: FormLocales,
    pub deleted: bool,
}

/// The form of a new item.
///
/// # Errors
/// As [`new_form`].
pub async fn new_screen(
    state: &AppState,
    principal: &Principal,
    slug: &str,
) -> Result<ItemScreen, AppError> {
    let form = new_form(state, principal, slug).await?;
    let target = open(state, principal, "can-create-collections", slug).await?;
    Ok(screen(&target, None, form.defaults, form.locales, false))
}

/// The form of item `id`, with every translation of its translatable fields.
///
/// # Errors
/// As [`show`].
pub async fn edit_screen(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
) -> Result<ItemScreen, AppError> {
    let shown = show(state, principal, slug, id, "include_all_translations=1").await?;
    let target = open(state, principal, "can-show-collections", slug).await?;
    let item: Json = serde_json::from_str(shown.data.get()).map_err(AppError::internal)?;
    let values = match item.get("data") {
        Some(Json::Object(data)) => data.clone(),
        _ => Map::new(),
    };
    let id = item.get("id").and_then(Json::as_i64);
    let locales = FormLocales::of(&target.actor.snapshot.locales);
    let deleted = !shown.meta.deleted_at.is_null();
    Ok(screen(&target, id, values, locales, deleted))
}

/// The screen of the collection `target` opened, for item `id` (none: a new one).
fn screen(
    target: &Target,
    id: Option<i64>,
    values: Map<String, Json>,
    locales: FormLocales,
    deleted: bool,
) -> ItemScreen {
    let collection = &target.collection;
    ItemScreen {
        slug: collection.slug.to_string(),
        name: collection.name.clone(),
        fields: collection.fields.iter().map(|f| f.def.clone()).collect(),
        field_ids: collection.fields.iter().map(|f| f.id).collect(),
        id,
        values,
        locales,
        deleted,
    }
}
