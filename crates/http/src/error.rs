//! The one place where errors become HTTP responses.
//!
//! Every lower-layer error is matched exhaustively (no catch-all arm), so a new variant cannot
//! silently turn into the wrong status. Bodies follow the operator contract's envelopes; 5xx
//! bodies are generic and the cause chain goes to the log, inside the request's span (which
//! carries the request id).

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;
use vellum_domain::ValidationErrors;
use vellum_policy::{AuthRejection, Decision};
use vellum_storage::StorageError;

/// An error answered to an API client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Unknown collection, item or file (or one the role's item filter hides).
    #[error("not found")]
    NotFound,
    /// A missing grant, a field rule or an item filter; the reason is logged, never shown.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The origin gate, the key or its IP allowlist refused the request.
    #[error("rejected: {}", .0.message())]
    Rejected(AuthRejection),
    /// Bad input: every problem keyed by field or query parameter.
    #[error("the given data was invalid")]
    Invalid(ValidationErrors),
    /// The request body is larger than the configured limit.
    #[error("the request body is too large")]
    PayloadTooLarge,
    /// A dependency (the database, the blob store) is unreachable; the client may retry.
    #[error("service unavailable")]
    Unavailable(#[source] StorageError),
    /// The handler did not finish within the request timeout (a hung dependency).
    #[error("the request timed out")]
    TimedOut,
    /// The client sent its body too slowly (nothing within the body read timeout, or the
    /// request timeout ended while the handler waited for it).
    #[error("the request body was not received in time")]
    BodyTimedOut,
    /// Anything else: a bug or a broken dependency. Never shown to the client.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A 422 with one message for one field or parameter.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut errors = ValidationErrors::new();
        errors.add(field, message);
        Self::Invalid(errors)
    }

    pub fn internal(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Internal(Box::new(err))
    }
}

impl From<Decision> for ApiError {
    fn from(decision: Decision) -> Self {
        Self::Forbidden(format!("{:?}", decision.reason))
    }
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> Self {
        match err {
            StorageError::NotFound { .. } => Self::NotFound,
            StorageError::Invalid(errors) => Self::Invalid(errors),
            StorageError::OutsideItemFilter => {
                Self::Forbidden("the item would fall outside the role's item filter".to_owned())
            }
            StorageError::PrivateFile => {
                Self::Forbidden("the file is private and the role lacks read_private".to_owned())
            }
            StorageError::TooLarge { limit } => Self::invalid(
                "file",
                format!("The file may not be larger than {limit} bytes."),
            ),
            StorageError::Conflict { field, message } => Self::invalid(field, message),
            // The blob store (a bucket, a disk) failing is a dependency outage, like the
            // database's: retryable, not a bug (a missing blob is `NotFound` above).
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

/// The `Retry-After` of a 503 (seconds): a dependency outage (a full disk freed, a database
/// restarted, a lock released) is not over in less, and clients that honour the header do not
/// turn an outage into a retry storm.
pub(crate) const UNAVAILABLE_RETRY_AFTER: u64 = 5;

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::Rejected(rejection) if rejection.is_unauthenticated() => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::Rejected(_) => StatusCode::FORBIDDEN,
            Self::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimedOut => StatusCode::REQUEST_TIMEOUT,
            Self::Unavailable(_) | Self::TimedOut => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            Self::NotFound => json!({"message": "Not found."}),
            Self::Forbidden(reason) => {
                tracing::info!(%reason, "forbidden");
                json!({"message": "Forbidden."})
            }
            Self::Rejected(rejection) => json!({"message": rejection.message()}),
            Self::Invalid(errors) => {
                let errors: BTreeMap<String, Vec<String>> = errors.clone().into_map();
                json!({"message": "The given data was invalid.", "errors": errors})
            }
            Self::PayloadTooLarge => json!({"message": "The request body is too large."}),
            Self::BodyTimedOut => {
                tracing::info!("the client sent its request body too slowly");
                json!({"message": "The request body was not received in time."})
            }
            Self::Unavailable(cause) => {
                tracing::error!(error = %error_chain(cause), "dependency unavailable");
                json!({"message": "Service unavailable."})
            }
            Self::TimedOut => {
                tracing::error!("request timed out: a dependency is hanging");
                json!({"message": "Service unavailable."})
            }
            Self::Internal(cause) => {
                tracing::error!(error = %error_chain(cause.as_ref()), "internal error");
                json!({"message": "Server error."})
            }
        };
        let mut res = HttpResponse::build(self.status_code());
        res.insert_header(ContentType::json());
        if matches!(self, Self::Unavailable(_) | Self::TimedOut) {
            res.insert_header((
                actix_web::http::header::RETRY_AFTER,
                UNAVAILABLE_RETRY_AFTER.to_string(),
            ));
        }
        if matches!(self, Self::BodyTimedOut | Self::PayloadTooLarge) {
            // The rest of the body may still be on its way: the connection cannot be reused.
            // Without this a chunked body refused at the limit kept the connection open until
            // the keep-alive timer (5 s), draining what the client still sent.
            res.force_close();
        }
        res.body(body.to_string())
    }
}

/// `outer: cause: root cause`, for logs.
pub(crate) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use actix_web::body::MessageBody;
    use sea_orm::DbErr;

    use super::*;

    /// A real error of SQLite's: `sql` on an in-memory database whose pages are capped.
    async fn sqlite_error(sql: &str) -> DbErr {
        use sea_orm::ConnectionTrait;
        let db = vellum_storage::connect("sqlite::memory:").await.unwrap();
        db.execute_unprepared("CREATE TABLE t (body BLOB); PRAGMA max_page_count = 3")
            .await
            .unwrap();
        db.execute_unprepared(sql).await.unwrap_err()
    }

    fn answer(err: StorageError) -> (StatusCode, Option<String>, String) {
        let res = ApiError::from(err).error_response();
        let retry = res
            .headers()
            .get(actix_web::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let status = res.status();
        let body = res.into_body().try_into_bytes().unwrap();
        (status, retry, String::from_utf8(body.to_vec()).unwrap())
    }

    #[actix_web::test]
    async fn a_full_database_is_503_with_retry_after() {
        let full = sqlite_error("INSERT INTO t VALUES (zeroblob(100000))").await;
        let (status, retry, body) = answer(StorageError::from(full));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.as_deref(), Some("5"));
        assert_eq!(body, r#"{"message":"Service unavailable."}"#);
    }

    #[actix_web::test]
    async fn an_unreachable_database_is_503_with_retry_after() {
        let (status, retry, _) = answer(StorageError::from(DbErr::ConnectionAcquire(
            sea_orm::error::ConnAcquireErr::Timeout,
        )));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.as_deref(), Some("5"));
    }

    #[actix_web::test]
    async fn a_query_error_is_500_without_retry_after() {
        let bad = sqlite_error("SELECT * FROM nowhere").await;
        let (status, retry, body) = answer(StorageError::from(bad));
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(retry, None);
        assert_eq!(body, r#"{"message":"Server error."}"#);
    }
}
