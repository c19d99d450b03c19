//! The chat pickers (`GET /chat/options/{kind}`): people and groups to start a conversation with
//! or mention, collections and items to open a thread on, and the item and field an attachment
//! is added to. Each answers a bounded page and only what the user may see: names (never email
//! addresses) of live users and groups, and collections and items only with
//! `can-show-collections`.
//!
//! Query: `search` (at most 255 characters, matched case-insensitively in names, or labels),
//! `page`, `per_page` (1 to 100, default 20); `items` and `item-picker` need `collection`.

use serde::Serialize;
use serde_json::{Value as Json, json};
use vellum_domain::ValidationErrors;
use vellum_storage::chat::people::{Kinds, search_people};

use super::{CHAT_PERMISSION, ITEMS_PERMISSION};
use crate::context::AppState;
use crate::error::AppError;
use crate::items::PageMeta;
use crate::options::{DEFAULT_PER_PAGE, MAX_PER_PAGE, MAX_SEARCH, collection_items};
use crate::paging::Paginated;
use crate::principal::Principal;
use crate::query::{first, pairs, parse_bounded};

/// Which picker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKind {
    Users,
    Groups,
    /// Users and groups together.
    Directory,
    Collections,
    Items,
    /// An item of a collection and its file fields (add-to-field).
    ItemPicker,
}

impl PickerKind {
    /// The kind a path segment names.
    #[must_use]
    pub fn parse(segment: &str) -> Option<Self> {
        Some(match segment {
            "users" => Self::Users,
            "groups" => Self::Groups,
            "directory" => Self::Directory,
            "collections" => Self::Collections,
            "items" => Self::Items,
            "item-picker" => Self::ItemPicker,
            _ => return None,
        })
    }
}

/// One entry of a picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PickerEntry {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: i64,
    pub label: String,
    /// A collection's slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
}

struct PickerQuery {
    search: Option<String>,
    collection: Option<String>,
    page: u64,
    per_page: u64,
}

fn parse(query: &str) -> Result<PickerQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    let search = first(&pairs, "search")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    if search
        .as_ref()
        .is_some_and(|s| s.chars().count() > MAX_SEARCH)
    {
        errors.add(
            "search",
            format!("The search may not be longer than {MAX_SEARCH} characters."),
        );
    }
    let page = parse_bounded(&pairs, "page", 1, u64::MAX, &mut errors);
    let per_page = parse_bounded(
        &pairs,
        "per_page",
        DEFAULT_PER_PAGE,
        MAX_PER_PAGE,
        &mut errors,
    );
    errors.into_result(()).map_err(AppError::Invalid)?;
    Ok(PickerQuery {
        search,
        collection: first(&pairs, "collection")
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
        page,
        per_page,
    })
}

fn page_of(entries: Vec<PickerEntry>, total: u64, query: &PickerQuery) -> Paginated<PickerEntry> {
    Paginated {
        data: entries,
        meta: PageMeta {
            current_page: query.page,
            last_page: total.div_ceil(query.per_page).max(1),
            per_page: query.per_page,
            total,
        },
    }
}

/// `GET /chat/options/{kind}`: `{"data": [...], "meta": {...}}`, plus `fields` for the item
/// picker.
///
/// # Errors
/// 403 without `can-show-chat` (and `can-show-collections` for items), 404 for an unknown
/// collection, 422 for a bad query, the database.
pub async fn options(
    state: &AppState,
    principal: &Principal,
    kind: PickerKind,
    query: &str,
) -> Result<Json, AppError> {
    principal.require(CHAT_PERMISSION)?;
    let query = parse(query)?;
    let db = state.db();
    let page = match kind {
        PickerKind::Users | PickerKind::Groups | PickerKind::Directory => {
            let kinds = Kinds {
                users: kind != PickerKind::Groups,
                groups: kind != PickerKind::Users,
            };
            let found = search_people(
                db,
                kinds,
                query.search.as_deref(),
                query.page,
                query.per_page,
            )
            .await?;
            let entries = found
                .items
                .into_iter()
                .map(|p| PickerEntry {
                    kind: p.kind,
                    id: p.id,
                    label: p.name,
                    slug: None,
                })
                .collect();
            page_of(entries, found.total, &query)
        }
        PickerKind::Collections => collections(state, principal, &query).await?,
        PickerKind::Items | PickerKind::ItemPicker => {
            principal.require(ITEMS_PERMISSION)?;
            let Some(slug) = &query.collection else {
                return Err(AppError::invalid(
                    "collection",
                    "The collection parameter is required.",
                ));
            };
            let collection = state
                .snapshot()
                .await?
                .collection(slug)
                .cloned()
                .ok_or(AppError::NotFound)?;
            let items = collection_items(
                state,
                &collection,
                query.search.as_deref(),
                query.page,
                query.per_page,
            )
            .await?;
            let entries = Paginated {
                data: items
                    .data
                    .into_iter()
                    .map(|item| PickerEntry {
                        kind: "item",
                        id: item.id,
                        label: item.label,
                        slug: None,
                    })
                    .collect(),
                meta: items.meta,
            };
            let mut answer = serde_json::to_value(entries).map_err(AppError::internal)?;
            if kind == PickerKind::ItemPicker {
                let fields: Vec<Json> = collection
                    .fields
                    .iter()
                    .filter(|f| f.def.field_type.is_file())
                    .map(|f| {
                        json!({
                            "name": f.def.name.as_str(),
                            "type": f.def.field_type.as_str(),
                        })
                    })
                    .collect();
                if let Json::Object(map) = &mut answer {
                    map.insert("fields".to_owned(), Json::Array(fields));
                }
            }
            return Ok(answer);
        }
    };
    serde_json::to_value(page).map_err(AppError::internal)
}

async fn collections(
    state: &AppState,
    principal: &Principal,
    query: &PickerQuery,
) -> Result<Paginated<PickerEntry>, AppError> {
    if !principal.may(ITEMS_PERMISSION) {
        return Ok(page_of(Vec::new(), 0, query));
    }
    let snapshot = state.snapshot().await?;
    let needle = query.search.as_deref().map(str::to_lowercase);
    let mut all: Vec<PickerEntry> = snapshot
        .collections
        .iter()
        .filter(|c| {
            needle
                .as_deref()
                .is_none_or(|n| c.name.to_lowercase().contains(n) || c.slug.as_str().contains(n))
        })
        .map(|c| PickerEntry {
            kind: "collection",
            id: c.id,
            label: c.name.clone(),
            slug: Some(c.slug.to_string()),
        })
        .collect();
    all.sort_by_key(|entry| entry.label.to_lowercase());
    let total = all.len() as u64;
    let skip = usize::try_from(query.page.saturating_sub(1).saturating_mul(query.per_page))
        .unwrap_or(usize::MAX);
    let take = usize::try_from(query.per_page).unwrap_or(usize::MAX);
    let entries = all.into_iter().skip(skip).take(take).collect();
    Ok(page_of(entries, total, query))
}
