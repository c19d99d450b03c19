//! Black-box tests of the public API: the real app (`vellum_http::app`) over a fresh database per
//! test (SQLite in a temp dir, or PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set), configured
//! through the manifest engine exactly as an operator would. One `mod` per spec area.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

mod access;
mod admin;
mod cache;
mod collections;
mod disclosure;
mod errors;
mod expansion;
mod files;
mod files_content;
mod files_races;
mod files_transforms;
mod graphql;
mod health;
mod hostile;
mod items_read;
mod items_write;
mod metrics;
mod openapi;
mod origin_cors;
mod properties;
mod query_budget;
mod realtime;
mod redis;
mod relations;
mod role_matrix;
mod smoke;
mod socket;
mod transform_budget;
mod transform_urls;
