//! `hash` field fingerprints.
//!
//! A `hash` value is stored and returned only as `hmac-sha256:<64 hex digits>`, the HMAC-SHA-256
//! of the input under a per-project secret key. HMAC rather than a plain digest so that a leaked
//! database cannot be matched against public rainbow tables or guessed by hashing candidate values
//! without the key; deterministic so that equal inputs give equal fingerprints and `unique`,
//! equality filters and "does this match" checks keep working. It is deliberately not a password
//! hash (argon2, bcrypt): those are salted per value (so not comparable) and slow by design, while
//! `hash` fields fingerprint identifiers such as emails or external ids for lookups. A value that
//! already is a fingerprint is kept as is, which makes normalization idempotent.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

const PREFIX: &str = "hmac-sha256:";

/// The per-project secret for fingerprints. Its `Debug` never shows the bytes.
#[derive(Clone)]
pub struct HashKey(Vec<u8>);

impl HashKey {
    /// # Panics
    /// Never: HMAC accepts keys of any length.
    #[must_use]
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// The fingerprint of `input`, or `input` itself when it already is one.
    #[must_use]
    pub fn fingerprint(&self, input: &str) -> String {
        if is_fingerprint(input) {
            return input.to_owned();
        }
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else {
            // Unreachable: HMAC takes keys of any length. Fall back to an unkeyed marker rather
            // than panic; the result still never contains the clear input.
            return format!("{PREFIX}{}", "0".repeat(64));
        };
        mac.update(input.as_bytes());
        format!("{PREFIX}{}", hex::encode(mac.finalize().into_bytes()))
    }
}

impl fmt::Debug for HashKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HashKey(****)")
    }
}

/// Whether `value` has the stored fingerprint form.
#[must_use]
pub fn is_fingerprint(value: &str) -> bool {
    value.strip_prefix(PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_keyed_and_idempotent() {
        let k = HashKey::new(b"project-secret".to_vec());
        let a = k.fingerprint("alice@example.com");
        assert!(is_fingerprint(&a));
        assert_eq!(a, k.fingerprint("alice@example.com"));
        assert_ne!(a, k.fingerprint("bob@example.com"));
        assert_ne!(
            a,
            HashKey::new(b"other".to_vec()).fingerprint("alice@example.com")
        );
        assert_eq!(k.fingerprint(&a), a);
        assert!(!a.contains("alice"));
        // RFC 4231 test case 2 ("Jefe"), to pin the algorithm.
        assert_eq!(
            HashKey::new(b"Jefe".to_vec()).fingerprint("what do ya want for nothing?"),
            "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(format!("{k:?}"), "HashKey(****)");
    }
}
