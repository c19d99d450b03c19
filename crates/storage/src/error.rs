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
    /// A query failed for a reason the caller cannot fix (connection lost, constraint the model
    /// did not expect, …).
    #[error("database error")]
    Db(#[from] DbErr),
    /// The row asked for does not exist (or is soft-deleted, or outside the caller's filter).
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The write does not validate: every field's messages, as the domain crate reported them
    /// (or a `unique` collision found by the database). The HTTP layer answers 422.
    #[error("the given data was invalid")]
    Invalid(vellum_domain::ValidationErrors),
    /// The item (as stored or as it would be after the write) falls outside the role's item
    /// filter carried by the write capability. The HTTP layer answers 403; nothing was written.
    #[error("the item is outside the role's item filter")]
    OutsideItemFilter,
    /// The file or folder a write names is effective-private and the write's capability does
    /// not reach private files. The HTTP layer answers as a show of it would (403); nothing was
    /// written.
    #[error("the file is private and the role may not read private files")]
    PrivateFile,
    /// A write would break a rule of the model (a name already used, a parent that is not a
    /// folder, …); the message is safe to show to the caller.
    #[error("{0}")]
    Conflict(String),
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

impl StorageError {
    pub(crate) fn corrupt(what: impl std::fmt::Display) -> Self {
        Self::Corrupt(what.to_string())
    }
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
pub fn db_unavailable(err: &DbErr) -> bool {
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
pub fn db_storage_failure(err: &DbErr) -> bool {
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
        const IOERR: i64 = 10;
        const FULL: i64 = 13;
        const CANTOPEN: i64 = 14;
        let code = sea_orm::sqlx::error::DatabaseError::code(lite)
            .and_then(|c| c.parse::<i64>().ok())
            .unwrap_or_default();
        matches!(code & 0xff, IOERR | FULL | CANTOPEN)
    } else if let Some(pg) = db.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>() {
        matches!(pg.code(), "53100" | "58000" | "58030")
    } else {
        false
    }
}

/// SQLite's primary result codes that mean "the database cannot do this now".
fn sqlite_unavailable(err: &sea_orm::sqlx::sqlite::SqliteError) -> bool {
    const BUSY: i64 = 5;
    const LOCKED: i64 = 6;
    const IOERR: i64 = 10;
    const FULL: i64 = 13;
    const CANTOPEN: i64 = 14;
    // The driver turns on extended result codes: the primary code is the low byte.
    let code = sea_orm::sqlx::error::DatabaseError::code(err)
        .and_then(|c| c.parse::<i64>().ok())
        .unwrap_or_default();
    matches!(code & 0xff, BUSY | LOCKED | IOERR | FULL | CANTOPEN)
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
