//! Who a call acts as: the acting role, the user behind it, and the project snapshot it was
//! authorized against. Every use case takes an [`Actor`]; surfaces resolve it once per request
//! ([`authenticate`] for the public API's API keys).

use std::sync::Arc;

use time::OffsetDateTime;
use vellum_policy::{Authenticated, RequestFacts, Role, authenticate as gate};

use crate::context::AppState;
use crate::error::AppError;
use crate::snapshot::Snapshot;
use crate::telemetry::error_chain;

/// The acting role and the project snapshot the call was authorized against.
#[derive(Debug, Clone)]
pub struct Actor {
    pub role: Arc<Role>,
    /// The user behind the call, for `user_created_id`; API keys act for no user.
    pub user_id: Option<i64>,
    pub snapshot: Arc<Snapshot>,
}

impl Actor {
    /// The actor a role name stands for in the current snapshot (a role that vanished grants
    /// nothing): what `vellum-admin explain` and tests act as.
    ///
    /// # Errors
    /// The database, when the snapshot has to be rebuilt.
    pub async fn with_role(state: &AppState, role: &str) -> Result<Self, AppError> {
        let snapshot = state.snapshot().await?;
        Ok(Self {
            role: snapshot.role(role),
            user_id: None,
            snapshot,
        })
    }
}

/// Authenticates a public API request in the spec's order (origin gate, API key, the key's IP
/// allowlist) and answers the [`Actor`] it acts as: `public` without a key. A key's use is
/// recorded in the background, at most once a minute per key.
///
/// # Errors
/// [`AppError::Rejected`] when the gate, the key or its allowlist refuses; the database.
pub async fn authenticate(state: &AppState, facts: &RequestFacts<'_>) -> Result<Actor, AppError> {
    let snapshot = state.snapshot().await?;
    let found = match facts.key_id() {
        Some(key_id) => snapshot.find_key(state.db(), &key_id).await?,
        None => None,
    };
    let authenticated = gate(
        &snapshot.origins,
        facts,
        found.as_deref().map(|f| &f.record),
    )
    .map_err(AppError::Rejected)?;
    let role = match authenticated {
        Authenticated::Anonymous => snapshot.role("public"),
        Authenticated::Key(record) => {
            if let Some(found) = &found
                && state.touch_due(found.id)
            {
                touch(state.clone(), found.id);
            }
            snapshot.role(&record.role)
        }
    };
    Ok(Actor {
        role,
        user_id: None,
        snapshot,
    })
}

/// Records the key's use in the background: the request does not wait for a write.
fn touch(state: AppState, id: i64) {
    tokio::spawn(async move {
        let at = OffsetDateTime::now_utc();
        if let Err(err) = vellum_storage::keys::touch_api_key(state.db(), id, at).await {
            tracing::warn!(error = %error_chain(&err), key = id, "could not record key use");
        }
    });
}
