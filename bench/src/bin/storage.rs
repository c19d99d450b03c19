//! `vellum-bench-storage`: the storage crate's figures for the list and show requirement.
//!
//! With `--items` items (100,000 by default) in one collection, it measures `list_items` with a
//! two-field filter (`status _eq published` AND `views _gt 5000`), 15 per page, on page 1 and on a
//! middle page (each call counts the matches for `total`, then reads the page), and `get_item` by
//! random id. Targets on SQLite: list under 20 ms median, show under 1 ms median; the same figures
//! are reported on PostgreSQL.
//!
//! The items are seeded in bulk (multi-row `INSERT`s in one transaction) instead of through
//! `create_item`, so 100,000 of them take seconds, not minutes; each `data` still goes through
//! the domain crate's `prepare_write`, so it is stored exactly as the API would store it. Item
//! revisions, links and `unique` claims are not seeded: the measured reads never touch them.
//!
//! Output: a table for people on stderr, one JSON line for machines on stdout. This is a tool run
//! by hand, never a timed test: it reports the targets, it does not fail on them.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait, Value};
use serde_json::{Map, Value as Json, json};
use time::OffsetDateTime;
use vellum_domain::{
    CollectionSlug, ContentLocales, FieldDef, HashKey, LocaleCode, WriteContext, WriteMode,
    prepare_write,
};
use vellum_policy::Filter;
use vellum_storage::Database;
use vellum_storage::collections::{CollectionDef, collection_by_slug, save_collection};
use vellum_storage::items::{FilterScope, ListItems, get_item, list_items};
use vellum_storage::model::Collection;

/// The collection the benchmark creates (or reuses, in a database given with `--database-url`).
const COLLECTION: &str = "articles";
/// The name of the database created on a PostgreSQL server, and dropped at the end.
const PG_DATABASE: &str = "vellum_bench";
/// Rows per `INSERT` while seeding: 3 bound values each, far below both backends' limits.
const BATCH: u64 = 1_000;
const PER_PAGE: u64 = 15;
/// The requirement's medians, in milliseconds.
const LIST_TARGET_MS: f64 = 20.0;
const SHOW_TARGET_MS: f64 = 1.0;

/// Command line of `vellum-bench-storage`.
#[derive(Debug, Parser)]
#[command(
    name = "vellum-bench-storage",
    about = "List and show latency of the storage crate"
)]
struct Cli {
    /// `postgres://…` names a server: a database `vellum_bench` is created there and dropped at
    /// the end. `sqlite://…` names a file: the `articles` collection is reused if present, else
    /// created and seeded. Default: a fresh SQLite file in a temporary directory.
    #[arg(long, env = "VELLUM_BENCH_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,

    /// How many items to seed.
    #[arg(long, default_value_t = 100_000)]
    items: u64,

    /// Timed calls per measurement (after a warm-up of a tenth of them, at least 5).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    iterations: u64,

    /// Keep the database the benchmark created (the temporary SQLite file, or `vellum_bench` on
    /// PostgreSQL) and say where it is, e.g. to run `EXPLAIN` on it afterwards.
    #[arg(long)]
    keep: bool,
}

#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error(transparent)]
    Storage(#[from] vellum_storage::StorageError),
    #[error("database error")]
    Db(#[from] sea_orm::DbErr),
    #[error("setup failed: {0}")]
    Setup(String),
    #[error("could not write the report")]
    Output(#[source] std::io::Error),
}

impl BenchError {
    fn setup(e: impl std::fmt::Display) -> Self {
        Self::Setup(e.to_string())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "vellum-bench-storage: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                let _ = writeln!(stderr, "  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

/// Where the benchmark runs, and what to clean up afterwards.
enum Target {
    /// The temporary directory (if the file is ours) is removed on drop.
    Sqlite {
        url: String,
        dir: Option<tempfile::TempDir>,
    },
    Postgres {
        admin_url: String,
        url: String,
    },
}

impl Target {
    async fn prepare(database_url: Option<&str>) -> Result<Self, BenchError> {
        match database_url.map(str::trim).filter(|u| !u.is_empty()) {
            None => {
                let dir = tempfile::tempdir().map_err(BenchError::setup)?;
                let url = format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join("bench.db").display()
                );
                Ok(Self::Sqlite {
                    url,
                    dir: Some(dir),
                })
            }
            Some(url) if url.starts_with("postgres") => {
                // A database of our own, so the tables are fresh and the server's other databases
                // are untouched; a leftover from an interrupted run is replaced.
                let admin = vellum_storage::connect(url).await?;
                admin
                    .execute_unprepared(&format!(
                        "DROP DATABASE IF EXISTS \"{PG_DATABASE}\" WITH (FORCE)"
                    ))
                    .await?;
                admin
                    .execute_unprepared(&format!("CREATE DATABASE \"{PG_DATABASE}\""))
                    .await?;
                admin.close().await?;
                let mut bench_url = url::Url::parse(url).map_err(BenchError::setup)?;
                bench_url.set_path(&format!("/{PG_DATABASE}"));
                Ok(Self::Postgres {
                    admin_url: url.to_owned(),
                    url: bench_url.into(),
                })
            }
            Some(url) => Ok(Self::Sqlite {
                url: url.to_owned(),
                dir: None,
            }),
        }
    }

    fn url(&self) -> &str {
        match self {
            Self::Sqlite { url, .. } | Self::Postgres { url, .. } => url,
        }
    }

    async fn cleanup(self, keep: bool) -> Result<(), BenchError> {
        match self {
            Self::Sqlite {
                url,
                dir: Some(dir),
            } if keep => {
                let path = dir.keep();
                say(&format!("kept {url} (remove {} when done)", path.display()));
            }
            Self::Postgres { url, .. } if keep => say(&format!("kept {url}")),
            Self::Postgres { admin_url, .. } => {
                let admin = vellum_storage::connect(&admin_url).await?;
                admin
                    .execute_unprepared(&format!(
                        "DROP DATABASE IF EXISTS \"{PG_DATABASE}\" WITH (FORCE)"
                    ))
                    .await?;
                admin.close().await?;
            }
            Self::Sqlite { .. } => {}
        }
        Ok(())
    }
}

async fn run(cli: &Cli) -> Result<(), BenchError> {
    let target = Target::prepare(cli.database_url.as_deref()).await?;
    let result = async {
        let db = vellum_storage::connect(target.url()).await?;
        let report = bench(&db, cli).await;
        db.close().await?;
        report
    }
    .await;
    // The PostgreSQL database goes away whatever happened (unless `--keep`).
    let cleaned = target.cleanup(cli.keep).await;
    let report = result?;
    cleaned?;
    writeln!(std::io::stdout(), "{report}").map_err(BenchError::Output)
}

/// Sets up the collection and measures; returns the JSON summary.
async fn bench(db: &Database, cli: &Cli) -> Result<Json, BenchError> {
    let backend = backend_name(db.get_database_backend());
    vellum_storage::migrate(db).await?;
    let locales = ContentLocales::single(LocaleCode::parse("en").map_err(BenchError::setup)?);
    let collection = match collection_by_slug(db, COLLECTION).await? {
        Some(existing) => {
            say(&format!(
                "reusing the existing `{COLLECTION}` collection (--items is ignored)"
            ));
            existing
        }
        None => {
            let collection = create_collection(db).await?;
            let started = Instant::now();
            seed(db, &collection, &locales, cli.items).await?;
            say(&format!(
                "seeded {} items in {:.1} s",
                cli.items,
                started.elapsed().as_secs_f64()
            ));
            collection
        }
    };
    analyze(db).await?;
    let (first_id, last_id, live) = id_range(db, &collection).await?;

    let locale = locales.default_locale().clone();
    let scope = FilterScope {
        schema: collection.schema(),
        locales: &locales,
        locale: &locale,
    };
    let filter = Filter::from_query([
        ("filter[status][_eq]", "published"),
        ("filter[views][_gt]", "5000"),
    ])
    .map_err(BenchError::setup)?;
    let list = |page| ListItems {
        filter: &filter,
        sort: &[],
        page,
        per_page: PER_PAGE,
        after: None,
    };
    let first = list_items(db, &collection, &scope, &list(1)).await?;
    let middle_page = first.last_page.div_ceil(2);
    let iterations = cli.iterations;
    say(&format!(
        "{backend}: {live} items, {} match the filter ({} pages of {PER_PAGE}); {iterations} timed calls each",
        first.total, first.last_page
    ));

    let mut summary = Map::new();
    for (name, page) in [("list_first_page", 1), ("list_middle_page", middle_page)] {
        let stats = measure(iterations, async || {
            let got = list_items(db, &collection, &scope, &list(page)).await?;
            if got.total != first.total || (got.items.is_empty() && first.total > 0) {
                return Err(BenchError::Setup(format!(
                    "page {page}: {} items of {}, expected some of {}",
                    got.items.len(),
                    got.total,
                    first.total
                )));
            }
            Ok(())
        })
        .await?;
        say(&stats.line(&format!("list page {page:>4}"), LIST_TARGET_MS));
        summary.insert(name.into(), stats.json(Some(page), LIST_TARGET_MS));
    }

    let mut rng = XorShift::new(0x0005_40A7_2026);
    let stats = measure(iterations, async || {
        let id = first_id + rng.below(last_id - first_id + 1);
        match get_item(db, &collection, &scope, id, None).await? {
            Some(_) => Ok(()),
            None => Err(BenchError::Setup(format!("item {id} not found"))),
        }
    })
    .await?;
    say(&stats.line("show by id    ", SHOW_TARGET_MS));
    summary.insert("show".into(), stats.json(None, SHOW_TARGET_MS));

    let mut report = json!({
        "backend": backend,
        "items": live,
        "matches": first.total,
        "per_page": PER_PAGE,
        "iterations": iterations,
    });
    if let Json::Object(report) = &mut report {
        report.append(&mut summary);
    }
    Ok(report)
}

fn backend_name(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "postgres",
        DbBackend::Sqlite => "sqlite",
        _ => "unsupported",
    }
}

/// A message for people, on stderr (a closed stderr is not worth failing a benchmark over).
fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

async fn create_collection(db: &Database) -> Result<Collection, BenchError> {
    let fields = [
        json!({"name": "title", "type": "string"}),
        json!({"name": "status", "type": "select",
               "settings": {"options": ["draft", "published", "archived"]}}),
        json!({"name": "views", "type": "number"}),
        json!({"name": "body", "type": "textarea"}),
        json!({"name": "tags", "type": "tag"}),
    ]
    .iter()
    .map(FieldDef::from_json)
    .collect::<Result<Vec<_>, _>>()
    .map_err(BenchError::setup)?;
    let def = CollectionDef {
        slug: CollectionSlug::parse(COLLECTION).map_err(BenchError::setup)?,
        name: "Articles".into(),
        is_singleton: false,
        fields,
    };
    Ok(save_collection(db, &def).await?.0)
}

/// Inserts `count` items in one transaction, [`BATCH`] rows per statement. `data` is bound as
/// text and converted to the stored JSONB the way the storage crate's `bind_json` does it.
async fn seed(
    db: &Database,
    collection: &Collection,
    locales: &ContentLocales,
    count: u64,
) -> Result<(), BenchError> {
    let backend = db.get_database_backend();
    let key = HashKey::new(b"vellum-bench".to_vec());
    let ctx = WriteContext {
        locales,
        locale: locales.default_locale(),
        hash_key: &key,
    };
    let collection_id = i32::try_from(collection.id).map_err(BenchError::setup)?;
    let mut rng = XorShift::new(0x005E_ED0F_1EAF);
    let started = OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .map_err(BenchError::setup)?;
    let tx = db.begin().await?;
    let mut done = 0;
    while done < count {
        let rows = BATCH.min(count - done);
        let mut sql =
            String::from("INSERT INTO items (collection_id, data, created_at, updated_at) VALUES ");
        let mut values: Vec<Value> = Vec::new();
        for row in 0..rows {
            let input = article(&mut rng, done + row + 1);
            let write = prepare_write(collection.schema(), &input, WriteMode::Create, &ctx)
                .map_err(|e| BenchError::Setup(format!("item {}: {e:?}", done + row + 1)))?;
            // Older items first, one second apart, like a site that grew over time.
            let at =
                started - time::Duration::seconds(i64::try_from(count - done - row).unwrap_or(0));
            values.push(Json::Object(write.data).to_string().into());
            let data = placeholder(backend, values.len());
            let data = if backend == DbBackend::Postgres {
                format!("CAST({data} AS jsonb)")
            } else {
                format!("jsonb({data})")
            };
            values.push(at.into());
            let created = placeholder(backend, values.len());
            values.push(at.into());
            let updated = placeholder(backend, values.len());
            if row > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("({collection_id}, {data}, {created}, {updated})"));
        }
        tx.execute_raw(Statement::from_sql_and_values(backend, sql, values))
            .await?;
        done += rows;
    }
    tx.commit().await?;
    if backend == DbBackend::Sqlite {
        // Move the seeded pages from the WAL into the database file: the steady state a server
        // reads in, rather than a 100 MB WAL every read has to consult.
        db.execute_unprepared("PRAGMA wal_checkpoint(TRUNCATE)")
            .await?;
    }
    Ok(())
}

/// The `n`th bound value's placeholder (1-based).
fn placeholder(backend: DbBackend, n: usize) -> String {
    if backend == DbBackend::Postgres {
        format!("${n}")
    } else {
        "?".to_owned()
    }
}

/// Fresh planner statistics on both backends, as a server that has been running would have.
async fn analyze(db: &Database) -> Result<(), BenchError> {
    db.execute_unprepared("ANALYZE").await?;
    Ok(())
}

/// The smallest and largest live item id of the collection, and the number of live items.
async fn id_range(db: &Database, collection: &Collection) -> Result<(i64, i64, i64), BenchError> {
    let backend = db.get_database_backend();
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            format!(
                "SELECT MIN(id) AS lo, MAX(id) AS hi, COUNT(*) AS n FROM items \
                 WHERE collection_id = {} AND deleted_at IS NULL",
                placeholder(backend, 1)
            ),
            [Value::from(
                i32::try_from(collection.id).map_err(BenchError::setup)?,
            )],
        ))
        .await?
        .ok_or_else(|| BenchError::setup("no row from MIN/MAX"))?;
    let lo: Option<i32> = row.try_get("", "lo")?;
    let hi: Option<i32> = row.try_get("", "hi")?;
    let n: i64 = row.try_get("", "n")?;
    match (lo, hi) {
        (Some(lo), Some(hi)) => Ok((i64::from(lo), i64::from(hi), n)),
        _ => Err(BenchError::setup(format!("`{COLLECTION}` has no items"))),
    }
}

const WORDS: &[&str] = &[
    "content",
    "schema",
    "field",
    "editor",
    "release",
    "draft",
    "review",
    "archive",
    "media",
    "image",
    "locale",
    "translation",
    "workflow",
    "publish",
    "preview",
    "asset",
    "collection",
    "relation",
    "filter",
    "page",
    "headless",
    "api",
    "delivery",
    "cache",
    "webhook",
    "revision",
    "author",
    "reader",
    "storage",
    "query",
    "index",
    "latency",
    "budget",
    "design",
    "system",
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "for",
    "with",
    "on",
    "is",
    "that",
    "by",
    "from",
];
const TAGS: &[&str] = &[
    "news", "tech", "design", "product", "guide", "release", "opinion", "events",
];
const STATUSES: &[&str] = &["draft", "published", "archived"];

fn pick<'a>(rng: &mut XorShift, list: &[&'a str]) -> &'a str {
    let i = usize::try_from(rng.below(list.len() as i64)).unwrap_or(0);
    list.get(i).copied().unwrap_or_default()
}

/// A realistic article: a short title, a status (a third each), views uniform in 0..10000, a
/// body of 200 to 600 bytes and up to four tags.
fn article(rng: &mut XorShift, n: u64) -> Map<String, Json> {
    let title = format!(
        "{} {} {} #{n}",
        pick(rng, WORDS),
        pick(rng, WORDS),
        pick(rng, WORDS)
    );
    let body_len = usize::try_from(200 + rng.below(400)).unwrap_or(200);
    let mut body = String::with_capacity(body_len + 16);
    while body.len() < body_len {
        if !body.is_empty() {
            body.push(' ');
        }
        body.push_str(pick(rng, WORDS));
    }
    body.push('.');
    let mut tags: Vec<&str> = (0..rng.below(5)).map(|_| pick(rng, TAGS)).collect();
    tags.sort_unstable();
    tags.dedup();
    let data = json!({
        "title": title,
        "status": pick(rng, STATUSES),
        "views": rng.below(10_000),
        "body": body,
        "tags": tags,
    });
    match data {
        Json::Object(map) => map,
        _ => Map::new(),
    }
}

/// xorshift64*: deterministic, so every run seeds the same items.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// Uniform enough in `0..bound` for a benchmark (`bound` > 0).
    fn below(&mut self, bound: i64) -> i64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 1;
        let bound = u64::try_from(bound.max(1)).unwrap_or(1);
        i64::try_from(x % bound).unwrap_or(0)
    }
}

/// Calls `f` for a warm-up (a tenth of `iterations`, at least 5), then `iterations` times timed.
async fn measure(
    iterations: u64,
    mut f: impl AsyncFnMut() -> Result<(), BenchError>,
) -> Result<Stats, BenchError> {
    for _ in 0..(iterations / 10).max(5) {
        f().await?;
    }
    let mut samples = Vec::with_capacity(usize::try_from(iterations).unwrap_or(0));
    for _ in 0..iterations {
        let started = Instant::now();
        f().await?;
        samples.push(started.elapsed());
    }
    Ok(Stats::of(samples))
}

/// Latency figures in milliseconds.
struct Stats {
    median: f64,
    p95: f64,
    mean: f64,
    min: f64,
    max: f64,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        let n = samples.len();
        let median = if n % 2 == 1 {
            ms(samples.get(n / 2))
        } else {
            f64::midpoint(ms(samples.get(n / 2 - 1)), ms(samples.get(n / 2)))
        };
        // Nearest rank.
        let p95 = ms(samples.get((n * 95).div_ceil(100).saturating_sub(1)));
        let total: Duration = samples.iter().sum();
        Self {
            median,
            p95,
            mean: total.as_secs_f64() * 1000.0 / n.max(1) as f64,
            min: ms(samples.first()),
            max: ms(samples.last()),
        }
    }

    fn line(&self, what: &str, target: f64) -> String {
        let verdict = if self.median < target {
            "met"
        } else {
            "MISSED"
        };
        format!(
            "{what}  median {:8.3} ms  p95 {:8.3} ms  mean {:8.3} ms  (min {:.3}, max {:.3})  target median < {target} ms: {verdict}",
            self.median, self.p95, self.mean, self.min, self.max
        )
    }

    fn json(&self, page: Option<u64>, target: f64) -> Json {
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        let mut out = json!({
            "median_ms": round(self.median),
            "p95_ms": round(self.p95),
            "mean_ms": round(self.mean),
            "min_ms": round(self.min),
            "max_ms": round(self.max),
            "target_median_ms": target,
            "met": self.median < target,
        });
        if let (Some(page), Json::Object(map)) = (page, &mut out) {
            map.insert("page".into(), page.into());
        }
        out
    }
}
