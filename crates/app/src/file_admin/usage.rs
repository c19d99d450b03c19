//! `GET /files/{file}/usage`: "where used". The items whose file fields (file slots nested in
//! blocks included) reference the file, or for a folder anything inside it, grouped per
//! collection and labelled as the admin labels items (the collection's display template, then
//! its display field, else `#id`); items in a collection's trash are listed and marked, since
//! they too keep a force delete from going through.
//!
//! Reading items is the collections area's permission: without `can-show-collections` the list
//! is empty and `hidden` says why (the count alone would disclose content). Chat messages that
//! carry the file come with team chat (issue 21); until then `messages` is always empty.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value as Json};
use vellum_domain::{LocaleSelection, flatten_for_read};

use super::open;
use crate::context::AppState;
use crate::error::AppError;
use crate::items::parse_id;
use crate::options::item_label;
use crate::principal::Principal;

/// The most items one answer lists (over every collection); `truncated` says when there are
/// more.
pub const MAX_USAGE_ITEMS: u64 = 100;

/// One referencing item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsageItem {
    pub id: i64,
    pub label: String,
    /// The item is in its collection's trash.
    pub trashed: bool,
}

/// The referencing items of one collection, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsageGroup {
    /// The collection's slug.
    pub collection: String,
    /// The collection's name.
    pub name: String,
    pub items: Vec<UsageItem>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub collections: Vec<UsageGroup>,
    /// Team chat messages carrying the file: always empty until team chat exists (issue 21).
    pub messages: Vec<Json>,
    /// The user may not read items (`can-show-collections`), so none are listed.
    pub hidden: bool,
    /// More items reference the file than the [`MAX_USAGE_ITEMS`] listed.
    pub truncated: bool,
}

/// Where file `id` (live or in the trash) is used.
///
/// # Errors
/// 403 without `can-show-files`, 404 for an unknown id, the database.
pub async fn usage(state: &AppState, principal: &Principal, id: &str) -> Result<Usage, AppError> {
    let actor = open(state, principal, "can-show-files").await?;
    let id = parse_id(id)?;
    vellum_storage::files::trash::find_any_file(state.db(), id)
        .await?
        .ok_or(AppError::NotFound)?;
    if !principal.may("can-show-collections") {
        return Ok(Usage {
            collections: Vec::new(),
            messages: Vec::new(),
            hidden: true,
            truncated: false,
        });
    }
    let mut users =
        vellum_storage::item_files::items_using(state.db(), id, MAX_USAGE_ITEMS + 1, true).await?;
    let truncated = users.len() as u64 > MAX_USAGE_ITEMS;
    users.truncate(usize::try_from(MAX_USAGE_ITEMS).unwrap_or(usize::MAX));

    let snapshot = &actor.snapshot;
    let selection = LocaleSelection::Flatten(snapshot.locales.default_locale().clone());
    let mut groups: BTreeMap<i64, UsageGroup> = BTreeMap::new();
    for used in users {
        // A collection missing from the snapshot was deleted meanwhile, items and all.
        let Some(collection) = snapshot.collection_by_id(used.collection_id) else {
            continue;
        };
        let empty = Map::new();
        let stored = used
            .data
            .as_ref()
            .and_then(Json::as_object)
            .unwrap_or(&empty);
        let data = flatten_for_read(collection.schema(), stored, &selection, &snapshot.locales);
        groups
            .entry(collection.id)
            .or_insert_with(|| UsageGroup {
                collection: collection.slug.to_string(),
                name: collection.name.clone(),
                items: Vec::new(),
            })
            .items
            .push(UsageItem {
                id: used.item_id,
                label: item_label(collection, used.item_id, &data),
                trashed: used.trashed,
            });
    }
    Ok(Usage {
        collections: groups.into_values().collect(),
        messages: Vec::new(),
        hidden: false,
        truncated,
    })
}
