//! The query parameters of the items endpoints, parsed once into typed values.
//!
//! Unknown parameters are ignored; a malformed value of a known one is a 422 naming the
//! parameter. Every problem is reported at once.

use vellum_domain::{ContentLocales, LocaleCode, LocaleSelection, ValidationErrors, ValueShape};
use vellum_policy::{FieldPolicy, Filter, FilterField, FilterOp, PolicyError};
use vellum_storage::items::SortKey;
use vellum_storage::model::Collection;

use crate::error::AppError;

/// Default and bounds of `per_page`.
pub const DEFAULT_PER_PAGE: u64 = 15;
pub const MAX_PER_PAGE: u64 = 100;

/// `include=files,users,author`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Include {
    pub files: bool,
    pub users: bool,
    /// Every other token (relation field names; the renderer ignores tokens that are not).
    pub fields: Vec<String>,
}

impl Include {
    /// Comma-separated, case-sensitive tokens; empty tokens are skipped.
    #[must_use]
    pub fn parse(raw: &str) -> Self {
        let mut include = Self::default();
        for token in raw.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match token {
                "files" => include.files = true,
                "users" => include.users = true,
                other => {
                    if !include.fields.iter().any(|f| f == other) {
                        include.fields.push(other.to_owned());
                    }
                }
            }
        }
        include
    }

    #[must_use]
    pub fn has_field(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f == name)
    }
}

/// What the read endpoints share: locale, translations and expansion.
#[derive(Debug, Clone)]
pub struct ReadQuery {
    pub locale: LocaleCode,
    pub selection: LocaleSelection,
    pub include: Include,
}

/// A list request.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub read: ReadQuery,
    pub page: u64,
    pub per_page: u64,
    pub filter: Filter,
    pub sort: Vec<SortKey>,
}

/// The decoded `(key, value)` pairs of a query string. Invalid percent-encoding and invalid
/// UTF-8 decode lossily rather than failing the request.
#[must_use]
pub fn pairs(query: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub(crate) fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" | "" => Some(false),
        _ => None,
    }
}

/// What a read asks for, as the query alone says it: the locale is not resolved yet (that needs
/// the project's locales). Everything a read or list handler takes from its query goes through
/// this type or [`ListParams`], and the response cache keys entries by them
/// ([`canonical_read`], [`canonical_list`]): a parameter the handlers do not read cannot make a
/// new cache entry, and one they read cannot be missing from the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadParams {
    /// The first `locale`, unless empty (then the default locale).
    pub locale: Option<String>,
    pub all_translations: bool,
    pub include: Include,
}

impl ReadParams {
    /// `locale`, `include_all_translations` and `include` (their first occurrence).
    fn parse(pairs: &[(String, String)], errors: &mut ValidationErrors) -> Self {
        let all_translations = match first(pairs, "include_all_translations").map(parse_bool) {
            None => false,
            Some(Some(all)) => all,
            Some(None) => {
                errors.add(
                    "include_all_translations",
                    "The include_all_translations field must be true or false.",
                );
                false
            }
        };
        Self {
            locale: first(pairs, "locale")
                .filter(|l| !l.is_empty())
                .map(str::to_owned),
            all_translations,
            include: first(pairs, "include")
                .map(Include::parse)
                .unwrap_or_default(),
        }
    }

    /// The query with its locale resolved against the project's.
    fn resolve(self, locales: &ContentLocales, errors: &mut ValidationErrors) -> ReadQuery {
        let locale = match locales.resolve(self.locale.as_deref()) {
            Ok(locale) => locale,
            Err(_) => {
                errors.add(
                    "locale",
                    "The selected locale is invalid: it must be one of the project's enabled content locales.",
                );
                locales.default_locale().clone()
            }
        };
        let selection = if self.all_translations {
            LocaleSelection::AllTranslations
        } else {
            LocaleSelection::Flatten(locale.clone())
        };
        ReadQuery {
            locale,
            selection,
            include: self.include,
        }
    }
}

/// What a list asks for, as the query alone says it (see [`ReadParams`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ListParams {
    pub read: ReadParams,
    pub page: u64,
    pub per_page: u64,
    /// Every `filter[…]` pair, in order.
    pub filter: Filter,
    pub sort: Vec<SortKey>,
}

impl ListParams {
    fn parse(pairs: &[(String, String)], errors: &mut ValidationErrors) -> Self {
        let read = ReadParams::parse(pairs, errors);
        let page = parse_bounded(pairs, "page", 1, u64::MAX, errors);
        let per_page = parse_bounded(pairs, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE, errors);
        let filter = match Filter::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            Ok(filter) => filter,
            Err(PolicyError::InvalidFilter { param, message }) => {
                errors.add(param, message);
                Filter::default()
            }
            Err(other) => {
                errors.add("filter", other.to_string());
                Filter::default()
            }
        };
        let sort = match first(pairs, "sort").map(SortKey::parse_list) {
            None => Vec::new(),
            Some(Ok(keys)) => keys,
            Some(Err(message)) => {
                errors.add("sort", message);
                Vec::new()
            }
        };
        Self {
            read,
            page,
            per_page,
            filter,
            sort,
        }
    }
}

/// The parameters of a read request written one way, for the response cache key: the same for
/// every query the handler reads the same (parameters in any order, unknown ones, `true` or
/// `yes`, `page=02`), different whenever it reads them differently (repeated parameters count
/// once, by their first occurrence, as the handler reads them). `None` when the handler would
/// refuse the query (422): such a request is not cached.
#[must_use]
pub fn canonical_read(query: &str) -> Option<String> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let params = ReadParams::parse(&pairs, &mut errors);
    errors.is_empty().then(|| format!("{params:?}"))
}

/// As [`canonical_read`], for a list request (filter conditions keep their order).
#[must_use]
pub fn canonical_list(query: &str) -> Option<String> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let params = ListParams::parse(&pairs, &mut errors);
    errors.is_empty().then(|| format!("{params:?}"))
}

/// The query of a show request.
///
/// # Errors
/// 422 naming each malformed parameter.
pub fn parse_read(query: &str, locales: &ContentLocales) -> Result<ReadQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let read = ReadParams::parse(&pairs, &mut errors).resolve(locales, &mut errors);
    errors.into_result(read).map_err(AppError::Invalid)
}

/// `page` and `per_page`, with their defaults and bounds.
pub(crate) fn parse_page(pairs: &[(String, String)], errors: &mut ValidationErrors) -> (u64, u64) {
    (
        parse_bounded(pairs, "page", 1, u64::MAX, errors),
        parse_bounded(pairs, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE, errors),
    )
}

pub(crate) fn parse_bounded(
    pairs: &[(String, String)],
    key: &str,
    default: u64,
    max: u64,
    errors: &mut ValidationErrors,
) -> u64 {
    let Some(raw) = first(pairs, key) else {
        return default;
    };
    match raw.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => n,
        _ if max == u64::MAX => {
            errors.add(
                key,
                format!("The {key} field must be an integer of at least 1."),
            );
            default
        }
        _ => {
            errors.add(
                key,
                format!("The {key} field must be an integer between 1 and {max}."),
            );
            default
        }
    }
}

/// The query of a list request on `collection`, checked against what `fields` lets the role
/// read: filtering or sorting on a field that does not exist or that the role cannot read gets
/// the same 422, so hidden fields cannot be probed.
///
/// # Errors
/// 422 naming each malformed parameter.
pub fn parse_list(
    query: &str,
    locales: &ContentLocales,
    collection: &Collection,
    fields: &FieldPolicy,
) -> Result<ListQuery, AppError> {
    let pairs = pairs(query);
    let mut errors = ValidationErrors::new();
    crate::nul::refuse_in_query(&pairs, &mut errors);
    let params = ListParams::parse(&pairs, &mut errors);
    let read = params.read.resolve(locales, &mut errors);
    let usable = |field: &FilterField| match field {
        FilterField::Id | FilterField::CreatedAt | FilterField::UpdatedAt => true,
        FilterField::Data(name) => {
            collection.schema().field(name.as_str()).is_some() && fields.can_read(name.as_str())
        }
    };
    for condition in params.filter.conditions() {
        if !usable(&condition.field) {
            errors.add(
                format!("filter[{}]", condition.field),
                format!("The field {} cannot be filtered on.", condition.field),
            );
        } else if let Some(message) = operand_type(collection, &condition.field)
            .and_then(|expected| expected.refuse(&condition.op))
        {
            // Only for a field the role may read: the type of a hidden field is not disclosed.
            errors.add(
                format!("filter[{}][{}]", condition.field, condition.op.name()),
                message,
            );
        }
    }
    for key in &params.sort {
        if !usable(&key.field) {
            errors.add(
                "sort",
                format!("The field {} cannot be sorted on.", key.field),
            );
        }
    }
    errors
        .into_result(ListQuery {
            read,
            page: params.page,
            per_page: params.per_page,
            filter: params.filter,
            sort: params.sort,
        })
        .map_err(AppError::Invalid)
}

/// What a comparison operand must be to be comparable with a field's values: a filter that
/// compares a number field with `abc` can match nothing, and answering it with an empty page
/// hides the caller's mistake. `_contains` compares text (a number's digits, a boolean's
/// `true` / `false`) and `_null` / `_nnull` take a flag, so they are not typed here; text-shaped
/// fields (dates included: ISO 8601 text compared in byte order, so `_gte=2024` is meaningful)
/// take any operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OperandType {
    /// Numbers, file and item ids (and lists of ids, compared element-wise), and `id`.
    Number,
    Boolean,
    /// `created_at` / `updated_at`.
    Instant,
}

impl OperandType {
    fn fits(self, operand: &serde_json::Value) -> bool {
        match self {
            Self::Number => FilterOp::number_operand(operand).is_some(),
            Self::Boolean => FilterOp::bool_operand(operand).is_some(),
            Self::Instant => FilterOp::instant_operand(operand).is_some(),
        }
    }

    /// The message for an operand of `op` that is not of this type; `None` when every operand
    /// fits (each value of an `_in` list is checked alone).
    fn refuse(self, op: &FilterOp) -> Option<String> {
        let (one, many) = match self {
            Self::Number => ("a number", "numbers"),
            Self::Boolean => ("true, false, 1 or 0", "true, false, 1 or 0"),
            Self::Instant => (
                "a date-time (RFC 3339) or a date (YYYY-MM-DD)",
                "date-times (RFC 3339) or dates (YYYY-MM-DD)",
            ),
        };
        match op {
            FilterOp::Eq(v)
            | FilterOp::Neq(v)
            | FilterOp::Gt(v)
            | FilterOp::Gte(v)
            | FilterOp::Lt(v)
            | FilterOp::Lte(v) => (!self.fits(v)).then(|| format!("must be {one}")),
            FilterOp::In(values) => values.iter().find(|v| !self.fits(v)).map(|v| {
                let shown = FilterOp::text_operand(v).unwrap_or_default();
                format!("must list only {many}: \"{shown}\" is not one")
            }),
            FilterOp::Contains(_) | FilterOp::Null | FilterOp::NotNull => None,
        }
    }
}

/// The type comparison operands on `field` must have, if its values have one.
fn operand_type(collection: &Collection, field: &FilterField) -> Option<OperandType> {
    match field {
        FilterField::Id => Some(OperandType::Number),
        FilterField::CreatedAt | FilterField::UpdatedAt => Some(OperandType::Instant),
        FilterField::Data(name) => match collection.schema().field(name.as_str())?.shape() {
            ValueShape::Number
            | ValueShape::FileId
            | ValueShape::ItemId
            | ValueShape::FileIds
            | ValueShape::ItemIds => Some(OperandType::Number),
            ValueShape::Boolean => Some(OperandType::Boolean),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_tokens_are_case_sensitive_and_deduplicated() {
        let include = Include::parse("files, Users,author,,author");
        assert!(include.files);
        assert!(!include.users);
        assert_eq!(include.fields, ["Users", "author"]);
    }

    #[test]
    fn bounded_integers() {
        let mut errors = ValidationErrors::new();
        let p = pairs("page=0&per_page=101&x=1");
        assert_eq!(parse_bounded(&p, "page", 1, u64::MAX, &mut errors), 1);
        assert_eq!(parse_bounded(&p, "per_page", 15, 100, &mut errors), 15);
        assert_eq!(parse_bounded(&p, "missing", 15, 100, &mut errors), 15);
        assert!(errors.get("page").is_some());
        assert!(errors.get("per_page").is_some());
        let mut ok = ValidationErrors::new();
        let p = pairs("page=3&per_page=100");
        assert_eq!(parse_bounded(&p, "page", 1, u64::MAX, &mut ok), 3);
        assert_eq!(parse_bounded(&p, "per_page", 15, 100, &mut ok), 100);
        assert!(ok.is_empty());
    }

    #[test]
    fn per_page_written_as_a_huge_float_is_refused() {
        let mut errors = ValidationErrors::new();
        let p = pairs("per_page=1e99");
        parse_bounded(&p, "per_page", 15, 100, &mut errors);
        assert!(errors.get("per_page").is_some());
    }

    #[test]
    fn invalid_utf8_in_a_query_does_not_fail_decoding() {
        let p = pairs("locale=%FF%FE&filter%5Btitle%5D=%C3");
        assert_eq!(p.len(), 2);
    }
}
