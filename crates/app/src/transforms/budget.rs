//! Admission of transforms: a concurrency cap and a weighted semaphore over memory.
//!
//! A transform first takes a slot (at most `concurrency` run or read their source at once), then,
//! once its cost is known, that many bytes of the memory budget. Both waits share one deadline
//! (`queue_timeout`); a transform that would wait longer is turned away (503 with `Retry-After`)
//! rather than queued behind work it cannot see the end of. Slots are taken before the source is
//! read, so transforms waiting for memory hold at most `concurrency` sources.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Memory is counted in KiB, so a `u32` of permits covers 4 TiB.
const UNIT: u64 = 1024;

/// Why admission failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The transform needs more than the whole budget: it can never run.
    Never { needed: u64, limit: u64 },
    /// The budget stayed full until the queue deadline.
    Busy,
}

#[derive(Debug)]
pub(crate) struct Budget {
    slots: Arc<Semaphore>,
    memory: Arc<Semaphore>,
    /// The budget in bytes, as configured.
    limit: u64,
    queue_timeout: Duration,
}

/// A held slot: the right to read a source and ask for memory.
#[derive(Debug)]
pub(crate) struct Slot {
    _slot: OwnedSemaphorePermit,
    deadline: Instant,
}

/// A held slot and memory: the right to run one transform. Dropping it gives both back.
#[derive(Debug)]
pub struct Admission {
    _slot: OwnedSemaphorePermit,
    _memory: OwnedSemaphorePermit,
}

impl Budget {
    pub(crate) fn new(memory: u64, concurrency: usize, queue_timeout: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            memory: Arc::new(Semaphore::new(units(memory) as usize)),
            limit: memory,
            queue_timeout,
        }
    }

    /// Waits for a slot, at most the queue timeout.
    pub(crate) async fn slot(&self) -> Result<Slot, Refusal> {
        let deadline = Instant::now() + self.queue_timeout;
        let permit = tokio::time::timeout_at(deadline, Arc::clone(&self.slots).acquire_owned())
            .await
            .map_err(|_| Refusal::Busy)?
            .map_err(|_| Refusal::Busy)?;
        Ok(Slot {
            _slot: permit,
            deadline,
        })
    }

    /// Turns a slot into an admission for `needed` bytes, waiting until the slot's queue
    /// deadline at most.
    pub(crate) async fn admit(&self, slot: Slot, needed: u64) -> Result<Admission, Refusal> {
        if needed > self.limit {
            return Err(Refusal::Never {
                needed,
                limit: self.limit,
            });
        }
        let want = units(needed).min(units(self.limit));
        let memory = tokio::time::timeout_at(
            slot.deadline,
            Arc::clone(&self.memory).acquire_many_owned(want),
        )
        .await
        .map_err(|_| Refusal::Busy)?
        .map_err(|_| Refusal::Busy)?;
        Ok(Admission {
            _slot: slot._slot,
            _memory: memory,
        })
    }

    /// Takes `bytes` of the budget outside any transform, without waiting (tests: a full
    /// budget). `None` when that much is not free.
    pub(crate) fn hold(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.memory)
            .try_acquire_many_owned(units(bytes).min(units(self.limit)))
            .ok()
    }
}

/// Bytes in budget units, rounded up; a transform always takes at least one unit.
fn units(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn admits_within_the_budget_refuses_what_never_fits_and_times_out_when_full() {
        let budget = Budget::new(10 * 1024 * 1024, 2, Duration::from_millis(50));
        let big = budget
            .admit(budget.slot().await.unwrap(), 8 * 1024 * 1024)
            .await
            .unwrap();
        assert_eq!(
            budget
                .admit(budget.slot().await.unwrap(), 11 * 1024 * 1024)
                .await
                .unwrap_err(),
            Refusal::Never {
                needed: 11 * 1024 * 1024,
                limit: 10 * 1024 * 1024
            }
        );
        // 8 MiB of 10 are held: 4 MiB must wait, and the wait ends at the queue deadline.
        let started = std::time::Instant::now();
        assert_eq!(
            budget
                .admit(budget.slot().await.unwrap(), 4 * 1024 * 1024)
                .await
                .unwrap_err(),
            Refusal::Busy
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        drop(big);
        budget
            .admit(budget.slot().await.unwrap(), 4 * 1024 * 1024)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn the_concurrency_cap_holds_whatever_the_memory() {
        let budget = Budget::new(1 << 30, 1, Duration::from_millis(50));
        let first = budget.slot().await.unwrap();
        assert_eq!(budget.slot().await.unwrap_err(), Refusal::Busy);
        drop(first);
        budget.slot().await.unwrap();
    }
}
