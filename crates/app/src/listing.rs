//! The query of the admin lists of users and groups: `page`, `per_page`, `search` (at most 255
//! characters) and `trashed` (`with` or `only`), every problem reported at once.

use vellum_domain::ValidationErrors;
use vellum_storage::listing::{ListQuery, Trashed};

use crate::error::AppError;
use crate::query::{first, pairs, parse_page};

/// The longest `search` accepted (as the spec's file search).
pub const MAX_SEARCH: usize = 255;

/// How many entries a form's picker lists at most (roles, groups, users to choose from); a
/// longer list is searched through the list routes instead.
pub const PICKER_LIMIT: u64 = 1000;

/// Parses an admin list's raw query string.
///
/// # Errors
/// [`AppError::Invalid`] naming each malformed parameter.
pub(crate) fn parse(query: &str) -> Result<ListQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let (page, per_page) = parse_page(&pairs, &mut errors);
    let search = first(&pairs, "search").filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > MAX_SEARCH) {
        errors.add(
            "search",
            format!("The search field must not be longer than {MAX_SEARCH} characters."),
        );
    }
    let trashed = match first(&pairs, "trashed").filter(|t| !t.is_empty()) {
        None => Trashed::Without,
        Some(raw) => Trashed::parse(raw).unwrap_or_else(|| {
            errors.add("trashed", "The trashed field must be one of: with, only.");
            Trashed::Without
        }),
    };
    errors
        .into_result(ListQuery {
            search: search.map(str::to_owned),
            trashed,
            page,
            per_page,
        })
        .map_err(AppError::Invalid)
}

/// A path segment naming a row: a positive integer, anything else names nothing (404).
///
/// # Errors
/// [`AppError::NotFound`].
pub(crate) fn parse_id(raw: &str) -> Result<i64, AppError> {
    match raw.parse::<i64>() {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(AppError::NotFound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_errors() {
        let q = parse("").unwrap();
        assert_eq!((q.page, q.per_page, q.trashed), (1, 15, Trashed::Without));
        assert_eq!(q.search, None);
        let q = parse("search=ada&trashed=only&page=2&per_page=100").unwrap();
        assert_eq!(q.search.as_deref(), Some("ada"));
        assert_eq!(q.trashed, Trashed::Only);
        let AppError::Invalid(errors) = parse(&format!(
            "search={}&trashed=all&per_page=0&page=0",
            "x".repeat(256)
        ))
        .unwrap_err() else {
            panic!("not a validation error");
        };
        for field in ["search", "trashed", "per_page", "page"] {
            assert!(errors.get(field).is_some(), "{field}");
        }
        assert!(parse("search=a%00b").is_err());
    }

    #[test]
    fn ids() {
        assert_eq!(parse_id("7").unwrap(), 7);
        for bad in ["0", "-1", "x", "", "99999999999999999999"] {
            assert!(matches!(parse_id(bad), Err(AppError::NotFound)), "{bad}");
        }
    }
}
