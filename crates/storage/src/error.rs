//! The storage crate's one error enum. The HTTP crate maps each variant to a status in one place;
//! nothing here knows about HTTP.

use sea_orm::DbErr;

/// Everything that can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The database could not be reached or the URL was not understood. The URL itself is left out
    /// of the message on purpose: it may carry a password.
    #[error("could not connect to the database")]
    Connect(#[source] DbErr),
    /// Applying the schema failed.
    #[error("could not migrate the database")]
    Migrate(#[source] DbErr),
    /// The database cannot do this now (unreachable, connection lost, disk full, I/O error,
    /// locked past the busy timeout): an outage the client may retry. Decided here, when the
    /// driver's error is converted (`From<DbErr>`), so no upper layer reads sea-orm's variants.
    #[error("database error")]
    Unavailable(#[source] DbErr),
    /// A query failed for a reason neither the caller nor a retry can fix (a constraint the
    /// model did not expect, a bad query): a bug or a broken schema.
    #[error("database error")]
    Db(#[source] DbErr),
    /// The row asked for does not exist (or is soft-deleted, or outside the caller's filter).
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The write does not validate: every field's messages, as the domain crate reported them
    /// (or a `unique` collision found by the database). The HTTP layer answers 422.
    #[error("the given data was invalid")]
    Invalid(vellum_domain::ValidationErrors),
    /// The item (as stored or as it would be after the write) falls outside the role's item
    /// filter carried by the write capability. The HTTP layer answers 403; nothing was written.
    #[error("the item is outside the role's item filter on {collection}")]
    OutsideItemFilter {
        collection: vellum_domain::CollectionSlug,
    },
    /// The file or folder a write names is effective-private and the write's capability does
    /// not reach private files. The HTTP layer answers as a show of it would (403); nothing was
    /// written.
    #[error("the file is private and the role may not read private files")]
    PrivateFile,
    /// A write would break a rule of the model (a name already used, a parent that is not a
    /// folder, …); the message is safe to show to the caller. `field` names what the conflict is
    /// about as the caller wrote it (`"data"`: the written document as a whole), so the HTTP
    /// layer keys its 422 by it without guessing.
    #[error("{message}")]
    Conflict { field: String, message: String },
    /// A stored value could not be read back (corrupt JSON, an unknown field type). Never caused
    /// by a request.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The blob store failed.
    #[error("blob store error during {op}")]
    Blob {
        op: &'static str,
        #[source]
        source: object_store::Error,
    },
    /// Local I/O (temporary files) failed.
    #[error("i/o error during {op}")]
    Io {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Requests are failing on the database's storage (a full disk, I/O errors): the readiness
    /// check's answer while they do, whatever its own small write does.
    #[error("requests are failing on the database's storage (full disk or I/O errors)")]
    StorageFailing,
    /// A streamed upload passed its size limit; nothing was kept.
    #[error("the upload is larger than {limit} bytes")]
    TooLarge { limit: u64 },
}

/// Where a conflict is about the written document as a whole rather than one named field.
pub const DATA_FIELD: &str = "data";

impl From<DbErr> for StorageError {
    /// Classifies the driver's error once: an outage ([`StorageError::Unavailable`]) or an error
    /// of the query ([`StorageError::Db`]).
    fn from(err: DbErr) -> Self {
        if db_unavailable(&err) {
            Self::Unavailable(err)
        } else {
            Self::Db(err)
        }
    }
}

impl StorageError {
    pub(crate) fn corrupt(what: impl std::fmt::Display) -> Self {
        Self::Corrupt(what.to_string())
    }

    /// A conflict about the written document as a whole ([`DATA_FIELD`]).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::conflict_on(DATA_FIELD, message)
    }

    /// A conflict about the named field.
    pub fn conflict_on(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Whether this is a database outage the client may retry (see [`StorageError::Unavailable`]).
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    /// Whether this error says the database's storage failed (a full disk, an I/O error, a file
    /// that cannot be opened): the outages a write probe can miss, since a probe's one page may
    /// still fit where a real write does not. Busy and locked databases, pool time-outs and
    /// lost connections are not storage failures.
    #[must_use]
    pub fn is_storage_failure(&self) -> bool {
        matches!(self, Self::Unavailable(err) if db_storage_failure(err))
    }

    /// Whether the database refused the write under a unique index.
    pub(crate) fn is_unique_violation(&self) -> bool {
        matches!(self, Self::Db(e)
            if matches!(e.sql_err(), Some(sea_orm::SqlErr::UniqueConstraintViolation(_))))
    }
}

/// Refuses an empty name or one with leading or trailing spaces, naming what it names.
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), StorageError> {
    if name.trim().is_empty() || name.trim() != name {
        return Err(StorageError::conflict(format!(
            "a {what} name must be non-empty without leading or trailing spaces"
        )));
    }
    Ok(())
}

/// Whether a database error is an outage the client may retry rather than a bug or a bad query:
/// the pool could not hand out a connection, the connection broke, or the database could not
/// do the work right now. On SQLite: the disk is full (`SQLITE_FULL`), an I/O error
/// (`SQLITE_IOERR` and its extended codes), the database stayed locked past the busy timeout
/// (`SQLITE_BUSY`, `SQLITE_LOCKED`), the file cannot be opened (`SQLITE_CANTOPEN`). On
/// PostgreSQL, by SQLSTATE: connection exceptions (class `08`), insufficient resources (class
/// `53`: `53100` disk full, out of memory, too many connections), I/O and system errors
/// (`58000`, `58030`), and a server shutting down or starting (`57P01`–`57P03`).
///
/// Constraint violations, syntax errors and the like stay errors of the query: retrying them
/// cannot help.
#[must_use]
pub(crate) fn db_unavailable(err: &DbErr) -> bool {
    use sea_orm::RuntimeErr;
    use sea_orm::sqlx::Error as Sqlx;
    let sqlx = match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => return true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => e,
        _ => return false,
    };
    match sqlx.as_ref() {
        Sqlx::Io(_) | Sqlx::PoolTimedOut | Sqlx::PoolClosed | Sqlx::WorkerCrashed => true,
        Sqlx::Database(db) => {
            if let Some(lite) = db.try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>() {
                sqlite_unavailable(lite)
            } else if let Some(pg) =
                db.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>()
            {
                postgres_unavailable(pg.code())
            } else {
                false
            }
        }
        _ => false,
    }
}

/// Whether `err` says the database's storage failed (a full disk, an I/O error, a file that
/// cannot be opened): the subset of [`db_unavailable`] that a write probe can miss, since a
/// probe's one page may still fit where a real write does not. Busy and locked databases, pool
/// time-outs and lost connections are not storage failures.
#[must_use]
pub(crate) fn db_storage_failure(err: &DbErr) -> bool {
    use sea_orm::RuntimeErr;
    use sea_orm::sqlx::Error as Sqlx;
    let (DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e))) = err
    else {
        return false;
    };
    let Sqlx::Database(db) = e.as_ref() else {
        return false;
    };
    if let Some(lite) = db.try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>() {
        matches!(
            sqlite_primary_code(lite),
            SQLITE_IOERR | SQLITE_FULL | SQLITE_CANTOPEN
        )
    } else if let Some(pg) = db.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>() {
        matches!(pg.code(), "53100" | "58000" | "58030")
    } else {
        false
    }
}

const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_IOERR: i64 = 10;
const SQLITE_FULL: i64 = 13;
const SQLITE_CANTOPEN: i64 = 14;

/// The primary result code of a SQLite error: the driver turns on extended result codes, whose
/// low byte is the primary one.
fn sqlite_primary_code(err: &sea_orm::sqlx::sqlite::SqliteError) -> i64 {
    sea_orm::sqlx::error::DatabaseError::code(err)
        .and_then(|c| c.parse::<i64>().ok())
        .unwrap_or_default()
        & 0xff
}

/// SQLite's primary result codes that mean "the database cannot do this now".
fn sqlite_unavailable(err: &sea_orm::sqlx::sqlite::SqliteError) -> bool {
    matches!(
        sqlite_primary_code(err),
        SQLITE_BUSY | SQLITE_LOCKED | SQLITE_IOERR | SQLITE_FULL | SQLITE_CANTOPEN
    )
}

/// PostgreSQL SQLSTATEs that mean "the database cannot do this now".
fn postgres_unavailable(sqlstate: &str) -> bool {
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || matches!(sqlstate, "58000" | "58030" | "57P01" | "57P02" | "57P03")
}

#[cfg(test)]
mod tests {
    use super::postgres_unavailable;

    #[test]
    fn postgres_outages_by_sqlstate() {
        for outage in [
            "08006", "08001", "53100", "53200", "53300", "58030", "57P01",
        ] {
            assert!(postgres_unavailable(outage), "{outage}");
        }
        for query_error in ["23505", "42P01", "22P02", "40001", "58P01"] {
            assert!(!postgres_unavailable(query_error), "{query_error}");
        }
    }
}
