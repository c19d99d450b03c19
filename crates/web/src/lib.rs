//! Vellum's admin web UI: the pages the admin routes answer when a request does not prefer JSON
//! (`shared/spec/admin-contract.md`, "One route, two representations").
//!
//! Each page is a view model (a struct built from what a `vellum_app` use case answered) and an
//! askama template, checked when this crate compiles. The HTTP edge picks JSON or a page; this
//! crate only renders. It holds no SQL and makes no policy decision: what a user may see or do
//! was decided by the use case (and [`vellum_app::navigation`] for the menu) before a view model
//! is built.
//!
//! Static assets (htmx, the stylesheet, small ES modules) are embedded in the binary
//! ([`assets`]): `cargo build` alone produces the whole UI.

pub mod assets;
pub mod chrome;
mod error;
mod format;
pub mod forms;
pub mod item_input;
pub mod links;
pub mod pages;
pub mod paging;
pub mod role_input;

pub use error::WebError;
