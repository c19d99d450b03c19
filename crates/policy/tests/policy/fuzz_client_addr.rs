//! Fuzz target (proptest, stable toolchain) for `client_addr`: which address a request comes from
//! behind trusted proxies, read from `X-Forwarded-For` (security review 2026-11, A5).
//!
//! Header values are built the way they reach the server: whatever the client wrote (arbitrary
//! text, commas, addresses it would like to be, trusted addresses, garbage) on the left, then the
//! entry the nearest untrusted hop appended (an address in any form a proxy writes: bare, with a
//! port, bracketed, with a zone, upper case; or not an address: `unknown`, `_hidden`, empty), then
//! entries of trusted proxies in any form, spread over one or more header lines with random
//! whitespace. The client is always that appended entry, `Unknown` when it is not an address:
//! nothing written to its left ever counts. A peer that is not trusted is the client whatever the
//! header holds, a header of trusted entries only leaves the peer, and arbitrary text never
//! panics.
//!
//! Cases: 256 by default; `PROPTEST_CASES=100000 cargo test -p vellum-policy --test
//! fuzz_client_addr --release` for a long run (see docs/testing.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use proptest::prelude::*;
use proptest::sample::select;
use vellum_policy::{ClientAddr, client_addr};

const TRUSTED: &[&str] = &["127.0.0.1/32", "192.168.0.0/16", "fd00::/8"];

fn trusted_nets() -> Vec<IpNet> {
    TRUSTED.iter().map(|n| n.parse().unwrap()).collect()
}

/// The trusted set as the server reads it: IPv4-mapped IPv6 counts as its IPv4 address.
fn is_trusted(ip: IpAddr) -> bool {
    trusted_nets()
        .iter()
        .any(|net| net.contains(&ip) || net.contains(&ip.to_canonical()))
}

/// Texts that are not an address in any form the server accepts, however close they come.
const NOT_ADDRESSES: &[&str] = &[
    "unknown",
    "UNKNOWN",
    "_hidden",
    "_secret-1",
    "",
    "8.8.8.8:",
    "8.8.8.8:65536",
    "8.8.8.8:+80",
    "8.8.8.8:http",
    "8.8.8.8:80:80",
    "[::1",
    "::1]",
    "[::1]80",
    "[::1]:",
    "[::1]:99999",
    "[1.2.3.4]",
    "[1.2.3.4]:80",
    "fe80::1%",
    "[fe80::1%]",
    "1.2.3.4%eth0",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "010.1.2.3",
    "::g",
    ":::1",
    "8.8. 8.8",
    "localhost",
    "\u{fffd}",
    "\u{fffd}8.8.8.8",
    "for=8.8.8.8",
    "\"8.8.8.8\"",
];

const WHITESPACE: &[&str] = &["", "", " ", "  ", "\t", " \t "];

/// What an entry should count as.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Addr(IpAddr),
    NotAnAddress,
}

impl Expect {
    fn client(self) -> ClientAddr {
        match self {
            Self::Addr(ip) => ClientAddr::Known(ip),
            Self::NotAnAddress => ClientAddr::Unknown,
        }
    }
}

/// `ip` written the way some proxy writes it.
fn written(ip: IpAddr) -> BoxedStrategy<String> {
    let port = any::<u16>();
    let zone = "[a-zA-Z0-9]{1,8}";
    match ip {
        IpAddr::V4(v4) => prop_oneof![
            Just(v4.to_string()),
            port.prop_map(move |p| format!("{v4}:{p}"))
        ]
        .boxed(),
        IpAddr::V6(v6) => {
            let base = prop_oneof![Just(v6.to_string()), Just(v6.to_string().to_uppercase())];
            (base, port, zone, 0..6u8)
                .prop_map(|(a, p, z, form)| match form {
                    0 => a,
                    1 => format!("[{a}]"),
                    2 => format!("[{a}]:{p}"),
                    3 => format!("{a}%{z}"),
                    4 => format!("[{a}%{z}]"),
                    _ => format!("[{a}%{z}]:{p}"),
                })
                .boxed()
        }
    }
}

fn arb_trusted_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        Just(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        Just(IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped())),
        any::<u16>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(0xc0a8_0000 | u32::from(n)))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from((0xfd << 120) | (n >> 8)))),
        any::<u16>()
            .prop_map(|n| IpAddr::V6(Ipv4Addr::from(0xc0a8_0000 | u32::from(n)).to_ipv6_mapped())),
    ]
}

fn arb_untrusted_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
        any::<u32>().prop_map(|n| IpAddr::V6(Ipv4Addr::from(n).to_ipv6_mapped())),
        Just("10.1.2.3".parse().unwrap()),
        Just("8.8.8.8".parse().unwrap()),
        Just("2001:db8::1".parse().unwrap()),
        Just("fe80::1".parse().unwrap()),
    ]
    .prop_filter("not a trusted proxy", |ip| !is_trusted(*ip))
}

fn arb_trusted_entry() -> impl Strategy<Value = String> {
    arb_trusted_ip().prop_flat_map(written)
}

/// What the nearest untrusted hop appended: an address in any form, or no address at all.
fn arb_appended_entry() -> impl Strategy<Value = (String, Expect)> {
    prop_oneof![
        3 => arb_untrusted_ip()
            .prop_flat_map(|ip| (written(ip), Just(Expect::Addr(ip)))),
        1 => select(NOT_ADDRESSES).prop_map(|s| (s.to_owned(), Expect::NotAnAddress)),
        1 => "[g-z_][a-z0-9_-]{0,10}".prop_map(|s| (s, Expect::NotAnAddress)),
    ]
}

/// Whatever a client may write: anything at all, including commas.
fn arb_client_text() -> impl Strategy<Value = String> {
    prop_oneof![
        arb_trusted_entry(),
        arb_appended_entry().prop_map(|(s, _)| s),
        "\\PC{0,20}",
        "[0-9a-fA-F:.,\\[\\]%_ \t]{0,24}",
    ]
}

/// `entries` as header lines: each padded with whitespace, joined with commas, and broken into
/// several lines where `breaks` says so. No entries: no header at all.
fn as_lines(entries: &[String], pads: &[(&str, &str)], breaks: &[bool]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            if breaks.get(i - 1).copied().unwrap_or(false) {
                lines.push(std::mem::take(&mut line));
            } else {
                line.push(',');
            }
        }
        let (before, after) = pads[i % pads.len()];
        line.push_str(before);
        line.push_str(entry);
        line.push_str(after);
    }
    if !entries.is_empty() {
        lines.push(line);
    }
    lines
}

fn arb_pads() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
    prop::collection::vec((select(WHITESPACE), select(WHITESPACE)), 1..8)
}

fn arb_breaks() -> impl Strategy<Value = Vec<bool>> {
    prop::collection::vec(prop::bool::weighted(0.2), 16)
}

fn run(peer: IpAddr, lines: &[String]) -> ClientAddr {
    client_addr(peer, &trusted_nets(), lines.iter().map(String::as_str))
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn the_nearest_untrusted_entry_is_the_client_whatever_is_left_of_it(
        peer in arb_trusted_ip(),
        left in prop::collection::vec(arb_client_text(), 0..6),
        (appended, expect) in arb_appended_entry(),
        right in prop::collection::vec(arb_trusted_entry(), 0..4),
        pads in arb_pads(),
        breaks in arb_breaks(),
    ) {
        let mut entries = left.clone();
        entries.push(appended.clone());
        entries.extend(right);
        let lines = as_lines(&entries, &pads, &breaks);
        let got = run(peer, &lines);
        prop_assert_eq!(got, expect.client(), "lines {:?}", lines);
        // Spelled out: nothing the client wrote to the left is ever chosen instead.
        if let ClientAddr::Known(ip) = got {
            prop_assert_eq!(Expect::Addr(ip), expect, "lines {:?}", lines);
        }
    }

    #[test]
    fn only_trusted_entries_leave_the_peer(
        peer in arb_trusted_ip(),
        entries in prop::collection::vec(arb_trusted_entry(), 0..6),
        pads in arb_pads(),
        breaks in arb_breaks(),
    ) {
        let lines = as_lines(&entries, &pads, &breaks);
        prop_assert_eq!(run(peer, &lines), ClientAddr::Known(peer), "lines {:?}", lines);
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards(
        peer in arb_untrusted_ip(),
        lines in prop::collection::vec("\\PC{0,40}", 0..4),
    ) {
        prop_assert_eq!(run(peer, &lines), ClientAddr::Known(peer));
    }

    #[test]
    fn arbitrary_headers_never_panic_and_never_name_a_trusted_proxy(
        peer in prop_oneof![arb_trusted_ip(), arb_untrusted_ip()],
        lines in prop::collection::vec(prop_oneof!["\\PC{0,40}", "[0-9a-fA-F:.,\\[\\]% ]{0,40}"], 0..4),
    ) {
        match run(peer, &lines) {
            ClientAddr::Known(ip) if ip != peer => {
                prop_assert!(!is_trusted(ip), "{} from {:?}", ip, lines);
            }
            ClientAddr::Known(_) | ClientAddr::Unknown => {}
        }
    }
}
