//! `presence`: one user in two tabs, each tab on a different replica, must be one member.
//!
//! An observer on every replica watches `presence-bench` while user 42 opens a tab on replica A,
//! then one on replica B, closes the first, then the second. Each observer must see exactly one
//! `member_added` for user 42 (the first tab), no `member_removed` while the second tab is open,
//! and exactly one when it closes: the membership is per user across the whole cluster, not per
//! socket or per replica.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{Semaphore, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::conn::{self, ConnError, Endpoint, Options, Ws};
use crate::hold::{Opening, keep_alive};
use crate::protocol::{self, Incoming};
use crate::{BenchError, Common, Report};

/// The user with two tabs.
const USER: &str = "42";

#[derive(Debug, clap::Args)]
pub struct PresenceArgs {
    #[command(flatten)]
    pub common: Common,

    /// The presence channel.
    #[arg(long, default_value = "presence-bench")]
    pub channel: String,

    /// Milliseconds to wait after each step for member events to arrive (across replicas they
    /// travel through Redis or NOTIFY).
    #[arg(long, default_value_t = 3000)]
    pub settle_ms: u64,
}

/// A member event one observer saw.
#[derive(Debug, Clone)]
struct Seen {
    observer: usize,
    added: bool,
    user_id: String,
    at_ms: u128,
}

/// Member events for [`USER`] counted per observer over one step of the scenario.
#[derive(Debug, Clone, Default)]
struct Step {
    added: Vec<u32>,
    removed: Vec<u32>,
}

pub async fn run(args: &PresenceArgs) -> Result<Report, BenchError> {
    let endpoints = args.common.endpoints()?;
    let (a, b) = match endpoints.as_slice() {
        [a] => (a.clone(), a.clone()),
        [a, b, ..] => (a.clone(), b.clone()),
        [] => return Err(BenchError::Usage("--url is required".to_owned())),
    };
    let observers_at: Vec<Endpoint> = if endpoints.len() == 1 {
        vec![a.clone()]
    } else {
        vec![a.clone(), b.clone()]
    };
    let permits = Arc::new(Semaphore::new(4));
    let opening = |endpoint: &Endpoint| Opening {
        endpoint: endpoint.clone(),
        key: args.common.key.clone(),
        secret: args.common.secret.clone(),
        channel: args.channel.clone(),
        permits: Arc::clone(&permits),
        timeout: args.common.connect_timeout(),
        also_presence: None,
    };
    let t0 = Instant::now();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<Seen>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut observers = Vec::new();
    for (index, endpoint) in observers_at.iter().enumerate() {
        let user = format!("observer-{index}");
        let ws = open_as(&opening(endpoint), &user, &format!("observer {index}")).await?;
        observers.push(tokio::spawn(observe(
            ws,
            index,
            t0,
            seen_tx.clone(),
            stop_rx.clone(),
        )));
    }
    drop(seen_tx);
    let settle = Duration::from_millis(args.settle_ms);
    let mut timeline: Vec<Seen> = Vec::new();
    let mut step = |label: &'static str, timeline: &mut Vec<Seen>| {
        let mut counts = Step {
            added: vec![0; observers_at.len()],
            removed: vec![0; observers_at.len()],
        };
        while let Ok(seen) = seen_rx.try_recv() {
            if seen.user_id == USER {
                let slot = if seen.added {
                    counts.added.get_mut(seen.observer)
                } else {
                    counts.removed.get_mut(seen.observer)
                };
                if let Some(n) = slot {
                    *n += 1;
                }
            }
            timeline.push(seen);
        }
        (label, counts)
    };
    tokio::time::sleep(settle).await;
    let _ = step("observers joined", &mut timeline);

    let (tab1, ids1) = open_tab(&opening(&a), "tab 1").await?;
    tokio::time::sleep(settle).await;
    let after_tab1 = step("tab 1 opened (replica A)", &mut timeline);

    let (tab2, ids2) = open_tab(&opening(&b), "tab 2").await?;
    tokio::time::sleep(settle).await;
    let after_tab2 = step("tab 2 opened (replica B)", &mut timeline);

    let tab1_end = close_tab(tab1).await?;
    tokio::time::sleep(settle).await;
    let after_close1 = step("tab 1 closed", &mut timeline);

    let tab2_end = close_tab(tab2).await?;
    tokio::time::sleep(settle).await;
    let after_close2 = step("tab 2 closed", &mut timeline);

    let _ = stop_tx.send(true);
    let mut observer_ends = Vec::new();
    for observer in observers {
        observer_ends.push(observer.await?.err().map(|e| e.to_string()));
    }

    let steps = [after_tab1, after_tab2, after_close1, after_close2];
    let total = |pick: fn(&Step) -> &Vec<u32>| -> Vec<u32> {
        (0..observers_at.len())
            .map(|o| {
                steps
                    .iter()
                    .map(|(_, s)| pick(s).get(o).copied().unwrap_or_default())
                    .sum()
            })
            .collect()
    };
    let added = total(|s| &s.added);
    let removed = total(|s| &s.removed);
    let early_removed: Vec<u32> = steps.get(..3).unwrap_or_default().iter().fold(
        vec![0; observers_at.len()],
        |mut acc, (_, s)| {
            for (a, r) in acc.iter_mut().zip(&s.removed) {
                *a += r;
            }
            acc
        },
    );

    let mut problems = Vec::new();
    for (o, ((added, removed), early)) in added.iter().zip(&removed).zip(&early_removed).enumerate()
    {
        if *added != 1 {
            problems.push(format!(
                "observer {o} saw {added} member_added for user {USER}"
            ));
        }
        if *early != 0 {
            problems.push(format!(
                "observer {o} saw member_removed for user {USER} while a tab was still open"
            ));
        }
        if *removed != 1 {
            problems.push(format!(
                "observer {o} saw {removed} member_removed for user {USER}"
            ));
        }
    }
    for (o, end) in observer_ends.iter().enumerate() {
        if let Some(end) = end {
            problems.push(format!("observer {o} ended early: {end}"));
        }
    }

    let json = json!({
        "scenario": "presence",
        "urls": args.common.urls,
        "channel": args.channel,
        "user": USER,
        "member_added": added,
        "member_removed": removed,
        "member_removed_while_a_tab_was_open": early_removed,
        "steps": steps.iter().map(|(label, s)| json!({"step": label, "added": s.added, "removed": s.removed})).collect::<Vec<_>>(),
        "ids_seen_by_tab1": ids1,
        "ids_seen_by_tab2": ids2,
        "tab_ends": [tab1_end, tab2_end],
        "ok": problems.is_empty(),
        "problems": problems,
    });
    let mut table = format!(
        "presence: user {USER} in two tabs on {:?}, {} observer(s), channel {}\n",
        args.common.urls,
        observers_at.len(),
        args.channel
    );
    for (label, s) in &steps {
        table.push_str(&format!(
            "  {label:<26} member_added {:?}  member_removed {:?}\n",
            s.added, s.removed
        ));
    }
    table.push_str(&format!(
        "  total                      member_added {added:?} (expect 1 each)  member_removed {removed:?} (expect 1 each)\n  members at tab 1's subscribe {ids1:?}; at tab 2's {ids2:?}\n"
    ));
    for seen in &timeline {
        table.push_str(&format!(
            "    {:>6} ms  observer {}  member_{} {}\n",
            seen.at_ms,
            seen.observer,
            if seen.added { "added" } else { "removed" },
            seen.user_id
        ));
    }
    table.push_str(&format!(
        "  result                     {}\n",
        if problems.is_empty() {
            "ok".to_owned()
        } else {
            problems.join("; ")
        }
    ));
    Ok(Report {
        table,
        json,
        failed_check: (!problems.is_empty()).then(|| problems.join("; ")),
    })
}

/// Opens a socket subscribed to the presence channel as `user`; returns it with the member ids
/// its `subscription_succeeded` listed.
async fn open_as_with_ids(
    opening: &Opening,
    user: &str,
    what: &str,
) -> Result<(Ws, Vec<String>), BenchError> {
    let _permit = opening.permits.acquire().await;
    let attempt = async {
        let (mut ws, socket_id) = conn::open(&opening.endpoint, Options::default()).await?;
        let frame = protocol::subscribe_presence(
            &opening.key,
            &opening.secret,
            &socket_id,
            &opening.channel,
            user,
        );
        let data = conn::subscribe(&mut ws, &frame, &opening.channel).await?;
        Ok::<_, ConnError>((ws, protocol::presence_ids(&data)))
    };
    tokio::time::timeout(opening.timeout, attempt)
        .await
        .unwrap_or(Err(ConnError::Timeout("connect and subscribe")))
        .map_err(|source| BenchError::Socket {
            what: format!("{what} on {}", opening.endpoint.request_url),
            source,
        })
}

async fn open_as(opening: &Opening, user: &str, what: &str) -> Result<Ws, BenchError> {
    open_as_with_ids(opening, user, what)
        .await
        .map(|(ws, _)| ws)
}

/// A tab of user 42: kept reading (as a browser does) until it is closed.
struct Tab {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), ConnError>>,
}

async fn open_tab(opening: &Opening, what: &str) -> Result<(Tab, Vec<String>), BenchError> {
    let (ws, ids) = open_as_with_ids(opening, USER, what).await?;
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(keep_alive(ws, stop_rx));
    Ok((Tab { stop, task }, ids))
}

/// Closes a tab with a close frame; returns how it had ended if it ended on its own before.
async fn close_tab(tab: Tab) -> Result<Option<String>, BenchError> {
    let _ = tab.stop.send(true);
    Ok(tab.task.await?.err().map(|e| e.to_string()))
}

/// Reports every member event until `stop`, answering pings.
async fn observe(
    mut ws: Ws,
    observer: usize,
    t0: Instant,
    seen: mpsc::UnboundedSender<Seen>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ConnError> {
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            frame = conn::recv(&mut ws) => {
                let (added, user_id) = match frame? {
                    Incoming::MemberAdded { user_id, .. } => (true, user_id),
                    Incoming::MemberRemoved { user_id, .. } => (false, user_id),
                    Incoming::Ping => {
                        conn::send(&mut ws, protocol::PONG).await?;
                        continue;
                    }
                    _ => continue,
                };
                let _ = seen.send(Seen { observer, added, user_id, at_ms: t0.elapsed().as_millis() });
            }
        }
    }
    conn::close(ws).await;
    Ok(())
}
