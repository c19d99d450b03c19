//! One client socket: the TCP connection, the WebSocket handshake, the protocol's opening frames,
//! and the reasons a socket can end, kept apart so the reports can count each of them.

use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::protocol::{self, Incoming};

/// A client socket after the handshake.
pub type Ws = WebSocketStream<TcpStream>;

/// Where sockets connect: one `--url` and the app key, resolved into what the TCP connect and
/// the handshake need.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `host:port`, for the TCP connect.
    pub authority: String,
    /// The full `ws://…/app/KEY?protocol=7…` URL of the handshake.
    pub request_url: String,
}

/// Why a `--url` was refused.
#[derive(Debug, thiserror::Error)]
#[error("bad --url {url:?}: {reason}")]
pub struct UrlError {
    url: String,
    reason: &'static str,
}

impl Endpoint {
    /// Reads `ws://HOST:PORT[/PREFIX]`. Only `ws://` is accepted: the client has no TLS, and a
    /// benchmark through a TLS proxy would measure the proxy.
    ///
    /// # Errors
    /// When the scheme is not `ws://`, or the authority has no explicit port.
    pub fn parse(base: &str, key: &str) -> Result<Self, UrlError> {
        let err = |reason| UrlError {
            url: base.to_owned(),
            reason,
        };
        let rest = base
            .strip_prefix("ws://")
            .ok_or_else(|| err("only ws:// URLs are supported"))?;
        let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let port = authority
            .rsplit_once(':')
            .map(|(_, port)| port)
            .ok_or_else(|| err("the port must be given (ws://HOST:PORT)"))?;
        if authority.starts_with(':') || port.parse::<u16>().is_err() {
            return Err(err("expected ws://HOST:PORT"));
        }
        let prefix = prefix.trim_end_matches('/');
        let path = if prefix.is_empty() {
            String::new()
        } else {
            format!("/{prefix}")
        };
        Ok(Self {
            authority: authority.to_owned(),
            request_url: format!(
                "ws://{authority}{path}/app/{key}?{}",
                protocol::CLIENT_QUERY
            ),
        })
    }
}

/// How a socket failed or ended. Each variant is counted separately in the reports.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("connect: {0}")]
    Connect(#[source] std::io::Error),
    #[error("handshake: {0}")]
    Handshake(#[source] tungstenite::Error),
    #[error("closed by the server with code {code}{}", if reason.is_empty() { String::new() } else { format!(" ({reason})") })]
    Closed { code: u16, reason: String },
    #[error("closed by the server without a close code")]
    ClosedWithoutCode,
    #[error("connection ended without a close frame")]
    Eof,
    #[error("socket: {0}")]
    Socket(#[source] tungstenite::Error),
    #[error("unexpected frame: {0}")]
    Protocol(String),
    #[error("pusher:error {code:?}: {message}")]
    Pusher { code: Option<i64>, message: String },
    #[error("subscription refused on {channel}: {data}")]
    SubscriptionRefused { channel: String, data: Value },
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
}

impl ConnError {
    /// A short key for the failure tables: errors of one kind share it, whatever their detail
    /// (a port number, a socket id), so 5,000 failures make one row, not 5,000.
    #[must_use]
    pub fn class(&self) -> String {
        match self {
            Self::Connect(e) => format!("connect: {}", e.kind()),
            Self::Handshake(e) => format!("handshake: {}", short_ws_error(e)),
            Self::Closed { code, .. } => format!("close {code}"),
            Self::ClosedWithoutCode => "close (no code)".to_owned(),
            Self::Eof => "eof without close frame".to_owned(),
            Self::Socket(e) => format!("socket: {}", short_ws_error(e)),
            Self::Protocol(_) => "unexpected frame".to_owned(),
            Self::Pusher { code, .. } => format!("pusher:error {code:?}"),
            Self::SubscriptionRefused { .. } => "subscription_error".to_owned(),
            Self::Timeout(what) => format!("timeout: {what}"),
        }
    }

    /// The close code the server sent, if it sent one.
    #[must_use]
    pub fn close_code(&self) -> Option<u16> {
        match self {
            Self::Closed { code, .. } => Some(*code),
            _ => None,
        }
    }
}

fn short_ws_error(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Io(io) => io.kind().to_string(),
        tungstenite::Error::Http(response) => format!("HTTP {}", response.status()),
        other => other.to_string(),
    }
}

/// Socket options. The defaults keep 5,000 sockets cheap in the client, so the client's own
/// memory and CPU disturb the server's figures as little as possible.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `SO_RCVBUF` before connecting. A stalled subscriber uses a small one so the server's
    /// queue for it fills after little traffic.
    pub recv_buffer: Option<u32>,
}

fn ws_config() -> WebSocketConfig {
    // tungstenite allocates the read buffer eagerly (128 KiB by default: 640 MiB for 5,000
    // sockets); frames here are small. A write buffer of 0 writes each frame at once.
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_message_size(Some(1 << 20))
        .max_frame_size(Some(1 << 20))
}

/// Connects, upgrades, and waits for `pusher:connection_established`; returns the socket and
/// its socket id.
///
/// # Errors
/// Any failure up to and including the established frame.
pub async fn open(endpoint: &Endpoint, options: Options) -> Result<(Ws, String), ConnError> {
    let mut last_err = None;
    let addrs = tokio::net::lookup_host(&endpoint.authority)
        .await
        .map_err(ConnError::Connect)?;
    let mut stream = None;
    for addr in addrs {
        match connect_one(addr, options).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_err = Some(e),
        }
    }
    let stream = stream.ok_or_else(|| {
        ConnError::Connect(
            last_err
                .unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address")),
        )
    })?;
    let (mut ws, _response) = tokio_tungstenite::client_async_with_config(
        endpoint.request_url.as_str(),
        stream,
        Some(ws_config()),
    )
    .await
    .map_err(ConnError::Handshake)?;
    loop {
        match recv(&mut ws).await? {
            Incoming::Established { socket_id, .. } => return Ok((ws, socket_id)),
            Incoming::Ping => send(&mut ws, protocol::PONG).await?,
            Incoming::Error { code, message } => return Err(ConnError::Pusher { code, message }),
            other => {
                return Err(ConnError::Protocol(format!(
                    "{other:?} before connection_established"
                )));
            }
        }
    }
}

async fn connect_one(addr: std::net::SocketAddr, options: Options) -> std::io::Result<TcpStream> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(size) = options.recv_buffer {
        socket.set_recv_buffer_size(size)?;
    }
    let stream = socket.connect(addr).await?;
    // Frames are small and latency is what is measured: no Nagle delay on the publishers.
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// The next protocol frame. Only reads, so it is cancel-safe inside `tokio::select!`; WebSocket
/// pings are answered by tungstenite itself, `pusher:ping` is returned for the caller to answer.
///
/// # Errors
/// When the socket ends (close frame, EOF, I/O error) or sends something that is not a frame
/// of the protocol.
pub async fn recv(ws: &mut Ws) -> Result<Incoming, ConnError> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(text))) => {
                return protocol::parse(&text).map_err(|e| {
                    ConnError::Protocol(format!("{e}: {}", truncate(text.as_str(), 200)))
                });
            }
            Some(Ok(Message::Binary(_))) => {
                return Err(ConnError::Protocol("binary frame".to_owned()));
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Ok(Message::Close(Some(frame)))) => {
                return Err(ConnError::Closed {
                    code: frame.code.into(),
                    reason: frame.reason.to_string(),
                });
            }
            Some(Ok(Message::Close(None))) => return Err(ConnError::ClosedWithoutCode),
            Some(Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed))
            | None => return Err(ConnError::Eof),
            Some(Err(e)) => return Err(ConnError::Socket(e)),
        }
    }
}

/// Sends one text frame and flushes it.
///
/// # Errors
/// When the socket is gone.
pub async fn send(ws: &mut Ws, text: &str) -> Result<(), ConnError> {
    ws.send(Message::text(text))
        .await
        .map_err(ConnError::Socket)
}

/// Sends a `pusher:subscribe` frame and waits for its `subscription_succeeded`, answering pings
/// meanwhile; returns the decoded `data` of the success (the member list on presence channels).
///
/// # Errors
/// A `subscription_error`, a `pusher:error`, or the socket ending first.
pub async fn subscribe(ws: &mut Ws, frame: &str, channel: &str) -> Result<Value, ConnError> {
    send(ws, frame).await?;
    loop {
        match recv(ws).await? {
            Incoming::SubscriptionSucceeded { channel: c, data } if c == channel => {
                return Ok(data);
            }
            Incoming::SubscriptionError { channel, data } => {
                return Err(ConnError::SubscriptionRefused { channel, data });
            }
            Incoming::Error { code, message } => return Err(ConnError::Pusher { code, message }),
            Incoming::Ping => send(ws, protocol::PONG).await?,
            // Events of other subscribers may already flow on the channel.
            _ => {}
        }
    }
}

/// Closes politely (a close frame, without waiting for the server's answer) so the server logs
/// a normal close; gives up after a second, as a bench ending must not hang on one socket.
pub async fn close(mut ws: Ws) {
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_builds_the_pusher_url() {
        let e = Endpoint::parse("ws://127.0.0.1:8080", "app-key").unwrap();
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(
            e.request_url,
            "ws://127.0.0.1:8080/app/app-key?protocol=7&client=js&version=8.4.0"
        );
        let e = Endpoint::parse("ws://localhost:81/rt/", "k").unwrap();
        assert_eq!(
            e.request_url,
            "ws://localhost:81/rt/app/k?protocol=7&client=js&version=8.4.0"
        );
    }

    #[test]
    fn endpoint_refuses_what_the_client_cannot_reach() {
        assert!(Endpoint::parse("wss://example.com:443", "k").is_err());
        assert!(Endpoint::parse("ws://example.com", "k").is_err());
        assert!(Endpoint::parse("ws://example.com:http", "k").is_err());
        assert!(Endpoint::parse("http://example.com:80", "k").is_err());
    }

    #[test]
    fn error_classes_group_by_kind() {
        let closed = ConnError::Closed {
            code: 4200,
            reason: "slow".into(),
        };
        assert_eq!(closed.class(), "close 4200");
        assert_eq!(closed.close_code(), Some(4200));
        assert_eq!(
            closed.to_string(),
            "closed by the server with code 4200 (slow)"
        );
        let refused = ConnError::Connect(std::io::ErrorKind::ConnectionRefused.into());
        assert_eq!(refused.class(), "connect: connection refused");
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
