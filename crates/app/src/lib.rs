//! `vellum-app`: the application layer between storage and the surfaces (issue 16, in progress).
//!
//! Every surface — the public REST API, the admin app's JSON and HTML, the CLI — is to call the
//! use cases here and nothing below them. Today it holds what the HTTP server and `vellum-admin`
//! share: the public API's response cache and its epoch, in process or in Redis
//! ([`cache`]), so the admin CLI can bump the epoch without linking a web framework; the
//! settings both binaries read, as clap argument groups ([`config`]); and their logging and error
//! report ([`telemetry`]).
//!
//! This crate must never depend on a web framework (actix-web), render HTML or know status
//! codes: `.ci/run` proves the first.

pub mod cache;
pub mod config;
pub mod telemetry;
