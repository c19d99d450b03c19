//! API keys: secrets, their stored form, verification and IP allowlists.
//!
//! A secret is `ek_` followed by at least 32 URL-safe characters. Generated ones are checksummed,
//! the scheme GitHub uses for its tokens: `ek_`, 32 random base62 characters (`0-9A-Za-z`, about
//! 190 bits), then the CRC32 (IEEE) of those 32 characters as 6 base62 digits, most significant
//! first, zero-padded. So a secret scanner can find them with [`SCANNER_REGEX`], and a mistyped
//! one is refused by [`ApiKeySecret::parse`] before any database lookup. A body of exactly 38
//! base62 characters is taken to be checksummed: with a wrong checksum it is refused, whether
//! presented as a bearer key (`Invalid API key.`) or supplied for a new key (so no stored key can
//! have that shape and be unreachable). Any other shape (e.g. 32 hex digits, or the 43 base64url
//! characters earlier versions generated) is a supplied or legacy secret and works as before.
//!
//! The database never holds the secret:
//! - a [`KeyId`], the first 12 characters after `ek_`, is stored in clear in a unique index, so a
//!   request finds its key with one indexed lookup, never a scan;
//! - a [`KeyDigest`], SHA-256 of the whole secret, is compared in constant time (`subtle`).
//!
//! SHA-256 rather than argon2 or bcrypt: those exist to slow down guessing of low-entropy
//! passwords. A secret of 190 random bits cannot be guessed, so a slow hash would only add tens of
//! milliseconds and a denial-of-service lever to every API request.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

use crate::{ClientAddr, PolicyError};

const PREFIX: &str = "ek_";
const MIN_BODY: usize = 32;
const MAX_BODY: usize = 256;
const ID_LEN: usize = 12;
/// Random base62 characters in a generated secret.
const RANDOM_LEN: usize = 32;
/// Base62 digits of the CRC32 that ends a generated secret (62^6 > 2^32).
const CHECK_LEN: usize = 6;

/// The pattern of generated secrets, published for secret scanners (GitHub secret scanning,
/// gitleaks, trufflehog): `ek_` and 38 base62 characters, the last 6 a checksum of the first 32.
pub const SCANNER_REGEX: &str = r"\bek_[0-9A-Za-z]{38}\b";

/// Base62 digit `d` (below 62) in the order `0-9A-Za-z`.
fn base62_digit(d: u8) -> char {
    char::from(match d {
        0..=9 => b'0' + d,
        10..=35 => b'A' + (d - 10),
        _ => b'a' + (d - 36),
    })
}

/// The checksum of a generated secret's random part: its CRC32 (IEEE) in `CHECK_LEN` base62
/// digits, most significant first.
fn checksum(random: &[u8]) -> String {
    let mut n = crc32fast::hash(random);
    let mut digits = [0u8; CHECK_LEN];
    for digit in digits.iter_mut().rev() {
        *digit = (n % 62) as u8;
        n /= 62;
    }
    digits.into_iter().map(base62_digit).collect()
}

/// Whether a body (after `ek_`) of the checksummed shape, 38 base62 characters, fails its
/// checksum: a mistyped key, refused without looking it up. Other shapes are never mistyped here.
fn fails_checksum(body: &str) -> bool {
    body.len() == RANDOM_LEN + CHECK_LEN
        && body.bytes().all(|b| b.is_ascii_alphanumeric())
        && body
            .split_at_checked(RANDOM_LEN)
            .is_some_and(|(random, check)| checksum(random.as_bytes()) != check)
}

/// A key secret as presented or generated. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// # Errors
    /// When the secret lacks the `ek_` prefix, is shorter than 32 characters after it, longer
    /// than 256, or uses characters outside URL-safe base64 (`A-Z a-z 0-9 - _`), which hex is a
    /// subset of; or when it has the generated shape (38 base62 characters after `ek_`) and its
    /// checksum does not match: a mistyped key.
    pub fn parse(raw: &str) -> Result<Self, PolicyError> {
        let body = raw
            .strip_prefix(PREFIX)
            .ok_or(PolicyError::InvalidSecret("it must start with ek_"))?;
        if body.len() < MIN_BODY {
            return Err(PolicyError::InvalidSecret(
                "it needs at least 32 characters after ek_",
            ));
        }
        if body.len() > MAX_BODY {
            return Err(PolicyError::InvalidSecret(
                "it is longer than 256 characters",
            ));
        }
        if !body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(PolicyError::InvalidSecret(
                "use URL-safe base64 or hex characters only",
            ));
        }
        if fails_checksum(body) {
            return Err(PolicyError::InvalidSecret(
                "38 base62 characters after ek_ is the shape of a generated key, and its last 6 \
                 are not the checksum of the 32 before them: the key is mistyped (a secret of your \
                 own needs another length)",
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    /// A fresh checksummed secret from the operating system's random source: `ek_`, 32 random
    /// base62 characters, their 6-character checksum.
    ///
    /// # Errors
    /// When the OS random source fails (then no key must be created).
    pub fn generate() -> Result<Self, PolicyError> {
        let mut random = String::with_capacity(RANDOM_LEN);
        let mut pool = [0u8; 64];
        while random.len() < RANDOM_LEN {
            getrandom::fill(&mut pool)
                .map_err(|_| PolicyError::InvalidSecret("the OS random source failed"))?;
            // Bytes of 248 (4 × 62) and above are dropped, so every digit is equally likely.
            let wanted = RANDOM_LEN - random.len();
            random.extend(
                pool.iter()
                    .filter(|&&b| b < 248)
                    .map(|&b| base62_digit(b % 62))
                    .take(wanted),
            );
        }
        let check = checksum(random.as_bytes());
        Ok(Self(format!("{PREFIX}{random}{check}")))
    }

    /// The secret itself, to show once on creation.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The public lookup identifier.
    #[must_use]
    pub fn key_id(&self) -> KeyId {
        KeyId(
            self.0
                .get(PREFIX.len()..PREFIX.len() + ID_LEN)
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// The stored digest.
    #[must_use]
    pub fn digest(&self) -> KeyDigest {
        KeyDigest(Sha256::digest(self.0.as_bytes()).into())
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ek_…****")
    }
}

impl fmt::Display for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ek_…****")
    }
}

/// The indexed, non-secret identifier of a key (12 characters after `ek_`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A stored identifier, as read back from the database.
    #[must_use]
    pub fn from_stored(raw: &str) -> Self {
        Self(raw.to_owned())
    }
}

/// SHA-256 of a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyDigest([u8; 32]);

impl KeyDigest {
    #[must_use]
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// # Errors
    /// When `raw` is not 64 hex digits.
    pub fn from_hex(raw: &str) -> Result<Self, PolicyError> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(raw, &mut out)
            .map_err(|_| PolicyError::InvalidSecret("stored digest is not 64 hex digits"))?;
        Ok(Self(out))
    }

    fn matches(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KeyDigest({}…)",
            self.to_hex().get(..8).unwrap_or_default()
        )
    }
}

/// IPs and CIDR ranges a key may be used from (`ipnet`). Empty means any address.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IpAllowlist(Vec<IpNet>);

impl IpAllowlist {
    /// Parses entries such as `127.0.0.1`, `10.0.0.0/8`, `::1/128`.
    ///
    /// # Errors
    /// The first entry that is neither an address nor a CIDR range.
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, PolicyError> {
        let mut list = Vec::new();
        for entry in entries {
            let trimmed = entry.trim();
            let net = trimmed
                .parse::<IpNet>()
                .or_else(|_| trimmed.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| PolicyError::InvalidIp {
                    entry: entry.to_owned(),
                })?;
            list.push(net.trunc());
        }
        Ok(Self(list))
    }

    #[must_use]
    pub fn entries(&self) -> Vec<String> {
        self.0.iter().map(ToString::to_string).collect()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` may use the key. IPv4-mapped IPv6 peers (`::ffff:10.0.0.1`) count as IPv4.
    #[must_use]
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.is_empty() || self.0.iter().any(|net| net.contains(&ip))
    }

    /// Whether a request from `client` may use the key. An unknown client (no peer address, or a
    /// proxy forwarded something that is not an address) is admitted only by an empty list: a
    /// list of addresses cannot tell whether an unknown one is among them, and guessing would let
    /// a client choose its address (security review 2026-11, A5).
    #[must_use]
    pub fn admits(&self, client: ClientAddr) -> bool {
        match client {
            ClientAddr::Known(ip) => self.allows(ip),
            ClientAddr::Unknown => self.is_empty(),
        }
    }
}

/// A stored key as the policy needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRecord {
    pub key_id: KeyId,
    pub digest: KeyDigest,
    /// The name of the role the key acts under.
    pub role: String,
    pub ip_allowlist: IpAllowlist,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked: bool,
}

/// The outcome of checking a presented secret against a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    Valid,
    WrongSecret,
    Revoked,
    Expired,
}

impl KeyRecord {
    /// Constant-time digest comparison first, then revocation and expiry (an `expires_at` at or
    /// before `now` no longer authenticates).
    #[must_use]
    pub fn check(&self, secret: &ApiKeySecret, now: OffsetDateTime) -> KeyCheck {
        if secret.key_id() != self.key_id || !self.digest.matches(&secret.digest()) {
            KeyCheck::WrongSecret
        } else if self.revoked {
            KeyCheck::Revoked
        } else if self.expires_at.is_some_and(|t| t <= now) {
            KeyCheck::Expired
        } else {
            KeyCheck::Valid
        }
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn secrets_parse_and_generate() {
        let fixed = "ek_0123456789abcdef0123456789abcdef";
        let s = ApiKeySecret::parse(fixed).unwrap();
        assert_eq!(s.key_id().as_str(), "0123456789ab");
        assert_eq!(format!("{s:?}"), "ek_…****");
        assert_eq!(s.to_string(), "ek_…****");
        for bad in [
            "",
            "0123456789abcdef0123456789abcdef",
            "ek_short",
            "ek_0123456789abcdef0123456789abcde!",
            "EK_0123456789abcdef0123456789abcdef",
        ] {
            assert!(ApiKeySecret::parse(bad).is_err(), "{bad}");
        }
        assert!(ApiKeySecret::parse(&format!("ek_{}", "a".repeat(257))).is_err());
        let g = ApiKeySecret::generate().unwrap();
        assert_eq!(g.expose().len(), 3 + 38);
        assert!(ApiKeySecret::parse(g.expose()).is_ok());
        assert_ne!(g, ApiKeySecret::generate().unwrap());
    }

    /// The published regex and the checksum, from an independent reading of the scheme.
    fn is_checksummed(scanner: &regex::Regex, secret: &str) -> bool {
        let found = scanner.find(secret).map(|m| m.as_str());
        let body = &secret[3..];
        let mut value = 0u64;
        for c in body[32..].bytes() {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'A'..=b'Z' => c - b'A' + 10,
                _ => c - b'a' + 36,
            };
            value = value * 62 + u64::from(d);
        }
        let crc = u64::from(crc32fast::hash(&body.as_bytes()[..32]));
        found == Some(secret) && value == crc
    }

    #[test]
    fn generated_secrets_are_checksummed_and_match_the_published_regex() {
        let scanner = regex::Regex::new(SCANNER_REGEX).unwrap();
        for _ in 0..200 {
            let g = ApiKeySecret::generate().unwrap();
            assert!(is_checksummed(&scanner, g.expose()), "{}", g.expose());
            assert!(g.expose()[3..].bytes().all(|b| b.is_ascii_alphanumeric()));
            // Found inside other text too, but not as part of a longer token.
            assert!(scanner.is_match(&format!("VELLUM_KEY=\"{}\"\n", g.expose())));
            assert!(!scanner.is_match(&format!("{}x", g.expose())));
        }
        // Known values (computed with Python's zlib.crc32) pin the scheme for other implementers.
        for (random, check) in [
            ("00000000000000000000000000000000", "2wjyrI"),
            ("0123456789abcdef0123456789abcdef", "2BVjKA"),
            ("ZzZzZzZzZzZzZzZzZzZzZzZzZzZzZzZz", "49odQM"),
        ] {
            assert_eq!(checksum(random.as_bytes()), check);
            assert!(is_checksummed(&scanner, &format!("ek_{random}{check}")));
            assert!(ApiKeySecret::parse(&format!("ek_{random}{check}")).is_ok());
        }
    }

    #[test]
    fn a_one_character_typo_anywhere_is_caught() {
        let g = ApiKeySecret::generate().unwrap();
        let good = g.expose();
        let alphabet: Vec<char> = ('0'..='9').chain('A'..='Z').chain('a'..='z').collect();
        for at in 3..good.len() {
            for &c in &alphabet {
                let mut typo: Vec<char> = good.chars().collect();
                if typo[at] == c {
                    continue;
                }
                typo[at] = c;
                let typo: String = typo.into_iter().collect();
                let err = ApiKeySecret::parse(&typo).unwrap_err();
                assert!(err.to_string().contains("mistyped"), "{typo}: {err}");
            }
        }
        // Two neighbours swapped as well.
        let chars: Vec<char> = good.chars().collect();
        for at in 3..good.len() - 1 {
            if chars[at] != chars[at + 1] {
                let mut swapped = chars.clone();
                swapped.swap(at, at + 1);
                let swapped: String = swapped.into_iter().collect();
                assert!(ApiKeySecret::parse(&swapped).is_err(), "{swapped}");
            }
        }
    }

    #[test]
    fn legacy_and_supplied_shapes_keep_working_and_a_wrong_checksum_is_refused() {
        for legacy in [
            // The operator contract's example: 32 hex digits.
            "ek_0123456789abcdef0123456789abcdef",
            // What earlier versions generated: 43 base64url characters.
            "ek_q3K9-vX_0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
            // 38 characters, but not all base62: not the checksummed shape.
            "ek_0123456789abcdef0123456789abcdef-_0123",
            // 37 and 39 base62 characters.
            "ek_0123456789abcdef0123456789abcdef01234",
            "ek_0123456789abcdef0123456789abcdef012345X",
        ] {
            let s = ApiKeySecret::parse(legacy).unwrap_or_else(|e| panic!("{legacy}: {e}"));
            assert_eq!(s.key_id().as_str(), &legacy[3..15]);
        }
        // 38 base62 characters whose last 6 are not the checksum: refused at creation with a
        // message that says why.
        let wrong = "ek_0123456789abcdef0123456789abcdefABCDEF";
        assert_eq!(wrong.len(), 3 + 38);
        let err = ApiKeySecret::parse(wrong).unwrap_err();
        assert!(
            err.to_string().contains("checksum") && err.to_string().contains("mistyped"),
            "{err}"
        );
        // The same 32 characters with their checksum are accepted.
        let random = "0123456789abcdef0123456789abcdef";
        let right = format!("ek_{random}{}", checksum(random.as_bytes()));
        assert!(ApiKeySecret::parse(&right).is_ok());
    }

    #[test]
    fn digests_round_trip_and_never_show_the_secret() {
        let s = ApiKeySecret::parse("ek_0123456789abcdef0123456789abcdef").unwrap();
        let d = s.digest();
        assert_eq!(KeyDigest::from_hex(&d.to_hex()).unwrap(), d);
        assert!(!d.to_hex().contains("0123456789abcdef"));
        assert!(KeyDigest::from_hex("zz").is_err());
    }

    fn record(secret: &ApiKeySecret) -> KeyRecord {
        KeyRecord {
            key_id: secret.key_id(),
            digest: secret.digest(),
            role: "editor".into(),
            ip_allowlist: IpAllowlist::default(),
            expires_at: None,
            revoked: false,
        }
    }

    #[test]
    fn check_order_and_outcomes() {
        let now = datetime!(2026-11-23 10:00 UTC);
        let s = ApiKeySecret::parse("ek_0123456789abcdef0123456789abcdef").unwrap();
        let other = ApiKeySecret::parse("ek_0123456789abXXXXXXXXXXXXXXXXXXXX").unwrap();
        let r = record(&s);
        assert_eq!(r.check(&s, now), KeyCheck::Valid);
        assert_eq!(r.check(&other, now), KeyCheck::WrongSecret);
        assert_eq!(
            KeyRecord {
                revoked: true,
                ..r.clone()
            }
            .check(&s, now),
            KeyCheck::Revoked
        );
        assert_eq!(
            KeyRecord {
                expires_at: Some(now),
                ..r.clone()
            }
            .check(&s, now),
            KeyCheck::Expired
        );
        assert_eq!(
            KeyRecord {
                expires_at: Some(datetime!(2026-11-24 0:00 UTC)),
                ..r.clone()
            }
            .check(&s, now),
            KeyCheck::Valid
        );
        // A wrong secret never learns whether the key was revoked.
        assert_eq!(
            KeyRecord { revoked: true, ..r }.check(&other, now),
            KeyCheck::WrongSecret
        );
    }

    #[test]
    fn ip_allowlists() {
        let list =
            IpAllowlist::parse(["127.0.0.1/32", "::1/128", "10.1.0.0/16", "192.168.1.7"]).unwrap();
        let rows = [
            ("127.0.0.1", true),
            ("127.0.0.2", false),
            ("::1", true),
            ("::2", false),
            ("10.1.200.3", true),
            ("10.2.0.1", false),
            ("192.168.1.7", true),
            ("::ffff:10.1.0.9", true),
        ];
        for (ip, allowed) in rows {
            assert_eq!(list.allows(ip.parse().unwrap()), allowed, "{ip}");
        }
        assert!(IpAllowlist::default().allows("8.8.8.8".parse().unwrap()));
        assert!(IpAllowlist::parse(["10.0.0.0/33"]).is_err());
        assert!(IpAllowlist::parse(["localhost"]).is_err());
        assert_eq!(
            IpAllowlist::parse(["10.1.2.3/8"]).unwrap().entries(),
            ["10.0.0.0/8"]
        );
    }

    #[test]
    fn an_unknown_client_is_admitted_only_by_an_empty_list() {
        let list = IpAllowlist::parse(["10.0.0.0/8"]).unwrap();
        let known = |ip: &str| ClientAddr::Known(ip.parse().unwrap());
        assert!(list.admits(known("10.1.2.3")));
        assert!(list.admits(known("::ffff:10.1.2.3")));
        assert!(!list.admits(known("8.8.8.8")));
        assert!(!list.admits(ClientAddr::Unknown));
        assert!(IpAllowlist::default().admits(ClientAddr::Unknown));
        assert!(IpAllowlist::default().admits(known("8.8.8.8")));
    }
}
