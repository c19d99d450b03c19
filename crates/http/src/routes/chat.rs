//! Team chat's threads: the hub (`GET /chat`, `GET /chat/{chat}`), `GET/POST /chat/threads`,
//! `GET /chat/unread-count`, the pickers (`GET /chat/options/{kind}`), archive, participants,
//! leave and delete, and the item-thread aliases under `/collections/{collection}/…`. Each
//! handler is its extractors, one call of [`vellum_app::chat`], and a response; messages and
//! attachments are [`super::chat_messages`].

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, web};
use serde_json::json;
use vellum_app::{AppError, AppState, chat};

use crate::body::{is_form, read_form, read_json};
use crate::error::ApiError;
use crate::session::{SignedIn, wants_json};

/// The sender's socket (`X-Socket-ID`), left out of the thread's events, when well-formed.
pub(crate) fn socket_of(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("x-socket-id")
        .and_then(|v| v.to_str().ok())
        .filter(|id| vellum_app::broadcasting::valid_socket_id(id))
        .map(str::to_owned)
}

#[utoipa::path(
    operation_id = "chatHub",
    tag = "admin: chat",
    security(("session" = [])),
    params(crate::schemas::chat::ChatListParams),
    responses(
        (status = 200, description = "The hub: a tab of threads and the unread totals (the chat page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::chat::ChatHubEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/chat")]
pub async fn hub(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let found = chat::hub(&state, &signed_in.0, None, req.query_string()).await?;
    respond(&state, &signed_in, &req, found)
}

fn respond(
    state: &AppState,
    signed_in: &SignedIn,
    req: &HttpRequest,
    found: chat::Hub,
) -> Result<HttpResponse, ApiError> {
    if wants_json(req) {
        return Ok(HttpResponse::Ok().json(json!({ "data": found })));
    }
    let view = vellum_web::pages::chat::ChatPage::new(
        &signed_in.0,
        found,
        state.realtime().credentials().key(),
    );
    crate::html::page(StatusCode::OK, vellum_web::pages::render(&view))
}

#[utoipa::path(
    operation_id = "chatThreadPage",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)"), crate::schemas::chat::ChatListParams),
    responses(
        (status = 200, description = "The hub with this thread open (the chat page for a client that does not prefer JSON)", content_type = "application/json", body = crate::schemas::chat::ChatHubEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/chat/{chat}")]
pub async fn show(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let found = chat::hub(&state, &signed_in.0, Some(&path), req.query_string()).await?;
    respond(&state, &signed_in, &req, found)
}

#[utoipa::path(
    operation_id = "listChatThreads",
    tag = "admin: chat",
    security(("session" = [])),
    params(crate::schemas::chat::ChatListParams),
    responses(
        (status = 200, description = "Threads, newest activity first", content_type = "application/json", body = crate::schemas::chat::ChatThreadPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/chat/threads")]
pub async fn threads(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = chat::list_threads(&state, &signed_in.0, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "startChatThread",
    tag = "admin: chat",
    security(("session" = [])),
    request_body(content_type = "application/json", content = crate::schemas::chat::StartChatThread),
    responses(
        (status = 201, description = "The thread just started (the other members of a direct thread hear `ThreadUpserted`)", content_type = "application/json", body = crate::schemas::chat::ChatThreadEnvelope),
        (status = 200, description = "The item's thread, or the direct thread with exactly these members, already there", content_type = "application/json", body = crate::schemas::chat::ChatThreadEnvelope),
        (status = 303, description = "An HTML form (the item page's chat button): to the thread's page"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/threads")]
pub async fn start(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    if is_form(&req) {
        // The item page's "Chat" button: open the item's thread (started if need be).
        let form = read_form(payload, state.config().json_limit, &req).await?;
        let (thread, _) = chat::start(&state, &signed_in.0, &form_body(&form)).await?;
        return Ok(HttpResponse::SeeOther()
            .insert_header(("location", format!("/chat/{}?tab=collection", thread.id)))
            .finish());
    }
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (thread, created) = chat::start(&state, &signed_in.0, &body).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(HttpResponse::build(status).json(json!({ "data": thread })))
}

/// An HTML form's fields as the JSON body `POST /chat/threads` takes (ids as numbers).
fn form_body(form: &[(String, String)]) -> serde_json::Value {
    let mut body = serde_json::Map::new();
    for (name, value) in form {
        let value = match name.as_str() {
            "item_id" => value
                .parse::<i64>()
                .map_or_else(|_| json!(value), |id| json!(id)),
            _ => json!(value),
        };
        body.insert(name.clone(), value);
    }
    serde_json::Value::Object(body)
}

#[utoipa::path(
    operation_id = "chatUnreadCount",
    tag = "admin: chat",
    security(("session" = [])),
    responses(
        (status = 200, description = "Unread messages by others: in total, per tab and per thread", content_type = "application/json", body = crate::schemas::chat::ChatUnreadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
    )
)]
#[get("/chat/unread-count")]
pub async fn unread_count(
    state: web::Data<AppState>,
    signed_in: SignedIn,
) -> Result<HttpResponse, ApiError> {
    let count = chat::unread_count(&state, &signed_in.0).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": count })))
}

#[utoipa::path(
    operation_id = "chatOptions",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("kind" = String, Path, pattern = "^(users|groups|directory|collections|items|item-picker)$", description = "Which picker"),
        crate::schemas::chat::ChatOptionParams,
    ),
    responses(
        (status = 200, description = "A page of what the picker offers the user", content_type = "application/json", body = crate::schemas::chat::ChatOptionPage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/chat/options/{kind}")]
pub async fn options(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    kind: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let kind = chat::PickerKind::parse(&kind).ok_or(AppError::NotFound)?;
    let page = chat::options(&state, &signed_in.0, kind, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

macro_rules! thread_action {
    ($name:ident, $path:literal, $op:literal, $what:literal, $call:path) => {
        #[utoipa::path(
            operation_id = $op,
            tag = "admin: chat",
            security(("session" = [])),
            params(("chat" = String, Path, description = "Thread id (a UUID)")),
            responses(
                (status = 200, description = $what, content_type = "application/json", body = crate::schemas::chat::ChatThreadEnvelope),
                (status = 401, response = crate::schemas::Unauthenticated),
                (status = 403, response = crate::schemas::admin::CrossSite),
                (status = 404, response = crate::schemas::NotFound),
                (status = 422, response = crate::schemas::Invalid),
            )
        )]
        #[post($path)]
        pub async fn $name(
            state: web::Data<AppState>,
            signed_in: SignedIn,
            path: web::Path<String>,
        ) -> Result<HttpResponse, ApiError> {
            let thread = $call(&state, &signed_in.0, &path).await?;
            Ok(HttpResponse::Ok().json(json!({ "data": thread })))
        }
    };
}

thread_action!(
    archive,
    "/chat/{chat}/archive",
    "archiveChatThread",
    "The direct thread, archived for the user until a new message arrives (422 for an item thread)",
    chat::archive
);
thread_action!(
    unarchive,
    "/chat/{chat}/unarchive",
    "unarchiveChatThread",
    "The direct thread, back in the user's private tab (422 for an item thread)",
    chat::unarchive
);

#[utoipa::path(
    operation_id = "chatParticipants",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    responses(
        (status = 200, description = "A direct thread's members and everyone taking part; an item thread's followers", content_type = "application/json", body = crate::schemas::chat::ChatParticipantsEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/chat/{chat}/participants")]
pub async fn participants(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let found = chat::participants(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": found })))
}

#[utoipa::path(
    operation_id = "setChatParticipants",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::chat::SetChatParticipants),
    responses(
        (status = 200, description = "The thread with its new members; who lost access is unsubscribed", content_type = "application/json", body = crate::schemas::chat::ChatThreadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/chat/{chat}/participants")]
pub async fn set_participants(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let thread = chat::set_participants(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": thread })))
}

#[utoipa::path(
    operation_id = "leaveChatThread",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    responses(
        (status = 204, description = "Left (the last one out deletes the thread)"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/leave")]
pub async fn leave(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    chat::leave(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "deleteChatThread",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    responses(
        (status = 204, description = "The direct thread is gone with its messages and attachments"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[delete("/chat/{chat}")]
pub async fn destroy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    chat::delete_thread(&state, &signed_in.0, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "setChatNotify",
    tag = "admin: chat",
    security(("session" = [])),
    params(("collection" = String, Path, description = "Collection slug")),
    request_body(content_type = "application/json", content = crate::schemas::chat::ChatNotifyRequest),
    responses(
        (status = 200, description = "Whether the user now follows every item thread of the collection", content_type = "application/json", body = crate::schemas::chat::ChatNotifyEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/collections/{collection}/chat/notify")]
pub async fn notify(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let on = chat::set_notify(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": { "notify": on } })))
}

#[utoipa::path(
    operation_id = "itemChatThread",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("item" = i64, Path, description = "Item id"),
    ),
    responses(
        (status = 200, description = "The item's thread with its newest messages, or null before its first message", content_type = "application/json", body = crate::schemas::chat::ChatItemThreadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/collections/{collection}/items/{item}/chat")]
pub async fn item_thread(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (collection, item) = path.into_inner();
    let view = chat::item_thread(&state, &signed_in.0, &collection, &item).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": view })))
}

/// Registers the thread routes, the fixed paths before `/chat/{chat}`.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(hub)
        .service(threads)
        .service(start)
        .service(unread_count)
        .service(options)
        .service(notify)
        .service(item_thread)
        .configure(super::chat_messages::register)
        .service(archive)
        .service(unarchive)
        .service(participants)
        .service(set_participants)
        .service(leave)
        .service(destroy)
        .service(show);
}
