//! A server-sent event stream (`POST /ai/chat`): each event a `data:` line of JSON, a comment
//! every [`KEEP_ALIVE`] while nothing else is sent (so proxies and browsers do not time the
//! stream out), and `data: [DONE]` when the events end.
//!
//! Nothing may buffer it: the response says `Content-Encoding: identity` (the compression
//! middleware passes it through untouched), `Cache-Control: no-cache` and
//! `X-Accel-Buffering: no` (nginx). Dropping the body (the client went away) drops the events'
//! receiver, which is how the generating task learns to stop.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::header;
use bytes::Bytes;
use futures_util::Stream;
use vellum_app::ai::{ChatStream, StreamEvent};

/// How long the stream may stay silent before a comment goes out.
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// The streaming response of `events`.
pub(crate) fn respond(events: ChatStream) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::CONTENT_ENCODING, "identity"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(EventBody::new(events, KEEP_ALIVE))
}

/// The body: events as they come, comments in the silences, `[DONE]` at the end.
pub(crate) struct EventBody<S = ChatStream> {
    events: S,
    keep_alive: Pin<Box<tokio::time::Sleep>>,
    every: Duration,
    done: bool,
}

impl<S: Stream<Item = StreamEvent> + Unpin> EventBody<S> {
    pub(crate) fn new(events: S, every: Duration) -> Self {
        Self {
            events,
            keep_alive: Box::pin(tokio::time::sleep(every)),
            every,
            done: false,
        }
    }

    fn rearm(&mut self) {
        let next = tokio::time::Instant::now() + self.every;
        self.keep_alive.as_mut().reset(next);
    }
}

/// One event as its `data:` line (JSON never holds a raw newline, so one line suffices).
pub(crate) fn frame(event: &StreamEvent) -> Bytes {
    Bytes::from(format!("data: {}\n\n", event.to_json()))
}

impl<S: Stream<Item = StreamEvent> + Unpin> Stream for EventBody<S> {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.events).poll_next(cx) {
            Poll::Ready(Some(event)) => {
                self.rearm();
                Poll::Ready(Some(Ok(frame(&event))))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(Some(Ok(Bytes::from_static(b"data: [DONE]\n\n"))))
            }
            Poll::Pending => match self.keep_alive.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.rearm();
                    Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;

    use super::*;

    #[tokio::test]
    async fn events_then_done_with_comments_in_the_silences() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let events = tokio_stream_of(rx);
        let mut body = EventBody::new(events, Duration::from_millis(50));
        tx.send(StreamEvent::Conversation("c1".into()))
            .await
            .unwrap();
        assert_eq!(
            body.next().await.unwrap().unwrap(),
            "data: {\"type\":\"conversation\",\"conversation_id\":\"c1\"}\n\n"
        );
        // Silence: a comment after the interval, then another.
        let started = tokio::time::Instant::now();
        assert_eq!(body.next().await.unwrap().unwrap(), ": keep-alive\n\n");
        assert!(started.elapsed() >= Duration::from_millis(45));
        assert_eq!(body.next().await.unwrap().unwrap(), ": keep-alive\n\n");
        tx.send(StreamEvent::Delta("Hi\n\"there\"".into()))
            .await
            .unwrap();
        assert_eq!(
            body.next().await.unwrap().unwrap(),
            "data: {\"type\":\"delta\",\"content\":\"Hi\\n\\\"there\\\"\"}\n\n"
        );
        drop(tx);
        assert_eq!(body.next().await.unwrap().unwrap(), "data: [DONE]\n\n");
        assert!(body.next().await.is_none());
        assert!(body.next().await.is_none());
    }

    /// A receiver as a stream.
    fn tokio_stream_of(
        rx: tokio::sync::mpsc::Receiver<StreamEvent>,
    ) -> impl Stream<Item = StreamEvent> + Unpin {
        Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        }))
    }
}
