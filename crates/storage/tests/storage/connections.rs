//! Pooled connections cannot be poisoned (security review R8): a connection that comes back to
//! the pool inside a transaction nobody will commit is closed, never handed out again.
//!
//! The trigger seen in production was a write on a full disk: SQLite rolls the transaction back
//! by itself, the driver's `ROLLBACK` then fails, and the driver keeps counting one open
//! transaction. Every later `BEGIN IMMEDIATE` on that connection became a `SAVEPOINT` inside a
//! transaction that was never committed, so writes answered 201 were lost.
//!
//! These tests build the pool with [`vellum_storage::connect_with`], the function the server
//! uses, so the pool's own release hook is what is tested. A SQLite "full disk" is staged with
//! `PRAGMA max_page_count` on the pool's only connection (the limit is per connection, so the
//! pool is sized to one, making it the connection that hits the limit); SQLite answers
//! `SQLITE_FULL` exactly as on a full disk. PostgreSQL has no disk-full short of a tablespace
//! quota; its equivalent is the state the bug left behind, a pooled connection returned with
//! the driver's transaction still open, staged through the driver's transaction manager.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use sea_orm::sqlx;
use sea_orm::{
    ConnectionTrait, DbBackend, SqliteTransactionMode, Statement, TransactionOptions,
    TransactionTrait,
};
use vellum_storage::testing::TestDb;
use vellum_storage::{Database, PoolOptions, StorageError, WriteCheck, connect, connect_with};

/// Whether storage classifies `err` as an outage.
fn db_unavailable(err: &sea_orm::DbErr) -> bool {
    StorageError::from(err.clone()).is_unavailable()
}

/// Whether storage classifies `err` as a failure of the database's storage.
fn db_storage_failure(err: &sea_orm::DbErr) -> bool {
    StorageError::from(err.clone()).is_storage_failure()
}

/// What `begin_write` (the storage crate's write paths) asks for.
fn immediate() -> TransactionOptions {
    TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    }
}

/// A pool of one connection on the test database, built as the server builds it.
async fn one_connection_pool(db: &TestDb) -> Database {
    let options = PoolOptions {
        max_connections: Some(1),
        ..PoolOptions::default()
    };
    connect_with(db.url(), &options).await.unwrap()
}

async fn exec(db: &impl ConnectionTrait, sql: &str) {
    db.execute_unprepared(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn count(db: &impl ConnectionTrait, sql: &str) -> i64 {
    let row = db
        .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<i64>(0).unwrap()
}

/// One committed write through the pool, as a write path does it: `BEGIN IMMEDIATE`, insert,
/// commit. `Ok` means the caller would answer 201.
async fn write_note(pool: &Database, id: i64, body_bytes: usize) -> Result<(), String> {
    let tx = pool
        .begin_with_options(immediate())
        .await
        .map_err(|e| e.to_string())?;
    let body = "x".repeat(body_bytes);
    let sql = match tx.get_database_backend() {
        DbBackend::Postgres => "INSERT INTO notes (id, body) VALUES ($1, $2)",
        _ => "INSERT INTO notes (id, body) VALUES (?, ?)",
    };
    tx.execute_raw(Statement::from_sql_and_values(
        tx.get_database_backend(),
        sql,
        [id.into(), body.into()],
    ))
    .await
    .map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())
}

/// A write that fails inside its transaction for a reason of the request (a duplicate key), so
/// the transaction is rolled back by drop, as a handler's `?` does.
async fn failed_write(pool: &Database, existing_id: i64) {
    let result = write_note(pool, existing_id, 10).await;
    assert!(
        result.is_err(),
        "the duplicate id {existing_id} was accepted"
    );
}

#[tokio::test]
async fn a_write_on_a_full_sqlite_database_does_not_poison_the_pool() {
    let db = TestDb::new().await.unwrap();
    if db.backend() != DbBackend::Sqlite {
        eprintln!("skipped: max_page_count stages a full disk on SQLite only");
        return;
    }
    let pool = one_connection_pool(&db).await;
    exec(
        &pool,
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    )
    .await;
    let pages = count(&pool, "PRAGMA page_count").await;
    exec(&pool, &format!("PRAGMA max_page_count = {}", pages + 40)).await;

    // Fill the database: 20 KB writes until one fails.
    let mut acknowledged = Vec::new();
    let mut full = None;
    for id in 1..=200 {
        match write_note(&pool, id, 20_000).await {
            Ok(()) => acknowledged.push(id),
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let full = full.expect("the database never filled up");
    assert!(full.contains("full"), "not a full-database error: {full}");
    assert!(!acknowledged.is_empty());

    // Space comes back (a fresh connection would have no limit at all).
    exec(&pool, "PRAGMA max_page_count = 1073741823").await;

    // Ordinary traffic afterwards: writes, some of which fail for reasons of their own.
    let mut failures = Vec::new();
    for id in 1001..=1020 {
        if id % 5 == 0 {
            failed_write(&pool, acknowledged[0]).await;
        }
        match write_note(&pool, id, 100).await {
            Ok(()) => acknowledged.push(id),
            Err(e) => failures.push(format!("{id}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "writes failed once space was back: {failures:?}"
    );

    // Every acknowledged write is visible from a new connection, and the pool reads it too.
    let fresh = connect(db.url()).await.unwrap();
    let newest = *acknowledged.last().unwrap();
    assert_eq!(
        count(&fresh, "SELECT count(*) FROM notes").await,
        i64::try_from(acknowledged.len()).unwrap(),
        "acknowledged writes are missing from a new connection"
    );
    assert_eq!(count(&fresh, "SELECT max(id) FROM notes").await, newest);
    assert_eq!(count(&pool, "SELECT max(id) FROM notes").await, newest);
}

#[tokio::test]
async fn a_full_sqlite_database_is_a_retryable_outage() {
    let db = TestDb::new().await.unwrap();
    if db.backend() != DbBackend::Sqlite {
        eprintln!("skipped: max_page_count stages a full disk on SQLite only");
        return;
    }
    let pool = one_connection_pool(&db).await;
    exec(
        &pool,
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    )
    .await;
    let pages = count(&pool, "PRAGMA page_count").await;
    exec(&pool, &format!("PRAGMA max_page_count = {pages}")).await;
    let err = pool
        .execute_unprepared("INSERT INTO notes (id, body) VALUES (1, zeroblob(100000))")
        .await
        .unwrap_err();
    assert!(db_unavailable(&err), "SQLITE_FULL is not an outage: {err}");
    assert!(
        db_storage_failure(&err),
        "SQLITE_FULL is not a storage failure"
    );
    // A bad query is not an outage.
    let err = pool
        .execute_unprepared("SELECT * FROM nowhere")
        .await
        .unwrap_err();
    assert!(!db_unavailable(&err), "a missing table is an outage: {err}");
    assert!(!db_storage_failure(&err));
}

/// The readiness write check's one page can fit where a request's write cannot (SQLite reuses
/// the WAL's space), so a request that failed on the storage fails the check for a moment by
/// itself; then the check's own write decides again.
#[tokio::test]
async fn a_storage_failure_of_a_request_fails_the_write_check_for_a_moment() {
    let db = TestDb::new().await.unwrap();
    let pool = connect(db.url()).await.unwrap();
    let check = WriteCheck::default();
    check.check(&pool).await.unwrap();
    check.note_storage_failure();
    let err = check.check(&pool).await.unwrap_err();
    assert!(
        matches!(err, vellum_storage::StorageError::StorageFailing),
        "{err:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(3100)).await;
    check.check(&pool).await.unwrap();
}

/// What the failed write left behind, staged on a pooled connection.
#[derive(Debug, Clone, Copy)]
enum Leftover {
    /// The driver counts an open transaction and the database has one (nobody will commit it).
    OpenTransaction,
    /// The driver counts an open transaction the database already rolled back by itself: the
    /// state right after a write failed on a full SQLite database.
    PhantomTransaction,
}

/// Returns a connection to the pool in the state `leftover` names. `DatabaseConnection` has no
/// API that does this by mistake; the driver's own transaction, never committed nor rolled back
/// (forgotten, so its drop does not roll it back), does.
async fn release_with(pool: &Database, leftover: Leftover) {
    async fn stage<C: sqlx::Connection>(conn: &mut C, leftover: Leftover)
    where
        for<'c> &'c mut C: sqlx::Executor<'c>,
    {
        let mut tx = conn.begin().await.unwrap();
        if matches!(leftover, Leftover::PhantomTransaction) {
            sqlx::Executor::execute(&mut *tx, "ROLLBACK").await.unwrap();
        }
        std::mem::forget(tx);
        assert!(conn.is_in_transaction());
    }
    match pool.get_database_backend() {
        DbBackend::Postgres => {
            let mut conn = pool
                .sea_orm_connection()
                .get_postgres_connection_pool()
                .acquire()
                .await
                .unwrap();
            stage(&mut *conn, leftover).await;
        }
        _ => {
            let mut conn = pool
                .sea_orm_connection()
                .get_sqlite_connection_pool()
                .acquire()
                .await
                .unwrap();
            stage(&mut *conn, leftover).await;
        }
    }
}

#[tokio::test]
async fn a_connection_released_inside_a_transaction_is_not_reused() {
    let db = TestDb::new().await.unwrap();
    let pool = one_connection_pool(&db).await;
    exec(
        &pool,
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    )
    .await;

    let mut id = 0;
    for leftover in [Leftover::OpenTransaction, Leftover::PhantomTransaction] {
        // A transactional write, a failed one (rolled back by drop), and a plain statement,
        // each after the poisoned connection went back to the pool.
        release_with(&pool, leftover).await;
        id += 1;
        write_note(&pool, id, 10)
            .await
            .unwrap_or_else(|e| panic!("{leftover:?}: {e}"));
        release_with(&pool, leftover).await;
        failed_write(&pool, id).await;
        id += 1;
        write_note(&pool, id, 10)
            .await
            .unwrap_or_else(|e| panic!("{leftover:?}, after a failed write: {e}"));
        release_with(&pool, leftover).await;
        id += 1;
        exec(
            &pool,
            &format!("INSERT INTO notes (id, body) VALUES ({id}, 'plain')"),
        )
        .await;

        let fresh = connect(db.url()).await.unwrap();
        assert_eq!(
            count(&fresh, "SELECT count(*) FROM notes").await,
            id,
            "{leftover:?}: a write on a connection left inside a transaction was never committed"
        );
    }
}

/// A per-connection setting, to tell whether the pool's one connection is still the same one.
async fn marker(pool: &Database) -> String {
    let sql = match pool.get_database_backend() {
        DbBackend::Postgres => "SELECT current_setting('application_name')",
        _ => "SELECT CAST(cache_size AS TEXT) FROM pragma_cache_size()",
    };
    let row = pool
        .query_one_raw(Statement::from_string(pool.get_database_backend(), sql))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<String>(0).unwrap()
}

#[tokio::test]
async fn a_transaction_rolled_back_on_error_keeps_its_connection() {
    // The check must not cost a reconnect on the ordinary error path: a handler's `?` drops
    // the transaction, its rollback succeeds, and the connection is clean.
    let db = TestDb::new().await.unwrap();
    let pool = one_connection_pool(&db).await;
    exec(
        &pool,
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
    )
    .await;
    match pool.get_database_backend() {
        DbBackend::Postgres => exec(&pool, "SET application_name = 'marked'").await,
        _ => exec(&pool, "PRAGMA cache_size = -1234").await,
    }
    let marked = marker(&pool).await;
    assert!(marked == "marked" || marked == "-1234", "{marked}");
    write_note(&pool, 1, 10).await.unwrap();
    failed_write(&pool, 1).await;
    {
        // Dropped without commit or rollback, as `?` does.
        let tx = pool.begin_with_options(immediate()).await.unwrap();
        exec(&tx, "INSERT INTO notes (id, body) VALUES (2, 'dropped')").await;
    }
    assert_eq!(marker(&pool).await, marked, "the connection was replaced");
    let fresh = connect(db.url()).await.unwrap();
    assert_eq!(count(&fresh, "SELECT count(*) FROM notes").await, 1);
}

/// Issue 23: SQLite's writers queue in the process before they take a connection. While one
/// write transaction holds the lock, writers waiting for it hold no connection, so a read still
/// gets one at once (before, each waiting writer sat on a connection inside SQLite's busy
/// handler and a pool of four was exhausted by three of them); and they all commit, in turn.
#[tokio::test]
async fn waiting_sqlite_writers_hold_no_connection_and_all_commit() {
    let test_db = TestDb::new().await.unwrap();
    if test_db.conn.get_database_backend() != DbBackend::Sqlite {
        return; // PostgreSQL writers lock rows, not the database: nothing queues
    }
    let options = PoolOptions {
        max_connections: Some(4),
        acquire_timeout: std::time::Duration::from_secs(1),
        ..PoolOptions::default()
    };
    let db = connect_with(test_db.url(), &options).await.unwrap();
    exec(&db, "CREATE TABLE queued (n INTEGER NOT NULL)").await;
    let holder = db.begin_with_options(immediate()).await.unwrap();
    exec(&holder, "INSERT INTO queued (n) VALUES (0)").await;
    let writers: Vec<_> = (1..=8)
        .map(|n| {
            let db = db.clone();
            tokio::spawn(async move {
                let tx = db.begin_with_options(immediate()).await.unwrap();
                exec(&tx, &format!("INSERT INTO queued (n) VALUES ({n})")).await;
                tx.commit().await.unwrap();
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    // Eight writers wait, one holds the lock, and a read still gets one of the four connections.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM queued").await, 0);
    holder.commit().await.unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(count(&db, "SELECT COUNT(*) FROM queued").await, 9);
}
