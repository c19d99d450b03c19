//! The services sign-in and sessions run on: password hashing, failure throttles, mail, the
//! session store and session tokens. One [`Identity`] per process, built from the configuration
//! and the backends (Redis when configured, so replicas share sessions and throttles). The use
//! cases that drive them are in [`crate::accounts`].

pub mod ceremonies;
pub mod mail;
pub mod password;
pub mod relying_party;
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

pub use crate::app_config::{
    DEFAULT_MAIL_FROM, DEFAULT_SESSION_IDLE_SECS, DEFAULT_SESSION_LIFETIME_SECS, IdentityConfig,
};

/// The services, shared by every worker.
#[derive(Debug, Clone)]
pub struct Identity {
    pub config: IdentityConfig,
    pub hasher: PasswordHasher,
    pub throttle: Throttle,
    pub mailer: Mailer,
    pub sessions: Arc<dyn SessionStore>,
    /// WebAuthn ceremonies in progress, beside the sessions.
    pub ceremonies: ceremonies::Ceremonies,
    /// The relying party passkeys are bound to; `None` when `VELLUM_BASE_URL` cannot be one.
    pub passkeys: Option<Arc<webauthn_rs::Webauthn>>,
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
        base_url: &str,
    ) -> Result<Self, AppError> {
        let sessions: Arc<dyn SessionStore> = match &redis {
            Some(redis) => Arc::new(RedisSessions::new(Arc::clone(redis))),
            None => Arc::new(DbSessions::new(db.clone())),
        };
        let ceremonies = match &redis {
            Some(redis) => ceremonies::Ceremonies::Redis(Arc::clone(redis)),
            None => ceremonies::Ceremonies::Db(db.clone()),
        };
        Ok(Self {
            ceremonies,
            passkeys: relying_party::relying_party(base_url).map(Arc::new),
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
