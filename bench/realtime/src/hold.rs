//! `hold`: many idle, subscribed sockets on one server, and what they cost it in memory.
//!
//! The figure the issue asks for is the server's resident memory with 5,000 sockets open, so
//! the sockets do the least a real client does (connect, subscribe to one private channel,
//! answer pings) and nothing else.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::{Semaphore, mpsc, watch};

use crate::conn::{self, ConnError, Endpoint, Options, Ws};
use crate::protocol::{self, Incoming};
use crate::stats::{Memory, Tally};
use crate::{BenchError, Common, Report, progress};

#[derive(Debug, clap::Args)]
pub struct HoldArgs {
    #[command(flatten)]
    pub common: Common,

    /// Sockets to open.
    #[arg(long, default_value_t = 5000)]
    pub sockets: usize,

    /// The server's process id: its `VmRSS`/`VmHWM` are read from `/proc/PID/status` before
    /// and after the sockets are open.
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Seconds to hold the sockets once all are open (the server's RSS is sampled each second).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,

    /// The private channel every socket subscribes to.
    #[arg(long, default_value = "private-bench")]
    pub channel: String,
}

/// How one held socket ended.
enum Held {
    NeverOpened,
    /// Still open when the hold ended.
    ToTheEnd,
    /// Closed during the hold, with its class.
    Dropped(String),
}

pub async fn run(args: &HoldArgs) -> Result<Report, BenchError> {
    let endpoints = args.common.endpoints()?;
    let pid = args.server_pid.map(|p| p.to_string());
    let server_before = pid.as_deref().map(memory).transpose()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Result<(), String>>();
    let permits = Arc::new(Semaphore::new(args.common.connect_concurrency as usize));
    let started = Instant::now();
    let tasks: Vec<_> = endpoints
        .iter()
        .cycle()
        .take(args.sockets)
        .map(|endpoint| {
            let opening = Opening {
                endpoint: endpoint.clone(),
                key: args.common.key.clone(),
                secret: args.common.secret.clone(),
                channel: args.channel.clone(),
                permits: Arc::clone(&permits),
                timeout: args.common.connect_timeout(),
                also_presence: None,
            };
            tokio::spawn(hold_one(opening, ready_tx.clone(), stop_rx.clone()))
        })
        .collect();
    drop(ready_tx);

    let mut connected = 0_usize;
    let mut failures = Tally::default();
    let mut last_progress = Instant::now();
    for _ in 0..args.sockets {
        match ready_rx.recv().await {
            Some(Ok(())) => connected += 1,
            Some(Err(class)) => failures.add(class),
            None => break,
        }
        if last_progress.elapsed() >= Duration::from_secs(5) {
            last_progress = Instant::now();
            progress(&format!(
                "hold: {connected} subscribed, {} failed, {:.1} s",
                failures.total(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
    let open_secs = started.elapsed().as_secs_f64();
    let server_open = pid.as_deref().map(memory).transpose()?;
    let client_open = Memory::of_process("self").ok();

    // Hold, sampling the server's RSS: the figure is the steady state, not a lucky instant.
    let mut rss_max = server_open.map(|m| m.rss_mib);
    for _ in 0..args.seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Some(pid) = pid.as_deref() {
            let now = memory(pid)?;
            rss_max = rss_max.map(|max: f64| max.max(now.rss_mib));
        }
    }
    let server_end = pid.as_deref().map(memory).transpose()?;
    let _ = stop_tx.send(true);

    let mut held = 0_usize;
    let mut dropped = Tally::default();
    for task in tasks {
        match task.await? {
            Held::ToTheEnd => held += 1,
            Held::Dropped(class) => dropped.add(class),
            Held::NeverOpened => {}
        }
    }

    let per_socket_kib = match (server_before, server_open) {
        (Some(before), Some(open)) if connected > 0 => {
            #[expect(clippy::cast_precision_loss, reason = "an average for people")]
            let n = connected as f64;
            Some((open.rss_mib - before.rss_mib) * 1024.0 / n)
        }
        _ => None,
    };
    let mem_json = |m: Option<Memory>| m.map(Memory::to_json);
    let json = json!({
        "scenario": "hold",
        "urls": args.common.urls,
        "sockets": args.sockets,
        "connected": connected,
        "failures": failures.to_json(),
        "open_secs": crate::stats::round3(open_secs),
        "held_seconds": args.seconds,
        "held_to_end": held,
        "dropped_during_hold": dropped.to_json(),
        "server_pid": args.server_pid,
        "server_before": mem_json(server_before),
        "server_open": mem_json(server_open),
        "server_end": mem_json(server_end),
        "server_rss_max_mib": rss_max.map(crate::stats::round3),
        "server_kib_per_socket": per_socket_kib.map(crate::stats::round3),
        "client": mem_json(client_open),
    });
    let mut table = format!(
        "hold: {} sockets on {} over {:?}\n  subscribed         {connected} / {} in {open_secs:.1} s (failures: {})\n  held to the end    {held} ({} s; dropped: {})\n",
        args.sockets,
        args.channel,
        args.common.urls,
        args.sockets,
        failures.line(),
        args.seconds,
        dropped.line(),
    );
    if let (Some(before), Some(open), Some(end)) = (server_before, server_open, server_end) {
        table.push_str(&format!(
            "  server RSS         {:.1} MiB before, {:.1} MiB all open, {:.1} MiB after {} s (max {:.1}); HWM {:.1} MiB\n",
            before.rss_mib,
            open.rss_mib,
            end.rss_mib,
            args.seconds,
            rss_max.unwrap_or(end.rss_mib),
            end.hwm_mib,
        ));
        if let Some(kib) = per_socket_kib {
            table.push_str(&format!(
                "  server per socket  {kib:.1} KiB (RSS growth / subscribed)\n"
            ));
        }
    }
    if let Some(client) = client_open {
        table.push_str(&format!("  client RSS         {:.1} MiB\n", client.rss_mib));
    }
    Ok(Report {
        table,
        json,
        failed_check: None,
    })
}

fn memory(pid: &str) -> Result<Memory, BenchError> {
    Memory::of_process(pid).map_err(|source| BenchError::Memory {
        pid: pid.to_owned(),
        source,
    })
}

/// What a task needs to open and subscribe one socket.
#[derive(Debug, Clone)]
pub struct Opening {
    pub endpoint: Endpoint,
    pub key: String,
    pub secret: String,
    pub channel: String,
    pub permits: Arc<Semaphore>,
    pub timeout: Duration,
    /// A presence channel to join as well, after `channel`, and as which user (the stalled
    /// subscribers' flood channel).
    pub also_presence: Option<(String, String)>,
}

impl Opening {
    /// Waits for a connect permit, then connects and subscribes within the timeout (which
    /// starts once the permit is held, so queued sockets do not time out while waiting).
    /// `subscribe_frame` builds the subscription from the socket id.
    ///
    /// # Errors
    /// Any failure to connect or subscribe, or the timeout.
    pub async fn open(
        &self,
        options: Options,
        subscribe_frame: impl FnOnce(&str) -> String,
    ) -> Result<Ws, ConnError> {
        let _permit = self.permits.acquire().await;
        let attempt = async {
            let (mut ws, socket_id) = conn::open(&self.endpoint, options).await?;
            conn::subscribe(&mut ws, &subscribe_frame(&socket_id), &self.channel).await?;
            if let Some((channel, user)) = &self.also_presence {
                let frame = protocol::subscribe_presence(
                    &self.key,
                    &self.secret,
                    &socket_id,
                    channel,
                    user,
                );
                conn::subscribe(&mut ws, &frame, channel).await?;
            }
            Ok(ws)
        };
        tokio::time::timeout(self.timeout, attempt)
            .await
            .unwrap_or(Err(ConnError::Timeout("connect and subscribe")))
    }

    /// [`Self::open`] on a private channel.
    pub async fn open_private(&self, options: Options) -> Result<Ws, ConnError> {
        self.open(options, |socket_id| {
            protocol::subscribe_private(&self.key, &self.secret, socket_id, &self.channel)
        })
        .await
    }
}

async fn hold_one(
    opening: Opening,
    ready: mpsc::UnboundedSender<Result<(), String>>,
    stop: watch::Receiver<bool>,
) -> Held {
    match opening.open_private(Options::default()).await {
        Ok(ws) => {
            let _ = ready.send(Ok(()));
            match keep_alive(ws, stop).await {
                Ok(()) => Held::ToTheEnd,
                Err(e) => Held::Dropped(e.class()),
            }
        }
        Err(e) => {
            let _ = ready.send(Err(e.class()));
            Held::NeverOpened
        }
    }
}

/// Reads and discards until `stop`, answering `pusher:ping`; then closes. A socket must keep
/// reading, or the server sees a slow consumer and closes it.
///
/// # Errors
/// How the socket ended, if it ended before `stop`.
pub async fn keep_alive(mut ws: Ws, mut stop: watch::Receiver<bool>) -> Result<(), ConnError> {
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            frame = conn::recv(&mut ws) => {
                if matches!(frame?, Incoming::Ping) {
                    conn::send(&mut ws, protocol::PONG).await?;
                }
            }
        }
    }
    conn::close(ws).await;
    Ok(())
}
