//! The services sign-in and sessions run on: password hashing, failure throttles, mail, the
//! session store and session tokens. One [`Identity`] per process, built from the configuration
//! and the backends (Redis when configured, so replicas share sessions and throttles). The use
//! cases that drive them are in [`crate::accounts`].

pub mod mail;
pub mod password;
pub mod sessions;
pub mod throttle;
pub mod token;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vellum_storage::Database;

use crate::cache::RedisBackend;
use crate::error::AppError;
use mail::Mailer;
use password::PasswordHasher;
use sessions::{DbSessions, RedisSessions, SessionStore};
use throttle::Throttle;

/// How sessions and mail behave (the binaries fill it from `VELLUM_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityConfig {
    /// A session unused this long ends (default 2 hours).
    pub session_idle: Duration,
    /// A session ends this long after sign-in whatever its use (default 7 days).
    pub session_lifetime: Duration,
    /// `smtp://…` or `smtps://…`; `None` writes mails to the log (development).
    pub smtp_url: Option<String>,
    pub mail_from: String,
    /// Password hashes computed at once (default: the cores).
    pub hashing_concurrency: usize,
    /// Sign-in failures in a row per account before 429 (default 5).
    pub account_attempts: u32,
    /// Sign-in failures per client address before 429 (default 30).
    pub address_attempts: u32,
}

/// Two hours, the admin contract's idle expiry.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 2 * 60 * 60;
/// Seven days, the admin contract's absolute expiry.
pub const DEFAULT_SESSION_LIFETIME_SECS: u64 = 7 * 24 * 60 * 60;
pub const DEFAULT_MAIL_FROM: &str = "Vellum <vellum@localhost>";

impl Default for IdentityConfig {
    fn default() -> Self {
        Self {
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
            session_lifetime: Duration::from_secs(DEFAULT_SESSION_LIFETIME_SECS),
            smtp_url: None,
            mail_from: DEFAULT_MAIL_FROM.to_owned(),
            hashing_concurrency: crate::cores(),
            account_attempts: throttle::ACCOUNT_LIMIT.max,
            address_attempts: throttle::IP_LIMIT.max,
        }
    }
}

/// The services, shared by every worker.
#[derive(Debug, Clone)]
pub struct Identity {
    pub config: IdentityConfig,
    pub hasher: PasswordHasher,
    pub throttle: Throttle,
    pub mailer: Mailer,
    pub sessions: Arc<dyn SessionStore>,
    /// When expired sessions were last purged from this process.
    purged: Arc<Mutex<Option<Instant>>>,
    /// Code mails being prepared or sent in the background: a flood of requests from many
    /// addresses (each within its own throttle) cannot pile up unbounded work behind its 202s.
    pub code_jobs: Arc<tokio::sync::Semaphore>,
}

/// Code mails in preparation at once, at most; beyond, asking for a code gets 429.
pub const MAX_CODE_JOBS: usize = 256;

/// Expired sessions are purged at most this often per process.
const PURGE_INTERVAL: Duration = Duration::from_secs(60);

impl Identity {
    /// Services over the database, or Redis when given.
    ///
    /// # Errors
    /// An invalid SMTP URL or sender, or no randomness for the dummy hash.
    pub fn new(
        config: IdentityConfig,
        db: &Database,
        redis: Option<Arc<RedisBackend>>,
    ) -> Result<Self, AppError> {
        let sessions: Arc<dyn SessionStore> = match &redis {
            Some(redis) => Arc::new(RedisSessions::new(Arc::clone(redis))),
            None => Arc::new(DbSessions::new(db.clone())),
        };
        Ok(Self {
            hasher: PasswordHasher::new(config.hashing_concurrency)?,
            throttle: Throttle::new(redis),
            mailer: Mailer::new(config.smtp_url.as_deref(), &config.mail_from)?,
            sessions,
            config,
            purged: Arc::new(Mutex::new(None)),
            code_jobs: Arc::new(tokio::sync::Semaphore::new(MAX_CODE_JOBS)),
        })
    }

    /// The per-account sign-in limit.
    #[must_use]
    pub fn account_limit(&self) -> throttle::Limit {
        throttle::Limit {
            max: self.config.account_attempts,
            ..throttle::ACCOUNT_LIMIT
        }
    }

    /// The per-address limit (sign-in failures, and code mails asked for).
    #[must_use]
    pub fn address_limit(&self) -> throttle::Limit {
        throttle::Limit {
            max: self.config.address_attempts,
            ..throttle::IP_LIMIT
        }
    }

    /// Whether a purge of expired sessions is due now (and records that one runs).
    #[must_use]
    pub fn purge_due(&self) -> bool {
        let mut purged = self
            .purged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *purged {
            Some(at) if at.elapsed() < PURGE_INTERVAL => false,
            _ => {
                *purged = Some(Instant::now());
                true
            }
        }
    }
}
