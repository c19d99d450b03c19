//! This process's sockets and who listens on which channel.
//!
//! Two sharded maps ([`dashmap`]): sockets by local id, with the channels each holds, and
//! channels by name, with a send handle per subscribed socket. Locks are per shard and never
//! held across an await; the socket map is always locked before the channel map, so the two
//! cannot deadlock. A broadcast takes one channel shard's read lock and `try_send`s the shared
//! frame into each socket's bounded queue: a full queue marks that socket for closing (4200)
//! instead of waiting for it, so one slow client never slows the others. Queues hold WebSocket
//! frames as written ([`super::wire`]); the registry never looks inside them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use bytes::Bytes;
use dashmap::DashMap;
use futures_util::task::AtomicWaker;
use tokio::sync::{Notify, mpsc};

use super::presence::Member;
use super::protocol::{ChannelKind, close};

/// A socket's number within this process (the part of its `socket_id` after the dot).
pub(crate) type LocalId = u64;

/// Tells a socket's task and its writer ([`super::Outbox`]) to close with a code, once.
#[derive(Debug, Default)]
pub(crate) struct Closer {
    code: AtomicU16,
    notify: Notify,
    writer: AtomicWaker,
}

impl Closer {
    /// Asks for a close with `code`; the first request wins.
    pub(crate) fn close(&self, code: u16) {
        if self
            .code
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // A stored permit: the task sees it even when it is not waiting right now.
            self.notify.notify_one();
            self.writer.wake();
        }
    }

    /// Wakes the writer polling with `waker` when a close is requested.
    pub(crate) fn register(&self, waker: &std::task::Waker) {
        self.writer.register(waker);
    }

    /// The requested close code, once one was requested.
    pub(crate) fn code(&self) -> Option<u16> {
        match self.code.load(Ordering::Acquire) {
            0 => None,
            code => Some(code),
        }
    }

    /// Resolves when a close is requested.
    pub(crate) async fn requested(&self) -> u16 {
        loop {
            if let Some(code) = self.code() {
                return code;
            }
            self.notify.notified().await;
        }
    }
}

/// What a socket's queue and closer are reached through.
#[derive(Debug, Clone)]
pub(crate) struct Handle {
    pub(crate) tx: mpsc::Sender<Bytes>,
    pub(crate) closer: Arc<Closer>,
}

impl Handle {
    /// Queues `frame`; a full queue closes the socket (4200: the client reconnects and
    /// refetches). Answers whether the frame was queued.
    pub(crate) fn offer(&self, frame: Bytes) -> bool {
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.closer.close(close::RECONNECT);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// One subscription of a socket: whose it is, for revocation and presence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subscription {
    pub(crate) kind: ChannelKind,
    /// The user the subscription was authorized for, when the channel names one
    /// (`private-App.Models.User.{id}`) or it is a presence channel.
    pub(crate) user: Option<String>,
    /// The presence member (presence channels only).
    pub(crate) member: Option<Member>,
}

#[derive(Debug)]
struct SocketEntry {
    handle: Handle,
    subscriptions: HashMap<String, Subscription>,
}

/// Why a subscription was not added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubscribeRefusal {
    /// The socket already holds as many as it may.
    TooMany,
    /// The socket is gone.
    Gone,
}

#[derive(Debug, Default)]
pub(crate) struct Registry {
    sockets: DashMap<LocalId, SocketEntry>,
    channels: DashMap<String, HashMap<LocalId, Handle>>,
    count: AtomicUsize,
}

impl Registry {
    /// Adds a socket unless `max` are held already.
    pub(crate) fn add(&self, id: LocalId, handle: Handle, max: usize) -> bool {
        if self.count.fetch_add(1, Ordering::AcqRel) >= max {
            self.count.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.sockets.insert(
            id,
            SocketEntry {
                handle,
                subscriptions: HashMap::new(),
            },
        );
        true
    }

    /// Removes a socket and its subscriptions; answers them (presence leaves follow).
    pub(crate) fn remove(&self, id: LocalId) -> Vec<(String, Subscription)> {
        let Some((_, entry)) = self.sockets.remove(&id) else {
            return Vec::new();
        };
        self.count.fetch_sub(1, Ordering::AcqRel);
        let subscriptions: Vec<_> = entry.subscriptions.into_iter().collect();
        for (channel, _) in &subscriptions {
            self.drop_listener(channel, id);
        }
        subscriptions
    }

    fn drop_listener(&self, channel: &str, id: LocalId) {
        // Removes the channel's entry once its last listener is gone (a map entry per channel
        // ever used would grow without bound).
        self.channels.remove_if_mut(channel, |_, listeners| {
            listeners.remove(&id);
            listeners.is_empty()
        });
    }

    /// Subscribes socket `id` to `channel`; `Ok(false)` when it already was.
    pub(crate) fn subscribe(
        &self,
        id: LocalId,
        channel: &str,
        subscription: Subscription,
        max: usize,
    ) -> Result<bool, SubscribeRefusal> {
        let mut entry = self.sockets.get_mut(&id).ok_or(SubscribeRefusal::Gone)?;
        if entry.subscriptions.contains_key(channel) {
            return Ok(false);
        }
        if entry.subscriptions.len() >= max {
            return Err(SubscribeRefusal::TooMany);
        }
        entry.subscriptions.insert(channel.to_owned(), subscription);
        let handle = entry.handle.clone();
        self.channels
            .entry(channel.to_owned())
            .or_default()
            .insert(id, handle);
        Ok(true)
    }

    /// Unsubscribes socket `id` from `channel`; answers the subscription it held.
    pub(crate) fn unsubscribe(&self, id: LocalId, channel: &str) -> Option<Subscription> {
        let removed = self
            .sockets
            .get_mut(&id)
            .and_then(|mut entry| entry.subscriptions.remove(channel))?;
        self.drop_listener(channel, id);
        Some(removed)
    }

    /// Whether socket `id` is subscribed to `channel`, and as what.
    pub(crate) fn subscription(&self, id: LocalId, channel: &str) -> Option<Subscription> {
        self.sockets
            .get(&id)
            .and_then(|entry| entry.subscriptions.get(channel).cloned())
    }

    /// Queues `frame` for every socket on `channel` but `except`; answers how many got it.
    #[cfg(test)]
    pub(crate) fn deliver(&self, channel: &str, frame: &Bytes, except: Option<LocalId>) -> usize {
        let Some(listeners) = self.channels.get(channel) else {
            return 0;
        };
        listeners
            .iter()
            .filter(|(id, _)| Some(**id) != except)
            .filter(|(_, handle)| handle.offer(frame.clone()))
            .count()
    }

    /// The sockets on `channel`, with their queues.
    pub(crate) fn listeners(&self, channel: &str) -> Vec<(LocalId, Handle)> {
        self.channels
            .get(channel)
            .map_or_else(Vec::new, |listeners| {
                listeners
                    .iter()
                    .map(|(id, handle)| (*id, handle.clone()))
                    .collect()
            })
    }

    /// Queues `frame` for socket `id` alone.
    pub(crate) fn send_to(&self, id: LocalId, frame: Bytes) -> bool {
        self.sockets
            .get(&id)
            .is_some_and(|entry| entry.handle.offer(frame))
    }

    /// Every subscription held for `user` (on `channel` only, when given).
    pub(crate) fn held_by(&self, user: &str, channel: Option<&str>) -> Vec<(LocalId, String)> {
        let mut found = Vec::new();
        for entry in &self.sockets {
            for (name, subscription) in &entry.subscriptions {
                if subscription.user.as_deref() == Some(user)
                    && channel.is_none_or(|wanted| wanted == name)
                {
                    found.push((*entry.key(), name.clone()));
                }
            }
        }
        found
    }

    /// Every presence member this process holds: (channel, member, sockets).
    pub(crate) fn presence_counts(&self) -> Vec<(String, Member, i32)> {
        let mut counts: HashMap<(String, String), (Member, i32)> = HashMap::new();
        for entry in &self.sockets {
            for (channel, subscription) in &entry.subscriptions {
                if let Some(member) = &subscription.member {
                    counts
                        .entry((channel.clone(), member.user_id.clone()))
                        .or_insert_with(|| (member.clone(), 0))
                        .1 += 1;
                }
            }
        }
        counts
            .into_iter()
            .map(|((channel, _), (member, n))| (channel, member, n))
            .collect()
    }

    /// Asks every socket to close with `code`.
    pub(crate) fn close_all(&self, code: u16) {
        for entry in &self.sockets {
            entry.handle.closer.close(code);
        }
    }

    /// Sockets held now.
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Channels with at least one listener now.
    pub(crate) fn channels(&self) -> usize {
        self.channels.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle(capacity: usize) -> (Handle, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(capacity);
        (
            Handle {
                tx,
                closer: Arc::new(Closer::default()),
            },
            rx,
        )
    }

    fn private(user: Option<&str>) -> Subscription {
        Subscription {
            kind: ChannelKind::Private,
            user: user.map(str::to_owned),
            member: None,
        }
    }

    #[test]
    fn delivers_to_subscribers_but_the_excepted_one() {
        let registry = Registry::default();
        let (a, mut rx_a) = handle(4);
        let (b, mut rx_b) = handle(4);
        assert!(registry.add(1, a, 10));
        assert!(registry.add(2, b, 10));
        assert_eq!(
            registry.subscribe(1, "private-x", private(None), 10),
            Ok(true)
        );
        assert_eq!(
            registry.subscribe(1, "private-x", private(None), 10),
            Ok(false)
        );
        assert_eq!(
            registry.subscribe(2, "private-x", private(None), 10),
            Ok(true)
        );
        let frame = Bytes::from_static(b"hi");
        assert_eq!(registry.deliver("private-x", &frame, Some(1)), 1);
        assert!(rx_a.try_recv().is_err());
        assert_eq!(rx_b.try_recv().unwrap(), frame);
        assert_eq!(registry.deliver("private-y", &frame, None), 0);
    }

    #[test]
    fn a_full_queue_closes_its_socket_only() {
        let registry = Registry::default();
        let (slow, _rx_slow) = handle(1);
        let slow_closer = Arc::clone(&slow.closer);
        let (fast, mut rx_fast) = handle(8);
        registry.add(1, slow, 10);
        registry.add(2, fast, 10);
        registry
            .subscribe(1, "private-x", private(None), 10)
            .unwrap();
        registry
            .subscribe(2, "private-x", private(None), 10)
            .unwrap();
        let frame = Bytes::from_static(b"m");
        assert_eq!(registry.deliver("private-x", &frame, None), 2);
        assert_eq!(registry.deliver("private-x", &frame, None), 1);
        assert_eq!(slow_closer.code(), Some(close::RECONNECT));
        assert_eq!(rx_fast.try_recv().unwrap(), frame);
        assert_eq!(rx_fast.try_recv().unwrap(), frame);
    }

    #[test]
    fn bounds_sockets_and_subscriptions_and_forgets_empty_channels() {
        let registry = Registry::default();
        let (a, _ra) = handle(1);
        let (b, _rb) = handle(1);
        assert!(registry.add(1, a, 1));
        assert!(!registry.add(2, b, 1));
        assert_eq!(registry.len(), 1);
        registry
            .subscribe(1, "private-a", private(None), 1)
            .unwrap();
        assert_eq!(
            registry.subscribe(1, "private-b", private(None), 1),
            Err(SubscribeRefusal::TooMany)
        );
        assert_eq!(registry.channels(), 1);
        assert!(registry.unsubscribe(1, "private-a").is_some());
        assert_eq!(registry.channels(), 0);
        registry
            .subscribe(1, "private-b", private(Some("7")), 1)
            .unwrap();
        assert_eq!(
            registry.held_by("7", None),
            vec![(1, "private-b".to_owned())]
        );
        assert!(registry.held_by("7", Some("private-a")).is_empty());
        let removed = registry.remove(1);
        assert_eq!(removed.len(), 1);
        assert_eq!((registry.len(), registry.channels()), (0, 0));
        assert!(registry.remove(1).is_empty());
    }
}
