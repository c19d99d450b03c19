//! What an admin account is made of, parsed once at the edge: its email address, its display
//! name and a new password. Limits are here so the JSON API, the web UI and `vellum-admin` refuse
//! the same input with the same message.

use serde::Serialize;

use crate::DomainError;

/// The longest email address SMTP can carry (RFC 5321's path limit less the brackets).
pub const MAX_EMAIL_LEN: usize = 254;
/// Display names are for people, not documents.
pub const MAX_USER_NAME_LEN: usize = 255;
/// The shortest password accepted (OWASP ASVS 2.1.1, NIST 800-63B: at least 8 characters).
pub const MIN_PASSWORD_CHARS: usize = 8;
/// The longest password accepted: argon2 would hash any length, but an unbounded input is an
/// unbounded allocation and hashing cost per request (ASVS allows capping at 128 or more).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// An email address as entered, checked for shape (one `@`, a non-empty local part and domain,
/// no spaces or control characters, at most 254 bytes). Uniqueness is case-insensitive and
/// compares [`EmailAddress::normalized`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct EmailAddress(String);

impl EmailAddress {
    /// # Errors
    /// When the trimmed input is not shaped like an address.
    pub fn parse(raw: &str) -> Result<Self, DomainError> {
        let raw = raw.trim();
        let ok = raw.len() <= MAX_EMAIL_LEN
            && !raw.chars().any(|c| c.is_whitespace() || c.is_control())
            && raw.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty()
                    && !domain.is_empty()
                    && !domain.contains('@')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
            });
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(DomainError::InvalidAccount(
                "The email must be a valid email address.".to_owned(),
            ))
        }
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form compared for uniqueness and sign-in: lowercase.
    #[must_use]
    pub fn normalized(&self) -> String {
        self.0.to_lowercase()
    }
}

/// A user's display name: trimmed, 1 to 255 characters, no control characters.
///
/// # Errors
/// When it is empty, too long or holds control characters.
pub fn parse_user_name(raw: &str) -> Result<String, DomainError> {
    let name = raw.trim();
    if name.is_empty()
        || name.chars().count() > MAX_USER_NAME_LEN
        || name.chars().any(char::is_control)
    {
        return Err(DomainError::InvalidAccount(format!(
            "The name must be 1 to {MAX_USER_NAME_LEN} characters without control characters."
        )));
    }
    Ok(name.to_owned())
}

/// A new password: 8 to 256 characters. Nothing else is imposed (NIST 800-63B: no composition
/// rules).
///
/// # Errors
/// When it is too short or too long.
pub fn check_new_password(raw: &str) -> Result<(), DomainError> {
    let chars = raw.chars().count();
    if (MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        Ok(())
    } else {
        Err(DomainError::InvalidAccount(format!(
            "The password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        for good in ["a@b", "Ada@Example.com", " x.y+z@mail.example.org "] {
            assert!(EmailAddress::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "", "a", "@b", "a@", "a@b@c", "a b@c", "a@.b", "a@b.", "a\u{0}@b",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad:?}");
        }
        assert!(EmailAddress::parse(&format!("{}@b", "a".repeat(253))).is_err());
        let e = EmailAddress::parse(" Ada@Example.COM ").unwrap();
        assert_eq!(e.as_str(), "Ada@Example.COM");
        assert_eq!(e.normalized(), "ada@example.com");
    }

    #[test]
    fn names_and_passwords() {
        assert_eq!(parse_user_name("  Ada ").unwrap(), "Ada");
        assert!(parse_user_name(" ").is_err());
        assert!(parse_user_name(&"x".repeat(256)).is_err());
        assert!(parse_user_name("a\nb").is_err());
        assert!(check_new_password("12345678").is_ok());
        assert!(check_new_password("1234567").is_err());
        assert!(check_new_password(&"p".repeat(257)).is_err());
        assert!(check_new_password(&"é".repeat(8)).is_ok());
    }
}
