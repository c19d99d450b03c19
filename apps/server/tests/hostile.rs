//! Hostile clients against a real `vellum-server` process (issue 10, "Bad input"): what only a
//! socket can do. Slow-loris clients (headers or body trickled a byte at a time) are answered
//! 408 or disconnected within a bounded time; bodies without `Content-Length` still meet the
//! JSON limit; request lines too long for the HTTP parser are refused with a 4xx. Runs on
//! SQLite: no service needed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Admin, BOUNDARY, Server, ServerConfig, notes_manifest};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use vellum_storage::testing::TestDb;

const ITEMS: &str = "/api/v1/collections/notes/items";

/// A server with small client timeouts: headers within 1 s, no body byte missing for more than
/// 1 s, handlers done within 3 s.
struct Hostile {
    server: Server,
    key: String,
    _db: TestDb,
}

impl Hostile {
    async fn start() -> Self {
        let db = TestDb::sqlite().await.unwrap();
        let admin = Admin {
            database_url: db.url().to_owned(),
            redis_url: None,
        };
        let keys = admin.apply(&notes_manifest()).await;
        let server = ServerConfig::new("hostile", db.url())
            .env("VELLUM_CLIENT_REQUEST_TIMEOUT", "1")
            .env("VELLUM_CLIENT_DISCONNECT_TIMEOUT", "1")
            .env("VELLUM_BODY_READ_TIMEOUT", "1")
            .env("VELLUM_REQUEST_TIMEOUT", "3")
            .env("VELLUM_JSON_LIMIT", "65536")
            .start()
            .await;
        Self {
            server,
            key: keys["writer-key"].clone(),
            _db: db,
        }
    }
}

/// What a raw exchange saw.
#[derive(Debug)]
struct Exchange {
    /// Everything the server sent before closing (or before the deadline).
    raw: Vec<u8>,
    /// The server closed the connection (EOF or reset) before the deadline.
    closed: bool,
    /// From connecting to the close, or to the deadline.
    elapsed: Duration,
    /// How many bytes of the request were written before the server stopped reading.
    written: usize,
}

impl Exchange {
    fn status(&self) -> Option<u16> {
        let text = String::from_utf8_lossy(&self.raw);
        let line = text.lines().next()?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    fn header(&self, name: &str) -> Option<String> {
        let text = String::from_utf8_lossy(&self.raw);
        let head = text.split("\r\n\r\n").next()?;
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    fn body(&self) -> Value {
        let text = String::from_utf8_lossy(&self.raw);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text:?}"))
    }

    fn describe(&self) -> String {
        format!(
            "closed {} after {:?}, {} request bytes written, got {:?}",
            self.closed,
            self.elapsed,
            self.written,
            String::from_utf8_lossy(&self.raw)
        )
    }
}

/// Connects to `addr`, writes `fast` at once, then `slow` one byte every `interval`, while
/// reading whatever the server answers; stops when the server closes the connection or at
/// `deadline`.
async fn exchange(
    addr: SocketAddr,
    fast: &[u8],
    slow: &[u8],
    interval: Duration,
    deadline: Duration,
) -> Exchange {
    let started = Instant::now();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let fast = fast.to_vec();
    let slow = slow.to_vec();
    let written = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&written);
    let writer = tokio::spawn(async move {
        if write.write_all(&fast).await.is_err() {
            return;
        }
        count.fetch_add(fast.len(), Ordering::SeqCst);
        for byte in slow {
            tokio::time::sleep(interval).await;
            if write.write_all(&[byte]).await.is_err() || write.flush().await.is_err() {
                return;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
        // Keep the write side open: a client that sent everything waits for the answer.
        std::future::pending::<()>().await;
    });
    let mut raw = Vec::new();
    let mut buf = [0_u8; 16 * 1024];
    let closed = loop {
        let remaining = deadline.saturating_sub(started.elapsed());
        match tokio::time::timeout(remaining, read.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    let elapsed = started.elapsed();
    writer.abort();
    let written = written.load(Ordering::SeqCst);
    Exchange {
        raw,
        closed,
        elapsed,
        written,
    }
}

/// `exchange` with everything sent at once.
async fn send_all(addr: SocketAddr, request: &[u8], deadline: Duration) -> Exchange {
    exchange(addr, request, &[], Duration::ZERO, deadline).await
}

fn post_head(path: &str, key: &str, content_type: &str, length: Option<usize>) -> String {
    let length = length.map_or_else(
        || "Transfer-Encoding: chunked\r\n".to_owned(),
        |n| format!("Content-Length: {n}\r\n"),
    );
    format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: {content_type}\r\n{length}\r\n"
    )
}

/// The contract's envelope for a 408.
fn assert_body_timeout(ex: &Exchange, what: &str) {
    assert_eq!(ex.status(), Some(408), "{what}: {}", ex.describe());
    assert_eq!(
        ex.body(),
        json!({"message": "The request body was not received in time."}),
        "{what}"
    );
    assert!(
        ex.closed,
        "{what}: the connection stays open: {}",
        ex.describe()
    );
}

#[tokio::test]
async fn slow_loris_clients_are_cut_off_within_bounded_time() {
    let h = Hostile::start().await;
    let addr = h.server.addr;
    let deadline = Duration::from_secs(15);

    // 1. Headers, one byte per second: a 408 (with the JSON envelope since issue 18) or a close,
    // within the 1 s header timeout plus slack; never the 60 s the headers would take.
    let head = b"GET /health/live HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let ex = exchange(addr, b"G", &head[1..], Duration::from_secs(1), deadline).await;
    assert!(ex.closed, "slow headers: {}", ex.describe());
    assert!(
        ex.elapsed < Duration::from_secs(5),
        "slow headers: {}",
        ex.describe()
    );
    assert!(
        matches!(ex.status(), None | Some(408)),
        "slow headers: {}",
        ex.describe()
    );
    eprintln!("slow headers: {}", ex.describe());

    // 2. Headers at once, then the JSON body stalls (one byte every 2 s): 408 with the envelope
    // after the 1 s body read timeout.
    let body = json!({"data": {"title": "slow"}}).to_string();
    let head = post_head(ITEMS, &h.key, "application/json", Some(body.len()));
    let ex = exchange(
        addr,
        head.as_bytes(),
        body.as_bytes(),
        Duration::from_secs(2),
        deadline,
    )
    .await;
    assert_body_timeout(&ex, "stalled JSON body");
    assert!(ex.elapsed < Duration::from_secs(5), "{}", ex.describe());

    // 3. A JSON body trickled faster than the read timeout (a byte every 300 ms, 1000 bytes
    // announced): the 3 s request timeout ends it, with 408 (the client is slow), not 503.
    let trickle = format!("{{\"data\":{{\"title\":\"{}\"}}}}", "a".repeat(1000 - 21));
    assert_eq!(trickle.len(), 1000);
    let head = post_head(ITEMS, &h.key, "application/json", Some(trickle.len()));
    let ex = exchange(
        addr,
        head.as_bytes(),
        trickle.as_bytes(),
        Duration::from_millis(300),
        deadline,
    )
    .await;
    assert_body_timeout(&ex, "trickled JSON body");
    assert!(ex.elapsed < Duration::from_secs(7), "{}", ex.describe());

    // 4. An upload that stalls mid-file (uploads have no total time limit): 408 after the 1 s
    // read timeout, and nothing is recorded.
    let preamble = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\nfirst bytes "
    );
    let head = post_head(
        "/api/v1/files",
        &h.key,
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        Some(preamble.len() + 10_000),
    );
    let ex = exchange(
        addr,
        format!("{head}{preamble}").as_bytes(),
        &[b'x'; 100],
        Duration::from_secs(2),
        deadline,
    )
    .await;
    assert_body_timeout(&ex, "stalled upload");
    assert!(ex.elapsed < Duration::from_secs(5), "{}", ex.describe());
    let files = h.server.get("/api/v1/files", Some(&h.key)).await;
    assert_eq!(files.json()["meta"]["total"], 0, "{}", files.text());

    // 5. A request answered before its body is read (403: no key) while the client trickles
    // the body: the answer comes at once and the connection does not stay open for the body.
    let head = format!(
        "POST {ITEMS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 1000\r\n\r\n"
    );
    let ex = exchange(
        addr,
        head.as_bytes(),
        &[b'a'; 1000],
        Duration::from_millis(300),
        deadline,
    )
    .await;
    assert_eq!(ex.status(), Some(403), "{}", ex.describe());
    assert!(ex.closed, "answered early: {}", ex.describe());
    assert!(ex.elapsed < Duration::from_secs(7), "{}", ex.describe());
    eprintln!("answered early: {}", ex.describe());

    // The server is still healthy.
    assert_eq!(h.server.get("/health/ready", None).await.status, 200);
}

fn chunked(body: &[u8], chunk: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / chunk * 8 + 8);
    for piece in body.chunks(chunk) {
        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

#[tokio::test]
async fn large_bodies_are_413_with_or_without_content_length() {
    let h = Hostile::start().await;
    let addr = h.server.addr;
    let body = format!(
        "{{\"data\":{{\"title\":\"{}\"}}}}",
        "a".repeat(10 * 1024 * 1024)
    );
    for (what, head, payload) in [
        (
            "Content-Length",
            post_head(ITEMS, &h.key, "application/json", Some(body.len())),
            body.as_bytes().to_vec(),
        ),
        (
            "chunked",
            post_head(ITEMS, &h.key, "application/json", None),
            chunked(body.as_bytes(), 16 * 1024),
        ),
    ] {
        let mut request = head.into_bytes();
        request.extend_from_slice(&payload);
        let ex = send_all(addr, &request, Duration::from_secs(15)).await;
        assert_eq!(ex.status(), Some(413), "{what}: {}", ex.describe());
        assert_eq!(
            ex.body(),
            json!({"message": "The request body is too large."}),
            "{what}"
        );
        assert!(ex.closed, "{what}: the connection stays open");
        assert!(
            ex.raw
                .windows(b"connection: close".len())
                .any(|w| w.eq_ignore_ascii_case(b"connection: close")),
            "{what}: the 413 says the connection closes: {}",
            ex.describe()
        );
        assert!(
            ex.elapsed < Duration::from_secs(3),
            "{what}: {}",
            ex.describe()
        );
    }
    let list = h.server.get(ITEMS, None).await;
    assert_eq!(list.json()["meta"]["total"], 2, "nothing was written");
}

#[tokio::test]
async fn request_lines_too_long_or_not_utf8_are_refused_cleanly() {
    let h = Hostile::start().await;
    let addr = h.server.addr;
    let distinct: String = (0..5000)
        .map(|i| format!("filter%5Bf{i}%5D%5B_eq%5D=x"))
        .collect::<Vec<_>>()
        .join("&");
    let cases = [
        ("5000 distinct filter keys", format!("{ITEMS}?{distinct}")),
        (
            "1 MiB query",
            format!("{ITEMS}?q={}", "x".repeat(1024 * 1024)),
        ),
    ];
    for (what, target) in cases {
        let request = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n");
        let ex = send_all(addr, request.as_bytes(), Duration::from_secs(10)).await;
        let status = ex.status();
        // The HTTP parser refuses request lines over 64 KiB before the app sees them: 400, 414
        // or 431 (with the JSON envelope since issue 18), or a closed connection; never 5xx.
        assert!(
            status.is_none_or(|s| (400..500).contains(&s)),
            "{what}: {}",
            ex.describe()
        );
        assert!(ex.closed, "{what}: {}", ex.describe());
        assert!(
            ex.elapsed < Duration::from_secs(5),
            "{what}: {}",
            ex.describe()
        );
        eprintln!(
            "{what}: status {status:?}, content-type {:?}",
            ex.header("content-type")
        );
    }
    // Invalid UTF-8 in the path: the contract's 404.
    for path in [
        "/api/v1/collections/%FF%FE/items",
        "/api/v1/files/%FF/content",
    ] {
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let ex = send_all(addr, request.as_bytes(), Duration::from_secs(10)).await;
        assert_eq!(ex.status(), Some(404), "{path}: {}", ex.describe());
        assert_eq!(ex.body(), json!({"message": "Not found."}), "{path}");
    }
    // Raw bytes that are not UTF-8 (not percent-encoded) in the request line.
    let mut request = b"GET /api/v1/collections/".to_vec();
    request.extend_from_slice(&[0xFF, 0xFE]);
    request.extend_from_slice(
        b"/items?sort=\xC3\x28 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    let ex = send_all(addr, &request, Duration::from_secs(10)).await;
    assert!(
        ex.status().is_none_or(|s| (400..500).contains(&s)),
        "raw bytes: {}",
        ex.describe()
    );
    eprintln!("raw non-UTF-8 request line: {:?}", ex.status());
    assert_eq!(h.server.get("/health/ready", None).await.status, 200);
}

/// A client that asks for a large response and stops reading (its receive window shuts) is cut
/// off after `VELLUM_WRITE_TIMEOUT`, so it cannot pin the response on the server for good
/// (security review 2026-11, R9: a rendered page stayed in memory for over a minute). Without
/// the timeout, the same client can read the whole body whenever it likes.
#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_after_the_write_timeout() {
    let db = TestDb::sqlite().await.unwrap();
    let admin = Admin {
        database_url: db.url().to_owned(),
        redis_url: None,
    };
    let keys = admin.apply(&notes_manifest()).await;
    let server = ServerConfig::new("write-timeout", db.url())
        .env("VELLUM_WRITE_TIMEOUT", "2")
        .start()
        .await;
    // Larger than the server's largest send buffer (tcp_wmem 4 MiB) plus the client's: the
    // response cannot leave the server while the client does not read. Not compressible.
    let size = 9 * 1024 * 1024;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let bytes: Vec<u8> = (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let up = server.upload(&keys["writer-key"], "big.bin", &bytes).await;
    assert_eq!(up.status, 201, "{}", up.text());
    let id = up.json()["data"]["id"].as_i64().unwrap();

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(server.addr).await.unwrap();
    let request = format!(
        "GET /api/v1/files/{id}/content HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    // Do not read for three times the timeout, then take whatever is left.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let started = Instant::now();
    let mut received = 0usize;
    let mut buf = vec![0u8; 64 * 1024];
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Ok(Ok(0)) => break "eof",
            Ok(Ok(n)) => received += n,
            Ok(Err(_)) => break "error",
            Err(_) => break "stalled",
        }
        if received > size {
            break "whole body";
        }
    };
    assert_ne!(
        ended, "whole body",
        "the stalled client still got all {size} bytes after 6 s"
    );
    assert_ne!(
        ended, "stalled",
        "the connection neither ended nor delivered"
    );
    assert!(
        received < size,
        "{received} of {size} bytes reached the client ({ended})"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The server itself is fine.
    let list = server.get(ITEMS, None).await;
    assert_eq!(list.status, 200);
}
