//! Readiness: whether this process can serve requests now, dependency by dependency.

use crate::context::AppState;
use crate::telemetry::error_chain;

/// A probe must answer quickly even when the database hangs.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Each dependency's state; `redis` only when the cache and epoch live there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Readiness {
    pub database: bool,
    pub redis: Option<bool>,
}

impl Readiness {
    #[must_use]
    pub fn healthy(&self) -> bool {
        self.database && self.redis != Some(false)
    }
}

/// Checks the database (it answers, and a write can commit: [`vellum_storage::WriteCheck`]; a
/// full disk failed every write while reads kept answering, security review R8) and Redis. A
/// failure's cause goes to the log only.
pub async fn readiness(state: &AppState) -> Readiness {
    let check = async {
        state.db().ping().await?;
        state.write_check().check(state.db()).await
    };
    let database = match tokio::time::timeout(CHECK_TIMEOUT, check).await {
        Ok(Ok(())) => true,
        Ok(Err(err)) => {
            tracing::warn!(error = %error_chain(&err), "readiness: database check failed");
            false
        }
        Err(_) => {
            tracing::warn!("readiness: database check timed out");
            false
        }
    };
    // The ping has its own timeout, well under CHECK_TIMEOUT; state changes are logged by the
    // backend itself.
    let redis = match state.redis() {
        Some(redis) => Some(redis.ping().await.is_ok()),
        None => None,
    };
    Readiness { database, redis }
}
