//! Fuzz target (proptest, stable toolchain) for the origin allowlist: `Origin::parse`,
//! `OriginAllowlist::parse` / `from_entries`, the origin gate and the CORS answer.
//!
//! On any input the parsers return `Ok` or a clean error, never panic. A parsed origin is in
//! canonical form: it re-parses to itself, as an entry and as a request header, and an allowlist
//! allows every origin it holds.
//!
//! Cases: 256 by default; `PROPTEST_CASES=100000 cargo test -p vellum-policy --test fuzz_origin
//! --release` for a long run (see docs/testing.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use proptest::sample::select;
use vellum_policy::{
    BearerState, CorsOrigins, Origin, OriginAllowlist, PolicyError, cors_allow_origin, origin_gate,
};

const SCHEMES: &[&str] = &[
    "https://",
    "http://",
    "HTTPS://",
    "HtTp://",
    "ftp://",
    "file://",
    "ws://",
    "https:",
    "https:/",
    "https:///",
    "//",
    "",
    "data:",
    "javascript:",
    "blob:https://",
];

const HOSTS: &[&str] = &[
    "app.example.com",
    "App.Example.COM",
    "localhost",
    "127.0.0.1",
    "0x7f.1",
    "2130706433",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[fe80::1%25eth0]",
    "[::1",
    "xn--bcher-kva.example",
    "bücher.example",
    "EXAMPLE.com.",
    "a..b",
    "-a.example",
    "a_b.example",
    "%41.example",
    "ex%00ample.com",
    "user:pw@host",
    "@host",
    "host@",
    "",
    " ",
    "exa mple.com",
    "\u{0}",
    "ﬀ.example",
    "ß.example",
    "例え.テスト",
    "xn--.example",
];

const PORTS: &[&str] = &[
    "",
    ":",
    ":0",
    ":80",
    ":443",
    ":8080",
    ":65535",
    ":65536",
    ":99999999999",
    ":-1",
    ":abc",
    ": 80",
];

const TAILS: &[&str] = &[
    "", "/", "//", "/path", "?", "?x=1", "#", "#frag", "/?", "\\", "/.", "/..", "%2F", " ", "\t",
    "\n",
];

/// Origin-shaped text: scheme, host, port and tail from the tables or arbitrary.
fn arb_entry() -> BoxedStrategy<String> {
    let part = |table: &'static [&'static str]| prop_oneof![6 => select(table).prop_map(str::to_owned), 1 => "\\PC{0,6}"];
    prop_oneof![
        8 => (part(SCHEMES), part(HOSTS), part(PORTS), part(TAILS))
            .prop_map(|(s, h, p, t)| format!("{s}{h}{p}{t}")),
        1 => "\\PC{0,40}",
        1 => ".{0,40}",
        1 => "[a-z:/.\\[\\]0-9@%#?]{0,30}",
    ]
    .boxed()
}

/// An allowlist text: entries joined by the separators the parser splits on, and others.
fn arb_list_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            arb_entry(),
            select(
                &[
                    ",", "\n", " ", "\t", ",\n", ";", "\r\n", "\u{a0}", "\u{2028}",
                ][..],
            ),
        ),
        0..6,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .map(|(e, sep)| format!("{e}{sep}"))
            .collect()
    })
}

fn arb_bearer() -> impl Strategy<Value = BearerState> {
    select(
        &[
            BearerState::Absent,
            BearerState::ValidActive,
            BearerState::Invalid,
        ][..],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn origins_parse_cleanly_and_canonically(raw in arb_entry()) {
        match Origin::parse(&raw) {
            Ok(origin) => {
                let canonical = origin.as_str();
                prop_assert!(
                    canonical.starts_with("http://") || canonical.starts_with("https://"),
                    "{:?} -> {:?}", raw, canonical
                );
                // Canonical form: re-parsing gives the same origin, as an entry and as a header.
                let again = Origin::parse(canonical);
                prop_assert_eq!(again.as_ref(), Ok(&origin), "{:?} -> {:?}", raw, canonical);
                let header = Origin::from_header(canonical);
                prop_assert_eq!(header.as_ref(), Some(&origin));
                prop_assert_eq!(origin.to_string(), canonical);
                // No path, query, fragment or credentials survive.
                let rest = &canonical[canonical.find("://").unwrap() + 3..];
                prop_assert!(!rest.contains(['/', '?', '#', '@']), "{:?} -> {:?}", raw, canonical);
            }
            Err(PolicyError::InvalidOrigin { entry, message }) => {
                prop_assert_eq!(&entry, &raw);
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other:?}"),
        }
        // The lenient header form never panics either.
        let _ = Origin::from_header(&raw);
    }

    #[test]
    fn allowlists_parse_cleanly_and_allow_their_entries(
        text in arb_list_text(),
        header in prop::option::of(arb_entry()),
        bearer in arb_bearer(),
    ) {
        match OriginAllowlist::parse(&text) {
            Ok(list) => {
                // Entries are canonical and distinct, and each one is allowed.
                for (i, origin) in list.entries().iter().enumerate() {
                    prop_assert!(list.allows(origin.as_str()), "{} not allowed", origin);
                    prop_assert!(!list.entries()[..i].contains(origin), "duplicate {}", origin);
                    prop_assert_eq!(
                        origin_gate(&list, Some(origin.as_str()), bearer),
                        Ok(())
                    );
                }
                // The canonical text form parses back to the same list.
                let joined: Vec<&str> = list.entries().iter().map(Origin::as_str).collect();
                let reparsed = OriginAllowlist::parse(&joined.join("\n"));
                prop_assert_eq!(reparsed.as_ref(), Ok(&list));
                let from_entries = OriginAllowlist::from_entries(joined.iter().copied());
                prop_assert_eq!(from_entries.as_ref(), Ok(&list));
                // The gate and CORS answer any header without panicking, and agree.
                let gate = origin_gate(&list, header.as_deref(), bearer);
                let cors = cors_allow_origin(&list, &CorsOrigins::Any, header.as_deref());
                if !list.is_empty() && header.is_some() {
                    prop_assert_eq!(gate.is_ok(), cors.is_some(), "{:?} {:?}", header, list);
                }
                let deployment = CorsOrigins::List(list.entries().to_vec());
                let _ = cors_allow_origin(&OriginAllowlist::default(), &deployment, header.as_deref());
            }
            Err(PolicyError::InvalidOrigin { entry, message }) => {
                prop_assert!(text.contains(entry.trim()), "{:?} not in {:?}", entry, text);
                prop_assert!(!message.is_empty());
            }
            Err(other) => prop_assert!(false, "unexpected error kind: {other:?}"),
        }
    }
}
