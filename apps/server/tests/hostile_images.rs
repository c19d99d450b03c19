//! The hostile files of issue 27 against the real `vellum-server` (spawned binary, default
//! worker mode): each file is generated here by a few lines of Rust (no binary fixtures),
//! uploaded, and requested as a transform. A PNG whose `iCCP` inflates to 100 MB is transformed
//! at once; a lossless WebP of 65,536 Huffman groups, a 35-byte GIF with a 7071x7071 screen and a
//! progressive JPEG of 1,001 scans are refused with 422 naming the limit (the JPEG's refusal is
//! then answered from the failure memo); a 50,000,000x1 PNG is answered within seconds; 100
//! distinct `size-N` above an image's size store one output; 8 parallel distinct `size-N` of a
//! 4000x4000 PNG get 200 or a 503 with `Retry-After`. Runs on SQLite (or on PostgreSQL when
//! `VELLUM_TEST_POSTGRES_URL` is set): no other service needed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::{Admin, Response, Server, ServerConfig, notes_manifest};
use vellum_imaging::testing::{canvas_gif, huffman_webp, iccp_png, scan_bomb, solid_png};
use vellum_storage::testing::TestDb;

// ---- the server ---------------------------------------------------------------------------------

/// A server in the default (worker) mode with its files under a directory this test owns.
struct Running {
    server: Server,
    key: String,
    files: tempfile::TempDir,
    _db: TestDb,
}

impl Running {
    async fn start(name: &str) -> Self {
        let db = TestDb::new().await.unwrap();
        let admin = Admin {
            database_url: db.url().to_owned(),
            redis_url: None,
        };
        let keys = admin.apply(&notes_manifest()).await;
        let files = tempfile::tempdir().unwrap();
        let server = ServerConfig::new(name, db.url())
            .files_dir(files.path())
            .start()
            .await;
        Self {
            server,
            key: keys["writer-key"].clone(),
            files,
            _db: db,
        }
    }

    /// Uploads `bytes` and returns the file's id.
    async fn upload(&self, name: &str, bytes: &[u8]) -> i64 {
        let res = self.server.upload(&self.key, name, bytes).await;
        assert_eq!(res.status, 201, "upload of {name}: {}", res.text());
        res.json()["data"]["id"].as_i64().unwrap()
    }

    /// `GET /api/v1/files/{id}/transforms/{key}`, anonymous.
    async fn transform(&self, id: i64, key: &str) -> Response {
        self.server
            .get(&format!("/api/v1/files/{id}/transforms/{key}"), None)
            .await
    }

    fn derived(&self) -> PathBuf {
        self.files.path().join("derived")
    }
}

/// The files under `dir` (recursively) with their sizes; none when it does not exist.
fn files_under(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            found.extend(files_under(&entry.path()));
        } else {
            found.push((entry.path(), meta.len()));
        }
    }
    found
}

fn bytes_under(dir: &Path) -> u64 {
    files_under(dir).iter().map(|(_, n)| n).sum()
}

/// How many transform worker processes (`vellum-server --transform-worker` started with this
/// server's environment: its `VELLUM_LISTEN` is unique) are running.
fn transform_workers(server: &Server) -> usize {
    let marker = format!("VELLUM_LISTEN={}", server.addr);
    let mut count = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let (Ok(environ), Ok(cmdline)) = (
            std::fs::read(entry.path().join("environ")),
            std::fs::read(entry.path().join("cmdline")),
        ) else {
            continue;
        };
        let has = |bytes: &[u8], wanted: &[u8]| bytes.split(|b| *b == 0).any(|v| v == wanted);
        if has(&environ, marker.as_bytes()) && has(&cmdline, b"--transform-worker") {
            count += 1;
        }
    }
    count
}

/// The message of a 422's `errors.file`.
fn file_error(res: &Response) -> String {
    assert_eq!(res.status, 422, "{}", res.text());
    res.json()["errors"]["file"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no errors.file: {}", res.text()))
        .to_owned()
}

/// The decoded output of a 200 and its format.
fn decoded(res: &Response) -> (image::DynamicImage, image::ImageFormat) {
    assert_eq!(res.status, 200, "{}", res.text());
    let format = image::guess_format(&res.body).unwrap();
    (image::load_from_memory(&res.body).unwrap(), format)
}

// ---- ordinary images ----------------------------------------------------------------------------

/// A photo-like image: gradients and a hash-based grain (so it does not compress to nothing),
/// or a smooth gradient (small as a PNG, yet every pixel must be decoded).
fn pixels(width: u32, height: u32, grain: bool, format: image::ImageFormat) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        let n =
            (x.wrapping_mul(374_761_393) ^ y.wrapping_mul(668_265_263)).wrapping_mul(1_274_126_177);
        let grain = if grain { (n >> 24) as u8 / 8 } else { 0 };
        image::Rgb([
            ((x * 255) / width.max(1)) as u8 ^ grain,
            ((y * 255) / height.max(1)) as u8,
            (((x + y) * 127) / (width + height).max(1)) as u8 + grain,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

// ---- the tests ----------------------------------------------------------------------------------

#[tokio::test]
async fn a_png_whose_iccp_inflates_to_100_mb_is_transformed_at_once() {
    let run = Running::start("iccp").await;
    let source = iccp_png();
    assert!(source.len() < 700_000, "{}", source.len());
    let id = run.upload("iccp.png", &source).await;

    for key in ["thumbnail", "size-5"] {
        let res = run.transform(id, key).await;
        let (out, format) = decoded(&res);
        assert_eq!(format, image::ImageFormat::Png, "{key}");
        assert_eq!(res.header("content-type"), Some("image/png"), "{key}");
        assert!(
            out.width() <= 10 && out.height() <= 10,
            "{key}: {}x{}",
            out.width(),
            out.height()
        );
        // The profile is dropped: the output is a few hundred bytes, not the 100 MB profile.
        assert!(res.body.len() < 10_000, "{key}: {} bytes", res.body.len());
        assert!(
            res.elapsed < Duration::from_secs(3),
            "{key}: answered after {:?}",
            res.elapsed
        );
        eprintln!(
            "iCCP png {key}: {}x{} in {:?}",
            out.width(),
            out.height(),
            res.elapsed
        );
    }
    let (thumb, _) = decoded(&run.transform(id, "thumbnail").await);
    assert_eq!(
        (thumb.width(), thumb.height()),
        (10, 10),
        "the image at its own size"
    );
    let (five, _) = decoded(&run.transform(id, "size-5").await);
    assert_eq!((five.width(), five.height()), (5, 5));
}

#[tokio::test]
async fn a_webp_of_65536_huffman_groups_is_refused_naming_the_limit() {
    let run = Running::start("webp").await;
    let source = huffman_webp(65_536);
    let id = run.upload("groups.webp", &source).await;
    let res = run.transform(id, "size-2").await;
    let message = file_error(&res);
    assert!(
        message.contains("65536 Huffman groups") && message.contains("at most 4096"),
        "{message}"
    );
    assert!(
        res.elapsed < Duration::from_secs(5),
        "answered after {:?}",
        res.elapsed
    );

    // The same generator at 16 groups (one used) is a valid image: the refusal is the limit's.
    let ok = run.upload("ok.webp", &huffman_webp(16)).await;
    let (out, _) = decoded(&run.transform(ok, "size-2").await);
    assert_eq!(out.width(), 2);
}

#[tokio::test]
async fn a_35_byte_gif_with_a_7071_square_screen_is_refused() {
    let run = Running::start("gif").await;
    let source = canvas_gif();
    assert_eq!(source.len(), 35);
    let id = run.upload("canvas.gif", &source).await;
    for key in ["size-100", "thumbnail"] {
        let res = run.transform(id, key).await;
        let message = file_error(&res);
        assert!(
            message.contains("GIF screen of 7071x7071") && message.contains("first frame of 1 "),
            "{key}: {message}"
        );
        assert!(
            res.elapsed < Duration::from_secs(2),
            "{key}: answered after {:?}",
            res.elapsed
        );
    }
}

#[tokio::test]
async fn a_50_million_by_1_png_is_answered_within_seconds() {
    let run = Running::start("wide").await;
    let source = solid_png(50_000_000, 1, 0, &[]);
    assert!(source.len() < 400_000, "{}", source.len());
    let id = run.upload("wide.png", &source).await;
    for (key, width) in [("size-100", 100), ("thumbnail", 200)] {
        let res = run.transform(id, key).await;
        eprintln!(
            "50,000,000x1 png {key}: {} in {:?}",
            res.status, res.elapsed
        );
        assert!(
            res.elapsed < Duration::from_secs(5),
            "{key}: answered after {:?}",
            res.elapsed
        );
        match res.status {
            200 => {
                let (out, _) = decoded(&res);
                // Thumbnails are cropped to a square box; the height cannot grow past the source.
                assert_eq!(out.height(), 1, "{key}");
                assert!(out.width() <= width, "{key}: {}", out.width());
            }
            422 => {
                let message = file_error(&res);
                assert!(message.contains("too"), "{key}: {message}");
            }
            other => panic!("{key}: status {other}: {}", res.text()),
        }
    }
}

#[tokio::test]
async fn a_jpeg_of_1001_scans_is_refused_then_answered_from_the_failure_memo() {
    let run = Running::start("scans").await;
    let source = scan_bomb(1_001);
    let id = run.upload("scans.jpg", &source).await;

    let first = run.transform(id, "size-1000").await;
    let message = file_error(&first);
    assert!(message.contains("more than 100 scans"), "{message}");
    assert!(
        first.elapsed < Duration::from_secs(10),
        "answered after {:?}",
        first.elapsed
    );

    // Swap the stored original for a valid JPEG behind the server's back: a request that read
    // the source again would now succeed, so a 422 proves the failure memo answered it.
    let original: Vec<PathBuf> = files_under(run.files.path())
        .into_iter()
        .filter(|(path, len)| {
            *len == source.len() as u64 && std::fs::read(path).is_ok_and(|b| b == source)
        })
        .map(|(path, _)| path)
        .collect();
    assert_eq!(original.len(), 1, "the stored original: {original:?}");
    std::fs::write(&original[0], pixels(64, 48, true, image::ImageFormat::Jpeg)).unwrap();

    let started = Instant::now();
    let again = run.transform(id, "size-1000").await;
    let elapsed = started.elapsed();
    assert_eq!(file_error(&again), message, "the same refusal");
    assert!(
        elapsed < Duration::from_secs(1),
        "answered after {elapsed:?}"
    );
    eprintln!("1,001 scans: {:?}, then {elapsed:?}", first.elapsed);

    // Another key is not in the memo: it reads the (swapped) source and succeeds.
    let other = run.transform(id, "size-20").await;
    let (out, _) = decoded(&other);
    assert_eq!(out.width(), 20);
}

#[tokio::test]
async fn a_hundred_sizes_above_the_source_store_one_output() {
    let run = Running::start("sizes").await;
    let source = pixels(1600, 1067, true, image::ImageFormat::Jpeg);
    let id = run.upload("photo.jpg", &source).await;
    let before = bytes_under(&run.derived());

    let started = Instant::now();
    let mut first: Option<Vec<u8>> = None;
    for n in 1601..=1700 {
        let res = run.transform(id, &format!("size-{n}")).await;
        assert_eq!(res.status, 200, "size-{n}: {}", res.text());
        match &first {
            None => {
                let (out, _) = decoded(&res);
                assert_eq!((out.width(), out.height()), (1600, 1067), "size-{n}");
                first = Some(res.body);
            }
            Some(body) => assert!(*body == res.body, "size-{n}: another output"),
        }
    }
    let took = started.elapsed();

    let grown = bytes_under(&run.derived()) - before;
    let stored = files_under(&run.derived());
    eprintln!(
        "100 sizes above 1600x1067 in {took:?}: derived/ grew by {grown} bytes ({} files, source \
         {} bytes)",
        stored.len(),
        source.len()
    );
    assert!(grown <= 2 * 1024 * 1024, "derived/ grew by {grown} bytes");
    assert_eq!(stored.len(), 1, "one stored output: {stored:?}");
    assert!(
        stored[0].0.ends_with("size-1600"),
        "stored as size-1600: {stored:?}"
    );
}

#[tokio::test]
async fn eight_parallel_sizes_of_a_large_png_share_the_budget() {
    let run = Running::start("parallel").await;
    let id = run
        .upload(
            "big.png",
            &pixels(4000, 4000, false, image::ImageFormat::Png),
        )
        .await;
    let sizes: Vec<u32> = (0..8).map(|i| 300 + 250 * i).collect();
    let started = Instant::now();
    let results = futures_join(&run, id, &sizes).await;
    let took = started.elapsed();
    let mut ok = 0;
    for (size, res) in sizes.iter().zip(&results) {
        eprintln!("4000x4000 size-{size}: {} in {:?}", res.status, res.elapsed);
        match res.status {
            200 => {
                let (out, _) = decoded(res);
                assert_eq!((out.width(), out.height()), (*size, *size), "size-{size}");
                ok += 1;
            }
            503 => {
                let retry = res
                    .header("retry-after")
                    .unwrap_or_else(|| panic!("size-{size}: a 503 without Retry-After"));
                assert!(
                    retry.parse::<u64>().is_ok_and(|s| s >= 1),
                    "size-{size}: Retry-After {retry:?}"
                );
            }
            other => panic!("size-{size}: status {other}: {}", res.text()),
        }
    }
    assert!(ok >= 1, "no transform got through");
    // The default mode ran them in worker processes (idle ones end only after 10 s).
    assert!(
        transform_workers(&run.server) >= 1,
        "no transform worker process"
    );
    eprintln!("8 parallel sizes: {ok} answered 200 in {took:?}");
}

/// The transforms of `sizes` of file `id`, all in flight at once.
async fn futures_join(run: &Running, id: i64, sizes: &[u32]) -> Vec<Response> {
    let keys: Vec<String> = sizes.iter().map(|size| format!("size-{size}")).collect();
    futures_util::future::join_all(keys.iter().map(|key| run.transform(id, key))).await
}
