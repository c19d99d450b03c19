//! The application layer's one error enum: what a use case can answer besides its result. Every
//! surface maps it in one place (the HTTP crate to statuses and the contract's envelopes); this
//! crate knows no status codes.

use vellum_domain::ValidationErrors;
use vellum_policy::{AuthRejection, Decision, Reason, Visibility};
use vellum_storage::StorageError;

/// Why a use case did not produce its result.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Unknown collection, item or file (or one the role's item filter hides).
    #[error("not found")]
    NotFound,
    /// An admin request without a valid session (none, forged, expired or ended).
    #[error("unauthenticated")]
    Unauthenticated,
    /// Too many attempts (sign-in failures, mails asked for): retry after this many seconds.
    #[error("throttled: retry after {retry_after} s")]
    Throttled { retry_after: u64 },
    /// A quota other than the request rate is used up (the day's AI prompts): its own message,
    /// retry after this many seconds.
    #[error("quota reached: {message}")]
    QuotaReached {
        message: &'static str,
        retry_after: u64,
    },
    /// What the request needs is not configured on this server (the AI provider): a message
    /// the operator's users can act on.
    #[error("not configured: {0}")]
    NotConfigured(&'static str),
    /// The policy said no; the rule that did is kept for logs and `explain`, never shown.
    #[error("forbidden: {0:?}")]
    Forbidden(Reason),
    /// The origin gate, the key or its IP allowlist refused the request.
    #[error("rejected: {}", .0.message())]
    Rejected(AuthRejection),
    /// A signed transform URL whose signature does not verify (or half a signature: `v`
    /// without `s`, `s` without `v`).
    #[error("invalid signature")]
    InvalidSignature,
    /// Bad input: every problem keyed by field or query parameter.
    #[error("the given data was invalid")]
    Invalid(ValidationErrors),
    /// A dependency (the database, the blob store) is unavailable; the caller may retry.
    #[error("service unavailable")]
    Unavailable(#[source] StorageError),
    /// A bounded resource (the transform budget) is busy: retry after this many seconds.
    #[error("busy: retry after {retry_after} s")]
    Busy { retry_after: u64 },
    /// Anything else: a bug or a broken dependency. Never shown to a client.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl AppError {
    /// A validation failure with one message for one field or parameter.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = ValidationErrors::new();
        errors.add(field, message);
        Self::Invalid(errors)
    }

    pub fn internal(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Internal(Box::new(err))
    }

    /// Whether this is a dependency outage rather than a bug (a computation shared between
    /// requests reports it as such).
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

impl From<Decision> for AppError {
    fn from(decision: Decision) -> Self {
        Self::Forbidden(decision.reason)
    }
}

impl From<ValidationErrors> for AppError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Invalid(errors)
    }
}

impl From<StorageError> for AppError {
    fn from(err: StorageError) -> Self {
        match err {
            StorageError::NotFound { .. } => Self::NotFound,
            StorageError::Invalid(errors) => Self::Invalid(errors),
            StorageError::OutsideItemFilter { collection } => {
                Self::Forbidden(Reason::ItemFilter { collection })
            }
            StorageError::PrivateFile => Self::Forbidden(Reason::FileVisibility {
                visibility: Visibility::Private,
            }),
            StorageError::TooLarge { limit } => Self::invalid(
                "file",
                format!("The file may not be larger than {limit} bytes."),
            ),
            StorageError::Conflict { field, message } => Self::invalid(field, message),
            // The database or the blob store (a bucket, a disk) failing is a dependency outage:
            // retryable, not a bug (a missing blob is `NotFound` above).
            StorageError::Unavailable(_)
            | StorageError::Connect(_)
            | StorageError::Blob { .. }
            | StorageError::StorageFailing => Self::Unavailable(err),
            StorageError::Migrate(_)
            | StorageError::Db(_)
            | StorageError::Corrupt(_)
            | StorageError::Io { .. } => Self::internal(err),
        }
    }
}
