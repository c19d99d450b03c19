//! The unauthenticated probes: `/up`, `/health/live`, `/health/ready`. None of them is gated by
//! the origin allowlist or touches the response cache.

use actix_web::{HttpResponse, get, web};
use serde_json::json;
use vellum_app::{AppState, health};

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
/// `realtime` names the realtime fan-out's backend: `local`, `redis` or `postgres`.
///
/// `checks.database` covers reads and writes: the database answers, and a write can commit
/// ([`vellum_storage::WriteCheck::check`]). A full disk failed every write while reads, and this
/// probe, kept answering `ok` (security review R8).
#[get("/health/ready")]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let readiness = health::readiness(&state).await;
    let word = |ok: bool| if ok { "ok" } else { "failed" };
    let mut checks = serde_json::Map::new();
    checks.insert("database".to_owned(), word(readiness.database).into());
    if let Some(redis) = readiness.redis {
        checks.insert("redis".to_owned(), word(redis).into());
    }
    // The realtime fan-out is named, not checked: its backend is the database or Redis, both
    // checked above, and its listener reconnects by itself (logging when it drops and returns).
    let body = json!({
        "status": word(readiness.healthy()),
        "checks": checks,
        "realtime": state.realtime().backend(),
    });
    if readiness.healthy() {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
