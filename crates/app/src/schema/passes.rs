//! Passes over a collection's items in short batches (`vellum_storage::field_changes`), and the
//! dry runs that count what a pass would change.
//!
//! Consistency while a change runs: the definition is switched first (one short transaction)
//! and the epoch moved, so new requests validate against the new definition; then one pass
//! rewrites the stored values batch by batch; then the epoch moves again and a second pass runs.
//! Every batch operation is idempotent, so the second pass changes only values written in the
//! meantime by requests that were still working with the old definition (their snapshot was
//! taken before the switch). Readers are never blocked (WAL on SQLite, MVCC on PostgreSQL) and
//! a writer waits at most one batch (500 items). Renames and type changes of `unique` fields
//! are one transaction each instead (see `vellum_storage::field_changes`), followed by the same
//! kind of catch-up.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde_json::Value as Json;
use vellum_domain::{ContentLocales, FieldDef, FieldName, RuleOperator, convert_value};
use vellum_storage::field_changes::{self, BatchOutcome, unique_digests};
use vellum_storage::model::Collection;

use crate::context::AppState;
use crate::error::AppError;

fn is_unique(def: &FieldDef) -> bool {
    def.settings.has_rule(RuleOperator::Unique)
}

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

/// Converts every stored value of `old` to `new` in memory, counting changes and failures: a
/// value that cannot be converted, or (under a `unique` rule) whose converted value another
/// item's converted value already takes. Memory: 16 bytes per unique value seen.
pub(crate) async fn dry_run(
    state: &AppState,
    collection: &Collection,
    old: &FieldDef,
    new: &FieldDef,
    locales: &ContentLocales,
) -> Result<DryRun, AppError> {
    let mut out = DryRun::default();
    let mut taken: HashMap<u128, i64> = HashMap::new();
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
                Ok(converted) => {
                    if converted != v.value {
                        out.changes += 1;
                    }
                    let collision = unique_digests(new, &converted)
                        .into_iter()
                        .find_map(|digest| taken.insert(digest, v.item_id));
                    if let Some(first) = collision {
                        fail(
                            &mut out,
                            v.item_id,
                            format!(
                                "its value would equal item {first}'s, and {} is unique",
                                new.name
                            ),
                        );
                    }
                }
                Err(reason) => fail(&mut out, v.item_id, reason),
            }
        }
    }
    Ok(out)
}

fn fail(out: &mut DryRun, id: i64, reason: String) {
    out.failure_count += 1;
    if out.failures.len() < FAILURES_SHOWN {
        out.failures.push((id, reason));
    }
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
    run_passes(state, 2, batch).await
}

async fn run_passes<F, Fut>(state: &AppState, passes: u8, batch: F) -> Result<u64, AppError>
where
    F: Fn(i64) -> Fut,
    Fut: Future<Output = Result<BatchOutcome, vellum_storage::StorageError>>,
{
    let mut changed = 0;
    for pass in 0..passes {
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
        state.invalidate().await;
    }
    Ok(changed)
}

/// Switches field `old` of `collection` to `new` and converts its stored values; answers the
/// saved collection and how many values changed. A field under a `unique` rule converts in one
/// transaction (a collision rolls everything back: see
/// [`field_changes::switch_and_convert`]); any other field in batches, so writers of the
/// collection wait at most one batch.
pub(crate) async fn convert(
    state: &AppState,
    collection: &Collection,
    old: &FieldDef,
    new: &FieldDef,
    locales: &ContentLocales,
) -> Result<(Collection, u64), AppError> {
    let convert = |value: &Json| convert_value(old, new, value, locales);
    if is_unique(new) {
        let (switched, changed) =
            field_changes::switch_and_convert(state.db(), collection, new, convert).await?;
        state.invalidate().await;
        // Catches values written meanwhile under the old definition (claims stay checked).
        run_passes(state, 1, |after| {
            field_changes::convert_batch(state.db(), &switched, &new.name, after, convert)
        })
        .await?;
        return Ok((switched, changed));
    }
    let switched = field_changes::switch_field(state.db(), collection, new).await?;
    state.invalidate().await;
    let changed = run_twice(state, |after| {
        field_changes::convert_batch(state.db(), &switched, &new.name, after, convert)
    })
    .await?;
    Ok((switched, changed))
}

/// How long after a rename the second catch-up runs: longer than a writer waits for the
/// database lock (SQLite's busy timeout is 5 s), so a request that read the old definition
/// before the rename has written by then or given up.
const LATE_CATCH_UP: Duration = Duration::from_secs(6);

/// After a rename (already moved in every item, the epoch moved): moves values written under
/// the old name by requests that had read the old definition, once now and once more in the
/// background after [`LATE_CATCH_UP`].
pub(crate) async fn catch_up_rename(
    state: &AppState,
    renamed: &Collection,
    from: &FieldName,
    to: &FieldName,
) -> Result<(), AppError> {
    if field_changes::move_key(state.db(), renamed, from.as_str(), to.as_str()).await? > 0 {
        state.invalidate().await;
    }
    let (state, renamed, from, to) = (state.clone(), renamed.clone(), from.clone(), to.clone());
    tokio::spawn(async move {
        tokio::time::sleep(LATE_CATCH_UP).await;
        match field_changes::move_key(state.db(), &renamed, from.as_str(), to.as_str()).await {
            Ok(0) => {}
            Ok(_) => {
                state.invalidate().await;
            }
            Err(err) => tracing::warn!(
                error = %crate::telemetry::error_chain(&err),
                collection = %renamed.slug,
                "late rename catch-up failed"
            ),
        }
    });
    Ok(())
}
