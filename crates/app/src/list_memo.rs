//! What is remembered of item lists for as long as the snapshot holds: each list's total, and
//! positions in lists sorted by id. Both are keyed by the stamp of the content the list can see
//! ([`crate::cache::scope`]), which every write of that content moves, so what is found is
//! current; both memos are bounded by entries.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use vellum_domain::LocaleCode;
use vellum_policy::Filter;
use vellum_storage::items::{self as stored, Anchor, FilterScope, Item, ListItems, Page};
use vellum_storage::model::Collection;
use vellum_storage::{Database, StorageError};

use crate::cache::key::KeyHasher;

/// Per memo, remembered lists beyond this (a flood of distinct filters or pages) clear it rather
/// than grow it: a few hundred KiB at the cap.
pub(crate) const MAX_REMEMBERED_LISTS: usize = 10_000;

/// Which matches a list holds: a SHA-256 digest of the collection, the stamp of its content, the
/// locale the filter compares
/// translatable fields in, the request's filter and the role's item filter (sort and page do not
/// change them). Fixed-size on purpose: the filter alone can be as long as the URL, and a memo
/// keyed by its text grew by 64 KB per anonymous request, to 600 MiB (security review R3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ListKey([u8; 32]);

impl ListKey {
    pub(crate) fn new(
        collection_id: i64,
        stamp: u64,
        locale: &LocaleCode,
        filter: &Filter,
        role_filter: Option<&Filter>,
    ) -> Self {
        let mut key = KeyHasher::new("list total v1");
        key.part(&collection_id.to_string())
            .part(&stamp.to_string())
            .part(locale.as_str())
            .debug_part(filter)
            .debug_part(&role_filter);
        Self(key.finish())
    }
}

/// Totals by [`ListKey`], and [`Anchor`]s by list, direction and offset (the item id a position
/// ends at): a page read before, or a later page of the same list, seeks from the nearest one at
/// or before its offset instead of passing every earlier match, which is what makes a repeated
/// deep page and a crawler walking pages in order cost what page 1 costs.
#[derive(Debug, Default)]
pub(crate) struct ListMemo {
    totals: Mutex<HashMap<ListKey, u64>>,
    anchors: Mutex<BTreeMap<(ListKey, bool, u64), i64>>,
}

impl ListMemo {
    pub(crate) fn total(&self, key: &ListKey) -> Option<u64> {
        locked(&self.totals).get(key).copied()
    }

    pub(crate) fn remember_total(&self, key: ListKey, total: u64) {
        let mut totals = locked(&self.totals);
        if totals.len() >= MAX_REMEMBERED_LISTS {
            totals.clear();
        }
        totals.insert(key, total);
    }

    /// The remembered position of list `key` nearest at or before `offset`.
    pub(crate) fn anchor(&self, key: &ListKey, descending: bool, offset: u64) -> Option<Anchor> {
        locked(&self.anchors)
            .range((*key, descending, 0)..=(*key, descending, offset))
            .next_back()
            .map(|(&(_, _, offset), &id)| Anchor { offset, id })
    }

    pub(crate) fn remember_anchor(&self, key: ListKey, descending: bool, anchor: Anchor) {
        let mut anchors = locked(&self.anchors);
        if anchors.len() >= MAX_REMEMBERED_LISTS {
            anchors.clear();
        }
        anchors.insert((key, descending, anchor.offset), anchor.id);
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Single inserts and clears: a panic while holding the lock cannot leave a map inconsistent.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A page of `query` (inside `role_filter`), using and feeding what `memo` remembers of the list
/// `key` names: its total, and where its pages read so far start and end.
///
/// # Errors
/// A database error.
pub(crate) async fn list_page(
    db: &Database,
    memo: &ListMemo,
    key: ListKey,
    collection: &Collection,
    scope: &FilterScope<'_>,
    query: ListItems<'_>,
    role_filter: Option<&Filter>,
) -> Result<Page<Item>, StorageError> {
    let known = memo.total(&key);
    let order = stored::id_order(query.sort);
    let offset = query
        .page
        .max(1)
        .saturating_sub(1)
        .saturating_mul(query.per_page.max(1));
    let after = order.and_then(|descending| memo.anchor(&key, descending, offset));
    let query = ListItems { after, ..query };
    let page =
        stored::list_items_with_total(db, collection, scope, &query, role_filter, known).await?;
    if known.is_none() {
        memo.remember_total(key, page.total);
    }
    if let (Some(descending), Some(anchors)) = (order, stored::page_anchors(&query, &page)) {
        for anchor in anchors {
            memo.remember_anchor(key, descending, anchor);
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn filter(pairs: &[(&str, &str)]) -> Filter {
        Filter::from_query(pairs.iter().copied()).unwrap()
    }

    /// The memo's keys are 32 bytes whatever the filter, and each part of what a total depends
    /// on gives another key.
    #[test]
    fn totals_are_remembered_under_fixed_size_keys() {
        let en = LocaleCode::parse("en").unwrap();
        let de = LocaleCode::parse("de").unwrap();
        let short = filter(&[("filter[title][_contains]", "a")]);
        let long = filter(&[
            ("filter[title][_contains]", &"a".repeat(1024)),
            ("filter[slug][_in]", &vec!["b".repeat(1024); 60].join(",")),
        ]);
        let role =
            Filter::from_json("item_filter", &json!({"status": {"_eq": "published"}})).unwrap();
        // No heap part: the whole key is inline, so the memo's size is its entry count.
        assert_eq!(std::mem::size_of::<ListKey>(), 32);
        let key = ListKey::new(1, 0, &en, &short, None);
        assert_eq!(key, ListKey::new(1, 0, &en, &short, None));
        for other in [
            ListKey::new(2, 0, &en, &short, None),
            ListKey::new(1, 1, &en, &short, None),
            ListKey::new(1, 0, &de, &short, None),
            ListKey::new(1, 0, &en, &long, None),
            ListKey::new(1, 0, &en, &short, Some(&role)),
            ListKey::new(1, 0, &en, &Filter::default(), None),
        ] {
            assert_ne!(key, other);
        }

        let memo = ListMemo::default();
        memo.remember_total(key, 7);
        assert_eq!(memo.total(&key), Some(7));
        assert_eq!(memo.total(&ListKey::new(1, 0, &en, &long, None)), None);
        // Bounded by entries: a flood of distinct lists clears the memo instead of growing it.
        for i in 0..=MAX_REMEMBERED_LISTS {
            let f = filter(&[("filter[title][_eq]", &i.to_string())]);
            memo.remember_total(ListKey::new(1, 0, &en, &f, None), 1);
            assert!(locked(&memo.totals).len() <= MAX_REMEMBERED_LISTS);
        }
    }

    /// The nearest position at or before the asked offset, of the same list and direction only;
    /// a flood of positions clears the memo instead of growing it.
    #[test]
    fn anchors_are_the_nearest_earlier_position_of_the_same_list() {
        let en = LocaleCode::parse("en").unwrap();
        let a = ListKey::new(1, 0, &en, &Filter::default(), None);
        let b = ListKey::new(2, 0, &en, &Filter::default(), None);
        let memo = ListMemo::default();
        assert_eq!(memo.anchor(&a, false, 100), None);
        memo.remember_anchor(a, false, Anchor { offset: 15, id: 20 });
        memo.remember_anchor(a, false, Anchor { offset: 45, id: 70 });
        memo.remember_anchor(
            a,
            true,
            Anchor {
                offset: 30,
                id: 9000,
            },
        );
        memo.remember_anchor(b, false, Anchor { offset: 40, id: 41 });
        assert_eq!(memo.anchor(&a, false, 14), None);
        assert_eq!(
            memo.anchor(&a, false, 15),
            Some(Anchor { offset: 15, id: 20 })
        );
        assert_eq!(
            memo.anchor(&a, false, 44),
            Some(Anchor { offset: 15, id: 20 })
        );
        assert_eq!(
            memo.anchor(&a, false, 735),
            Some(Anchor { offset: 45, id: 70 })
        );
        assert_eq!(
            memo.anchor(&a, true, 735),
            Some(Anchor {
                offset: 30,
                id: 9000
            })
        );
        assert_eq!(memo.anchor(&b, false, 39), None);
        for offset in 0..=MAX_REMEMBERED_LISTS as u64 {
            memo.remember_anchor(b, false, Anchor { offset, id: 1 });
            assert!(locked(&memo.anchors).len() <= MAX_REMEMBERED_LISTS);
        }
    }
}
