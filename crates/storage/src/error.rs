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
    /// A streamed upload passed its size limit; nothing was kept.
    #[error("the upload is larger than {limit} bytes")]
    TooLarge { limit: u64 },
}

impl StorageError {
    pub(crate) fn corrupt(what: impl std::fmt::Display) -> Self {
        Self::Corrupt(what.to_string())
    }
}
