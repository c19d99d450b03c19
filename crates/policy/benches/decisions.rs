//! The promise to embedders (issue 23): a field-read decision and an item-filter match each take
//! well under a microsecond. Run by hand with `cargo bench -p vellum-policy`; figures in
//! docs/benchmarks.md.
#![allow(clippy::expect_used)] // fixed inputs: a failure is a broken benchmark, not a condition

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use vellum_domain::CollectionSlug;
use vellum_policy::{CollectionAction, ItemRef, Role};

/// An editor-like role: a read grant with two hidden fields and a two-condition item filter,
/// the shape of the demo's `public` role.
fn role() -> Role {
    Role::from_json(
        "public",
        &json!({
            "collection_permissions": {"articles": {"read": true, "rules": {
                "fields": {"internal_notes": {"read": false}, "views": {"read": false}},
                "item_filter": {"status": {"_eq": "published"}, "views": {"_gt": 5000}}
            }}},
            "file_permissions": {"read": true}
        }),
    )
    .expect("the benchmark's role parses")
}

/// A stored article as the read path hands it to the policy: ten fields.
fn article() -> Value {
    json!({
        "title": "A day at the lake", "slug": "a-day-at-the-lake", "status": "published",
        "views": 7919, "body": "Some *markdown* text.", "author": 3, "tags": [1, 4],
        "cover": "0b0c8a4e-4b8e-4a59-9d1e-8c3f0a8e6d21", "internal_notes": "check the photo",
        "published_at": "2026-11-20T10:00:00Z"
    })
}

fn decisions(c: &mut Criterion) {
    let role = role();
    let articles: CollectionSlug = "articles".parse().expect("a valid slug");
    let item = article();
    let data = item.as_object().expect("an object");

    c.bench_function("collection read grant", |b| {
        b.iter(|| black_box(&role).may(black_box(&articles), CollectionAction::Read));
    });
    c.bench_function("field read decision", |b| {
        b.iter(|| {
            black_box(&role)
                .field_policy(black_box(&articles))
                .can_read(black_box("internal_notes"))
        });
    });
    c.bench_function("item filter match (2 conditions)", |b| {
        b.iter(|| black_box(&role).may_see_item(black_box(&articles), &ItemRef::data(data)));
    });
    let policy = role.field_policy(&articles);
    c.bench_function("redact one item (10 fields, 2 hidden)", |b| {
        b.iter_batched_ref(
            || data.clone(),
            |data| policy.redact(black_box(data)),
            criterion::BatchSize::SmallInput,
        );
    });
}

criterion_group!(benches, decisions);
criterion_main!(benches);
