//! The AI provider as a service of the process (issue 22): the configured provider, the
//! per-user request throttle, the extraction and generation slots, and the status probe's last
//! answer. Separate from [`crate::ai`] (the use cases), so the application state can hold it
//! without the use cases' module importing the state that imports it.

pub mod provider;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use time::OffsetDateTime;
use tokio::sync::Semaphore;

use crate::AiConfig;
use crate::cache::RedisBackend;
use crate::error::AppError;
use crate::identity::throttle::{Counter, Limit, Throttle};
use provider::Provider;

/// What `POST /ai/chat` answers (503) without a provider.
pub const NOT_CONFIGURED: &str = "AI provider not configured.";
/// How often each process sweeps expired attachments and old prompt counters.
pub const JANITOR_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// Answers generated at once by this process; more get 503.
pub const MAX_GENERATIONS: usize = 1_000;

/// The AI services of a process: the provider, the request throttle, the extraction slots and
/// the last status probe.
#[derive(Debug, Clone)]
pub struct Ai {
    pub(crate) provider: Option<Provider>,
    throttle: Throttle,
    limit: Limit,
    /// Extractions running at once (each holds a blocking thread until it ends, timeout or not).
    extractions: Arc<Semaphore>,
    /// Answers being generated at once ([`MAX_GENERATIONS`]).
    pub(crate) generations: Arc<Semaphore>,
    pub(crate) probe: Arc<Mutex<Option<(Instant, bool)>>>,
}

impl Ai {
    #[must_use]
    pub fn new(config: &AiConfig, redis: Option<Arc<RedisBackend>>) -> Self {
        Self {
            provider: Provider::new(config),
            throttle: Throttle::new(redis),
            limit: Limit {
                max: config.requests_per_minute.max(1),
                window: Duration::from_secs(60),
            },
            extractions: Arc::new(Semaphore::new(crate::cores())),
            generations: Arc::new(Semaphore::new(MAX_GENERATIONS)),
            probe: Arc::new(Mutex::new(None)),
        }
    }

    pub(crate) fn provider(&self) -> Result<&Provider, AppError> {
        self.provider
            .as_ref()
            .ok_or(AppError::NotConfigured(NOT_CONFIGURED))
    }

    /// Counts one request of the user against the per-minute limit.
    pub(crate) async fn take_request(&self, user_id: i64) -> Result<(), AppError> {
        self.throttle
            .attempt(&[Counter::new("ai", &user_id.to_string(), self.limit)])
            .await
            .map_err(|retry_after| AppError::Throttled { retry_after })
    }

    pub(crate) fn extractions(&self) -> &Arc<Semaphore> {
        &self.extractions
    }
}

/// `YYYY-MM-DD` of `at` in UTC: the day a prompt counts on.
#[must_use]
pub fn day_of(at: OffsetDateTime) -> String {
    let date = at.to_offset(time::UtcOffset::UTC).date();
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// Deletes expired AI attachments and the prompt counters of past days. Each is one statement,
/// so every replica may run it at any time.
///
/// # Errors
/// The database.
pub async fn sweep(db: &vellum_storage::Database) -> Result<(), AppError> {
    let now = OffsetDateTime::now_utc();
    let gone = vellum_storage::ai::attachments::delete_expired(db, now).await?;
    vellum_storage::ai::usage::forget_before(db, &day_of(now)).await?;
    if gone > 0 {
        tracing::info!(gone, "ai: expired attachments deleted");
    }
    Ok(())
}
