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
use vellum_app::AppError;
pub(crate) use vellum_app::error_chain;
use vellum_domain::ValidationErrors;
use vellum_policy::{AuthRejection, Decision, Reason};
use vellum_storage::StorageError;

/// An error answered to an API client: the application layer's errors, and what only the HTTP
/// edge can go wrong with (bodies too large or too slow, a handler past its timeout).
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Unknown collection, item or file (or one the role's item filter hides).
    #[error("not found")]
    NotFound,
    /// An admin request without a valid session.
    #[error("unauthenticated")]
    Unauthenticated,
    /// Too many attempts: 429 with `Retry-After`.
    #[error("throttled: retry after {retry_after} s")]
    Throttled { retry_after: u64 },
    /// A quota (the day's AI prompts) is used up: 429 with its own message and `Retry-After`.
    #[error("quota reached: {message}")]
    QuotaReached {
        message: &'static str,
        retry_after: u64,
    },
    /// What the request needs is not configured (the AI provider): 503 with this message.
    #[error("not configured: {0}")]
    NotConfigured(&'static str),
    /// A state-changing admin request with a session, sent from another site (admin contract's
    /// cross-site request protection).
    #[error("cross-site request refused")]
    CrossSite,
    /// A missing grant, a field rule or an item filter; the reason is logged, never shown.
    #[error("forbidden: {0:?}")]
    Forbidden(Reason),
    /// The origin gate, the key or its IP allowlist refused the request.
    #[error("rejected: {}", .0.message())]
    Rejected(AuthRejection),
    /// A transform URL's signature does not verify: 403.
    #[error("invalid signature")]
    InvalidSignature,
    /// Bad input: every problem keyed by field or query parameter.
    #[error("the given data was invalid")]
    Invalid(ValidationErrors),
    /// The request body is larger than the configured limit.
    #[error("the request body is too large")]
    PayloadTooLarge,
    /// A dependency (the database, the blob store) is unreachable; the client may retry.
    #[error("service unavailable")]
    Unavailable(#[source] StorageError),
    /// A bounded resource (the transform budget) is full: 503 with its own `Retry-After`.
    #[error("busy: retry after {retry_after} s")]
    Busy { retry_after: u64 },
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
        AppError::invalid(field, message).into()
    }

    pub fn internal(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        AppError::internal(err).into()
    }
}

impl From<AppError> for ApiError {
    fn from(err: AppError) -> Self {
        match err {
            AppError::NotFound => Self::NotFound,
            AppError::Unauthenticated => Self::Unauthenticated,
            AppError::Throttled { retry_after } => Self::Throttled { retry_after },
            AppError::QuotaReached {
                message,
                retry_after,
            } => Self::QuotaReached {
                message,
                retry_after,
            },
            AppError::NotConfigured(message) => Self::NotConfigured(message),
            AppError::Forbidden(reason) => Self::Forbidden(reason),
            AppError::Rejected(rejection) => Self::Rejected(rejection),
            AppError::InvalidSignature => Self::InvalidSignature,
            AppError::Invalid(errors) => Self::Invalid(errors),
            AppError::Unavailable(cause) => Self::Unavailable(cause),
            AppError::Busy { retry_after } => Self::Busy { retry_after },
            AppError::Internal(cause) => Self::Internal(cause),
        }
    }
}

impl From<Decision> for ApiError {
    fn from(decision: Decision) -> Self {
        AppError::from(decision).into()
    }
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> Self {
        AppError::from(err).into()
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
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Throttled { .. } | Self::QuotaReached { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Rejected(rejection) if rejection.is_unauthenticated() => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::Rejected(_) | Self::CrossSite | Self::InvalidSignature => {
                StatusCode::FORBIDDEN
            }
            Self::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimedOut => StatusCode::REQUEST_TIMEOUT,
            Self::Unavailable(_) | Self::Busy { .. } | Self::TimedOut | Self::NotConfigured(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let body = match self {
            Self::NotFound => json!({"message": "Not found."}),
            Self::Unauthenticated => json!({"message": "Unauthenticated."}),
            Self::Throttled { retry_after } => {
                tracing::info!(retry_after, "refused: too many attempts");
                json!({"message": "Too many requests."})
            }
            Self::QuotaReached {
                message,
                retry_after,
            } => {
                tracing::info!(retry_after, message, "refused: a quota is used up");
                json!({ "message": message })
            }
            Self::NotConfigured(message) => json!({ "message": message }),
            Self::CrossSite => {
                tracing::info!("refused: a cross-site admin request");
                json!({"message": "Cross-site request refused."})
            }
            Self::Forbidden(reason) => {
                tracing::info!(?reason, "forbidden");
                json!({"message": "Forbidden."})
            }
            Self::Rejected(rejection) => json!({"message": rejection.message()}),
            Self::InvalidSignature => {
                tracing::info!("refused: an invalid transform URL signature");
                json!({"message": "Invalid signature."})
            }
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
            Self::Busy { retry_after } => {
                tracing::warn!(retry_after, "refused: a bounded resource is busy");
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
        let retry_after = match self {
            Self::Unavailable(_) | Self::TimedOut => Some(UNAVAILABLE_RETRY_AFTER),
            Self::Busy { retry_after }
            | Self::Throttled { retry_after }
            | Self::QuotaReached { retry_after, .. } => Some(*retry_after),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            res.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
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

#[cfg(test)]
mod tests {
    use actix_web::body::MessageBody;
    use sea_orm::DbErr;

    use super::*;

    /// Status, `Retry-After`, `Connection: close`? and body of an error's response.
    fn response_of(err: ApiError) -> (StatusCode, Option<String>, bool, String) {
        let res = err.error_response();
        let retry = res
            .headers()
            .get(actix_web::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        let closes = res.head().connection_type() == actix_web::http::ConnectionType::Close;
        let status = res.status();
        assert_eq!(
            res.headers()
                .get(actix_web::http::header::CONTENT_TYPE)
                .unwrap(),
            "application/json"
        );
        let body = res.into_body().try_into_bytes().unwrap();
        (
            status,
            retry,
            closes,
            String::from_utf8(body.to_vec()).unwrap(),
        )
    }

    /// One case per `ApiError` variant (and per rejection): the status, the headers that go with
    /// it and the exact body of the contract's envelope. A new variant must add its row: the
    /// `match` below is exhaustive.
    #[test]
    fn every_error_answers_its_status_and_exact_body() {
        use vellum_policy::{CollectionAction, GateDenial};
        let slug = vellum_domain::CollectionSlug::parse("articles").unwrap();
        let mut errors = ValidationErrors::new();
        errors.add("title", "The title field is required.");
        errors.add("title", "The title must be a string.");
        errors.add("body", "The body must be a string.");
        let unavailable = || StorageError::StorageFailing;
        let cases: Vec<(ApiError, u16, Option<&str>, bool, &str)> = vec![
            (
                ApiError::NotFound,
                404,
                None,
                false,
                r#"{"message":"Not found."}"#,
            ),
            (
                ApiError::Unauthenticated,
                401,
                None,
                false,
                r#"{"message":"Unauthenticated."}"#,
            ),
            (
                ApiError::Throttled { retry_after: 42 },
                429,
                Some("42"),
                false,
                r#"{"message":"Too many requests."}"#,
            ),
            (
                ApiError::QuotaReached {
                    message: "Daily prompt limit reached.",
                    retry_after: 3600,
                },
                429,
                Some("3600"),
                false,
                r#"{"message":"Daily prompt limit reached."}"#,
            ),
            (
                ApiError::NotConfigured("AI provider not configured."),
                503,
                None,
                false,
                r#"{"message":"AI provider not configured."}"#,
            ),
            (
                ApiError::CrossSite,
                403,
                None,
                false,
                r#"{"message":"Cross-site request refused."}"#,
            ),
            (
                ApiError::Forbidden(Reason::CollectionGrant {
                    collection: slug.clone(),
                    action: CollectionAction::Read,
                }),
                403,
                None,
                false,
                r#"{"message":"Forbidden."}"#,
            ),
            (
                ApiError::Forbidden(Reason::ItemFilter { collection: slug }),
                403,
                None,
                false,
                r#"{"message":"Forbidden."}"#,
            ),
            (
                ApiError::Rejected(AuthRejection::InvalidKey),
                401,
                None,
                false,
                r#"{"message":"Invalid API key."}"#,
            ),
            (
                ApiError::Rejected(AuthRejection::IpNotAllowed),
                403,
                None,
                false,
                r#"{"message":"IP address not allowed."}"#,
            ),
            (
                ApiError::Rejected(AuthRejection::Gate(GateDenial::OriginNotAllowed)),
                403,
                None,
                false,
                r#"{"message":"Origin not allowed."}"#,
            ),
            (
                ApiError::Rejected(AuthRejection::Gate(GateDenial::OriginRequired)),
                403,
                None,
                false,
                r#"{"message":"Origin required or API key."}"#,
            ),
            (
                ApiError::InvalidSignature,
                403,
                None,
                false,
                r#"{"message":"Invalid signature."}"#,
            ),
            (
                ApiError::Invalid(errors),
                422,
                None,
                false,
                r#"{"message":"The given data was invalid.","errors":{"body":["The body must be a string."],"title":["The title field is required.","The title must be a string."]}}"#,
            ),
            (
                ApiError::PayloadTooLarge,
                413,
                None,
                true,
                r#"{"message":"The request body is too large."}"#,
            ),
            (
                ApiError::Unavailable(unavailable()),
                503,
                Some("5"),
                false,
                r#"{"message":"Service unavailable."}"#,
            ),
            (
                ApiError::Busy { retry_after: 2 },
                503,
                Some("2"),
                false,
                r#"{"message":"Service unavailable."}"#,
            ),
            (
                ApiError::TimedOut,
                503,
                Some("5"),
                false,
                r#"{"message":"Service unavailable."}"#,
            ),
            (
                ApiError::BodyTimedOut,
                408,
                None,
                true,
                r#"{"message":"The request body was not received in time."}"#,
            ),
            (
                ApiError::internal(std::io::Error::other("secret detail")),
                500,
                None,
                false,
                r#"{"message":"Server error."}"#,
            ),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (err, status, retry, closes, body) in cases {
            seen.insert(match &err {
                ApiError::NotFound => "NotFound",
                ApiError::Unauthenticated => "Unauthenticated",
                ApiError::Throttled { .. } => "Throttled",
                ApiError::QuotaReached { .. } => "QuotaReached",
                ApiError::NotConfigured(_) => "NotConfigured",
                ApiError::CrossSite => "CrossSite",
                ApiError::Forbidden(_) => "Forbidden",
                ApiError::Rejected(_) => "Rejected",
                ApiError::InvalidSignature => "InvalidSignature",
                ApiError::Invalid(_) => "Invalid",
                ApiError::PayloadTooLarge => "PayloadTooLarge",
                ApiError::Unavailable(_) => "Unavailable",
                ApiError::Busy { .. } => "Busy",
                ApiError::TimedOut => "TimedOut",
                ApiError::BodyTimedOut => "BodyTimedOut",
                ApiError::Internal(_) => "Internal",
            });
            let name = format!("{err:?}");
            let answered = response_of(err);
            assert_eq!(
                answered,
                (
                    StatusCode::from_u16(status).unwrap(),
                    retry.map(str::to_owned),
                    closes,
                    body.to_owned()
                ),
                "{name}"
            );
        }
        assert_eq!(seen.len(), 16, "every variant has a row");
    }

    /// The application layer's errors reach the same rows: storage's refusals become the
    /// policy's reasons, never a `Debug` string.
    #[test]
    fn application_errors_map_to_their_rows() {
        let slug = vellum_domain::CollectionSlug::parse("articles").unwrap();
        let outside = ApiError::from(StorageError::OutsideItemFilter {
            collection: slug.clone(),
        });
        assert!(matches!(
            outside,
            ApiError::Forbidden(Reason::ItemFilter { ref collection }) if *collection == slug
        ));
        assert!(matches!(
            ApiError::from(StorageError::PrivateFile),
            ApiError::Forbidden(Reason::FileVisibility { .. })
        ));
        assert!(matches!(
            ApiError::from(AppError::Busy { retry_after: 3 }),
            ApiError::Busy { retry_after: 3 }
        ));
        assert!(matches!(
            ApiError::from(StorageError::NotFound { what: "item" }),
            ApiError::NotFound
        ));
    }

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
