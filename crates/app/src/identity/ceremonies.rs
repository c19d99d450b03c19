//! Where WebAuthn ceremonies wait between their two requests (options, then the browser's
//! answer): beside the sessions, in the database or in Redis when `VELLUM_REDIS_URL` is set, so
//! whichever replica gets the answer can finish the ceremony. Each state is taken once and lives
//! five minutes at most; a bounded number are in progress at once (anonymous sign-in starts
//! cannot grow the store).

use std::sync::Arc;
use std::time::Duration;

use deadpool_redis::redis;
use time::OffsetDateTime;
use vellum_storage::Database;
use vellum_storage::passkeys::{MAX_LIVE_CEREMONIES, put_ceremony, take_ceremony};

use crate::cache::RedisBackend;
use crate::cache::redis::RedisError;
use crate::error::AppError;

/// How long a ceremony may take: the browser's prompt, the user choosing a passkey.
pub const CEREMONY_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// The store: the sessions' backend.
#[derive(Debug, Clone)]
pub enum Ceremonies {
    Db(Database),
    Redis(Arc<RedisBackend>),
}

/// Refused when the store holds its maximum of ceremonies: retry after a minute.
fn full() -> AppError {
    AppError::Throttled { retry_after: 60 }
}

fn redis_failed(err: RedisError) -> AppError {
    AppError::Internal(Box::new(err))
}

impl Ceremonies {
    /// Keeps `state` under `id` for [`CEREMONY_LIFETIME`].
    ///
    /// # Errors
    /// [`AppError::Throttled`] when [`MAX_LIVE_CEREMONIES`] are in progress; the store failing.
    pub async fn put(&self, id: &str, state: String) -> Result<(), AppError> {
        match self {
            Self::Db(db) => {
                let now = OffsetDateTime::now_utc();
                match put_ceremony(db, id, &state, now, now + CEREMONY_LIFETIME).await {
                    Err(vellum_storage::StorageError::Conflict { field, .. })
                        if field == "ceremony" =>
                    {
                        Err(full())
                    }
                    other => Ok(other?),
                }
            }
            Self::Redis(redis) => {
                let (key, counter) = (
                    redis.key(&format!("webauthn:{id}")),
                    redis.key("webauthn-count"),
                );
                let ttl = u64::try_from(CEREMONY_LIFETIME.as_millis()).unwrap_or(u64::MAX);
                // A fixed window of one lifetime counts the ceremonies started in it: at most
                // MAX_LIVE_CEREMONIES keys can be alive at once.
                let started: u64 = redis
                    .command(|mut conn| async move {
                        let (n, _): (u64, bool) = redis::pipe()
                            .atomic()
                            .cmd("INCR")
                            .arg(&counter)
                            .cmd("PEXPIRE")
                            .arg(&counter)
                            .arg(ttl)
                            .arg("NX")
                            .query_async(&mut conn)
                            .await
                            .map_err(RedisError::Command)?;
                        if n <= MAX_LIVE_CEREMONIES {
                            redis::cmd("SET")
                                .arg(&key)
                                .arg(state)
                                .arg("PX")
                                .arg(ttl)
                                .query_async::<()>(&mut conn)
                                .await
                                .map_err(RedisError::Command)?;
                        }
                        Ok(n)
                    })
                    .await
                    .map_err(redis_failed)?;
                if started > MAX_LIVE_CEREMONIES {
                    return Err(full());
                }
                Ok(())
            }
        }
    }

    /// The state under `id`, once: a second take, or one after it expired, finds nothing.
    ///
    /// # Errors
    /// The store failing.
    pub async fn take(&self, id: &str) -> Result<Option<String>, AppError> {
        match self {
            Self::Db(db) => Ok(take_ceremony(db, id, OffsetDateTime::now_utc()).await?),
            Self::Redis(redis) => {
                let key = redis.key(&format!("webauthn:{id}"));
                redis
                    .command(|mut conn| async move {
                        redis::cmd("GETDEL")
                            .arg(&key)
                            .query_async::<Option<String>>(&mut conn)
                            .await
                            .map_err(RedisError::Command)
                    })
                    .await
                    .map_err(redis_failed)
            }
        }
    }
}
