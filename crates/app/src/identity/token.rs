//! Session tokens: 32 random bytes, base64url in the cookie; only their SHA-256 is stored, so
//! whoever reads the session store cannot present a session.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::AppError;

/// The length of a token in the cookie (32 bytes in unpadded base64url).
const TOKEN_LEN: usize = 43;

/// A session token as the client holds it. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionToken(String);

impl std::fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionToken(****)")
    }
}

impl SessionToken {
    /// A new random token.
    ///
    /// # Errors
    /// When the OS random source fails.
    pub fn generate() -> Result<Self, AppError> {
        let mut bytes = [0_u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| AppError::Internal(format!("no randomness for a session: {e}").into()))?;
        Ok(Self(URL_SAFE_NO_PAD.encode(bytes)))
    }

    /// The token a cookie carries, when it has a token's shape; anything else is no session
    /// (and is never looked up).
    #[must_use]
    pub fn from_cookie(value: &str) -> Option<Self> {
        let ok = value.len() == TOKEN_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        ok.then(|| Self(value.to_owned()))
    }

    /// The value to put in the cookie.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The session's id in the store: the token's SHA-256, hex.
    #[must_use]
    pub fn id(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_through_the_cookie_and_hash() {
        let token = SessionToken::generate().unwrap();
        assert_eq!(token.expose().len(), TOKEN_LEN);
        assert_eq!(
            SessionToken::from_cookie(token.expose()),
            Some(token.clone())
        );
        assert_eq!(token.id().len(), 64);
        assert_ne!(token.id(), token.expose());
        assert_ne!(SessionToken::generate().unwrap(), token);
        assert!(SessionToken::from_cookie("short").is_none());
        assert!(SessionToken::from_cookie(&"a".repeat(42).replace('a', "+")).is_none());
        assert_eq!(format!("{token:?}"), "SessionToken(****)");
    }
}
