//! The chat pickers' people: live users and live groups by name, one page at a time.

use sea_orm::{ConnectionTrait, FromQueryResult};
use tracing::instrument;

use crate::StorageError;
use crate::items::Page;
use crate::sql::{Sql, like_pattern};

/// A user or a group in a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonEntry {
    /// `user` or `group`.
    pub kind: &'static str,
    pub id: i64,
    pub name: String,
}

/// Which of users and groups a picker lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    pub users: bool,
    pub groups: bool,
}

fn push_from(sql: &mut Sql, kinds: Kinds, search: Option<&str>) {
    let mut parts = Vec::new();
    if kinds.groups {
        parts.push(("'group'", "\"groups\""));
    }
    if kinds.users {
        parts.push(("'user'", "users"));
    }
    sql.push(" FROM (");
    for (i, (kind, table)) in parts.into_iter().enumerate() {
        if i > 0 {
            sql.push(" UNION ALL ");
        }
        sql.push("SELECT ")
            .push(kind)
            .push(" AS kind, id, name FROM ")
            .push(table)
            .push(" WHERE deleted_at IS NULL");
        if let Some(search) = search {
            sql.push(" AND lower(name) LIKE lower(")
                .bind(like_pattern(search))
                .push(") ESCAPE '\\'");
        }
    }
    sql.push(") people");
}

/// A page of live users and/or groups whose name contains `search` (ignoring case), groups
/// first, then by name.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err, fields(page, per_page))]
pub async fn search_people<C: ConnectionTrait>(
    db: &C,
    kinds: Kinds,
    search: Option<&str>,
    page: u64,
    per_page: u64,
) -> Result<Page<PersonEntry>, StorageError> {
    #[derive(FromQueryResult)]
    struct Row {
        kind: String,
        id: i32,
        name: String,
    }
    if !kinds.users && !kinds.groups {
        return Ok(Page::new(Vec::new(), 0, page, per_page));
    }
    let backend = db.get_database_backend();
    let mut count = Sql::new(backend);
    count.push("SELECT COUNT(*) AS n");
    push_from(&mut count, kinds, search);
    let total = count.count(db).await?;
    let per_page = per_page.max(1);
    let mut sql = Sql::new(backend);
    sql.push("SELECT kind, id, name");
    push_from(&mut sql, kinds, search);
    sql.push(" ORDER BY kind, lower(name), id LIMIT ")
        .bind(i64::try_from(per_page).unwrap_or(i64::MAX))
        .push(" OFFSET ")
        .bind(i64::try_from(page.saturating_sub(1).saturating_mul(per_page)).unwrap_or(i64::MAX));
    let items = sql
        .all_as::<Row, _>(db)
        .await?
        .into_iter()
        .map(|row| PersonEntry {
            kind: if row.kind == "group" { "group" } else { "user" },
            id: i64::from(row.id),
            name: row.name,
        })
        .collect();
    Ok(Page::new(items, total, page.max(1), per_page))
}
