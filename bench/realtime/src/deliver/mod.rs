//! `deliver`: client events published at a fixed rate, fanned out to thousands of subscribers
//! over one or more replicas; per-subscriber loss and the latency of every delivery.
//!
//! The run has three phases. Warm-up: every subscriber (and stalled subscriber) connects and
//! waits for its `subscription_succeeded`, then the publishers connect; nothing is measured.
//! Measure: the publishers send for `--seconds`. Grace: two more seconds for stragglers, then
//! every subscriber reports. Only events published during the measure phase exist, so "expected"
//! is simply the number the publishers sent.

mod tasks;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::tasks::{PublisherStats, Publishing, Schedule, StalledEnd, SubscriberStats};
use crate::conn::{Options, Ws};
use crate::hold::Opening;
use crate::protocol;
use crate::stats::{self, Summary, Tally, round3};
use crate::{BenchError, Common, Report, progress};

/// The server refuses more client events than this per second and socket (error 4301).
const SERVER_CLIENT_EVENT_LIMIT: f64 = 10.0;
/// The channel only the stalled subscribers (and the flood publisher) join.
const FLOOD_CHANNEL: &str = "private-bench-stall-flood";
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
                    also_private: None,
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
            opening.also_private = Some(FLOOD_CHANNEL.to_owned());
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
            let ws = opening
                .open_private(Options::default())
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

/// The publishers' figures, summed.
#[derive(Debug, Default)]
struct PublisherTotals {
    sent: u64,
    late_skipped: u64,
    pusher_errors: Tally,
    ended: Tally,
}

impl PublisherTotals {
    fn add(&mut self, stats: PublisherStats) {
        self.sent += stats.sent;
        self.late_skipped += stats.late_skipped;
        self.pusher_errors.merge(stats.pusher_errors);
        if let Some(e) = stats.ended {
            self.ended.add(e.class());
        }
    }
}

/// The reading subscribers' figures, merged.
#[derive(Debug, Default)]
struct Received {
    subscribers: u64,
    deliveries: u64,
    duplicates: u64,
    with_loss: u64,
    max_loss: u64,
    other_frames: u64,
    same_us: Vec<u32>,
    cross_us: Vec<u32>,
    pusher_errors: Tally,
    ended_early: Tally,
    /// How many subscribers missed each seq (only seqs someone missed): a loss concentrated on
    /// the first or last events points at subscription or shutdown timing, not at fan-out.
    missed_by_seq: BTreeMap<u64, u64>,
}

impl Received {
    fn add(&mut self, stats: SubscriberStats, sent: u64) {
        let mut loss = 0;
        for seq in stats.seen.missing(sent) {
            loss += 1;
            *self.missed_by_seq.entry(seq).or_default() += 1;
        }
        let got = sent - loss;
        self.subscribers += 1;
        self.deliveries += got;
        self.duplicates += stats.duplicates;
        self.other_frames += stats.other_frames;
        if loss > 0 {
            self.with_loss += 1;
        }
        self.max_loss = self.max_loss.max(loss);
        self.same_us.extend_from_slice(&stats.same_us);
        self.cross_us.extend_from_slice(&stats.cross_us);
        self.pusher_errors.merge(stats.pusher_errors);
        if let Some(e) = stats.ended {
            self.ended_early.add(e.class());
        }
    }
}

/// Everything the report shows besides the deliveries.
struct RunFigures<'a> {
    urls: &'a [String],
    channel: &'a str,
    subscribed: usize,
    warmup_secs: f64,
    warmup_failures: &'a Tally,
    published: &'a PublisherTotals,
    stalled_ends: &'a Tally,
    stalled_buffered: u64,
    /// How the stalled sockets' connections left `ESTABLISHED`: per state, how many and the
    /// earliest and latest time, in seconds after publishing started.
    stalled_tcp: Vec<(&'static str, usize, f64, f64)>,
    /// CPU use during the measured seconds, in % of one core: the client first, then servers.
    cpu: Vec<(String, f64)>,
    /// The flood publisher's figures (zero when there was none).
    flooded: &'a PublisherTotals,
}

/// Groups the stalled connections' ends by state: (state, count, first, last).
fn tcp_summary(ends: &[(&'static str, f64)]) -> Vec<(&'static str, usize, f64, f64)> {
    let mut by_state: BTreeMap<&'static str, (usize, f64, f64)> = BTreeMap::new();
    for &(state, at) in ends {
        let entry = by_state.entry(state).or_insert((0, at, at));
        entry.0 += 1;
        entry.1 = entry.1.min(at);
        entry.2 = entry.2.max(at);
    }
    by_state
        .into_iter()
        .map(|(state, (n, min, max))| (state, n, min, max))
        .collect()
}

fn cpu_snapshot(pids: &[String]) -> Vec<Option<f64>> {
    pids.iter()
        .map(|pid| stats::cpu_seconds(pid).ok())
        .collect()
}

fn cpu_use(pids: &[String], before: &[Option<f64>], elapsed: Duration) -> Vec<(String, f64)> {
    let wall = elapsed.as_secs_f64().max(1e-3);
    pids.iter()
        .zip(before)
        .zip(cpu_snapshot(pids))
        .filter_map(|((pid, before), after)| {
            let label = if pid == "self" {
                "client".to_owned()
            } else {
                format!("server {pid}")
            };
            Some((label, round3((after? - (*before)?) * 100.0 / wall)))
        })
        .collect()
}

fn report(args: &DeliverArgs, run: &RunFigures<'_>, mut received: Received) -> Report {
    let expected = run.published.sent * received.subscribers;
    let missing = expected.saturating_sub(received.deliveries);
    #[expect(clippy::cast_precision_loss, reason = "a percentage for people")]
    let loss_pct = if expected == 0 {
        0.0
    } else {
        missing as f64 * 100.0 / expected as f64
    };
    let mut all_us = Vec::with_capacity(received.same_us.len() + received.cross_us.len());
    all_us.extend_from_slice(&received.same_us);
    all_us.extend_from_slice(&received.cross_us);
    let all = Summary::of(&mut all_us);
    let same = Summary::of(&mut received.same_us);
    let cross = Summary::of(&mut received.cross_us);
    let summary_json = |s: Option<Summary>| s.map_or(Value::Null, Summary::to_json);
    let stalled_4200 = run.stalled_ends.get("close 4200");
    let mut most_missed: Vec<(u64, u64)> = received
        .missed_by_seq
        .iter()
        .map(|(&seq, &n)| (seq, n))
        .collect();
    most_missed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    most_missed.truncate(5);
    let most_missed_line = if most_missed.is_empty() {
        "none".to_owned()
    } else {
        most_missed
            .iter()
            .map(|(seq, n)| format!("seq {seq} by {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };

    let mut json = json!({
        "scenario": "deliver",
        "urls": run.urls,
        "channel": run.channel,
        "subscribers": args.subscribers,
        "stalled": args.stalled,
        "publishers": args.publishers,
        "rate": args.rate,
        "seconds": args.seconds,
        "payload_bytes": args.payload_bytes,
        "subscribed": run.subscribed,
        "warmup_secs": round3(run.warmup_secs),
        "warmup_failures": run.warmup_failures.to_json(),
        "published": run.published.sent,
        "publisher_late_skipped": run.published.late_skipped,
        "publisher_pusher_errors": run.published.pusher_errors.to_json(),
        "publisher_ended": run.published.ended.to_json(),
        "healthy_subscribers": received.subscribers,
        "expected_per_subscriber": run.published.sent,
        "deliveries": received.deliveries,
        "expected_deliveries": expected,
        "missing": missing,
        "loss_pct": (loss_pct * 10_000.0).round() / 10_000.0,
        "subscribers_with_loss": received.with_loss,
        "max_loss_per_subscriber": received.max_loss,
        "duplicates": received.duplicates,
        "most_missed": most_missed.iter().map(|(seq, n)| json!({"seq": seq, "subscribers": n})).collect::<Vec<_>>(),
        "latency": summary_json(all),
        "latency_same_replica": summary_json(same),
        "latency_cross_replica": summary_json(cross),
        "subscriber_pusher_errors": received.pusher_errors.to_json(),
        "subscribers_ended_early": received.ended_early.to_json(),
    });
    // Two literals: one would exceed `json!`'s macro recursion limit.
    let stalled_json = json!({
        "stalled_ends": run.stalled_ends.to_json(),
        "stalled_closed_4200": stalled_4200,
        "stalled_buffered_events": run.stalled_buffered,
        "stalled_tcp_ends": run.stalled_tcp.iter().map(|(state, n, min, max)| json!({"state": state, "count": n, "first_secs": round3(*min), "last_secs": round3(*max)})).collect::<Vec<_>>(),
        "stall_flood_bytes": args.stall_flood_bytes,
        "stall_flood_sent": run.flooded.sent,
        "stall_flood_pusher_errors": run.flooded.pusher_errors.to_json(),
        "stall_flood_ended": run.flooded.ended.to_json(),
        "cpu_percent": run.cpu.iter().map(|(who, pct)| json!({"process": who, "percent": pct})).collect::<Vec<_>>(),
    });
    if let (Some(all), Value::Object(more)) = (json.as_object_mut(), stalled_json) {
        all.extend(more);
    }

    let mut t = format!(
        "deliver: {} subscribers (+{} stalled) on {} over {:?}; {} publishers, {} events/s for {} s, {} B filler\n",
        args.subscribers,
        args.stalled,
        run.channel,
        run.urls,
        args.publishers,
        args.rate,
        args.seconds,
        args.payload_bytes,
    );
    let mut row = |label: &str, value: String| {
        t.push_str(&format!("  {label:<22} {value}\n"));
    };
    row(
        "subscribed",
        format!(
            "{} / {} in {:.1} s (failures: {})",
            run.subscribed,
            args.subscribers + args.stalled,
            run.warmup_secs,
            run.warmup_failures.line()
        ),
    );
    row(
        "published",
        format!(
            "{} events (late ticks skipped: {}; pusher errors: {}; ended: {})",
            run.published.sent,
            run.published.late_skipped,
            run.published.pusher_errors.line(),
            run.published.ended.line()
        ),
    );
    row(
        "delivered",
        format!(
            "{} / {expected} to {} healthy subscribers; missing {missing} ({loss_pct:.4} %), subscribers with loss {}, max loss {}, duplicates {}",
            received.deliveries,
            received.subscribers,
            received.with_loss,
            received.max_loss,
            received.duplicates
        ),
    );
    if missing > 0 {
        row("most missed events", most_missed_line);
    }
    for (label, summary) in [
        ("latency, all (ms)", all),
        ("  same replica", same),
        ("  cross replica", cross),
    ] {
        if let Some(s) = summary {
            row(
                label,
                format!(
                    "p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}  mean {:.2}  (n={})",
                    s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms, s.mean_ms, s.count
                ),
            );
        }
    }
    row("healthy ended early", received.ended_early.line());
    row("subscriber errors", received.pusher_errors.line());
    row(
        "cpu while measured",
        run.cpu
            .iter()
            .map(|(who, pct)| format!("{who} {pct:.0} %"))
            .collect::<Vec<_>>()
            .join(", ")
            + &format!(
                " (of one core; {} cores)",
                std::thread::available_parallelism().map_or(0, usize::from)
            ),
    );
    if args.stalled > 0 {
        row(
            "stalled",
            format!(
                "{stalled_4200} of {} closed with 4200 ({}); {} events were still buffered",
                args.stalled,
                run.stalled_ends.line(),
                run.stalled_buffered
            ),
        );
        let tcp_line = run
            .stalled_tcp
            .iter()
            .map(|(state, n, min, max)| format!("{state} x{n} at {min:.0}-{max:.0} s"))
            .collect::<Vec<_>>()
            .join(", ");
        row(
            "stalled TCP ends",
            if tcp_line.is_empty() {
                "all still established at the end".to_owned()
            } else {
                format!("{tcp_line} (after publishing started)")
            },
        );
        if args.stall_flood_bytes > 0 {
            row(
                "stall flood",
                format!(
                    "{} events of {} B to the stalled only (pusher errors: {}; ended: {})",
                    run.flooded.sent,
                    args.stall_flood_bytes,
                    run.flooded.pusher_errors.line(),
                    run.flooded.ended.line()
                ),
            );
        }
    }
    Report {
        table: t,
        json,
        failed_check: None,
    }
}
