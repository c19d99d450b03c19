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

/// mimalloc's option of how long a freed page stays committed before it goes back to the OS.
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// mimalloc returns freed pages to the OS lazily, on a later allocation at least `purge_delay`
/// (10 ms) after the free; memory freed just before the server goes quiet (start-up, the end of a
/// burst) stayed resident, 46 MiB at idle of which 18 MiB were free pages. At 1 ms the idle RSS
/// is 35 MiB and the peak under `bench/run.sh` 38 to 47 MiB instead of 57 to 67, with the same
/// request rates (at 0, every free purges and `show` loses 12%; issue 23). mimalloc reads its
/// options from the environment before `main` runs, and this workspace has no `unsafe` to call
/// `mi_option_set`, so the server re-executes itself once with the option set. An operator's
/// own value is kept; if the re-execution fails the server runs with mimalloc's default.
#[cfg(unix)]
fn reexec_with_allocator_options() {
    use std::os::unix::process::CommandExt as _;
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    // `exec` returns only when it failed: carry on in this process.
    let _ = command.args(args).env(PURGE_DELAY, "1").exec();
}

#[cfg(not(unix))]
fn reexec_with_allocator_options() {}

fn main() -> ExitCode {
    reexec_with_allocator_options();
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
