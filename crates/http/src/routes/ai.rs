//! AI chat (`/ai…`): the pages (`GET /ai`, `GET /ai/{conversation}`), the provider's status,
//! conversations (list, create, show, rename, pin, truncate, delete, bulk delete), attachments,
//! and `POST /ai/chat`, whose answer streams as server-sent events ([`crate::sse`]). Each
//! handler is its extractors, one call of [`vellum_app::ai`], and a response.

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, web};
use serde_json::json;
use vellum_app::{AppState, ai};

use crate::body::read_json;
use crate::error::ApiError;
use crate::session::{SignedIn, wants_json};

#[utoipa::path(
    operation_id = "aiHome",
    tag = "admin: ai",
    security(("session" = [])),
    params(crate::schemas::ai::AiListParams),
    responses(
        (status = 200, description = "The first page of conversations and whether a provider is configured (the AI chat page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::ai::AiHome),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/ai")]
pub async fn home(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = ai::list(&state, &signed_in.0, req.query_string()).await?;
    let configured = state.config().ai.provider().is_some();
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(json!({
            "data": page.data,
            "meta": page.meta,
            "configured": configured,
        })));
    }
    let view = vellum_web::pages::ai::AiPage::new(&signed_in.0, page, None, configured);
    crate::html::page(StatusCode::OK, vellum_web::pages::render(&view))
}

#[utoipa::path(
    operation_id = "aiConversationPage",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    responses(
        (status = 200, description = "The conversation with its latest messages (the AI chat page with it open for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::ai::AiConversationShownEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/ai/{conversation}")]
pub async fn conversation_page(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let shown = ai::show(&state, &signed_in.0, &path).await?;
    if wants_json(&req) {
        return Ok(HttpResponse::Ok().json(json!({ "data": shown })));
    }
    let list = ai::list(&state, &signed_in.0, "").await?;
    let configured = state.config().ai.provider().is_some();
    let view = vellum_web::pages::ai::AiPage::new(&signed_in.0, list, Some(shown), configured);
    crate::html::page(StatusCode::OK, vellum_web::pages::render(&view))
}

#[utoipa::path(
    operation_id = "aiStatus",
    tag = "admin: ai",
    security(("session" = [])),
    responses(
        (status = 200, description = "Whether a provider is configured and answers", content_type = "application/json", body = crate::schemas::ai::AiStatus),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/ai/status")]
pub async fn status(
    state: web::Data<AppState>,
    signed_in: SignedIn,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(ai::status(&state, &signed_in.0).await?))
}

#[utoipa::path(
    operation_id = "listAiConversations",
    tag = "admin: ai",
    security(("session" = [])),
    params(crate::schemas::ai::AiListParams),
    responses(
        (status = 200, description = "The user's conversations, 25 a page, pinned first", content_type = "application/json", body = crate::schemas::ai::AiConversationPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/ai/conversations")]
pub async fn conversations(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(ai::list(&state, &signed_in.0, req.query_string()).await?))
}

#[utoipa::path(
    operation_id = "createAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::ai::CreateAiConversation),
    responses(
        (status = 201, description = "An empty conversation", content_type = "application/json", body = crate::schemas::ai::AiConversationEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/ai/conversations")]
pub async fn create(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let created = ai::create(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": created })))
}

#[utoipa::path(
    operation_id = "bulkDestroyAiConversations",
    tag = "admin: ai",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::ai::BulkDestroyAiConversations),
    responses(
        (status = 200, description = "How many conversations were deleted", content_type = "application/json", body = crate::schemas::ai::AiDeleted),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/ai/conversations/bulk-destroy")]
pub async fn bulk_destroy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let deleted = ai::bulk_destroy(&state, &signed_in.0, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": { "deleted": deleted } })))
}

#[utoipa::path(
    operation_id = "showAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    responses(
        (status = 200, description = "The conversation with its latest 100 messages", content_type = "application/json", body = crate::schemas::ai::AiConversationShownEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/ai/conversations/{conversation}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let shown = ai::show(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": shown })))
}

#[utoipa::path(
    operation_id = "renameAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::ai::RenameAiConversation),
    responses(
        (status = 200, description = "The renamed conversation", content_type = "application/json", body = crate::schemas::ai::AiConversationEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[patch("/ai/conversations/{conversation}")]
pub async fn rename(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let renamed = ai::rename(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": renamed })))
}

#[utoipa::path(
    operation_id = "destroyAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    responses(
        (status = 204, description = "Deleted with its messages"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/ai/conversations/{conversation}")]
pub async fn destroy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    ai::destroy(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "pinAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    responses(
        (status = 200, description = "The conversation, pinned now or unpinned", content_type = "application/json", body = crate::schemas::ai::AiConversationEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[post("/ai/conversations/{conversation}/pin")]
pub async fn pin(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let pinned = ai::toggle_pin(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": pinned })))
}

#[utoipa::path(
    operation_id = "truncateAiConversation",
    tag = "admin: ai",
    security(("session" = [])),
    params(("conversation" = String, Path, description = "Conversation id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::ai::TruncateAiConversation),
    responses(
        (status = 200, description = "How many messages were deleted (the given one and every later one)", content_type = "application/json", body = crate::schemas::ai::AiDeleted),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/ai/conversations/{conversation}/truncate")]
pub async fn truncate(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let deleted = ai::truncate(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": { "deleted": deleted } })))
}

#[utoipa::path(
    operation_id = "aiChat",
    tag = "admin: ai",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::ai::AiChatRequest),
    responses(
        (status = 200, description = "The answer as server-sent events: `data:` lines of JSON, `{\"type\": \"conversation\", \"conversation_id\"}` first, then `{\"type\": \"delta\", \"content\"}` per fragment, `{\"type\": \"error\", \"message\"}` on failure, comments (`: keep-alive`) every 10 s of silence, and `data: [DONE]` last", content_type = "text/event-stream", body = crate::schemas::ai::AiChatEvent),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::ai::AiThrottled),
        (status = 503, response = crate::schemas::ai::AiUnavailable),
    )
)]
#[post("/ai/chat")]
pub async fn chat(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let events = ai::send(&state, &signed_in.0, &body).await?;
    Ok(crate::sse::respond(events))
}

#[utoipa::path(
    operation_id = "uploadAiAttachment",
    tag = "admin: ai",
    security(("session" = [])),
    request_body(content_type = "multipart/form-data", content = crate::schemas::ai::AiAttachmentForm),
    responses(
        (status = 201, description = "The attachment's text is ready for the next prompts (`attachment_ids`) for 24 hours", content_type = "application/json", body = crate::schemas::ai::AiAttachmentEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
        (status = 429, response = crate::schemas::ai::AiThrottled),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/ai/attachments")]
pub async fn upload(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    multipart: Multipart,
) -> Result<HttpResponse, ApiError> {
    let attachment = ai::upload(&state, &signed_in.0, |limit| {
        crate::multipart::read_small_file(multipart, limit)
    })
    .await?;
    Ok(HttpResponse::Created().json(json!({ "data": attachment })))
}

/// Registers the routes; the fixed paths before `/ai/{conversation}`, which would match them.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(home)
        .service(status)
        .service(conversations)
        .service(create)
        .service(bulk_destroy)
        .service(show)
        .service(rename)
        .service(destroy)
        .service(pin)
        .service(truncate)
        .service(chat)
        .service(upload)
        .service(conversation_page);
}
