//! The three kinds of socket of a `deliver` run: subscribers that read and time every event,
//! stalled subscribers that stop reading, and publishers that send client events on a schedule.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::conn::{self, ConnError, Ws};
use crate::protocol::{self, Incoming, Stamp};
use crate::stats::{self, Tally};

/// Unix time in microseconds. Publishers and subscribers run in this one process, so the clock
/// they compare is the same one.
#[must_use]
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The sequence numbers one subscriber has seen: a bitset, as `seq`s are dense from 0.
#[derive(Debug, Default)]
pub struct Seen {
    words: Vec<u64>,
}

impl Seen {
    /// A seq beyond this many events is not ours (a run publishes a few thousand at most).
    const MAX_SEQ: u64 = 1 << 24;

    /// Records `seq`; `None` when it cannot be ours, else whether it is new.
    pub fn insert(&mut self, seq: u64) -> Option<bool> {
        if seq >= Self::MAX_SEQ {
            return None;
        }
        let word = usize::try_from(seq / 64).ok()?;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let mask = 1_u64 << (seq % 64);
        let slot = self.words.get_mut(word)?;
        let new = *slot & mask == 0;
        *slot |= mask;
        Some(new)
    }

    /// The seqs of `0..below` that were not seen, ascending.
    pub fn missing(&self, below: u64) -> impl Iterator<Item = u64> + '_ {
        (0..below).filter(|&seq| {
            usize::try_from(seq / 64)
                .ok()
                .and_then(|w| self.words.get(w))
                .is_none_or(|word| word & (1 << (seq % 64)) == 0)
        })
    }
}

/// What one reading subscriber saw.
#[derive(Debug, Default)]
pub struct SubscriberStats {
    pub seen: Seen,
    pub duplicates: u64,
    /// Latency of events from a publisher on the same replica, in microseconds.
    pub same_us: Vec<u32>,
    /// Latency of events that crossed replicas (through Redis or NOTIFY).
    pub cross_us: Vec<u32>,
    /// Frames that were neither a stamped event nor a ping (member events, other events).
    pub other_frames: u64,
    pub pusher_errors: Tally,
    /// Set when the socket ended before the run did.
    pub ended: Option<ConnError>,
}

/// Reads and times every `client-bench` event until `stop`.
pub async fn subscriber(
    mut ws: Ws,
    origin: usize,
    expected: usize,
    mut stop: watch::Receiver<bool>,
) -> SubscriberStats {
    let mut stats = SubscriberStats {
        same_us: Vec::with_capacity(expected),
        ..SubscriberStats::default()
    };
    // One waiter for the whole run: a fresh `changed()` per frame registers and drops a waiter
    // 20 times a second on each of thousands of sockets, on the cores the servers use.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            frame = conn::recv(&mut ws) => match frame {
                Ok(Incoming::Bench(stamp)) => {
                    let latency = now_us().saturating_sub(stamp.sent_us);
                    let latency = u32::try_from(latency).unwrap_or(u32::MAX);
                    match stats.seen.insert(stamp.seq) {
                        Some(true) if stamp.origin == origin => stats.same_us.push(latency),
                        Some(true) => stats.cross_us.push(latency),
                        Some(false) => stats.duplicates += 1,
                        None => stats.other_frames += 1,
                    }
                }
                Ok(Incoming::Ping) => {
                    if let Err(e) = conn::send(&mut ws, protocol::PONG).await {
                        stats.ended = Some(e);
                        return stats;
                    }
                }
                Ok(Incoming::Error { code, .. }) => stats.pusher_errors.add(format!("pusher:error {code:?}")),
                Ok(_) => stats.other_frames += 1,
                Err(e) => {
                    stats.ended = Some(e);
                    return stats;
                }
            },
        }
    }
    conn::close(ws).await;
    stats
}

/// How a stalled subscriber ended, found by reading what its buffers hold once the run is over.
#[derive(Debug)]
pub struct StalledEnd {
    /// Stamped events read back from the buffers after the run.
    pub buffered_events: u64,
    /// `close 4200` when the server dropped it as a slow consumer, `still open` when it did not.
    pub class: String,
}

/// Holds the socket without reading until `stop`, then drains it to learn whether (and how)
/// the server closed it. Nothing is read meanwhile, so the kernel buffers fill, then the
/// server's queue for this socket. Its TCP ports go to `tcp` so [`watch_tcp`] can date the
/// end of the connection, which reading cannot tell until the run is over.
pub async fn stalled(
    mut ws: Ws,
    tcp: mpsc::UnboundedSender<(u16, u16)>,
    mut stop: watch::Receiver<bool>,
) -> StalledEnd {
    if let (Ok(local), Ok(peer)) = (ws.get_ref().local_addr(), ws.get_ref().peer_addr()) {
        let _ = tcp.send((local.port(), peer.port()));
    }
    let _ = stop.changed().await;
    let mut buffered_events = 0;
    // Bounded: a server that keeps a stalled socket open would otherwise be read forever.
    let deadline = Instant::now() + Duration::from_secs(20);
    let class = loop {
        let next = tokio::time::timeout_at(
            deadline.min(Instant::now() + Duration::from_secs(3)),
            conn::recv(&mut ws),
        );
        match next.await {
            Ok(Ok(Incoming::Bench(_))) => buffered_events += 1,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => break e.class(),
            Err(_) => break "still open".to_owned(),
        }
    };
    conn::close(ws).await;
    StalledEnd {
        buffered_events,
        class,
    }
}

/// Watches the kernel's TCP table once a second for the stalled sockets' connections (by
/// their local and remote ports) until `stop`. The server runs on this machine, so both ends
/// are in the table: the client's end as (client port, server port), the server's as the
/// reverse. Returns, for each end that left `ESTABLISHED`, which end, the state it was first
/// seen in (`FIN_WAIT1` on the server's end: the server closed it with data still unsent;
/// `gone`: the kernel dropped it) and when, in seconds after `t0`.
///
/// Reading cannot tell any of this while the run lasts: a stalled socket does not read, and a
/// server end dropped without a reset leaves the client's end `ESTABLISHED` until it sends.
pub async fn watch_tcp(
    mut ports: mpsc::UnboundedReceiver<(u16, u16)>,
    t0: Instant,
    mut stop: watch::Receiver<bool>,
) -> Vec<TcpEnd> {
    let mut watched: HashMap<(u16, u16), [Option<StateSeen>; 2]> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = tick.tick() => {}
        }
        while let Ok(pair) = ports.try_recv() {
            watched.entry(pair).or_insert([None, None]);
        }
        if watched.values().flatten().all(Option::is_some) {
            continue;
        }
        let table = ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect::<String>();
        let states = stats::tcp_states(&table);
        let now = t0.elapsed().as_secs_f64();
        for (&(client, server), ends) in &mut watched {
            for (end, key) in ends.iter_mut().zip([(client, server), (server, client)]) {
                if end.is_none() {
                    match states.get(&key) {
                        Some(&state) if state == stats::TCP_ESTABLISHED => {}
                        Some(&state) => *end = Some((stats::tcp_state_name(state), now)),
                        None => *end = Some(("gone", now)),
                    }
                }
            }
        }
    }
    watched
        .into_values()
        .flat_map(|[client, server]| {
            let client = client.map(|(state, at)| TcpEnd {
                side: "client",
                state,
                at,
            });
            let server = server.map(|(state, at)| TcpEnd {
                side: "server",
                state,
                at,
            });
            client.into_iter().chain(server)
        })
        .collect()
}

/// A state other than `ESTABLISHED` and when it was first seen.
type StateSeen = (&'static str, f64);

/// One end of a stalled connection leaving `ESTABLISHED`.
#[derive(Debug, Clone, Copy)]
pub struct TcpEnd {
    /// `client` or `server`.
    pub side: &'static str,
    pub state: &'static str,
    /// Seconds after publishing started (to the watcher's one-second resolution).
    pub at: f64,
}

/// When one publisher sends: every `period`, starting at `offset` after the common start, so
/// the publishers' events interleave evenly into one stream at the total rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub period: Duration,
    pub offset: Duration,
}

impl Schedule {
    /// Publisher `index` of `publishers` sharing `rate` events per second.
    #[must_use]
    pub fn new(rate: f64, publishers: usize, index: usize) -> Self {
        #[expect(clippy::cast_precision_loss, reason = "a few publishers")]
        let (n, i) = (publishers as f64, index as f64);
        Self {
            period: Duration::from_secs_f64(n / rate),
            offset: Duration::from_secs_f64(i / rate),
        }
    }
}

/// What one publisher did.
#[derive(Debug, Default)]
pub struct PublisherStats {
    pub sent: u64,
    /// Ticks skipped because the publisher fell behind by more than one period: sending them
    /// late in a burst would trip the server's 10-per-second limit.
    pub late_skipped: u64,
    pub pusher_errors: Tally,
    pub ended: Option<ConnError>,
    /// When (seconds after the start) a presence member left its channel: on the flood
    /// channel, when the server dropped a stalled socket.
    pub members_removed: Vec<f64>,
}

/// Everything a publisher needs besides its socket.
#[derive(Debug, Clone)]
pub struct Publishing {
    pub channel: String,
    pub origin: usize,
    pub schedule: Schedule,
    pub start: Instant,
    pub end: Instant,
    pub seq: Arc<AtomicU64>,
    pub pad: Arc<str>,
}

/// Sends stamped `client-bench` events on schedule until `end`, reading (and discarding) what
/// the other publishers send meanwhile, as a publisher that stopped reading would be closed.
/// It stays open until `stop` (after the grace period), as a browser tab would: closing right
/// after the last event would also measure how the server treats an event followed by a close.
pub async fn publisher(
    mut ws: Ws,
    p: Publishing,
    mut stop: watch::Receiver<bool>,
) -> PublisherStats {
    let mut stats = PublisherStats::default();
    let mut next = p.start + p.schedule.offset;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            () = tokio::time::sleep_until(next), if next < p.end => {
                let stamp = Stamp {
                    seq: p.seq.fetch_add(1, Ordering::Relaxed),
                    sent_us: now_us(),
                    origin: p.origin,
                };
                let frame = protocol::client_event(&p.channel, &stamp.to_data(&p.pad));
                if let Err(e) = conn::send(&mut ws, &frame).await {
                    stats.ended = Some(e);
                    return stats;
                }
                stats.sent += 1;
                next += p.schedule.period;
                let now = Instant::now();
                while next + p.schedule.period < now {
                    next += p.schedule.period;
                    stats.late_skipped += 1;
                }
            }
            frame = conn::recv(&mut ws) => match frame {
                Ok(Incoming::Ping) => {
                    if let Err(e) = conn::send(&mut ws, protocol::PONG).await {
                        stats.ended = Some(e);
                        return stats;
                    }
                }
                Ok(Incoming::Error { code, .. }) => {
                    stats.pusher_errors.add(format!("pusher:error {code:?}"));
                }
                Ok(Incoming::MemberRemoved { .. }) => {
                    stats.members_removed.push(p.start.elapsed().as_secs_f64());
                }
                Ok(_) => {}
                Err(e) => {
                    stats.ended = Some(e);
                    return stats;
                }
            },
        }
    }
    conn::close(ws).await;
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_counts_new_and_repeated_seqs() {
        let mut seen = Seen::default();
        assert_eq!(seen.insert(0), Some(true));
        assert_eq!(seen.insert(130), Some(true));
        assert_eq!(seen.insert(130), Some(false));
        assert_eq!(seen.insert(Seen::MAX_SEQ), None);
        assert_eq!(seen.missing(131).count(), 129);
        assert_eq!(seen.missing(3).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(Seen::default().missing(3).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn schedules_interleave_publishers_at_the_total_rate() {
        // 20 events/s over 4 publishers: each sends every 200 ms, 50 ms apart.
        let s = Schedule::new(20.0, 4, 3);
        assert_eq!(s.period, Duration::from_millis(200));
        assert_eq!(s.offset, Duration::from_millis(150));
        assert_eq!(Schedule::new(20.0, 4, 0).offset, Duration::ZERO);
    }
}
