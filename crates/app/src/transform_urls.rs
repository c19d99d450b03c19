//! Signed, content-addressed transform URLs (issue 24), opt-in with `VELLUM_SIGNED_TRANSFORMS`.
//!
//! The operator contract fixes each `transforms` value as `{base_url}/api/v1/files/{id}/transforms/
//! {key}` and serves every `size-N`; that stays the default. With signing on, every value the
//! server renders carries `?v=<version>&s=<signature>`:
//!
//! - `v` names the output: the first 16 hex digits of SHA-256 over the original's content hash and
//!   the output's variant ([`variant_of`]: the canonical preset key, plus the focal point for
//!   `thumbnail`). New bytes, or a focal point moved under a thumbnail, give a new URL, so an
//!   answer to a signed URL whose `v` is current may be cached for a year as `immutable`. The fit
//!   presets (`small`, `medium`, `large`, `size-N`) do not depend on the focal point, so a
//!   focal-point edit leaves their URLs, and the CDN entries behind them, valid.
//! - `s` proves the server wrote the URL: HMAC-SHA256 of `"{file_id}\n{key}\n{v}"` under the
//!   project's signing key, its first 128 bits in base64url without padding (22 characters). Only
//!   signed requests may ask for a `size-N` other than the presets, so a client cannot make the
//!   server compute and store 4,096 outputs per image.
//!
//! A signature is no capability: it never stands in for the role's grant on the file.
//!
//! This module is pure (no database, no state): signing, checking and the output's identity.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use vellum_imaging::{FocalPoint, Preset};
use vellum_storage::files::StoredFile;

/// Hex digits of a version (`v`): 64 bits, enough to tell one output of a file from the next.
pub const VERSION_LEN: usize = 16;
/// Characters of a signature (`s`): 128 bits of the HMAC in base64url without padding.
pub const SIGNATURE_LEN: usize = 22;
/// Bytes of the HMAC in a signature.
const SIGNATURE_BYTES: usize = 16;
/// The longest transform key (`thumbnail`, `size-4096`): a longer one is never signed.
const MAX_KEY_LEN: usize = 16;

/// Signs and checks transform URLs with the project's key. Its `Debug` never shows the key.
#[derive(Clone)]
pub struct UrlSigner {
    /// The keyed HMAC, ready to be cloned per message.
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlSigner").finish_non_exhaustive()
    }
}

impl UrlSigner {
    /// A signer with `key`; `None` only if HMAC refused the key, which it does for no length
    /// (the configuration asks for at least 32 bytes, and a generated key has 32).
    #[must_use]
    pub fn new(key: &[u8]) -> Option<Self> {
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).ok()?;
        Some(Self { mac })
    }

    fn mac(&self, file_id: i64, key: &str, version: &str) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(file_id.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(key.as_bytes());
        mac.update(b"\n");
        mac.update(version.as_bytes());
        mac
    }

    /// The signature (`s`) of transform `key` of file `file_id` at `version`.
    #[must_use]
    pub fn sign(&self, file_id: i64, key: &str, version: &str) -> String {
        let tag = self.mac(file_id, key, version).finalize().into_bytes();
        let truncated = tag.get(..SIGNATURE_BYTES).unwrap_or(&[]);
        URL_SAFE_NO_PAD.encode(truncated)
    }

    /// Whether `signature` is this signer's for (`file_id`, `key`, `version`), compared in
    /// constant time. Anything malformed (a wrong length, not base64url, a version that is not
    /// one) is simply not a valid signature, checked before any hashing.
    #[must_use]
    pub fn verify(&self, file_id: i64, key: &str, version: &str, signature: &str) -> bool {
        if signature.len() != SIGNATURE_LEN || !is_version(version) || key.len() > MAX_KEY_LEN {
            return false;
        }
        let Ok(tag) = URL_SAFE_NO_PAD.decode(signature) else {
            return false;
        };
        tag.len() == SIGNATURE_BYTES
            && self
                .mac(file_id, key, version)
                .verify_truncated_left(&tag)
                .is_ok()
    }

    /// What a transform request's query (`v`, `s`) says, for transform `key` of `file_id`.
    #[must_use]
    pub fn check(&self, file_id: i64, key: &str, query: &str) -> Signed {
        let (mut version, mut signature): (Option<Cow<'_, str>>, Option<Cow<'_, str>>) =
            (None, None);
        for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match name.as_ref() {
                "v" if version.is_none() => version = Some(value),
                "s" if signature.is_none() => signature = Some(value),
                _ => {}
            }
        }
        match (version, signature) {
            (None, None) => Signed::No,
            (Some(v), Some(s)) if self.verify(file_id, key, &v, &s) => Signed::Yes(v.into_owned()),
            _ => Signed::Invalid,
        }
    }
}

/// Whether a transform request was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signed {
    /// Neither `v` nor `s`: the contract's plain URL.
    No,
    /// A valid signature of this version (current or not: the caller compares).
    Yes(String),
    /// A signature that does not verify, or `v` without `s` (or `s` without `v`).
    Invalid,
}

/// Whether `raw` has the shape of a version: [`VERSION_LEN`] lowercase hex digits.
fn is_version(raw: &str) -> bool {
    raw.len() == VERSION_LEN && raw.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The version (`v`) of the output whose identity is (`content_hash`, `variant`).
#[must_use]
pub fn version(content_hash: &str, variant: &str) -> String {
    let digest = Sha256::new()
        .chain_update(content_hash.as_bytes())
        .chain_update(b"\n")
        .chain_update(variant.as_bytes())
        .finalize();
    let mut hex = hex::encode(digest);
    hex.truncate(VERSION_LEN);
    hex
}

/// The preset as rendered for this image, the output's identity (its variant) and the crop's
/// focal point.
///
/// The variant is the canonical preset key; for `thumbnail` it includes the focal point, which
/// moves the crop. The fit presets leave it out on purpose: their output does not depend on it,
/// so an edit of the focal point keeps their stored outputs and their signed URLs.
#[must_use]
pub fn variant_of(file: &StoredFile, preset: Preset) -> (Preset, String, FocalPoint) {
    // A fit preset whose box holds the whole image renders the image at its own size: every such
    // key (up to 4,096 `size-N`) shares one stored output instead of one each.
    let preset = match (file.width, file.height) {
        (Some(w), Some(h)) => match (u32::try_from(w), u32::try_from(h)) {
            (Ok(w), Ok(h)) if w > 0 && h > 0 => preset.canonical(w, h),
            _ => preset,
        },
        _ => preset,
    };
    let key = preset.key();
    let focal = FocalPoint {
        x: file.focal_point_x.unwrap_or(0.5),
        y: file.focal_point_y.unwrap_or(0.5),
    };
    // The focal point moves the thumbnail's crop, so it is part of the output's identity.
    let variant = if preset == Preset::Thumbnail {
        format!("{key}@{:.4}x{:.4}", focal.x, focal.y)
    } else {
        key
    };
    (preset, variant, focal)
}

/// How `url` and `transforms` values are written: the base URL, the signer when signing is on,
/// and the `size-N` keys every image advertises besides the presets.
#[derive(Debug, Clone, Copy)]
pub struct FileUrls<'a> {
    base_url: &'a str,
    signer: Option<&'a UrlSigner>,
    sizes: &'a [u32],
}

impl<'a> FileUrls<'a> {
    #[must_use]
    pub fn new(base_url: &'a str, signer: Option<&'a UrlSigner>, sizes: &'a [u32]) -> Self {
        Self {
            base_url,
            signer,
            sizes,
        }
    }

    /// The contract's plain URLs under `base_url`, with the presets only.
    #[must_use]
    pub fn unsigned(base_url: &'a str) -> Self {
        Self::new(base_url, None, &[])
    }

    /// The absolute prefix, without a trailing slash.
    #[must_use]
    pub fn base_url(&self) -> &'a str {
        self.base_url.trim_end_matches('/')
    }

    /// The `size-N` keys advertised besides the presets (`VELLUM_TRANSFORM_SIZES`).
    pub fn extra_keys(&self) -> impl Iterator<Item = String> + 'a {
        self.sizes.iter().map(|n| format!("size-{n}"))
    }

    /// `?v=…&s=…` for transform `key` of `file`, or empty when signing is off (or the key or the
    /// file cannot have an output: no content, not a preset).
    #[must_use]
    pub fn query(&self, file: &StoredFile, key: &str) -> String {
        let (Some(signer), Some(hash), Some(preset)) = (
            self.signer,
            file.content_hash.as_deref(),
            Preset::parse(key),
        ) else {
            return String::new();
        };
        let version = version(hash, &variant_of(file, preset).1);
        let signature = signer.sign(file.id, key, &version);
        format!("?v={version}&s={signature}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_signature_verifies_only_for_its_file_key_version_and_signer() {
        let signer = UrlSigner::new(KEY).unwrap();
        let v = version("abc123", "size-400");
        assert_eq!(v.len(), VERSION_LEN);
        let s = signer.sign(7, "size-400", &v);
        assert_eq!(s.len(), SIGNATURE_LEN);
        assert!(signer.verify(7, "size-400", &v, &s));
        // Stable: the same input signs the same.
        assert_eq!(signer.sign(7, "size-400", &v), s);

        assert!(!signer.verify(8, "size-400", &v, &s), "another file");
        assert!(!signer.verify(7, "size-401", &v, &s), "another key");
        assert!(!signer.verify(7, "small", &v, &s), "another key");
        let other = version("abc124", "size-400");
        assert!(!signer.verify(7, "size-400", &other, &s), "another version");
        let other_key = UrlSigner::new(b"another key of at least thirty-two bytes").unwrap();
        assert!(!other_key.verify(7, "size-400", &v, &s), "another signer");
    }

    #[test]
    fn tampered_truncated_or_malformed_signatures_are_refused() {
        let signer = UrlSigner::new(KEY).unwrap();
        let v = version("abc123", "thumbnail@0.5000x0.5000");
        let s = signer.sign(1, "thumbnail", &v);
        // One character changed, wherever it is.
        for i in 0..s.len() {
            let mut tampered = s.clone().into_bytes();
            tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(tampered).unwrap();
            assert!(!signer.verify(1, "thumbnail", &v, &tampered), "{tampered}");
        }
        // Truncated or extended: the length is checked first.
        assert!(!signer.verify(1, "thumbnail", &v, &s[..21]));
        assert!(!signer.verify(1, "thumbnail", &v, &s[..8]));
        assert!(!signer.verify(1, "thumbnail", &v, &format!("{s}A")));
        assert!(!signer.verify(1, "thumbnail", &v, ""));
        // Not base64url, non-ASCII, or padded.
        assert!(!signer.verify(1, "thumbnail", &v, &"+".repeat(22)));
        assert!(!signer.verify(1, "thumbnail", &v, &"é".repeat(11)));
        // A version of the wrong shape never verifies (uppercase, short, long).
        assert!(!signer.verify(1, "thumbnail", &v.to_uppercase(), &s));
        assert!(!signer.verify(1, "thumbnail", &v[..15], &s));
        assert!(!signer.verify(1, "thumbnail", &format!("{v}0"), &s));
    }

    #[test]
    fn the_query_is_unsigned_signed_or_invalid() {
        let signer = UrlSigner::new(KEY).unwrap();
        let v = version("h", "small");
        let s = signer.sign(3, "small", &v);
        assert_eq!(signer.check(3, "small", ""), Signed::No);
        assert_eq!(signer.check(3, "small", "other=1"), Signed::No);
        assert_eq!(
            signer.check(3, "small", &format!("v={v}&s={s}")),
            Signed::Yes(v.clone())
        );
        assert_eq!(
            signer.check(3, "small", &format!("s={s}&x=1&v={v}")),
            Signed::Yes(v.clone()),
            "order does not matter"
        );
        for bad in [
            format!("v={v}"),
            format!("s={s}"),
            format!("v={v}&s="),
            format!("v=&s={s}"),
            format!("v={v}&s={}", "A".repeat(22)),
            format!("v={v}&s={}", "A".repeat(10_000)),
            format!("v={}&s={s}", "0".repeat(10_000)),
            format!("v={v}&s=%FF%FE"),
        ] {
            assert_eq!(signer.check(3, "small", &bad), Signed::Invalid, "{bad}");
        }
        assert_eq!(
            signer.check(4, "small", &format!("v={v}&s={s}")),
            Signed::Invalid
        );
    }

    #[test]
    fn versions_are_sixteen_hex_digits_of_the_outputs_identity() {
        let a = version("hash", "thumbnail@0.5000x0.5000");
        assert!(is_version(&a));
        assert_ne!(a, version("hash", "thumbnail@0.2500x0.5000"));
        assert_ne!(a, version("hasi", "thumbnail@0.5000x0.5000"));
        // The separator keeps (hash, variant) pairs apart.
        assert_ne!(version("ab", "c"), version("a", "bc"));
    }

    #[test]
    fn the_debug_form_hides_the_key() {
        let shown = format!("{:?}", UrlSigner::new(KEY).unwrap());
        assert!(!shown.contains("0123"), "{shown}");
    }
}
