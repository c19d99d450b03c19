//! Sockets per client address: the socket opens before any sign-in, so without a cap one
//! anonymous client could hold every socket the process allows and lock editors out.
//!
//! IPv6 clients are counted per /64, the block one subscriber is usually given: counting per
//! address would let one host cycle through 2^64 of them.

use std::net::IpAddr;
use std::sync::Arc;

use dashmap::DashMap;

/// Who a socket is counted against: an IPv4 address or an IPv6 /64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    V4(u32),
    V6(u64),
}

impl From<IpAddr> for Source {
    fn from(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self::V4(u32::from(v4)),
            IpAddr::V6(v6) => Self::V6(u64::try_from(u128::from(v6) >> 64).unwrap_or(u64::MAX)),
        }
    }
}

/// Open sockets per source. Entries go when their last socket does, so the map holds at most
/// one entry per open socket.
#[derive(Debug, Default)]
pub(crate) struct Quota {
    open: DashMap<Source, usize>,
}

impl Quota {
    /// Counts a socket from `ip` unless `max` from its source are open; the count is released
    /// when the returned slot drops. A socket without an address (a Unix socket) is not counted.
    pub(crate) fn take(self: &Arc<Self>, ip: Option<IpAddr>, max: usize) -> Option<Slot> {
        let Some(ip) = ip else {
            return Some(Slot(None));
        };
        let source = Source::from(ip);
        let mut open = self.open.entry(source).or_insert(0);
        if *open >= max {
            return None;
        }
        *open += 1;
        Some(Slot(Some((Arc::clone(self), source))))
    }

    #[cfg(test)]
    fn sources(&self) -> usize {
        self.open.len()
    }
}

/// One counted socket; dropping it releases the count.
#[derive(Debug)]
pub(crate) struct Slot(Option<(Arc<Quota>, Source)>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((quota, source)) = self.0.take() {
            quota.open.remove_if_mut(&source, |_, open| {
                *open = open.saturating_sub(1);
                *open == 0
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn caps_each_source_and_releases_on_drop() {
        let quota = Arc::new(Quota::default());
        let a1 = quota.take(ip("203.0.113.9"), 2).unwrap();
        let _a2 = quota.take(ip("203.0.113.9"), 2).unwrap();
        assert!(
            quota.take(ip("203.0.113.9"), 2).is_none(),
            "a third from one address"
        );
        assert!(
            quota.take(ip("::ffff:203.0.113.9"), 2).is_none(),
            "nor mapped to IPv6"
        );
        let _b = quota
            .take(ip("203.0.113.10"), 2)
            .expect("another address has its own");
        drop(a1);
        let _a3 = quota
            .take(ip("203.0.113.9"), 2)
            .expect("a slot was released");
        assert_eq!(quota.sources(), 2);
    }

    #[test]
    fn ipv6_counts_per_64_and_entries_go_with_their_last_socket() {
        let quota = Arc::new(Quota::default());
        let first = quota.take(ip("2001:db8:1:2::1"), 1).unwrap();
        assert!(
            quota.take(ip("2001:db8:1:2:ffff::9"), 1).is_none(),
            "same /64"
        );
        let other = quota.take(ip("2001:db8:1:3::1"), 1).expect("another /64");
        drop((first, other));
        assert_eq!(quota.sources(), 0, "no entry outlives its sockets");
    }

    #[test]
    fn sockets_without_an_address_are_not_counted() {
        let quota = Arc::new(Quota::default());
        let slots: Vec<_> = (0..3).map(|_| quota.take(None, 1).unwrap()).collect();
        assert_eq!(slots.len(), 3);
        assert_eq!(quota.sources(), 0);
    }
}
