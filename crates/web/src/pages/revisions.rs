//! An item's history (`GET …/items/{item}/revisions`): the newest revisions, each with what it
//! changed against the one before (field by field, old and new), and a restore button.

use askama::Template;
use serde_json::{Map, Value};
use vellum_app::admin_items::RevisionResource;
use vellum_app::paging::Paginated;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::format::moment;

/// The most revisions the page compares (the newest).
pub const SHOWN: u64 = 50;
/// The longest value a change shows before it is cut.
const VALUE_CHARS: usize = 200;

#[derive(Debug, Clone, Template)]
#[template(path = "revisions.html")]
pub struct RevisionsPage {
    pub chrome: Chrome,
    pub collection_name: String,
    pub item_href: String,
    pub id: i64,
    pub rows: Vec<RevisionRow>,
    pub total: u64,
    /// Older revisions exist than the page shows.
    pub more: bool,
    pub restored: bool,
}

/// One revision and its changes.
#[derive(Debug, Clone)]
pub struct RevisionRow {
    pub id: i64,
    pub when: String,
    pub user: String,
    pub changes: Vec<Change>,
    /// The oldest revision of the item (its values are its creation).
    pub first: bool,
    pub restore_action: String,
}

/// One field's change: its value before and after (empty for none).
#[derive(Debug, Clone)]
pub struct Change {
    pub field: String,
    pub before: String,
    pub after: String,
}

impl RevisionsPage {
    /// The page of `slug`'s item `id`, for the newest revisions of `page` (asked for with
    /// `per_page` [`SHOWN`]).
    #[must_use]
    pub fn new(
        principal: &Principal,
        collection_name: String,
        slug: &str,
        id: i64,
        page: &Paginated<RevisionResource>,
        restored: bool,
    ) -> Self {
        let item_href = format!("/collections/{slug}/items/{id}");
        let empty = Map::new();
        let total = page.meta.total;
        let shown = page.data.len();
        let rows = page
            .data
            .iter()
            .enumerate()
            .map(|(at, revision)| {
                let older = page.data.get(at + 1);
                let first = older.is_none() && u64::try_from(shown).is_ok_and(|s| s == total);
                RevisionRow {
                    id: revision.id,
                    when: moment(&revision.created_at),
                    user: revision
                        .user_id
                        .map_or_else(|| "—".to_owned(), |u| format!("user {u}")),
                    changes: match older {
                        Some(older) => changes(&older.data, &revision.data),
                        None if first => changes(&empty, &revision.data),
                        None => Vec::new(),
                    },
                    first,
                    restore_action: format!("{item_href}/revisions/{}/restore", revision.id),
                }
            })
            .collect();
        Self {
            chrome: Chrome::new(principal, "collections"),
            collection_name,
            item_href,
            id,
            rows,
            total,
            more: u64::try_from(shown).is_ok_and(|s| s < total),
            restored,
        }
    }
}

/// The fields whose value differs between `before` and `after`, in `after`'s order then the
/// removed ones; a missing value and null are the same (nothing).
fn changes(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<Change> {
    let mut out: Vec<Change> = after
        .iter()
        .filter(|(k, v)| before.get(k.as_str()).unwrap_or(&Value::Null) != *v)
        .map(|(k, v)| Change {
            field: k.clone(),
            before: before.get(k.as_str()).map(shown).unwrap_or_default(),
            after: shown(v),
        })
        .collect();
    out.extend(
        before
            .iter()
            .filter(|(k, v)| !after.contains_key(k.as_str()) && !v.is_null())
            .map(|(k, v)| Change {
                field: k.clone(),
                before: shown(v),
                after: String::new(),
            }),
    );
    out
}

fn shown(value: &Value) -> String {
    let text = match value {
        Value::Null => return String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(VALUE_CHARS) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or(&text)),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_change_names_each_field_that_differs() {
        let before = map(json!({"a": 1, "b": "x", "gone": true}));
        let after = map(json!({"a": 2, "b": "x", "c": {"en": "hi"}, "unset": null}));
        let found: Vec<(String, String, String)> = changes(&before, &after)
            .into_iter()
            .map(|c| (c.field, c.before, c.after))
            .collect();
        assert_eq!(
            found,
            [
                ("a".into(), "1".into(), "2".into()),
                ("c".into(), String::new(), r#"{"en":"hi"}"#.into()),
                ("gone".into(), "true".into(), String::new()),
            ]
        );
    }
}
