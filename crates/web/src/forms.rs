//! Validation errors as a form shows them: each next to its field, the rest above the form.

use std::collections::BTreeMap;

use serde_json::Value;

/// The `errors` of a 422 (`{field: [messages]}`), keyed by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(BTreeMap<String, Vec<String>>);

impl FieldErrors {
    /// The `errors` object of a 422 body (the public envelope); anything else is no error.
    #[must_use]
    pub fn from_body(body: &Value) -> Self {
        let Some(Value::Object(errors)) = body.get("errors") else {
            return Self::default();
        };
        Self(
            errors
                .iter()
                .map(|(field, messages)| {
                    let messages = messages
                        .as_array()
                        .map(|m| {
                            m.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    (field.clone(), messages)
                })
                .collect(),
        )
    }

    /// The problems a use case reported, keyed by field (no JSON round trip).
    #[must_use]
    pub fn from_map(errors: BTreeMap<String, Vec<String>>) -> Self {
        Self(errors)
    }

    /// One field's problem.
    #[must_use]
    pub fn single(field: &str, message: &str) -> Self {
        Self(BTreeMap::from([(
            field.to_owned(),
            vec![message.to_owned()],
        )]))
    }

    /// The first message for `field`, shown under its input.
    #[must_use]
    pub fn first(&self, field: &str) -> Option<&str> {
        self.0.get(field)?.first().map(String::as_str)
    }

    /// The first message for `field` or one of its parts (`ip_allowlist.1`), for a field whose
    /// input holds a list.
    #[must_use]
    pub fn first_under(&self, field: &str) -> Option<&str> {
        self.first(field).or_else(|| {
            self.0
                .iter()
                .find(|(key, _)| {
                    key.strip_prefix(field)
                        .is_some_and(|rest| rest.starts_with('.'))
                })
                .and_then(|(_, messages)| messages.first())
                .map(String::as_str)
        })
    }

    /// Every message of fields not in `shown` (those a form has no input for), for a summary; a
    /// part of a shown field (`ip_allowlist.1`) counts as shown.
    #[must_use]
    pub fn others(&self, shown: &[&str]) -> Vec<String> {
        self.0
            .iter()
            .filter(|(field, _)| {
                !shown.iter().any(|s| {
                    field.as_str() == *s
                        || field
                            .strip_prefix(s)
                            .is_some_and(|rest| rest.starts_with('.'))
                })
            })
            .flat_map(|(_, messages)| messages.iter().cloned())
            .collect()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The values a form shows chosen for a list field (checked roles, members): those of the body
/// a refused form posted, as typed, or else those stored.
pub fn chosen<T>(
    posted: Option<&Value>,
    key: &str,
    read: impl Fn(&Value) -> Option<T>,
    stored: impl FnOnce() -> Vec<T>,
) -> Vec<T> {
    match posted.and_then(|p| p.get(key)) {
        Some(Value::Array(values)) => values.iter().filter_map(read).collect(),
        _ => stored(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_422_body_is_read_per_field() {
        let errors = FieldErrors::from_body(&json!({
            "message": "The given data was invalid.",
            "errors": {"email": ["Bad.", "Worse."], "body": ["Not JSON."]}
        }));
        assert_eq!(errors.first("email"), Some("Bad."));
        assert_eq!(errors.first("password"), None);
        assert_eq!(errors.others(&["email"]), vec!["Not JSON.".to_owned()]);
        assert!(FieldErrors::from_body(&json!({"message": "x"})).is_empty());
        assert!(FieldErrors::from_body(&json!({"errors": ["x"]})).is_empty());
    }

    #[test]
    fn a_part_of_a_list_field_counts_as_that_field() {
        let errors = FieldErrors::from_body(&json!({"errors": {
            "ip_allowlist.1": ["Not an address."], "ip_allowlist_x": ["Other."]
        }}));
        assert_eq!(errors.first_under("ip_allowlist"), Some("Not an address."));
        assert_eq!(errors.first_under("name"), None);
        assert_eq!(errors.others(&["ip_allowlist"]), vec!["Other.".to_owned()]);
    }
}
