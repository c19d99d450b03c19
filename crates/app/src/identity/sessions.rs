//! Where sessions live: the database (one replica, or several sharing it), or Redis when
//! `VELLUM_REDIS_URL` is set, so replicas share them without a query per request. Both keep the
//! token's hash only, and both can list and end a user's sessions ("sign out everywhere else",
//! a deleted user), which is why this is ours and not `actix-session`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_redis::redis;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use vellum_storage::Database;
use vellum_storage::sessions::{self as db_sessions, MAX_SESSIONS_PER_USER, SessionRow};

use crate::cache::RedisBackend;
use crate::cache::redis::RedisError;
use crate::error::AppError;

/// A session store.
#[async_trait]
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Stores a new session (and ends the user's oldest beyond the per-user cap).
    async fn create(&self, session: &SessionRow, idle: Duration) -> Result<(), AppError>;
    async fn get(&self, id: &str) -> Result<Option<SessionRow>, AppError>;
    /// Records a use at `at`; the session's idle expiry restarts from it.
    async fn touch(&self, id: &str, at: OffsetDateTime, idle: Duration) -> Result<(), AppError>;
    async fn delete(&self, id: &str) -> Result<(), AppError>;
    /// Ends every session of the user except `keep`; answers how many ended.
    async fn delete_user(&self, user_id: i64, keep: Option<&str>) -> Result<u64, AppError>;
    /// The user's sessions, newest first.
    async fn list_user(&self, user_id: i64) -> Result<Vec<SessionRow>, AppError>;
    /// Removes expired sessions (the database; Redis expires keys itself).
    async fn purge(&self, now: OffsetDateTime, idle: Duration) -> Result<(), AppError>;
}

/// Sessions in the `sessions` table.
#[derive(Debug, Clone)]
pub struct DbSessions {
    db: Database,
}

impl DbSessions {
    #[must_use]
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

#[async_trait]
impl SessionStore for DbSessions {
    async fn create(&self, session: &SessionRow, _idle: Duration) -> Result<(), AppError> {
        Ok(db_sessions::insert_session(&self.db, session).await?)
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRow>, AppError> {
        Ok(db_sessions::find_session(&self.db, id).await?)
    }

    async fn touch(&self, id: &str, at: OffsetDateTime, _idle: Duration) -> Result<(), AppError> {
        Ok(db_sessions::touch_session(&self.db, id, at).await?)
    }

    async fn delete(&self, id: &str) -> Result<(), AppError> {
        Ok(db_sessions::delete_session(&self.db, id).await?)
    }

    async fn delete_user(&self, user_id: i64, keep: Option<&str>) -> Result<u64, AppError> {
        Ok(db_sessions::delete_user_sessions(&self.db, user_id, keep).await?)
    }

    async fn list_user(&self, user_id: i64) -> Result<Vec<SessionRow>, AppError> {
        Ok(db_sessions::user_sessions(&self.db, user_id).await?)
    }

    async fn purge(&self, now: OffsetDateTime, idle: Duration) -> Result<(), AppError> {
        let idle_since = now - idle;
        db_sessions::purge_expired(&self.db, now, idle_since).await?;
        Ok(())
    }
}

/// Sessions in Redis: `<ns>session:<id>` holds the session as JSON and expires when it goes
/// idle (or at its absolute expiry, whichever is first); `<ns>user-sessions:<user>` is the set of
/// a user's session ids, pruned of expired ones when read.
#[derive(Debug, Clone)]
pub struct RedisSessions {
    redis: Arc<RedisBackend>,
}

impl RedisSessions {
    #[must_use]
    pub fn new(redis: Arc<RedisBackend>) -> Self {
        Self { redis }
    }

    fn session_key(&self, id: &str) -> String {
        self.redis.key(&format!("session:{id}"))
    }

    fn user_key(&self, user_id: i64) -> String {
        self.redis.key(&format!("user-sessions:{user_id}"))
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    user_id: i64,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    last_seen_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    expires_at: OffsetDateTime,
    ip: Option<String>,
    user_agent: Option<String>,
}

impl Stored {
    fn of(session: &SessionRow) -> Self {
        Self {
            user_id: session.user_id,
            created_at: session.created_at,
            last_seen_at: session.last_seen_at,
            expires_at: session.expires_at,
            ip: session.ip.clone(),
            user_agent: session.user_agent.clone(),
        }
    }

    fn row(self, id: String) -> SessionRow {
        SessionRow {
            id,
            user_id: self.user_id,
            created_at: self.created_at,
            last_seen_at: self.last_seen_at,
            expires_at: self.expires_at,
            ip: self.ip,
            user_agent: self.user_agent,
        }
    }

    /// Milliseconds the key should live from `at`: until idle or absolute expiry.
    fn ttl_ms(&self, at: OffsetDateTime, idle: Duration) -> u64 {
        let absolute = (self.expires_at - at).whole_milliseconds().max(1);
        let idle = i128::try_from(idle.as_millis()).unwrap_or(i128::MAX);
        u64::try_from(absolute.min(idle)).unwrap_or(1)
    }
}

fn unavailable(err: RedisError) -> AppError {
    AppError::Internal(Box::new(err))
}

fn command_failed(err: redis::RedisError) -> RedisError {
    RedisError::Command(err)
}

#[async_trait]
impl SessionStore for RedisSessions {
    async fn create(&self, session: &SessionRow, idle: Duration) -> Result<(), AppError> {
        let stored = Stored::of(session);
        let ttl = stored.ttl_ms(session.last_seen_at, idle);
        let json = serde_json::to_string(&stored).map_err(|e| AppError::Internal(Box::new(e)))?;
        let (key, user_key, id) = (
            self.session_key(&session.id),
            self.user_key(session.user_id),
            session.id.clone(),
        );
        self.redis
            .command(|mut conn| async move {
                redis::pipe()
                    .atomic()
                    .cmd("SET")
                    .arg(&key)
                    .arg(json)
                    .arg("PX")
                    .arg(ttl)
                    .ignore()
                    .cmd("SADD")
                    .arg(&user_key)
                    .arg(&id)
                    .ignore()
                    .query_async::<()>(&mut conn)
                    .await
                    .map_err(command_failed)
            })
            .await
            .map_err(unavailable)?;
        // The per-user cap: end the oldest beyond it.
        let sessions = self.list_user(session.user_id).await?;
        let cap = usize::try_from(MAX_SESSIONS_PER_USER).unwrap_or(usize::MAX);
        for old in sessions.iter().skip(cap) {
            self.delete(&old.id).await?;
        }
        Ok(())
    }

    async fn get(&self, id: &str) -> Result<Option<SessionRow>, AppError> {
        let key = self.session_key(id);
        let json: Option<String> = self
            .redis
            .command(|mut conn| async move {
                redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .map_err(command_failed)
            })
            .await
            .map_err(unavailable)?;
        Ok(json
            .and_then(|json: String| serde_json::from_str::<Stored>(&json).ok())
            .map(|stored| stored.row(id.to_owned())))
    }

    async fn touch(&self, id: &str, at: OffsetDateTime, idle: Duration) -> Result<(), AppError> {
        let Some(mut session) = self.get(id).await? else {
            return Ok(());
        };
        session.last_seen_at = at;
        let stored = Stored::of(&session);
        let ttl = stored.ttl_ms(at, idle);
        let json = serde_json::to_string(&stored).map_err(|e| AppError::Internal(Box::new(e)))?;
        let key = self.session_key(id);
        self.redis
            .command(|mut conn| async move {
                // XX: a session ended meanwhile stays ended.
                redis::cmd("SET")
                    .arg(&key)
                    .arg(json)
                    .arg("PX")
                    .arg(ttl)
                    .arg("XX")
                    .query_async::<Option<String>>(&mut conn)
                    .await
                    .map_err(command_failed)
            })
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), AppError> {
        let Some(session) = self.get(id).await? else {
            return Ok(());
        };
        let (key, user_key, id) = (
            self.session_key(id),
            self.user_key(session.user_id),
            id.to_owned(),
        );
        self.redis
            .command(|mut conn| async move {
                redis::pipe()
                    .atomic()
                    .cmd("DEL")
                    .arg(&key)
                    .ignore()
                    .cmd("SREM")
                    .arg(&user_key)
                    .arg(&id)
                    .ignore()
                    .query_async::<()>(&mut conn)
                    .await
                    .map_err(command_failed)
            })
            .await
            .map_err(unavailable)
    }

    async fn delete_user(&self, user_id: i64, keep: Option<&str>) -> Result<u64, AppError> {
        let user_key = self.user_key(user_id);
        let ids: Vec<String> = {
            let user_key = user_key.clone();
            self.redis
                .command(|mut conn| async move {
                    redis::cmd("SMEMBERS")
                        .arg(&user_key)
                        .query_async(&mut conn)
                        .await
                        .map_err(command_failed)
                })
                .await
                .map_err(unavailable)?
        };
        let doomed: Vec<String> = ids
            .into_iter()
            .filter(|id| Some(id.as_str()) != keep)
            .collect();
        if doomed.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = doomed.iter().map(|id| self.session_key(id)).collect();
        let ended: u64 = self
            .redis
            .command(|mut conn| async move {
                let (ended,): (u64,) = redis::pipe()
                    .atomic()
                    .cmd("DEL")
                    .arg(&keys)
                    .cmd("SREM")
                    .arg(&user_key)
                    .arg(&doomed)
                    .ignore()
                    .query_async(&mut conn)
                    .await
                    .map_err(command_failed)?;
                Ok(ended)
            })
            .await
            .map_err(unavailable)?;
        Ok(ended)
    }

    async fn list_user(&self, user_id: i64) -> Result<Vec<SessionRow>, AppError> {
        let user_key = self.user_key(user_id);
        let ids: Vec<String> = {
            let user_key = user_key.clone();
            self.redis
                .command(|mut conn| async move {
                    redis::cmd("SMEMBERS")
                        .arg(&user_key)
                        .query_async(&mut conn)
                        .await
                        .map_err(command_failed)
                })
                .await
                .map_err(unavailable)?
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|id| self.session_key(id)).collect();
        let values: Vec<Option<String>> = self
            .redis
            .command(|mut conn| async move {
                redis::cmd("MGET")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(command_failed)
            })
            .await
            .map_err(unavailable)?;
        let mut live = Vec::new();
        let mut gone = Vec::new();
        for (id, value) in ids.into_iter().zip(values) {
            match value.and_then(|json: String| serde_json::from_str::<Stored>(&json).ok()) {
                Some(stored) => live.push(stored.row(id)),
                None => gone.push(id),
            }
        }
        if !gone.is_empty() {
            self.redis
                .command(|mut conn| async move {
                    redis::cmd("SREM")
                        .arg(&user_key)
                        .arg(&gone)
                        .query_async::<i64>(&mut conn)
                        .await
                        .map_err(command_failed)
                })
                .await
                .map_err(unavailable)?;
        }
        live.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(live)
    }

    async fn purge(&self, _now: OffsetDateTime, _idle: Duration) -> Result<(), AppError> {
        Ok(())
    }
}
