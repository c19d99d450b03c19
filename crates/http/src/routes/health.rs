//! The unauthenticated probes: `/up`, `/health/live`, `/health/ready`. None of them is gated by
//! the origin allowlist or touches the response cache.

use actix_web::{HttpResponse, get, web};
use serde_json::json;

use crate::state::AppState;

/// A probe must answer quickly even when the database hangs.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// 200 as soon as the application serves requests.
#[get("/up")]
pub async fn up() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body("OK")
}

#[get("/health/live")]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Checks each dependency (the database, and Redis when configured); 503 when one fails. The failure's cause goes to the log only.
///
/// `checks.database` covers reads and writes: the database answers, and a write can commit
/// ([`vellum_storage::WriteCheck::check`]). A full disk failed every write while reads, and this
/// probe, kept answering `ok` (security review R8).
#[get("/health/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let check = async {
        state.db().ping().await?;
        state.write_check().check(state.db()).await
    };
    let database = match tokio::time::timeout(CHECK_TIMEOUT, check).await {
        Ok(Ok(())) => "ok",
        Ok(Err(err)) => {
            tracing::warn!(error = %crate::error::error_chain(&err), "readiness: database check failed");
            "failed"
        }
        Err(_) => {
            tracing::warn!("readiness: database check timed out");
            "failed"
        }
    };
    let mut checks = serde_json::Map::new();
    checks.insert("database".to_owned(), database.into());
    if let Some(redis) = state.redis() {
        // The ping has its own timeout, well under CHECK_TIMEOUT; state changes are logged by
        // the backend itself.
        let outcome = if redis.ping().await.is_ok() {
            "ok"
        } else {
            "failed"
        };
        checks.insert("redis".to_owned(), outcome.into());
    }
    let healthy = checks.values().all(|v| v == "ok");
    let body = json!({
        "status": if healthy { "ok" } else { "failed" },
        "checks": checks,
    });
    if healthy {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
