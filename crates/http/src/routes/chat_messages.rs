//! Team chat's messages and attachments: `GET/POST /chat/{chat}/messages`, edit, delete, pin and
//! react, `POST /chat/{chat}/read`, the first message on an item
//! (`POST /collections/{collection}/items/{item}/chat/messages`), attachments (one request, or
//! chunked under `/chat/{chat}/uploads`) and their download. A write hands the sender's
//! `X-Socket-ID` on, so the sender's socket does not get its own change back.

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, put, route, web};
use serde_json::json;
use vellum_app::{AppState, chat};

use super::chat::socket_of;
use crate::body::{read_body, read_json};
use crate::download::serve_resolved;
use crate::error::ApiError;
use crate::session::SignedIn;

#[utoipa::path(
    operation_id = "listChatMessages",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)"), crate::schemas::chat::ChatMessageParams),
    responses(
        (status = 200, description = "Messages, oldest first", content_type = "application/json", body = crate::schemas::chat::ChatMessagePage),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[get("/chat/{chat}/messages")]
pub async fn list(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = chat::list_messages(&state, &signed_in.0, &path, req.query_string()).await?;
    Ok(HttpResponse::Ok().json(page))
}

#[utoipa::path(
    operation_id = "postChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::chat::PostChatMessage),
    responses(
        (status = 201, description = "The message; the thread hears `MessageCreated`", content_type = "application/json", body = crate::schemas::chat::ChatMessageEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/messages")]
pub async fn post(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let socket = socket_of(&req);
    let message = chat::post(&state, &signed_in.0, &path, &body, socket.as_deref()).await?;
    Ok(HttpResponse::Created().json(json!({ "data": message })))
}

#[utoipa::path(
    operation_id = "postItemChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("collection" = String, Path, description = "Collection slug"),
        ("item" = i64, Path, description = "Item id"),
    ),
    request_body(content_type = "application/json", content = crate::schemas::chat::PostChatMessage),
    responses(
        (status = 201, description = "The message, on the item's thread (started by it when there was none)", content_type = "application/json", body = crate::schemas::chat::ChatMessageEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/collections/{collection}/items/{item}/chat/messages")]
pub async fn post_on_item(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (collection, item) = path.into_inner();
    let socket = socket_of(&req);
    let message = chat::post_on_item(
        &state,
        &signed_in.0,
        &collection,
        &item,
        &body,
        socket.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Created().json(json!({ "data": message })))
}

#[utoipa::path(
    operation_id = "editChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("message" = i64, Path, description = "Message id"),
    ),
    request_body(content_type = "application/json", content = crate::schemas::chat::EditChatMessage),
    responses(
        (status = 200, description = "The edited message; the thread hears `MessageUpdated`", content_type = "application/json", body = crate::schemas::chat::ChatMessageEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[put("/chat/{chat}/messages/{message}")]
pub async fn edit(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (id, message) = path.into_inner();
    let socket = socket_of(&req);
    let edited = chat::edit_message(
        &state,
        &signed_in.0,
        &id,
        &message,
        &body,
        socket.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({ "data": edited })))
}

#[utoipa::path(
    operation_id = "deleteChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("message" = i64, Path, description = "Message id"),
    ),
    responses(
        (status = 204, description = "Deleted with its attachments; the thread hears `MessageDeleted`"),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[delete("/chat/{chat}/messages/{message}")]
pub async fn destroy(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, message) = path.into_inner();
    let socket = socket_of(&req);
    chat::delete_message(&state, &signed_in.0, &id, &message, socket.as_deref()).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(
    operation_id = "pinChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("message" = i64, Path, description = "Message id"),
    ),
    responses(
        (status = 200, description = "The message, pinned now or unpinned when it was; the thread hears `MessageUpdated`", content_type = "application/json", body = crate::schemas::chat::ChatMessageEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[post("/chat/{chat}/messages/{message}/pin")]
pub async fn pin(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, message) = path.into_inner();
    let socket = socket_of(&req);
    let pinned = chat::toggle_pin(&state, &signed_in.0, &id, &message, socket.as_deref()).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": pinned })))
}

#[utoipa::path(
    operation_id = "reactToChatMessage",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("message" = i64, Path, description = "Message id"),
    ),
    request_body(content_type = "application/json", content = crate::schemas::chat::ToggleChatReaction),
    responses(
        (status = 200, description = "The user's reaction added, or taken back when it was there; the thread hears `ReactionToggled`", content_type = "application/json", body = crate::schemas::chat::ChatReactionOutcomeEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/messages/{message}/reactions")]
pub async fn react(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (id, message) = path.into_inner();
    let socket = socket_of(&req);
    let outcome = chat::react(
        &state,
        &signed_in.0,
        &id,
        &message,
        &body,
        socket.as_deref(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({ "data": outcome })))
}

#[utoipa::path(
    operation_id = "markChatRead",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::chat::MarkChatRead),
    responses(
        (status = 200, description = "The read mark and what is left unread; the user's other tabs hear `ChatUnreadUpdated`", content_type = "application/json", body = crate::schemas::chat::ChatReadMarkEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/read")]
pub async fn read(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let mark = chat::mark_read(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": mark })))
}

#[utoipa::path(
    operation_id = "uploadChatAttachment",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    request_body(content_type = "multipart/form-data", content = crate::schemas::chat::ChatAttachmentForm),
    responses(
        (status = 201, description = "The attachment, to send with a message (`attachment_ids`)", content_type = "application/json", body = crate::schemas::chat::ChatAttachmentEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/chat/{chat}/attachments")]
pub async fn upload(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    multipart: Multipart,
) -> Result<HttpResponse, ApiError> {
    let attachment = chat::upload(&state, &signed_in.0, &path, |limit| {
        crate::multipart::read_attachment(&state, multipart, limit)
    })
    .await?;
    Ok(HttpResponse::Created().json(json!({ "data": attachment })))
}

#[utoipa::path(
    operation_id = "downloadChatAttachment",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("attachment" = String, Path, description = "Attachment id (a UUID)"),
    ),
    responses(
        (status = 200, description = "The bytes as an attachment, with ETag and `Cache-Control: private, no-cache`", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 206, description = "One requested byte range", content((Vec<u8> = "application/octet-stream"), (Vec<u8> = "*/*"))),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 416, description = "The requested range is not satisfiable", content_type = "application/json", body = crate::schemas::ErrorBody),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[route(
    "/chat/{chat}/attachments/{attachment}",
    method = "GET",
    method = "HEAD"
)]
pub async fn download(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let (id, attachment) = path.into_inner();
    serve_resolved(&state, &req, || {
        chat::download(&state, &signed_in.0, &id, &attachment)
    })
    .await
}

#[utoipa::path(
    operation_id = "startChatUpload",
    tag = "admin: chat",
    security(("session" = [])),
    params(("chat" = String, Path, description = "Thread id (a UUID)")),
    request_body(content_type = "application/json", content = crate::schemas::chat::StartChatUpload),
    responses(
        (status = 201, description = "The upload: send its chunks, then complete it", content_type = "application/json", body = crate::schemas::chat::ChatUploadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/uploads")]
pub async fn start_upload(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<String>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let status = chat::start_upload(&state, &signed_in.0, &path, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": status })))
}

#[utoipa::path(
    operation_id = "chatUploadStatus",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("upload" = String, Path, description = "Upload id (a UUID)"),
    ),
    responses(
        (status = 200, description = "Which chunks are still missing (to resume)", content_type = "application/json", body = crate::schemas::chat::ChatUploadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
    )
)]
#[get("/chat/{chat}/uploads/{upload}")]
pub async fn upload_status(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, upload_id) = path.into_inner();
    let status = chat::upload_status(&state, &signed_in.0, &id, &upload_id).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": status })))
}

#[utoipa::path(
    operation_id = "putChatUploadChunk",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("upload" = String, Path, description = "Upload id (a UUID)"),
        ("index" = i64, Path, minimum = 0, description = "Chunk index, from 0"),
    ),
    request_body(content_type = "application/octet-stream", content = Vec<u8>, description = "Exactly the chunk's bytes (`chunk_size`, the last chunk the rest)"),
    responses(
        (status = 200, description = "Stored (again, when sent twice); what is still missing", content_type = "application/json", body = crate::schemas::chat::ChatUploadEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[put("/chat/{chat}/uploads/{upload}/chunks/{index}")]
pub async fn upload_chunk(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let (id, upload_id, index) = path.into_inner();
    let bytes = read_body(payload, chat::max_chunk_bytes(), &req).await?;
    let status = chat::upload_chunk(
        &state,
        &signed_in.0,
        &id,
        &upload_id,
        &index,
        bytes.freeze(),
    )
    .await?;
    Ok(HttpResponse::Ok().json(json!({ "data": status })))
}

#[utoipa::path(
    operation_id = "completeChatUpload",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("upload" = String, Path, description = "Upload id (a UUID)"),
    ),
    responses(
        (status = 201, description = "The attachment, to send with a message (`attachment_ids`)", content_type = "application/json", body = crate::schemas::chat::ChatAttachmentEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 422, response = crate::schemas::Invalid),
        (status = 503, response = crate::schemas::Unavailable),
    )
)]
#[post("/chat/{chat}/uploads/{upload}/complete")]
pub async fn complete_upload(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, upload_id) = path.into_inner();
    let attachment = chat::complete_upload(&state, &signed_in.0, &id, &upload_id).await?;
    Ok(HttpResponse::Created().json(json!({ "data": attachment })))
}

#[utoipa::path(
    operation_id = "saveChatAttachment",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("attachment" = String, Path, description = "Attachment id (a UUID)"),
    ),
    request_body(content_type = "application/json", content = crate::schemas::chat::SaveChatAttachment),
    responses(
        (status = 201, description = "The attachment as a new file of the file manager (sharing its bytes); needs `can-create-files`", content_type = "application/json", body = crate::schemas::file_admin_browse::AdminFileEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/attachments/{attachment}/save")]
pub async fn save(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (id, attachment) = path.into_inner();
    let file = chat::save_to_files(&state, &signed_in.0, &id, &attachment, &body).await?;
    Ok(HttpResponse::Created().json(json!({ "data": file })))
}

#[utoipa::path(
    operation_id = "addChatAttachmentToField",
    tag = "admin: chat",
    security(("session" = [])),
    params(
        ("chat" = String, Path, description = "Thread id (a UUID)"),
        ("attachment" = String, Path, description = "Attachment id (a UUID)"),
    ),
    request_body(content_type = "application/json", content = crate::schemas::chat::AddChatAttachmentToField),
    responses(
        (status = 200, description = "The new file and the item with it in the field; needs `can-create-files` and `can-edit-collections`", content_type = "application/json", body = crate::schemas::chat::AddedToFieldEnvelope),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 404, response = crate::schemas::NotFound),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/chat/{chat}/attachments/{attachment}/add-to-field")]
pub async fn add_to_field(
    state: web::Data<AppState>,
    signed_in: SignedIn,
    path: web::Path<(String, String)>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    signed_in.0.require(chat::CHAT_PERMISSION)?;
    let body = read_json(payload, state.config().json_limit, &req).await?;
    let (id, attachment) = path.into_inner();
    let added = chat::add_to_field(&state, &signed_in.0, &id, &attachment, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "data": added })))
}

/// Registers the message and attachment routes.
pub fn register(cfg: &mut web::ServiceConfig) {
    cfg.service(list)
        .service(post)
        .service(post_on_item)
        .service(edit)
        .service(destroy)
        .service(pin)
        .service(react)
        .service(read)
        .service(upload)
        .service(download)
        .service(save)
        .service(add_to_field)
        .service(start_upload)
        .service(upload_status)
        .service(upload_chunk)
        .service(complete_upload);
}
