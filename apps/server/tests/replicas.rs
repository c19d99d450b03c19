//! Several replicas, black-box: two `vellum-server` processes on loopback ports over one
//! PostgreSQL database and one Redis database (issue 9). Writes through one are read fresh through
//! the other, files uploaded through one are served by the other (S3 when
//! `VELLUM_TEST_S3_ENDPOINT` and `VELLUM_TEST_S3_BUCKET` are set, a shared files directory
//! otherwise), settings and schema changed by `vellum-admin` are enforced by both on their next
//! request, and killing one replica fails no request to the other.
//!
//! Skipped (with a message on stderr) without `VELLUM_TEST_POSTGRES_URL` and
//! `VELLUM_TEST_REDIS_URL`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use support::{
    Admin, POSTGRES_ENV, REDIS_ENV, Response, Server, ServerConfig, eventually, notes_manifest,
    redis_database, redis_db, s3_env, services, titles,
};
use vellum_storage::testing::TestDb;

const ITEMS: &str = "/api/v1/collections/notes/items";

/// Two replicas over a fresh PostgreSQL database and Redis database `redis_number`, with the
/// notes project applied through `vellum-admin` between the first start (which migrates) and the
/// second.
struct Cluster {
    a: Server,
    /// Shared with the load tasks of the kill test.
    b: Arc<Server>,
    admin: Admin,
    key: String,
    _files: tempfile::TempDir,
    _db: TestDb,
}

impl Cluster {
    async fn start(test: &str, redis_number: u8) -> Option<Self> {
        // TestDb::empty picks PostgreSQL because VELLUM_TEST_POSTGRES_URL is set.
        let [_postgres, redis] =
            <[String; 2]>::try_from(services(test, &[POSTGRES_ENV, REDIS_ENV])?).unwrap();
        let db = TestDb::empty().await.unwrap();
        let redis = redis_database(&redis, redis_number).await;
        let files = tempfile::tempdir().unwrap();

        let config = |name: &str| {
            let config = ServerConfig::new(name, db.url()).redis(&redis);
            match s3_env() {
                Some(s3) => config.envs(&s3),
                None => config.files_dir(files.path()),
            }
        };
        let a = config("replica A").start().await;
        let ready = a.get("/health/ready", None).await;
        assert_eq!(
            ready.json(),
            json!({"status": "ok", "checks": {"database": "ok", "redis": "ok"}, "realtime": "redis"}),
            "replica A /health/ready with Redis configured"
        );

        let admin = Admin {
            database_url: db.url().to_owned(),
            redis_url: Some(redis.clone()),
        };
        let keys = admin.apply(&notes_manifest()).await;
        let key = keys["writer-key"].clone();

        let b = config("replica B").start().await;
        Some(Self {
            a,
            b: Arc::new(b),
            admin,
            key,
            _files: files,
            _db: db,
        })
    }
}

impl Cluster {
    /// Waits (up to 10 s: the documented safety net for changes made behind the servers' back is
    /// 5 s) until both replicas see the project that `vellum-admin apply` wrote after A started.
    /// For tests about something else; whether A sees it on its very next request is asserted by
    /// `settings_and_schema_changed_by_the_admin_cli_are_enforced_by_both_replicas`.
    async fn settle(&self) {
        for server in [&self.a, &*self.b] {
            for auth in [None, Some(self.key.as_str())] {
                eventually(
                    &format!("{} sees the applied project ({auth:?})", server.name),
                    Duration::from_secs(10),
                    || async {
                        let res = server.get("/api/v1/collections/notes", auth).await;
                        if res.status == 200 {
                            Ok(())
                        } else {
                            Err(format!("{} {}", res.status, res.text()))
                        }
                    },
                )
                .await;
            }
        }
    }
}

fn assert_hit(res: &Response, what: &str) {
    assert_eq!(res.status, 200, "{what}: {}", res.text());
    assert_eq!(res.cache(), Some("hit"), "{what}: {}", res.text());
}

fn assert_fresh(res: &Response, what: &str) {
    assert_eq!(res.status, 200, "{what}: {}", res.text());
    assert_eq!(
        res.cache(),
        Some("miss"),
        "{what}: a read right after a write on the other replica must not be served from cache"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_through_one_replica_is_read_fresh_through_the_other() {
    let Some(cluster) = Cluster::start(
        "a_write_through_one_replica_is_read_fresh_through_the_other",
        redis_db::REPLICAS_FRESH_READS,
    )
    .await
    else {
        return;
    };
    cluster.settle().await;
    let (a, b, key) = (&cluster.a, &cluster.b, cluster.key.as_str());

    for (actor, auth) in [("public", None), ("writer", Some(key))] {
        // Warm B's cache for this role.
        let first = b.get(ITEMS, auth).await;
        assert_eq!(first.status, 200, "{actor} list on B: {}", first.text());
        let second = b.get(ITEMS, auth).await;
        assert_hit(&second, &format!("{actor}: second identical read on B"));
        assert_eq!(titles(&second), titles(&first));

        // Create through A, read through B.
        let title = format!("created on A for {actor}");
        let created = a
            .json(
                Method::POST,
                ITEMS,
                Some(key),
                &json!({"data": {"title": title}}),
            )
            .await;
        assert_eq!(created.status, 201, "create on A: {}", created.text());
        let id = created.json()["data"]["id"].as_i64().unwrap();
        let after_create = b.get(ITEMS, auth).await;
        assert_fresh(
            &after_create,
            &format!("{actor}: list on B after a create on A"),
        );
        assert!(
            titles(&after_create).contains(&title),
            "{actor}: B does not list the item created on A: {:?}",
            titles(&after_create)
        );
        assert_hit(
            &b.get(ITEMS, auth).await,
            &format!("{actor}: B caches again after the fresh read"),
        );

        // Update through A, read the item and the list through B.
        let item = format!("{ITEMS}/{id}");
        let shown = b.get(&item, auth).await;
        assert_eq!(shown.status, 200, "{actor}: item on B: {}", shown.text());
        assert_hit(
            &b.get(&item, auth).await,
            &format!("{actor}: item on B again"),
        );
        let renamed = format!("updated on A for {actor}");
        let updated = a
            .json(
                Method::PATCH,
                &item,
                Some(key),
                &json!({"data": {"title": renamed}}),
            )
            .await;
        assert_eq!(updated.status, 200, "update on A: {}", updated.text());
        let item_after = b.get(&item, auth).await;
        assert_fresh(
            &item_after,
            &format!("{actor}: item on B after an update on A"),
        );
        assert_eq!(item_after.json()["data"]["data"]["title"], json!(renamed));
        let list_after = b.get(ITEMS, auth).await;
        assert_fresh(
            &list_after,
            &format!("{actor}: list on B after an update on A"),
        );
        assert!(titles(&list_after).contains(&renamed));
        assert!(!titles(&list_after).contains(&title));
    }

    // And the other way round: a write through B is read fresh through A.
    let warm = a.get(ITEMS, None).await;
    assert_eq!(warm.status, 200);
    assert_hit(&a.get(ITEMS, None).await, "public: second read on A");
    let created = b
        .json(
            Method::POST,
            ITEMS,
            Some(key),
            &json!({"data": {"title": "created on B"}}),
        )
        .await;
    assert_eq!(created.status, 201, "create on B: {}", created.text());
    let on_a = a.get(ITEMS, None).await;
    assert_fresh(&on_a, "public: list on A after a create on B");
    assert!(titles(&on_a).contains(&"created on B".to_owned()));

    // A file uploaded through A is served byte for byte by B (from S3 or the shared directory).
    let bytes: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let uploaded = a.upload(key, "blob.bin", &bytes).await;
    assert_eq!(uploaded.status, 201, "upload on A: {}", uploaded.text());
    let file_id = uploaded.json()["data"]["id"].as_i64().unwrap();
    let content = b
        .get(&format!("/api/v1/files/{file_id}/content"), Some(key))
        .await;
    assert_eq!(
        content.status,
        200,
        "content on B (s3: {}): {}",
        s3_env().is_some(),
        content.text()
    );
    assert_eq!(content.body.len(), bytes.len(), "content length on B");
    assert!(
        content.body == bytes,
        "content on B differs from the upload"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settings_and_schema_changed_by_the_admin_cli_are_enforced_by_both_replicas() {
    let Some(cluster) = Cluster::start(
        "settings_and_schema_changed_by_the_admin_cli_are_enforced_by_both_replicas",
        redis_db::REPLICAS_SETTINGS,
    )
    .await
    else {
        return;
    };
    let servers = [&cluster.a, &*cluster.b];
    let evil = [("origin", "https://evil.example")];
    let good = [("origin", "https://a.example")];

    // Replica A started before `vellum-admin apply` wrote the project: with Redis it must see it
    // on its next request, like B (started after).
    for server in servers {
        let res = server.get(ITEMS, Some(&cluster.key)).await;
        assert_eq!(
            res.status,
            200,
            "{}: the collection and key applied by vellum-admin must be visible on the next \
             request: {}",
            server.name,
            res.text()
        );
    }

    // No allowlist yet: any origin reads, and the answers are cached.
    for server in servers {
        for _ in 0..2 {
            let res = server.get_with(ITEMS, &evil).await;
            assert_eq!(
                res.status,
                200,
                "{} before the change: {}",
                server.name,
                res.text()
            );
        }
        let collection = server.get("/api/v1/collections/notes", None).await;
        assert_eq!(collection.status, 200);
        assert_hit(
            &server.get("/api/v1/collections/notes", None).await,
            &format!("{}: collection read twice", server.name),
        );
    }

    let set = cluster
        .admin
        .run(&[
            "settings",
            "set",
            "public_api_allowed_origins",
            r#"["https://a.example"]"#,
        ])
        .await;
    assert_eq!(
        set,
        json!({"public_api_allowed_origins": ["https://a.example"]})
    );

    // The very next request to either replica sees the allowlist.
    for server in servers {
        let refused = server.get_with(ITEMS, &evil).await;
        assert_eq!(
            refused.status,
            403,
            "{}: an origin outside the new allowlist must be refused on the next request: {}",
            server.name,
            refused.text()
        );
        assert_eq!(refused.json(), json!({"message": "Origin not allowed."}));
        let allowed = server.get_with(ITEMS, &good).await;
        assert_eq!(
            allowed.status,
            200,
            "{}: the allowed origin: {}",
            server.name,
            allowed.text()
        );
    }

    // A schema change (a new field) applied by the admin CLI shows on both on the next request.
    let mut manifest = notes_manifest();
    manifest["collections"][0]["fields"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "body", "type": "textarea", "settings": {}}));
    manifest["settings"] = json!({"public_api_allowed_origins": ["https://a.example"]});
    cluster.admin.apply(&manifest).await;
    for server in servers {
        let collection = server.get_with("/api/v1/collections/notes", &good).await;
        assert_eq!(collection.status, 200, "{}", collection.text());
        let fields: Vec<Value> = collection.json()["data"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].clone())
            .collect();
        assert!(
            fields.contains(&json!("body")),
            "{}: the field added by vellum-admin apply is missing on the next request \
             (x-cache {:?}): {fields:?}",
            server.name,
            collection.cache()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 6)]
async fn killing_one_replica_mid_load_fails_no_request_to_the_other() {
    let Some(mut cluster) = Cluster::start(
        "killing_one_replica_mid_load_fails_no_request_to_the_other",
        redis_db::REPLICAS_KILL,
    )
    .await
    else {
        return;
    };
    cluster.settle().await;
    let b = Arc::clone(&cluster.b);
    let key = cluster.key.clone();

    let ok = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (b, key, ok, failures) = (
            Arc::clone(&b),
            key.clone(),
            Arc::clone(&ok),
            Arc::clone(&failures),
        );
        workers.push(tokio::spawn(async move {
            let bearer = format!("Bearer {key}");
            let mut n = 0u32;
            while Instant::now() < deadline {
                n += 1;
                // Alternate roles and pages so both cache hits and database reads are exercised.
                let path = format!("{ITEMS}?page={}", 1 + n % 3);
                let headers: Vec<(&str, &str)> = if worker % 2 == 0 {
                    vec![]
                } else {
                    vec![("authorization", bearer.as_str())]
                };
                match b.try_get(&path, &headers).await {
                    Ok(res) if res.status == 200 => {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(res) => failures.lock().unwrap().push(format!(
                        "{path}: {} {}",
                        res.status,
                        res.text()
                    )),
                    Err(e) => failures.lock().unwrap().push(format!("{path}: {e}")),
                }
            }
        }));
    }
    // A write through B now and then keeps the shared epoch moving during the load.
    let writer = {
        let (b, key) = (Arc::clone(&b), key.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < deadline {
                n += 1;
                let res = b
                    .json(
                        Method::POST,
                        ITEMS,
                        Some(&key),
                        &json!({"data": {"title": format!("load {n}")}}),
                    )
                    .await;
                assert_eq!(
                    res.status,
                    201,
                    "write on B during the load: {}",
                    res.text()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.a.kill();
    assert!(
        cluster.a.try_get("/health/live", &[]).await.is_err(),
        "replica A still answers after SIGKILL"
    );

    for worker in workers {
        worker.await.unwrap();
    }
    writer.await.unwrap();

    let failures = std::mem::take(&mut *failures.lock().unwrap());
    let ok = ok.load(Ordering::Relaxed);
    assert!(
        failures.is_empty(),
        "{} of {} requests to B failed while A was killed; first ones: {:?}",
        failures.len(),
        failures.len() + ok,
        &failures[..failures.len().min(5)]
    );
    assert!(ok >= 40, "only {ok} requests to B completed in 3 s");
    eprintln!("killing_one_replica_mid_load: {ok} requests to B, none failed");

    // B still serves fresh data after A is gone.
    let list = b.get(&format!("{ITEMS}?per_page=100"), None).await;
    assert_eq!(list.status, 200);
    assert!(titles(&list).iter().any(|t| t.starts_with("load ")));
}
