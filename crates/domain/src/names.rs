use std::fmt;

use serde::{Deserialize, Serialize};

use crate::DomainError;

const MAX_NAME_LEN: usize = 64;

/// A collection slug as it appears in `/api/v1/collections/{slug}`. Lowercase so URLs are
/// canonical; `-` and `_` only between alphanumerics so a slug never needs escaping.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CollectionSlug(String);

impl CollectionSlug {
    /// # Errors
    /// When `raw` is empty, longer than 64 characters, or uses characters outside `[a-z0-9_-]`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        let bytes = raw.as_bytes();
        let ok = !raw.is_empty()
            && raw.len() <= MAX_NAME_LEN
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'_')
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(DomainError::InvalidSlug(raw.to_owned()))
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The key of a field inside item `data`. It is also used in filter and sort parameters, so it
/// is restricted to identifier characters that need no quoting anywhere.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FieldName(String);

impl FieldName {
    /// # Errors
    /// When `raw` is empty, longer than 64 characters, starts with a digit, or uses characters
    /// other than ASCII letters, digits and `_`.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        let bytes = raw.as_bytes();
        let ok = !raw.is_empty()
            && raw.len() <= MAX_NAME_LEN
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
            && !bytes.first().is_some_and(u8::is_ascii_digit);
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(DomainError::InvalidFieldName(raw.to_owned()))
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_newtype_impls {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl TryFrom<String> for $t {
            type Error = DomainError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(&value)
            }
        }
        impl From<$t> for String {
            fn from(value: $t) -> Self {
                value.0
            }
        }
        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl std::str::FromStr for $t {
            type Err = DomainError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }
    };
}
string_newtype_impls!(CollectionSlug);
string_newtype_impls!(FieldName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        for ok in ["articles", "site-settings", "a", "v2_posts", "2024"] {
            assert_eq!(CollectionSlug::parse(ok).unwrap().as_str(), ok);
        }
        for bad in [
            "",
            "Articles",
            "-a",
            "a-",
            "a b",
            "a/b",
            "ä",
            &"a".repeat(65),
        ] {
            assert!(CollectionSlug::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn field_names() {
        for ok in ["title", "_internal", "publishedAt", "seo_title2"] {
            assert_eq!(FieldName::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "2fa", "a-b", "a.b", "a b", "filter[x]", &"f".repeat(65)] {
            assert!(FieldName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn serde_round_trip_rejects_invalid() {
        let slug: CollectionSlug = serde_json::from_str("\"articles\"").unwrap();
        assert_eq!(serde_json::to_string(&slug).unwrap(), "\"articles\"");
        assert!(serde_json::from_str::<CollectionSlug>("\"Bad Slug\"").is_err());
    }
}
