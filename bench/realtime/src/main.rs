//! `vellum-bench-realtime`: a load client for Vellum's Pusher-protocol WebSocket server (issue 20).
//!
//! It opens thousands of sockets the way pusher-js would, signs its own private and presence
//! subscriptions with the app secret (so no HTTP auth endpoint is in the measured path), and
//! reports what the issue asks for: the memory of a server holding many sockets (`hold`), the
//! delivery latency and loss of client events fanned out across replicas, with and without
//! subscribers that stop reading (`deliver`), and that two tabs of one user are one presence
//! member across replicas (`presence`).
//!
//! It is a tool run by hand (see `bench/realtime/run.sh`), never a timed test: figures are
//! reported, only `presence` fails on a wrong answer. Output: a table for people on stderr, one
//! JSON line for machines on stdout. It must never need anything of the server but its public
//! WebSocket endpoint (and, for `hold`, its `/proc` entry), so it measures what a browser gets.

mod chat;
mod conn;
mod deliver;
mod hold;
mod presence;
mod protocol;
mod stats;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::Value;

use crate::conn::{ConnError, Endpoint, UrlError};

/// Command line of `vellum-bench-realtime`.
#[derive(Debug, Parser)]
#[command(
    name = "vellum-bench-realtime",
    about = "Load client for Vellum's realtime (Pusher protocol 7) server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open many sockets, subscribe each to a private channel, keep them alive, report the
    /// server's memory.
    Hold(hold::HoldArgs),
    /// Publish client events at a fixed rate and measure their delivery to every subscriber.
    Deliver(deliver::DeliverArgs),
    /// Check that two sockets of one user (on two replicas) make one presence member.
    Presence(presence::PresenceArgs),
    /// Post team chat messages over HTTP to a thread many sockets listen to: request and
    /// delivery latency.
    Chat(chat::ChatArgs),
}

/// What every subcommand needs to reach the server.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// A server's WebSocket base, `ws://HOST:PORT`; repeat it (or separate with commas) for
    /// several replicas: sockets are spread over them round-robin.
    #[arg(
        long = "url",
        env = "VELLUM_BENCH_REALTIME_URL",
        value_delimiter = ',',
        required = true
    )]
    pub urls: Vec<String>,

    /// The app key (the same on every replica).
    #[arg(long, env = "VELLUM_REALTIME_KEY")]
    pub key: String,

    /// The app secret: the bench signs its own subscriptions with it.
    #[arg(long, env = "VELLUM_REALTIME_SECRET", hide_env_values = true)]
    pub secret: String,

    /// Sockets connecting at once. Bounded so the bench measures a server under many open
    /// sockets, not one flooded by handshakes (the listen backlog would drop SYNs).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub connect_concurrency: u32,

    /// Seconds one socket may take to connect and subscribe before it counts as a failure.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub connect_timeout_secs: u64,
}

impl Common {
    /// The `--url`s as endpoints, in the order given (never empty: clap requires one).
    ///
    /// # Errors
    /// When a URL is not `ws://HOST:PORT`.
    pub fn endpoints(&self) -> Result<Vec<Endpoint>, UrlError> {
        self.urls
            .iter()
            .map(|url| Endpoint::parse(url, &self.key))
            .collect()
    }

    #[must_use]
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.connect_timeout_secs)
    }
}

/// What can stop a run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("{0}")]
    Usage(String),
    #[error("could not read the memory of process {pid}")]
    Memory {
        pid: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}")]
    Socket {
        what: String,
        #[source]
        source: ConnError,
    },
    #[error("a task of the bench failed")]
    Join(#[from] tokio::task::JoinError),
    #[error("could not write the report")]
    Output(#[source] std::io::Error),
    /// The run completed, its report was written, and it shows a wrong answer.
    #[error("check failed: {0}")]
    Check(String),
}

/// What a subcommand hands back: a table for people, a JSON value for machines, and whether
/// the figures answer what they had to (only `presence` can say no).
#[derive(Debug)]
pub struct Report {
    pub table: String,
    pub json: Value,
    pub failed_check: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Hold(args) => hold::run(args).await,
        Command::Deliver(args) => deliver::run(args).await,
        Command::Presence(args) => presence::run(args).await,
        Command::Chat(args) => chat::run(args).await,
    };
    match result.and_then(emit) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "vellum-bench-realtime: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                let _ = writeln!(stderr, "  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

/// Writes the report, then turns a failed check into the error that makes the exit non-zero.
fn emit(report: Report) -> Result<(), BenchError> {
    write!(std::io::stderr(), "{}", report.table).map_err(BenchError::Output)?;
    writeln!(std::io::stdout(), "{}", report.json).map_err(BenchError::Output)?;
    report
        .failed_check
        .map_or(Ok(()), |why| Err(BenchError::Check(why)))
}

/// Progress for people while a long phase runs (stderr; best effort).
pub fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn urls_repeat_or_split_on_commas() {
        let cli = Cli::try_parse_from([
            "b",
            "deliver",
            "--url",
            "ws://a:1,ws://b:2",
            "--url",
            "ws://c:3",
            "--key",
            "k",
            "--secret",
            "s",
        ])
        .unwrap();
        let Command::Deliver(args) = cli.command else {
            panic!("not deliver")
        };
        assert_eq!(args.common.urls, ["ws://a:1", "ws://b:2", "ws://c:3"]);
        assert_eq!(args.common.endpoints().unwrap().len(), 3);
    }
}
