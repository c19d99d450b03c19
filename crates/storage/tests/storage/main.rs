//! The storage crate's integration tests: repositories, filters, blobs and migrations on SQLite (and PostgreSQL or S3 when configured).
//!
//! One test binary for the crate (one link, one process), a module per subject.

mod access;
mod blob;
mod blob_s3;
mod common;
mod connections;
mod files;
mod filters;
mod fuzz_filter_sql;
mod item_files;
mod items;
mod migrations;
mod passkeys;
mod project;
