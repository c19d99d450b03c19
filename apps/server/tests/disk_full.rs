//! The database's disk fills up and is freed again, black-box (security review R8): one
//! `vellum-server` process on a SQLite file. While writes cannot succeed they answer 503 with
//! `Retry-After` and `/health/ready` answers 503; once space is back, writes succeed, reads are
//! current, and every write answered 201 is still there after the process is killed and a new
//! one starts on the same file. Before the fix, writes answered 201 after the recovery were never
//! committed (lost on restart), most writes failed and reads alternated between snapshots.
//!
//! How the disk fills: mounting a small filesystem needs privileges, and `PRAGMA max_page_count`
//! is per connection (the test cannot set it on the server's own connections). Instead the test
//! lowers the server's `RLIMIT_FSIZE` (`prlimit --pid`, util-linux) to the size its write-ahead
//! log has reached, so every write that would grow a file fails (`EFBIG`, which SQLite reports
//! as `SQLITE_IOERR_WRITE`, or `SQLITE_FULL` for a short write), exactly where a full disk fails
//! it; raising the limit again is the space coming back. The server runs with `SIGXFSZ`
//! ignored, so the limit fails writes instead of killing it. Nothing in the product knows about
//! the test. Without `prlimit` the test says why it is skipped.
//!
//! SQLite only: a PostgreSQL server's files belong to another process. The PostgreSQL
//! equivalent (a connection returned to the pool inside a transaction is never reused) is
//! `crates/storage/tests/connections.rs`, and the status mapping of its disk-full SQLSTATE is a
//! unit test of `vellum_storage::StorageError`'s classification (`is_unavailable`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::{Admin, Response, Server, ServerConfig, eventually};

const ITEMS: &str = "/api/v1/collections/notes/items";

fn manifest() -> Value {
    json!({
        "collections": [
            {"slug": "notes", "name": "Notes", "fields": [
                {"name": "title", "type": "string", "settings": {}},
                {"name": "body", "type": "textarea", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public", "collection_permissions": {"notes": {"read": true}}},
            {"name": "writer", "collection_permissions": {
                "notes": {"create": true, "read": true, "update": true, "delete": true}
            }}
        ],
        "api_keys": [{"name": "writer-key", "role": "writer"}]
    })
}

/// Sets the server's file size limit (soft; the hard limit stays unlimited).
fn set_file_size_limit(server: &Server, limit: &str) {
    let status = Command::new("prlimit")
        .args([
            "--pid",
            &server.pid().to_string(),
            &format!("--fsize={limit}:unlimited"),
        ])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit --fsize={limit} failed");
}

fn prlimit_available() -> bool {
    Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One 20 KB note; `Ok(id)` on 201, `Err(response)` otherwise.
async fn write(server: &Server, key: &str, n: usize) -> Result<i64, Response> {
    let res = server
        .json(
            Method::POST,
            ITEMS,
            Some(key),
            &json!({"data": {"title": format!("note {n}"), "body": "x".repeat(20_000)}}),
        )
        .await;
    if res.status == 201 {
        Ok(res.json()["data"]["id"].as_i64().unwrap())
    } else {
        Err(res)
    }
}

/// The id of the newest note an anonymous client reads (a unique query string, so no cache can
/// answer).
async fn newest_read(server: &Server, bust: usize) -> i64 {
    let res = server
        .get(&format!("{ITEMS}?per_page=1&sort=-id&bust={bust}"), None)
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    res.json()["data"][0]["id"].as_i64().unwrap()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

async fn ready_status(server: &Server) -> Result<u16, String> {
    Ok(server.get("/health/ready", None).await.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_loses_no_acknowledged_write_and_the_server_recovers() {
    if !prlimit_available() {
        eprintln!(
            "skipped a_full_disk_loses_no_acknowledged_write_and_the_server_recovers: \
             prlimit (util-linux) is not installed"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vellum.db");
    let wal = dir.path().join("vellum.db-wal");
    let url = format!("sqlite://{}?mode=rwc", file.display());
    let admin = Admin {
        database_url: url.clone(),
        redis_url: None,
    };
    let key = admin.apply(&manifest()).await["writer-key"].clone();
    let config = ServerConfig::new("server on a disk that fills up", &url)
        .env("VELLUM_CACHE", "off")
        .ignoring_sigxfsz();
    let mut server = config.clone().start().await;

    let mut acknowledged: Vec<i64> = Vec::new();
    for n in 0..5 {
        acknowledged.push(write(&server, &key, n).await.unwrap_or_else(|r| {
            panic!(
                "write {n} before the disk filled: {} {}",
                r.status,
                r.text()
            )
        }));
    }

    // The disk fills: nothing may grow past the log's current size.
    let limit = file_len(&wal).max(file_len(&file));
    assert!(limit > 0, "no database file at {}", file.display());
    set_file_size_limit(&server, &limit.to_string());
    let mut failures = 0;
    for n in 100..200 {
        match write(&server, &key, n).await {
            Ok(id) => acknowledged.push(id),
            Err(res) => {
                assert_eq!(res.status, 503, "a write on a full disk: {}", res.text());
                assert_eq!(res.json(), json!({"message": "Service unavailable."}));
                let retry = res
                    .header("retry-after")
                    .unwrap_or_else(|| panic!("a 503 without Retry-After on a full disk"));
                assert!(retry.parse::<u64>().is_ok_and(|s| s >= 1), "{retry}");
                failures += 1;
                if failures == 6 {
                    break;
                }
            }
        }
    }
    assert_eq!(failures, 6, "the disk never filled up");
    let (_, took) = eventually(
        "/health/ready answers 503 while writes cannot succeed",
        Duration::from_secs(5),
        || async {
            match ready_status(&server).await? {
                503 => Ok(()),
                other => Err(format!("{other}")),
            }
        },
    )
    .await;
    eprintln!("full disk: /health/ready 503 after {took:?}");
    assert_eq!(newest_read(&server, 0).await, *acknowledged.last().unwrap());

    // Space comes back.
    set_file_size_limit(&server, "unlimited");
    eventually(
        "/health/ready answers 200 once space is back",
        Duration::from_secs(5),
        || async {
            match ready_status(&server).await? {
                200 => Ok(()),
                other => Err(format!("{other}")),
            }
        },
    )
    .await;
    let mut outcomes = Vec::new();
    for n in 1000..1020 {
        match write(&server, &key, n).await {
            Ok(id) => {
                acknowledged.push(id);
                outcomes.push(201);
            }
            Err(res) => outcomes.push(res.status),
        }
    }
    let created = outcomes.iter().filter(|&&s| s == 201).count();
    assert!(
        created >= 18,
        "writes once space was back: {outcomes:?} (at least 18 of 20 must succeed)"
    );
    let newest = *acknowledged.last().unwrap();
    for bust in 1..=16 {
        assert_eq!(
            newest_read(&server, bust).await,
            newest,
            "read {bust} after the recovery is stale"
        );
    }

    // Every acknowledged write survives the process (killed, not stopped gracefully: a commit
    // is a commit) and is what a new server on the same file serves.
    server.kill();
    let server = config.start().await;
    let res = server
        .get(&format!("{ITEMS}?per_page=100&sort=id"), None)
        .await;
    assert_eq!(res.status, 200, "{}", res.text());
    let stored: Vec<i64> = res.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect();
    let missing: Vec<i64> = acknowledged
        .iter()
        .copied()
        .filter(|id| !stored.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged writes are lost after a restart: {missing:?}",
        missing.len()
    );
    assert_eq!(stored.len(), acknowledged.len(), "stored {stored:?}");
}
