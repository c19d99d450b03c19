//! A tiny SQL builder over sea-orm's [`Statement`]: text plus bound values, with the placeholder
//! style of the backend (`?` on SQLite, `$n` on PostgreSQL), and the few expressions where the
//! two backends' JSON support differs.
//!
//! Raw SQL (instead of the entity query builder) is used where the query is dynamic JSON work —
//! compiled filters, typed sorting, batched link loading, the recursive folder CTE — because
//! those are exactly the places where the backends differ and the SQL must be visible to review.

use sea_orm::{
    ConnectionTrait, DbBackend, FromQueryResult, QueryResult, SqliteTransactionMode, Statement,
    TransactionOptions, TransactionTrait, Value,
};
use serde_json::{Map, Value as Json};
use time::OffsetDateTime;

use crate::StorageError;

/// SQL text under construction with its bound values.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    backend: DbBackend,
    text: String,
    values: Vec<Value>,
}

impl Sql {
    pub(crate) fn new(backend: DbBackend) -> Self {
        Self {
            backend,
            text: String::with_capacity(256),
            values: Vec::new(),
        }
    }

    pub(crate) fn backend(&self) -> DbBackend {
        self.backend
    }

    pub(crate) fn is_postgres(&self) -> bool {
        self.backend == DbBackend::Postgres
    }

    /// Appends literal SQL. Never pass request data here: bind it.
    pub(crate) fn push(&mut self, sql: &str) -> &mut Self {
        self.text.push_str(sql);
        self
    }

    /// Appends a placeholder bound to `value`.
    pub(crate) fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        self.values.push(value.into());
        if self.is_postgres() {
            self.text.push('$');
            self.text.push_str(&self.values.len().to_string());
        } else {
            self.text.push('?');
        }
        self
    }

    /// Appends `(?, ?, …)` for a non-empty list of values.
    pub(crate) fn bind_list<V: Into<Value>>(&mut self, values: impl IntoIterator<Item = V>) {
        self.push("(");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.bind(v);
        }
        self.push(")");
    }

    /// Appends a placeholder for a JSON document, converted to the stored representation: JSONB
    /// on both backends (binary JSONB on SQLite is what makes filters over `data` fast there).
    pub(crate) fn bind_json(&mut self, value: &Json) -> &mut Self {
        let text = value.to_string();
        if self.is_postgres() {
            self.push("CAST(").bind(text).push(" AS jsonb)")
        } else {
            self.push("jsonb(").bind(text).push(")")
        }
    }

    pub(crate) fn statement(self) -> Statement {
        Statement::from_sql_and_values(self.backend, self.text, self.values)
    }

    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) async fn execute<C: ConnectionTrait>(self, db: &C) -> Result<u64, StorageError> {
        Ok(db.execute_raw(self.statement()).await?.rows_affected())
    }

    pub(crate) async fn all<C: ConnectionTrait>(
        self,
        db: &C,
    ) -> Result<Vec<QueryResult>, StorageError> {
        Ok(db.query_all_raw(self.statement()).await?)
    }

    pub(crate) async fn one<C: ConnectionTrait>(
        self,
        db: &C,
    ) -> Result<Option<QueryResult>, StorageError> {
        Ok(db.query_one_raw(self.statement()).await?)
    }

    /// Runs the query and reads every row into the typed row struct `T` (its fields named as the
    /// selected columns), so a renamed or retyped column fails in one place.
    pub(crate) async fn all_as<T: FromQueryResult, C: ConnectionTrait>(
        self,
        db: &C,
    ) -> Result<Vec<T>, StorageError> {
        self.all(db)
            .await?
            .iter()
            .map(|row| Ok(T::from_query_result(row, "")?))
            .collect()
    }

    /// As [`Sql::all_as`], for at most one row.
    pub(crate) async fn one_as<T: FromQueryResult, C: ConnectionTrait>(
        self,
        db: &C,
    ) -> Result<Option<T>, StorageError> {
        self.one(db)
            .await?
            .map(|row| T::from_query_result(&row, ""))
            .transpose()
            .map_err(StorageError::from)
    }

    /// Runs a `SELECT COUNT(*) AS n …` and gives the count (0 when no row comes back).
    pub(crate) async fn count<C: ConnectionTrait>(self, db: &C) -> Result<u64, StorageError> {
        let n = self.one_as::<CountRow, _>(db).await?.map_or(0, |row| row.n);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Runs an `INSERT … RETURNING id` and gives the new id.
    pub(crate) async fn insert_returning_id<C: ConnectionTrait>(
        mut self,
        db: &C,
    ) -> Result<i64, StorageError> {
        self.push(" RETURNING id");
        let row = self
            .one_as::<IdRow, _>(db)
            .await?
            .ok_or_else(|| StorageError::corrupt("INSERT returned no row"))?;
        Ok(i64::from(row.id))
    }
}

/// The row of a `SELECT COUNT(*) AS n`: BIGINT on PostgreSQL, INTEGER on SQLite, both i64.
#[derive(FromQueryResult)]
pub(crate) struct CountRow {
    pub(crate) n: i64,
}

/// The row of an `INSERT … RETURNING id` or a `SELECT id`: ids are 32-bit `INTEGER` columns
/// (PostgreSQL's driver refuses to decode INT4 as i64, so they are read as i32 and widened).
#[derive(FromQueryResult)]
pub(crate) struct IdRow {
    pub(crate) id: i32,
}

/// Opens the transaction of a read-modify-write. On SQLite it takes the write lock at `BEGIN`
/// (IMMEDIATE): a deferred transaction that read first and then writes fails with SQLITE_BUSY when
/// another connection wrote in between, instead of waiting its turn (busy timeout). Inside an
/// enclosing transaction this is a savepoint and the mode does not apply (the enclosing one holds
/// or takes the lock). PostgreSQL callers lock rows themselves (`FOR UPDATE`, advisory locks).
///
/// Every write transaction of this crate opens here. On the pool it is always a real top-level
/// `BEGIN IMMEDIATE`: the driver would silently make it a `SAVEPOINT` on a connection it
/// believes to be inside a transaction, and the pool never hands out such a connection (see
/// `pool`, security review R8).
pub(crate) async fn begin_write<C: TransactionTrait>(
    db: &C,
) -> Result<C::Transaction, StorageError> {
    let options = TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    };
    Ok(db.begin_with_options(options).await?)
}

/// The SQL expression that reads a JSON column back as JSON text.
pub(crate) fn json_out(backend: DbBackend, column: &str) -> String {
    if backend == DbBackend::Postgres {
        format!("{column}::text")
    } else {
        format!("json({column})")
    }
}

/// A JSON column selected through [`json_out`] into a typed row, parsed (`NULL` is JSON null).
pub(crate) fn parse_json(text: Option<&str>) -> Result<Json, StorageError> {
    match text {
        None => Ok(Json::Null),
        Some(text) => serde_json::from_str(text).map_err(StorageError::corrupt),
    }
}

/// As [`parse_json`], for a column that holds an object (`NULL` is the empty object).
pub(crate) fn parse_object(
    text: Option<&str>,
    col: &str,
) -> Result<Map<String, Json>, StorageError> {
    match parse_json(text)? {
        Json::Object(map) => Ok(map),
        Json::Null => Ok(Map::new()),
        other => Err(StorageError::corrupt(format!(
            "{col} is not an object: {other}"
        ))),
    }
}

/// Whether a row with this id exists in `table` (a constant of the calling module, never input).
pub(crate) async fn row_exists<C: ConnectionTrait>(
    db: &C,
    table: &str,
    id: i32,
) -> Result<bool, StorageError> {
    let mut sql = Sql::new(db.get_database_backend());
    sql.push("SELECT id FROM ")
        .push(table)
        .push(" WHERE id = ")
        .bind(id);
    Ok(sql.one_as::<IdRow, _>(db).await?.is_some())
}

/// `%term%` for `LIKE … ESCAPE '\'`, with the term's own wildcards escaped so a search for
/// `50%` finds that text and not everything starting with `50`.
pub(crate) fn like_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for c in term.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Ids the caller hands in are i64; the columns are 32-bit. An id outside that range cannot
/// exist, so it maps to "not found" instead of an overflow error from the database.
pub(crate) fn id_param(id: i64) -> Option<i32> {
    i32::try_from(id).ok()
}

/// The current time, truncated to microseconds: both backends store microseconds, so a value
/// returned from a write equals the value read back later.
pub(crate) fn now() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(now.nanosecond() / 1000 * 1000)
        .unwrap_or(now)
}

/// `t` as stored: in UTC, to the microsecond. SQLite compares timestamps as text, which orders
/// them correctly only when every one is written in the same offset and precision.
pub(crate) fn stamp(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.checked_to_offset(time::UtcOffset::UTC).unwrap_or(t);
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000)
        .unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_follow_the_backend() {
        let mut pg = Sql::new(DbBackend::Postgres);
        pg.push("a = ").bind(1).push(" AND b IN ");
        pg.bind_list([2, 3]);
        assert_eq!(pg.text(), "a = $1 AND b IN ($2, $3)");
        let mut lite = Sql::new(DbBackend::Sqlite);
        lite.push("a = ").bind(1).push(" AND b IN ");
        lite.bind_list([2, 3]);
        assert_eq!(lite.text(), "a = ? AND b IN (?, ?)");
    }

    #[test]
    fn json_is_bound_as_jsonb_on_both_backends() {
        let mut pg = Sql::new(DbBackend::Postgres);
        pg.bind_json(&serde_json::json!({"a": 1}));
        assert_eq!(pg.text(), "CAST($1 AS jsonb)");
        let mut lite = Sql::new(DbBackend::Sqlite);
        lite.bind_json(&serde_json::json!({"a": 1}));
        assert_eq!(lite.text(), "jsonb(?)");
    }

    #[test]
    fn ids_outside_i32_are_not_found_not_errors() {
        assert_eq!(id_param(7), Some(7));
        assert_eq!(id_param(i64::MAX), None);
    }
}
