//! `vellum-server`: the Vellum HTTP service (public API, health probes, admin surfaces).
//!
//! `main` stays short: parse the configuration (clap flags with `VELLUM_*` environment fallbacks,
//! see the operator contract), initialize tracing from `VELLUM_LOG`, build the state and run the
//! app from `vellum_http::app` until SIGTERM or Ctrl-C (graceful: in-flight requests finish).
//!
//! This binary must never hold business logic, access decisions or SQL: it wires the crates
//! together. It never calls `std::process::exit`; errors are returned from `main` so logs flush.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

mod demo;

/// mimalloc instead of glibc's allocator: a request allocates and frees many small JSON values
/// and strings on two or more worker threads, and malloc/free were ~18% of an uncached list's
/// profile (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use tracing_subscriber::EnvFilter;

/// Command line of `vellum-server`.
#[derive(Debug, Parser)]
#[command(
    name = "vellum-server",
    version,
    about = "The Vellum headless CMS HTTP server"
)]
struct Cli {
    #[command(flatten)]
    config: Config,

    /// Apply `fixtures/demo.json` when the database has no collections, and print the demo API key
    /// once.
    #[arg(long)]
    demo: bool,

    /// Internal: run as a transform worker limited to this many bytes of data segment (the server
    /// starts its workers so; see `vellum_http::transforms::worker`).
    #[arg(long = "transform-worker", hide = true, value_name = "BYTES")]
    transform_worker: Option<u64>,
}

/// The settings of the operator contract's table, shared (in spirit, for now) with `vellum-admin`.
#[derive(Debug, clap::Args)]
struct Config {
    /// Database URL: SQLite (embedded default) or `postgres://…`.
    #[arg(
        long,
        env = "VELLUM_DATABASE_URL",
        default_value = "sqlite://./data/vellum.db?mode=rwc",
        hide_env_values = true
    )]
    database_url: String,

    /// Address the server binds to.
    #[arg(long, env = "VELLUM_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,

    /// Absolute prefix used in file `url` and `transforms` values [default: http://<listen>].
    #[arg(long, env = "VELLUM_BASE_URL")]
    base_url: Option<String>,

    /// Root of the local blob store (used when no object store is configured).
    #[arg(long, env = "VELLUM_FILES_DIR", default_value = "./data/files")]
    files_dir: PathBuf,

    /// Redis URL; when set, the response cache, epoch counter and realtime fan-out use Redis.
    #[arg(long, env = "VELLUM_REDIS_URL", hide_env_values = true)]
    redis_url: Option<String>,

    /// S3 bucket for file bytes and transforms (instead of `VELLUM_FILES_DIR`); region and
    /// credentials come from the usual `AWS_*` variables.
    #[arg(long, env = "VELLUM_S3_BUCKET")]
    s3_bucket: Option<String>,

    /// S3-compatible endpoint (MinIO, R2, …) for `VELLUM_S3_BUCKET` [default: AWS].
    #[arg(long, env = "VELLUM_S3_ENDPOINT", requires = "s3_bucket")]
    s3_endpoint: Option<String>,

    /// Most database connections per replica [default: 4 per core for SQLite, 10 for
    /// PostgreSQL].
    #[arg(long, env = "VELLUM_DB_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..))]
    db_max_connections: Option<u32>,

    /// Seconds to wait when opening a database connection.
    #[arg(long, env = "VELLUM_DB_CONNECT_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    db_connect_timeout: u64,

    /// Seconds a request waits for a free database connection before it gets 503.
    #[arg(long, env = "VELLUM_DB_ACQUIRE_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    db_acquire_timeout: u64,

    /// Seconds an API handler may run before the client gets 503 (uploads and streamed file
    /// bodies are not limited).
    #[arg(long, env = "VELLUM_REQUEST_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    request_timeout: u64,

    /// Seconds a client has to send a request's headers (slow-loris); slower clients get 408
    /// and are disconnected.
    #[arg(long, env = "VELLUM_CLIENT_REQUEST_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    client_request_timeout: u64,

    /// Seconds a connection may take to shut down once its response is sent (a client that
    /// never closes its side is dropped after this).
    #[arg(long, env = "VELLUM_CLIENT_DISCONNECT_TIMEOUT", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    client_disconnect_timeout: u64,

    /// Seconds a response may wait for a client that stops reading (its window stays shut, or
    /// what was sent stays unacknowledged) before the connection is aborted and the response's
    /// memory freed (Linux: TCP_USER_TIMEOUT; ignored elsewhere).
    #[arg(long, env = "VELLUM_WRITE_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    write_timeout: u64,

    /// Seconds reading a request body (uploads included) may wait for its next bytes before the
    /// client gets 408.
    #[arg(long, env = "VELLUM_BODY_READ_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout: u64,

    /// Tracing filter, in `RUST_LOG` syntax.
    #[arg(long, env = "VELLUM_LOG", default_value = "info")]
    log: String,

    /// `off` disables the public API response cache (for benchmarks and debugging).
    #[arg(long, env = "VELLUM_CACHE", default_value = "on", value_enum)]
    cache: Switch,

    /// Log format: `text` (human-readable) or `json` (one object per line).
    #[arg(long, env = "VELLUM_LOG_FORMAT", default_value = "text", value_enum)]
    log_format: LogFormat,

    /// Reverse proxies (IPs or CIDR ranges, comma-separated) whose `X-Forwarded-For` names the
    /// client; without it the peer address is the client address (key IP allowlists use it).
    #[arg(long, env = "VELLUM_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_net)]
    trusted_proxies: Vec<ipnet::IpNet>,

    /// CORS origins for `/api/*` while the project allowlist is empty (comma-separated;
    /// default: any origin).
    #[arg(long, env = "VELLUM_CORS_ORIGINS", value_delimiter = ',')]
    cors_origins: Vec<String>,

    /// Largest JSON request body in bytes (413 above).
    #[arg(long, env = "VELLUM_JSON_LIMIT", default_value_t = 2 * 1024 * 1024)]
    json_limit: usize,

    /// JPEG quality of image transform outputs (1 to 100).
    #[arg(long, env = "VELLUM_JPEG_QUALITY", default_value_t = 82, value_parser = clap::value_parser!(u8).range(1..=100))]
    jpeg_quality: u8,

    /// Largest image (width x height, in pixels) a transform decodes; larger ones get 422.
    #[arg(long, env = "VELLUM_MAX_IMAGE_PIXELS", default_value_t = 50_000_000)]
    max_image_pixels: u64,

    /// HTTP worker threads [default: one per CPU core].
    #[arg(long, env = "VELLUM_WORKERS")]
    workers: Option<usize>,

    /// Memory that image transforms running at once may hold together, by their estimated cost
    /// (bytes, or with a KiB/MiB/GiB suffix); a transform that needs more gets 422.
    #[arg(long, env = "VELLUM_TRANSFORM_MEMORY", default_value = "512MiB", value_parser = parse_bytes)]
    transform_memory: u64,

    /// Image transforms that may run at once [default: one per CPU core].
    #[arg(long, env = "VELLUM_TRANSFORM_CONCURRENCY", value_parser = clap::value_parser!(u64).range(1..))]
    transform_concurrency: Option<u64>,

    /// Seconds a transform may wait for the budget before the client gets 503 with Retry-After.
    #[arg(long, env = "VELLUM_TRANSFORM_QUEUE_TIMEOUT", default_value = "5", value_parser = parse_seconds)]
    transform_queue_timeout: Duration,

    /// Seconds one transform may run once admitted; then its worker is killed and the client
    /// gets 422 (the failure is remembered for the file's content and key).
    #[arg(long, env = "VELLUM_TRANSFORM_TIMEOUT", default_value = "10", value_parser = parse_seconds)]
    transform_timeout: Duration,

    /// Transform worker processes; 0 runs transforms inside the server (no memory ceiling, no
    /// cancellation) [default: VELLUM_TRANSFORM_CONCURRENCY].
    #[arg(long, env = "VELLUM_TRANSFORM_WORKERS")]
    transform_workers: Option<usize>,

    /// Data-segment limit (RLIMIT_DATA) of each transform worker (bytes, or with a KiB/MiB/GiB
    /// suffix) [default: twice VELLUM_TRANSFORM_MEMORY].
    #[arg(long, env = "VELLUM_TRANSFORM_WORKER_MEMORY", value_parser = parse_bytes)]
    transform_worker_memory: Option<u64>,

    /// Stored transform outputs of one original may take this many times its size, plus
    /// VELLUM_DERIVATIVE_FLOOR; past that the least recently used are evicted.
    #[arg(long, env = "VELLUM_DERIVATIVE_FACTOR", default_value_t = vellum_storage::files::DerivativeCap::DEFAULT.factor)]
    derivative_factor: u64,

    /// Bytes every original's transform outputs may take on top of VELLUM_DERIVATIVE_FACTOR times
    /// its size (bytes, or with a KiB/MiB/GiB suffix).
    #[arg(long, env = "VELLUM_DERIVATIVE_FLOOR", default_value = "1MiB", value_parser = parse_bytes)]
    derivative_floor: u64,
}

/// Bytes: a plain number, or one followed by `KiB`, `MiB` or `GiB` (`K`, `M`, `G` too).
fn parse_bytes(raw: &str) -> Result<u64, String> {
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (digits, unit) = raw.split_at(split);
    let shift = match unit.trim() {
        "" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        other => return Err(format!("unknown unit \"{other}\" (use KiB, MiB or GiB)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("\"{raw}\" is not a positive size"))
}

/// Seconds, possibly fractional (`0.5`), more than zero.
fn parse_seconds(raw: &str) -> Result<Duration, String> {
    raw.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("\"{raw}\" is not a positive number of seconds"))
}

/// An IP address (a /32 or /128) or a CIDR range.
fn parse_net(raw: &str) -> Result<ipnet::IpNet, String> {
    let raw = raw.trim();
    raw.parse::<ipnet::IpNet>()
        .or_else(|_| raw.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("\"{raw}\" is not an IP address or CIDR range"))
}

/// A worker's default data-segment limit, as a multiple of the transform budget: the largest
/// admitted transform plus the allocator's retained and reserved segments, which RLIMIT_DATA
/// counts (a 470 MiB RSS transform needs about 700 MB of limit; docs/configuration.md).
const WORKER_MEMORY_FACTOR: u64 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

impl Config {
    /// `VELLUM_BASE_URL`, or `http://<listen>` when it is not set.
    fn base_url(&self) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
    }

    /// The URL scheme only: enough to log which backend is used without leaking a password.
    fn database_backend(&self) -> &str {
        self.database_url
            .split_once(':')
            .map_or("unknown", |(scheme, _)| scheme)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Switch {
    On,
    Off,
}

#[derive(Debug, thiserror::Error)]
enum ServerError {
    #[error("invalid VELLUM_LOG filter {filter:?}")]
    LogFilter {
        filter: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    #[error("could not install the tracing subscriber")]
    Tracing(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("invalid VELLUM_REDIS_URL")]
    Redis(#[source] vellum_http::cache::redis::RedisConfigError),
    #[error("invalid CORS origin")]
    CorsOrigin(#[source] vellum_policy::PolicyError),
    #[error("could not listen on {listen}")]
    Bind {
        listen: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the HTTP server stopped with an error")]
    Serve(#[source] std::io::Error),
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error("the demo manifest could not be applied")]
    Demo(#[from] vellum_manifest::ManifestError),
    #[error("the demo manifest is not valid JSON")]
    DemoJson(#[source] serde_json::Error),
    #[error("could not write to stdout")]
    Output(#[source] std::io::Error),
}

/// Installs the global subscriber on stderr, filtered by `VELLUM_LOG`: human-readable lines, or
/// one JSON object per line (with the request span's fields) when `VELLUM_LOG_FORMAT=json`.
fn init_tracing(filter: &str, format: LogFormat) -> Result<(), ServerError> {
    let env_filter = EnvFilter::try_new(filter).map_err(|source| ServerError::LogFilter {
        filter: filter.to_owned(),
        source,
    })?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
    }
    .map_err(ServerError::Tracing)
}

impl Config {
    fn pool(&self) -> vellum_storage::PoolOptions {
        vellum_storage::PoolOptions {
            max_connections: self.db_max_connections,
            connect_timeout: std::time::Duration::from_secs(self.db_connect_timeout),
            acquire_timeout: std::time::Duration::from_secs(self.db_acquire_timeout),
        }
    }

    /// The blob store: the S3 bucket when one is configured, else the local directory.
    fn blobs(&self) -> Result<vellum_storage::blob::ObjectBlobStore, ServerError> {
        use vellum_storage::blob::{ObjectBlobStore, S3Config};
        Ok(
            match self.s3_bucket.as_deref().filter(|b| !b.trim().is_empty()) {
                Some(bucket) => ObjectBlobStore::s3(&S3Config {
                    bucket: bucket.to_owned(),
                    endpoint: self.s3_endpoint.clone(),
                })?,
                None => ObjectBlobStore::local(&self.files_dir)?,
            },
        )
    }

    /// The cache, epoch and blob store this replica shares (Redis) or keeps to itself.
    fn backends(
        &self,
        http: &vellum_http::HttpConfig,
    ) -> Result<vellum_http::Backends, ServerError> {
        let blobs = std::sync::Arc::new(self.blobs()?);
        // An empty variable (`VELLUM_REDIS_URL=`) means "not configured", as for S3 below.
        Ok(
            match self.redis_url.as_deref().filter(|u| !u.trim().is_empty()) {
                Some(url) => {
                    let cores =
                        std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
                    let redis = vellum_http::cache::RedisBackend::new(url, cores * 4)
                        .map_err(ServerError::Redis)?;
                    vellum_http::Backends::redis(http, blobs, redis)
                }
                None => vellum_http::Backends::local(http, blobs),
            },
        )
    }

    fn transform_concurrency(&self) -> usize {
        self.transform_concurrency
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(vellum_http::cores)
    }

    fn http(&self) -> Result<vellum_http::HttpConfig, ServerError> {
        let cors_origins = if self.cors_origins.is_empty() {
            vellum_policy::CorsOrigins::Any
        } else {
            vellum_policy::CorsOrigins::List(
                self.cors_origins
                    .iter()
                    .map(|o| vellum_policy::Origin::parse(o.trim()))
                    .collect::<Result<_, _>>()
                    .map_err(ServerError::CorsOrigin)?,
            )
        };
        Ok(vellum_http::HttpConfig {
            base_url: self.base_url().trim_end_matches('/').to_owned(),
            cache: self.cache == Switch::On,
            cors_origins,
            trusted_proxies: self.trusted_proxies.clone(),
            json_limit: self.json_limit,
            jpeg_quality: self.jpeg_quality,
            max_image_pixels: self.max_image_pixels,
            request_timeout: std::time::Duration::from_secs(self.request_timeout),
            body_read_timeout: std::time::Duration::from_secs(self.body_read_timeout),
            transform_memory: self.transform_memory,
            transform_concurrency: self.transform_concurrency(),
            transform_queue_timeout: self.transform_queue_timeout,
            transform_timeout: self.transform_timeout,
            transform_workers: self
                .transform_workers
                .unwrap_or_else(|| self.transform_concurrency()),
            transform_worker_memory: self
                .transform_worker_memory
                .unwrap_or_else(|| self.transform_memory.saturating_mul(WORKER_MEMORY_FACTOR)),
            derivative_cap: vellum_storage::files::DerivativeCap {
                factor: self.derivative_factor,
                floor_bytes: self.derivative_floor,
            },
            ..vellum_http::HttpConfig::default()
        })
    }
}

/// Staging data older than this is left by an upload that can no longer finish (the server that
/// received it stopped): no upload runs for a day, so every replica sharing the store may sweep.
const STAGING_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// Removes stale upload staging data (`tmp/`) at start-up. A failure is logged, not fatal: the
/// leftovers cost disk, not correctness.
async fn sweep_staging(backends: &vellum_http::Backends) {
    match backends.blobs.sweep_staging(STAGING_MAX_AGE).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(removed = n, "removed stale upload staging data"),
        Err(err) => {
            tracing::warn!(error = %error_chain(&err), "could not sweep upload staging data");
        }
    }
}

async fn run(cli: &Cli) -> Result<(), ServerError> {
    let config = &cli.config;
    tracing::info!(
        listen = %config.listen,
        base_url = %config.base_url(),
        database = config.database_backend(),
        files_dir = %config.files_dir.display(),
        s3_bucket = config.s3_bucket.as_deref(),
        redis = config.redis_url.is_some(),
        cache = ?config.cache,
        demo = cli.demo,
        "configuration loaded"
    );
    let db = vellum_storage::connect_with(&config.database_url, &config.pool()).await?;
    vellum_storage::migrate(&db).await?;
    vellum_storage::seed::seed_system(&db).await?;
    if cli.demo {
        demo(&db, &config.base_url(), &config.blobs()?).await?;
    }
    let http = config.http()?;
    let backends = config.backends(&http)?;
    sweep_staging(&backends).await;
    let state = vellum_http::AppState::with_backends(db, http, backends).await?;
    let write_timeout = Duration::from_secs(config.write_timeout);
    let mut server = actix_web::HttpServer::new(move || vellum_http::app(state.clone()))
        .on_connect(move |connection, _| limit_stalled_writes(connection, write_timeout))
        .shutdown_timeout(30)
        // Without it, a streamed body's last segment waits for the client's delayed ACK
        // (Nagle): file content and transforms took a fixed ~44 ms each (bench/run.sh).
        .tcp_nodelay(true)
        .client_request_timeout(Duration::from_secs(config.client_request_timeout))
        .client_disconnect_timeout(Duration::from_secs(config.client_disconnect_timeout));
    if let Some(workers) = config.workers {
        server = server.workers(workers.max(1));
    }
    let server = server
        .bind(config.listen)
        .map_err(|source| ServerError::Bind {
            listen: config.listen,
            source,
        })?;
    tracing::info!(listen = %config.listen, "serving");
    // actix-web stops gracefully on SIGTERM, SIGINT and SIGQUIT.
    server.run().await.map_err(ServerError::Serve)
}

/// A client that stops reading must not pin its response forever: a rendered page stays in
/// memory until it is written (security review 2026-11, R9: twelve such clients held 3.3 GiB for
/// over a minute), and actix has no write timeout. TCP_USER_TIMEOUT makes the kernel abort the
/// connection once sent data stays unacknowledged, or the client's receive window stays shut
/// (zero-window probes), for `timeout`; the dispatcher's next write then fails and the
/// connection and its response are dropped. A client that keeps reading, however slowly, is
/// not affected.
fn limit_stalled_writes(connection: &dyn std::any::Any, timeout: Duration) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
    if let Some(stream) = connection.downcast_ref::<actix_web::rt::net::TcpStream>()
        && let Err(err) = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(timeout))
    {
        tracing::warn!(error = %err, "could not set the connection's write timeout");
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "fuchsia")))]
    let _ = (connection, timeout);
}

/// Applies the demo project to a database without collections, then prints the demo key (shown
/// once) and three requests to try. A database that already has collections is left alone.
async fn demo(
    db: &vellum_storage::Database,
    base_url: &str,
    blobs: &vellum_storage::blob::ObjectBlobStore,
) -> Result<(), ServerError> {
    use std::io::Write as _;
    let Some(report) = demo::seed(db, blobs).await? else {
        tracing::info!("--demo: the database already has collections; nothing applied");
        return Ok(());
    };
    let key = report.api_keys.values().next().cloned().unwrap_or_default();
    let base = base_url.trim_end_matches('/');
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Demo project applied. Editor API key (shown once): {key}\n\nTry:\n  curl {base}/api/v1/collections\n  curl '{base}/api/v1/collections/articles/items?locale=de&include=author,files'\n  curl -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' -d '{{\"data\": {{\"title\": \"Hello\", \"slug\": \"hello\"}}}}' {base}/api/v1/collections/articles/items"
    )
    .map_err(ServerError::Output)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A transform worker starts no runtime and no logging: stdin and stdout carry its jobs.
    if let Some(memory) = cli.transform_worker {
        return match vellum_http::transforms::run_worker(memory) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                report_without_tracing(&err);
                ExitCode::FAILURE
            }
        };
    }
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(serve(&cli)),
        Err(err) => {
            report_without_tracing(&err);
            ExitCode::FAILURE
        }
    }
}

async fn serve(cli: &Cli) -> ExitCode {
    if let Err(err) = init_tracing(&cli.config.log, cli.config.log_format) {
        report_without_tracing(&err);
        return ExitCode::FAILURE;
    }
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{}", error_chain(&err));
            ExitCode::FAILURE
        }
    }
}

/// `error: cause: root cause`, so a start-up failure says what actually went wrong.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

/// Writes an error and its causes to stderr, for failures before tracing is up.
fn report_without_tracing(err: &dyn std::error::Error) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "vellum-server: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        let _ = writeln!(stderr, "  caused by: {cause}");
        source = cause.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The defaults are the operator contract's; reading them from the command (not by parsing)
    /// keeps the test independent of any `VELLUM_*` variable set in the environment.
    #[test]
    fn defaults_and_env_vars_match_the_operator_contract() {
        let command = Cli::command();
        let expected = [
            (
                "database_url",
                "VELLUM_DATABASE_URL",
                Some("sqlite://./data/vellum.db?mode=rwc"),
            ),
            ("listen", "VELLUM_LISTEN", Some("127.0.0.1:8080")),
            ("base_url", "VELLUM_BASE_URL", None),
            ("files_dir", "VELLUM_FILES_DIR", Some("./data/files")),
            ("redis_url", "VELLUM_REDIS_URL", None),
            ("log", "VELLUM_LOG", Some("info")),
            ("cache", "VELLUM_CACHE", Some("on")),
            ("s3_bucket", "VELLUM_S3_BUCKET", None),
            ("s3_endpoint", "VELLUM_S3_ENDPOINT", None),
            ("db_max_connections", "VELLUM_DB_MAX_CONNECTIONS", None),
            ("db_connect_timeout", "VELLUM_DB_CONNECT_TIMEOUT", Some("5")),
            ("db_acquire_timeout", "VELLUM_DB_ACQUIRE_TIMEOUT", Some("5")),
            ("request_timeout", "VELLUM_REQUEST_TIMEOUT", Some("30")),
            (
                "client_request_timeout",
                "VELLUM_CLIENT_REQUEST_TIMEOUT",
                Some("5"),
            ),
            (
                "client_disconnect_timeout",
                "VELLUM_CLIENT_DISCONNECT_TIMEOUT",
                Some("1"),
            ),
            ("body_read_timeout", "VELLUM_BODY_READ_TIMEOUT", Some("30")),
            ("write_timeout", "VELLUM_WRITE_TIMEOUT", Some("30")),
            (
                "transform_memory",
                "VELLUM_TRANSFORM_MEMORY",
                Some("512MiB"),
            ),
            (
                "transform_concurrency",
                "VELLUM_TRANSFORM_CONCURRENCY",
                None,
            ),
            (
                "transform_queue_timeout",
                "VELLUM_TRANSFORM_QUEUE_TIMEOUT",
                Some("5"),
            ),
            ("transform_timeout", "VELLUM_TRANSFORM_TIMEOUT", Some("10")),
            ("transform_workers", "VELLUM_TRANSFORM_WORKERS", None),
            (
                "transform_worker_memory",
                "VELLUM_TRANSFORM_WORKER_MEMORY",
                None,
            ),
        ];
        for (id, env, default) in expected {
            let arg = command.get_arguments().find(|a| a.get_id() == id).unwrap();
            assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(env), "{id}");
            let defaults: Vec<_> = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_str())
                .collect();
            assert_eq!(
                defaults,
                default.map(Some).into_iter().collect::<Vec<_>>(),
                "{id}"
            );
        }
    }

    #[test]
    fn flags_override_and_parse() {
        let cli = Cli::try_parse_from([
            "vellum-server",
            "--listen",
            "0.0.0.0:9000",
            "--cache",
            "off",
            "--base-url",
            "https://cms.example.com",
            "--demo",
        ])
        .unwrap();
        assert_eq!(cli.config.listen, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(cli.config.cache, Switch::Off);
        assert_eq!(cli.config.base_url(), "https://cms.example.com");
        assert!(cli.demo);
    }

    #[test]
    fn transform_settings_parse_sizes_and_fractional_seconds() {
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("12 parsecs").is_err());
        assert_eq!(parse_seconds("0.25"), Ok(Duration::from_millis(250)));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("NaN").is_err());
        let cli = Cli::try_parse_from(["vellum-server", "--transform-memory", "64MiB"]).unwrap();
        let http = cli.config.http().unwrap();
        assert_eq!(http.transform_memory, 64 << 20);
        assert_eq!(http.transform_worker_memory, 128 << 20);
        assert_eq!(http.transform_workers, http.transform_concurrency);
        let worker = Cli::try_parse_from(["vellum-server", "--transform-worker", "1000"]).unwrap();
        assert_eq!(worker.transform_worker, Some(1000));
    }

    #[test]
    fn the_derivative_cap_defaults_to_four_times_the_original_plus_a_mebibyte() {
        let cli = Cli::try_parse_from(["vellum-server"]).unwrap();
        let cap = cli.config.http().unwrap().derivative_cap;
        assert_eq!((cap.factor, cap.floor_bytes), (4, 1024 * 1024));
        let cli = Cli::try_parse_from([
            "vellum-server",
            "--derivative-factor",
            "0",
            "--derivative-floor",
            "64KiB",
        ])
        .unwrap();
        let cap = cli.config.http().unwrap().derivative_cap;
        assert_eq!((cap.factor, cap.floor_bytes), (0, 64 * 1024));
    }

    #[test]
    fn cache_accepts_only_on_or_off() {
        assert!(Cli::try_parse_from(["vellum-server", "--cache", "maybe"]).is_err());
    }

    #[test]
    fn base_url_defaults_to_the_listen_address() {
        let mut config = Config {
            database_url: "sqlite::memory:".to_owned(),
            listen: "127.0.0.1:8080".parse().unwrap(),
            base_url: None,
            files_dir: PathBuf::from("./data/files"),
            redis_url: None,
            s3_bucket: None,
            s3_endpoint: None,
            db_max_connections: None,
            db_connect_timeout: 5,
            db_acquire_timeout: 5,
            request_timeout: 30,
            client_request_timeout: 5,
            client_disconnect_timeout: 1,
            write_timeout: 30,
            body_read_timeout: 30,
            log: "info".to_owned(),
            cache: Switch::On,
            log_format: LogFormat::Text,
            trusted_proxies: Vec::new(),
            cors_origins: Vec::new(),
            json_limit: 1024,
            jpeg_quality: 82,
            max_image_pixels: 1,
            workers: None,
            transform_memory: 1 << 29,
            transform_concurrency: None,
            transform_queue_timeout: Duration::from_secs(5),
            transform_timeout: Duration::from_secs(10),
            transform_workers: None,
            transform_worker_memory: None,
            derivative_factor: 4,
            derivative_floor: 1 << 20,
        };
        assert_eq!(config.base_url(), "http://127.0.0.1:8080");
        config.base_url = Some("https://cms.example.com".to_owned());
        assert_eq!(config.base_url(), "https://cms.example.com");
    }

    #[test]
    fn database_backend_never_includes_credentials() {
        let cli = Cli::try_parse_from([
            "vellum-server",
            "--database-url",
            "postgres://user:secret@db/vellum",
        ])
        .unwrap();
        assert_eq!(cli.config.database_backend(), "postgres");
    }
}
