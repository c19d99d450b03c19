//! Passes over a collection's items in short batches (`vellum_storage::field_changes`), and the
//! dry runs that count what a pass would change.
//!
//! Consistency while a change runs: the definition is switched first (one short transaction)
//! and the epoch moved, so new requests validate against the new definition; then one pass
//! rewrites the stored values batch by batch; then the epoch moves again and a second pass runs.
//! Every batch operation is idempotent, so the second pass changes only values written in the
//! meantime by requests that were still working with the old definition (their snapshot was
//! taken before the switch). Readers are never blocked (WAL on SQLite, MVCC on PostgreSQL) and
//! a writer waits at most one batch (500 items).

use std::future::Future;

use serde_json::Value as Json;
use vellum_domain::{ContentLocales, FieldDef, convert_value};
use vellum_storage::field_changes::{self, BatchOutcome};
use vellum_storage::model::Collection;

use crate::context::AppState;
use crate::error::AppError;

/// How many failing item ids a refusal names.
pub(crate) const FAILURES_SHOWN: usize = 100;

/// What a conversion would do to the stored values.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DryRun {
    /// Items whose value changes.
    pub changes: u64,
    /// Items whose value cannot be converted: the first [`FAILURES_SHOWN`] with the reason.
    pub failures: Vec<(i64, String)>,
    pub failure_count: u64,
}

/// Converts every stored value of `old` to `new` in memory, counting changes and failures.
pub(crate) async fn dry_run(
    state: &AppState,
    collection: &Collection,
    old: &FieldDef,
    new: &FieldDef,
    locales: &ContentLocales,
) -> Result<DryRun, AppError> {
    let mut out = DryRun::default();
    let mut after = 0;
    loop {
        let page = field_changes::field_values(
            state.db(),
            collection,
            old.name.as_str(),
            after,
            field_changes::BATCH,
        )
        .await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.item_id;
        for v in page {
            match convert_value(old, new, &v.value, locales) {
                Ok(converted) if converted != v.value => out.changes += 1,
                Ok(_) => {}
                Err(reason) => {
                    out.failure_count += 1;
                    if out.failures.len() < FAILURES_SHOWN {
                        out.failures.push((v.item_id, reason));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// How many items hold a value (not null) of `field`.
pub(crate) async fn count_values(
    state: &AppState,
    collection: &Collection,
    field: &str,
) -> Result<u64, AppError> {
    let mut count = 0;
    let mut after = 0;
    loop {
        let page =
            field_changes::field_values(state.db(), collection, field, after, field_changes::BATCH)
                .await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.item_id;
        count += u64::try_from(page.iter().filter(|v| !v.value.is_null()).count()).unwrap_or(0);
    }
    Ok(count)
}

/// Runs `batch` from the first item to the last, then moves the epoch and runs it once more
/// (see the module's comment); answers the items the first pass changed.
pub(crate) async fn run_twice<F, Fut>(state: &AppState, batch: F) -> Result<u64, AppError>
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = Result<BatchOutcome, vellum_storage::StorageError>>,
{
    let mut changed = 0;
    for pass in 0..2 {
        let mut after = 0;
        while let Some(last) = {
            let outcome = batch(after).await?;
            if pass == 0 {
                changed += outcome.changed;
            }
            outcome.last_id
        } {
            after = last;
        }
        state.content_changed().await;
        state.invalidate().await;
    }
    Ok(changed)
}

/// Converts the stored values of field `new.name` (already switched to `new`) from `old`.
pub(crate) async fn convert_all(
    state: &AppState,
    switched: &Collection,
    old: &FieldDef,
    new: &FieldDef,
    locales: &ContentLocales,
) -> Result<u64, AppError> {
    let convert = |value: &Json| convert_value(old, new, value, locales);
    run_twice(state, |after| {
        field_changes::convert_batch(state.db(), switched, &new.name, after, convert)
    })
    .await
}
