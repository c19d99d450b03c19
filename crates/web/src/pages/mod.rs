//! One module per page: its view model and the template it renders.

pub mod account;
pub mod activity;
pub mod ai;
pub mod api_keys;
pub mod chat;
pub mod collections;
pub mod confirm;
pub mod dashboard;
pub mod error;
pub mod file;
pub mod files;
pub mod group;
pub mod groups;
pub mod item;
pub mod items;
pub mod jobs;
pub mod login;
pub mod permissions;
pub mod preview;
pub mod project;
pub mod revisions;
pub mod role;
pub mod roles;
pub mod schema;
pub mod user;
pub mod users;
pub mod webhook;
pub mod webhooks;

use askama::Template;

use crate::WebError;

/// Renders a page's template to its HTML.
///
/// # Errors
/// [`WebError::Render`] when a template fails at run time (a value's `Display` failing).
pub fn render(page: &impl Template) -> Result<String, WebError> {
    Ok(page.render()?)
}
