//! vellum-admin's command-line tests, run against the built binary.
//!
//! One test binary for the crate (one link, one process), a module per subject.

mod cli;
mod dry_run;
mod manifest_cli;
