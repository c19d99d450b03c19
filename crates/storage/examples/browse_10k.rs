//! Times the file manager's folder listing (`vellum_storage::files::browse`) over one folder of
//! many files (default 10,000; first argument to change it): p50 and p99 of a page of 15 and of
//! 100 by name, a deep page, a size sort, a search and a tag filter. On SQLite by default, on
//! PostgreSQL when `VELLUM_TEST_POSTGRES_URL` is set. Storage only (no HTTP, no rendering): the
//! lead's HTTP benchmark gives the end-to-end figure.
//!
//! `cargo run --release -p vellum-storage --example browse_10k -- 10000`
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, Statement};
use vellum_storage::files::ParentFilter;
use vellum_storage::files::browse::{BrowseFiles, BrowseSort, Place, browse_files};
use vellum_storage::testing::TestDb;

const RUNS: usize = 200;

#[tokio::main]
async fn main() {
    let n: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let db = TestDb::new().await.unwrap();
    let conn = &db.conn;
    let backend = conn.get_database_backend();
    let exec = |sql: String| Statement::from_string(backend, sql);
    conn.execute_raw(exec(
        "INSERT INTO files (id, parent_id, type, filename, created_at, updated_at) \
         VALUES (1, NULL, 'folder', 'big', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
            .to_owned(),
    ))
    .await
    .unwrap();
    let seeded = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let rows: Vec<String> = chunk
            .iter()
            .map(|i| {
                format!(
                    "({}, 1, 'file', 'File {:05} {}.jpg', 'image/jpeg', {}, \
                     '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
                    i + 2,
                    (i * 7919) % n,
                    i,
                    (i * 104_729) % 1_000_000
                )
            })
            .collect();
        conn.execute_raw(exec(format!(
            "INSERT INTO files (id, parent_id, type, filename, mime_type, filesize, created_at, \
             updated_at) VALUES {}",
            rows.join(", ")
        )))
        .await
        .unwrap();
        let tags: Vec<String> = chunk
            .iter()
            .filter(|i| *i % 3 == 0)
            .map(|i| format!("({}, 'third')", i + 2))
            .collect();
        if !tags.is_empty() {
            conn.execute_raw(exec(format!(
                "INSERT INTO file_tags (file_id, tag) VALUES {}",
                tags.join(", ")
            )))
            .await
            .unwrap();
        }
    }
    if backend == sea_orm::DbBackend::Postgres {
        conn.execute_raw(exec("ANALYZE".to_owned())).await.unwrap();
    }
    println!("{:?}: seeded {n} files in {:?}", backend, seeded.elapsed());

    let base = BrowseFiles {
        place: Place::Parent(ParentFilter::Folder(1)),
        search: None,
        tag: None,
        mime: None,
        sort: BrowseSort::Name,
        descending: false,
        trashed: false,
        favorites_of: None,
        page: 1,
        per_page: 15,
    };
    let last = u64::try_from(n).unwrap().div_ceil(100);
    let cases: Vec<(&str, BrowseFiles<'_>)> = vec![
        ("name, page 1 of 15", base),
        (
            "name, page 1 of 100",
            BrowseFiles {
                per_page: 100,
                ..base
            },
        ),
        (
            "name, last page of 100",
            BrowseFiles {
                per_page: 100,
                page: last,
                ..base
            },
        ),
        (
            "size desc, page 1 of 100",
            BrowseFiles {
                per_page: 100,
                sort: BrowseSort::Size,
                descending: true,
                ..base
            },
        ),
        (
            "search '123', tree-wide",
            BrowseFiles {
                place: Place::Parent(ParentFilter::Any),
                search: Some("123"),
                ..base
            },
        ),
        (
            "tag 'third', page 1 of 100",
            BrowseFiles {
                per_page: 100,
                tag: Some("third"),
                ..base
            },
        ),
    ];
    for (name, query) in cases {
        let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let start = Instant::now();
            let page = browse_files(conn, query).await.unwrap();
            times.push(start.elapsed());
            assert!(page.total > 0);
        }
        times.sort_unstable();
        let p = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
        println!("{name:<28} p50 {:>9.2?}  p99 {:>9.2?}", p(0.5), p(0.99));
    }
}
