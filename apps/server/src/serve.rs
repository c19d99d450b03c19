//! What `vellum-server` does once its configuration is parsed and logging is up: prepare the
//! database and the blob store, build the state and serve `vellum_http::app` (through
//! `vellum_http::server`) until SIGTERM, SIGINT or SIGQUIT (actix stops gracefully: in-flight
//! requests get up to 30 s).

use std::time::Duration;

use vellum_app::telemetry::error_chain;

use crate::config::Cli;
use crate::error::ServerError;

/// Staging data older than this is left by an upload that can no longer finish (the server that
/// received it stopped): no upload runs for a day, so every replica sharing the store may sweep.
const STAGING_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Migrates, seeds (and with `--demo` applies the demo project), then serves until stopped.
pub(crate) async fn run(cli: &Cli) -> Result<(), ServerError> {
    let config = &cli.config;
    tracing::info!(
        listen = %config.http.listen,
        base_url = %config.http.base_url(),
        database = config.database.backend(),
        files_dir = %config.blobs.files_dir.display(),
        s3_bucket = config.blobs.s3_bucket.as_deref(),
        redis = config.redis.redis_url.is_some(),
        cache = ?config.http.cache,
        metrics = ?config.metrics_addr,
        demo = cli.demo,
        "configuration loaded"
    );
    let db = vellum_storage::connect_with(&config.database.database_url, &config.pool()).await?;
    vellum_storage::migrate(&db).await?;
    vellum_storage::seed::seed_system(&db).await?;
    if cli.demo {
        demo(&db, &config.http.base_url(), &config.blobs()?).await?;
    }
    let http = config.http_config()?;
    let backends = config.backends(&http)?;
    sweep_staging(&backends).await;
    let state = vellum_http::AppState::with_backends(db, http, backends).await?;
    // Webhook deliveries and other queued jobs (issue 24): this replica's worker.
    vellum_app::jobs::start_worker(&state);
    let write_timeout = Duration::from_secs(config.http.write_timeout);
    let options = vellum_http::server::ServeOptions {
        workers: config.http.workers,
        client_request_timeout: Duration::from_secs(config.http.client_request_timeout),
        client_disconnect_timeout: Duration::from_secs(config.http.client_disconnect_timeout),
        shutdown_timeout: 30,
        signals: true,
        on_connect: Some(std::sync::Arc::new(move |stream| {
            limit_stalled_writes(stream, write_timeout);
        })),
    };
    let metrics = match config.metrics_addr {
        Some(addr) => Some(serve_metrics(&state, addr)?),
        None => None,
    };
    let listen = config.http.listen;
    let listener = bind(listen).map_err(|source| ServerError::Bind { listen, source })?;
    let server = vellum_http::server::serve(state, listener, options)
        .map_err(|source| ServerError::Bind { listen, source })?;
    tracing::info!(%listen, "serving");
    // Stops gracefully on SIGTERM, SIGINT and SIGQUIT; the metrics listener stops with it.
    let served = server.await.map_err(ServerError::Serve);
    if let Some(metrics) = metrics {
        metrics.stop(true).await;
    }
    served
}

/// Starts the metrics listener (`GET /metrics` only) on `addr`, apart from the public one so
/// it can be bound where only the scraper reaches it.
fn serve_metrics(
    state: &vellum_http::AppState,
    addr: std::net::SocketAddr,
) -> Result<actix_web::dev::ServerHandle, ServerError> {
    let bind_error = |source| ServerError::Bind {
        listen: addr,
        source,
    };
    let listener = bind(addr).map_err(bind_error)?;
    let server = vellum_http::metrics::serve(state.clone(), listener).map_err(bind_error)?;
    let handle = server.handle();
    tokio::spawn(async move {
        if let Err(err) = server.await {
            tracing::error!(error = %err, "the metrics listener stopped");
        }
    });
    tracing::info!(%addr, "serving metrics");
    Ok(handle)
}

/// A listening socket as actix-web's `HttpServer::bind` makes one: `SO_REUSEADDR` (a restart
/// does not wait for the old connections' TIME_WAIT) and a backlog of 1,024.
fn bind(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(not(windows))]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

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

/// A client that stops reading must not pin its response forever: a rendered page stays in
/// memory until it is written (security review 2026-11, R9: twelve such clients held 3.3 GiB for
/// over a minute), and actix has no write timeout. TCP_USER_TIMEOUT makes the kernel abort the
/// connection once sent data stays unacknowledged, or the client's receive window stays shut
/// (zero-window probes), for `timeout`; the dispatcher's next write then fails and the
/// connection and its response are dropped. A client that keeps reading, however slowly, is
/// not affected.
fn limit_stalled_writes(stream: &actix_web::rt::net::TcpStream, timeout: Duration) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
    if let Err(err) = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(timeout)) {
        tracing::warn!(error = %err, "could not set the connection's write timeout");
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "fuchsia")))]
    let _ = (stream, timeout);
}

/// Applies the demo project to a database without collections, then prints the demo key (shown
/// once) and three requests to try. A database that already has collections is left alone.
/// Then creates the demo admin unless its account exists, and prints its credentials (once).
async fn demo(
    db: &vellum_storage::Database,
    base_url: &str,
    blobs: &vellum_storage::blob::ObjectBlobStore,
) -> Result<(), ServerError> {
    use std::io::Write as _;
    let base = base_url.trim_end_matches('/');
    match crate::demo::seed(db, blobs).await? {
        Some(report) => {
            let key = report.api_keys.values().next().cloned().unwrap_or_default();
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "Demo project applied. Editor API key (shown once): {key}\n\nTry:\n  curl {base}/api/v1/collections\n  curl '{base}/api/v1/collections/articles/items?locale=de&include=author,files'\n  curl -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' -d '{{\"data\": {{\"title\": \"Hello\", \"slug\": \"hello\"}}}}' {base}/api/v1/collections/articles/items"
            )
            .map_err(ServerError::Output)?;
        }
        None => tracing::info!("--demo: the database already has collections; nothing applied"),
    }
    // After the key: scripts take the first `ek_…` of the output, and the password (letters
    // and digits only) can never contain one.
    if let Some(password) = crate::demo::admin(db).await? {
        let email = crate::demo::ADMIN_EMAIL;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "\nDemo admin (shown once): {email} / {password}\n  Open {base}/ in a browser and sign in with these credentials, or:\n  curl -c cookies.txt -H 'Accept: application/json' -H 'Content-Type: application/json' -d '{{\"email\": \"{email}\", \"password\": \"{password}\"}}' {base}/login\n  curl -b cookies.txt -H 'Accept: application/json' {base}/users"
        )
        .map_err(ServerError::Output)?;
    }
    Ok(())
}
