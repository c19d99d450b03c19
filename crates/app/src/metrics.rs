//! The process's Prometheus metrics: one [`Metrics`] per [`AppState`](crate::AppState), holding
//! a `prometheus-client` registry and the handles the hot paths bump.
//!
//! What is measured, and who records it:
//!
//! - `vellum_http_requests_total{method,route,status}` and
//!   `vellum_http_request_duration_seconds{method,route}`: [`Metrics::observe_request`], called
//!   by the HTTP edge's middleware once per response. `route` is the route's *pattern*
//!   (`/api/v1/collections/{slug}/items`), never the path, so the number of series stays bounded
//!   by the routes the server has; a request no route matched is [`UNMATCHED`].
//! - `vellum_response_cache_hits_total` / `vellum_response_cache_misses_total`: the public API
//!   response cache ([`Metrics::response_cache`]).
//! - `vellum_db_pool_connections{state="in_use"|"idle"}`, `vellum_db_pool_max_connections`,
//!   `vellum_realtime_sockets` and `vellum_jobs{status}` (the job queue's depth: jobs by status,
//!   counted in the database, so every replica reports the shared queue): read at scrape time
//!   ([`Metrics::encode`] is handed a [`Live`]).
//!
//! Adding a metric (a counter of your own, say) takes one call at start-up: create the metric,
//! [`Metrics::register`] a clone of it, keep the other where the number changes.
//!
//! ```
//! use prometheus_client::metrics::gauge::Gauge;
//! let metrics = vellum_app::metrics::Metrics::new();
//! let queued: Gauge = Gauge::default();
//! metrics.register("vellum_jobs_queued", "Jobs waiting to run", queued.clone());
//! queued.set(3);
//! let text = metrics.encode(&vellum_app::metrics::Live::default()).unwrap();
//! assert!(text.contains("vellum_jobs_queued 3\n"));
//! ```
//!
//! Recording costs a read lock and a few atomic adds: the handles are shared atomics, and the
//! registry's lock is taken only to register and to encode (a scrape). Nothing here knows a web
//! framework; the edge turns its request into a method, a route pattern and a status.

use std::borrow::Cow;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};

/// The `Content-Type` of [`Metrics::encode`]'s text: the Prometheus text format 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The `route` of a request no route matched (a 404 of any path): one series for all of them.
pub const UNMATCHED: &str = "unmatched";

/// Request latency buckets, in seconds: from a cached read (about a millisecond) to the request
/// timeout's order (30 s by default lands in `+Inf`).
const LATENCY_BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// What a request's latency is filed under: its method and route pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteLabels {
    /// One of the standard methods, or `OTHER` (see [`method_label`]).
    pub method: &'static str,
    /// The route pattern, or [`UNMATCHED`].
    pub route: Cow<'static, str>,
}

impl EncodeLabelSet for RouteLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        [("method", self.method), ("route", self.route.as_ref())].encode(encoder)
    }
}

/// What a request is counted under: its route and its status.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RequestLabels {
    route: RouteLabels,
    status: u16,
}

impl EncodeLabelSet for RequestLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> fmt::Result {
        self.route.encode(encoder)?;
        [("status", self.status)].encode(encoder)
    }
}

/// The method as a label: the standard ones by name, anything else as `OTHER`, so a client
/// inventing methods cannot add series.
#[must_use]
pub fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "OPTIONS" => "OPTIONS",
        _ => "OTHER",
    }
}

/// What is read when the metrics are scraped rather than counted as it happens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Live {
    /// The database pool, when the backend can tell.
    pub pool: Option<vellum_storage::telemetry::PoolUsage>,
    /// Realtime sockets open on this process.
    pub sockets: usize,
    /// Jobs by status, when the database answered.
    pub jobs: Option<[(vellum_storage::jobs::JobStatus, u64); 6]>,
}

/// Histograms of [`LATENCY_BUCKETS`] (a `fn` pointer, so the family's type can be named).
type Latencies = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The registry and the handles of Vellum's own metrics; cheap to share (the state holds one).
pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    durations: Latencies,
    cache_hits: Counter,
    cache_misses: Counter,
    pool: Family<[(&'static str, &'static str); 1], Gauge>,
    pool_max: Gauge,
    sockets: Gauge,
    jobs: Family<[(&'static str, &'static str); 1], Gauge>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry holding Vellum's metrics, all at zero.
    #[must_use]
    pub fn new() -> Self {
        let metrics = Self {
            registry: Mutex::new(Registry::default()),
            requests: Family::default(),
            durations: Latencies::new_with_constructor(latency_histogram),
            cache_hits: Counter::default(),
            cache_misses: Counter::default(),
            pool: Family::default(),
            pool_max: Gauge::default(),
            sockets: Gauge::default(),
            jobs: Family::default(),
        };
        metrics.register(
            "vellum_http_requests",
            "HTTP requests answered, by method, route pattern and status",
            metrics.requests.clone(),
        );
        metrics.register(
            "vellum_http_request_duration_seconds",
            "Time from a request's arrival to its response head, by method and route pattern",
            metrics.durations.clone(),
        );
        metrics.register(
            "vellum_response_cache_hits",
            "Public API reads answered from the response cache",
            metrics.cache_hits.clone(),
        );
        metrics.register(
            "vellum_response_cache_misses",
            "Cacheable public API reads the response cache did not hold under the current stamp",
            metrics.cache_misses.clone(),
        );
        metrics.register(
            "vellum_db_pool_connections",
            "Database pool connections open, by state (in_use, idle)",
            metrics.pool.clone(),
        );
        metrics.register(
            "vellum_db_pool_max_connections",
            "The most connections the database pool opens",
            metrics.pool_max.clone(),
        );
        metrics.register(
            "vellum_realtime_sockets",
            "Realtime WebSocket connections open on this process",
            metrics.sockets.clone(),
        );
        metrics.register(
            "vellum_jobs",
            "Jobs in the queue by status (queued, running, failed: waiting to retry, dead, done, \
             cancelled), shared by every replica",
            metrics.jobs.clone(),
        );
        metrics
    }

    /// Adds `metric` under `name` (a counter's name without `_total`: the encoder appends it)
    /// with `help` (no final period: the encoder adds one).
    /// Keep a clone of the metric to update it; the registry only reads it when scraped. Names
    /// must be unique: register once, at start-up.
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        self.lock().register(name, help, metric);
    }

    /// Counts one answered request: `method` from [`method_label`], `route` its pattern or
    /// [`UNMATCHED`], `elapsed` up to its response head.
    pub fn observe_request(
        &self,
        method: &'static str,
        route: Cow<'static, str>,
        status: u16,
        elapsed: Duration,
    ) {
        let labels = RequestLabels {
            route: RouteLabels { method, route },
            status,
        };
        self.requests.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&labels.route)
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one lookup of the public API response cache.
    pub fn response_cache(&self, hit: bool) {
        if hit {
            self.cache_hits.inc();
        } else {
            self.cache_misses.inc();
        }
    }

    /// Every registered metric in the Prometheus text format ([`CONTENT_TYPE`]), with the
    /// scrape-time gauges set from `live` first.
    ///
    /// # Errors
    /// When a metric fails to write itself (a registered metric's own encoder).
    pub fn encode(&self, live: &Live) -> Result<String, fmt::Error> {
        if let Some(pool) = live.pool {
            self.pool
                .get_or_create(&[("state", "in_use")])
                .set(i64::from(pool.open.saturating_sub(pool.idle)));
            self.pool
                .get_or_create(&[("state", "idle")])
                .set(i64::from(pool.idle));
            self.pool_max.set(i64::from(pool.max));
        }
        self.sockets
            .set(i64::try_from(live.sockets).unwrap_or(i64::MAX));
        for (status, n) in live.jobs.iter().flatten() {
            self.jobs
                .get_or_create(&[("status", status.as_str())])
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.lock())?;
        Ok(text)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use vellum_storage::jobs::JobStatus;
    use vellum_storage::telemetry::PoolUsage;

    use super::*;

    #[test]
    fn requests_are_counted_by_route_pattern_and_status() {
        let metrics = Metrics::new();
        let route = || Cow::Borrowed("/api/v1/collections/{slug}/items");
        metrics.observe_request("GET", route(), 200, Duration::from_millis(3));
        metrics.observe_request("GET", route(), 200, Duration::from_millis(30));
        metrics.observe_request("GET", route(), 404, Duration::from_millis(1));
        metrics.observe_request("OTHER", UNMATCHED.into(), 404, Duration::ZERO);
        let text = metrics.encode(&Live::default()).unwrap();
        for line in [
            "# HELP vellum_http_requests_total HTTP requests answered, by method, route pattern and status.\n",
            "# TYPE vellum_http_requests_total counter\n",
            "vellum_http_requests_total{method=\"GET\",route=\"/api/v1/collections/{slug}/items\",status=\"200\"} 2\n",
            "vellum_http_requests_total{method=\"GET\",route=\"/api/v1/collections/{slug}/items\",status=\"404\"} 1\n",
            "vellum_http_requests_total{method=\"OTHER\",route=\"unmatched\",status=\"404\"} 1\n",
            "# TYPE vellum_http_request_duration_seconds histogram\n",
            "vellum_http_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/collections/{slug}/items\",le=\"0.005\"} 2\n",
            "vellum_http_request_duration_seconds_bucket{method=\"GET\",route=\"/api/v1/collections/{slug}/items\",le=\"0.05\"} 3\n",
            "vellum_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/collections/{slug}/items\"} 3\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }

    #[test]
    fn scrape_time_gauges_and_the_cache_ratio() {
        let metrics = Metrics::new();
        metrics.response_cache(true);
        metrics.response_cache(true);
        metrics.response_cache(false);
        let live = Live {
            pool: Some(PoolUsage {
                open: 5,
                idle: 2,
                max: 8,
            }),
            sockets: 7,
            jobs: Some(JobStatus::ALL.map(|s| (s, if s == JobStatus::Failed { 4 } else { 0 }))),
        };
        let text = metrics.encode(&live).unwrap();
        for line in [
            "vellum_response_cache_hits_total 2\n",
            "vellum_response_cache_misses_total 1\n",
            "vellum_db_pool_connections{state=\"in_use\"} 3\n",
            "vellum_db_pool_connections{state=\"idle\"} 2\n",
            "vellum_db_pool_max_connections 8\n",
            "vellum_realtime_sockets 7\n",
            "vellum_jobs{status=\"failed\"} 4\n",
            "vellum_jobs{status=\"queued\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }

    #[test]
    fn only_standard_methods_are_labels() {
        assert_eq!(method_label("PATCH"), "PATCH");
        assert_eq!(method_label("BREW"), "OTHER");
        assert_eq!(method_label("get"), "OTHER");
    }
}
