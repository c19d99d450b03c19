//! What one socket writes: the frames queued for it, then its close frame.
//!
//! The HTTP layer makes this the WebSocket response's body, so a broadcast's `try_send` wakes the
//! socket's connection task directly, which writes the already framed bytes ([`super::wire`]):
//! one wake-up and one copy per frame delivered.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use tokio::sync::mpsc;

use super::protocol::close;
use super::registry::Closer;
use super::wire;

/// The frames to write to one socket, ending with a close frame when the server closes it.
#[derive(Debug)]
pub struct Outbox {
    rx: mpsc::Receiver<Bytes>,
    closer: Arc<Closer>,
    done: bool,
}

impl Outbox {
    pub(super) fn new(rx: mpsc::Receiver<Bytes>, closer: Arc<Closer>) -> Self {
        Self {
            rx,
            closer,
            done: false,
        }
    }

    /// The close frame once a close was requested. A socket closed because its queue filled
    /// (4200) gets it at once: what is queued is what its client failed to read. Any other
    /// close first sends what is queued (a `pusher:error` explaining it, say).
    fn closing(&mut self, code: u16) -> Bytes {
        let frame = wire::close(code, close::reason(code));
        if code == close::RECONNECT {
            return frame;
        }
        let mut out = BytesMut::new();
        while let Ok(queued) = self.rx.try_recv() {
            out.extend_from_slice(&queued);
        }
        out.extend_from_slice(&frame);
        out.freeze()
    }
}

impl Stream for Outbox {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // Registered before the code is read, so a close requested in between still wakes us.
        this.closer.register(cx.waker());
        if let Some(code) = this.closer.code() {
            this.done = true;
            return Poll::Ready(Some(Ok(this.closing(code))));
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(frame)) => Poll::Ready(Some(Ok(frame))),
            // Every sender is gone: the socket's connection was dropped without a close (its
            // client went away), so there is nobody to write to.
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt as _;

    use super::*;

    fn open() -> (mpsc::Sender<Bytes>, Arc<Closer>, Outbox) {
        let (tx, rx) = mpsc::channel(8);
        let closer = Arc::new(Closer::default());
        let outbox = Outbox::new(rx, Arc::clone(&closer));
        (tx, closer, outbox)
    }

    async fn next(outbox: &mut Outbox) -> Option<Bytes> {
        outbox.next().await.map(Result::unwrap_or_default)
    }

    #[tokio::test]
    async fn writes_queued_frames_then_ends_when_the_senders_are_gone() {
        let (tx, _closer, mut outbox) = open();
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        tx.try_send(Bytes::from_static(b"b")).unwrap();
        drop(tx);
        assert_eq!(next(&mut outbox).await.unwrap(), "a");
        assert_eq!(next(&mut outbox).await.unwrap(), "b");
        assert_eq!(next(&mut outbox).await, None);
    }

    #[tokio::test]
    async fn a_close_sends_what_is_queued_first_unless_the_queue_overflowed() {
        let (tx, closer, mut outbox) = open();
        tx.try_send(Bytes::from_static(b"error")).unwrap();
        closer.close(close::PONG_TIMEOUT);
        let mut expected = b"error".to_vec();
        expected.extend_from_slice(&wire::close(close::PONG_TIMEOUT, close::reason(4201)));
        assert_eq!(next(&mut outbox).await.unwrap(), expected);
        assert_eq!(
            next(&mut outbox).await,
            None,
            "nothing after the close frame"
        );

        let (tx, closer, mut outbox) = open();
        tx.try_send(Bytes::from_static(b"unread")).unwrap();
        closer.close(close::RECONNECT);
        assert_eq!(
            next(&mut outbox).await.unwrap(),
            wire::close(close::RECONNECT, close::reason(close::RECONNECT))
        );
        assert_eq!(next(&mut outbox).await, None);
    }

    #[tokio::test]
    async fn a_close_requested_while_waiting_wakes_the_writer() {
        let (_tx, closer, mut outbox) = open();
        let waiter = tokio::spawn(async move { next(&mut outbox).await });
        tokio::task::yield_now().await;
        closer.close(close::RECONNECT);
        let frame = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        assert_eq!(frame.unwrap()[0], 0x88, "a close frame");
    }
}
