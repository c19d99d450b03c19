//! Reading admin request bodies: a JSON object (the JSON API) or the same names from a form (the
//! web UI), checked field by field so a 422 names every wrong field at once.
//!
//! ```
//! use serde_json::json;
//! use vellum_app::input::Input;
//!
//! let body = json!({"email": "ada@example.com", "name": ""});
//! let mut input = Input::new(&body).unwrap();
//! assert_eq!(input.required_str("email", 254), Some("ada@example.com"));
//! assert_eq!(input.required_str("name", 255), None);
//! assert_eq!(input.optional_bool("verified"), None);
//! assert!(input.finish().is_err());
//! ```

use serde_json::{Map, Value as Json};
use vellum_domain::ValidationErrors;

use crate::error::AppError;

/// A request body being read; problems accumulate until [`Input::finish`].
#[derive(Debug)]
pub struct Input<'a> {
    body: &'a Map<String, Json>,
    errors: ValidationErrors,
}

impl<'a> Input<'a> {
    /// # Errors
    /// [`AppError::Invalid`] when the body is not a JSON object.
    pub fn new(body: &'a Json) -> Result<Self, AppError> {
        match body {
            Json::Object(body) => Ok(Self {
                body,
                errors: ValidationErrors::new(),
            }),
            _ => Err(AppError::invalid(
                "body",
                "The request body must be a JSON object.",
            )),
        }
    }

    /// Records a problem with `field`.
    pub fn error(&mut self, field: &str, message: impl Into<String>) {
        self.errors.add(field, message);
    }

    #[must_use]
    pub fn has(&self, field: &str) -> bool {
        self.body.contains_key(field)
    }

    #[must_use]
    pub fn raw(&self, field: &str) -> Option<&'a Json> {
        self.body.get(field)
    }

    /// A non-empty string of at most `max` characters.
    pub fn required_str(&mut self, field: &str, max: usize) -> Option<&'a str> {
        match self.body.get(field) {
            None | Some(Json::Null) => {
                self.error(field, format!("The {field} field is required."));
                None
            }
            Some(Json::String(s)) if s.trim().is_empty() => {
                self.error(field, format!("The {field} field is required."));
                None
            }
            Some(Json::String(s)) if s.chars().count() > max => {
                self.error(
                    field,
                    format!("The {field} field must not be greater than {max} characters."),
                );
                None
            }
            Some(Json::String(s)) => Some(s.as_str()),
            Some(_) => {
                self.error(field, format!("The {field} field must be a string."));
                None
            }
        }
    }

    /// A string of at most `max` characters, or `None` when absent or null (`Some(None)` is an
    /// explicit null, `None` absence).
    pub fn optional_str(&mut self, field: &str, max: usize) -> Option<Option<&'a str>> {
        match self.body.get(field)? {
            Json::Null => Some(None),
            Json::String(s) if s.chars().count() > max => {
                self.error(
                    field,
                    format!("The {field} field must not be greater than {max} characters."),
                );
                None
            }
            Json::String(s) => Some(Some(s.as_str())),
            _ => {
                self.error(field, format!("The {field} field must be a string."));
                None
            }
        }
    }

    /// A boolean (also `1`/`0`, `"true"`/`"false"`, `"on"` as forms send them), or `None` when
    /// absent.
    pub fn optional_bool(&mut self, field: &str) -> Option<bool> {
        let value = self.body.get(field)?;
        let parsed = match value {
            Json::Bool(b) => Some(*b),
            Json::Number(n) if n.as_i64() == Some(1) => Some(true),
            Json::Number(n) if n.as_i64() == Some(0) => Some(false),
            Json::String(s) => match s.as_str() {
                "1" | "true" | "on" => Some(true),
                "0" | "false" | "off" | "" => Some(false),
                _ => None,
            },
            _ => None,
        };
        if parsed.is_none() {
            self.error(field, format!("The {field} field must be true or false."));
        }
        parsed
    }

    /// An array of at most `max` strings (each at most `max_len` characters), or `None` when
    /// absent.
    pub fn optional_strings(
        &mut self,
        field: &str,
        max: usize,
        max_len: usize,
    ) -> Option<Vec<&'a str>> {
        let value = self.body.get(field)?;
        let Json::Array(items) = value else {
            self.error(field, format!("The {field} field must be an array."));
            return None;
        };
        if items.len() > max {
            self.error(
                field,
                format!("The {field} field must not have more than {max} items."),
            );
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Json::String(s) if !s.is_empty() && s.chars().count() <= max_len => {
                    out.push(s.as_str());
                }
                _ => {
                    self.error(
                        &format!("{field}.{i}"),
                        format!(
                            "Each {field} entry must be a string of 1 to {max_len} characters."
                        ),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// An array of at most `max` entries, each read by `parse` (`None`: the entry is wrong and
    /// `what` says what it should be), or `None` when absent.
    fn optional_list<T>(
        &mut self,
        field: &str,
        max: usize,
        what: &str,
        parse: impl Fn(&Json) -> Option<T>,
    ) -> Option<Vec<T>> {
        let value = self.body.get(field)?;
        let Json::Array(items) = value else {
            self.error(field, format!("The {field} field must be an array."));
            return None;
        };
        if items.len() > max {
            self.error(
                field,
                format!("The {field} field must not have more than {max} items."),
            );
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(parsed) = parse(item) else {
                self.error(
                    &format!("{field}.{i}"),
                    format!("Each {field} entry must be {what}."),
                );
                return None;
            };
            out.push(parsed);
        }
        Some(out)
    }

    /// An array of at most `max` positive integer ids, or `None` when absent.
    pub fn optional_ids(&mut self, field: &str, max: usize) -> Option<Vec<i64>> {
        self.optional_list(field, max, "a positive integer", |item| {
            item.as_i64().filter(|id| *id > 0)
        })
    }

    /// An array of at most `max` UUIDs (canonical lowercase), duplicates dropped, or `None`
    /// when absent.
    pub fn optional_uuids(&mut self, field: &str, max: usize) -> Option<Vec<String>> {
        let mut ids = self.optional_list(field, max, "a valid UUID", |item| {
            item.as_str().and_then(canonical_uuid)
        })?;
        let mut seen = std::collections::HashSet::new();
        ids.retain(|id| seen.insert(id.clone()));
        Some(ids)
    }

    /// Ends reading.
    ///
    /// # Errors
    /// [`AppError::Invalid`] with every recorded problem.
    pub fn finish(self) -> Result<(), AppError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(AppError::Invalid(self.errors))
        }
    }
}

/// `text` as a canonical (lowercase, hyphenated) UUID, if it is one.
#[must_use]
pub fn canonical_uuid(text: &str) -> Option<String> {
    uuid::Uuid::parse_str(text)
        .ok()
        .map(|uuid| uuid.hyphenated().to_string())
        .filter(|canonical| canonical == text)
}
