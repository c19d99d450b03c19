//! The application's configuration: what the use cases read of the operator's settings. The
//! binaries fill it from clap flags and `VELLUM_*` variables (see `vellum_app::config`); tests
//! start from [`AppConfig::default`].

use std::time::Duration;

use ipnet::IpNet;
use vellum_policy::CorsOrigins;
use vellum_storage::files::DerivativeCap;

/// The application's configuration (the server fills it from clap flags and `VELLUM_*` variables).
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// How many bytes the stored transform outputs of one original may take together (a
    /// multiple of the original's size plus a floor); past it the least recently used are
    /// evicted, so no sequence of requests can make the server store more.
    pub derivative_cap: DerivativeCap,
    /// Absolute prefix of file `url` and `transforms` values, without a trailing slash.
    pub base_url: String,
    /// Whether GET responses under `/api/v1/collections` are cached.
    pub cache: bool,
    /// Whether requests are counted for Prometheus (the server sets it when it serves
    /// `/metrics`; off, the edge's metrics middleware does nothing).
    pub metrics: bool,
    /// CORS origins when the project's allowlist is empty (default: any).
    pub cors_origins: CorsOrigins,
    /// Reverse proxies whose `X-Forwarded-For` is believed; empty means the peer address is the
    /// client address.
    pub trusted_proxies: Vec<IpNet>,
    /// How long the project snapshot may be reused without looking at the database.
    pub snapshot_ttl: Duration,
    /// The largest JSON request body accepted (413 above).
    pub json_limit: usize,
    /// JPEG quality of transform outputs (1 to 100).
    pub jpeg_quality: u8,
    /// The largest image (width x height) a transform will decode; larger ones get 422.
    pub max_image_pixels: u64,
    /// How long an API handler may take before the client gets 503 (a hung dependency must not
    /// hold connections forever). Response bodies that stream (file content) are not limited.
    pub request_timeout: Duration,
    /// How long reading a request body may wait for its next bytes before the client gets 408
    /// (a stalled or trickling client, uploads included).
    pub body_read_timeout: Duration,
    /// Memory, in bytes, that transforms running at once may hold together, by
    /// `vellum_imaging::estimate` (plus their sources); a transform needing more gets 422.
    pub transform_memory: u64,
    /// Transforms that may run (or read their source) at once.
    pub transform_concurrency: usize,
    /// How long a transform may wait for the budget before the client gets 503 with
    /// `Retry-After`.
    pub transform_queue_timeout: Duration,
    /// How long one transform may run once admitted; in worker mode its worker is killed then.
    pub transform_timeout: Duration,
    /// Worker processes for transforms (the current executable re-run with
    /// [`crate::transforms::WORKER_FLAG`]); 0 runs them in this process on the blocking pool.
    pub transform_workers: usize,
    /// The data-segment limit (`RLIMIT_DATA`) of each worker process, in bytes.
    pub transform_worker_memory: u64,
    /// Sessions, password hashing and mail of the admin app.
    pub identity: IdentityConfig,
    /// The realtime server (issue 20): credentials, limits, timeouts.
    pub realtime: RealtimeConfig,
    /// The AI chat provider (issue 22); unset, AI chat answers 503.
    pub ai: AiConfig,
    /// The job worker and webhook deliveries (issue 24).
    pub jobs: JobsConfig,
    /// Signed transform URLs and the extra sizes images advertise (issue 24); off by default.
    pub transform_urls: TransformUrlsConfig,
}

/// Signed, content-addressed transform URLs (see `crate::transform_urls`), filled from
/// `VELLUM_SIGNED_TRANSFORMS`, `VELLUM_TRANSFORM_SIZES` and `VELLUM_URL_SIGNING_KEY`. The default
/// (off, no sizes) renders exactly the operator contract's URLs.
#[derive(Debug, Clone, Default)]
pub struct TransformUrlsConfig {
    /// Every rendered `transforms` value carries `?v=…&s=…`, and an unsigned request for a
    /// `size-N` that is not a preset gets 404.
    pub signed: bool,
    /// `size-N` keys every transformable image advertises besides the presets (each N in
    /// `1..=4096`, at most [`MAX_TRANSFORM_SIZES`], no repeats).
    pub sizes: Vec<u32>,
    /// The HMAC key; `None`: a key generated once and stored with the project.
    pub signing_key: Option<SigningKey>,
}

/// The most `size-N` keys `VELLUM_TRANSFORM_SIZES` may add to every image's `transforms`.
pub const MAX_TRANSFORM_SIZES: usize = 16;

/// The key that signs transform URLs (`VELLUM_URL_SIGNING_KEY`): at least
/// [`SigningKey::MIN_BYTES`] bytes. A secret: its `Debug` never shows it.
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl SigningKey {
    /// The shortest key accepted: 256 bits, the HMAC-SHA256 output size.
    pub const MIN_BYTES: usize = 32;

    /// `bytes` as a key.
    ///
    /// # Errors
    /// When it is shorter than [`SigningKey::MIN_BYTES`] (the message never repeats the key).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, String> {
        let bytes = bytes.into();
        if bytes.len() < Self::MIN_BYTES {
            return Err(format!(
                "VELLUM_URL_SIGNING_KEY must be at least {} bytes long (it has {})",
                Self::MIN_BYTES,
                bytes.len()
            ));
        }
        Ok(Self(bytes))
    }

    /// A key not checked yet (the command line's parser, which must not echo a bad value).
    pub(crate) fn unchecked(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// The job worker of this process and how webhooks are delivered (the server fills it from
/// `VELLUM_JOB_*` and `VELLUM_WEBHOOK_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobsConfig {
    /// Jobs this process runs at once; 0 runs no worker here (another replica's delivers).
    /// The default of [`JobsConfig::default`] is 0, for tests; the server's is 8.
    pub concurrency: usize,
    /// How often the worker looks for jobs other replicas queued or whose lease ran out.
    pub poll_interval: Duration,
    /// The whole of one webhook request; a job's lease is three of these.
    pub request_timeout: Duration,
    /// The wait before the second attempt; it doubles with each attempt (with jitter).
    pub backoff_base: Duration,
    /// The longest wait between attempts.
    pub backoff_max: Duration,
    /// Attempts before a job is dead.
    pub max_attempts: u32,
    /// Consecutive failed deliveries after which a webhook is disabled.
    pub disable_after: u32,
    /// Private or reserved ranges webhooks may reach anyway (e.g. a receiver on the same host).
    pub allowed_networks: Vec<IpNet>,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self {
            concurrency: 0,
            poll_interval: Duration::from_secs(1),
            request_timeout: Duration::from_secs(10),
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(60 * 60),
            max_attempts: 12,
            disable_after: 50,
            allowed_networks: Vec::new(),
        }
    }
}

/// The largest JSON request body by default (2 MiB); `VELLUM_JSON_LIMIT`.
pub const DEFAULT_JSON_LIMIT: usize = 2 * 1024 * 1024;
/// JPEG quality of transform outputs by default; `VELLUM_JPEG_QUALITY`.
pub const DEFAULT_JPEG_QUALITY: u8 = 82;
/// The largest image a transform decodes by default; `VELLUM_MAX_IMAGE_PIXELS`.
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = 50_000_000;
/// Seconds an API handler may run by default; `VELLUM_REQUEST_TIMEOUT`.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 30;
/// Seconds a request body may stall by default; `VELLUM_BODY_READ_TIMEOUT`.
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 30;

/// The default transform memory budget: two transforms of the largest image the default pixel
/// limit admits (50 MP: about 200 MiB decoded each) fit at once, or about ten 12 MP photos.
pub const DEFAULT_TRANSFORM_MEMORY: u64 = 512 * 1024 * 1024;

/// How sessions and mail behave (the binaries fill it from `VELLUM_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityConfig {
    /// A session unused this long ends (default 2 hours).
    pub session_idle: Duration,
    /// A session ends this long after sign-in whatever its use (default 7 days).
    pub session_lifetime: Duration,
    /// `smtp://…` or `smtps://…`; `None` writes mails to the log (development).
    pub smtp_url: Option<String>,
    pub mail_from: String,
    /// Password hashes computed at once (default: the cores).
    pub hashing_concurrency: usize,
    /// Sign-in failures in a row per account before 429 (default 5).
    pub account_attempts: u32,
    /// Sign-in failures per client address before 429 (default 30).
    pub address_attempts: u32,
}

/// Two hours, the admin contract's idle expiry.
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 2 * 60 * 60;
/// Seven days, the admin contract's absolute expiry.
pub const DEFAULT_SESSION_LIFETIME_SECS: u64 = 7 * 24 * 60 * 60;
pub const DEFAULT_MAIL_FROM: &str = "Vellum <vellum@localhost>";

impl Default for IdentityConfig {
    fn default() -> Self {
        Self {
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
            session_lifetime: Duration::from_secs(DEFAULT_SESSION_LIFETIME_SECS),
            smtp_url: None,
            mail_from: DEFAULT_MAIL_FROM.to_owned(),
            hashing_concurrency: cores(),
            account_attempts: DEFAULT_SIGNIN_ACCOUNT_ATTEMPTS,
            address_attempts: DEFAULT_SIGNIN_ADDRESS_ATTEMPTS,
        }
    }
}

/// Sign-in failures in a row per account before 429, by default; `VELLUM_SIGNIN_ACCOUNT_ATTEMPTS`.
pub const DEFAULT_SIGNIN_ACCOUNT_ATTEMPTS: u32 = 5;
/// Sign-in failures per client address before 429, by default; `VELLUM_SIGNIN_ADDRESS_ATTEMPTS`.
pub const DEFAULT_SIGNIN_ADDRESS_ATTEMPTS: u32 = 30;

/// The number of cores, the default transform concurrency.
#[must_use]
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            base_url: "http://127.0.0.1:8080".to_owned(),
            cache: true,
            metrics: false,
            cors_origins: CorsOrigins::Any,
            trusted_proxies: Vec::new(),
            snapshot_ttl: Duration::from_secs(5),
            json_limit: DEFAULT_JSON_LIMIT,
            jpeg_quality: DEFAULT_JPEG_QUALITY,
            max_image_pixels: DEFAULT_MAX_IMAGE_PIXELS,
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            body_read_timeout: Duration::from_secs(DEFAULT_BODY_READ_TIMEOUT_SECS),
            transform_memory: DEFAULT_TRANSFORM_MEMORY,
            transform_concurrency: cores(),
            transform_queue_timeout: Duration::from_secs(5),
            transform_timeout: Duration::from_secs(10),
            transform_workers: 0,
            transform_worker_memory: 2 * DEFAULT_TRANSFORM_MEMORY,
            derivative_cap: DerivativeCap::DEFAULT,
            identity: IdentityConfig::default(),
            realtime: RealtimeConfig::default(),
            ai: AiConfig::default(),
            jobs: JobsConfig::default(),
            transform_urls: TransformUrlsConfig::default(),
        }
    }
}

/// How the realtime server (`crate::realtime`) behaves; [`Default`] gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealtimeConfig {
    /// `VELLUM_REALTIME_KEY` / `VELLUM_REALTIME_SECRET`; generated and stored when unset.
    pub key: Option<String>,
    pub secret: Option<String>,
    /// Relay `client-*` events (off: refused with `pusher:error`).
    pub client_events: bool,
    /// Client events one socket may send per second.
    pub client_event_rate: u32,
    /// Sockets one process holds at most (more get 4100 and are closed).
    pub max_connections: usize,
    /// Sockets one client address (an IPv6 /64) may hold at once (more get 4100).
    pub max_connections_per_address: usize,
    /// Channels one socket may be subscribed to.
    pub max_subscriptions: usize,
    /// Frames waiting for one socket; a full queue closes it with 4200.
    pub queue: usize,
    /// Silence after which the server pings (sent to clients as `activity_timeout`).
    pub activity_timeout: Duration,
    /// How long the pong may take before the socket is closed with 4201.
    pub pong_timeout: Duration,
    /// A replica's presence lease: its members outlive a crash by at most this plus
    /// `heartbeat`.
    pub lease: Duration,
    pub heartbeat: Duration,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        Self {
            key: None,
            secret: None,
            client_events: false,
            client_event_rate: 10,
            max_connections: 10_000,
            max_connections_per_address: 200,
            max_subscriptions: 100,
            queue: 256,
            activity_timeout: Duration::from_secs(120),
            pong_timeout: Duration::from_secs(30),
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
        }
    }
}

/// The AI chat provider: any OpenAI-compatible `/chat/completions` endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct AiConfig {
    /// `VELLUM_AI_BASE_URL`, e.g. `http://127.0.0.1:11434/v1` (without `/chat/completions`).
    pub base_url: Option<String>,
    /// `VELLUM_AI_MODEL`.
    pub model: Option<String>,
    /// `VELLUM_AI_API_KEY`, sent as a bearer token; never logged.
    pub api_key: Option<String>,
    /// How long connecting to the provider may take.
    pub connect_timeout: Duration,
    /// How long the provider may stay silent: before its response starts, and between two
    /// chunks of a stream. A hung provider ends the answer with an error after this.
    pub idle_timeout: Duration,
    /// AI chat requests and attachment uploads one user may make per minute (every replica
    /// together when Redis is configured).
    pub requests_per_minute: u32,
}

impl AiConfig {
    /// The provider's base URL and model, when both are set.
    #[must_use]
    pub fn provider(&self) -> Option<(&str, &str)> {
        match (&self.base_url, &self.model) {
            (Some(url), Some(model)) if !url.is_empty() && !model.is_empty() => {
                Some((url.as_str(), model.as_str()))
            }
            _ => None,
        }
    }
}

impl Default for AiConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            model: None,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            requests_per_minute: 30,
        }
    }
}

/// The key is a secret: configuration dumps and error reports must not carry it.
impl std::fmt::Debug for AiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("requests_per_minute", &self.requests_per_minute)
            .finish()
    }
}
