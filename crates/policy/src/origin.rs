//! The origin gate (`public_api_allowed_origins`) and the CORS answer derived from it.
//!
//! Entries are parsed with the `url` crate (WHATWG URL parsing: IDNA hosts, default ports, case)
//! rather than by hand, and compared in their ASCII serialization (`https://app.example.com`,
//! default port dropped, host lowercased), so `HTTPS://App.Example.com:443` and
//! `https://app.example.com` are the same origin.

use std::fmt;

use url::Url;

use crate::PolicyError;

/// A validated http(s) origin in canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(String);

impl Origin {
    /// Parses an allowlist entry: http or https, a host, an optional port; no path (a lone `/`
    /// is tolerated, as it is what URL parsers report for none), query, fragment or credentials.
    ///
    /// # Errors
    /// [`PolicyError::InvalidOrigin`] saying what is wrong with the entry.
    pub fn parse(raw: &str) -> Result<Self, PolicyError> {
        let err = |message: &str| PolicyError::InvalidOrigin {
            entry: raw.to_owned(),
            message: message.to_owned(),
        };
        let url = Url::parse(raw).map_err(|e| err(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(err("the scheme must be http or https"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(err("a host is required"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(err("credentials are not allowed"));
        }
        // `Url` reports "/" for an absent path; anything longer was written by the operator.
        let after_host = raw.split_once("://").map_or("", |(_, rest)| rest);
        let written_path = after_host
            .find('/')
            .map_or("", |i| after_host.get(i..).unwrap_or(""));
        if url.path() != "/" || written_path.len() > 1 {
            return Err(err("an origin has no path"));
        }
        if url.query().is_some() || raw.contains('?') {
            return Err(err("an origin has no query"));
        }
        if url.fragment().is_some() || raw.contains('#') {
            return Err(err("an origin has no fragment"));
        }
        Ok(Self(url.origin().ascii_serialization()))
    }

    /// Parses a request's `Origin` header leniently: anything that is not an http(s) origin
    /// (including the literal `null`) is `None`, which no allowlist contains.
    #[must_use]
    pub fn from_header(raw: &str) -> Option<Self> {
        Self::parse(raw.trim()).ok()
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The project setting `public_api_allowed_origins`. Empty means the gate is off.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OriginAllowlist(Vec<Origin>);

impl OriginAllowlist {
    /// Parses the text form: entries one per line, or separated by commas or whitespace.
    ///
    /// ```
    /// use vellum_policy::OriginAllowlist;
    /// let list = OriginAllowlist::parse("https://a.example.com,\nHTTPS://B.example.com:443  http://c.test:8080").unwrap();
    /// assert_eq!(list.entries().iter().map(|o| o.as_str()).collect::<Vec<_>>(),
    ///     ["https://a.example.com", "https://b.example.com", "http://c.test:8080"]);
    /// assert!(OriginAllowlist::parse("https://a.example.com/app").is_err());
    /// ```
    ///
    /// # Errors
    /// The first invalid entry.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        Self::from_entries(
            text.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|e| !e.is_empty()),
        )
    }

    /// Parses a list of entries (the manifest's JSON array). Duplicates collapse.
    ///
    /// # Errors
    /// The first invalid entry.
    pub fn from_entries<'a>(
        entries: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, PolicyError> {
        let mut list: Vec<Origin> = Vec::new();
        for entry in entries {
            let origin = Origin::parse(entry.trim())?;
            if !list.contains(&origin) {
                list.push(origin);
            }
        }
        Ok(Self(list))
    }

    #[must_use]
    pub fn entries(&self) -> &[Origin] {
        &self.0
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a request's `Origin` header value is in the list.
    #[must_use]
    pub fn allows(&self, header: &str) -> bool {
        Origin::from_header(header).is_some_and(|o| self.0.contains(&o))
    }
}

/// What the request's bearer token turned out to be, as the gate needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BearerState {
    /// No `Authorization: Bearer` header.
    Absent,
    /// A known, unrevoked, unexpired key whose secret matched.
    ValidActive,
    /// Malformed, unknown, revoked or expired.
    Invalid,
}

/// Why the gate refused a request; `message()` is the exact body text of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateDenial {
    OriginNotAllowed,
    OriginRequired,
}

impl GateDenial {
    #[must_use]
    pub fn message(self) -> &'static str {
        match self {
            Self::OriginNotAllowed => "Origin not allowed.",
            Self::OriginRequired => "Origin required or API key.",
        }
    }
}

/// The origin gate, row by row of the spec's table (when the list is non-empty):
///
/// | request | outcome |
/// |---|---|
/// | `Origin` present and in the list | proceeds |
/// | `Origin` present and not in the list | `Origin not allowed.` |
/// | `Origin` absent, no valid active bearer key | `Origin required or API key.` |
/// | `Origin` absent, valid active bearer key | proceeds |
///
/// An empty list turns the gate off. Proceeding never bypasses grants.
///
/// # Errors
/// The [`GateDenial`] for the row that refuses the request.
pub fn origin_gate(
    list: &OriginAllowlist,
    origin_header: Option<&str>,
    bearer: BearerState,
) -> Result<(), GateDenial> {
    if list.is_empty() {
        return Ok(());
    }
    match (origin_header, bearer) {
        (Some(origin), _) if list.allows(origin) => Ok(()),
        (Some(_), _) => Err(GateDenial::OriginNotAllowed),
        (None, BearerState::ValidActive) => Ok(()),
        (None, BearerState::Absent | BearerState::Invalid) => Err(GateDenial::OriginRequired),
    }
}

/// The deployment's CORS origins, used when the project allowlist is empty (default: any).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CorsOrigins {
    #[default]
    Any,
    List(Vec<Origin>),
}

/// The `Access-Control-Allow-Origin` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowOrigin {
    /// `*`
    Any,
    /// Echo this origin (and vary on `Origin`).
    Echo(Origin),
}

/// CORS for `api/*`: with a non-empty project allowlist, exactly its origins (a request or
/// preflight from elsewhere gets no allow header); otherwise the deployment's origins.
#[must_use]
pub fn cors_allow_origin(
    list: &OriginAllowlist,
    deployment: &CorsOrigins,
    request_origin: Option<&str>,
) -> Option<AllowOrigin> {
    let origin = request_origin.and_then(Origin::from_header);
    if !list.is_empty() {
        return origin
            .filter(|o| list.entries().contains(o))
            .map(AllowOrigin::Echo);
    }
    match deployment {
        CorsOrigins::Any => Some(AllowOrigin::Any),
        CorsOrigins::List(allowed) => origin
            .filter(|o| allowed.contains(o))
            .map(AllowOrigin::Echo),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_validated_and_normalized() {
        let ok = [
            ("https://app.example.com", "https://app.example.com"),
            ("HTTPS://App.Example.COM", "https://app.example.com"),
            ("https://app.example.com:443", "https://app.example.com"),
            ("http://localhost:80", "http://localhost"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("https://app.example.com/", "https://app.example.com"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("https://[::1]:8443", "https://[::1]:8443"),
        ];
        for (raw, canonical) in ok {
            assert_eq!(Origin::parse(raw).unwrap().as_str(), canonical, "{raw}");
        }
        let bad = [
            "https://app.example.com/path",
            "https://app.example.com//",
            "https://app.example.com?x=1",
            "https://app.example.com#frag",
            "https://user:pw@app.example.com",
            "https://user@app.example.com",
            "ftp://app.example.com",
            "app.example.com",
            "https://",
            "null",
            "",
        ];
        for raw in bad {
            assert!(Origin::parse(raw).is_err(), "{raw} accepted");
        }
    }

    #[test]
    fn list_separators() {
        let list = OriginAllowlist::parse(
            " https://a.test\n\nhttps://b.test,https://c.test\thttps://a.test ",
        )
        .unwrap();
        assert_eq!(list.entries().len(), 3);
        assert!(OriginAllowlist::parse("").unwrap().is_empty());
        let err = OriginAllowlist::parse("https://a.test https://b.test/x").unwrap_err();
        assert!(err.to_string().contains("https://b.test/x"));
    }

    /// Every row of the spec's origin-gate table, plus the gate being off.
    #[test]
    fn gate_table() {
        let list = OriginAllowlist::parse("https://app.example.com").unwrap();
        let rows: &[(Option<&str>, BearerState, Result<(), GateDenial>)] = &[
            (Some("https://app.example.com"), BearerState::Absent, Ok(())),
            (
                Some("https://app.example.com:443"),
                BearerState::Absent,
                Ok(()),
            ),
            (
                Some("https://app.example.com"),
                BearerState::ValidActive,
                Ok(()),
            ),
            (
                Some("https://app.example.com"),
                BearerState::Invalid,
                Ok(()),
            ),
            (
                Some("https://evil.example.com"),
                BearerState::Absent,
                Err(GateDenial::OriginNotAllowed),
            ),
            (
                Some("https://evil.example.com"),
                BearerState::ValidActive,
                Err(GateDenial::OriginNotAllowed),
            ),
            (
                Some("null"),
                BearerState::Absent,
                Err(GateDenial::OriginNotAllowed),
            ),
            (None, BearerState::Absent, Err(GateDenial::OriginRequired)),
            (None, BearerState::Invalid, Err(GateDenial::OriginRequired)),
            (None, BearerState::ValidActive, Ok(())),
        ];
        for (origin, bearer, expected) in rows {
            assert_eq!(
                origin_gate(&list, *origin, *bearer),
                *expected,
                "{origin:?} {bearer:?}"
            );
        }
        let off = OriginAllowlist::default();
        for (origin, bearer, _) in rows {
            assert_eq!(origin_gate(&off, *origin, *bearer), Ok(()));
        }
        assert_eq!(
            GateDenial::OriginNotAllowed.message(),
            "Origin not allowed."
        );
        assert_eq!(
            GateDenial::OriginRequired.message(),
            "Origin required or API key."
        );
    }

    #[test]
    fn cors_answers() {
        let list = OriginAllowlist::parse("https://app.example.com").unwrap();
        let app = Origin::parse("https://app.example.com").unwrap();
        assert_eq!(
            cors_allow_origin(&list, &CorsOrigins::Any, Some("https://app.example.com")),
            Some(AllowOrigin::Echo(app.clone()))
        );
        assert_eq!(
            cors_allow_origin(&list, &CorsOrigins::Any, Some("https://evil.test")),
            None
        );
        assert_eq!(cors_allow_origin(&list, &CorsOrigins::Any, None), None);
        let empty = OriginAllowlist::default();
        assert_eq!(
            cors_allow_origin(&empty, &CorsOrigins::Any, Some("https://x.test")),
            Some(AllowOrigin::Any)
        );
        let deployment = CorsOrigins::List(vec![app.clone()]);
        assert_eq!(
            cors_allow_origin(&empty, &deployment, Some("https://app.example.com")),
            Some(AllowOrigin::Echo(app))
        );
        assert_eq!(
            cors_allow_origin(&empty, &deployment, Some("https://x.test")),
            None
        );
    }
}
