//! Fixed-size keys for the response cache and the list-totals memo.
//!
//! Both are keyed by what a request means (its role, route and parsed parameters), which can be as
//! long as the URL. Stored as such, every key would bring up to 64 KB of the request into memory
//! or Redis (security review R3 and R6), so what is stored is a SHA-256 digest of it: 32 bytes
//! whatever the request. Two different meanings sharing a digest would need a SHA-256 collision.

use std::fmt::{self, Write as _};

use sha2::{Digest, Sha256};

/// A digest of several parts, each followed by its length, so that no two sequences of parts
/// hash the same input (`("ab", "c")` and `("a", "bc")` differ). Parts can be streamed from a
/// `Debug` implementation without building its text first.
pub struct KeyHasher {
    sha: Sha256,
    part_len: u64,
}

impl fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyHasher")
            .field("part_len", &self.part_len)
            .finish_non_exhaustive()
    }
}

impl KeyHasher {
    /// A hasher for keys of one `kind`, so keys of different uses never meet.
    pub fn new(kind: &str) -> Self {
        let mut hasher = Self {
            sha: Sha256::new(),
            part_len: 0,
        };
        hasher.part(kind);
        hasher
    }

    /// Adds a text part.
    pub fn part(&mut self, text: &str) -> &mut Self {
        self.sha.update(text.as_bytes());
        self.part_len = u64::try_from(text.len()).unwrap_or(u64::MAX);
        self.end_part()
    }

    /// Adds the `Debug` text of `value` as one part, streamed into the digest.
    pub fn debug_part(&mut self, value: &dyn fmt::Debug) -> &mut Self {
        // Writing into a hasher cannot fail; a failing `Debug` only changes the digest.
        let _ = write!(self, "{value:?}");
        self.end_part()
    }

    fn end_part(&mut self) -> &mut Self {
        self.sha.update(self.part_len.to_le_bytes());
        self.part_len = 0;
        self
    }

    pub fn finish(self) -> [u8; 32] {
        self.sha.finalize().into()
    }

    /// The digest as 64 lowercase hex digits (Redis keys stay printable).
    pub fn finish_hex(self) -> String {
        let mut out = String::with_capacity(64);
        for byte in self.finish() {
            let _ = write!(out, "{byte:02x}");
        }
        out
    }
}

impl fmt::Write for KeyHasher {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.sha.update(s.as_bytes());
        self.part_len = self
            .part_len
            .saturating_add(u64::try_from(s.len()).unwrap_or(u64::MAX));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(parts: &[&str]) -> [u8; 32] {
        let mut hasher = KeyHasher::new("test");
        for part in parts {
            hasher.part(part);
        }
        hasher.finish()
    }

    #[test]
    fn parts_have_boundaries() {
        assert_eq!(digest(&["ab", "c"]), digest(&["ab", "c"]));
        assert_ne!(digest(&["ab", "c"]), digest(&["a", "bc"]));
        assert_ne!(digest(&["ab", ""]), digest(&["ab"]));
        assert_ne!(KeyHasher::new("a").finish(), KeyHasher::new("b").finish());
    }

    #[test]
    fn a_debug_part_is_its_text() {
        let value = vec![Some("x"), None];
        let mut streamed = KeyHasher::new("test");
        streamed.debug_part(&value);
        assert_eq!(streamed.finish(), digest(&[&format!("{value:?}")]));
        let mut hex = KeyHasher::new("test");
        hex.part(&"long".repeat(10_000));
        let hex = hex.finish_hex();
        assert_eq!(hex.len(), 64);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
