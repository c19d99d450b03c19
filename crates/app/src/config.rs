//! The operator's settings that more than one binary reads, as clap argument groups.
//!
//! Configuration is clap only: every setting is a flag with a `VELLUM_*` environment fallback
//! (the operator contract's table), and each flag, variable and default is written here once.
//! `vellum-server` and `vellum-admin` flatten the groups they need, so the two binaries cannot
//! drift apart on a name or a default. The groups hold what the operator said, as plain values;
//! turning them into a connection pool, a blob store or an HTTP server is the binaries' job.
//!
//! The groups a subcommand-based CLI shares with the server (`DatabaseArgs`, `RedisArgs`,
//! `LogArgs`) are `global`, so `vellum-admin keys list --database-url …` works as well as
//! `vellum-admin --database-url … keys list`; in `vellum-server`, which has no subcommands, that
//! changes nothing.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the database is.
#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// Database URL: SQLite (embedded default) or `postgres://…`.
    #[arg(
        long,
        global = true,
        env = "VELLUM_DATABASE_URL",
        default_value = "sqlite://./data/vellum.db?mode=rwc",
        hide_env_values = true
    )]
    pub database_url: String,
}

impl DatabaseArgs {
    /// The URL scheme only: enough to log which backend is used without leaking a password.
    #[must_use]
    pub fn backend(&self) -> &str {
        self.database_url
            .split_once(':')
            .map_or("unknown", |(scheme, _)| scheme)
    }
}

/// How a long-running process sizes its database pool and how long it waits for it.
#[derive(Debug, Clone, clap::Args)]
pub struct PoolArgs {
    /// Most database connections per replica [default: 4 per core for SQLite, 10 for
    /// PostgreSQL].
    #[arg(long, env = "VELLUM_DB_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub db_max_connections: Option<u32>,

    /// Seconds to wait when opening a database connection.
    #[arg(long, env = "VELLUM_DB_CONNECT_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub db_connect_timeout: u64,

    /// Seconds a request waits for a free database connection before it gets 503.
    #[arg(long, env = "VELLUM_DB_ACQUIRE_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub db_acquire_timeout: u64,

    /// SQLite: KiB of page cache per connection (each connection has its own).
    #[arg(long, env = "VELLUM_SQLITE_CACHE_KIB", default_value_t = vellum_storage::DEFAULT_SQLITE_CACHE_KIB, value_parser = clap::value_parser!(u32).range(64..=1_048_576))]
    pub sqlite_cache_kib: u32,

    /// SQLite: bytes of the database file each connection reads through a memory map
    /// (0: none; mapped pages count in the server's RSS once per connection).
    #[arg(long, env = "VELLUM_SQLITE_MMAP", default_value_t = vellum_storage::DEFAULT_SQLITE_MMAP)]
    pub sqlite_mmap: u64,
}

/// The Redis the servers share their response cache and epoch through.
#[derive(Debug, Clone, clap::Args)]
pub struct RedisArgs {
    /// Redis URL; when set, the response cache and its epoch counter are shared through Redis,
    /// and `vellum-admin` bumps the epoch after a change so every replica serves it at once.
    #[arg(long, global = true, env = "VELLUM_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
}

impl RedisArgs {
    /// The URL, when one is configured: an empty variable (`VELLUM_REDIS_URL=`) means "not
    /// configured", as a deployment template that leaves it blank intends.
    #[must_use]
    pub fn url(&self) -> Option<&str> {
        self.redis_url.as_deref().filter(|u| !u.trim().is_empty())
    }
}

/// Where file bytes and transform outputs are kept.
#[derive(Debug, Clone, clap::Args)]
pub struct BlobArgs {
    /// Root of the local blob store (used when no object store is configured).
    #[arg(long, env = "VELLUM_FILES_DIR", default_value = "./data/files")]
    pub files_dir: PathBuf,

    /// S3 bucket for file bytes and transforms (instead of `VELLUM_FILES_DIR`); region and
    /// credentials come from the usual `AWS_*` variables.
    #[arg(long, env = "VELLUM_S3_BUCKET")]
    pub s3_bucket: Option<String>,

    /// S3-compatible endpoint (MinIO, R2, …) for `VELLUM_S3_BUCKET` [default: AWS].
    #[arg(long, env = "VELLUM_S3_ENDPOINT", requires = "s3_bucket")]
    pub s3_endpoint: Option<String>,
}

impl BlobArgs {
    /// The bucket, when one is configured; an empty variable means none, as for Redis.
    #[must_use]
    pub fn s3_bucket(&self) -> Option<&str> {
        self.s3_bucket.as_deref().filter(|b| !b.trim().is_empty())
    }
}

/// `on` or `off`, for settings an operator turns off for benchmarks or debugging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// The HTTP server: where it listens, how it names itself, and how long it waits for clients.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpArgs {
    /// Address the server binds to.
    #[arg(long, env = "VELLUM_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Absolute prefix used in file `url` and `transforms` values [default: http://<listen>].
    #[arg(long, env = "VELLUM_BASE_URL")]
    pub base_url: Option<String>,

    /// Seconds an API handler may run before the client gets 503 (uploads and streamed file
    /// bodies are not limited).
    #[arg(long, env = "VELLUM_REQUEST_TIMEOUT", default_value_t = crate::DEFAULT_REQUEST_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout: u64,

    /// Seconds a client has to send a request's headers (slow-loris); slower clients get 408
    /// and are disconnected.
    #[arg(long, env = "VELLUM_CLIENT_REQUEST_TIMEOUT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub client_request_timeout: u64,

    /// Seconds a connection may take to shut down once its response is sent (a client that
    /// never closes its side is dropped after this).
    #[arg(long, env = "VELLUM_CLIENT_DISCONNECT_TIMEOUT", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub client_disconnect_timeout: u64,

    /// Seconds a response may wait for a client that stops reading (its window stays shut, or
    /// what was sent stays unacknowledged) before the connection is aborted and the response's
    /// memory freed (Linux: TCP_USER_TIMEOUT; ignored elsewhere).
    #[arg(long, env = "VELLUM_WRITE_TIMEOUT", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub write_timeout: u64,

    /// Seconds reading a request body (uploads included) may wait for its next bytes before the
    /// client gets 408.
    #[arg(long, env = "VELLUM_BODY_READ_TIMEOUT", default_value_t = crate::DEFAULT_BODY_READ_TIMEOUT_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_read_timeout: u64,

    /// `off` disables the public API response cache (for benchmarks and debugging).
    #[arg(long, env = "VELLUM_CACHE", default_value = "on", value_enum)]
    pub cache: Switch,

    /// Reverse proxies (IPs or CIDR ranges, comma-separated) whose `X-Forwarded-For` names the
    /// client; without it the peer address is the client address (key IP allowlists use it).
    #[arg(long, env = "VELLUM_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_net)]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// CORS origins for `/api/*` while the project allowlist is empty (comma-separated;
    /// default: any origin).
    #[arg(long, env = "VELLUM_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Largest JSON request body in bytes (413 above).
    #[arg(long, env = "VELLUM_JSON_LIMIT", default_value_t = crate::DEFAULT_JSON_LIMIT)]
    pub json_limit: usize,

    /// HTTP worker threads [default: one per CPU core].
    #[arg(long, env = "VELLUM_WORKERS")]
    pub workers: Option<usize>,
}

impl HttpArgs {
    /// `VELLUM_BASE_URL`, or `http://<listen>` when it is not set.
    #[must_use]
    pub fn base_url(&self) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
    }
}

/// The admin app: how long sessions live, and where sign-in codes are mailed from and through.
#[derive(Debug, Clone, clap::Args)]
pub struct AdminArgs {
    /// Seconds a signed-in session may go unused before it ends.
    #[arg(long, env = "VELLUM_SESSION_IDLE_TIMEOUT", default_value_t = crate::app_config::DEFAULT_SESSION_IDLE_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_timeout: u64,

    /// Seconds a session lasts after sign-in however much it is used.
    #[arg(long, env = "VELLUM_SESSION_LIFETIME", default_value_t = crate::app_config::DEFAULT_SESSION_LIFETIME_SECS, value_parser = clap::value_parser!(u64).range(1..))]
    pub session_lifetime: u64,

    /// SMTP server for sign-in codes (`smtp://host:port`, `smtps://user:pass@host`); unset, mails
    /// are written to the log instead (development only).
    #[arg(long, env = "VELLUM_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// The sender of those mails.
    #[arg(long, env = "VELLUM_MAIL_FROM", default_value = crate::app_config::DEFAULT_MAIL_FROM)]
    pub mail_from: String,

    /// Sign-in failures in a row for one account (within 15 minutes) before 429.
    #[arg(long, env = "VELLUM_SIGNIN_ACCOUNT_ATTEMPTS", default_value_t = crate::app_config::DEFAULT_SIGNIN_ACCOUNT_ATTEMPTS, value_parser = clap::value_parser!(u32).range(1..))]
    pub signin_account_attempts: u32,

    /// Sign-in failures from one client address (within 15 minutes) before 429.
    #[arg(long, env = "VELLUM_SIGNIN_ADDRESS_ATTEMPTS", default_value_t = crate::app_config::DEFAULT_SIGNIN_ADDRESS_ATTEMPTS, value_parser = clap::value_parser!(u32).range(1..))]
    pub signin_address_attempts: u32,
}

impl AdminArgs {
    /// The identity services' configuration.
    #[must_use]
    pub fn identity(&self) -> crate::app_config::IdentityConfig {
        crate::app_config::IdentityConfig {
            session_idle: std::time::Duration::from_secs(self.session_idle_timeout),
            session_lifetime: std::time::Duration::from_secs(self.session_lifetime),
            smtp_url: self.smtp_url.clone(),
            mail_from: self.mail_from.clone(),
            account_attempts: self.signin_account_attempts,
            address_attempts: self.signin_address_attempts,
            ..crate::app_config::IdentityConfig::default()
        }
    }
}

/// The realtime server (issue 20): its credentials and limits.
#[derive(Debug, Clone, clap::Args)]
pub struct RealtimeArgs {
    /// The app key clients connect with (`/app/{key}`); with VELLUM_REALTIME_SECRET. Unset,
    /// a key and secret are generated once and stored with the project.
    #[arg(long, env = "VELLUM_REALTIME_KEY", requires = "realtime_secret")]
    pub realtime_key: Option<String>,

    /// The secret that signs channel subscriptions; with VELLUM_REALTIME_KEY.
    #[arg(
        long,
        env = "VELLUM_REALTIME_SECRET",
        hide_env_values = true,
        requires = "realtime_key"
    )]
    pub realtime_secret: Option<String>,

    /// Relay `client-*` events (laravel-echo's whisper) between the subscribers of a private or
    /// presence channel (`on`/`off`, `true`/`false`).
    #[arg(long, env = "VELLUM_REALTIME_CLIENT_EVENTS", default_value = "off", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub realtime_client_events: bool,

    /// Sockets one process holds at most; more are closed with 4100 (reconnect later).
    #[arg(long, env = "VELLUM_REALTIME_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub realtime_max_connections: u64,

    /// Sockets one client address may hold at once (an IPv6 /64 counts as one address; behind
    /// VELLUM_TRUSTED_PROXIES, the forwarded client's); more are closed with 4100. The socket
    /// opens before any sign-in, so this keeps one anonymous client from holding them all.
    #[arg(long, env = "VELLUM_REALTIME_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub realtime_max_connections_per_address: u64,

    /// Seconds a replica's presence lease lasts: the members of a replica that dies without
    /// cleaning up disappear within this plus a third of it (renewals run three times a lease).
    #[arg(long, env = "VELLUM_REALTIME_LEASE", default_value = "30", value_parser = parse_lease)]
    pub realtime_lease: std::time::Duration,
}

/// A lease: 1 to 3,600 seconds, fractions allowed.
fn parse_lease(raw: &str) -> Result<std::time::Duration, String> {
    raw.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (1.0..=3_600.0).contains(s))
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("\"{raw}\" is not a number of seconds from 1 to 3600"))
}

impl RealtimeArgs {
    /// The realtime server's configuration (the rest at its defaults).
    #[must_use]
    pub fn realtime(&self) -> crate::app_config::RealtimeConfig {
        crate::app_config::RealtimeConfig {
            key: self.realtime_key.clone(),
            secret: self.realtime_secret.clone(),
            client_events: self.realtime_client_events,
            max_connections: usize::try_from(self.realtime_max_connections).unwrap_or(usize::MAX),
            max_connections_per_address: usize::try_from(self.realtime_max_connections_per_address)
                .unwrap_or(usize::MAX),
            lease: self.realtime_lease,
            heartbeat: self.realtime_lease / 3,
            ..crate::app_config::RealtimeConfig::default()
        }
    }
}

/// The AI chat provider (issue 22): any OpenAI-compatible chat completions endpoint.
#[derive(Debug, Clone, clap::Args)]
pub struct AiArgs {
    /// The provider's base URL, without `/chat/completions` (e.g. `http://127.0.0.1:11434/v1`
    /// for Ollama). Unset, AI chat answers 503 and `/ai/status` reports it not configured.
    #[arg(long, env = "VELLUM_AI_BASE_URL")]
    pub ai_base_url: Option<String>,

    /// The model name sent with every request.
    #[arg(long, env = "VELLUM_AI_MODEL")]
    pub ai_model: Option<String>,

    /// The provider's API key, sent as `Authorization: Bearer`.
    #[arg(long, env = "VELLUM_AI_API_KEY", hide_env_values = true)]
    pub ai_api_key: Option<String>,

    /// Seconds the provider may stay silent (before its answer starts, and between two chunks)
    /// before the answer ends with an error.
    #[arg(long, env = "VELLUM_AI_TIMEOUT", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub ai_timeout: u64,
}

impl AiArgs {
    /// The provider's configuration (the rest at its defaults).
    #[must_use]
    pub fn ai(&self) -> crate::app_config::AiConfig {
        crate::app_config::AiConfig {
            base_url: self
                .ai_base_url
                .as_deref()
                .map(|url| url.trim_end_matches('/').to_owned()),
            model: self.ai_model.clone(),
            api_key: self.ai_api_key.clone().filter(|key| !key.is_empty()),
            idle_timeout: std::time::Duration::from_secs(self.ai_timeout),
            ..crate::app_config::AiConfig::default()
        }
    }
}

/// The job worker and webhook deliveries (issue 24); see docs/webhooks.md.
#[derive(Debug, Clone, clap::Args)]
pub struct JobArgs {
    /// Jobs (webhook deliveries) this replica runs at once; 0 runs no worker here.
    #[arg(long, env = "VELLUM_JOB_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u64).range(0..=256))]
    pub job_concurrency: u64,

    /// Milliseconds between looks for jobs other replicas queued or a dead replica left.
    #[arg(long, env = "VELLUM_JOB_POLL_MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub job_poll_ms: u64,

    /// Attempts before a job is dead.
    #[arg(long, env = "VELLUM_JOB_MAX_ATTEMPTS", default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub job_max_attempts: u32,

    /// Milliseconds before the second attempt; each further attempt waits twice as long
    /// (with jitter).
    #[arg(long, env = "VELLUM_JOB_BACKOFF_BASE_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub job_backoff_base_ms: u64,

    /// The longest wait between two attempts, in seconds.
    #[arg(long, env = "VELLUM_JOB_BACKOFF_MAX_SECS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub job_backoff_max_secs: u64,

    /// Seconds one webhook request may take in all.
    #[arg(long, env = "VELLUM_WEBHOOK_TIMEOUT_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub webhook_timeout_secs: u64,

    /// Failed deliveries in a row that disable a webhook.
    #[arg(long, env = "VELLUM_WEBHOOK_DISABLE_AFTER", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub webhook_disable_after: u32,

    /// Private or reserved ranges (CIDR, comma-separated) webhooks may reach anyway, e.g.
    /// `10.0.0.0/8` for a receiver on the internal network.
    #[arg(long, env = "VELLUM_WEBHOOK_ALLOWED_NETWORKS", value_delimiter = ',')]
    pub webhook_allowed_networks: Vec<ipnet::IpNet>,
}

impl JobArgs {
    /// The worker's configuration.
    #[must_use]
    pub fn jobs(&self) -> crate::app_config::JobsConfig {
        use std::time::Duration;
        crate::app_config::JobsConfig {
            concurrency: usize::try_from(self.job_concurrency).unwrap_or(0),
            poll_interval: Duration::from_millis(self.job_poll_ms),
            request_timeout: Duration::from_secs(self.webhook_timeout_secs),
            backoff_base: Duration::from_millis(self.job_backoff_base_ms),
            backoff_max: Duration::from_secs(self.job_backoff_max_secs),
            max_attempts: self.job_max_attempts,
            disable_after: self.webhook_disable_after,
            allowed_networks: self.webhook_allowed_networks.clone(),
        }
    }
}

/// Signed, content-addressed transform URLs (issue 24; docs/api.md, "Files"). Off by default:
/// `transforms` values are then exactly the operator contract's URLs.
#[derive(Debug, Clone, clap::Args)]
pub struct TransformUrlArgs {
    /// Sign every `transforms` URL (`?v=<version>&s=<signature>`; answers to current signed URLs
    /// are `immutable`), and answer 404 to an unsigned `size-N` that is not a preset
    /// (`on`/`off`, `true`/`false`).
    #[arg(long, env = "VELLUM_SIGNED_TRANSFORMS", default_value = "off", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub signed_transforms: bool,

    /// Extra `size-N` keys every image advertises in `transforms` (comma-separated N from 1 to
    /// 4096, at most 16).
    #[arg(long, env = "VELLUM_TRANSFORM_SIZES", value_delimiter = ',', value_parser = parse_transform_size)]
    pub transform_sizes: Vec<u32>,

    /// The key that signs transform URLs (at least 32 bytes) [default: generated once and stored
    /// with the project].
    #[arg(long, env = "VELLUM_URL_SIGNING_KEY", hide_env_values = true, value_parser = unchecked_signing_key)]
    pub url_signing_key: Option<crate::app_config::SigningKey>,
}

impl TransformUrlArgs {
    /// The checked configuration.
    ///
    /// # Errors
    /// More than [`crate::app_config::MAX_TRANSFORM_SIZES`] sizes, or a key too short (the
    /// message does not repeat it).
    pub fn transform_urls(&self) -> Result<crate::app_config::TransformUrlsConfig, String> {
        let mut sizes: Vec<u32> = Vec::with_capacity(self.transform_sizes.len());
        for n in &self.transform_sizes {
            if !sizes.contains(n) {
                sizes.push(*n);
            }
        }
        if sizes.len() > crate::app_config::MAX_TRANSFORM_SIZES {
            return Err(format!(
                "VELLUM_TRANSFORM_SIZES names {} sizes; at most {} are allowed",
                sizes.len(),
                crate::app_config::MAX_TRANSFORM_SIZES
            ));
        }
        let signing_key = self
            .url_signing_key
            .as_ref()
            .map(|key| crate::app_config::SigningKey::new(key.as_bytes().to_vec()))
            .transpose()?;
        Ok(crate::app_config::TransformUrlsConfig {
            signed: self.signed_transforms,
            sizes,
            signing_key,
        })
    }
}

/// One N of `VELLUM_TRANSFORM_SIZES`: 1 to 4096, spaces around it allowed.
fn parse_transform_size(raw: &str) -> Result<u32, String> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=4096).contains(n))
        .ok_or_else(|| format!("\"{raw}\" is not a size from 1 to 4096"))
}

/// Never fails: clap's own error would print the value, so a key too short is refused by
/// [`TransformUrlArgs::transform_urls`] instead, without repeating it.
fn unchecked_signing_key(
    raw: &str,
) -> Result<crate::app_config::SigningKey, std::convert::Infallible> {
    Ok(crate::app_config::SigningKey::unchecked(
        raw.as_bytes().to_vec(),
    ))
}

/// The log output: what is logged and in which form (always to stderr, see
/// [`crate::telemetry::init`]).
#[derive(Debug, Clone, clap::Args)]
pub struct LogArgs {
    /// Tracing filter, in `RUST_LOG` syntax.
    #[arg(long, global = true, env = "VELLUM_LOG", default_value = "info")]
    pub log: String,

    /// Log format: `text` (human-readable) or `json` (one object per line).
    #[arg(
        long,
        global = true,
        env = "VELLUM_LOG_FORMAT",
        default_value = "text",
        value_enum
    )]
    pub log_format: LogFormat,
}

/// The default filter of a command-line tool: no log lines. Its stdout is a result for machines
/// and its stderr holds the messages it writes for people; a failure is already reported once
/// (`telemetry::report`), and log events would repeat it (every repository function logs its
/// error) or add noise to a success (the migrator reports each step at `info`). Logs are a
/// diagnostic the operator asks for, with `VELLUM_LOG`.
pub const QUIET_LOG: &str = "off";

impl LogArgs {
    /// `command` with `--log` defaulting to [`QUIET_LOG`] instead of the server's `info`: the
    /// same flag and variable (`VELLUM_LOG=info` shows every step), a silent default.
    #[must_use]
    pub fn quiet_by_default(command: clap::Command) -> clap::Command {
        command.mut_arg("log", |arg| arg.default_value(QUIET_LOG))
    }
}

/// How log lines are written: human-readable lines (coloured on a terminal), or one JSON object
/// per line with the current span's fields (a request's id). The variants carry no doc comments
/// on purpose: clap would list them as help and switch `--help` to its long form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// An IP address (a /32 or /128) or a CIDR range.
fn parse_net(raw: &str) -> Result<ipnet::IpNet, String> {
    let raw = raw.trim();
    raw.parse::<ipnet::IpNet>()
        .or_else(|_| raw.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("\"{raw}\" is not an IP address or CIDR range"))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches, Parser};

    use super::*;

    /// Every group in one command, as a binary would flatten them.
    #[derive(Debug, Parser)]
    struct All {
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        pool: PoolArgs,
        #[command(flatten)]
        redis: RedisArgs,
        #[command(flatten)]
        blobs: BlobArgs,
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        log: LogArgs,
        #[command(flatten)]
        admin: AdminArgs,
        #[command(flatten)]
        realtime: RealtimeArgs,
        #[command(flatten)]
        transform_urls: TransformUrlArgs,
    }

    #[test]
    fn the_groups_flatten_into_one_well_formed_command() {
        All::command().debug_assert();
        LogArgs::quiet_by_default(All::command()).debug_assert();
    }

    fn parse(args: &[&str]) -> All {
        All::try_parse_from(std::iter::once("test").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn session_and_mail_settings_default_to_the_contract() {
        let all = parse(&[]);
        let identity = all.admin.identity();
        assert_eq!(identity.session_idle.as_secs(), 2 * 60 * 60);
        assert_eq!(identity.session_lifetime.as_secs(), 7 * 24 * 60 * 60);
        assert_eq!(identity.smtp_url, None);
        let all = parse(&[
            "--session-idle-timeout",
            "60",
            "--smtp-url",
            "smtp://127.0.0.1:2525",
        ]);
        assert_eq!(all.admin.identity().session_idle.as_secs(), 60);
        assert_eq!(
            all.admin.identity().smtp_url.as_deref(),
            Some("smtp://127.0.0.1:2525")
        );
    }

    #[test]
    fn base_url_defaults_to_the_listen_address() {
        let mut all = parse(&["--listen", "127.0.0.1:8080"]);
        all.http.base_url = None; // whatever VELLUM_BASE_URL says
        assert_eq!(all.http.base_url(), "http://127.0.0.1:8080");
        all.http.base_url = Some("https://cms.example.com".to_owned());
        assert_eq!(all.http.base_url(), "https://cms.example.com");
    }

    #[test]
    fn database_backend_never_includes_credentials() {
        let all = parse(&["--database-url", "postgres://user:secret@db/vellum"]);
        assert_eq!(all.database.backend(), "postgres");
    }

    #[test]
    fn an_empty_redis_url_or_bucket_means_none() {
        let all = parse(&["--redis-url", " ", "--s3-bucket", ""]);
        assert_eq!((all.redis.url(), all.blobs.s3_bucket()), (None, None));
        let all = parse(&["--redis-url", "redis://r", "--s3-bucket", "b"]);
        assert_eq!(
            (all.redis.url(), all.blobs.s3_bucket()),
            (Some("redis://r"), Some("b"))
        );
    }

    #[test]
    fn trusted_proxies_take_addresses_and_ranges() {
        let all = parse(&["--trusted-proxies", "10.0.0.0/8, 192.168.1.1,::1"]);
        let shown: Vec<String> = all
            .http
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.168.1.1/32", "::1/128"]);
        assert!(All::try_parse_from(["test", "--trusted-proxies", "proxy.local"]).is_err());
    }

    #[test]
    fn realtime_socket_caps_default_to_the_documented_values_and_refuse_zero() {
        let config = parse(&[]).realtime.realtime();
        assert_eq!(
            (config.max_connections, config.max_connections_per_address),
            (10_000, 200)
        );
        assert_eq!(config.lease.as_secs(), 30);
        let config = parse(&[
            "--realtime-max-connections",
            "50",
            "--realtime-max-connections-per-address",
            "5",
        ])
        .realtime
        .realtime();
        assert_eq!(
            (config.max_connections, config.max_connections_per_address),
            (50, 5)
        );
        for flag in [
            "--realtime-max-connections",
            "--realtime-max-connections-per-address",
        ] {
            assert!(
                All::try_parse_from(["test", flag, "0"]).is_err(),
                "{flag} 0"
            );
        }
    }

    #[test]
    fn transform_urls_are_off_by_default_and_checked() {
        let mut all = parse(&[]);
        // Independent of `VELLUM_*` variables set in the environment.
        all.transform_urls.signed_transforms = false;
        all.transform_urls.transform_sizes.clear();
        all.transform_urls.url_signing_key = None;
        let config = all.transform_urls.transform_urls().unwrap();
        assert!(!config.signed && config.sizes.is_empty() && config.signing_key.is_none());

        let key = "k".repeat(32);
        let all = parse(&[
            "--signed-transforms",
            "on",
            "--transform-sizes",
            "37, 800,37",
            "--url-signing-key",
            &key,
        ]);
        let config = all.transform_urls.transform_urls().unwrap();
        assert!(config.signed);
        assert_eq!(config.sizes, [37, 800], "repeats are dropped");
        assert_eq!(config.signing_key.unwrap().as_bytes(), key.as_bytes());

        for bad in ["0", "4097", "abc", "-5"] {
            assert!(
                All::try_parse_from(["test", "--transform-sizes", bad]).is_err(),
                "{bad}"
            );
        }
        let seventeen: Vec<String> = (1..=17).map(|n| n.to_string()).collect();
        let all = parse(&["--transform-sizes", &seventeen.join(",")]);
        assert!(all.transform_urls.transform_urls().is_err());

        let short = "a-secret-that-is-too-short";
        let all = parse(&["--url-signing-key", short]);
        let err = all.transform_urls.transform_urls().unwrap_err();
        assert!(!err.contains(short), "the key is never echoed: {err}");
        assert!(!format!("{all:?}").contains(short), "nor shown by Debug");
    }

    /// The quiet default replaces only the default: an explicit filter still wins.
    #[test]
    fn a_quiet_command_logs_nothing_by_default() {
        let command = LogArgs::quiet_by_default(All::command());
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == "log")
            .unwrap();
        assert_eq!(arg.get_default_values(), [QUIET_LOG]);
        let matches = command
            .try_get_matches_from(["test", "--log", "debug"])
            .unwrap();
        assert_eq!(All::from_arg_matches(&matches).unwrap().log.log, "debug");
    }
}
