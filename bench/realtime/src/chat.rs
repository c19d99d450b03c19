//! `chat`: team chat's own path (issue 21). `--subscribers` sockets join a thread's presence
//! channel (signed with the app secret, as one bench member), then `--posters` signed-in HTTP
//! clients post messages through `POST /chat/{chat}/messages` at `--rate` per second. Each body
//! carries its sequence number and send time (`bench <seq> <sent_us>`), so every subscriber
//! reads the delivery latency of the `MessageCreated` it gets. Reported: the request latency of
//! each post (what the author waits for) and the delivery latency to every subscriber (what the
//! others wait for), and deliveries lost.
//!
//! The HTTP client is a few lines over a kept-alive TCP connection per poster: only
//! `Content-Length` responses, which is what the server sends for these.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::io::BufStream;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;

use crate::conn::{self, ConnError, Endpoint, Options, Ws};
use crate::protocol::{self, Incoming};
use crate::stats::{Summary, Tally};
use crate::{BenchError, Common, Report, progress};

/// The one presence member every subscriber joins as: one member, so joining costs the others
/// nothing (a thousand distinct members would be a million `member_added` frames).
const MEMBER: &str = "9000001";

#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub common: Common,

    /// The server's HTTP base, `http://HOST:PORT`.
    #[arg(long)]
    pub http: String,

    /// The poster's `vellum_session=…` cookie pair (a member of the thread).
    #[arg(long, env = "VELLUM_BENCH_COOKIE", hide_env_values = true)]
    pub cookie: String,

    /// The thread id.
    #[arg(long)]
    pub chat: String,

    #[arg(long, default_value_t = 1000)]
    pub subscribers: u32,

    /// Messages per second, over all posters.
    #[arg(long, default_value_t = 20)]
    pub rate: u32,

    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub posters: u32,

    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn micros(elapsed: Duration) -> u32 {
    u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX)
}

pub async fn run(args: &ChatArgs) -> Result<Report, BenchError> {
    let endpoints = args.common.endpoints()?;
    let channel = format!("presence-chat.{}", args.chat);
    let authority = args
        .http
        .strip_prefix("http://")
        .ok_or_else(|| BenchError::Usage("--http must be http://HOST:PORT".to_owned()))?
        .trim_end_matches('/')
        .to_owned();

    progress(&format!("chat: opening {} subscribers", args.subscribers));
    let (stop_tx, stop_rx) = watch::channel(false);
    let gate = Arc::new(Semaphore::new(args.common.connect_concurrency as usize));
    let mut subscribers = Vec::new();
    let mut failures = Tally::default();
    let mut joining = Vec::new();
    for endpoint in endpoints.iter().cycle().take(args.subscribers as usize) {
        let endpoint = endpoint.clone();
        let (key, secret, channel) = (
            args.common.key.clone(),
            args.common.secret.clone(),
            channel.clone(),
        );
        let gate = Arc::clone(&gate);
        let timeout = args.common.connect_timeout();
        joining.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await;
            tokio::time::timeout(timeout, join(&endpoint, &key, &secret, &channel))
                .await
                .unwrap_or(Err(ConnError::Protocol("timed out".to_owned())))
        }));
    }
    for task in joining {
        match task.await? {
            Ok(ws) => {
                let stop = stop_rx.clone();
                subscribers.push(tokio::spawn(receive(ws, stop)));
            }
            Err(err) => failures.add(err.class()),
        }
    }
    progress(&format!(
        "chat: {} subscribed ({} failed); posting {}/s for {} s",
        subscribers.len(),
        failures.total(),
        args.rate,
        args.seconds
    ));

    let seq = Arc::new(AtomicU64::new(0));
    let per_poster = Duration::from_secs_f64(f64::from(args.posters) / f64::from(args.rate.max(1)));
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let until = until.into_std();
    // The posters run on a thread and runtime of their own: on the subscribers' runtime a
    // response would wait behind a thousand receive tasks woken by each message, and the
    // request latency would measure this client's scheduling instead of the server's answer.
    let (posters, authority, cookie) = (args.posters, authority.clone(), args.cookie.clone());
    let path = format!("/chat/{}/messages", args.chat);
    let posting = std::thread::spawn(move || -> std::io::Result<(Vec<u32>, Tally)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(runtime.block_on(async move {
            let mut tasks = Vec::new();
            for _ in 0..posters {
                let (authority, cookie, path, seq) = (
                    authority.clone(),
                    cookie.clone(),
                    path.clone(),
                    Arc::clone(&seq),
                );
                tasks.push(tokio::spawn(async move {
                    post_loop(&authority, &cookie, &path, &seq, per_poster, until).await
                }));
            }
            let mut requests = Vec::new();
            let mut refused = Tally::default();
            for task in tasks {
                if let Ok((latencies, failed)) = task.await {
                    requests.extend(latencies);
                    refused.merge(failed);
                }
            }
            (requests, refused)
        }))
    });
    let (mut requests, refused) = tokio::task::spawn_blocking(move || posting.join())
        .await?
        .map_err(|_| BenchError::Usage("a poster thread panicked".to_owned()))?
        .map_err(|source| BenchError::Socket {
            what: "could not start the posters' runtime".to_owned(),
            source: ConnError::Connect(source),
        })?;
    // Let the last deliveries arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = stop_tx.send(true);
    let mut deliveries = Vec::new();
    let mut lost_sockets = 0_u64;
    for subscriber in subscribers {
        let (latencies, alive) = subscriber.await?;
        deliveries.extend(latencies);
        if !alive {
            lost_sockets += 1;
        }
    }
    let posted = requests.len() as u64;
    let expected = posted
        * u64::from(
            args.subscribers
                .saturating_sub(u32::try_from(failures.total()).unwrap_or(u32::MAX)),
        );
    let delivered = deliveries.len() as u64;
    let request = Summary::of(&mut requests);
    let delivery = Summary::of(&mut deliveries);
    let line = |name: &str, s: Option<Summary>| {
        s.map_or_else(
            || format!("{name:<10} no samples\n"),
            |s| {
                format!(
                    "{name:<10} n={:<7} p50 {:>8.3} ms  p95 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms\n",
                    s.count, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms
                )
            },
        )
    };
    let mut table = format!(
        "chat: {} subscribers on {channel}, {posted} messages posted ({} refused), {delivered}/{expected} deliveries, {lost_sockets} sockets lost\n",
        args.subscribers,
        refused.total()
    );
    table.push_str(&line("request", request));
    table.push_str(&line("delivery", delivery));
    let json = json!({
        "scenario": "chat",
        "subscribers": args.subscribers,
        "subscribe_failures": failures.to_json(),
        "posted": posted,
        "refused": refused.to_json(),
        "expected_deliveries": expected,
        "delivered": delivered,
        "lost_sockets": lost_sockets,
        "request": request.map(Summary::to_json),
        "delivery": delivery.map(Summary::to_json),
    });
    Ok(Report {
        table,
        json,
        failed_check: None,
    })
}

async fn join(
    endpoint: &Endpoint,
    key: &str,
    secret: &str,
    channel: &str,
) -> Result<Ws, ConnError> {
    let (mut ws, socket_id) = conn::open(endpoint, Options::default()).await?;
    let frame = protocol::subscribe_presence(key, secret, &socket_id, channel, MEMBER);
    conn::subscribe(&mut ws, &frame, channel).await?;
    Ok(ws)
}

/// Reads deliveries until told to stop; answers their latencies and whether the socket lived.
async fn receive(mut ws: Ws, mut stop: watch::Receiver<bool>) -> (Vec<u32>, bool) {
    let mut latencies = Vec::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            frame = conn::recv(&mut ws) => match frame {
                Ok(Incoming::Bench(stamp)) => {
                    latencies.push(u32::try_from(now_us().saturating_sub(stamp.sent_us)).unwrap_or(u32::MAX));
                }
                Ok(Incoming::Ping) => {
                    if conn::send(&mut ws, protocol::PONG).await.is_err() {
                        return (latencies, false);
                    }
                }
                Ok(_) => {}
                Err(_) => return (latencies, false),
            },
        }
    }
    conn::close(ws).await;
    (latencies, true)
}

/// Posts at a fixed interval until `until`; answers the request latencies and refusals.
async fn post_loop(
    authority: &str,
    cookie: &str,
    path: &str,
    seq: &AtomicU64,
    every: Duration,
    until: std::time::Instant,
) -> (Vec<u32>, Tally) {
    let mut latencies = Vec::new();
    let mut refused = Tally::default();
    let mut stream: Option<BufStream<TcpStream>> = None;
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while std::time::Instant::now() < until {
        tick.tick().await;
        let n = seq.fetch_add(1, Ordering::Relaxed);
        let body = json!({"body": format!("bench {n} {}", now_us())}).to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nCookie: {cookie}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let started = Instant::now();
        if stream.is_none() {
            match TcpStream::connect(authority).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    stream = Some(BufStream::new(s));
                }
                Err(_) => {
                    refused.add("connect");
                    continue;
                }
            }
        }
        let Some(s) = stream.as_mut() else { continue };
        match exchange(s, request.as_bytes()).await {
            Ok(201) => latencies.push(micros(started.elapsed())),
            Ok(status) => refused.add(format!("HTTP {status}")),
            Err(_) => {
                refused.add("io");
                stream = None;
            }
        }
    }
    (latencies, refused)
}

/// Writes a request and reads one `Content-Length` response; answers its status.
async fn exchange(stream: &mut BufStream<TcpStream>, request: &[u8]) -> std::io::Result<u16> {
    stream.write_all(request).await?;
    stream.flush().await?;
    let mut head = Vec::with_capacity(1024);
    while !head.ends_with(b"\r\n\r\n") {
        head.push(stream.read_u8().await?);
        if head.len() > 16 * 1024 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
    let text = String::from_utf8_lossy(&head);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let length: usize = text
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = vec![0_u8; length];
    stream.read_exact(&mut body).await?;
    Ok(status)
}
