//! The admin dashboard's counts: one query of four `COUNT(*)`s, each over one table (items and
//! files through their `deleted_at` indexes), so the dashboard costs the same whatever a request
//! asks.

use sea_orm::{ConnectionTrait, FromQueryResult};
use tracing::instrument;

use crate::StorageError;
use crate::sql::Sql;

/// What the dashboard shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub collections: u64,
    /// Items not soft-deleted.
    pub items: u64,
    /// Files (not folders) not soft-deleted.
    pub files: u64,
    /// Users not soft-deleted.
    pub users: u64,
}

#[derive(FromQueryResult)]
struct CountsRow {
    collections: i64,
    items: i64,
    files: i64,
    users: i64,
}

/// The dashboard's counts, in one query.
///
/// # Errors
/// A database error.
#[instrument(skip_all, err)]
pub async fn counts<C: ConnectionTrait>(db: &C) -> Result<Counts, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push(
        "SELECT (SELECT COUNT(*) FROM collections) AS collections, \
         (SELECT COUNT(*) FROM items WHERE deleted_at IS NULL) AS items, \
         (SELECT COUNT(*) FROM files WHERE deleted_at IS NULL AND type = 'file') AS files, \
         (SELECT COUNT(*) FROM users WHERE deleted_at IS NULL) AS users",
    );
    let row = sql.one_as::<CountsRow, _>(db).await?.unwrap_or(CountsRow {
        collections: 0,
        items: 0,
        files: 0,
        users: 0,
    });
    let n = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(Counts {
        collections: n(row.collections),
        items: n(row.items),
        files: n(row.files),
        users: n(row.users),
    })
}
