//! The query of the admin item list and export: `filter[…]` (the public API's grammar), `sort`
//! (one sortable field) with `direction` (`asc` or `desc`), `trashed`, `page`, `per_page`,
//! `locale` and `include`; every problem reported at once, keyed by its parameter.

use vellum_domain::{ContentLocales, ValidationErrors, ValueShape};
use vellum_policy::{Filter, FilterField, PolicyError};
use vellum_storage::item_admin::Shelf;
use vellum_storage::items::SortKey;
use vellum_storage::model::Collection;

use crate::error::AppError;
use crate::query::{ReadQuery, first, pairs, parse_page, parse_read};

/// A parsed admin list query.
#[derive(Debug, Clone)]
pub(crate) struct AdminQuery {
    pub read: ReadQuery,
    pub page: u64,
    pub per_page: u64,
    pub filter: Filter,
    pub sort: Vec<SortKey>,
    pub shelf: Shelf,
}

/// Parses `query` for `collection`.
///
/// # Errors
/// [`AppError::Invalid`] naming each malformed parameter: an unknown filter field, a `sort`
/// that is not a sortable field, a `direction` other than `asc`/`desc`, a bad `trashed`,
/// `page`, `per_page` or `locale`.
pub(crate) fn parse(
    query: &str,
    locales: &ContentLocales,
    collection: &Collection,
) -> Result<AdminQuery, AppError> {
    let mut errors = ValidationErrors::new();
    let read = match parse_read(query, locales) {
        Ok(read) => Some(read),
        Err(AppError::Invalid(found)) => {
            for (key, messages) in found.iter() {
                for message in messages {
                    errors.add(key, message.clone());
                }
            }
            None
        }
        Err(other) => return Err(other),
    };
    let pairs = pairs(query);
    let (page, per_page) = parse_page(&pairs, &mut errors);
    let filter = parse_filter(&pairs, collection, &mut errors);
    let sort = parse_sort(&pairs, collection, &mut errors);
    let shelf = parse_trashed(&pairs, &mut errors);
    let read = match read {
        Some(read) if errors.is_empty() => read,
        _ => return Err(AppError::Invalid(errors)),
    };
    Ok(AdminQuery {
        read,
        page,
        per_page,
        filter,
        sort,
        shelf,
    })
}

fn parse_filter(
    pairs: &[(String, String)],
    collection: &Collection,
    errors: &mut ValidationErrors,
) -> Filter {
    let filter = match Filter::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(filter) => filter,
        Err(PolicyError::InvalidFilter { param, message }) => {
            errors.add(param, message);
            return Filter::default();
        }
        Err(other) => {
            errors.add("filter", other.to_string());
            return Filter::default();
        }
    };
    for condition in filter.conditions() {
        if let FilterField::Data(name) = &condition.field
            && collection.schema().field(name.as_str()).is_none()
        {
            errors.add(
                format!("filter[{}]", condition.field),
                format!("The field {} cannot be filtered on.", condition.field),
            );
        }
    }
    filter
}

/// Whether a list can be ordered by `field`: the system keys, and fields holding one scalar
/// (text, number, boolean, one linked item or file).
pub(crate) fn sortable(collection: &Collection, field: &FilterField) -> bool {
    match field {
        FilterField::Id | FilterField::CreatedAt | FilterField::UpdatedAt => true,
        FilterField::Data(name) => collection.schema().field(name.as_str()).is_some_and(|f| {
            matches!(
                f.shape(),
                ValueShape::Text
                    | ValueShape::Number
                    | ValueShape::Boolean
                    | ValueShape::FileId
                    | ValueShape::ItemId
            )
        }),
    }
}

fn parse_sort(
    pairs: &[(String, String)],
    collection: &Collection,
    errors: &mut ValidationErrors,
) -> Vec<SortKey> {
    let descending = match first(pairs, "direction").map(str::to_ascii_lowercase) {
        None => false,
        Some(d) if d.is_empty() || d == "asc" => false,
        Some(d) if d == "desc" => true,
        Some(_) => {
            errors.add("direction", "The direction field must be asc or desc.");
            false
        }
    };
    let field = match first(pairs, "sort")
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        None => FilterField::Id,
        Some(raw) => match FilterField::parse(raw) {
            Ok(field) if sortable(collection, &field) => field,
            _ => {
                errors.add(
                    "sort",
                    "The sort field must be id, created_at, updated_at or a text, number, boolean or single-relation field of the collection.",
                );
                FilterField::Id
            }
        },
    };
    vec![SortKey { field, descending }]
}

fn parse_trashed(pairs: &[(String, String)], errors: &mut ValidationErrors) -> Shelf {
    match first(pairs, "trashed")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("" | "0" | "false") => Shelf::Live,
        Some("1" | "true") => Shelf::Trashed,
        Some(_) => {
            errors.add("trashed", "The trashed field must be 1 or 0.");
            Shelf::Live
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trashed_accepts_one_and_zero() {
        let mut errors = ValidationErrors::new();
        assert_eq!(
            parse_trashed(&pairs("trashed=1"), &mut errors),
            Shelf::Trashed
        );
        assert_eq!(parse_trashed(&pairs("trashed=0"), &mut errors), Shelf::Live);
        assert_eq!(parse_trashed(&pairs(""), &mut errors), Shelf::Live);
        assert!(errors.is_empty());
        parse_trashed(&pairs("trashed=only"), &mut errors);
        assert!(errors.get("trashed").is_some());
    }
}
