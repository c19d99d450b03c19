//! What the admin lists of soft-deletable things (users, groups) share: which rows the
//! `trashed` parameter shows, a `contains` search and the page asked for.

use crate::sql::{Sql, like_pattern};

/// Which rows a list shows by their soft-delete state (`trashed` query parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Trashed {
    /// Only rows that are not deleted (no `trashed` parameter).
    #[default]
    Without,
    /// Deleted and live rows (`trashed=with`).
    With,
    /// Only deleted rows (`trashed=only`).
    Only,
}

impl Trashed {
    /// The parameter's value: `with`, `only`; anything else is `None`.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "with" => Some(Self::With),
            "only" => Some(Self::Only),
            _ => None,
        }
    }

    /// Appends ` AND <column> IS [NOT] NULL` as this filter asks (nothing for `With`).
    pub(crate) fn push(self, sql: &mut Sql, column: &str) {
        match self {
            Self::Without => {
                sql.push(" AND ").push(column).push(" IS NULL");
            }
            Self::Only => {
                sql.push(" AND ").push(column).push(" IS NOT NULL");
            }
            Self::With => {}
        }
    }
}

/// One page of an admin list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Rows whose name (or email, for users) contains this text, compared case-insensitively;
    /// `%` and `_` are taken literally.
    pub search: Option<String>,
    pub trashed: Trashed,
    /// From 1.
    pub page: u64,
    /// 1 to 100 (the caller bounds it).
    pub per_page: u64,
}

impl ListQuery {
    /// Appends ` AND (lower(c1) LIKE lower(?) ESCAPE '\' OR …)` over `columns` when searching.
    pub(crate) fn push_search(&self, sql: &mut Sql, columns: &[&str]) {
        let Some(term) = self.search.as_deref().filter(|s| !s.is_empty()) else {
            return;
        };
        let pattern = like_pattern(term);
        sql.push(" AND (");
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                sql.push(" OR ");
            }
            sql.push("lower(")
                .push(column)
                .push(") LIKE lower(")
                .bind(pattern.clone())
                .push(") ESCAPE '\\'");
        }
        sql.push(")");
    }

    /// Appends ` LIMIT ? OFFSET ?` for this page.
    pub(crate) fn push_page(&self, sql: &mut Sql) {
        let per_page = self.per_page.max(1);
        let offset = self.page.saturating_sub(1).saturating_mul(per_page);
        sql.push(" LIMIT ")
            .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
            .push(" OFFSET ")
            .bind(i64::try_from(offset).unwrap_or(i64::MAX));
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::DbBackend;

    use super::*;

    #[test]
    fn trashed_values() {
        assert_eq!(Trashed::parse("with"), Some(Trashed::With));
        assert_eq!(Trashed::parse("only"), Some(Trashed::Only));
        assert_eq!(Trashed::parse("all"), None);
        let mut sql = Sql::new(DbBackend::Sqlite);
        Trashed::Only.push(&mut sql, "u.deleted_at");
        assert_eq!(sql.text(), " AND u.deleted_at IS NOT NULL");
    }

    #[test]
    fn search_and_page() {
        let query = ListQuery {
            search: Some("a%".to_owned()),
            page: 3,
            per_page: 10,
            ..ListQuery::default()
        };
        let mut sql = Sql::new(DbBackend::Postgres);
        query.push_search(&mut sql, &["u.name", "u.email"]);
        query.push_page(&mut sql);
        assert_eq!(
            sql.text(),
            " AND (lower(u.name) LIKE lower($1) ESCAPE '\\' OR lower(u.email) LIKE lower($2) \
             ESCAPE '\\') LIMIT $3 OFFSET $4"
        );
    }
}
