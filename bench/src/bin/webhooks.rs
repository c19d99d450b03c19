//! `vellum-bench-webhooks`: webhook deliveries per second to a local receiver (issue 24).
//!
//! Queues `--jobs` deliveries of one webhook directly in the job table (as item writes would),
//! starts the application's job worker with `--concurrency` slots, and times until every job is
//! `done`: each delivery is a claim (batched), a signed POST to a keep-alive receiver on loopback,
//! a delivery-log row and the job's finish. The receiver answers 200 at once, so the figure is
//! the queue's and the worker's cost, not a receiver's.
//!
//! Output: a line for people on stderr, one JSON line for machines on stdout. Run by hand, never
//! in CI.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use vellum_app::webhook_events::Delivery;
use vellum_app::{AppConfig, AppState, JobsConfig};
use vellum_storage::jobs::{JobStatus, NewJob};
use vellum_storage::webhooks::WebhookSettings;

#[derive(Debug, Parser)]
#[command(
    name = "vellum-bench-webhooks",
    about = "Webhook deliveries per second"
)]
struct Cli {
    /// `postgres://…/db` or `sqlite://…`; default: a fresh SQLite file in a temporary directory.
    #[arg(long, env = "VELLUM_BENCH_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Deliveries to queue.
    #[arg(long, default_value_t = 5_000)]
    jobs: u64,
    /// Deliveries the worker runs at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "vellum-bench-webhooks: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: &Cli) -> Result<(), Box<dyn std::error::Error>> {
    vellum_app::telemetry::init(&vellum_app::config::LogArgs {
        log: std::env::var("VELLUM_LOG").unwrap_or_else(|_| "warn".to_owned()),
        log_format: vellum_app::config::LogFormat::Text,
    })?;
    let dir = tempfile::tempdir()?;
    let url = cli.database_url.clone().unwrap_or_else(|| {
        format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("bench.db").display()
        )
    });
    let db = vellum_storage::connect(&url).await?;
    vellum_storage::migrate(&db).await?;
    vellum_storage::seed::seed_system(&db).await?;
    let received = Arc::new(AtomicU64::new(0));
    let receiver = receiver(Arc::clone(&received)).await?;
    let hook = vellum_storage::webhooks::create(
        &db,
        &WebhookSettings {
            name: format!("bench-{}", uuid_like()),
            url: receiver,
            events: json!(["item.created"]).to_string(),
            collections: "[]".to_owned(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned(),
            enabled: true,
        },
    )
    .await?;
    let payloads: Vec<serde_json::Value> = (0..cli.jobs)
        .map(|i| {
            json!(Delivery {
                webhook_id: hook,
                event: "item.created".to_owned(),
                message_id: format!("msg_bench_{i}"),
                timestamp: 1_764_300_000,
                body: json!({"type": "item.created", "timestamp": "2026-11-28T00:00:00Z", "data": {"collection": "articles", "id": i}}).to_string(),
            })
        })
        .collect();
    for chunk in payloads.chunks(500) {
        let news: Vec<NewJob<'_>> = chunk
            .iter()
            .map(|payload| NewJob {
                queue: "webhook",
                payload,
                max_attempts: 3,
            })
            .collect();
        vellum_storage::jobs::enqueue_all(&db, &news).await?;
    }
    let config = AppConfig {
        jobs: JobsConfig {
            concurrency: cli.concurrency,
            poll_interval: Duration::from_millis(20),
            allowed_networks: vec!["127.0.0.0/8".parse()?],
            ..JobsConfig::default()
        },
        ..AppConfig::default()
    };
    let started = Instant::now();
    let state = AppState::new(db.clone(), config).await?;
    vellum_app::jobs::start_worker(&state);
    loop {
        let counts = vellum_storage::jobs::counts(&db).await?;
        let done = counts
            .iter()
            .find(|(s, _)| *s == JobStatus::Done)
            .map_or(0, |(_, n)| *n);
        let unfinished: u64 = counts
            .iter()
            .filter(|(s, _)| {
                matches!(
                    s,
                    JobStatus::Queued | JobStatus::Running | JobStatus::Failed
                )
            })
            .map(|(_, n)| n)
            .sum();
        if unfinished == 0 {
            let secs = started.elapsed().as_secs_f64();
            #[allow(clippy::cast_precision_loss)]
            let rate = done as f64 / secs;
            writeln!(
                std::io::stderr(),
                "{} deliveries ({} received) in {secs:.2} s: {rate:.0} per second ({} backend, {} at once)",
                done,
                received.load(Ordering::Relaxed),
                db.backend().name(),
                cli.concurrency
            )?;
            writeln!(
                std::io::stdout(),
                "{}",
                json!({"deliveries": done, "seconds": secs, "per_second": rate, "backend": db.backend().name(), "concurrency": cli.concurrency})
            )?;
            drop(state);
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A keep-alive HTTP/1.1 receiver on loopback that answers every request 200 at once.
async fn receiver(count: Arc<AtomicU64>) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let count = Arc::clone(&count);
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut reader = BufReader::new(read);
                loop {
                    let mut length = 0_usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        match reader.read_line(&mut line).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0_u8; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    count.fetch_add(1, Ordering::Relaxed);
                    if write
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    Ok(url)
}
