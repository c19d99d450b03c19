//! Pages of the admin app's lists: `page` (at least 1) and `per_page` (1 to 100, default 15)
//! from the query string, as the public API reads them, and the `{"data", "meta"}` envelope.

use serde::Serialize;
use vellum_domain::ValidationErrors;
use vellum_storage::items::Page;

use crate::error::AppError;
use crate::items::PageMeta;
use crate::query::{pairs, parse_page};

/// Which page of a list to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub page: u64,
    pub per_page: u64,
}

impl Paging {
    /// `page` and `per_page` of a query string; other parameters are ignored.
    ///
    /// # Errors
    /// [`AppError::Invalid`] naming each malformed or out-of-range parameter.
    pub fn parse(query: &str) -> Result<Self, AppError> {
        let mut errors = ValidationErrors::new();
        let paging = Self::from_pairs(&pairs(query), &mut errors);
        errors.into_result(paging).map_err(AppError::Invalid)
    }

    /// As [`Paging::parse`], over decoded pairs, recording problems in `errors`.
    pub fn from_pairs(pairs: &[(String, String)], errors: &mut ValidationErrors) -> Self {
        let (page, per_page) = parse_page(pairs, errors);
        Self { page, per_page }
    }
}

/// A page of a list: `{"data": [...], "meta": {current_page, last_page, per_page, total}}`.
#[derive(Debug, Clone, Serialize)]
pub struct Paginated<T> {
    pub data: Vec<T>,
    pub meta: PageMeta,
}

impl<T> Paginated<T> {
    /// The stored page with each entry turned into its resource.
    pub fn from_page<S>(page: Page<S>, resource: impl FnMut(S) -> T) -> Self {
        Self {
            meta: PageMeta {
                current_page: page.current_page,
                last_page: page.last_page,
                per_page: page.per_page,
                total: page.total,
            },
            data: page.items.into_iter().map(resource).collect(),
        }
    }
}
