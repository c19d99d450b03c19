//! The realtime server (issue 20) over real sockets: a [`Live`] server per test and WebSocket
//! clients ([`Ws`], tokio-tungstenite) speaking the Pusher protocol as pusher-js does. The same
//! tests run against unmodified pusher-js and laravel-echo in `tests/realtime/` (Node).

mod auth;
mod chat;
mod protocol;
mod replicas;

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use vellum_http::AppState;

use crate::admin::{Session, admin_request};
use crate::support::send_to;

/// How long a test waits for a frame that should come.
const WAIT: Duration = Duration::from_secs(5);

pub use crate::socket::Live;

impl Live {
    /// The socket URL for `key` and `protocol`.
    pub fn url(&self, key: &str, query: &str) -> String {
        format!("ws://{}/app/{key}{query}", self.addr)
    }

    /// A connected, established socket.
    pub async fn socket(&self, state: &AppState) -> Ws {
        let key = state.realtime().credentials().key().to_owned();
        Ws::connect(&self.url(&key, "?protocol=7&client=js&version=8.4.0")).await
    }
}

/// A Pusher-protocol client.
pub struct Ws {
    stream: WebSocketStream<MaybeTlsStream<TcpStream>>,
    pub socket_id: String,
}

impl Ws {
    /// Connects and reads `pusher:connection_established`.
    pub async fn connect(url: &str) -> Self {
        let (stream, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut ws = Self {
            stream,
            socket_id: String::new(),
        };
        let established = ws.expect("pusher:connection_established").await;
        let data = data(&established);
        ws.socket_id = data["socket_id"].as_str().unwrap().to_owned();
        assert_eq!(data["activity_timeout"], 120, "{established}");
        ws
    }

    /// Connects without reading anything (for refusals).
    pub async fn raw(url: &str, origin: Option<&str>) -> Result<Self, tungstenite::Error> {
        let headers: Vec<_> = origin
            .map(|origin| ("origin", origin))
            .into_iter()
            .collect();
        Self::raw_with(url, &headers).await
    }

    /// Connects with extra request headers, reading nothing.
    pub async fn raw_with(url: &str, headers: &[(&str, &str)]) -> Result<Self, tungstenite::Error> {
        let mut request = url.into_client_request().unwrap();
        for (name, value) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().insert(name, value.parse().unwrap());
        }
        let (stream, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Self {
            stream,
            socket_id: String::new(),
        })
    }

    pub async fn send(&mut self, frame: Value) {
        self.send_text(&frame.to_string()).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.stream
            .send(Message::Text(text.to_owned().into()))
            .await
            .unwrap();
    }

    /// The next text frame as JSON (`None` when the socket closed first).
    pub async fn next(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let message = tokio::time::timeout_at(deadline, self.stream.next())
                .await
                .ok()??;
            match message {
                Ok(Message::Text(text)) => return Some(serde_json::from_str(&text).unwrap()),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Skips frames until one named `event` (panics after [`WAIT`]).
    pub async fn expect(&mut self, event: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await {
                Some(frame) if frame["event"] == event => return frame,
                Some(_) => {}
                None => panic!("no {event} frame: the socket closed or {WAIT:?} passed"),
            }
        }
    }

    /// Asserts that no frame named `event` arrives within `within`.
    pub async fn none_of(&mut self, event: &str, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return;
            }
            match self.next(left).await {
                Some(frame) => assert_ne!(frame["event"], event, "unexpected {frame}"),
                None => return,
            }
        }
    }

    /// Reads until the server closes; answers the close frame.
    pub async fn closed(&mut self, within: Duration) -> Option<CloseFrame> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.stream.next()).await {
                Ok(Some(Ok(Message::Close(frame)))) => return frame,
                Ok(Some(Ok(_))) => {}
                Ok(Some(Err(_)) | None) | Err(_) => return None,
            }
        }
    }

    /// Subscribes with `auth` (and `channel_data`); answers the server's reply frame.
    pub async fn subscribe(&mut self, channel: &str, auth: &Value) -> Value {
        let mut data = json!({"channel": channel});
        if let Some(signature) = auth.get("auth") {
            data["auth"] = signature.clone();
        }
        if let Some(channel_data) = auth.get("channel_data") {
            data["channel_data"] = channel_data.clone();
        }
        self.send(json!({"event": "pusher:subscribe", "data": data}))
            .await;
        loop {
            let frame = self.next(WAIT).await.expect("a subscription reply");
            if frame["channel"] == channel
                && (frame["event"] == "pusher_internal:subscription_succeeded"
                    || frame["event"] == "pusher:subscription_error")
            {
                return frame;
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.stream.close(None).await;
    }
}

/// A frame's `data`, decoded from its JSON string.
pub fn data(frame: &Value) -> Value {
    let text = frame["data"]
        .as_str()
        .unwrap_or_else(|| panic!("data is not a string: {frame}"));
    serde_json::from_str(text).unwrap()
}

/// `POST /broadcasting/auth` as `session` (JSON); answers status and body.
pub async fn authorize(
    state: &AppState,
    session: Option<&Session>,
    socket_id: &str,
    channel: &str,
) -> (u16, Value) {
    let res = send_to(
        state,
        admin_request(
            actix_web::http::Method::POST,
            "/broadcasting/auth",
            session,
            Some(json!({"socket_id": socket_id, "channel_name": channel})),
        ),
    )
    .await;
    let body = if res.body.is_empty() {
        Value::Null
    } else {
        res.json()
    };
    (res.status.as_u16(), body)
}

/// Subscribes `ws` to `channel` as `session` through the real authorization endpoint; asserts
/// success and answers the `subscription_succeeded` frame.
pub async fn join(state: &AppState, ws: &mut Ws, session: &Session, channel: &str) -> Value {
    let (status, auth) = authorize(state, Some(session), &ws.socket_id, channel).await;
    assert_eq!(status, 200, "{auth}");
    let reply = ws.subscribe(channel, &auth).await;
    assert_eq!(
        reply["event"], "pusher_internal:subscription_succeeded",
        "{reply}"
    );
    reply
}

/// The presence channel of the chat thread of `blog()`'s item `item` (authors 1, tags 2 and 3,
/// articles 4 and 5), started by `session` (who needs `can-show-chat` and
/// `can-show-collections`): a channel every admin may join.
pub async fn chat_channel(state: &AppState, session: &Session, item: i64) -> String {
    let collection = match item {
        1 => "authors",
        2 | 3 => "tags",
        _ => "articles",
    };
    let res = send_to(
        state,
        admin_request(
            actix_web::http::Method::POST,
            "/chat/threads",
            Some(session),
            Some(json!({"kind": "item", "collection": collection, "item_id": item})),
        ),
    )
    .await;
    assert!(
        res.status.is_success(),
        "{}",
        String::from_utf8_lossy(&res.body)
    );
    format!(
        "presence-chat.{}",
        res.json()["data"]["id"].as_str().unwrap()
    )
}

/// Creates a user holding `roles` (named by its email) and signs it in: its session and id.
pub async fn user(state: &AppState, email: &str, roles: &[&str]) -> (Session, i64) {
    let id = crate::admin::create_user(state, email, email, roles).await;
    (
        crate::admin::sign_in_at(state, email, crate::admin::PASSWORD).await,
        id,
    )
}

/// Waits (up to [`WAIT`]) until `condition` holds.
pub async fn eventually(condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "condition not met within {WAIT:?}"
        );
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
}
