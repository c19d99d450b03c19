use std::collections::BTreeMap;

use serde::Serialize;

/// A value that could not be parsed into a domain type. These are the caller's mistakes in a schema,
/// a manifest or a setting; item data problems are reported as [`ValidationErrors`] instead, because
/// a client needs every problem of a write at once rather than the first one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("unknown field type \"{0}\"")]
    UnknownFieldType(String),
    #[error(
        "invalid collection slug \"{0}\": use 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidSlug(String),
    #[error(
        "invalid field name \"{0}\": use 1 to 64 letters, digits or '_', not starting with a digit"
    )]
    InvalidFieldName(String),
    #[error("invalid locale code \"{0}\": expected a language tag such as \"en\" or \"pt-BR\"")]
    InvalidLocale(String),
    #[error("invalid content locales: {0}")]
    InvalidLocales(String),
    #[error("{path}: {message}")]
    InvalidSettings { path: String, message: String },
    #[error("duplicate field name \"{0}\"")]
    DuplicateField(String),
    /// An account's email, name or password; the message is the one shown to the user.
    #[error("{0}")]
    InvalidAccount(String),
}

impl DomainError {
    pub(crate) fn settings(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidSettings {
            path: path.into(),
            message: message.into(),
        }
    }

    /// Prefixes the path of a settings error, so nested definitions (block types inside blocks)
    /// name the exact place that is wrong.
    #[must_use]
    pub fn within(self, prefix: &str) -> Self {
        match self {
            Self::InvalidSettings { path, message } => Self::InvalidSettings {
                path: if path.is_empty() {
                    prefix.to_owned()
                } else {
                    format!("{prefix}.{path}")
                },
                message,
            },
            other => Self::InvalidSettings {
                path: prefix.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

/// Every problem of one write, keyed by field path (`title`, `tags.0.meta.weight`,
/// `content.1.heading`). Serializes to the `errors` object of the 422 envelope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ValidationErrors(BTreeMap<String, Vec<String>>);

impl ValidationErrors {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let message = message.into();
        let list = self.0.entry(path.into()).or_default();
        if !list.contains(&message) {
            list.push(message);
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[must_use]
    pub fn get(&self, path: &str) -> Option<&[String]> {
        self.0.get(path).map(Vec::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    #[must_use]
    pub fn into_map(self) -> BTreeMap<String, Vec<String>> {
        self.0
    }

    /// Moves every problem of `other` under `prefix` (`prefix.path`, or `prefix` for the root).
    pub fn absorb(&mut self, prefix: &str, other: Self) {
        for (path, messages) in other.0 {
            let key = join_path(prefix, &path);
            for message in messages {
                self.add(key.clone(), message);
            }
        }
    }

    /// `Ok(value)` when nothing was reported, the errors otherwise.
    pub fn into_result<T>(self, value: T) -> Result<T, Self> {
        if self.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

pub(crate) fn join_path(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}.{rest}"),
    }
}
