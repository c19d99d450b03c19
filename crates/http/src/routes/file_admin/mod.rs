//! The admin file manager: session-authenticated routes under `/files` (issue 29). Each handler
//! is its extractors, one call of [`vellum_app::file_admin`], and a response.
//!
//! Literal segments (`/files/bulk`, `/files/upload`, `/files/folders`) are registered before
//! `/files/{file}` so they are never read as an id.

use actix_web::web;

pub mod blobs;
pub mod browse;
pub mod trash;

/// Registers every file manager route, literal paths first.
pub fn register(cfg: &mut web::ServiceConfig) {
    browse::register(cfg);
    blobs::register(cfg);
    trash::register(cfg);
}
