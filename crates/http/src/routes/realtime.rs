//! The realtime server's HTTP routes (issue 20): the WebSocket at `GET /app/{key}` (its frame pump
//! is [`crate::websocket`]) and channel authorization at `POST /broadcasting/auth`. The protocol
//! itself is `vellum_app::realtime`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, post, web};
use serde::Deserialize;
use vellum_app::AppState;
use vellum_app::broadcasting;
use vellum_policy::ClientAddr;

use crate::error::ApiError;
use crate::session::{AdminEdge, SignedIn};

#[derive(Debug, Deserialize)]
pub struct SocketQuery {
    protocol: Option<String>,
}

/// `GET /app/{key}?protocol=7`: upgrades to a WebSocket speaking the Pusher protocol. A wrong
/// key or protocol version is answered over the socket, as Pusher does (`pusher:error`, then a
/// close with its code), so clients report it; an `Origin` other than `VELLUM_BASE_URL`'s is
/// refused before the upgrade (403): the upgrade is a GET that carries cookies.
pub async fn socket(
    req: HttpRequest,
    body: web::Payload,
    key: web::Path<String>,
    query: web::Query<SocketQuery>,
    state: web::Data<AppState>,
    edge: web::Data<AdminEdge>,
) -> Result<HttpResponse, actix_web::Error> {
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .map(header::HeaderValue::as_bytes);
    if origin.is_some_and(|origin| origin != edge.origin.as_bytes()) {
        return Err(ApiError::CrossSite.into());
    }
    let from = match crate::actor::client_ip(&req, &state.config().trusted_proxies) {
        ClientAddr::Known(ip) => Some(ip),
        // Behind a proxy that forwarded no usable address: counted against the proxy.
        ClientAddr::Unknown => req.peer_addr().map(|peer| peer.ip()),
    };
    let request = crate::websocket::Request {
        key: &key,
        version: query.protocol.as_deref(),
        from,
    };
    crate::websocket::open(&req, body, state.realtime().clone(), &request)
}

/// The largest channel authorization body read: a socket id and a channel name.
const AUTH_BODY_LIMIT: usize = 4 * 1024;

#[utoipa::path(
    operation_id = "authorizeChannel",
    tag = "admin: realtime",
    security(("session" = [])),
    request_body(content = crate::schemas::admin::ChannelAuthRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The subscription's signature (and `channel_data` for a presence channel)", content_type = "application/json", body = crate::schemas::admin::ChannelAuth),
        (status = 401, response = crate::schemas::Unauthenticated),
        (status = 403, response = crate::schemas::admin::CrossSite),
        (status = 413, response = crate::schemas::TooLarge),
        (status = 422, response = crate::schemas::Invalid),
    )
)]
#[post("/broadcasting/auth")]
pub async fn authorize(
    state: web::Data<AppState>,
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let input = crate::body::read_input(payload, AUTH_BODY_LIMIT, &req).await?;
    let field = |name: &str| input.get(name).and_then(|v| v.as_str()).unwrap_or_default();
    let auth =
        broadcasting::authorize(&state, &user.0, field("socket_id"), field("channel_name")).await?;
    Ok(HttpResponse::Ok().json(auth))
}
