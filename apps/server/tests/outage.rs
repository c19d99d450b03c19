//! Dependency outages, black-box (issue 9): one `vellum-server` process reaches PostgreSQL or
//! Redis through a TCP proxy of the test harness; stopping the proxy is the outage, starting it
//! again on the same port the recovery. The server must answer quickly (503 JSON, never hang),
//! report the failed dependency in `/health/ready`, and recover without a restart.
//!
//! The database test needs `VELLUM_TEST_POSTGRES_URL`, the Redis test that and
//! `VELLUM_TEST_REDIS_URL`; without them they print why they are skipped. A SQLite outage cannot
//! be staged with a proxy (the database is a local file), so there is no SQLite variant.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::{
    Admin, POSTGRES_ENV, REDIS_ENV, Response, ServerConfig, TcpProxy, eventually, host_port,
    notes_manifest, redis_database, redis_db, services, titles, via_port,
};
use vellum_storage::testing::TestDb;

const ITEMS: &str = "/api/v1/collections/notes/items";

/// Small pool timeouts, so an outage is noticed in about a second.
const OUTAGE_ENV: [(&str, &str); 4] = [
    ("VELLUM_DB_MAX_CONNECTIONS", "4"),
    ("VELLUM_DB_CONNECT_TIMEOUT", "1"),
    ("VELLUM_DB_ACQUIRE_TIMEOUT", "1"),
    ("VELLUM_REQUEST_TIMEOUT", "2"),
];

fn with_outage_env(mut config: ServerConfig) -> ServerConfig {
    for (name, value) in OUTAGE_ENV {
        config = config.env(name, value);
    }
    config
}

/// The message of the contract's error envelope (`{"message": …}`, docs/api.md).
fn error_message(body: &Value) -> Option<&str> {
    body["message"].as_str()
}

/// A clean 503: status, a JSON content type and an error message, quickly.
fn assert_unavailable(res: &Response, what: &str) {
    assert_eq!(res.status, 503, "{what}: {}", res.text());
    let content_type = res.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{what}: content-type {content_type:?}"
    );
    let body = res.json();
    assert_eq!(
        error_message(&body),
        Some("Service unavailable."),
        "{what}: {body}"
    );
    assert!(
        res.elapsed < Duration::from_secs(5),
        "{what}: answered after {:?}",
        res.elapsed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_gives_503_quickly_and_the_server_recovers_without_restart() {
    // TestDb::empty picks PostgreSQL because VELLUM_TEST_POSTGRES_URL is set.
    let Some([_postgres]) = services(
        "a_database_outage_gives_503_quickly_and_the_server_recovers_without_restart",
        &[POSTGRES_ENV],
    )
    .map(|urls| <[String; 1]>::try_from(urls).unwrap()) else {
        return;
    };
    let db = TestDb::empty().await.unwrap();
    let admin = Admin {
        database_url: db.url().to_owned(),
        redis_url: None,
    };
    let key = admin.apply(&notes_manifest()).await["writer-key"].clone();

    let proxy = TcpProxy::new(&host_port(db.url(), 5432)).await;
    // The response cache is off: a cached answer during the outage would hide what is tested.
    let server = with_outage_env(ServerConfig::new(
        "server behind a PostgreSQL proxy",
        &via_port(db.url(), proxy.port()),
    ))
    .env("VELLUM_CACHE", "off")
    .start()
    .await;

    let ready = server.get("/health/ready", None).await;
    assert_eq!(
        ready.json(),
        json!({"status": "ok", "checks": {"database": "ok"}, "realtime": "postgres"})
    );
    let list = server.get(ITEMS, None).await;
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(titles(&list), ["first", "second"]);

    // Outage.
    proxy.stop().await;
    let (ready, took) = eventually(
        "/health/ready answers 503 once PostgreSQL is unreachable",
        Duration::from_secs(5),
        || async {
            let res = server.get("/health/ready", None).await;
            if res.status == 503 {
                Ok(res)
            } else {
                Err(format!(
                    "{} {} after {:?}",
                    res.status,
                    res.text(),
                    res.elapsed
                ))
            }
        },
    )
    .await;
    assert_eq!(
        ready.json(),
        json!({"status": "failed", "checks": {"database": "failed"}, "realtime": "postgres"}),
        "ready body during the outage"
    );
    eprintln!("database outage: /health/ready 503 after {took:?}");

    let read = server.get(ITEMS, None).await;
    assert_unavailable(&read, "GET items during the database outage");
    let keyed = server.get(ITEMS, Some(&key)).await;
    assert_unavailable(&keyed, "keyed GET items during the database outage");
    let write = server
        .json(
            Method::POST,
            ITEMS,
            Some(&key),
            &json!({"data": {"title": "lost"}}),
        )
        .await;
    assert_unavailable(&write, "POST items during the database outage");
    let live = server.get("/health/live", None).await;
    assert_eq!(live.status, 200, "/health/live during the database outage");

    // Recovery, without a restart.
    proxy.start().await;
    let (_, took) = eventually(
        "/health/ready and the API answer 200 again after PostgreSQL returns",
        Duration::from_secs(10),
        || async {
            let ready = server.get("/health/ready", None).await;
            let list = server.get(ITEMS, None).await;
            if ready.status == 200 && list.status == 200 {
                Ok(())
            } else {
                Err(format!(
                    "ready {} {}, items {} {}",
                    ready.status,
                    ready.text(),
                    list.status,
                    list.text()
                ))
            }
        },
    )
    .await;
    eprintln!("database outage: recovered {took:?} after the proxy restarted");
    let created = server
        .json(
            Method::POST,
            ITEMS,
            Some(&key),
            &json!({"data": {"title": "after the outage"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(
        titles(&server.get(ITEMS, None).await),
        ["first", "second", "after the outage"],
        "the write refused during the outage must not have been stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_redis_outage_serves_uncached_and_the_cache_recovers_without_stale_answers() {
    let Some([_postgres, redis]) = services(
        "a_redis_outage_serves_uncached_and_the_cache_recovers_without_stale_answers",
        &[POSTGRES_ENV, REDIS_ENV],
    )
    .map(|urls| <[String; 2]>::try_from(urls).unwrap()) else {
        return;
    };
    let db = TestDb::empty().await.unwrap();
    let redis = redis_database(&redis, redis_db::OUTAGE_REDIS).await;
    let admin = Admin {
        database_url: db.url().to_owned(),
        redis_url: Some(redis.clone()),
    };
    let key = admin.apply(&notes_manifest()).await["writer-key"].clone();

    let proxy = TcpProxy::new(&host_port(&redis, 6379)).await;
    let server = with_outage_env(ServerConfig::new("server behind a Redis proxy", db.url()))
        .redis(&via_port(&redis, proxy.port()))
        .start()
        .await;

    assert_eq!(
        server.get("/health/ready", None).await.json(),
        json!({"status": "ok", "checks": {"database": "ok", "redis": "ok"}, "realtime": "redis"})
    );
    let first = server.get(ITEMS, None).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let second = server.get(ITEMS, None).await;
    assert_eq!(second.cache(), Some("hit"), "healthy: second read is a hit");

    // Outage: the API keeps serving (uncached), readiness reports Redis.
    proxy.stop().await;
    let during = server.get(ITEMS, None).await;
    assert_eq!(
        during.status,
        200,
        "GET during the Redis outage: {}",
        during.text()
    );
    assert!(
        during.elapsed < Duration::from_secs(5),
        "GET during the Redis outage took {:?}",
        during.elapsed
    );
    let (ready, took) = eventually(
        "/health/ready answers 503 with checks.redis failed once Redis is unreachable",
        Duration::from_secs(5),
        || async {
            let res = server.get("/health/ready", None).await;
            if res.status == 503 {
                Ok(res)
            } else {
                Err(format!(
                    "{} {} after {:?}",
                    res.status,
                    res.text(),
                    res.elapsed
                ))
            }
        },
    )
    .await;
    let body = ready.json();
    assert_eq!(body["checks"]["redis"], "failed", "{body}");
    assert_eq!(body["checks"]["database"], "ok", "{body}");
    eprintln!("redis outage: /health/ready 503 after {took:?}");

    // A write during the outage reaches the database (and its epoch bump cannot reach Redis).
    let created = server
        .json(
            Method::POST,
            ITEMS,
            Some(&key),
            &json!({"data": {"title": "written during the outage"}}),
        )
        .await;
    assert_eq!(
        created.status,
        201,
        "write during the Redis outage: {}",
        created.text()
    );
    for n in 0..2 {
        let res = server.get(ITEMS, None).await;
        assert_eq!(res.status, 200, "GET {n} during the Redis outage");
        assert_ne!(
            res.cache(),
            Some("hit"),
            "GET {n} during the Redis outage cannot be a cache hit"
        );
        assert!(titles(&res).contains(&"written during the outage".to_owned()));
    }
    let live = server.get("/health/live", None).await;
    assert_eq!(live.status, 200, "/health/live during the Redis outage");

    // Recovery: ready again, caching again, and never the entry cached before the outage.
    proxy.start().await;
    let (_, took) = eventually(
        "/health/ready 200 and a cache hit again after Redis returns",
        Duration::from_secs(10),
        || async {
            let ready = server.get("/health/ready", None).await;
            let res = server.get(ITEMS, None).await;
            assert_eq!(res.status, 200, "GET after Redis returned: {}", res.text());
            assert!(
                titles(&res).contains(&"written during the outage".to_owned()),
                "stale answer after Redis returned (x-cache {:?}): {:?}",
                res.cache(),
                titles(&res)
            );
            if ready.status == 200 && res.cache() == Some("hit") {
                Ok(())
            } else {
                Err(format!(
                    "ready {} {}, x-cache {:?}",
                    ready.status,
                    ready.text(),
                    res.cache()
                ))
            }
        },
    )
    .await;
    eprintln!("redis outage: ready and caching {took:?} after the proxy restarted");
    assert_eq!(
        server.get("/health/ready", None).await.json(),
        json!({"status": "ok", "checks": {"database": "ok", "redis": "ok"}, "realtime": "redis"})
    );
}
