//! The realtime server across real replicas (issue 20): two `vellum-server` processes whose
//! sockets share presence and events. A replica killed with SIGKILL loses its presence members
//! within its lease (over Redis and over PostgreSQL `NOTIFY`); a Redis outage keeps every socket
//! up and delivery between replicas resumes once Redis is back.
//!
//! Clients sign their own subscriptions with the secret the test configures, and publish with
//! client events (enabled here), which travel between replicas like any broadcast. Skipped
//! (with a message on stderr) without `VELLUM_TEST_POSTGRES_URL` (and `VELLUM_TEST_REDIS_URL`
//! for the Redis cases).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::time::{Duration, Instant};

use futures_util::{SinkExt as _, StreamExt as _};
use hmac::{Hmac, KeyInit as _, Mac as _};
use serde_json::{Value, json};
use support::{
    POSTGRES_ENV, REDIS_ENV, Server, ServerConfig, TcpProxy, host_port, redis_database, redis_db,
    services, via_port,
};
use tokio_tungstenite::tungstenite::Message;
use vellum_storage::testing::TestDb;

const KEY: &str = "realtime-test-key";
const SECRET: &str = "realtime-test-secret";

fn replica(name: &str, database_url: &str, redis: Option<&str>) -> ServerConfig {
    let config = ServerConfig::new(name, database_url)
        .env("VELLUM_REALTIME_KEY", KEY)
        .env("VELLUM_REALTIME_SECRET", SECRET)
        .env("VELLUM_REALTIME_CLIENT_EVENTS", "on")
        .env("VELLUM_REALTIME_LEASE", "2");
    match redis {
        Some(url) => config.redis(url),
        None => config,
    }
}

fn sign(text: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(text.as_bytes());
    format!("{KEY}:{}", hex::encode(mac.finalize().into_bytes()))
}

struct Client {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    socket_id: String,
}

impl Client {
    async fn connect(server: &Server) -> Self {
        let url = format!("ws://{}/app/{KEY}?protocol=7", server.addr);
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut client = Self {
            ws,
            socket_id: String::new(),
        };
        let established = client.expect("pusher:connection_established").await;
        let data: Value = serde_json::from_str(established["data"].as_str().unwrap()).unwrap();
        client.socket_id = data["socket_id"].as_str().unwrap().to_owned();
        client
    }

    async fn send(&mut self, frame: Value) {
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .unwrap();
    }

    async fn next(&mut self, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => {
                    return Some(serde_json::from_str(&text).unwrap());
                }
                Ok(Some(Ok(_))) => {}
                _ => return None,
            }
        }
    }

    async fn expect(&mut self, event: &str) -> Value {
        self.expect_within(event, Duration::from_secs(10)).await
    }

    async fn expect_within(&mut self, event: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(frame) if frame["event"] == event => return frame,
                Some(_) => {}
                None => panic!("no {event} within {within:?}"),
            }
        }
    }

    /// Joins `presence-bench` as user `user`.
    async fn join(&mut self, user: u32) {
        let channel_data =
            json!({"user_id": user, "user_info": {"id": user, "name": format!("U{user}")}})
                .to_string();
        let auth = sign(&format!("{}:presence-bench:{channel_data}", self.socket_id));
        self.send(json!({"event": "pusher:subscribe", "data": {
            "channel": "presence-bench", "auth": auth, "channel_data": channel_data,
        }}))
        .await;
        self.expect("pusher_internal:subscription_succeeded").await;
    }

    async fn whisper(&mut self, n: u32) {
        self.send(json!({"event": "client-note", "channel": "presence-bench", "data": {"n": n}}))
            .await;
    }
}

async fn killed_replica_leaves(database_url: &str, redis: Option<&str>) {
    let a = replica("replica A", database_url, redis).start().await;
    let mut b = replica("replica B", database_url, redis).start().await;
    let mut watcher = Client::connect(&a).await;
    watcher.join(1).await;
    let mut doomed = Client::connect(&b).await;
    doomed.join(2).await;
    let added = watcher.expect("pusher_internal:member_added").await;
    assert!(added["data"].as_str().unwrap().contains("\"2\""), "{added}");
    b.kill();
    let started = Instant::now();
    let removed = watcher
        .expect_within("pusher_internal:member_removed", Duration::from_secs(10))
        .await;
    let took = started.elapsed();
    eprintln!("killed replica: member_removed after {took:?} (lease 2 s)");
    assert!(
        removed["data"].as_str().unwrap().contains("\"2\""),
        "{removed}"
    );
    // The lease is 2 s, renewed every 2/3 s: gone within 4/3 of it, plus slack.
    assert!(took < Duration::from_secs(5), "{took:?}");
    watcher
        .send(json!({"event": "pusher:ping", "data": {}}))
        .await;
    watcher.expect("pusher:pong").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_replica_loses_its_members_over_redis() {
    let Some([_postgres, redis]) = services(
        "a_killed_replica_loses_its_members_over_redis",
        &[POSTGRES_ENV, REDIS_ENV],
    )
    .map(|urls| <[String; 2]>::try_from(urls).unwrap()) else {
        return;
    };
    let db = TestDb::empty().await.unwrap();
    let redis = redis_database(&redis, redis_db::REALTIME_KILL).await;
    killed_replica_leaves(db.url(), Some(&redis)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_replica_loses_its_members_over_postgres_notify() {
    let Some(_) = services(
        "a_killed_replica_loses_its_members_over_postgres_notify",
        &[POSTGRES_ENV],
    ) else {
        return;
    };
    let db = TestDb::empty().await.unwrap();
    killed_replica_leaves(db.url(), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_redis_outage_keeps_sockets_up_and_delivery_resumes() {
    let Some([_postgres, redis]) = services(
        "a_redis_outage_keeps_sockets_up_and_delivery_resumes",
        &[POSTGRES_ENV, REDIS_ENV],
    )
    .map(|urls| <[String; 2]>::try_from(urls).unwrap()) else {
        return;
    };
    let db = TestDb::empty().await.unwrap();
    let redis = redis_database(&redis, redis_db::REALTIME_OUTAGE).await;
    let proxy = TcpProxy::new(&host_port(&redis, 6379)).await;
    let through_proxy = via_port(&redis, proxy.port());
    let a = replica("replica A", db.url(), Some(&through_proxy))
        .start()
        .await;
    let b = replica("replica B", db.url(), Some(&through_proxy))
        .start()
        .await;
    let mut sender = Client::connect(&a).await;
    let mut neighbour = Client::connect(&a).await;
    let mut remote = Client::connect(&b).await;
    sender.join(1).await;
    neighbour.join(2).await;
    remote.join(3).await;
    sender.whisper(1).await;
    remote.expect("client-note").await;
    neighbour.expect("client-note").await;

    proxy.stop().await;
    // Sockets stay up and local delivery goes on.
    sender.whisper(2).await;
    let local = neighbour.expect("client-note").await;
    assert_eq!(local["data"], "{\"n\":2}");
    remote
        .send(json!({"event": "pusher:ping", "data": {}}))
        .await;
    remote.expect("pusher:pong").await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    proxy.start().await;
    let started = Instant::now();
    let mut n = 3;
    loop {
        sender.whisper(n).await;
        if let Some(frame) = remote.next(Duration::from_millis(500)).await
            && frame["event"] == "client-note"
            && frame["data"] == format!("{{\"n\":{n}}}")
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "delivery between replicas did not resume within 15 s"
        );
        n += 1;
    }
    eprintln!(
        "redis outage: delivery resumed {:?} after Redis returned",
        started.elapsed()
    );
}
