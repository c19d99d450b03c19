//! `GET /collections/{collection}/items`: a page of items (or of the trash with `trashed=1`),
//! filtered and sorted, rendered as the public API renders them for `super-admin`.

use vellum_storage::item_admin::{self, Shelf};
use vellum_storage::items::{FilterScope, ListItems};

use vellum_policy::FilterField;

use super::query::{parse, sortable};
use super::{Target, open};
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{ItemPage, PageMeta};
use crate::list_memo::list_page;
use crate::principal::Principal;
use crate::render::render_items;
use crate::schema::CollectionDefinition;

/// A page of `slug`'s items for the query (`filter`, `sort`, `direction`, `trashed`, `page`,
/// `per_page`, `locale`, `include`).
///
/// # Errors
/// 403 without `can-show-collections`, 404 for an unknown collection, 422 for a bad query, the
/// database.
pub async fn list(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<ItemPage, AppError> {
    let target = open(state, principal, "can-show-collections", slug).await?;
    page_of(state, &target, query).await
}

/// What the items list page shows: the page of items, the collection's definition (its
/// fields, in order), the columns saved for the list, and the fields the list can be sorted by.
#[derive(Debug)]
pub struct ListScreen {
    pub page: ItemPage,
    pub collection: CollectionDefinition,
    pub list_columns: Option<Vec<String>>,
    pub sortable: Vec<String>,
}

/// [`list`] with what the page needs to show it (one permission check, one snapshot).
///
/// # Errors
/// As [`list`].
pub async fn list_screen(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<ListScreen, AppError> {
    let target = open(state, principal, "can-show-collections", slug).await?;
    let page = page_of(state, &target, query).await?;
    let collection = &target.collection;
    Ok(ListScreen {
        page,
        collection: CollectionDefinition::from(collection.as_ref()),
        list_columns: collection.presentation.list_columns.clone(),
        sortable: collection
            .fields
            .iter()
            .map(|f| f.def.name.as_str())
            .filter(|name| FilterField::parse(name).is_ok_and(|field| sortable(collection, &field)))
            .map(str::to_owned)
            .collect(),
    })
}

async fn page_of(state: &AppState, target: &Target, query: &str) -> Result<ItemPage, AppError> {
    let Target { actor, collection } = target;
    let query = parse(query, &actor.snapshot.locales, collection)?;
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &actor.snapshot.locales,
        locale: &query.read.locale,
    };
    let list = ListItems {
        filter: &query.filter,
        sort: &query.sort,
        page: query.page,
        per_page: query.per_page,
        after: None,
    };
    let page = match query.shelf {
        // The live list is the public list's: its total and positions are remembered per
        // (collection, locale, filter) until the stamp of its content moves.
        Shelf::Live => {
            let filter = (&query.read.locale, &query.filter);
            let key = crate::items::list_key(state, actor, collection, filter, None).await;
            let memo = &actor.snapshot.lists;
            list_page(state.db(), memo, key, collection, &scope, list, None).await?
        }
        Shelf::Trashed => item_admin::list_trashed(state.db(), collection, &scope, &list).await?,
    };
    let meta = PageMeta {
        current_page: page.current_page,
        last_page: page.last_page,
        per_page: page.per_page,
        total: page.total,
    };
    let data = render_items(state, actor, collection, page.items, &query.read).await?;
    Ok(ItemPage { data, meta })
}
