//! One realtime socket's task (issue 20): the frame pump between an `actix-ws` session and the
//! socket's [`Connection`].
//!
//! The task waits on four things at once: a frame from the client (answered through the
//! connection), a frame queued for it by a broadcast, the server asking it to close (its queue
//! filled, the server stops), and its activity timer: after `activity_timeout` of silence the
//! server pings, and a socket that does not answer within `pong_timeout` is closed with 4201.

use std::pin::Pin;
use std::time::Duration;

use actix_ws::{
    AggregatedMessage, AggregatedMessageStream, CloseCode, CloseReason, MessageStream, Session,
};
use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::time::Instant;
use vellum_app::realtime::protocol::{self, close};
use vellum_app::realtime::{Connection, Realtime, Refusal};

/// Runs a socket: refused with its error and close code, or served until it closes.
pub(crate) async fn run(
    realtime: Realtime,
    refusal: Option<(u16, &'static str)>,
    session: Session,
    stream: MessageStream,
) {
    let stream = stream
        .max_frame_size(protocol::MAX_FRAME)
        .aggregate_continuations()
        .max_continuation_size(protocol::MAX_FRAME);
    match refusal {
        Some((code, message)) => refuse(session, code, message).await,
        None => match realtime.connect() {
            Ok(connection) => pump(&realtime, connection, session, stream).await,
            Err(Refusal::OverCapacity) => {
                refuse(session, close::OVER_CAPACITY, "Over capacity.").await;
            }
            Err(Refusal::Stopping) => {
                refuse(session, close::RECONNECT, "The server is restarting.").await;
            }
        },
    }
}

/// Why a socket is refused before its first frame, if it is.
pub(crate) fn admission(
    realtime: &Realtime,
    key: &str,
    version: Option<&str>,
) -> Option<(u16, &'static str)> {
    if key != realtime.credentials().key() {
        return Some((close::APP_NOT_FOUND, "Application does not exist."));
    }
    match version.map(str::parse::<u32>) {
        None => Some((close::NO_PROTOCOL, "No protocol version supplied.")),
        // pusher-js 8 speaks 7; older clients speaking 5 and 6 frame messages the same way.
        Some(Ok(5..=protocol::PROTOCOL)) => None,
        Some(_) => Some((close::UNSUPPORTED_PROTOCOL, "Unsupported protocol version.")),
    }
}

async fn refuse(mut session: Session, code: u16, message: &'static str) {
    let _ = session
        .text(text(protocol::error(Some(code), message)))
        .await;
    let _ = session.close(Some(reason(code, message))).await;
}

fn reason(code: u16, message: &str) -> CloseReason {
    CloseReason {
        code: CloseCode::Other(code),
        description: Some(message.to_owned()),
    }
}

/// A frame of the protocol as the text the session sends (they are JSON, so always UTF-8).
fn text(frame: Bytes) -> bytestring::ByteString {
    bytestring::ByteString::try_from(frame).unwrap_or_default()
}

/// Runs one socket until it closes, then drops its [`Connection`] (which leaves its channels).
async fn pump(
    realtime: &Realtime,
    mut connection: Connection,
    mut session: Session,
    mut stream: AggregatedMessageStream,
) {
    let activity = realtime.config().activity_timeout;
    let pong_timeout = realtime.config().pong_timeout;
    if session.text(text(connection.established())).await.is_err() {
        return;
    }
    let signal = connection.close_signal();
    let socket_id = connection.socket_id().to_owned();
    // Created once, not per frame: a broadcast wakes thousands of these tasks, and each loop
    // turn would otherwise register a fresh waiter and timer.
    let closing = signal.requested();
    tokio::pin!(closing);
    let timer = tokio::time::sleep(activity);
    tokio::pin!(timer);
    let mut pinged = false;
    let ending: Option<(u16, &'static str)> = loop {
        tokio::select! {
            biased;
            code = &mut closing => break Some((code, closing_reason(code))),
            message = stream.next() => {
                let Some(message) = message else { break None };
                // Any frame from the client counts as activity.
                timer.as_mut().reset(Instant::now() + activity);
                pinged = false;
                match message {
                    Ok(AggregatedMessage::Text(text_frame)) => {
                        let reply = connection.handle(&text_frame).await;
                        if let Err(ending) = send_all(&mut session, closing.as_mut(), reply.frames).await {
                            break ending;
                        }
                    }
                    Ok(AggregatedMessage::Ping(bytes)) => {
                        if session.pong(&bytes).await.is_err() {
                            break None;
                        }
                    }
                    Ok(AggregatedMessage::Pong(_) | AggregatedMessage::Binary(_)) => {}
                    Ok(AggregatedMessage::Close(_)) => break Some((1000, "Closed by the client.")),
                    Err(_) => break Some((1009, "Frames are limited to 64 KiB.")),
                }
            }
            frame = connection.outbound() => {
                let Some(frame) = frame else { break None };
                // What else is queued goes out in the same turn.
                let mut frames = vec![frame];
                while frames.len() < BATCH
                    && let Some(more) = connection.try_outbound()
                {
                    frames.push(more);
                }
                if let Err(ending) = send_all(&mut session, closing.as_mut(), frames).await {
                    break ending;
                }
            }
            () = &mut timer => {
                if pinged {
                    break Some((close::PONG_TIMEOUT, "Pong reply not received."));
                }
                if session.text(text(protocol::ping())).await.is_err() {
                    break None;
                }
                timer.as_mut().reset(Instant::now() + pong_timeout);
                pinged = true;
            }
        }
    };
    if let Some((close::RECONNECT, _)) = ending
        && !realtime.stopping()
    {
        tracing::info!(%socket_id, "realtime: a socket fell behind its queue and is closed with 4200");
    }
    // The socket leaves its channels before the close handshake: a client that stopped reading
    // may take a while to get its close frame, and must not be offered more events meanwhile.
    drop(connection);
    if let Some((code, message)) = ending {
        // Queued behind what the client has not read yet. A client that never reads again
        // never sees it: after CLOSE_WAIT the task ends, and the connection, still holding
        // the session's few buffered frames, is cut by the kernel after VELLUM_WRITE_TIMEOUT
        // (TCP_USER_TIMEOUT); its client sees an abnormal close and reconnects.
        let close = session.close(Some(reason(code, message)));
        let _ = tokio::time::timeout(CLOSE_WAIT, close).await;
    }
}

/// How long the close frame may wait for a client to read what was sent before it.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

fn closing_reason(code: u16) -> &'static str {
    match code {
        close::RECONNECT => "Reconnect now.",
        _ => "Closed by the server.",
    }
}

/// Queued frames sent in one turn of a socket's task, at most.
const BATCH: usize = 32;

/// Sends `frames`. Fails with how the socket ends when it is gone (`None`) or the server asked
/// it to close meanwhile (`closing` resolved): a client that stopped reading fills the session's
/// buffer, and must not hold this task.
async fn send_all(
    session: &mut Session,
    mut closing: Pin<&mut impl Future<Output = u16>>,
    frames: Vec<Bytes>,
) -> Result<(), Option<(u16, &'static str)>> {
    for frame in frames {
        tokio::select! {
            biased;
            code = closing.as_mut() => return Err(Some((code, closing_reason(code)))),
            sent = session.text(text(frame)) => if sent.is_err() { return Err(None) },
        }
    }
    Ok(())
}
