//! `GET /collections/{collection}/items`: a page of items (or of the trash with `trashed=1`),
//! filtered and sorted, rendered as the public API renders them for `super-admin`.

use vellum_storage::item_admin::{self, Shelf};
use vellum_storage::items::{self as stored, FilterScope, ListItems};

use super::query::parse;
use super::{Target, open};
use crate::context::AppState;
use crate::error::AppError;
use crate::items::{ItemPage, PageMeta};
use crate::principal::Principal;
use crate::render::render_items;
use crate::snapshot::TotalKey;

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
    let Target { actor, collection } = open(state, principal, "can-show-collections", slug).await?;
    let query = parse(query, &actor.snapshot.locales, &collection)?;
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
    };
    let page = match query.shelf {
        Shelf::Live => {
            // The live total is the public list's: remembered per (collection, locale, filter)
            // until the epoch moves, instead of a count over the whole collection per request.
            let key = TotalKey::new(collection.id, &query.read.locale, &query.filter, None);
            let known = actor.snapshot.total(&key);
            let page =
                stored::list_items_with_total(state.db(), &collection, &scope, &list, None, known)
                    .await?;
            if known.is_none() {
                actor.snapshot.remember_total(key, page.total);
            }
            page
        }
        Shelf::Trashed => item_admin::list_trashed(state.db(), &collection, &scope, &list).await?,
    };
    let meta = PageMeta {
        current_page: page.current_page,
        last_page: page.last_page,
        per_page: page.per_page,
        total: page.total,
    };
    let data = render_items(state, &actor, &collection, page.items, &query.read).await?;
    Ok(ItemPage { data, meta })
}
