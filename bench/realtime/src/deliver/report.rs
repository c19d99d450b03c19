//! The figures of a `deliver` run: what the publishers, subscribers and stalled sockets
//! reported, merged, and the report (table and JSON) made of them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::DeliverArgs;
use super::tasks::{PublisherStats, SubscriberStats, TcpEnd};
use crate::Report;
use crate::stats::{self, Summary, Tally, round3};

/// The publishers' figures, summed.
#[derive(Debug, Default)]
pub(super) struct PublisherTotals {
    pub(super) sent: u64,
    late_skipped: u64,
    pusher_errors: Tally,
    ended: Tally,
    members_removed: Vec<f64>,
}

impl PublisherTotals {
    pub(super) fn add(&mut self, stats: PublisherStats) {
        self.sent += stats.sent;
        self.members_removed.extend(stats.members_removed);
        self.late_skipped += stats.late_skipped;
        self.pusher_errors.merge(stats.pusher_errors);
        if let Some(e) = stats.ended {
            self.ended.add(e.class());
        }
    }
}

/// The reading subscribers' figures, merged.
#[derive(Debug, Default)]
pub(super) struct Received {
    subscribers: u64,
    deliveries: u64,
    duplicates: u64,
    with_loss: u64,
    max_loss: u64,
    other_frames: u64,
    same_us: Vec<u32>,
    cross_us: Vec<u32>,
    pusher_errors: Tally,
    ended_early: Tally,
    /// How many subscribers missed each seq (only seqs someone missed): a loss concentrated on
    /// the first or last events points at subscription or shutdown timing, not at fan-out.
    missed_by_seq: BTreeMap<u64, u64>,
}

impl Received {
    pub(super) fn add(&mut self, stats: SubscriberStats, sent: u64) {
        let mut loss = 0;
        for seq in stats.seen.missing(sent) {
            loss += 1;
            *self.missed_by_seq.entry(seq).or_default() += 1;
        }
        let got = sent - loss;
        self.subscribers += 1;
        self.deliveries += got;
        self.duplicates += stats.duplicates;
        self.other_frames += stats.other_frames;
        if loss > 0 {
            self.with_loss += 1;
        }
        self.max_loss = self.max_loss.max(loss);
        self.same_us.extend_from_slice(&stats.same_us);
        self.cross_us.extend_from_slice(&stats.cross_us);
        self.pusher_errors.merge(stats.pusher_errors);
        if let Some(e) = stats.ended {
            self.ended_early.add(e.class());
        }
    }
}

/// Everything the report shows besides the deliveries.
pub(super) struct RunFigures<'a> {
    pub(super) urls: &'a [String],
    pub(super) channel: &'a str,
    pub(super) subscribed: usize,
    pub(super) warmup_secs: f64,
    pub(super) warmup_failures: &'a Tally,
    pub(super) published: &'a PublisherTotals,
    pub(super) stalled_ends: &'a Tally,
    pub(super) stalled_buffered: u64,
    /// How the stalled sockets' connections left `ESTABLISHED`: per side and state, how many
    /// and the earliest and latest time, in seconds after publishing started.
    pub(super) stalled_tcp: Vec<(String, usize, f64, f64)>,
    /// CPU use during the measured seconds, in % of one core: the client first, then servers.
    pub(super) cpu: Vec<(String, f64)>,
    /// The flood publisher's figures (zero when there was none).
    pub(super) flooded: &'a PublisherTotals,
}

/// Groups the stalled connections' ends by side and state: (`side state`, count, first, last).
pub(super) fn tcp_summary(ends: &[TcpEnd]) -> Vec<(String, usize, f64, f64)> {
    let mut by_state: BTreeMap<String, (usize, f64, f64)> = BTreeMap::new();
    for end in ends {
        let at = end.at;
        let entry = by_state
            .entry(format!("{} end {}", end.side, end.state))
            .or_insert((0, at, at));
        entry.0 += 1;
        entry.1 = entry.1.min(at);
        entry.2 = entry.2.max(at);
    }
    by_state
        .into_iter()
        .map(|(state, (n, min, max))| (state, n, min, max))
        .collect()
}

pub(super) fn cpu_snapshot(pids: &[String]) -> Vec<Option<f64>> {
    pids.iter()
        .map(|pid| stats::cpu_seconds(pid).ok())
        .collect()
}

pub(super) fn cpu_use(
    pids: &[String],
    before: &[Option<f64>],
    elapsed: Duration,
) -> Vec<(String, f64)> {
    let wall = elapsed.as_secs_f64().max(1e-3);
    pids.iter()
        .zip(before)
        .zip(cpu_snapshot(pids))
        .filter_map(|((pid, before), after)| {
            let label = if pid == "self" {
                "client".to_owned()
            } else {
                format!("server {pid}")
            };
            Some((label, round3((after? - (*before)?) * 100.0 / wall)))
        })
        .collect()
}

pub(super) fn report(args: &DeliverArgs, run: &RunFigures<'_>, mut received: Received) -> Report {
    let expected = run.published.sent * received.subscribers;
    let missing = expected.saturating_sub(received.deliveries);
    #[expect(clippy::cast_precision_loss, reason = "a percentage for people")]
    let loss_pct = if expected == 0 {
        0.0
    } else {
        missing as f64 * 100.0 / expected as f64
    };
    let mut all_us = Vec::with_capacity(received.same_us.len() + received.cross_us.len());
    all_us.extend_from_slice(&received.same_us);
    all_us.extend_from_slice(&received.cross_us);
    let all = Summary::of(&mut all_us);
    let same = Summary::of(&mut received.same_us);
    let cross = Summary::of(&mut received.cross_us);
    let summary_json = |s: Option<Summary>| s.map_or(Value::Null, Summary::to_json);
    let stalled_4200 = run.stalled_ends.get("close 4200");
    let mut most_missed: Vec<(u64, u64)> = received
        .missed_by_seq
        .iter()
        .map(|(&seq, &n)| (seq, n))
        .collect();
    most_missed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    most_missed.truncate(5);
    let most_missed_line = if most_missed.is_empty() {
        "none".to_owned()
    } else {
        most_missed
            .iter()
            .map(|(seq, n)| format!("seq {seq} by {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };

    let mut json = json!({
        "scenario": "deliver",
        "urls": run.urls,
        "channel": run.channel,
        "subscribers": args.subscribers,
        "stalled": args.stalled,
        "publishers": args.publishers,
        "rate": args.rate,
        "seconds": args.seconds,
        "payload_bytes": args.payload_bytes,
        "subscribed": run.subscribed,
        "warmup_secs": round3(run.warmup_secs),
        "warmup_failures": run.warmup_failures.to_json(),
        "published": run.published.sent,
        "publisher_late_skipped": run.published.late_skipped,
        "publisher_pusher_errors": run.published.pusher_errors.to_json(),
        "publisher_ended": run.published.ended.to_json(),
        "healthy_subscribers": received.subscribers,
        "expected_per_subscriber": run.published.sent,
        "deliveries": received.deliveries,
        "expected_deliveries": expected,
        "missing": missing,
        "loss_pct": (loss_pct * 10_000.0).round() / 10_000.0,
        "subscribers_with_loss": received.with_loss,
        "max_loss_per_subscriber": received.max_loss,
        "duplicates": received.duplicates,
        "most_missed": most_missed.iter().map(|(seq, n)| json!({"seq": seq, "subscribers": n})).collect::<Vec<_>>(),
        "latency": summary_json(all),
        "latency_same_replica": summary_json(same),
        "latency_cross_replica": summary_json(cross),
        "subscriber_pusher_errors": received.pusher_errors.to_json(),
        "subscribers_ended_early": received.ended_early.to_json(),
    });
    // Two literals: one would exceed `json!`'s macro recursion limit.
    let stalled_json = json!({
        "stalled_ends": run.stalled_ends.to_json(),
        "stalled_closed_4200": stalled_4200,
        "stalled_buffered_events": run.stalled_buffered,
        "stalled_tcp_ends": run.stalled_tcp.iter().map(|(state, n, min, max)| json!({"state": state, "count": n, "first_secs": round3(*min), "last_secs": round3(*max)})).collect::<Vec<_>>(),
        "stall_flood_bytes": args.stall_flood_bytes,
        "stall_flood_sent": run.flooded.sent,
        "stall_flood_pusher_errors": run.flooded.pusher_errors.to_json(),
        "stall_flood_ended": run.flooded.ended.to_json(),
        "stalled_dropped_by_server": run.flooded.members_removed.len(),
        "stalled_dropped_by_server_secs": run.flooded.members_removed.iter().copied().map(round3).collect::<Vec<_>>(),
        "cpu_percent": run.cpu.iter().map(|(who, pct)| json!({"process": who, "percent": pct})).collect::<Vec<_>>(),
    });
    if let (Some(all), Value::Object(more)) = (json.as_object_mut(), stalled_json) {
        all.extend(more);
    }

    let mut t = format!(
        "deliver: {} subscribers (+{} stalled) on {} over {:?}; {} publishers, {} events/s for {} s, {} B filler\n",
        args.subscribers,
        args.stalled,
        run.channel,
        run.urls,
        args.publishers,
        args.rate,
        args.seconds,
        args.payload_bytes,
    );
    let mut row = |label: &str, value: String| {
        t.push_str(&format!("  {label:<22} {value}\n"));
    };
    row(
        "subscribed",
        format!(
            "{} / {} in {:.1} s (failures: {})",
            run.subscribed,
            args.subscribers + args.stalled,
            run.warmup_secs,
            run.warmup_failures.line()
        ),
    );
    row(
        "published",
        format!(
            "{} events (late ticks skipped: {}; pusher errors: {}; ended: {})",
            run.published.sent,
            run.published.late_skipped,
            run.published.pusher_errors.line(),
            run.published.ended.line()
        ),
    );
    row(
        "delivered",
        format!(
            "{} / {expected} to {} healthy subscribers; missing {missing} ({loss_pct:.4} %), subscribers with loss {}, max loss {}, duplicates {}",
            received.deliveries,
            received.subscribers,
            received.with_loss,
            received.max_loss,
            received.duplicates
        ),
    );
    if missing > 0 {
        row("most missed events", most_missed_line);
    }
    for (label, summary) in [
        ("latency, all (ms)", all),
        ("  same replica", same),
        ("  cross replica", cross),
    ] {
        if let Some(s) = summary {
            row(
                label,
                format!(
                    "p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}  mean {:.2}  (n={})",
                    s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms, s.mean_ms, s.count
                ),
            );
        }
    }
    row("healthy ended early", received.ended_early.line());
    row("subscriber errors", received.pusher_errors.line());
    row(
        "cpu while measured",
        run.cpu
            .iter()
            .map(|(who, pct)| format!("{who} {pct:.0} %"))
            .collect::<Vec<_>>()
            .join(", ")
            + &format!(
                " (of one core; {} cores)",
                std::thread::available_parallelism().map_or(0, usize::from)
            ),
    );
    if args.stalled > 0 {
        row(
            "stalled",
            format!(
                "{stalled_4200} of {} read a 4200 close frame when drained after the run ({}); {} events were still buffered",
                args.stalled,
                run.stalled_ends.line(),
                run.stalled_buffered
            ),
        );
        let tcp_line = run
            .stalled_tcp
            .iter()
            .map(|(state, n, min, max)| format!("{state} x{n} at {min:.0}-{max:.0} s"))
            .collect::<Vec<_>>()
            .join(", ");
        let removed = &run.flooded.members_removed;
        if args.stall_flood_bytes > 0 {
            let first = removed.iter().copied().fold(f64::INFINITY, f64::min);
            let last = removed.iter().copied().fold(0.0, f64::max);
            row(
                "stalled dropped",
                if removed.is_empty() {
                    "none left the flood channel while the run lasted".to_owned()
                } else {
                    format!(
                        "{} left the flood channel (the server dropped them) {first:.1}-{last:.1} s after publishing started",
                        removed.len()
                    )
                },
            );
        }
        row(
            "stalled TCP ends",
            if tcp_line.is_empty() {
                "all still established at the end".to_owned()
            } else {
                format!("{tcp_line} (after publishing started)")
            },
        );
        if args.stall_flood_bytes > 0 {
            row(
                "stall flood",
                format!(
                    "{} events of {} B to the stalled only (pusher errors: {}; ended: {})",
                    run.flooded.sent,
                    args.stall_flood_bytes,
                    run.flooded.pusher_errors.line(),
                    run.flooded.ended.line()
                ),
            );
        }
    }
    Report {
        table: t,
        json,
        failed_check: None,
    }
}
