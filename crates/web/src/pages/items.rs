//! A collection's items (`GET /collections/{collection}/items`): the columns picked (or saved
//! for the list), sort by a column's header, the filter builder and its conditions, pages, the
//! trash view, bulk actions and the export of what is shown. Every part of that state is in the
//! URL, so a filtered list can be shared.

use askama::Template;
use serde_json::Value;
use vellum_app::admin_items::ListScreen;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::links::{changed, href, pairs};
use crate::paging::Pager;

/// How many columns a list shows when none were picked or saved.
const DEFAULT_COLUMNS: usize = 4;
/// The longest text a cell shows before it is cut.
const CELL_CHARS: usize = 80;

/// The operators the filter builder offers, with their labels.
pub const OPERATORS: [(&str, &str); 10] = [
    ("_contains", "contains"),
    ("_eq", "is"),
    ("_neq", "is not"),
    ("_gt", "greater than"),
    ("_gte", "at least"),
    ("_lt", "less than"),
    ("_lte", "at most"),
    ("_in", "is one of (comma-separated)"),
    ("_null", "is empty"),
    ("_nnull", "is not empty"),
];

#[derive(Debug, Clone, Template)]
#[template(path = "items.html")]
pub struct ItemsPage {
    pub chrome: Chrome,
    pub name: String,
    pub slug: String,
    /// The list's own path (`/collections/{slug}/items`).
    pub path: String,
    /// The id column (always first, sortable).
    pub id_column: Column,
    pub columns: Vec<Column>,
    /// Every field, for the column picker and the filter builder.
    pub fields: Vec<FieldChoice>,
    pub rows: Vec<Row>,
    pub total: u64,
    pub trashed: bool,
    pub filters: Vec<ActiveFilter>,
    /// The hidden fields a form on the page carries to keep the list's state.
    pub state: Vec<(String, String)>,
    /// The list's URL as shown (bulk actions come back to it).
    pub here: String,
    pub trash_href: String,
    pub export_csv: String,
    pub export_json: String,
    pub pager: Pager,
    /// What the last bulk action did (`bulk_action`, `bulk_done`, `bulk_failed` in the URL).
    pub bulk_notice: Option<String>,
    /// The columns were just saved as the collection's default (`saved_columns` in the URL).
    pub columns_saved: bool,
}

/// A shown column: its header, and the link that sorts by it (when it can).
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub sort_href: Option<String>,
    /// `ascending`/`descending` when the list is sorted by this column.
    pub sorted: Option<&'static str>,
}

/// A field as the picker and the builder list it.
#[derive(Debug, Clone)]
pub struct FieldChoice {
    pub name: String,
    pub shown: bool,
}

/// One item: its id, the link to it, and the shown columns' cells.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: i64,
    pub href: String,
    pub cells: Vec<String>,
}

/// A filter condition of the URL, with the link that removes it.
#[derive(Debug, Clone)]
pub struct ActiveFilter {
    pub label: String,
    pub remove_href: String,
}

impl ItemsPage {
    /// The page for `screen`, answered for the raw `query` (already validated by the use case).
    #[must_use]
    pub fn new(principal: &Principal, screen: ListScreen, query: &str) -> Self {
        let slug = screen.collection.slug.clone();
        let path = format!("/collections/{slug}/items");
        let all = pairs(query);
        let get = |name: &str| all.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let field_names: Vec<&str> = screen
            .collection
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        let shown = shown_columns(&all, &field_names, screen.list_columns.as_deref());
        let sort = get("sort").unwrap_or("id");
        let descending = get("direction") == Some("desc");
        let column = |name: &str| {
            let sortable = name == "id" || screen.sortable.iter().any(|s| s == name);
            let current = sort == name;
            let next = if current && !descending {
                "desc"
            } else {
                "asc"
            };
            Column {
                name: name.to_owned(),
                sort_href: sortable.then(|| {
                    href(
                        &path,
                        &changed(
                            query,
                            &["sort", "direction"],
                            &[("sort", name), ("direction", next)],
                        ),
                    )
                }),
                sorted: current.then_some(if descending {
                    "descending"
                } else {
                    "ascending"
                }),
            }
        };
        let id_column = column("id");
        let columns = shown.iter().map(|name| column(name)).collect();
        let rows = screen
            .page
            .data
            .iter()
            .filter_map(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .map(|item| {
                let id = item.get("id").and_then(Value::as_i64).unwrap_or_default();
                Row {
                    id,
                    href: format!("{path}/{id}"),
                    cells: shown
                        .iter()
                        .map(|name| cell(item.get("data").and_then(|d| d.get(name))))
                        .collect(),
                }
            })
            .collect();
        let trashed = matches!(get("trashed"), Some("1" | "true"));
        let filters = all
            .iter()
            .enumerate()
            .filter_map(|(at, (k, v))| {
                let label = filter_label(k, v)?;
                let rest: Vec<(String, String)> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, (key, _))| *i != at && key != "page")
                    .map(|(_, pair)| pair.clone())
                    .collect();
                Some(ActiveFilter {
                    label,
                    remove_href: href(&path, &rest),
                })
            })
            .collect();
        let state: Vec<(String, String)> = all
            .iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "page" | "bulk_action" | "bulk_done" | "bulk_failed" | "saved_columns"
                )
            })
            .cloned()
            .collect();
        let export = |format: &str| {
            href(
                &format!("{path}/export"),
                &changed(
                    query,
                    &["format", "per_page", "columns"],
                    &[("format", format)],
                ),
            )
        };
        Self {
            chrome: Chrome::new(principal, "collections"),
            name: screen.collection.name,
            fields: field_names
                .iter()
                .map(|name| FieldChoice {
                    name: (*name).to_owned(),
                    shown: shown.iter().any(|s| s == name),
                })
                .collect(),
            id_column,
            columns,
            rows,
            total: screen.page.meta.total,
            trashed,
            filters,
            here: href(&path, &state),
            trash_href: href(
                &path,
                &changed(
                    query,
                    &["trashed", "bulk_action", "bulk_done", "bulk_failed"],
                    if trashed { &[] } else { &[("trashed", "1")] },
                ),
            ),
            state,
            export_csv: export("csv"),
            export_json: export("json"),
            pager: Pager::new(
                &path,
                query,
                screen.page.meta.current_page,
                screen.page.meta.last_page,
            ),
            bulk_notice: bulk_notice(get("bulk_action"), get("bulk_done"), get("bulk_failed")),
            columns_saved: get("saved_columns").is_some(),
            slug,
            path,
        }
    }

    /// The table's headers: the id, then the shown columns.
    #[must_use]
    pub fn headers(&self) -> Vec<&Column> {
        std::iter::once(&self.id_column)
            .chain(self.columns.iter())
            .collect()
    }

    /// The filter builder's operators.
    #[must_use]
    pub fn operators(&self) -> &'static [(&'static str, &'static str)] {
        &OPERATORS
    }

    /// The state fields a form keeps, minus those it sets itself.
    #[must_use]
    pub fn state_without(&self, names: &str) -> Vec<(String, String)> {
        let names: Vec<&str> = names.split(',').collect();
        self.state
            .iter()
            .filter(|(k, _)| !names.contains(&k.as_str()))
            .cloned()
            .collect()
    }
}

/// The columns a list shows: those picked in the URL (`columns`, repeated), or those saved for
/// the collection, or its first fields; unknown names are dropped.
fn shown_columns(
    query: &[(String, String)],
    fields: &[&str],
    saved: Option<&[String]>,
) -> Vec<String> {
    let known = |name: &&str| fields.contains(name);
    let picked: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "columns")
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(known)
        .fold(Vec::new(), |mut seen: Vec<String>, name| {
            // A column named twice is shown once: the cells stay bounded by fields x rows,
            // whatever the URL repeats.
            if !seen.iter().any(|s| s == name) {
                seen.push(name.to_owned());
            }
            seen
        });
    if !picked.is_empty() {
        return picked;
    }
    if let Some(saved) = saved {
        let saved: Vec<String> = saved
            .iter()
            .map(String::as_str)
            .filter(known)
            .map(str::to_owned)
            .collect();
        if !saved.is_empty() {
            return saved;
        }
    }
    fields
        .iter()
        .take(DEFAULT_COLUMNS)
        .map(|f| (*f).to_owned())
        .collect()
}

/// A value as a cell shows it: text cut to [`CELL_CHARS`], lists by their length, empty as "—".
fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::String(s)) if s.is_empty() => "—".to_owned(),
        Some(Value::String(s)) => cut(s),
        Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Array(list)) => match list.len() {
            0 => "—".to_owned(),
            1 => "1 entry".to_owned(),
            n => format!("{n} entries"),
        },
        Some(other @ Value::Object(_)) => cut(&other.to_string()),
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(CELL_CHARS) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or(text)),
        None => text.to_owned(),
    }
}

/// `filter[title][_contains]=x` as "title contains “x”"; `None` for any other parameter.
fn filter_label(key: &str, value: &str) -> Option<String> {
    let inner = key.strip_prefix("filter[")?.strip_suffix(']')?;
    let (field, op) = match inner.split_once("][") {
        Some((field, op)) => (field, op),
        None => (inner, "_contains"),
    };
    let words = OPERATORS
        .iter()
        .find(|(o, _)| *o == op)
        .map_or(op, |(_, label)| label);
    Some(if matches!(op, "_null" | "_nnull") {
        format!("{field} {words}")
    } else {
        format!("{field} {words} “{value}”")
    })
}

/// What a bulk action did, for the notice above the list.
fn bulk_notice(action: Option<&str>, done: Option<&str>, failed: Option<&str>) -> Option<String> {
    let done: u64 = done?.parse().ok()?;
    let failed: u64 = failed.and_then(|f| f.parse().ok()).unwrap_or(0);
    let verb = match action? {
        "delete" => "moved to the trash",
        "restore" => "restored",
        "force_delete" => "deleted for good",
        _ => return None,
    };
    if done == 0 && failed == 0 {
        return Some("Select at least one item first.".to_owned());
    }
    let items = |n: u64| {
        if n == 1 {
            "1 item".to_owned()
        } else {
            format!("{n} items")
        }
    };
    Some(if failed == 0 {
        format!("{} {verb}.", items(done))
    } else {
        format!("{} {verb}; {} could not be.", items(done), items(failed))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn columns_come_from_the_url_then_the_saved_list_then_the_first_fields() {
        let fields = ["a", "b", "c", "d", "e"];
        let q = pairs("columns=e&columns=zzz&columns=b&columns=e,e");
        assert_eq!(shown_columns(&q, &fields, None), ["e", "b"]);
        let saved = vec!["c".to_owned(), "gone".to_owned()];
        assert_eq!(shown_columns(&[], &fields, Some(&saved)), ["c"]);
        assert_eq!(shown_columns(&[], &fields, None), ["a", "b", "c", "d"]);
    }

    #[test]
    fn cells_are_short_and_never_empty() {
        assert_eq!(cell(None), "—");
        assert_eq!(cell(Some(&json!(""))), "—");
        assert_eq!(cell(Some(&json!(true))), "yes");
        assert_eq!(cell(Some(&json!([1, 2]))), "2 entries");
        assert_eq!(cell(Some(&json!("é".repeat(100)))).chars().count(), 81);
    }

    #[test]
    fn filters_and_notices_read_as_words() {
        assert_eq!(
            filter_label("filter[title][_contains]", "x").as_deref(),
            Some("title contains “x”")
        );
        assert_eq!(
            filter_label("filter[title][_null]", "true").as_deref(),
            Some("title is empty")
        );
        assert_eq!(filter_label("sort", "x"), None);
        assert_eq!(
            bulk_notice(Some("delete"), Some("2"), Some("1")).as_deref(),
            Some("2 items moved to the trash; 1 item could not be.")
        );
        assert_eq!(bulk_notice(Some("drop"), Some("2"), None), None);
    }
}
