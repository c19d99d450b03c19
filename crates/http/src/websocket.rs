//! One realtime socket (issue 20): the WebSocket upgrade, the response body that writes the
//! socket's [`Outbox`], and the task that reads the client's frames into its [`Connection`].
//!
//! The write side has no task of its own: the response body is the outbox, so a broadcast's
//! `try_send` wakes the connection's dispatcher, which writes the frame as it was framed once for
//! every subscriber. The read task waits on three things: a frame from the client (answered
//! through the connection), the server asking the socket to close (its queue filled, the server
//! stops), and its activity timer: after `activity_timeout` of silence the server pings, and a
//! socket that does not answer within `pong_timeout` is closed with 4201.

use std::net::IpAddr;
use std::time::Duration;

use actix_web::body::BodyStream;
use actix_web::{HttpRequest, HttpResponse, web};
use actix_ws::{AggregatedMessage, AggregatedMessageStream, MessageStream};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use tokio::time::Instant;
use vellum_app::realtime::protocol::{self, close};
use vellum_app::realtime::{Connection, Realtime, Refusal, wire};

/// What the client asked for: the app key in the path and the `protocol` query parameter.
pub(crate) struct Request<'a> {
    pub(crate) key: &'a str,
    pub(crate) version: Option<&'a str>,
    /// Whom the socket counts against (the client address behind trusted proxies).
    pub(crate) from: Option<IpAddr>,
}

/// Upgrades to a WebSocket: served until it closes, or refused over the socket as Pusher does
/// (`pusher:error`, then a close frame with its code), so clients report why.
pub(crate) fn open(
    req: &HttpRequest,
    body: web::Payload,
    realtime: Realtime,
    request: &Request<'_>,
) -> Result<HttpResponse, actix_web::Error> {
    // actix-ws decodes the client's frames only together with its session; the session itself
    // is not used: writing through its channel would cost a task hop per frame.
    let (response, _session, stream) = actix_ws::handle(req, body)?;
    let accepted = match admission(&realtime, request.key, request.version) {
        Some(refusal) => Err(refusal),
        None => realtime.connect(request.from).map_err(refused),
    };
    Ok(match accepted {
        Ok((connection, outbox)) => {
            actix_web::rt::spawn(read(realtime, connection, stream));
            response
                .set_body(BodyStream::new(outbox))
                .map_into_boxed_body()
        }
        Err((code, message)) => {
            let frames = refusal(code, message);
            // A stream, as the served socket's body is: an upgrade has no length.
            let once =
                futures_util::stream::once(
                    async move { Ok::<_, std::convert::Infallible>(frames) },
                );
            response
                .set_body(BodyStream::new(once))
                .map_into_boxed_body()
        }
    })
}

fn refused(refusal: Refusal) -> (u16, &'static str) {
    match refusal {
        Refusal::OverCapacity => (close::OVER_CAPACITY, close::reason(close::OVER_CAPACITY)),
        Refusal::AddressOverCapacity => (
            close::OVER_CAPACITY,
            "Too many connections from this address.",
        ),
        Refusal::Stopping => (close::RECONNECT, "The server is restarting."),
    }
}

/// Why a socket is refused before its first frame, if it is.
fn admission(realtime: &Realtime, key: &str, version: Option<&str>) -> Option<(u16, &'static str)> {
    if key != realtime.credentials().key() {
        return Some((close::APP_NOT_FOUND, close::reason(close::APP_NOT_FOUND)));
    }
    match version.map(str::parse::<u32>) {
        None => Some((close::NO_PROTOCOL, close::reason(close::NO_PROTOCOL))),
        // pusher-js 8 speaks 7; older clients speaking 5 and 6 frame messages the same way.
        Some(Ok(5..=protocol::PROTOCOL)) => None,
        Some(_) => Some((
            close::UNSUPPORTED_PROTOCOL,
            close::reason(close::UNSUPPORTED_PROTOCOL),
        )),
    }
}

/// Reads the client's frames until the socket closes, then drops its [`Connection`] (which
/// leaves its channels).
async fn read(realtime: Realtime, mut connection: Connection, stream: MessageStream) {
    let mut stream: AggregatedMessageStream = stream
        .max_frame_size(protocol::MAX_FRAME)
        .aggregate_continuations()
        .max_continuation_size(protocol::MAX_FRAME);
    let activity = realtime.config().activity_timeout;
    let pong_timeout = realtime.config().pong_timeout;
    let signal = connection.close_signal();
    let socket_id = connection.socket_id().to_owned();
    let closing = signal.requested();
    tokio::pin!(closing);
    let timer = tokio::time::sleep(activity);
    tokio::pin!(timer);
    let mut pinged = false;
    let ending: Option<u16> = loop {
        tokio::select! {
            biased;
            code = &mut closing => break Some(code),
            message = stream.next() => {
                let Some(message) = message else { break None };
                // Any frame from the client counts as activity.
                timer.as_mut().reset(Instant::now() + activity);
                pinged = false;
                let code = match message {
                    Ok(AggregatedMessage::Text(text)) => {
                        connection.receive(&text).await;
                        continue;
                    }
                    Ok(AggregatedMessage::Ping(payload)) => {
                        connection.pong(&payload);
                        continue;
                    }
                    Ok(AggregatedMessage::Pong(_) | AggregatedMessage::Binary(_)) => continue,
                    Ok(AggregatedMessage::Close(_)) => close::NORMAL,
                    Err(_) => close::TOO_BIG,
                };
                connection.close(code);
                break Some(code);
            }
            () = &mut timer => {
                if pinged {
                    connection.close(close::PONG_TIMEOUT);
                    break Some(close::PONG_TIMEOUT);
                }
                connection.ping();
                timer.as_mut().reset(Instant::now() + pong_timeout);
                pinged = true;
            }
        }
    };
    if ending == Some(close::RECONNECT) && !realtime.stopping() {
        tracing::info!(%socket_id, "realtime: a socket fell behind its queue and is closed with 4200");
    }
    // The socket leaves its channels before the close handshake ends: a client that stopped
    // reading may take a while to get its close frame, and must not be offered more meanwhile.
    drop(connection);
    if ending.is_some() {
        // The client answers the close frame and hangs up. One that never reads again never
        // sees it: after CLOSE_WAIT this task ends, and the kernel cuts the connection after
        // VELLUM_WRITE_TIMEOUT (TCP_USER_TIMEOUT); its client sees an abnormal close and
        // reconnects.
        let drained = async { while stream.next().await.is_some() {} };
        let _ = tokio::time::timeout(CLOSE_WAIT, drained).await;
    }
}

/// How long a closed socket's client may take to hang up.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A refused socket's whole output: the error, then the close frame.
fn refusal(code: u16, message: &str) -> Bytes {
    let mut frames = BytesMut::new();
    frames.extend_from_slice(&wire::text(&protocol::error(Some(code), message)));
    frames.extend_from_slice(&wire::close(code, message));
    frames.freeze()
}
