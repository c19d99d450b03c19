//! Transform worker processes: decode + resize + encode where the operating system bounds memory
//! and CPU and the work can be killed at its deadline.
//!
//! A worker is the server's own executable re-executed with `--transform-worker <MEMORY>` (the
//! binary calls [`run_worker`]). Before it reads any job it lowers its own `RLIMIT_DATA` to
//! `MEMORY` bytes, so a decoder that allocates beyond what any estimate foresaw fails one
//! transform (allocation failure aborts the worker), never the server. Jobs and replies are
//! length-prefixed frames on stdin and stdout:
//!
//! ```text
//! frame   = header-length:u32-le  header:JSON  body-length:u64-le  body
//! request = JobHeader (preset key, focal point, JPEG quality, max pixels, CPU seconds), source bytes
//! reply   = ReplyHeader (the output's type and size, or the ImagingError), output bytes
//! ```
//!
//! The server side ([`Pool`]) keeps idle workers for [`IDLE_TIMEOUT`] and then ends them, so
//! memory returns to the baseline after a burst; a worker that misses its deadline is killed
//! (`SIGKILL`) and one that dies is replaced by the next job.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use vellum_imaging::{FocalPoint, ImagingError, Preset, TransformOptions, Transformed};

/// The flag that turns the server's executable into a transform worker.
pub const WORKER_FLAG: &str = "--transform-worker";

/// How long an idle worker is kept before it is ended.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest frame header accepted (a few hundred bytes in practice).
const MAX_HEADER: u32 = 64 * 1024;
/// Largest reply body accepted from a worker.
const MAX_REPLY: u64 = 1 << 30;

/// A job as sent to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct JobHeader {
    key: String,
    focal: [f64; 2],
    jpeg_quality: u8,
    max_pixels: u64,
    /// CPU seconds the job may use; the worker's `RLIMIT_CPU` backstops the server's deadline.
    cpu_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum ReplyHeader {
    Done {
        mime_type: String,
        width: u32,
        height: u32,
    },
    Failed(WireError),
}

/// [`ImagingError`] on the wire, plus a panic inside the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum WireError {
    Unsupported { mime: String },
    TooManyPixels { width: u32, height: u32, max: u64 },
    TooComplex { what: String },
    Corrupt(String),
    Encode(String),
    Panicked,
    BadJob(String),
}

impl From<ImagingError> for WireError {
    fn from(err: ImagingError) -> Self {
        match err {
            ImagingError::Unsupported { mime } => Self::Unsupported { mime },
            ImagingError::TooManyPixels { width, height, max } => {
                Self::TooManyPixels { width, height, max }
            }
            ImagingError::TooComplex { what } => Self::TooComplex { what },
            ImagingError::Corrupt(m) => Self::Corrupt(m),
            ImagingError::Encode(m) => Self::Encode(m),
        }
    }
}

/// What a worker job ended with, short of the worker itself failing.
#[derive(Debug)]
pub(crate) enum JobError {
    Imaging(ImagingError),
    /// The worker could not be started or read the job: a bug, not the image's fault.
    Worker(String),
    /// The worker died, panicked or broke the protocol (killed by a limit, aborted on a failed
    /// allocation).
    Crashed(String),
    /// The deadline passed; the worker was killed.
    TimedOut,
}

/// The MIME types a transform can produce, as the `&'static str` of [`Transformed`].
fn static_mime(mime: &str) -> Option<&'static str> {
    ["image/jpeg", "image/png", "image/webp", "image/gif"]
        .into_iter()
        .find(|m| *m == mime)
}

// ---------------------------------------------------------------------------------------------
// The worker process
// ---------------------------------------------------------------------------------------------

/// The worker's main loop: limits itself to `memory` bytes of data segment, then answers jobs on
/// stdin until stdin closes. Returns when the server closes the pipe.
///
/// # Errors
/// When the limit cannot be set or the pipes fail.
pub fn run_worker(memory: u64) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    setrlimit(
        Resource::Data,
        Rlimit {
            current: Some(memory),
            maximum: Some(memory),
        },
    )?;
    // No core dumps of images (a job killed by RLIMIT_CPU gets SIGXCPU, which would dump one).
    setrlimit(
        Resource::Core,
        Rlimit {
            current: Some(0),
            maximum: Some(0),
        },
    )?;
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    loop {
        let Some(header_len) = read_u32(&mut input)? else {
            return Ok(());
        };
        let header = read_exact_vec(&mut input, u64::from(header_len.min(MAX_HEADER)))?;
        let body_len = read_u64(&mut input)?;
        let source = read_exact_vec(&mut input, body_len)?;
        let reply = match serde_json::from_slice::<JobHeader>(&header) {
            Ok(job) => {
                limit_cpu(job.cpu_seconds);
                run_job(&job, &source)
            }
            Err(e) => Err(WireError::BadJob(e.to_string())),
        };
        drop(source);
        let (header, body) = match reply {
            Ok(out) => (
                ReplyHeader::Done {
                    mime_type: out.mime_type.to_owned(),
                    width: out.width,
                    height: out.height,
                },
                out.bytes,
            ),
            Err(e) => (ReplyHeader::Failed(e), Vec::new()),
        };
        write_frame(&mut output, &header, &body)?;
    }
}

fn run_job(job: &JobHeader, source: &[u8]) -> Result<Transformed, WireError> {
    let preset = Preset::parse(&job.key).ok_or_else(|| WireError::BadJob(job.key.clone()))?;
    let focal = FocalPoint {
        x: job.focal[0],
        y: job.focal[1],
    };
    let options = TransformOptions {
        jpeg_quality: job.jpeg_quality,
        max_pixels: job.max_pixels,
    };
    std::panic::catch_unwind(|| vellum_imaging::transform(source, preset, Some(focal), &options))
        .map_err(|_| WireError::Panicked)?
        .map_err(WireError::from)
}

/// Lets this job use `seconds` more CPU seconds than the worker used so far (the soft limit;
/// `SIGXCPU` ends the worker past it). The server's deadline normally kills it first.
fn limit_cpu(seconds: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let used = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let used = u64::try_from(used.tv_sec).unwrap_or(0);
    let hard = getrlimit(Resource::Cpu).maximum;
    let soft = used.saturating_add(seconds).saturating_add(1);
    // A failure leaves the previous limit: the server's deadline still holds.
    let _ = setrlimit(
        Resource::Cpu,
        Rlimit {
            current: Some(hard.map_or(soft, |h| soft.min(h))),
            maximum: hard,
        },
    );
}

fn read_u32(input: &mut impl Read) -> std::io::Result<Option<u32>> {
    let mut buf = [0_u8; 4];
    match input.read_exact(&mut buf) {
        Ok(()) => Ok(Some(u32::from_le_bytes(buf))),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

fn read_u64(input: &mut impl Read) -> std::io::Result<u64> {
    let mut buf = [0_u8; 8];
    input.read_exact(&mut buf)?;
    Ok(u64::from_le_bytes(buf))
}

fn read_exact_vec(input: &mut impl Read, len: u64) -> std::io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len).map_err(std::io::Error::other)?;
    buf.resize(len, 0);
    input.read_exact(&mut buf)?;
    Ok(buf)
}

fn write_frame(out: &mut impl Write, header: &impl Serialize, body: &[u8]) -> std::io::Result<()> {
    let header = serde_json::to_vec(header).map_err(std::io::Error::other)?;
    let header_len = u32::try_from(header.len()).map_err(std::io::Error::other)?;
    out.write_all(&header_len.to_le_bytes())?;
    out.write_all(&header)?;
    out.write_all(&(body.len() as u64).to_le_bytes())?;
    out.write_all(body)?;
    out.flush()
}

// ---------------------------------------------------------------------------------------------
// The pool, in the server
// ---------------------------------------------------------------------------------------------

/// How the server starts and bounds its workers.
#[derive(Debug, Clone)]
pub(crate) struct PoolSettings {
    pub workers: usize,
    /// `RLIMIT_DATA` of each worker, in bytes.
    pub memory: u64,
}

/// Live workers, the idle ones kept for reuse.
#[derive(Debug)]
pub(crate) struct Pool {
    program: PathBuf,
    memory: u64,
    slots: Semaphore,
    idle: Mutex<Vec<(Worker, Instant)>>,
    stats: Mutex<PoolStats>,
}

/// Counters of the pool (exposed for tests and logs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Workers started so far.
    pub started: u64,
    /// Workers killed at a deadline.
    pub killed: u64,
    /// Workers that died on their own (a limit, an abort).
    pub crashed: u64,
    /// Idle workers ended after [`IDLE_TIMEOUT`].
    pub retired: u64,
    /// Workers idle right now.
    pub idle: usize,
}

#[derive(Debug)]
struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Pool {
    /// A pool running the current executable; starts no worker yet, and spawns the task that
    /// ends idle workers on `runtime`.
    pub(crate) fn new(
        settings: &PoolSettings,
        runtime: &tokio::runtime::Handle,
    ) -> std::io::Result<Arc<Self>> {
        let pool = Arc::new(Self {
            program: std::env::current_exe()?,
            memory: settings.memory,
            slots: Semaphore::new(settings.workers.max(1)),
            idle: Mutex::new(Vec::new()),
            stats: Mutex::new(PoolStats::default()),
        });
        runtime.spawn(retire_idle(Arc::downgrade(&pool)));
        Ok(pool)
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let mut stats = *self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats.idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        stats
    }

    fn count(&self, f: impl FnOnce(&mut PoolStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Runs one transform in a worker, killing it when `deadline` passes.
    pub(crate) async fn run(
        &self,
        source: &[u8],
        preset: Preset,
        focal: FocalPoint,
        options: &TransformOptions,
        deadline: Instant,
    ) -> Result<Transformed, JobError> {
        let _slot = tokio::time::timeout_at(deadline, self.slots.acquire())
            .await
            .map_err(|_| JobError::TimedOut)?
            .map_err(|e| JobError::Worker(e.to_string()))?;
        let mut worker = match self.checkout() {
            Some(worker) => worker,
            None => self.spawn().map_err(|e| JobError::Worker(e.to_string()))?,
        };
        let header = JobHeader {
            key: preset.key(),
            focal: [focal.x, focal.y],
            jpeg_quality: options.jpeg_quality,
            max_pixels: options.max_pixels,
            cpu_seconds: deadline
                .saturating_duration_since(Instant::now())
                .as_secs()
                .saturating_add(1),
        };
        match tokio::time::timeout_at(deadline, worker.exchange(&header, source)).await {
            Ok(Ok((reply, body))) => {
                self.checkin(worker);
                match reply {
                    ReplyHeader::Done {
                        mime_type,
                        width,
                        height,
                    } => Ok(Transformed {
                        bytes: body,
                        mime_type: static_mime(&mime_type).ok_or_else(|| {
                            JobError::Worker(format!("unknown output type {mime_type}"))
                        })?,
                        width,
                        height,
                    }),
                    ReplyHeader::Failed(e) => Err(match e {
                        WireError::Unsupported { mime } => {
                            JobError::Imaging(ImagingError::Unsupported { mime })
                        }
                        WireError::TooManyPixels { width, height, max } => {
                            JobError::Imaging(ImagingError::TooManyPixels { width, height, max })
                        }
                        WireError::TooComplex { what } => {
                            JobError::Imaging(ImagingError::TooComplex { what })
                        }
                        WireError::Corrupt(m) => JobError::Imaging(ImagingError::Corrupt(m)),
                        WireError::Encode(m) => JobError::Imaging(ImagingError::Encode(m)),
                        // As in process, a panic on an input is that input's failure.
                        WireError::Panicked => {
                            JobError::Crashed("the transform panicked".to_owned())
                        }
                        WireError::BadJob(m) => JobError::Worker(m),
                    }),
                }
            }
            Ok(Err(e)) => {
                // The pipe broke or the reply was garbage: the worker died or is unusable.
                let status = worker.end().await;
                self.count(|s| s.crashed += 1);
                Err(JobError::Crashed(format!("{e}; worker {status}")))
            }
            Err(_) => {
                let _ = worker.end().await;
                self.count(|s| s.killed += 1);
                Err(JobError::TimedOut)
            }
        }
    }

    fn checkout(&self) -> Option<Worker> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        // Most recently used first: the others are the ones left to retire.
        while let Some((mut worker, _)) = idle.pop() {
            if matches!(worker.child.try_wait(), Ok(None)) {
                return Some(worker);
            }
            self.count(|s| s.crashed += 1);
        }
        None
    }

    fn checkin(&self, worker: Worker) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((worker, Instant::now()));
    }

    fn spawn(&self) -> std::io::Result<Worker> {
        let mut child = Command::new(&self.program)
            .arg(WORKER_FLAG)
            .arg(self.memory.to_string())
            // mimalloc (the server's allocator) reserves a 1 GiB arena up front, which counts
            // against RLIMIT_DATA although it is never touched. No reservation at all makes
            // every large buffer an mmap and its page faults (+5 ms on a 1.7 MP JPEG); 16 MiB
            // arenas cost nothing measurable (docs/configuration.md).
            .env("MIMALLOC_ARENA_RESERVE", "16MiB")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        self.count(|s| s.started += 1);
        tracing::debug!(pid = child.id(), "transform worker started");
        Ok(Worker {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
        })
    }
}

impl Worker {
    async fn exchange(
        &mut self,
        header: &JobHeader,
        source: &[u8],
    ) -> std::io::Result<(ReplyHeader, Vec<u8>)> {
        let head = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        let head_len = u32::try_from(head.len()).map_err(std::io::Error::other)?;
        let mut prefix = Vec::with_capacity(head.len() + 12);
        prefix.extend_from_slice(&head_len.to_le_bytes());
        prefix.extend_from_slice(&head);
        prefix.extend_from_slice(&(source.len() as u64).to_le_bytes());
        self.stdin.write_all(&prefix).await?;
        self.stdin.write_all(source).await?;
        self.stdin.flush().await?;

        let reply_len = self.stdout.read_u32_le().await?;
        if reply_len > MAX_HEADER {
            return Err(std::io::Error::other("reply header too long"));
        }
        let mut reply = vec![0_u8; reply_len as usize];
        self.stdout.read_exact(&mut reply).await?;
        let reply: ReplyHeader = serde_json::from_slice(&reply).map_err(std::io::Error::other)?;
        let body_len = self.stdout.read_u64_le().await?;
        if body_len > MAX_REPLY {
            return Err(std::io::Error::other("reply body too long"));
        }
        let mut body = vec![0_u8; usize::try_from(body_len).map_err(std::io::Error::other)?];
        self.stdout.read_exact(&mut body).await?;
        Ok((reply, body))
    }

    /// Kills the worker and reaps it; returns how it ended, for the log.
    async fn end(mut self) -> String {
        let _ = self.child.start_kill();
        match tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "not reaped within 1 s".to_owned(),
        }
    }
}

/// Ends workers idle for longer than [`IDLE_TIMEOUT`], until the pool is dropped.
async fn retire_idle(pool: Weak<Pool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Some(pool) = pool.upgrade() else {
            return;
        };
        let stale: Vec<Worker> = {
            let mut idle = pool.idle.lock().unwrap_or_else(PoisonError::into_inner);
            let (stale, fresh): (Vec<_>, Vec<_>) = idle
                .drain(..)
                .partition(|(_, since)| since.elapsed() >= IDLE_TIMEOUT);
            *idle = fresh;
            stale.into_iter().map(|(w, _)| w).collect()
        };
        for mut worker in stale {
            pool.count(|s| s.retired += 1);
            // Closing stdin ends the worker's loop; it exits on its own.
            drop(worker.stdin);
            let _ = tokio::time::timeout(Duration::from_secs(1), worker.child.wait()).await;
            let _ = worker.child.start_kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let job = JobHeader {
            key: "size-400".to_owned(),
            focal: [0.25, 0.75],
            jpeg_quality: 82,
            max_pixels: 50_000_000,
            cpu_seconds: 11,
        };
        let mut wire = Vec::new();
        write_frame(&mut wire, &job, b"source bytes").unwrap();
        let mut input = wire.as_slice();
        let len = read_u32(&mut input).unwrap().unwrap();
        let header = read_exact_vec(&mut input, u64::from(len)).unwrap();
        assert_eq!(serde_json::from_slice::<JobHeader>(&header).unwrap(), job);
        let body_len = read_u64(&mut input).unwrap();
        assert_eq!(
            read_exact_vec(&mut input, body_len).unwrap(),
            b"source bytes"
        );
        assert_eq!(
            read_u32(&mut input).unwrap(),
            None,
            "a closed pipe ends the loop"
        );
    }

    #[test]
    fn a_job_reports_imaging_errors_as_data() {
        let job = JobHeader {
            key: "small".to_owned(),
            focal: [0.5, 0.5],
            jpeg_quality: 82,
            max_pixels: 50_000_000,
            cpu_seconds: 1,
        };
        assert!(matches!(
            run_job(&job, b"plain text"),
            Err(WireError::Unsupported { .. })
        ));
    }
}
