//! The visible confirmation a destructive action asks for when it was posted by a form without
//! script: what will happen, the button that does it (the same post, confirmed), and the way back.

use askama::Template;
use vellum_app::principal::Principal;

use crate::chrome::Chrome;

#[derive(Debug, Clone, Template)]
#[template(path = "confirm.html")]
pub struct ConfirmPage {
    pub chrome: Chrome,
    pub title: String,
    pub message: String,
    /// Where the confirmed form posts.
    pub action: String,
    /// The fields posted again, with `confirm=yes` added by the template.
    pub fields: Vec<(String, String)>,
    pub button: String,
    pub cancel_href: String,
    /// How the confirmation is sent: `post` (a plain form), or `put`/`delete` with htmx (the
    /// action carries `?confirm=true`).
    pub method: &'static str,
}

impl ConfirmPage {
    /// A confirmation in the area `area` of the menu.
    #[must_use]
    pub fn new(principal: &Principal, area: &str, title: String, message: String) -> Self {
        Self {
            chrome: Chrome::new(principal, area),
            title,
            message,
            action: String::new(),
            fields: Vec::new(),
            button: String::new(),
            cancel_href: "/".to_owned(),
            method: "post",
        }
    }

    /// The form the confirmation posts: `action` with `fields`, its `button`, and `cancel_href`.
    #[must_use]
    pub fn posting(
        mut self,
        action: String,
        fields: Vec<(String, String)>,
        button: String,
        cancel_href: String,
    ) -> Self {
        self.action = action;
        self.fields = fields;
        self.button = button;
        self.cancel_href = cancel_href;
        self
    }

    /// Sends the confirmation with htmx as `method` (`put` or `delete`) instead of a post.
    #[must_use]
    pub fn with_method(mut self, method: &'static str) -> Self {
        self.method = method;
        self
    }
}
