//! The harness of the black-box tests: real `vellum-server` processes on loopback ports (killed on
//! drop, also when a test panics), `vellum-admin` runs, an HTTP client, a per-test Redis database
//! and a TCP proxy that can cut a server off from PostgreSQL or Redis and let it back in.
//!
//! Tests that need services read `VELLUM_TEST_POSTGRES_URL` and `VELLUM_TEST_REDIS_URL` (and, for
//! object storage, `VELLUM_TEST_S3_ENDPOINT` and `VELLUM_TEST_S3_BUCKET`); without them they print
//! why they are skipped and pass, so `cargo test` passes on a machine with no services.
//!
//! Each test binary uses part of this module, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub const POSTGRES_ENV: &str = "VELLUM_TEST_POSTGRES_URL";
pub const REDIS_ENV: &str = "VELLUM_TEST_REDIS_URL";
pub const S3_ENDPOINT_ENV: &str = "VELLUM_TEST_S3_ENDPOINT";
pub const S3_BUCKET_ENV: &str = "VELLUM_TEST_S3_BUCKET";

/// How long a freshly spawned server may take to migrate and answer `/health/ready` with 200.
const START_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Services from the environment
// ---------------------------------------------------------------------------------------------

/// The non-empty value of `name`.
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The URL of each service in `names`, or `None` after printing to stderr why `test` is skipped.
pub fn services(test: &str, names: &[&str]) -> Option<Vec<String>> {
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| env_value(name).is_none())
        .collect();
    if missing.is_empty() {
        Some(names.iter().filter_map(|name| env_value(name)).collect())
    } else {
        eprintln!(
            "skipping {test}: {} not set (this test needs a running service; e.g. \
             VELLUM_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
             VELLUM_TEST_REDIS_URL=redis://127.0.0.1:6379)",
            missing.join(" and ")
        );
        None
    }
}

/// S3 settings for the servers when `VELLUM_TEST_S3_ENDPOINT` and `VELLUM_TEST_S3_BUCKET` are set:
/// `VELLUM_S3_*` plus the AWS variables (taken from the environment, with moto-friendly defaults).
pub fn s3_env() -> Option<Vec<(String, String)>> {
    let endpoint = env_value(S3_ENDPOINT_ENV)?;
    let bucket = env_value(S3_BUCKET_ENV)?;
    let aws = |name: &str, default: &str| {
        (
            name.to_owned(),
            env_value(name).unwrap_or_else(|| default.to_owned()),
        )
    };
    let mut vars = vec![
        ("VELLUM_S3_ENDPOINT".to_owned(), endpoint.clone()),
        ("VELLUM_S3_BUCKET".to_owned(), bucket),
        aws("AWS_ACCESS_KEY_ID", "testing"),
        aws("AWS_SECRET_ACCESS_KEY", "testing"),
        aws("AWS_REGION", "us-east-1"),
    ];
    if endpoint.starts_with("http://") {
        vars.push(("AWS_ALLOW_HTTP".to_owned(), "true".to_owned()));
    }
    Some(vars)
}

/// `host:port` of a service URL (`default_port` when the URL has none).
pub fn host_port(url: &str, default_port: u16) -> String {
    let parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("bad service URL {url:?}: {e}"));
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    format!("{host}:{}", parsed.port().unwrap_or(default_port))
}

/// `url` with its host and port replaced by `127.0.0.1:port` (to route it through a proxy).
pub fn via_port(url: &str, port: u16) -> String {
    let mut parsed =
        url::Url::parse(url).unwrap_or_else(|e| panic!("bad service URL {url:?}: {e}"));
    parsed.set_host(Some("127.0.0.1")).unwrap();
    parsed.set_port(Some(port)).unwrap();
    parsed.to_string()
}

// ---------------------------------------------------------------------------------------------
// Redis: one database number per test
// ---------------------------------------------------------------------------------------------

/// Redis database numbers, one per test that uses Redis, so tests running at the same time (in
/// this binary or the other) never share a cache or an epoch. Kept apart from 0 and the low
/// numbers other suites may use.
pub mod redis_db {
    pub const REPLICAS_FRESH_READS: u8 = 10;
    pub const REPLICAS_SETTINGS: u8 = 11;
    pub const REPLICAS_KILL: u8 = 12;
    pub const OUTAGE_REDIS: u8 = 13;
    pub const REALTIME_KILL: u8 = 14;
    pub const REALTIME_OUTAGE: u8 = 15;
}

/// `base` (`redis://host:port[/n]`) pointed at database `db`, which is emptied (`FLUSHDB`) first.
pub async fn redis_database(base: &str, db: u8) -> String {
    let mut url = url::Url::parse(base).unwrap_or_else(|e| panic!("bad Redis URL {base:?}: {e}"));
    url.set_path(&format!("/{db}"));
    let mut commands: Vec<Vec<String>> = Vec::new();
    if let Some(password) = url.password() {
        let mut auth = vec!["AUTH".to_owned()];
        if !url.username().is_empty() {
            auth.push(url.username().to_owned());
        }
        auth.push(password.to_owned());
        commands.push(auth);
    }
    commands.push(vec!["SELECT".to_owned(), db.to_string()]);
    commands.push(vec!["FLUSHDB".to_owned()]);

    let address = host_port(url.as_str(), 6379);
    let stream = TcpStream::connect(&address)
        .await
        .unwrap_or_else(|e| panic!("cannot reach Redis at {address}: {e}"));
    let (read, mut write) = stream.into_split();
    let mut request = String::new();
    for command in &commands {
        write!(request, "*{}\r\n", command.len()).unwrap();
        for arg in command {
            write!(request, "${}\r\n{arg}\r\n", arg.len()).unwrap();
        }
    }
    write.write_all(request.as_bytes()).await.unwrap();
    let mut replies = BufReader::new(read);
    for command in &commands {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(5), replies.read_line(&mut line))
            .await
            .unwrap_or_else(|_| panic!("Redis did not answer {}", command[0]))
            .unwrap();
        assert!(
            line.starts_with('+'),
            "Redis refused {}: {line:?}",
            command[0]
        );
    }
    url.to_string()
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

/// A response, read whole.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
}

impl Response {
    /// The body as JSON (panics with the body text when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}), status {}: {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `x-cache` header (`hit` or `miss`).
    pub fn cache(&self) -> Option<&str> {
        self.header("x-cache")
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client for loopback servers: no proxy from the environment, a 10 s ceiling per request so a
/// hanging server fails the test instead of stalling it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(2))
        .build()
        .unwrap()
}

/// Sends `req` and reads the whole response.
pub async fn send(req: reqwest::RequestBuilder) -> Result<Response, reqwest::Error> {
    let started = Instant::now();
    let res = req.send().await?;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res.bytes().await?.to_vec();
    Ok(Response {
        status,
        headers,
        body,
        elapsed: started.elapsed(),
    })
}

/// The multipart boundary of [`multipart_file`].
pub const BOUNDARY: &str = "vellum-black-box-boundary-7d1f0c";

/// A `multipart/form-data` body with one `file` part.
pub fn multipart_file(filename: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// Polls `check` every 100 ms until it returns `Ok`, for at most `within`; panics with `what` and
/// the last `Err` (what was observed instead) when time runs out. Returns the value and the time
/// it took.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> (T, Duration)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(value) => return (value, started.elapsed()),
            Err(last) if started.elapsed() >= within => {
                panic!("{what}: not within {within:?}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// vellum-server processes
// ---------------------------------------------------------------------------------------------

/// A free loopback port: bound, read and released (the server binds it a moment later).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Removes every inherited `VELLUM_*` variable, so a child sees only what the test sets.
fn clean_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("VELLUM_") {
            cmd.env_remove(name);
        }
    }
}

/// How to start a `vellum-server`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    name: String,
    env: BTreeMap<String, String>,
    ignore_sigxfsz: bool,
}

impl ServerConfig {
    /// A server named `name` (in failure messages) on `database_url`, logging warnings only.
    pub fn new(name: &str, database_url: &str) -> Self {
        let mut env = BTreeMap::new();
        env.insert("VELLUM_DATABASE_URL".to_owned(), database_url.to_owned());
        env.insert("VELLUM_LOG".to_owned(), "warn".to_owned());
        env.insert("VELLUM_WORKERS".to_owned(), "2".to_owned());
        Self {
            name: name.to_owned(),
            env,
            ignore_sigxfsz: false,
        }
    }

    /// Starts the process with `SIGXFSZ` ignored (through `sh`'s `trap`, which `exec` keeps): a
    /// file size limit then set on it (`prlimit --pid … --fsize`) makes its writes past the
    /// limit fail, as on a full disk, instead of killing it.
    #[must_use]
    pub fn ignoring_sigxfsz(mut self) -> Self {
        self.ignore_sigxfsz = true;
        self
    }

    /// Sets an environment variable of the process (overriding a default above).
    #[must_use]
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    #[must_use]
    pub fn redis(self, url: &str) -> Self {
        self.env("VELLUM_REDIS_URL", url)
    }

    #[must_use]
    pub fn files_dir(self, dir: &Path) -> Self {
        self.env("VELLUM_FILES_DIR", &dir.display().to_string())
    }

    #[must_use]
    pub fn envs(mut self, vars: &[(String, String)]) -> Self {
        for (name, value) in vars {
            self.env.insert(name.clone(), value.clone());
        }
        self
    }

    /// Spawns the server and waits until `/health/ready` answers 200 (it migrates first).
    pub async fn start(self) -> Server {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut server = self.spawn();
            match server.wait_ready(START_TIMEOUT).await {
                Ok(()) => return server,
                // Another process took the port between `free_port` and the bind: try another.
                Err(log) if attempt < 3 && log.contains("in use") => {}
                Err(log) => panic!("{} did not become ready: {log}", self.name),
            }
        }
    }

    /// Spawns the server without waiting for it.
    pub fn spawn(&self) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let base = format!("http://{addr}");
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).unwrap();

        let server = env!("CARGO_BIN_EXE_vellum-server");
        let mut cmd = if self.ignore_sigxfsz {
            let mut sh = Command::new("sh");
            sh.args(["-c", "trap '' XFSZ; exec \"$0\"", server]);
            sh
        } else {
            Command::new(server)
        };
        clean_env(&mut cmd);
        cmd.current_dir(dir.path())
            .env("VELLUM_LISTEN", addr.to_string())
            .env("VELLUM_BASE_URL", &base)
            .env("VELLUM_FILES_DIR", dir.path().join("files"))
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn vellum-server ({}): {e}", self.name));
        Server {
            name: self.name.clone(),
            child: Some(child),
            addr,
            base,
            log_path,
            client: client(),
            _dir: dir,
        }
    }
}

/// A running `vellum-server` process, killed (SIGKILL) on drop.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    child: Option<Child>,
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    log_path: PathBuf,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The process id (the server's own, also when it was started through `sh`, which `exec`s it).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// What the process wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    async fn wait_ready(&mut self, within: Duration) -> Result<(), String> {
        let started = Instant::now();
        let mut last = String::from("no answer");
        while started.elapsed() < within {
            if !self.is_running() {
                return Err(format!("the process exited; its output:\n{}", self.log()));
            }
            match self.try_get("/health/ready", &[]).await {
                Ok(res) if res.status == 200 => return Ok(()),
                Ok(res) => last = format!("{} {}", res.status, res.text()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.kill();
        Err(format!(
            "last /health/ready: {last}; its output:\n{}",
            self.log()
        ))
    }

    /// A request builder for `path` with the server's client.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// GET with extra headers; `Err` on a transport error (refused, reset, timeout).
    pub async fn try_get(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Response, reqwest::Error> {
        let mut req = self.request(reqwest::Method::GET, path);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        send(req).await
    }

    /// GET as anonymous (`key` None) or with `Authorization: Bearer <key>`.
    pub async fn get(&self, path: &str, key: Option<&str>) -> Response {
        let bearer = key.map(|k| format!("Bearer {k}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| ("authorization", b))
            .into_iter()
            .collect();
        self.get_with(path, &headers).await
    }

    /// GET with extra headers, panicking on a transport error.
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        self.try_get(path, headers)
            .await
            .unwrap_or_else(|e| panic!("GET {path} on {}: {e}", self.name))
    }

    /// A JSON request (`key` None: anonymous), panicking on a transport error.
    pub async fn json(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: &Value,
    ) -> Response {
        let mut req = self
            .request(method.clone(), path)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = key {
            req = req.header("authorization", format!("Bearer {key}"));
        }
        send(req)
            .await
            .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.name))
    }

    /// Uploads `bytes` as `filename` to `POST /api/v1/files` with key `key`.
    pub async fn upload(&self, key: &str, filename: &str, bytes: &[u8]) -> Response {
        let req = self
            .request(reqwest::Method::POST, "/api/v1/files")
            .header("authorization", format!("Bearer {key}"))
            .header(
                "content-type",
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )
            .body(multipart_file(filename, bytes));
        send(req)
            .await
            .unwrap_or_else(|e| panic!("upload on {}: {e:?}", self.name))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() || std::env::var_os("TEST_LOG").is_some() {
            eprintln!("--- output of {} ---\n{}", self.name, self.log());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// vellum-admin
// ---------------------------------------------------------------------------------------------

/// The `vellum-admin` binary next to `vellum-server`. Cargo builds only this package's binaries
/// for its tests; `cargo test --workspace` builds vellum-admin's too, and otherwise the first
/// call runs `cargo build -p vellum-admin` into the same target directory and profile. (Run the
/// workspace's tests, or build vellum-admin, after changing it: an existing binary is used.)
pub fn admin_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let server = Path::new(env!("CARGO_BIN_EXE_vellum-server"));
        let bin = server.with_file_name(format!("vellum-admin{}", std::env::consts::EXE_SUFFIX));
        // `cargo test --workspace` (CI) builds it beside the server before any test runs;
        // building again here would re-resolve features for one package and relink it.
        if bin.exists() {
            return bin;
        }
        let profile_dir = server.parent().unwrap();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "build",
            "--quiet",
            "-p",
            "vellum-admin",
            "--profile",
            profile,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
        if let Some(target_dir) = profile_dir.parent() {
            cmd.arg("--target-dir").arg(target_dir);
        }
        let output = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run cargo build -p vellum-admin: {e}"));
        assert!(
            output.status.success(),
            "cargo build -p vellum-admin failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            bin.exists(),
            "cargo build -p vellum-admin did not produce {}",
            bin.display()
        );
        bin
    })
}

/// `vellum-admin` against a test's database (and Redis, when the servers use it).
#[derive(Debug, Clone)]
pub struct Admin {
    pub database_url: String,
    pub redis_url: Option<String>,
}

impl Admin {
    /// Runs `vellum-admin ARGS…`, asserts it succeeded and parses its stdout as JSON.
    pub async fn run(&self, args: &[&str]) -> Value {
        let args: Vec<String> = args.iter().map(|&a| a.to_owned()).collect();
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.run_blocking(&args))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    fn run_blocking(&self, args: &[String]) -> Value {
        let cwd = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(admin_bin());
        clean_env(&mut cmd);
        cmd.current_dir(cwd.path())
            .env("VELLUM_DATABASE_URL", &self.database_url)
            .env("VELLUM_LOG", "warn")
            .args(args);
        if let Some(redis) = &self.redis_url {
            cmd.env("VELLUM_REDIS_URL", redis);
        }
        let output = cmd.output().unwrap();
        assert!(
            output.status.success(),
            "vellum-admin {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("vellum-admin {args:?} printed no JSON ({e}): {stdout}"))
    }

    /// `vellum-admin apply` of `manifest`; returns the secrets of the keys it created, by name.
    pub async fn apply(&self, manifest: &Value) -> BTreeMap<String, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        std::fs::write(&path, manifest.to_string()).unwrap();
        let out = self.run(&["apply", path.to_str().unwrap()]).await;
        out["api_keys"]
            .as_object()
            .unwrap_or_else(|| panic!("apply printed no api_keys: {out}"))
            .iter()
            .map(|(name, secret)| (name.clone(), secret.as_str().unwrap().to_owned()))
            .collect()
    }
}

/// The test project: collection `notes` (a `title` string); the `public` role reads notes and
/// files; the `writer` role (key `writer-key`) writes notes and uploads files; two notes.
pub fn notes_manifest() -> Value {
    json!({
        "collections": [
            {"slug": "notes", "name": "Notes", "fields": [
                {"name": "title", "type": "string", "settings": {}}
            ]}
        ],
        "roles": [
            {"name": "public",
             "collection_permissions": {"notes": {"read": true}},
             "file_permissions": {"read": true}},
            {"name": "writer",
             "collection_permissions": {
                 "notes": {"create": true, "read": true, "update": true, "delete": true}
             },
             "file_permissions": {"create": true, "read": true, "read_private": true, "update": true}}
        ],
        "api_keys": [{"name": "writer-key", "role": "writer"}],
        "items": {"notes": [{"data": {"title": "first"}}, {"data": {"title": "second"}}]}
    })
}

/// The titles of a list response, in order.
pub fn titles(res: &Response) -> Vec<String> {
    res.json()["data"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list, status {}: {}", res.status, res.text()))
        .iter()
        .map(|item| {
            item["data"]["title"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A TCP proxy that can be stopped and started on the same port
// ---------------------------------------------------------------------------------------------

/// Forwards `127.0.0.1:<port>` to a real service. [`TcpProxy::stop`] closes every forwarded
/// connection and the listening socket (new connections are refused); [`TcpProxy::start`] listens
/// on the same port again.
#[derive(Debug)]
pub struct TcpProxy {
    port: u16,
    target: String,
    accept: Mutex<Option<JoinHandle<()>>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl TcpProxy {
    /// A running proxy to `target` (`host:port`) on a free loopback port.
    pub async fn new(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            port: listener.local_addr().unwrap().port(),
            target: target.to_owned(),
            accept: Mutex::new(None),
            connections: Arc::new(Mutex::new(Vec::new())),
        };
        proxy.serve(listener);
        proxy
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn serve(&self, listener: TcpListener) {
        let target = self.target.clone();
        let connections = Arc::clone(&self.connections);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let target = target.clone();
                let forward = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                let mut connections = connections.lock().unwrap();
                connections.retain(|c| !c.is_finished());
                connections.push(forward);
            }
        });
        *self.accept.lock().unwrap() = Some(task);
    }

    /// Stops listening and closes every forwarded connection (both sides see them drop).
    pub async fn stop(&self) {
        let accept = self.accept.lock().unwrap().take();
        if let Some(accept) = accept {
            accept.abort();
            let _ = accept.await;
        }
        // The accept task is gone, so no connection is added after this.
        let connections: Vec<_> = self.connections.lock().unwrap().drain(..).collect();
        for connection in connections {
            connection.abort();
            let _ = connection.await;
        }
    }

    /// Listens on the same port again (retrying for a few seconds while the port is released).
    pub async fn start(&self) {
        if self.accept.lock().unwrap().is_some() {
            return;
        }
        let started = Instant::now();
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(listener) => break listener,
                Err(e) if started.elapsed() > Duration::from_secs(5) => {
                    panic!("cannot listen on 127.0.0.1:{} again: {e}", self.port)
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        self.serve(listener);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        if let Ok(mut accept) = self.accept.lock()
            && let Some(accept) = accept.take()
        {
            accept.abort();
        }
        if let Ok(mut connections) = self.connections.lock() {
            for connection in connections.drain(..) {
                connection.abort();
            }
        }
    }
}
