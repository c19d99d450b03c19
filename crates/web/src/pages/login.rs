//! The sign-in page (`GET /login`): password, or a mailed one-time code in two steps.

use askama::Template;

use crate::forms::FieldErrors;

/// The sign-in page in one of its states.
#[derive(Debug, Clone, Default, Template)]
#[template(path = "login.html")]
pub struct LoginPage {
    /// The address typed so far (kept when a form comes back with errors).
    pub email: String,
    /// The code tab instead of the password tab.
    pub code_method: bool,
    /// The code was asked for: the page asks for it.
    pub code_sent: bool,
    /// A message above the forms (signed out, throttled, ...).
    pub notice: Option<String>,
    pub errors: FieldErrors,
    /// Passkeys work here: the page offers "Sign in with a passkey".
    pub passkeys: bool,
}

impl LoginPage {
    /// The password tab, or the code tab when `method=code`.
    #[must_use]
    pub fn new(method: Option<&str>, passkeys: bool) -> Self {
        Self {
            code_method: method == Some("code"),
            passkeys,
            ..Self::default()
        }
    }

    /// Problems with no input of their own on the page, shown above the forms.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&["email", "password", "code"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::render;

    #[test]
    fn the_password_form_shows_its_errors_next_to_the_field() {
        let html = render(&LoginPage {
            email: "a@b.test\"><script>".to_owned(),
            errors: FieldErrors::single("email", "These credentials do not match our records."),
            ..LoginPage::new(None, false)
        })
        .unwrap();
        assert!(html.contains(r#"action="/login""#));
        assert!(html.contains(r#"id="email-error">These credentials do not match our records."#));
        assert!(html.contains(r#"aria-invalid="true""#));
        assert!(!html.contains("<script>"), "the typed address is escaped");
    }

    #[test]
    fn the_code_tab_asks_for_the_address_then_the_code() {
        let ask = render(&LoginPage::new(Some("code"), false)).unwrap();
        assert!(ask.contains(r#"action="/login/code""#));
        assert!(!ask.contains(r#"action="/login/code/verify""#));
        let verify = render(&LoginPage {
            email: "a@b.test".to_owned(),
            code_sent: true,
            ..LoginPage::new(Some("code"), false)
        })
        .unwrap();
        assert!(verify.contains(r#"action="/login/code/verify""#));
        assert!(verify.contains(r#"name="email" value="a@b.test""#));
    }

    #[test]
    fn the_passkey_button_and_its_script_come_only_when_passkeys_work() {
        let off = render(&LoginPage::new(None, false)).unwrap();
        assert!(!off.contains("data-passkey-sign-in") && !off.contains("passkeys.js"));
        let on = render(&LoginPage::new(None, true)).unwrap();
        assert!(on.contains("data-passkey-sign-in") && on.contains("/assets/passkeys.js?v="));
    }
}
