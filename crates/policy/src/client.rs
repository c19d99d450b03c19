//! Which address a request comes from, when reverse proxies may sit in front of the server.
//!
//! A proxy appends the address it was connected from to `X-Forwarded-For`. Everything to the left
//! of that entry was written by whoever connected to the proxy, so it proves nothing. The client
//! is therefore found by walking the entries from the right, skipping only the proxies the
//! operator trusts, and stopping at the first entry that is not one of them, whatever it holds.
//!
//! That entry is normalised first, because proxies write the same address in several forms: a
//! port (`203.0.113.7:443`, `[2001:db8::1]:443`), brackets (`[2001:db8::1]`), an IPv6 zone
//! (`fe80::1%eth0`). If it still is not an address (`unknown`, an RFC 7239 obfuscated identifier
//! such as `_hidden`, an empty entry, garbage), the client is [`ClientAddr::Unknown`]. It is never
//! skipped: skipping it would make the entry to its left, which the client wrote, "the client",
//! and a key's IP allowlist would admit whatever address the client chose (security review
//! 2026-11, finding A5).
//!
//! RFC 7239 `Forwarded` (and `X-Real-IP`) are not read. One header is enough, and honouring two
//! would let a client put its choice in whichever header the proxy does not overwrite.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The address a request comes from, as far as the server can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientAddr {
    /// The client's address.
    Known(IpAddr),
    /// The client's address is not known: the nearest untrusted `X-Forwarded-For` entry is not an
    /// address, or the connection has no peer address at all. Only an empty IP allowlist admits
    /// it ([`crate::IpAllowlist::admits`]): a list of addresses cannot tell whether an unknown
    /// one is among them.
    Unknown,
}

impl ClientAddr {
    /// The address, when known.
    #[must_use]
    pub fn ip(self) -> Option<IpAddr> {
        match self {
            Self::Known(ip) => Some(ip),
            Self::Unknown => None,
        }
    }
}

impl From<IpAddr> for ClientAddr {
    fn from(ip: IpAddr) -> Self {
        Self::Known(ip)
    }
}

/// The client of a request that arrived from `peer` with the given `X-Forwarded-For` header
/// lines (every line, in order; each is split on commas).
///
/// - A `peer` that is not a `trusted` proxy is the client; `forwarded_for` is ignored, since
///   anyone can send that header.
/// - Otherwise the entries are walked from the right. Entries that are trusted proxies are
///   skipped; the first one that is not is the client, [`ClientAddr::Unknown`] if it is not an
///   address even after normalisation (see the module docs).
/// - If every entry is a trusted proxy, or there is none, the peer is the client.
///
/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) count as IPv4 when matched against `trusted`,
/// as they do in IP allowlists, so a dual-stack listener sees its IPv4 proxies as trusted.
///
/// ```
/// use vellum_policy::{ClientAddr, client_addr};
/// let proxy = ["127.0.0.1/32".parse().unwrap()];
/// let peer = "127.0.0.1".parse().unwrap();
/// let client = |xff| client_addr(peer, &proxy, [xff]);
/// assert_eq!(client("10.1.2.3, 8.8.8.8:443"), ClientAddr::Known("8.8.8.8".parse().unwrap()));
/// assert_eq!(client("10.1.2.3, unknown"), ClientAddr::Unknown);
/// assert_eq!(client("10.1.2.3, 127.0.0.1"), ClientAddr::Known("10.1.2.3".parse().unwrap()));
/// ```
#[must_use]
pub fn client_addr<'a>(
    peer: IpAddr,
    trusted: &[IpNet],
    forwarded_for: impl IntoIterator<Item = &'a str>,
) -> ClientAddr {
    if !is_trusted(trusted, peer) {
        return ClientAddr::Known(peer);
    }
    let entries: Vec<&str> = forwarded_for
        .into_iter()
        .flat_map(|line| line.split(','))
        .collect();
    for entry in entries.iter().rev() {
        match parse_entry(entry) {
            Some(ip) if is_trusted(trusted, ip) => {}
            Some(ip) => return ClientAddr::Known(ip),
            None => return ClientAddr::Unknown,
        }
    }
    ClientAddr::Known(peer)
}

fn is_trusted(trusted: &[IpNet], ip: IpAddr) -> bool {
    let canonical = ip.to_canonical();
    trusted
        .iter()
        .any(|net| net.contains(&ip) || net.contains(&canonical))
}

/// One `X-Forwarded-For` entry as an address: trimmed, then `a.b.c.d`, `a.b.c.d:port`, an IPv6
/// address with an optional `%zone`, or the same in brackets with an optional `:port`. Anything
/// else is `None`.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    if let Some(rest) = entry.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return if port_ok {
            parse_v6(inside).map(IpAddr::V6)
        } else {
            None
        };
    }
    match entry.split_once(':') {
        // One colon: IPv4 with a port (an IPv6 address has at least two).
        Some((host, port)) if !port.contains(':') => {
            if is_port(port) {
                host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
            } else {
                None
            }
        }
        Some(_) => parse_v6(entry).map(IpAddr::V6),
        None => entry.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// An IPv6 address with an optional, non-empty `%zone`, which is dropped: the zone names the
/// interface on the proxy's host and says nothing about who the client is.
fn parse_v6(text: &str) -> Option<Ipv6Addr> {
    let addr = match text.split_once('%') {
        Some((_, "")) => return None,
        Some((addr, _zone)) => addr,
        None => text,
    };
    addr.parse().ok()
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> ClientAddr {
        ClientAddr::Known(text.parse().unwrap())
    }

    #[test]
    fn the_nearest_untrusted_entry_is_the_client_parsed_or_not() {
        let trusted: Vec<IpNet> = vec![
            "127.0.0.1/32".parse().unwrap(),
            "192.168.0.0/16".parse().unwrap(),
        ];
        let proxy: IpAddr = "127.0.0.1".parse().unwrap();
        let rows: &[(&[&str], ClientAddr)] = &[
            // The review's cases (security review 2026-11, A5).
            (&["10.1.2.3, 8.8.8.8"], ip("8.8.8.8")),
            (&["10.1.2.3, 8.8.8.8:443"], ip("8.8.8.8")),
            (&["10.1.2.3, unknown"], ClientAddr::Unknown),
            (&["10.1.2.3, [2001:db8::1]"], ip("2001:db8::1")),
            (&["10.1.2.3, [2001:db8::1]:8080"], ip("2001:db8::1")),
            (&["10.1.2.3, fe80::1%eth0"], ip("fe80::1")),
            (&["10.1.2.3, [fe80::1%eth0]:80"], ip("fe80::1")),
            (&["8.8.8.8, 10.1.2.3:1234"], ip("10.1.2.3")),
            (&["10.1.2.3"], ip("10.1.2.3")),
            // Not addresses: unknown clients, never skipped.
            (&["10.1.2.3, _hidden"], ClientAddr::Unknown),
            (&["10.1.2.3, "], ClientAddr::Unknown),
            (&["10.1.2.3,,127.0.0.1"], ClientAddr::Unknown),
            (&[""], ClientAddr::Unknown),
            (&["10.1.2.3, 8.8.8.8:"], ClientAddr::Unknown),
            (&["10.1.2.3, 8.8.8.8:99999"], ClientAddr::Unknown),
            (&["10.1.2.3, 8.8.8.8:+80"], ClientAddr::Unknown),
            (&["10.1.2.3, [2001:db8::1]x"], ClientAddr::Unknown),
            (&["10.1.2.3, [8.8.8.8]"], ClientAddr::Unknown),
            (&["10.1.2.3, fe80::1%"], ClientAddr::Unknown),
            (&["10.1.2.3, 8.8.8.8%eth0"], ClientAddr::Unknown),
            (&["10.1.2.3, 8.8. 8.8"], ClientAddr::Unknown),
            (&["10.1.2.3, 010.1.2.3"], ClientAddr::Unknown),
            // Whitespace around entries is not part of them.
            (&["  10.1.2.3 ,\t8.8.8.8:443  "], ip("8.8.8.8")),
            // Several header lines are one list, in order.
            (&["10.1.2.3", "8.8.8.8"], ip("8.8.8.8")),
            (&["8.8.8.8", "10.1.2.3, 127.0.0.1"], ip("10.1.2.3")),
            (&["10.1.2.3", "unknown", "192.168.1.1"], ClientAddr::Unknown),
            // Trusted proxies on the right are skipped, in any form.
            (
                &["8.8.8.8, 10.1.2.3, 192.168.4.4, 127.0.0.1:80"],
                ip("10.1.2.3"),
            ),
            (
                &["8.8.8.8, 10.1.2.3, [::ffff:127.0.0.1]:80"],
                ip("10.1.2.3"),
            ),
            // All trusted, or no header: the peer.
            (&["192.168.1.1, 127.0.0.1"], ip("127.0.0.1")),
            (&[], ip("127.0.0.1")),
        ];
        for (lines, expected) in rows {
            let got = client_addr(proxy, &trusted, lines.iter().copied());
            assert_eq!(got, *expected, "{lines:?}");
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        for lines in [
            &["10.1.2.3"][..],
            &["unknown"],
            &["10.1.2.3, 127.0.0.1"],
            &[],
        ] {
            assert_eq!(
                client_addr(peer, &trusted, lines.iter().copied()),
                ip("203.0.113.9")
            );
            // Without trusted proxies no peer is trusted.
            assert_eq!(
                client_addr("127.0.0.1".parse().unwrap(), &[], lines.iter().copied()),
                ip("127.0.0.1")
            );
        }
    }

    #[test]
    fn an_ipv4_mapped_peer_counts_as_its_ipv4_proxy() {
        let trusted: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert_eq!(client_addr(mapped, &trusted, ["8.8.8.8"]), ip("8.8.8.8"));
        assert_eq!(ip("8.8.8.8").ip(), Some("8.8.8.8".parse().unwrap()));
        assert_eq!(ClientAddr::Unknown.ip(), None);
    }
}
