//! Large fan-outs, paced. Writing one event to a thousand sockets is a thousand socket tasks
//! woken at once on the HTTP workers; a request arriving meanwhile waits behind all of them
//! (issue 21's benchmark: request p99 25 ms with 1,000 subscribers, 7 ms with one). So a
//! channel with more than [`BATCH`] listeners is not written inline: its event goes to one
//! pacing task that offers it [`BATCH`] sockets at a time (more for very large channels, at most
//! [`MAX_BATCHES`] batches) with a short pause between batches, so requests slip in between and
//! each worker's queue stays short. Delivery spreads over at most about 16 ms more; nobody waits
//! behind it. Measured (issue 21's benchmark, 1,000 subscribers): request p99 25 ms → 9 ms,
//! delivery p99 31 ms → 55 ms.
//!
//! Order is kept: one task takes the events in the order they were emitted, and while a channel
//! has events waiting there, its small events queue behind them instead of overtaking.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dashmap::DashMap;
use tokio::sync::mpsc;

use super::registry::{Handle, LocalId};

/// Sockets offered an event at once.
pub(crate) const BATCH: usize = 64;
/// The pause between two batches (the timer's resolution makes it about a millisecond).
const PAUSE: Duration = Duration::from_micros(500);
/// Batches one event is cut into at most: a very large channel gets larger batches rather than
/// more pauses, so pacing delays its last socket by about this many milliseconds, whatever
/// its size.
const MAX_BATCHES: usize = 16;
/// Events waiting to be paced; past it they are written inline (never dropped).
const QUEUE: usize = 1_024;

/// One paced event: who gets it, and the frame.
struct Job {
    channel: String,
    listeners: Vec<(LocalId, Handle)>,
    frame: Bytes,
    except: Option<LocalId>,
}

/// The pacing queue and the channels with events in it.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    tx: mpsc::Sender<Job>,
    pending: Arc<DashMap<String, usize>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("channel", &self.channel)
            .field("listeners", &self.listeners.len())
            .finish_non_exhaustive()
    }
}

impl Pacer {
    /// Starts the pacing task (on the current runtime); it ends when the pacer is dropped.
    pub(crate) fn start() -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let pending: Arc<DashMap<String, usize>> = Arc::default();
        tokio::spawn(run(rx, Arc::clone(&pending)));
        Self { tx, pending }
    }

    /// Offers `frame` to `listeners` of `channel` but `except`: inline when they are few and
    /// nothing of the channel waits, else through the pacing task. Answers how many were
    /// (or will be) offered it.
    pub(crate) fn deliver(
        &self,
        channel: &str,
        listeners: Vec<(LocalId, Handle)>,
        frame: &Bytes,
        except: Option<LocalId>,
    ) -> usize {
        let waiting = self.pending.get(channel).is_some_and(|n| *n > 0);
        if listeners.len() <= BATCH && !waiting {
            return offer(&listeners, frame, except);
        }
        let count = listeners.len();
        *self.pending.entry(channel.to_owned()).or_insert(0) += 1;
        let job = Job {
            channel: channel.to_owned(),
            listeners,
            frame: frame.clone(),
            except,
        };
        if let Err(err) = self.tx.try_send(job) {
            let job = match err {
                mpsc::error::TrySendError::Full(job) | mpsc::error::TrySendError::Closed(job) => {
                    job
                }
            };
            done(&self.pending, &job.channel);
            return offer(&job.listeners, &job.frame, job.except);
        }
        count
    }
}

fn offer(listeners: &[(LocalId, Handle)], frame: &Bytes, except: Option<LocalId>) -> usize {
    listeners
        .iter()
        .filter(|(id, _)| Some(*id) != except)
        .filter(|(_, handle)| handle.offer(frame.clone()))
        .count()
}

fn done(pending: &DashMap<String, usize>, channel: &str) {
    let gone = match pending.get_mut(channel) {
        Some(mut n) => {
            *n = n.saturating_sub(1);
            *n == 0
        }
        None => false,
    };
    if gone {
        pending.remove_if(channel, |_, n| *n == 0);
    }
}

async fn run(mut rx: mpsc::Receiver<Job>, pending: Arc<DashMap<String, usize>>) {
    while let Some(job) = rx.recv().await {
        let size = BATCH.max(job.listeners.len().div_ceil(MAX_BATCHES));
        for (i, batch) in job.listeners.chunks(size).enumerate() {
            if i > 0 {
                tokio::time::sleep(PAUSE).await;
            }
            offer(batch, &job.frame, job.except);
        }
        done(&pending, &job.channel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realtime::registry::Closer;

    fn listeners(n: usize) -> (Vec<(LocalId, Handle)>, Vec<mpsc::Receiver<Bytes>>) {
        (0..n)
            .map(|i| {
                let (tx, rx) = mpsc::channel(8);
                let id = i as LocalId + 1;
                (
                    (
                        id,
                        Handle {
                            tx,
                            closer: Arc::new(Closer::default()),
                        },
                    ),
                    rx,
                )
            })
            .unzip()
    }

    #[tokio::test]
    async fn many_listeners_get_every_event_in_order_few_get_it_at_once() {
        let pacer = Pacer::start();
        let (few, mut few_rx) = listeners(3);
        assert_eq!(
            pacer.deliver("small", few, &Bytes::from_static(b"a"), Some(2)),
            2
        );
        assert_eq!(few_rx[0].try_recv().unwrap(), "a");
        assert!(few_rx[1].try_recv().is_err(), "the excepted socket");

        let (many, mut many_rx) = listeners(BATCH * 3 + 1);
        pacer.deliver("big", many.clone(), &Bytes::from_static(b"1"), None);
        // A small event of the same channel waits behind the big one.
        let first_two: Vec<_> = many.iter().take(2).cloned().collect();
        pacer.deliver("big", first_two, &Bytes::from_static(b"2"), None);
        tokio::time::sleep(Duration::from_millis(100)).await;
        for (i, rx) in many_rx.iter_mut().enumerate() {
            assert_eq!(rx.try_recv().unwrap(), "1", "socket {i}");
        }
        assert_eq!(many_rx[0].try_recv().unwrap(), "2");
        assert_eq!(many_rx[1].try_recv().unwrap(), "2");
        assert!(pacer.pending.is_empty());
    }
}
