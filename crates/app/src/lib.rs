//! `vellum-app`: the application layer between storage and the surfaces.
//!
//! Every surface — the public REST API, the admin app's JSON and HTML, the CLI — calls the use
//! cases here and nothing below them: one async function per use case ([`items::list`],
//! [`files::upload`], [`explain::item`], …), taking the [`Actor`] it acts as and plain inputs, and
//! answering typed resources or an [`AppError`]. The crate owns what the use cases share: the
//! project snapshot and its epoch ([`AppState`], [`Snapshot`]), the response cache and its
//! backends ([`cache`]), key touches, the transform budget and single-flight ([`transforms`]),
//! rendering into the spec's resources, and ingest; and what both binaries share: their settings
//! as clap argument groups ([`config`]) and their logging and error report ([`telemetry`]).
//!
//! This crate must never depend on a web framework (actix-web), render HTML or know status
//! codes: `.ci/run` proves the first.

pub mod accounts;
pub mod activity;
pub mod actor;
pub mod admin_items;
pub mod ai;
pub mod api_keys;
mod app_config;
pub mod broadcasting;
pub mod cache;
pub mod chat;
pub mod chat_bytes;
pub mod collections;
pub mod config;
mod context;
pub mod dashboard;
mod error;
pub mod explain;
pub mod file_admin;
pub mod files;
pub mod graphql;
pub mod groups;
pub mod health;
pub mod identity;
pub mod ingest;
pub mod input;
pub mod items;
mod job_wake;
pub mod jobs;
mod list_memo;
pub mod listing;
pub mod llm;
pub mod metrics;
pub mod navigation;
mod nul;
pub mod options;
pub mod outbound;
pub mod outbox;
pub mod paging;
pub mod permissions;
pub mod persisted_queries;
pub mod presentation;
pub mod principal;
pub mod project_settings;
pub mod query;
pub mod queue;
pub mod realtime;
pub mod render;
pub mod resources;
pub mod roles;
pub mod schema;
mod served;
pub mod singleton;
mod snapshot;
pub mod telemetry;
pub mod transform_urls;
pub mod transforms;
pub mod users;
pub mod webhook_events;
pub mod webhooks;

pub use actor::Actor;
pub use app_config::{
    AiConfig, AppConfig, DEFAULT_BODY_READ_TIMEOUT_SECS, DEFAULT_JPEG_QUALITY, DEFAULT_JSON_LIMIT,
    DEFAULT_MAX_IMAGE_PIXELS, DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_TRANSFORM_MEMORY, JobsConfig,
    MAX_TRANSFORM_SIZES, SigningKey, TransformUrlsConfig, cores,
};
pub use context::{AppState, Backends};
pub use error::AppError;
pub use principal::{AccountResource, Principal};
pub use snapshot::Snapshot;
pub use telemetry::error_chain;
