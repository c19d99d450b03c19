//! The command line of `vellum-server`, and what its settings become: the pool options, the blob
//! store, the cache backends and the HTTP configuration.
//!
//! The groups `vellum-admin` reads too (database, Redis, logging) and the other general ones come
//! from [`vellum_app::config`], where each flag and default is written once; the image transform
//! settings, which only this binary reads, are here.

use std::time::Duration;

use vellum_app::config::{
    AdminArgs, AiArgs, BlobArgs, DatabaseArgs, HttpArgs, JobArgs, LogArgs, PoolArgs, RealtimeArgs,
    RedisArgs, Switch, TransformUrlArgs,
};

use crate::error::ServerError;

/// Command line of `vellum-server`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "vellum-server",
    version,
    about = "The Vellum headless CMS HTTP server"
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) config: Config,

    /// Apply `fixtures/demo.json` when the database has no collections, and print the demo API key
    /// once.
    #[arg(long)]
    pub(crate) demo: bool,

    /// Internal: run as a transform worker limited to this many bytes of data segment (the server
    /// starts its workers so; see `vellum_http::transforms::worker`).
    #[arg(long = "transform-worker", hide = true, value_name = "BYTES")]
    pub(crate) transform_worker: Option<u64>,
}

/// The settings of the operator contract's table and the ones `docs/configuration.md` adds.
#[derive(Debug, clap::Args)]
pub(crate) struct Config {
    #[command(flatten)]
    pub(crate) database: DatabaseArgs,
    #[command(flatten)]
    pub(crate) pool: PoolArgs,
    #[command(flatten)]
    pub(crate) redis: RedisArgs,
    #[command(flatten)]
    pub(crate) blobs: BlobArgs,
    #[command(flatten)]
    pub(crate) http: HttpArgs,
    #[command(flatten)]
    pub(crate) log: LogArgs,
    #[command(flatten)]
    pub(crate) transforms: TransformArgs,
    #[command(flatten)]
    pub(crate) transform_urls: TransformUrlArgs,
    #[command(flatten)]
    pub(crate) admin: AdminArgs,
    #[command(flatten)]
    pub(crate) realtime: RealtimeArgs,
    #[command(flatten)]
    pub(crate) ai: AiArgs,
    #[command(flatten)]
    pub(crate) jobs: JobArgs,

    /// Serve Prometheus metrics at `GET /metrics` on this second address (e.g.
    /// `127.0.0.1:9464`) [default: off]. The public listener never serves them.
    #[arg(long, env = "VELLUM_METRICS_ADDR", value_name = "ADDR")]
    pub(crate) metrics_addr: Option<std::net::SocketAddr>,
}

/// Image transforms: how much memory, time and concurrency they get, and how much of the store
/// their outputs may take.
#[derive(Debug, clap::Args)]
pub(crate) struct TransformArgs {
    /// JPEG quality of image transform outputs (1 to 100).
    #[arg(long, env = "VELLUM_JPEG_QUALITY", default_value_t = vellum_app::DEFAULT_JPEG_QUALITY, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub(crate) jpeg_quality: u8,

    /// Largest image (width x height, in pixels) a transform decodes; larger ones get 422.
    #[arg(long, env = "VELLUM_MAX_IMAGE_PIXELS", default_value_t = vellum_app::DEFAULT_MAX_IMAGE_PIXELS)]
    pub(crate) max_image_pixels: u64,

    /// Memory that image transforms running at once may hold together, by their estimated cost
    /// (bytes, or with a KiB/MiB/GiB suffix); a transform that needs more gets 422.
    #[arg(long, env = "VELLUM_TRANSFORM_MEMORY", default_value = "512MiB", value_parser = parse_bytes)]
    pub(crate) transform_memory: u64,

    /// Image transforms that may run at once [default: one per CPU core].
    #[arg(long, env = "VELLUM_TRANSFORM_CONCURRENCY", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) transform_concurrency: Option<u64>,

    /// Seconds a transform may wait for the budget before the client gets 503 with Retry-After.
    #[arg(long, env = "VELLUM_TRANSFORM_QUEUE_TIMEOUT", default_value = "5", value_parser = parse_seconds)]
    pub(crate) transform_queue_timeout: Duration,

    /// Seconds one transform may run once admitted; then its worker is killed and the client
    /// gets 422 (the failure is remembered for the file's content and key).
    #[arg(long, env = "VELLUM_TRANSFORM_TIMEOUT", default_value = "10", value_parser = parse_seconds)]
    pub(crate) transform_timeout: Duration,

    /// Transform worker processes; 0 runs transforms inside the server (no memory ceiling, no
    /// cancellation) [default: VELLUM_TRANSFORM_CONCURRENCY].
    #[arg(long, env = "VELLUM_TRANSFORM_WORKERS")]
    pub(crate) transform_workers: Option<usize>,

    /// Data-segment limit (RLIMIT_DATA) of each transform worker (bytes, or with a KiB/MiB/GiB
    /// suffix) [default: twice VELLUM_TRANSFORM_MEMORY].
    #[arg(long, env = "VELLUM_TRANSFORM_WORKER_MEMORY", value_parser = parse_bytes)]
    pub(crate) transform_worker_memory: Option<u64>,

    /// Stored transform outputs of one original may take this many times its size, plus
    /// VELLUM_DERIVATIVE_FLOOR; past that the least recently used are evicted.
    #[arg(long, env = "VELLUM_DERIVATIVE_FACTOR", default_value_t = vellum_storage::files::DerivativeCap::DEFAULT.factor)]
    pub(crate) derivative_factor: u64,

    /// Bytes every original's transform outputs may take on top of VELLUM_DERIVATIVE_FACTOR times
    /// its size (bytes, or with a KiB/MiB/GiB suffix).
    #[arg(long, env = "VELLUM_DERIVATIVE_FLOOR", default_value = "1MiB", value_parser = parse_bytes)]
    pub(crate) derivative_floor: u64,
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

/// A worker's default data-segment limit, as a multiple of the transform budget: the largest
/// admitted transform plus the allocator's retained and reserved segments, which RLIMIT_DATA
/// counts (a 470 MiB RSS transform needs about 700 MB of limit; docs/configuration.md).
const WORKER_MEMORY_FACTOR: u64 = 2;

impl Config {
    pub(crate) fn pool(&self) -> vellum_storage::PoolOptions {
        vellum_storage::PoolOptions {
            max_connections: self.pool.db_max_connections,
            connect_timeout: Duration::from_secs(self.pool.db_connect_timeout),
            acquire_timeout: Duration::from_secs(self.pool.db_acquire_timeout),
            checkpoint_interval: Some(Duration::from_secs(1)),
            sqlite_cache_kib: self.pool.sqlite_cache_kib,
            sqlite_mmap: self.pool.sqlite_mmap,
        }
    }

    /// The blob store: the S3 bucket when one is configured, else the local directory.
    pub(crate) fn blobs(&self) -> Result<vellum_storage::blob::ObjectBlobStore, ServerError> {
        use vellum_storage::blob::{ObjectBlobStore, S3Config};
        Ok(match self.blobs.s3_bucket() {
            Some(bucket) => ObjectBlobStore::s3(&S3Config {
                bucket: bucket.to_owned(),
                endpoint: self.blobs.s3_endpoint.clone(),
            })?,
            None => ObjectBlobStore::local(&self.blobs.files_dir)?,
        })
    }

    /// The cache, epoch and blob store this replica shares (Redis) or keeps to itself.
    pub(crate) fn backends(
        &self,
        http: &vellum_http::HttpConfig,
    ) -> Result<vellum_http::Backends, ServerError> {
        let blobs = std::sync::Arc::new(self.blobs()?);
        Ok(match self.redis.url() {
            Some(url) => {
                let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
                let redis = vellum_http::cache::RedisBackend::new(url, cores * 4)
                    .map_err(ServerError::Redis)?;
                vellum_http::Backends::redis(http, blobs, redis)
            }
            None => vellum_http::Backends::local(http, blobs),
        })
    }

    fn transform_concurrency(&self) -> usize {
        self.transforms
            .transform_concurrency
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(vellum_http::cores)
    }

    /// What the HTTP layer is configured with.
    pub(crate) fn http_config(&self) -> Result<vellum_http::HttpConfig, ServerError> {
        let http = &self.http;
        let transforms = &self.transforms;
        let cors_origins = if http.cors_origins.is_empty() {
            vellum_policy::CorsOrigins::Any
        } else {
            vellum_policy::CorsOrigins::List(
                http.cors_origins
                    .iter()
                    .map(|o| vellum_policy::Origin::parse(o.trim()))
                    .collect::<Result<_, _>>()
                    .map_err(ServerError::CorsOrigin)?,
            )
        };
        Ok(vellum_http::HttpConfig {
            base_url: http.base_url().trim_end_matches('/').to_owned(),
            cache: http.cache == Switch::On,
            cors_origins,
            trusted_proxies: http.trusted_proxies.clone(),
            json_limit: http.json_limit,
            jpeg_quality: transforms.jpeg_quality,
            max_image_pixels: transforms.max_image_pixels,
            request_timeout: Duration::from_secs(http.request_timeout),
            body_read_timeout: Duration::from_secs(http.body_read_timeout),
            transform_memory: transforms.transform_memory,
            transform_concurrency: self.transform_concurrency(),
            transform_queue_timeout: transforms.transform_queue_timeout,
            transform_timeout: transforms.transform_timeout,
            transform_workers: transforms
                .transform_workers
                .unwrap_or_else(|| self.transform_concurrency()),
            transform_worker_memory: transforms.transform_worker_memory.unwrap_or_else(|| {
                transforms
                    .transform_memory
                    .saturating_mul(WORKER_MEMORY_FACTOR)
            }),
            derivative_cap: vellum_storage::files::DerivativeCap {
                factor: transforms.derivative_factor,
                floor_bytes: transforms.derivative_floor,
            },
            identity: self.admin.identity(),
            realtime: self.realtime.realtime(),
            ai: self.ai.ai(),
            jobs: self.jobs.jobs(),
            metrics: self.metrics_addr.is_some(),
            transform_urls: self
                .transform_urls
                .transform_urls()
                .map_err(ServerError::TransformUrls)?,
            ..vellum_http::HttpConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser as _};

    use super::*;

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
            ("sqlite_cache_kib", "VELLUM_SQLITE_CACHE_KIB", Some("2048")),
            ("sqlite_mmap", "VELLUM_SQLITE_MMAP", Some("0")),
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
            ("metrics_addr", "VELLUM_METRICS_ADDR", None),
            ("signed_transforms", "VELLUM_SIGNED_TRANSFORMS", Some("off")),
            ("transform_sizes", "VELLUM_TRANSFORM_SIZES", None),
            ("url_signing_key", "VELLUM_URL_SIGNING_KEY", None),
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
        assert_eq!(cli.config.http.listen, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(cli.config.http.cache, Switch::Off);
        assert_eq!(cli.config.http.base_url(), "https://cms.example.com");
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
        let http = cli.config.http_config().unwrap();
        assert_eq!(http.transform_memory, 64 << 20);
        assert_eq!(http.transform_worker_memory, 128 << 20);
        assert_eq!(http.transform_workers, http.transform_concurrency);
        let worker = Cli::try_parse_from(["vellum-server", "--transform-worker", "1000"]).unwrap();
        assert_eq!(worker.transform_worker, Some(1000));
    }

    #[test]
    fn the_derivative_cap_defaults_to_four_times_the_original_plus_a_mebibyte() {
        let cli = Cli::try_parse_from(["vellum-server"]).unwrap();
        let cap = cli.config.http_config().unwrap().derivative_cap;
        assert_eq!((cap.factor, cap.floor_bytes), (4, 1024 * 1024));
        let cli = Cli::try_parse_from([
            "vellum-server",
            "--derivative-factor",
            "0",
            "--derivative-floor",
            "64KiB",
        ])
        .unwrap();
        let cap = cli.config.http_config().unwrap().derivative_cap;
        assert_eq!((cap.factor, cap.floor_bytes), (0, 64 * 1024));
    }

    /// Metrics are off unless an address is given; then the edge counts requests.
    #[test]
    fn metrics_are_off_until_given_an_address() {
        let mut cli = Cli::try_parse_from(["vellum-server"]).unwrap();
        // Independent of a `VELLUM_METRICS_ADDR` in the environment.
        cli.config.metrics_addr = None;
        assert!(!cli.config.http_config().unwrap().metrics);
        let cli =
            Cli::try_parse_from(["vellum-server", "--metrics-addr", "127.0.0.1:9464"]).unwrap();
        assert_eq!(
            cli.config.metrics_addr,
            Some("127.0.0.1:9464".parse().unwrap())
        );
        assert!(cli.config.http_config().unwrap().metrics);
        assert!(Cli::try_parse_from(["vellum-server", "--metrics-addr", "9464"]).is_err());
    }

    #[test]
    fn cache_accepts_only_on_or_off() {
        assert!(Cli::try_parse_from(["vellum-server", "--cache", "maybe"]).is_err());
    }

    /// (Its literal `Config` became a parse, with the base URL cleared in case `VELLUM_BASE_URL`
    /// is set: the groups now live in `vellum_app::config`.)
    #[test]
    fn base_url_defaults_to_the_listen_address() {
        let mut cli = Cli::try_parse_from(["vellum-server", "--listen", "127.0.0.1:8080"]).unwrap();
        cli.config.http.base_url = None;
        assert_eq!(cli.config.http.base_url(), "http://127.0.0.1:8080");
        cli.config.http.base_url = Some("https://cms.example.com".to_owned());
        assert_eq!(cli.config.http.base_url(), "https://cms.example.com");
    }

    #[test]
    fn database_backend_never_includes_credentials() {
        let cli = Cli::try_parse_from([
            "vellum-server",
            "--database-url",
            "postgres://user:secret@db/vellum",
        ])
        .unwrap();
        assert_eq!(cli.config.database.backend(), "postgres");
    }
}
