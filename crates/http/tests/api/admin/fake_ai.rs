//! A scripted OpenAI-compatible provider for the AI chat tests: `POST /v1/chat/completions`
//! streams server-sent events chosen by the last message of the request, `GET /v1/models`
//! answers 200. Raw HTTP/1.1 over tokio, so the tests control every byte and every pause, and
//! learn when the server hung up on a stream (a failed write).
//!
//! Scripts, by a marker in the last user message:
//! - none: `Hello`, `, `, `world`, then `finish_reason: stop` and `[DONE]`;
//! - `[slow]`: 100 fragments `t0 `, `t1 `, … one every 50 ms;
//! - `[fail]`: two fragments, then `{"error": {"message": "boom"}}` and the connection closes;
//! - `[hang]`: the headers, then nothing;
//! - `[refuse]`: HTTP 500;
//! - `[echo]`: the whole last user message back, in one fragment;
//! - `[tool:NAME:ARGS]`: one tool call of NAME with JSON ARGS (split in two fragments);
//! - a request carrying `tool` messages: `Tool said: ` and each tool result.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Default)]
pub struct Seen {
    /// Every completions request's JSON body, in order.
    pub requests: Vec<Value>,
    /// When a stream's write failed because the client had gone.
    pub hung_up_at: Option<Instant>,
}

#[derive(Clone)]
pub struct FakeAi {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Seen>>,
}

impl FakeAi {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Self { addr, seen }
    }

    /// `VELLUM_AI_BASE_URL` for this provider.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().requests.clone()
    }

    pub fn hung_up_at(&self) -> Option<Instant> {
        self.seen.lock().unwrap().hung_up_at
    }
}

/// Reads one request: its request line and its body (by Content-Length).
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0_u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = raw[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some((head.lines().next().unwrap_or_default().to_owned(), body))
}

fn chunk(content: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
    )
}

const STOP: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
const HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

async fn serve(mut stream: TcpStream, seen: Arc<Mutex<Seen>>) {
    let Some((line, body)) = read_request(&mut stream).await else {
        return;
    };
    if line.starts_with("GET /v1/models") {
        let body = r#"{"object":"list","data":[{"id":"fake"}]}"#;
        let _ = stream
            .write_all(
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len())
                    .as_bytes(),
            )
            .await;
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().requests.push(request.clone());
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let tool_results: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    let wrote = if !tool_results.is_empty() {
        let mut out = HEAD.to_owned();
        out.push_str(&chunk("Tool said: "));
        for result in &tool_results {
            out.push_str(&chunk(result));
        }
        out.push_str(STOP);
        stream.write_all(out.as_bytes()).await
    } else if last_user.contains("[refuse]") {
        stream
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 10\r\nconnection: close\r\n\r\noverloaded")
            .await
    } else if last_user.contains("[hang]") {
        let _ = stream.write_all(HEAD.as_bytes()).await;
        // Hold the connection until the client goes.
        let mut buf = [0_u8; 64];
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
        Ok(())
    } else if last_user.contains("[slow]") {
        let mut result = stream.write_all(HEAD.as_bytes()).await;
        for i in 0..100 {
            if result.is_err() {
                break;
            }
            result = stream.write_all(chunk(&format!("t{i} ")).as_bytes()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if result.is_ok() {
            result = stream.write_all(STOP.as_bytes()).await;
        }
        result
    } else if last_user.contains("[fail]") {
        let out = format!(
            "{HEAD}{}{}data: {{\"error\":{{\"message\":\"boom\"}}}}\n\n",
            chunk("par"),
            chunk("tial")
        );
        stream.write_all(out.as_bytes()).await
    } else if let Some(start) = last_user.find("[tool:") {
        let spec = &last_user[start + 6..];
        let spec = &spec[..spec.find(']').unwrap_or(spec.len())];
        let (name, args) = spec.split_once(':').unwrap_or((spec, "{}"));
        let (first, second) = args.split_at(args.len() / 2);
        let call = |id: Option<&str>, name: Option<&str>, args: &str| {
            let mut function = json!({"arguments": args});
            if let Some(name) = name {
                function["name"] = json!(name);
            }
            let mut call = json!({"index": 0, "function": function});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["type"] = json!("function");
            }
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
            )
        };
        let out = format!(
            "{HEAD}{}{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n",
            call(Some("call_1"), Some(name), first),
            call(None, None, second),
        );
        stream.write_all(out.as_bytes()).await
    } else if last_user.contains("[echo]") {
        let out = format!("{HEAD}{}{STOP}", chunk(&last_user));
        stream.write_all(out.as_bytes()).await
    } else {
        let out = format!(
            "{HEAD}{}{}{}{STOP}",
            chunk("Hello"),
            chunk(", "),
            chunk("world")
        );
        stream.write_all(out.as_bytes()).await
    };
    if wrote.is_err() {
        seen.lock().unwrap().hung_up_at = Some(Instant::now());
    }
    let _ = stream.shutdown().await;
}
