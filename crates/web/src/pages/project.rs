//! The project settings (`GET /settings/project`): content locales, the public API's allowed
//! origins, upload limits and the daily AI prompt limit, saved together (`PUT` with htmx).

use askama::Template;
use serde_json::{Map, Value};
use vellum_app::principal::Principal;

use crate::chrome::Chrome;
use crate::forms::FieldErrors;

#[derive(Debug, Clone, Template)]
#[template(path = "project.html")]
pub struct ProjectPage {
    pub chrome: Chrome,
    pub form: ProjectForm,
    pub errors: FieldErrors,
    pub saved: bool,
}

/// The settings as the form shows them (text, one entry a line or separated by commas).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectForm {
    pub content_locales: String,
    pub default_locale: String,
    pub public_api_allowed_origins: String,
    pub files_max_upload_bytes: String,
    pub chat_max_upload_bytes: String,
    pub daily_prompt_limit: String,
}

impl ProjectForm {
    /// The form of the stored `settings`.
    #[must_use]
    pub fn of(settings: &Map<String, Value>) -> Self {
        let list = |key: &str, sep: &str| {
            settings
                .get(key)
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(sep)
                })
                .unwrap_or_default()
        };
        let text = |key: &str| match settings.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        Self {
            content_locales: list("content_locales", ", "),
            default_locale: text("default_locale"),
            public_api_allowed_origins: list("public_api_allowed_origins", "\n"),
            files_max_upload_bytes: text("files_max_upload_bytes"),
            chat_max_upload_bytes: text("chat_max_upload_bytes"),
            daily_prompt_limit: text("daily_prompt_limit"),
        }
    }

    /// The form as posted.
    #[must_use]
    pub fn posted(form: &[(String, String)]) -> Self {
        let get = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        Self {
            content_locales: get("content_locales"),
            default_locale: get("default_locale"),
            public_api_allowed_origins: get("public_api_allowed_origins"),
            files_max_upload_bytes: get("files_max_upload_bytes"),
            chat_max_upload_bytes: get("chat_max_upload_bytes"),
            daily_prompt_limit: get("daily_prompt_limit"),
        }
    }

    /// The JSON object the settings use case takes: lists split (locales by commas or spaces,
    /// origins by lines), whole numbers as numbers (anything else as text, for the use case to
    /// refuse next to its field).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let split = |text: &str, by: &[char]| -> Value {
            text.split(by)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.to_owned()))
                .collect()
        };
        let number = |text: &str| {
            let text = text.trim();
            text.parse::<u64>()
                .map_or_else(|_| Value::String(text.to_owned()), Value::from)
        };
        serde_json::json!({
            "content_locales": split(&self.content_locales, &[',', ' ', '\n']),
            "default_locale": self.default_locale.trim(),
            "public_api_allowed_origins": split(&self.public_api_allowed_origins, &['\n', ' ', ',']),
            "files_max_upload_bytes": number(&self.files_max_upload_bytes),
            // Empty: no project cap (null).
            "chat_max_upload_bytes": if self.chat_max_upload_bytes.trim().is_empty() {
                Value::Null
            } else {
                number(&self.chat_max_upload_bytes)
            },
            "daily_prompt_limit": number(&self.daily_prompt_limit),
        })
    }
}

impl ProjectPage {
    #[must_use]
    pub fn new(principal: &Principal, form: ProjectForm, errors: FieldErrors, saved: bool) -> Self {
        Self {
            chrome: Chrome::new(principal, "project"),
            form,
            errors,
            saved,
        }
    }

    /// Problems of no field of the form.
    #[must_use]
    pub fn other_errors(&self) -> Vec<String> {
        self.errors.others(&[
            "content_locales",
            "default_locale",
            "public_api_allowed_origins",
            "files_max_upload_bytes",
            "chat_max_upload_bytes",
            "daily_prompt_limit",
        ])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_form_round_trips_the_settings() {
        let Value::Object(stored) = json!({
            "content_locales": ["en", "de"], "default_locale": "en",
            "public_api_allowed_origins": ["https://a.example", "https://b.example"],
            "files_max_upload_bytes": 1024, "chat_max_upload_bytes": 2048, "daily_prompt_limit": 5
        }) else {
            unreachable!()
        };
        let form = ProjectForm::of(&stored);
        assert_eq!(form.content_locales, "en, de");
        assert_eq!(
            form.public_api_allowed_origins,
            "https://a.example\nhttps://b.example"
        );
        assert_eq!(form.to_json(), Value::Object(stored));
        let odd = ProjectForm {
            files_max_upload_bytes: "lots".to_owned(),
            ..ProjectForm::default()
        };
        assert_eq!(odd.to_json()["files_max_upload_bytes"], "lots");
    }
}
