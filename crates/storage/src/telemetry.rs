//! What one request asked of the database: how many statements, and how long they took.
//!
//! The HTTP edge runs each request inside [`measure`]; every statement run through a
//! [`crate::Database`] (on the pool or inside one of its transactions) while that future is
//! polled adds itself to the request's tally, which the edge turns into `X-Query-Count` and the
//! `db` entry of `Server-Timing`. A task-local tally rather than a field passed down: the
//! repositories stay generic over sea-orm's connection traits, and work a request hands to another
//! task (a transform, a broadcast) is not the request's own latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

tokio::task_local! {
    static TALLY: Arc<Tally>;
}

/// The running totals of one [`measure`] scope (shared by reference: a statement may finish on
/// another worker thread than the one that started the request).
#[derive(Debug, Default)]
pub struct Tally {
    statements: AtomicU64,
    nanos: AtomicU64,
}

/// What a finished scope counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryStats {
    /// Statements run, failed ones included (`BEGIN` and `COMMIT` count: they are round trips).
    pub statements: u64,
    /// Time spent waiting for them.
    pub elapsed: Duration,
}

impl Tally {
    /// The totals so far.
    #[must_use]
    pub fn stats(&self) -> QueryStats {
        QueryStats {
            statements: self.statements.load(Ordering::Relaxed),
            elapsed: Duration::from_nanos(self.nanos.load(Ordering::Relaxed)),
        }
    }
}

/// How the connection pool is used at one moment ([`crate::Database::pool_usage`]), for the
/// server's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolUsage {
    /// Connections open, in use or idle.
    pub open: u32,
    /// Open connections waiting in the pool.
    pub idle: u32,
    /// The most connections the pool opens.
    pub max: u32,
}

/// Runs `fut` with a fresh tally, which the caller reads when it pleases (a response streamed
/// after the handler returns is still counted by the time its head is sent).
pub async fn measure<F: Future>(tally: Arc<Tally>, fut: F) -> F::Output {
    TALLY.scope(tally, fut).await
}

/// Adds one statement to the current scope's tally; outside any scope (the CLI, background
/// tasks) it does nothing. Called by the connection's metric hook.
pub(crate) fn record(elapsed: Duration) {
    let _ = TALLY.try_with(|tally| {
        tally.statements.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        tally.nanos.fetch_add(nanos, Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_inside_the_scope_only() {
        record(Duration::from_millis(5));
        let tally = Arc::new(Tally::default());
        measure(tally.clone(), async {
            record(Duration::from_millis(2));
            record(Duration::from_millis(3));
        })
        .await;
        record(Duration::from_millis(7));
        assert_eq!(
            tally.stats(),
            QueryStats {
                statements: 2,
                elapsed: Duration::from_millis(5)
            }
        );
    }
}
