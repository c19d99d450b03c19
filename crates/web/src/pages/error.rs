//! The page of a refused or failed request (403, 404, 429, 5xx) for a browser.

use askama::Template;

use crate::forms::FieldErrors;

#[derive(Debug, Clone, Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub title: String,
    pub message: String,
    /// Validation messages, when a 422 reaches a page that has no form to show them on.
    pub details: Vec<String>,
}

impl ErrorPage {
    /// The page for `status` with the public message of its JSON body (`{"message", "errors"?}`).
    #[must_use]
    pub fn new(status: u16, body: &serde_json::Value) -> Self {
        let message = body
            .get("message")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("Something went wrong.")
            .to_owned();
        let title = match status {
            403 => "Not allowed",
            404 => "Not found",
            422 => "Check your input",
            429 => "Too many requests",
            500..=599 => "Something went wrong",
            _ => "Request refused",
        }
        .to_owned();
        Self {
            title,
            message,
            details: FieldErrors::from_body(body).others(&[]),
        }
    }
}
