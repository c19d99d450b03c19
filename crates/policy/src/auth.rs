//! Authentication in the spec's order: origin gate, then the key itself, then the key's IP
//! allowlist. Role grants come after, per operation.

use time::OffsetDateTime;

use crate::{
    ApiKeySecret, BearerState, ClientAddr, GateDenial, KeyCheck, KeyRecord, OriginAllowlist,
    origin_gate,
};

/// What the HTTP layer knows about a request before any decision.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The `Origin` header, if any.
    pub origin: Option<&'a str>,
    /// The token after `Authorization: Bearer`, if any.
    pub bearer: Option<&'a str>,
    /// Where the request comes from: the peer, or behind a trusted proxy the address it forwarded
    /// ([`crate::client_addr`]). [`ClientAddr::Unknown`] when the connection has no peer address
    /// or the proxy forwarded something that is not an address; only a key without an IP
    /// allowlist accepts it.
    pub client: ClientAddr,
    pub now: OffsetDateTime,
}

impl RequestFacts<'_> {
    /// The key id to look up, when the bearer token is a well-formed secret.
    #[must_use]
    pub fn key_id(&self) -> Option<crate::KeyId> {
        self.bearer
            .and_then(|b| ApiKeySecret::parse(b).ok())
            .map(|s| s.key_id())
    }
}

/// Who the request acts as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Authenticated<'a> {
    /// No bearer key: the `public` role.
    Anonymous,
    /// A valid key: its role.
    Key(&'a KeyRecord),
}

impl Authenticated<'_> {
    /// The role the request acts under.
    #[must_use]
    pub fn role_name(&self) -> &str {
        match self {
            Self::Anonymous => "public",
            Self::Key(record) => &record.role,
        }
    }
}

/// Why a request is refused before any grant is consulted. [`AuthRejection::message`] is the
/// exact body text; `is_unauthenticated` separates 401 (the key) from 403 (everything else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRejection {
    Gate(GateDenial),
    InvalidKey,
    IpNotAllowed,
}

impl AuthRejection {
    #[must_use]
    pub fn message(self) -> &'static str {
        match self {
            Self::Gate(denial) => denial.message(),
            Self::InvalidKey => "Invalid API key.",
            Self::IpNotAllowed => "IP address not allowed.",
        }
    }

    /// A bad key is "who are you?" (401); the others are "not from here" (403).
    #[must_use]
    pub fn is_unauthenticated(self) -> bool {
        self == Self::InvalidKey
    }
}

/// Authenticates a request. `record` is the stored key found by [`RequestFacts::key_id`] (None
/// when there was no bearer, it was malformed, or no key has that id).
///
/// A presented key that is malformed, unknown, revoked or expired never falls back to `public`:
/// with the gate on and no `Origin` it is "no valid key" (`Origin required or API key.`),
/// otherwise `Invalid API key.`.
///
/// # Errors
/// The first check that refuses the request, in the order origin gate, key, IP allowlist.
///
/// ```
/// use vellum_policy::*;
/// let gate = OriginAllowlist::parse("https://app.example.com").unwrap();
/// let facts = RequestFacts { origin: None, bearer: None, client: ClientAddr::Unknown, now: time::OffsetDateTime::UNIX_EPOCH };
/// assert_eq!(authenticate(&gate, &facts, None).unwrap_err().message(), "Origin required or API key.");
/// ```
pub fn authenticate<'a>(
    gate: &OriginAllowlist,
    facts: &RequestFacts<'_>,
    record: Option<&'a KeyRecord>,
) -> Result<Authenticated<'a>, AuthRejection> {
    let valid = facts.bearer.map(|raw| {
        ApiKeySecret::parse(raw)
            .ok()
            .zip(record)
            .filter(|(secret, rec)| rec.check(secret, facts.now) == KeyCheck::Valid)
            .map(|(_, rec)| rec)
    });
    let bearer = match valid {
        None => BearerState::Absent,
        Some(Some(_)) => BearerState::ValidActive,
        Some(None) => BearerState::Invalid,
    };
    origin_gate(gate, facts.origin, bearer).map_err(AuthRejection::Gate)?;
    match valid {
        None => Ok(Authenticated::Anonymous),
        Some(None) => Err(AuthRejection::InvalidKey),
        Some(Some(rec)) => {
            if rec.ip_allowlist.admits(facts.client) {
                Ok(Authenticated::Key(rec))
            } else {
                Err(AuthRejection::IpNotAllowed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use crate::IpAllowlist;

    const SECRET: &str = "ek_0123456789abcdef0123456789abcdef";

    fn record(revoked: bool, ips: &[&str]) -> KeyRecord {
        let s = ApiKeySecret::parse(SECRET).unwrap();
        KeyRecord {
            key_id: s.key_id(),
            digest: s.digest(),
            role: "editor".into(),
            ip_allowlist: IpAllowlist::parse(ips.iter().copied()).unwrap(),
            expires_at: Some(datetime!(2030-01-01 0:00 UTC)),
            revoked,
        }
    }

    fn facts<'a>(origin: Option<&'a str>, bearer: Option<&'a str>, ip: &str) -> RequestFacts<'a> {
        RequestFacts {
            origin,
            bearer,
            client: ClientAddr::Known(ip.parse().unwrap()),
            now: datetime!(2026-11-23 0:00 UTC),
        }
    }

    #[test]
    fn order_gate_then_key_then_ip() {
        let on = OriginAllowlist::parse("https://app.example.com").unwrap();
        let off = OriginAllowlist::default();
        let good = record(false, &["127.0.0.1/32"]);
        let revoked = record(true, &[]);
        let app = Some("https://app.example.com");
        let evil = Some("https://evil.test");
        let wrong = "ek_0123456789abZZZZZZZZZZZZZZZZZZZZ";
        use AuthRejection::*;
        type Row<'a> = (
            &'a OriginAllowlist,
            RequestFacts<'a>,
            Option<&'a KeyRecord>,
            Result<&'a str, AuthRejection>,
        );
        let rows: Vec<Row<'_>> = vec![
            (&off, facts(None, None, "1.2.3.4"), None, Ok("public")),
            (
                &off,
                facts(None, Some(SECRET), "127.0.0.1"),
                Some(&good),
                Ok("editor"),
            ),
            (
                &off,
                facts(None, Some(SECRET), "1.2.3.4"),
                Some(&good),
                Err(IpNotAllowed),
            ),
            (
                &off,
                facts(None, Some(wrong), "127.0.0.1"),
                Some(&good),
                Err(InvalidKey),
            ),
            (
                &off,
                facts(None, Some("garbage"), "127.0.0.1"),
                None,
                Err(InvalidKey),
            ),
            (
                &off,
                facts(None, Some(SECRET), "127.0.0.1"),
                Some(&revoked),
                Err(InvalidKey),
            ),
            (
                &off,
                facts(None, Some(SECRET), "127.0.0.1"),
                None,
                Err(InvalidKey),
            ),
            (&on, facts(app, None, "1.2.3.4"), None, Ok("public")),
            (
                &on,
                facts(evil, None, "1.2.3.4"),
                None,
                Err(Gate(GateDenial::OriginNotAllowed)),
            ),
            (
                &on,
                facts(evil, Some(SECRET), "127.0.0.1"),
                Some(&good),
                Err(Gate(GateDenial::OriginNotAllowed)),
            ),
            (
                &on,
                facts(None, None, "1.2.3.4"),
                None,
                Err(Gate(GateDenial::OriginRequired)),
            ),
            (
                &on,
                facts(None, Some(SECRET), "127.0.0.1"),
                Some(&good),
                Ok("editor"),
            ),
            (
                &on,
                facts(None, Some(SECRET), "1.2.3.4"),
                Some(&good),
                Err(IpNotAllowed),
            ),
            (
                &on,
                facts(None, Some(SECRET), "127.0.0.1"),
                Some(&revoked),
                Err(Gate(GateDenial::OriginRequired)),
            ),
            (
                &on,
                facts(app, Some(SECRET), "127.0.0.1"),
                Some(&revoked),
                Err(InvalidKey),
            ),
        ];
        for (i, (gate, f, rec, expected)) in rows.into_iter().enumerate() {
            let got = authenticate(gate, &f, rec).map(|a| a.role_name().to_owned());
            assert_eq!(got.as_deref().map_err(|e| *e), expected, "row {i}");
        }
        // An unknown client passes only a key without an allowlist.
        let unknown = RequestFacts {
            client: ClientAddr::Unknown,
            ..facts(None, Some(SECRET), "127.0.0.1")
        };
        assert_eq!(authenticate(&off, &unknown, Some(&good)), Err(IpNotAllowed));
        let anywhere = record(false, &[]);
        assert_eq!(
            authenticate(&off, &unknown, Some(&anywhere)),
            Ok(Authenticated::Key(&anywhere))
        );
        assert_eq!(InvalidKey.message(), "Invalid API key.");
        assert!(InvalidKey.is_unauthenticated());
        assert_eq!(IpNotAllowed.message(), "IP address not allowed.");
        assert!(!IpNotAllowed.is_unauthenticated());
        assert_eq!(
            facts(None, Some(SECRET), "::1").key_id().unwrap().as_str(),
            "0123456789ab"
        );
        assert_eq!(facts(None, Some("nope"), "::1").key_id(), None);
    }

    #[test]
    fn a_mistyped_generated_key_is_refused_with_nothing_to_look_up() {
        let secret = ApiKeySecret::generate().unwrap();
        let good = secret.expose();
        let rec = KeyRecord {
            key_id: secret.key_id(),
            digest: secret.digest(),
            ..record(false, &[])
        };
        let off = OriginAllowlist::default();
        let ok = facts(None, Some(good), "127.0.0.1");
        assert_eq!(ok.key_id(), Some(secret.key_id()));
        assert_eq!(
            authenticate(&off, &ok, Some(&rec)),
            Ok(Authenticated::Key(&rec))
        );
        // One character changed after the key id: the id still names the stored key, yet the
        // checksum refuses it before the caller could look it up.
        let last = good.chars().last().unwrap();
        let typo = format!(
            "{}{}",
            &good[..good.len() - 1],
            if last == 'x' { 'y' } else { 'x' }
        );
        let mistyped = facts(None, Some(&typo), "127.0.0.1");
        assert_eq!(mistyped.key_id(), None, "no database lookup for {typo}");
        assert_eq!(
            authenticate(&off, &mistyped, None),
            Err(AuthRejection::InvalidKey)
        );
        assert_eq!(
            authenticate(&off, &mistyped, Some(&rec)),
            Err(AuthRejection::InvalidKey)
        );
        // With the origin gate on and no Origin, a mistyped key is "no valid key", as any other.
        let on = OriginAllowlist::parse("https://app.example.com").unwrap();
        assert_eq!(
            authenticate(&on, &mistyped, None),
            Err(AuthRejection::Gate(GateDenial::OriginRequired))
        );
    }
}
