//! A webhook receiver on a random local port: it records every request (headers and body) and
//! answers the status it is told to, or holds the request open without answering.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// The receiver; 0 as the status holds requests open (a receiver that hangs).
#[derive(Debug, Clone)]
pub struct Receiver {
    pub url: String,
    status: Arc<AtomicU16>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let receiver = Self {
            url,
            status: Arc::new(AtomicU16::new(200)),
            received: Arc::new(Mutex::new(Vec::new())),
        };
        let shared = receiver.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let shared = shared.clone();
                tokio::spawn(async move { shared.serve(socket).await });
            }
        });
        receiver
    }

    /// The status the next requests get.
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits (up to `limit`) until at least `n` requests arrived; answers them all.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let got = self.received();
            if got.len() >= n || tokio::time::Instant::now() > deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn serve(&self, mut socket: TcpStream) {
        loop {
            let mut head = Vec::new();
            let mut byte = [0_u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match socket.read(&mut byte).await {
                    Ok(1) => head.push(byte[0]),
                    _ => return,
                }
            }
            let text = String::from_utf8_lossy(&head).to_string();
            let mut headers = BTreeMap::new();
            for line in text.lines().skip(1) {
                if let Some((name, value)) = line.split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
                }
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0_u8; length];
            if socket.read_exact(&mut body).await.is_err() {
                return;
            }
            self.received.lock().unwrap().push(Received {
                headers,
                body: String::from_utf8_lossy(&body).to_string(),
            });
            let status = self.status.load(Ordering::SeqCst);
            if status == 0 {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n\r\nok");
            if socket.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}
