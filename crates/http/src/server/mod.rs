//! The HTTP server around [`crate::app`]: what actix-web's `HttpServer` does for a plain TCP
//! listener (HTTP/1.x, the client timeouts, `TCP_NODELAY`, graceful stop), built from its parts
//! so each accepted connection's I/O can be wrapped in [`envelope::Enveloped`]: the answers
//! actix-http's dispatcher writes by itself (408, 431, 400) then carry the contract's JSON
//! envelope like every answer of the app. `vellum-server` and the tests that need a real socket
//! both serve through [`serve`].

mod envelope;

use std::io;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_http::{HttpService, Protocol};
use actix_server::Server;
use actix_service::{IntoServiceFactory as _, ServiceFactoryExt as _, fn_service, map_config};
use actix_web::dev::AppConfig;
use actix_web::rt::net::TcpStream;

use crate::AppState;
pub use envelope::Enveloped;

/// What is done to each accepted connection before HTTP starts on it (socket options).
pub type OnConnect = Arc<dyn Fn(&TcpStream) + Send + Sync>;

/// How [`serve`] runs.
#[derive(Clone)]
pub struct ServeOptions {
    /// Worker threads (actix's default, one per core, when `None`).
    pub workers: Option<usize>,
    /// How long the first request's head may take to arrive (then 408).
    pub client_request_timeout: Duration,
    /// How long a closing connection may linger.
    pub client_disconnect_timeout: Duration,
    /// How long a graceful stop waits for requests in flight.
    pub shutdown_timeout: u64,
    /// Whether SIGTERM, SIGINT and SIGQUIT stop the server (off in tests).
    pub signals: bool,
    pub on_connect: Option<OnConnect>,
}

impl Default for ServeOptions {
    /// actix-web's own defaults.
    fn default() -> Self {
        Self {
            workers: None,
            client_request_timeout: Duration::from_secs(5),
            client_disconnect_timeout: Duration::from_secs(1),
            shutdown_timeout: 30,
            signals: true,
            on_connect: None,
        }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("workers", &self.workers)
            .field("client_request_timeout", &self.client_request_timeout)
            .field("client_disconnect_timeout", &self.client_disconnect_timeout)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("signals", &self.signals)
            .field("on_connect", &self.on_connect.is_some())
            .finish()
    }
}

/// Threads of one worker's blocking pool at most.
const BLOCKING_THREADS_PER_WORKER: usize = 16;

/// Serves [`crate::app`] over `state` on `listener` (HTTP/1.x) until stopped; await the returned
/// server, or stop it through its handle.
///
/// # Errors
/// When the listener cannot be registered (its address cannot be read).
pub fn serve(state: AppState, listener: TcpListener, options: ServeOptions) -> io::Result<Server> {
    let addr = listener.local_addr()?;
    let host = addr.to_string();
    let mut builder = Server::build().shutdown_timeout(options.shutdown_timeout);
    if let Some(workers) = options.workers {
        builder = builder.workers(workers.max(1));
    }
    if !options.signals {
        builder = builder.disable_signals();
    }
    // Each worker's blocking pool (file reads, in-process transforms, extraction) may otherwise
    // grow to 512 / workers threads, each keeping its own stack and allocator state after the
    // burst that spawned it: a download burst took the server to 80 threads (issue 23).
    builder = builder.worker_max_blocking_threads(BLOCKING_THREADS_PER_WORKER);
    // When the server stops, idle keep-alive connections close at once instead of holding the
    // graceful stop until their keep-alive ends (as `HttpServer` does).
    let stopping = builder.graceful_shutdown_signal();
    // Sockets of the realtime server would hold the graceful stop until its timeout: they are
    // closed at once with 4200 (clients reconnect to another replica) and this replica's
    // presence members are withdrawn.
    let realtime = state.realtime().clone();
    let realtime_stop = builder.graceful_shutdown_signal();
    tokio::spawn(async move {
        realtime_stop.notified().await;
        realtime.shutdown().await;
    });
    let builder = builder.listen("vellum", listener, move || {
        let app = crate::app(state.clone())
            .into_factory()
            .map_err(|err: actix_web::Error| err.error_response());
        let host = host.clone();
        let stopping = stopping.clone();
        let http = HttpService::build()
            .graceful_shutdown_signal(move || {
                let stopping = stopping.clone();
                async move { stopping.notified().await }
            })
            .client_request_timeout(options.client_request_timeout)
            .client_disconnect_timeout(options.client_disconnect_timeout)
            .local_addr(addr)
            // What `HttpServer` gives the app (its constructor is crate-private to actix-web;
            // this hidden one is the public way to the same value): only a request without
            // `Host` reads it.
            .finish(map_config(app, move |()| {
                AppConfig::__priv_test_new(false, host.clone(), addr)
            }));
        let on_connect = options.on_connect.clone();
        fn_service(move |io: TcpStream| {
            let on_connect = on_connect.clone();
            async move {
                // Without it, a streamed body's last segment waits for the client's delayed
                // ACK (Nagle): file content and transforms took a fixed ~44 ms each.
                if let Err(err) = io.set_nodelay(true) {
                    tracing::warn!(error = %err, "could not set TCP_NODELAY");
                }
                if let Some(on_connect) = on_connect {
                    on_connect(&io);
                }
                let peer = io.peer_addr().ok();
                Ok::<_, actix_http::error::DispatchError>((
                    Enveloped::new(io),
                    Protocol::Http1,
                    peer,
                ))
            }
        })
        .and_then(http)
    })?;
    Ok(builder.run())
}
