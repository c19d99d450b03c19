//! An item's revisions (`GET …/items/{item}/revisions`, newest first) and the restore of one
//! (`POST …/revisions/{revision}/restore`). A restore never rewrites history: the revision's
//! values are sent as a new update through the public API's update path (same validation, same
//! unique and link checks), which records a new revision.

use std::future::ready;

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use vellum_domain::ValueShape;
use vellum_storage::item_admin;
use vellum_storage::items::Revision;

use super::{Target, log, open};
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{self, parse_id};
use crate::paging::{Paginated, Paging};
use crate::principal::Principal;
use crate::render::Rendered;
use crate::resources::timestamp;

/// A revision as the admin app shows it: the item's complete `data` after that write, as stored
/// (translatable values as locale maps).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionResource {
    pub id: i64,
    pub item_id: i64,
    pub user_id: Option<i64>,
    pub created_at: Json,
    pub data: Map<String, Json>,
}

impl From<Revision> for RevisionResource {
    fn from(revision: Revision) -> Self {
        Self {
            id: revision.id,
            item_id: revision.item_id,
            user_id: revision.user_id,
            created_at: timestamp(revision.created_at),
            data: revision.data,
        }
    }
}

/// A page of the item's revisions, newest first (`page`, `per_page`); the item may be in the
/// trash (history survives soft deletion).
///
/// # Errors
/// 403 without `can-show-collections`, 404 for an unknown collection or item, 422 for a bad
/// `page` or `per_page`, the database.
pub async fn revisions(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    query: &str,
) -> Result<Paginated<RevisionResource>, AppError> {
    let Target { collection, .. } = open(state, principal, "can-show-collections", slug).await?;
    let id = parse_id(id)?;
    let paging = Paging::parse(query)?;
    item_admin::find_item(state.db(), &collection, id)
        .await?
        .ok_or(AppError::NotFound)?;
    let page = item_admin::revision_page(state.db(), id, paging.page, paging.per_page).await?;
    Ok(Paginated::from_page(page, RevisionResource::from))
}

/// Writes revision `revision`'s values of the (live) item as a new update and answers the item
/// as written. Every field the revision holds that the collection still has is sent, except
/// `hash` fields: a revision holds only their fingerprint, which cannot be written back as a
/// value, so they keep their current fingerprint. Fields added after the revision keep their
/// values.
///
/// # Errors
/// 403 without `can-edit-collections`; 404 for an unknown collection, item (or one in the
/// trash: restore it first) or revision of another item; 422 when the values no longer pass
/// validation (a unique value taken since, a link to an item gone); the database.
pub async fn restore_revision(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    id: &str,
    revision: &str,
    query: &str,
) -> Result<Rendered, AppError> {
    let Target { actor, collection } = open(state, principal, "can-edit-collections", slug).await?;
    let item_id = parse_id(id)?;
    let revision_id = parse_id(revision)?;
    let current = item_admin::find_item(state.db(), &collection, item_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let revision = item_admin::find_revision(state.db(), item_id, revision_id)
        .await?
        .ok_or(AppError::NotFound)?;
    let locales = &actor.snapshot.locales;
    let mut data = Map::new();
    for field in &collection.fields {
        let name = field.def.name.as_str();
        if field.def.shape() == ValueShape::Fingerprint {
            continue;
        }
        let Some(value) = revision.data.get(name) else {
            continue;
        };
        let mut value = value.clone();
        // A locale map replaces only the locales it names: a translation added since is
        // removed by naming it as null.
        if field.def.translatable
            && let (Json::Object(old), Some(Json::Object(now))) =
                (&mut value, current.data.get(name))
        {
            for locale in now.keys() {
                if !old.contains_key(locale) && locales.is_enabled(locale) {
                    old.insert(locale.clone(), Json::Null);
                }
            }
        }
        data.insert(name.to_owned(), value);
    }
    let mut changed: Vec<String> = data.keys().cloned().collect();
    changed.sort_unstable();
    let body = serde_json::to_vec(&json!({ "data": data })).map_err(AppError::internal)?;
    let rendered = items::update(
        state,
        &actor,
        slug,
        id,
        query,
        ready(Ok::<_, AppError>(body)),
    )
    .await?;
    log(
        state,
        principal,
        &collection,
        "revision_restored",
        item_id,
        changed,
        json!({ "revision_id": revision_id }),
    )
    .await;
    Ok(rendered)
}
