//! Figures: latency percentiles, failure tallies and a process's memory from `/proc`.
//!
//! Latencies are recorded as `u32` microseconds in one `Vec` per task and merged once at the end,
//! so recording costs a push and no lock while the run is measured.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

/// Percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Summary {
    /// Sorts `micros` in place and summarizes it; `None` when it is empty.
    #[must_use]
    pub fn of(micros: &mut [u32]) -> Option<Self> {
        micros.sort_unstable();
        let max = *micros.last()?;
        let sum: u64 = micros.iter().map(|&us| u64::from(us)).sum();
        let count = micros.len();
        #[expect(clippy::cast_precision_loss, reason = "a mean for people to read")]
        let mean_us = sum as f64 / count as f64;
        Some(Self {
            count,
            p50_ms: ms(percentile(micros, 50.0)?),
            p95_ms: ms(percentile(micros, 95.0)?),
            p99_ms: ms(percentile(micros, 99.0)?),
            max_ms: ms(max),
            mean_ms: mean_us / 1000.0,
        })
    }

    #[must_use]
    pub fn to_json(self) -> Value {
        json!({
            "count": self.count,
            "p50_ms": round3(self.p50_ms),
            "p95_ms": round3(self.p95_ms),
            "p99_ms": round3(self.p99_ms),
            "max_ms": round3(self.max_ms),
            "mean_ms": round3(self.mean_ms),
        })
    }
}

fn ms(us: u32) -> f64 {
    f64::from(us) / 1000.0
}

/// Three decimals: microsecond resolution, without float noise in the JSON.
#[must_use]
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The nearest-rank percentile of an ascending slice: the smallest value with at least `p` % of
/// the values at or below it. No interpolation, so p99 is always a latency that was observed.
#[must_use]
pub fn percentile(sorted: &[u32], p: f64) -> Option<u32> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a rank between 1 and len, computed in f64 as the definition is"
    )]
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank - 1).copied()
}

/// Counts of failures by class (see `ConnError::class`), sorted for a stable report.
#[derive(Debug, Default, Clone)]
pub struct Tally(BTreeMap<String, u64>);

impl Tally {
    pub fn add(&mut self, class: impl Into<String>) {
        *self.0.entry(class.into()).or_default() += 1;
    }

    pub fn merge(&mut self, other: Self) {
        for (class, n) in other.0 {
            *self.0.entry(class).or_default() += n;
        }
    }

    #[must_use]
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    #[must_use]
    pub fn get(&self, class: &str) -> u64 {
        self.0.get(class).copied().unwrap_or_default()
    }

    #[must_use]
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(class, n)| (class.clone(), json!(n)))
                .collect(),
        )
    }

    /// `class ×n, class ×n`, or `none`.
    #[must_use]
    pub fn line(&self) -> String {
        if self.0.is_empty() {
            return "none".to_owned();
        }
        self.0
            .iter()
            .map(|(class, n)| format!("{class} x{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A process's resident memory now and at its peak, from `/proc/PID/status`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub rss_mib: f64,
    pub hwm_mib: f64,
}

impl Memory {
    /// Reads `/proc/{pid}/status` (`pid` may be `self`).
    ///
    /// # Errors
    /// When the file cannot be read (no such process, not Linux) or lacks the two lines.
    pub fn of_process(pid: &str) -> std::io::Result<Self> {
        let path = format!("/proc/{pid}/status");
        let status = std::fs::read_to_string(&path)?;
        Self::parse(&status).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{path} has no VmRSS/VmHWM"),
            )
        })
    }

    /// Reads the `VmRSS:` and `VmHWM:` lines (in kB) of a status file.
    #[must_use]
    pub fn parse(status: &str) -> Option<Self> {
        let field = |name: &str| {
            status.lines().find_map(|line| {
                let rest = line.strip_prefix(name)?;
                let kb: u64 = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
                #[expect(clippy::cast_precision_loss, reason = "MiB for people to read")]
                Some(kb as f64 / 1024.0)
            })
        };
        Some(Self {
            rss_mib: field("VmRSS:")?,
            hwm_mib: field("VmHWM:")?,
        })
    }

    #[must_use]
    pub fn to_json(self) -> Value {
        json!({"rss_mib": round3(self.rss_mib), "hwm_mib": round3(self.hwm_mib)})
    }
}

/// `st` of an established connection in `/proc/net/tcp`.
pub const TCP_ESTABLISHED: u8 = 0x01;

/// Every connection of a `/proc/net/tcp` (or `tcp6`) table: (local port, remote port) to its
/// state. Ports identify the bench's own client connections well enough: the kernel gives
/// each an ephemeral port of its own.
#[must_use]
pub fn tcp_states(table: &str) -> HashMap<(u16, u16), u8> {
    let port = |addr: &str| u16::from_str_radix(addr.rsplit_once(':')?.1, 16).ok();
    table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().skip(1);
            let local = port(fields.next()?)?;
            let remote = port(fields.next()?)?;
            let state = u8::from_str_radix(fields.next()?, 16).ok()?;
            Some(((local, remote), state))
        })
        .collect()
}

/// The name of a `/proc/net/tcp` state.
#[must_use]
pub fn tcp_state_name(state: u8) -> &'static str {
    match state {
        0x01 => "ESTABLISHED",
        0x04 => "FIN_WAIT1",
        0x05 => "FIN_WAIT2",
        0x06 => "TIME_WAIT",
        0x07 => "CLOSE",
        0x08 => "CLOSE_WAIT (server closed)",
        0x09 => "LAST_ACK",
        0x0B => "CLOSING",
        _ => "other",
    }
}

/// Clock ticks per second of `/proc/PID/stat`'s CPU times (`getconf CLK_TCK`): 100 on every
/// Linux the bench runs on; reading it for real would need libc.
const CLK_TCK: f64 = 100.0;

/// CPU time (user + system) a process has used so far, in seconds, from `/proc/{pid}/stat`.
///
/// # Errors
/// When the file cannot be read or parsed.
pub fn cpu_seconds(pid: &str) -> std::io::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path)?;
    #[expect(clippy::cast_precision_loss, reason = "seconds for people to read")]
    parse_cpu_ticks(&stat)
        .map(|ticks| ticks as f64 / CLK_TCK)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{path} has no CPU times"),
            )
        })
}

/// `utime + stime` (fields 14 and 15) of a stat line. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
#[must_use]
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 99.0), Some(7));
        // 10 values: p95 is the 10th (ceil 9.5), p50 the 5th.
        let v: Vec<u32> = (1..=10).map(|x| x * 10).collect();
        assert_eq!(percentile(&v, 95.0), Some(100));
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&v, 101.0), None);
    }

    #[test]
    fn summary_sorts_and_converts_to_ms() {
        let mut v = vec![3000, 1000, 2000, 4000];
        let s = Summary::of(&mut v).unwrap();
        assert_eq!(v, vec![1000, 2000, 3000, 4000]);
        assert_eq!(s.count, 4);
        assert!((s.p50_ms - 2.0).abs() < 1e-9);
        assert!((s.p99_ms - 4.0).abs() < 1e-9);
        assert!((s.max_ms - 4.0).abs() < 1e-9);
        assert!((s.mean_ms - 2.5).abs() < 1e-9);
        assert_eq!(Summary::of(&mut []), None);
    }

    #[test]
    fn tally_merges_and_prints() {
        let mut a = Tally::default();
        a.add("close 4200");
        let mut b = Tally::default();
        b.add("close 4200");
        b.add("eof without close frame");
        a.merge(b);
        assert_eq!(a.total(), 3);
        assert_eq!(a.get("close 4200"), 2);
        assert_eq!(a.line(), "close 4200 x2, eof without close frame x1");
        assert_eq!(Tally::default().line(), "none");
    }

    #[test]
    fn parses_proc_status() {
        let status = "Name:\tvellum-server\nVmPeak:\t  900000 kB\nVmHWM:\t   204800 kB\nVmRSS:\t   102400 kB\n";
        assert_eq!(
            Memory::parse(status),
            Some(Memory {
                rss_mib: 100.0,
                hwm_mib: 200.0
            })
        );
        assert_eq!(Memory::parse("Name:\tx\n"), None);
    }

    #[test]
    fn reads_tcp_states_by_ports() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue\n   0: 0100007F:8F3D 00000000:0000 0A 00000000:00000000\n   1: 0100007F:A1B2 0100007F:1F90 08 00000000:00001000\n";
        let states = tcp_states(table);
        assert_eq!(states.get(&(0xA1B2, 0x1F90)), Some(&0x08));
        assert_eq!(states.get(&(0x8F3D, 0)), Some(&0x0A));
        assert_eq!(states.len(), 2);
        assert_eq!(tcp_state_name(0x08), "CLOSE_WAIT (server closed)");
    }

    #[test]
    fn parses_cpu_ticks_after_the_command_name() {
        let stat =
            "4242 (vellum (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_cpu_ticks(stat), Some(300));
        assert_eq!(parse_cpu_ticks("4242 (x) S 1"), None);
    }
}
