//! `deliver`: client events published at a fixed rate, fanned out to thousands of subscribers
//! over one or more replicas; per-subscriber loss and the latency of every delivery.
//!
//! The run has three phases. Warm-up: every subscriber (and stalled subscriber) connects and
//! waits for its `subscription_succeeded`, then the publishers connect; nothing is measured.
//! Measure: the publishers send for `--seconds`. Grace: two more seconds for stragglers, then
//! every subscriber reports. Only events published during the measure phase exist, so "expected"
//! is simply the number the publishers sent.

mod report;
mod tasks;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::report::{
    PublisherTotals, Received, RunFigures, cpu_snapshot, cpu_use, report, tcp_summary,
};
use self::tasks::{PublisherStats, Publishing, Schedule, StalledEnd, SubscriberStats};
use crate::conn::{Options, Ws};
use crate::hold::Opening;
use crate::protocol;
use crate::stats::Tally;
use crate::{BenchError, Common, Report, progress};

/// The server refuses more client events than this per second and socket (error 4301).
const SERVER_CLIENT_EVENT_LIMIT: f64 = 10.0;
/// The channel only the stalled subscribers (and the flood publisher) join. A presence channel:
/// when the server drops a stalled socket, the flood publisher is told (`member_removed`), which
/// dates the drop although the stalled socket itself cannot read its close frame.
const FLOOD_CHANNEL: &str = "presence-bench-stall-flood";
/// The flood publisher's presence user.
const FLOOD_USER: &str = "flood-publisher";
/// The flood publisher's rate: under the server's limit with room for timer jitter.
const FLOOD_RATE: f64 = 8.0;

#[derive(Debug, Clone, clap::Args)]
pub struct DeliverArgs {
    #[command(flatten)]
    pub common: Common,

    /// Subscribers that read every event (spread round-robin over the `--url`s).
    #[arg(long, default_value_t = 5000)]
    pub subscribers: usize,

    /// Client events per second, over all publishers.
    #[arg(long, default_value_t = 20.0)]
    pub rate: f64,

    /// Seconds of publishing (after the warm-up).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub seconds: u64,

    /// Publishing sockets (spread over the `--url`s); each sends `rate / publishers` per second,
    /// which must stay within the server's 10 per second.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub publishers: u32,

    /// Extra subscribers that subscribe, then never read again, so the server must drop them
    /// (close code 4200) without slowing the others.
    #[arg(long, default_value_t = 0)]
    pub stalled: usize,

    /// `SO_RCVBUF` of the stalled subscribers, in bytes (the kernel may round it up).
    #[arg(long, default_value_t = 4096)]
    pub stalled_recv_buffer: u32,

    /// Filler bytes in each event's data (the server caps frames at 64 KiB).
    #[arg(long, default_value_t = 0)]
    pub payload_bytes: usize,

    /// With `--stalled`: the stalled subscribers also join a channel of their own, where one
    /// more publisher sends events of this many filler bytes, 8 per second. A stalled socket
    /// holds megabytes in kernel buffers before the server's queue for it even starts to fill;
    /// this fills them in seconds without changing what the healthy subscribers receive.
    #[arg(long, default_value_t = 0)]
    pub stall_flood_bytes: usize,

    /// Subscribe to a presence channel (each socket a different user) instead of a private one.
    /// Every join is announced to every member, so warm-up costs grow with the square of the
    /// subscribers.
    #[arg(long)]
    pub presence: bool,

    /// Channel name; default `private-bench`, or `presence-bench` with `--presence`.
    #[arg(long)]
    pub channel: Option<String>,

    /// Seconds to wait after the last event for late deliveries.
    #[arg(long, default_value_t = 2)]
    pub grace_secs: u64,

    /// Process ids of the servers: their CPU use during the measured seconds is reported
    /// (repeat for each replica), next to the client's own.
    #[arg(long = "server-pid")]
    pub server_pids: Vec<u32>,

    /// Seconds the warm-up may take before the run goes on with the subscribers it has.
    #[arg(long, default_value_t = 600)]
    pub warmup_timeout_secs: u64,
}

impl DeliverArgs {
    fn channel(&self) -> String {
        self.channel.clone().unwrap_or_else(|| {
            if self.presence {
                "presence-bench".to_owned()
            } else {
                "private-bench".to_owned()
            }
        })
    }

    fn check(&self) -> Result<(), BenchError> {
        let per_publisher = self.rate / f64::from(self.publishers);
        if !(self.rate > 0.0 && per_publisher <= SERVER_CLIENT_EVENT_LIMIT) {
            return Err(BenchError::Usage(format!(
                "--rate {} over {} publishers is {per_publisher:.1}/s each; the server allows \
                 {SERVER_CLIENT_EVENT_LIMIT}/s per socket: use --publishers >= {}",
                self.rate,
                self.publishers,
                (self.rate / SERVER_CLIENT_EVENT_LIMIT).ceil()
            )));
        }
        if self.payload_bytes.max(self.stall_flood_bytes) > 60 * 1024 {
            return Err(BenchError::Usage(
                "filler above 60 KiB would exceed the server's 64 KiB frames".to_owned(),
            ));
        }
        Ok(())
    }

    /// The `pusher:subscribe` frame of one socket: private, or presence as user `user` (every
    /// socket a different user, as distinct browsers would be).
    fn subscribe_frame(&self, channel: &str, user: &str, socket_id: &str) -> String {
        let (key, secret) = (&self.common.key, &self.common.secret);
        if self.presence {
            protocol::subscribe_presence(key, secret, socket_id, channel, user)
        } else {
            protocol::subscribe_private(key, secret, socket_id, channel)
        }
    }
}

/// A socket task's first report: subscribed, or the class of why not.
type Ready = Result<(), String>;

pub async fn run(given: &DeliverArgs) -> Result<Report, BenchError> {
    given.check()?;
    let endpoints = given.common.endpoints()?;
    // The socket tasks are 'static: they share one copy.
    let args = Arc::new(given.clone());
    let channel = args.channel();
    let permits = Arc::new(Semaphore::new(args.common.connect_concurrency as usize));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Ready>();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "an allocation hint"
    )]
    let expected_hint = (args.rate * args.seconds as f64) as usize + 16;
    let opening = |index: usize| {
        let url = index % endpoints.len();
        let endpoint = endpoints.get(url).cloned();
        endpoint.map(|endpoint| {
            (
                url,
                Opening {
                    endpoint,
                    key: args.common.key.clone(),
                    secret: args.common.secret.clone(),
                    channel: channel.clone(),
                    permits: Arc::clone(&permits),
                    timeout: args.common.connect_timeout(),
                    also_presence: None,
                },
            )
        })
    };

    let warmup = Instant::now();
    let mut subscribers: Vec<JoinHandle<Option<SubscriberStats>>> = Vec::new();
    for index in 0..args.subscribers {
        let Some((url, opening)) = opening(index) else {
            continue;
        };
        let (args, ready, stop) = (Arc::clone(&args), ready_tx.clone(), stop_rx.clone());
        subscribers.push(tokio::spawn(async move {
            let user = format!("{index}");
            let ws = opened(
                opening
                    .open(Options::default(), |id| {
                        args.subscribe_frame(&opening.channel, &user, id)
                    })
                    .await,
                &ready,
            )?;
            Some(tasks::subscriber(ws, url, expected_hint, stop).await)
        }));
    }
    let mut stalled: Vec<JoinHandle<Option<StalledEnd>>> = Vec::new();
    let flooding = args.stall_flood_bytes > 0 && args.stalled > 0;
    let (tcp_tx, tcp_rx) = mpsc::unbounded_channel();
    for index in 0..args.stalled {
        let Some((_, mut opening)) = opening(index) else {
            continue;
        };
        if flooding {
            opening.also_presence = Some((FLOOD_CHANNEL.to_owned(), format!("stalled-{index}")));
        }
        let (args, ready, stop) = (Arc::clone(&args), ready_tx.clone(), stop_rx.clone());
        let tcp = tcp_tx.clone();
        let options = Options {
            recv_buffer: Some(args.stalled_recv_buffer),
        };
        stalled.push(tokio::spawn(async move {
            let user = format!("stalled-{index}");
            let ws = opened(
                opening
                    .open(options, |id| {
                        args.subscribe_frame(&opening.channel, &user, id)
                    })
                    .await,
                &ready,
            )?;
            Some(tasks::stalled(ws, tcp, stop).await)
        }));
    }
    drop(ready_tx);
    let total = subscribers.len() + stalled.len();
    let (subscribed, warmup_failures) = wait_ready(
        &mut ready_rx,
        total,
        Duration::from_secs(args.warmup_timeout_secs),
    )
    .await;
    let warmup_secs = warmup.elapsed().as_secs_f64();
    progress(&format!(
        "deliver: {subscribed} / {total} subscribed in {warmup_secs:.1} s (failures: {})",
        warmup_failures.line()
    ));

    // Publishers: connected and subscribed before the clock starts.
    let mut publisher_sockets: Vec<(usize, Ws)> = Vec::new();
    for index in 0..args.publishers as usize {
        let Some((url, opening)) = opening(index) else {
            continue;
        };
        let user = format!("publisher-{index}");
        let ws = opening
            .open(Options::default(), |id| {
                args.subscribe_frame(&channel, &user, id)
            })
            .await
            .map_err(|source| BenchError::Socket {
                what: format!("publisher {index} on {}", opening.endpoint.request_url),
                source,
            })?;
        publisher_sockets.push((url, ws));
    }

    let flood_socket = match opening(0) {
        Some((origin, mut opening)) if flooding => {
            opening.channel = FLOOD_CHANNEL.to_owned();
            let (key, secret) = (&args.common.key, &args.common.secret);
            let ws = opening
                .open(Options::default(), |id| {
                    protocol::subscribe_presence(key, secret, id, FLOOD_CHANNEL, FLOOD_USER)
                })
                .await
                .map_err(|source| BenchError::Socket {
                    what: format!("flood publisher on {}", opening.endpoint.request_url),
                    source,
                })?;
            Some((origin, ws))
        }
        _ => None,
    };

    let seq = Arc::new(AtomicU64::new(0));
    let pad: Arc<str> = "x".repeat(args.payload_bytes).into();
    let start = Instant::now() + Duration::from_millis(100);
    let end = start + Duration::from_secs(args.seconds);
    let publisher_count = publisher_sockets.len();
    let publishers: Vec<JoinHandle<PublisherStats>> = publisher_sockets
        .into_iter()
        .enumerate()
        .map(|(index, (origin, ws))| {
            let publishing = Publishing {
                channel: channel.clone(),
                origin,
                schedule: Schedule::new(args.rate, publisher_count, index),
                start,
                end,
                seq: Arc::clone(&seq),
                pad: Arc::clone(&pad),
            };
            tokio::spawn(tasks::publisher(ws, publishing, stop_rx.clone()))
        })
        .collect();
    let flood = flood_socket.map(|(origin, ws)| {
        let publishing = Publishing {
            channel: FLOOD_CHANNEL.to_owned(),
            origin,
            schedule: Schedule::new(FLOOD_RATE, 1, 0),
            start,
            end,
            // Its own counter: the measured seqs stay dense.
            seq: Arc::new(AtomicU64::new(0)),
            pad: "x".repeat(args.stall_flood_bytes).into(),
        };
        tokio::spawn(tasks::publisher(ws, publishing, stop_rx.clone()))
    });
    drop(tcp_tx);
    let tcp_watch = tokio::spawn(tasks::watch_tcp(tcp_rx, start, stop_rx.clone()));
    let cpu_pids: Vec<String> = std::iter::once("self".to_owned())
        .chain(args.server_pids.iter().map(u32::to_string))
        .collect();
    let cpu_before = cpu_snapshot(&cpu_pids);
    let measured = Instant::now();
    tokio::time::sleep_until(end).await;
    let cpu = cpu_use(&cpu_pids, &cpu_before, measured.elapsed());
    tokio::time::sleep(Duration::from_secs(args.grace_secs)).await;
    let _ = stop_tx.send(true);
    let mut published = PublisherTotals::default();
    for publisher in publishers {
        published.add(publisher.await?);
    }
    let mut flooded = PublisherTotals::default();
    if let Some(flood) = flood {
        flooded.add(flood.await?);
    }

    let mut received = Received::default();
    for subscriber in subscribers {
        if let Some(stats) = subscriber.await? {
            received.add(stats, published.sent);
        }
    }
    let stalled_tcp = tcp_watch.await?;
    let mut stalled_ends = Tally::default();
    let mut stalled_buffered = 0;
    for task in stalled {
        if let Some(end) = task.await? {
            stalled_ends.add(end.class);
            stalled_buffered += end.buffered_events;
        }
    }

    let run = RunFigures {
        urls: &args.common.urls,
        channel: &channel,
        subscribed,
        warmup_secs,
        warmup_failures: &warmup_failures,
        published: &published,
        stalled_ends: &stalled_ends,
        stalled_buffered,
        stalled_tcp: tcp_summary(&stalled_tcp),
        cpu,
        flooded: &flooded,
    };
    Ok(report(&args, &run, received))
}

/// Sends the task's first report and passes the socket on; `None` when it could not open.
fn opened(
    result: Result<Ws, crate::conn::ConnError>,
    ready: &mpsc::UnboundedSender<Ready>,
) -> Option<Ws> {
    match result {
        Ok(ws) => {
            let _ = ready.send(Ok(()));
            Some(ws)
        }
        Err(e) => {
            let _ = ready.send(Err(e.class()));
            None
        }
    }
}

/// Counts first reports until all `total` sockets answered or the warm-up timed out.
async fn wait_ready(
    ready: &mut mpsc::UnboundedReceiver<Ready>,
    total: usize,
    timeout: Duration,
) -> (usize, Tally) {
    let deadline = Instant::now() + timeout;
    let mut last_progress = Instant::now();
    let (mut subscribed, mut failures) = (0, Tally::default());
    for _ in 0..total {
        match tokio::time::timeout_at(deadline, ready.recv()).await {
            Ok(Some(Ok(()))) => subscribed += 1,
            Ok(Some(Err(class))) => failures.add(class),
            Ok(None) => break,
            Err(_) => {
                failures.add("timeout: warm-up");
                break;
            }
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            progress(&format!(
                "deliver: warm-up {subscribed} / {total} subscribed, {} failed",
                failures.total()
            ));
        }
    }
    (subscribed, failures)
}
