//! The admin form's relation picker: `GET /collections/{collection}/items/options`, gated by
//! `can-show-collections`. Pages of `{id, label}` of the live items a relation field of the
//! collection can point at.
//!
//! - `field_id` (required): a relation field of this collection (relation, many_to_one,
//!   one_to_many, relation_tree, relation_many, many_to_many or m2a), by its id.
//! - `related_collection_id`: which target, required for an m2a field (one of its allowed
//!   collections); for the other types optional and, when given, the field's target.
//! - `search`: items whose display field contains it, ignoring ASCII case (the filter dialect's
//!   `_contains`, in the default locale); without a display field, the item whose id it is.
//! - `page`, `per_page` (1 to 100, default 20).
//!
//! The label: the field's `display_template`, else its `display_field`, else the target
//! collection's presentation (`display_template`, then `display_field`), else `#<id>`. A
//! template names fields as `{{name}}` (and `{{id}}`). The field's `filter` setting narrows the
//! items offered. Every page is one bounded list query (`per_page` rows and a count).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use vellum_domain::{FieldName, LocaleSelection, TypeSettings, ValidationErrors, flatten_for_read};
use vellum_policy::{Condition, Filter, FilterField, FilterOp};
use vellum_storage::items::{FilterScope, ListItems, list_items};
use vellum_storage::model::{Collection, StoredField};

use crate::context::AppState;
use crate::error::AppError;
use crate::items::PageMeta;
use crate::paging::Paginated;
use crate::presentation::collection;
use crate::principal::Principal;
use crate::query::{first, pairs, parse_bounded};
use crate::snapshot::Snapshot;

/// Default and bound of the picker's `per_page`.
pub const DEFAULT_PER_PAGE: u64 = 20;
pub const MAX_PER_PAGE: u64 = 100;
/// The longest `search`, in characters.
pub const MAX_SEARCH: usize = 255;

/// One pickable item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemOption {
    pub id: i64,
    pub label: String,
}

/// How the target's items are labelled and searched.
#[derive(Debug, Clone, Default)]
struct Labelling {
    template: Option<String>,
    field: Option<String>,
}

/// The picker's query, checked.
struct OptionsQuery {
    field: StoredField,
    target: Arc<Collection>,
    search: Option<String>,
    page: u64,
    per_page: u64,
}

/// `GET /collections/{collection}/items/options`.
///
/// # Errors
/// 403 without `can-show-collections`; 404 for an unknown collection; 422 naming each bad
/// parameter; the database.
pub async fn options(
    state: &AppState,
    principal: &Principal,
    slug: &str,
    query: &str,
) -> Result<Paginated<ItemOption>, AppError> {
    principal.require("can-show-collections")?;
    let collection = collection(state, slug).await?;
    let snapshot = state.snapshot().await?;
    let query = parse(&snapshot, &collection, query)?;
    let labelling = labelling(&query.field, &query.target);
    let mut filter = match search_condition(&query, &labelling) {
        Some(Some(condition)) => Filter::new(vec![condition]),
        Some(None) => return Ok(empty_page(query.per_page)),
        None => Filter::default(),
    };
    if let Some(narrowing) = field_filter(&query.field)? {
        filter = filter.and(&narrowing);
    }
    labelled_page(
        state,
        &snapshot,
        &query.target,
        &filter,
        &labelling,
        (query.page, query.per_page),
    )
    .await
}

/// A page of `target`'s live items matching `filter`, each labelled by `labelling` in the
/// default locale: one bounded list query (the page and a count).
async fn labelled_page(
    state: &AppState,
    snapshot: &Snapshot,
    target: &Collection,
    filter: &Filter,
    labelling: &Labelling,
    (page, per_page): (u64, u64),
) -> Result<Paginated<ItemOption>, AppError> {
    let locale = snapshot.locales.default_locale().clone();
    let scope = FilterScope {
        schema: target.schema(),
        locales: &snapshot.locales,
        locale: &locale,
    };
    let found = list_items(
        state.db(),
        target,
        &scope,
        &ListItems {
            filter,
            sort: &[],
            page,
            per_page,
            after: None,
        },
    )
    .await?;
    let selection = LocaleSelection::Flatten(locale.clone());
    Ok(Paginated::from_page(found, |item| {
        let data = flatten_for_read(target.schema(), &item.data, &selection, &snapshot.locales);
        ItemOption {
            id: item.id,
            label: label(labelling, item.id, &data),
        }
    }))
}

fn empty_page(per_page: u64) -> Paginated<ItemOption> {
    Paginated {
        data: Vec::new(),
        meta: PageMeta {
            current_page: 1,
            last_page: 1,
            per_page,
            total: 0,
        },
    }
}

fn parse(
    snapshot: &Snapshot,
    collection: &Collection,
    query: &str,
) -> Result<OptionsQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let page = parse_bounded(&pairs, "page", 1, u64::MAX, &mut errors);
    let per_page = parse_bounded(
        &pairs,
        "per_page",
        DEFAULT_PER_PAGE,
        MAX_PER_PAGE,
        &mut errors,
    );
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
            "The search field must not be longer than 255 characters.",
        );
    }
    let related = match first(&pairs, "related_collection_id") {
        None | Some("") => None,
        Some(raw) => match raw.trim().parse::<i64>() {
            Ok(id) if id > 0 => Some(id),
            _ => {
                errors.add(
                    "related_collection_id",
                    "The related_collection_id field must be a positive integer.",
                );
                None
            }
        },
    };
    let field = match first(&pairs, "field_id").map(|raw| raw.trim().parse::<i64>()) {
        None => {
            errors.add("field_id", "The field_id field is required.");
            None
        }
        Some(Ok(id)) => {
            let field = collection.fields.iter().find(|f| f.id == id).cloned();
            if field.as_ref().is_none_or(|f| targets(f).is_none()) {
                errors.add(
                    "field_id",
                    "The field_id field must name a relation field of this collection.",
                );
            }
            field
        }
        Some(Err(_)) => {
            errors.add("field_id", "The field_id field must be an integer.");
            None
        }
    };
    let target = field
        .as_ref()
        .and_then(|f| target(snapshot, f, related, &mut errors));
    errors.into_result(()).map_err(AppError::Invalid)?;
    match (field, target) {
        (Some(field), Some(target)) => Ok(OptionsQuery {
            field,
            target,
            search,
            page,
            per_page,
        }),
        _ => Err(AppError::invalid(
            "field_id",
            "The field has no related collection.",
        )),
    }
}

/// The collections a relation field can point at (`None`: not a relation field).
fn targets(field: &StoredField) -> Option<Vec<i64>> {
    match &field.def.settings.kind {
        TypeSettings::Relation(relation) | TypeSettings::ManyToMany { relation, .. } => {
            Some(relation.related_collection_id.into_iter().collect())
        }
        TypeSettings::M2a {
            allowed_collection_ids,
            ..
        } => Some(allowed_collection_ids.clone()),
        _ => None,
    }
}

/// The target collection the query picks from, recording why there is none.
fn target(
    snapshot: &Snapshot,
    field: &StoredField,
    related: Option<i64>,
    errors: &mut ValidationErrors,
) -> Option<Arc<Collection>> {
    let allowed = targets(field)?;
    let m2a = matches!(field.def.settings.kind, TypeSettings::M2a { .. });
    let id = match (related, m2a) {
        (Some(id), _) if allowed.contains(&id) => id,
        (Some(_), _) => {
            errors.add(
                "related_collection_id",
                "The related_collection_id field must be a collection the field can point at.",
            );
            return None;
        }
        (None, true) => {
            errors.add(
                "related_collection_id",
                "The related_collection_id field is required for an m2a field.",
            );
            return None;
        }
        (None, false) => *allowed.first()?,
    };
    let found = snapshot.collection_by_id(id).cloned();
    if found.is_none() {
        errors.add(
            "field_id",
            "The field's related collection no longer exists.",
        );
    }
    found
}

/// Which template and display field label the target's items: the field's settings first,
/// then the target's presentation; names that are not fields of the target are ignored.
fn labelling(field: &StoredField, target: &Collection) -> Labelling {
    let relation = match &field.def.settings.kind {
        TypeSettings::Relation(relation) | TypeSettings::ManyToMany { relation, .. } => {
            Some(relation)
        }
        _ => None,
    };
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    let known = |s: Option<String>| s.filter(|name| target.field(name).is_some());
    let template = relation
        .and_then(|r| non_empty(&r.display_template))
        .or_else(|| non_empty(&target.presentation.display_template));
    let display = known(relation.and_then(|r| non_empty(&r.display_field)))
        .or_else(|| known(non_empty(&target.presentation.display_field)));
    // The search reads the display field, else the first field the template names.
    let field = display.or_else(|| {
        template.as_deref().and_then(|t| {
            placeholders(t)
                .into_iter()
                .find(|n| target.field(n).is_some())
        })
    });
    Labelling { template, field }
}

/// The `search` condition: `None` without a search, `Some(None)` when nothing can match.
fn search_condition(query: &OptionsQuery, labelling: &Labelling) -> Option<Option<Condition>> {
    let search = query.search.as_ref()?;
    Some(search_on(labelling, search))
}

/// Items whose display field contains `search` (without one, the item whose id it is); `None`
/// when no item can match.
fn search_on(labelling: &Labelling, search: &str) -> Option<Condition> {
    match &labelling.field {
        Some(name) => FieldName::parse(name).ok().map(|name| Condition {
            field: FilterField::Data(name),
            op: FilterOp::Contains(search.to_owned()),
        }),
        None => search
            .parse::<i64>()
            .ok()
            .filter(|id| *id > 0)
            .map(|id| Condition {
                field: FilterField::Id,
                op: FilterOp::Eq(Value::from(id)),
            }),
    }
}

/// The field's `filter` setting, which narrows what may be picked.
fn field_filter(field: &StoredField) -> Result<Option<Filter>, AppError> {
    let raw = match &field.def.settings.kind {
        TypeSettings::Relation(relation) | TypeSettings::ManyToMany { relation, .. } => {
            relation.filter.as_ref()
        }
        _ => None,
    };
    raw.map(|raw| {
        Filter::from_json("filter", raw).map_err(|e| {
            AppError::invalid(
                "field_id",
                format!("The field's filter setting cannot be applied: {e}."),
            )
        })
    })
    .transpose()
}

/// The names a template's `{{name}}` placeholders hold, in order.
fn placeholders(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = rest.get(start + 2..).unwrap_or_default();
        let Some(end) = after.find("}}") else { break };
        names.push(after.get(..end).unwrap_or_default().trim().to_owned());
        rest = after.get(end + 2..).unwrap_or_default();
    }
    names
}

/// A value as label text: text as is, numbers and booleans spelled, anything else nothing.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// The label of item `id` of `collection` by the collection's own presentation (its
/// `display_template`, then its `display_field`, else `#<id>`), `data` flattened to the default
/// locale: how lists outside a relation field (a file's "where used") name an item.
pub(crate) fn item_label(collection: &Collection, id: i64, data: &Map<String, Value>) -> String {
    label(&collection_labelling(collection), id, data)
}

/// How a collection's own presentation labels and searches its items.
fn collection_labelling(collection: &Collection) -> Labelling {
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
    let template = non_empty(&collection.presentation.display_template);
    let field = non_empty(&collection.presentation.display_field)
        .filter(|name| collection.field(name).is_some())
        .or_else(|| {
            template.as_deref().and_then(|t| {
                placeholders(t)
                    .into_iter()
                    .find(|n| collection.field(n).is_some())
            })
        });
    Labelling { template, field }
}

/// A page of the collection's live items labelled by its presentation, `search` matching the
/// display field (or the id): the chat item pickers.
pub(crate) async fn collection_items(
    state: &AppState,
    collection: &Arc<Collection>,
    search: Option<&str>,
    page: u64,
    per_page: u64,
) -> Result<Paginated<ItemOption>, AppError> {
    let snapshot = state.snapshot().await?;
    let labelling = collection_labelling(collection);
    let filter = match search {
        None => Filter::default(),
        Some(search) => match search_on(&labelling, search) {
            Some(condition) => Filter::new(vec![condition]),
            None => return Ok(empty_page(per_page)),
        },
    };
    labelled_page(
        state,
        &snapshot,
        collection,
        &filter,
        &labelling,
        (page, per_page),
    )
    .await
}

/// The label of a stored item by its collection's presentation, in the default locale.
pub(crate) fn stored_item_label(
    snapshot: &Snapshot,
    collection: &Collection,
    id: i64,
    data: &Map<String, Value>,
) -> String {
    let selection = LocaleSelection::Flatten(snapshot.locales.default_locale().clone());
    let data = flatten_for_read(collection.schema(), data, &selection, &snapshot.locales);
    item_label(collection, id, &data)
}

/// The label of item `id` whose `data` is flattened to the default locale.
fn label(labelling: &Labelling, id: i64, data: &Map<String, Value>) -> String {
    let rendered = match (&labelling.template, &labelling.field) {
        (Some(template), _) => render_template(template, id, data),
        (None, Some(field)) => text_of(data.get(field)),
        (None, None) => String::new(),
    };
    let rendered = rendered.trim();
    if rendered.is_empty() {
        format!("#{id}")
    } else {
        rendered.to_owned()
    }
}

fn render_template(template: &str, id: i64, data: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(rest.get(..start).unwrap_or_default());
        let after = rest.get(start + 2..).unwrap_or_default();
        let Some(end) = after.find("}}") else {
            out.push_str(rest.get(start..).unwrap_or_default());
            return out;
        };
        let name = after.get(..end).unwrap_or_default().trim();
        if name == "id" {
            out.push_str(&id.to_string());
        } else {
            out.push_str(&text_of(data.get(name)));
        }
        rest = after.get(end + 2..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn templates_fill_placeholders_and_fall_back_to_the_id() {
        let data = json!({"title": "Hello", "n": 3, "flag": true, "tags": ["a"]});
        let data = data.as_object().unwrap();
        let by = |template: &str| Labelling {
            template: Some(template.to_owned()),
            field: None,
        };
        assert_eq!(label(&by("{{title}} ({{ n }})"), 7, data), "Hello (3)");
        assert_eq!(label(&by("{{id}}: {{flag}}"), 7, data), "7: true");
        assert_eq!(label(&by("{{tags}}{{missing}}"), 7, data), "#7");
        assert_eq!(label(&by("{{title"), 7, data), "{{title");
        let field = Labelling {
            template: None,
            field: Some("title".into()),
        };
        assert_eq!(label(&field, 7, data), "Hello");
        assert_eq!(label(&Labelling::default(), 7, data), "#7");
        assert_eq!(placeholders("{{a}} x {{ b }} {{c"), ["a", "b"]);
    }
}
