//! `vellum-server`: the Vellum HTTP service (public API, health probes, admin surfaces).
//!
//! `main` stays short: parse the configuration ([`config`]: clap flags with `VELLUM_*`
//! environment fallbacks, see the operator contract), initialize tracing from `VELLUM_LOG`
//! ([`vellum_app::telemetry`]) and [`serve::run`] until SIGTERM or Ctrl-C (graceful: in-flight
//! requests finish). Started with the hidden `--transform-worker`, by the server itself, it runs
//! one transform worker's job loop instead.
//!
//! This binary must never hold business logic, access decisions or SQL: it wires the crates
//! together. It never calls `std::process::exit`; errors are returned from `main` so logs flush.

mod config;
mod demo;
mod error;
mod serve;

use std::process::ExitCode;

use clap::Parser as _;
use vellum_app::telemetry;

use crate::error::ServerError;

/// mimalloc instead of glibc's allocator: a request allocates and frees many small JSON values
/// and strings on two or more worker threads, and malloc/free were ~18% of an uncached list's
/// profile (docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The name a failure is reported under.
const PROGRAM: &str = "vellum-server";

fn main() -> ExitCode {
    let cli = config::Cli::parse();
    // A transform worker starts no runtime and no logging: stdin and stdout carry its jobs.
    if let Some(memory) = cli.transform_worker {
        return match vellum_http::transforms::run_worker(memory) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => telemetry::report(PROGRAM, &err),
        };
    }
    if let Err(err) = telemetry::init(&cli.config.log) {
        return telemetry::report(PROGRAM, &err);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return telemetry::report(PROGRAM, &err),
    };
    match runtime.block_on(serve::run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => telemetry::report(PROGRAM, &err),
    }
}
