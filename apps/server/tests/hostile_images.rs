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

// ---- hostile files (adapted from crates/imaging/tests/cost_bounds.rs) ---------------------------

fn crc32(bytes: &[u8]) -> u32 {
    let mut table = [0_u32; 256];
    for (n, entry) in (0_u32..).zip(table.iter_mut()) {
        let mut c = n;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    let mut crc = !0_u32;
    for &b in bytes {
        crc = table[usize::from((crc as u8) ^ b)] ^ (crc >> 8);
    }
    !crc
}

/// An LSB-first bit writer (deflate and VP8L order).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push((self.acc & 0xff) as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code, most significant bit first.
    fn code(&mut self, code: u32, length: u32) {
        for i in (0..length).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc & 0xff) as u8);
        }
        self.out
    }
}

/// A zlib stream of `n` zero bytes: one fixed-Huffman block of length-258 copies at distance 1
/// (13 bits each, so 100 MB compress to about 630 KB).
fn zlib_zeros(n: usize) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // fixed Huffman codes
    let mut left = n;
    if left > 0 {
        bits.code(0x30, 8); // literal 0
        left -= 1;
    }
    while left >= 258 {
        bits.code(0xc5, 8); // length 258 (symbol 285)
        bits.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        bits.code(0x30, 8);
    }
    bits.code(0, 7); // end of block
    let mut out = vec![0x78, 0x01];
    out.extend(bits.finish());
    // Adler-32 of n zeros: a = 1, b = n mod 65521.
    let b = u32::try_from(n % 65_521).unwrap();
    out.extend_from_slice(&((b << 16) | 1).to_be_bytes());
    out
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&[&kind[..], data].concat());
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// A black PNG of `width x height`, 8-bit grey (type 0) or RGB (type 2), with `extra` chunks
/// before the image data.
fn solid_png(width: u32, height: u32, color_type: u8, extra: &[Vec<u8>]) -> Vec<u8> {
    let channels: usize = if color_type == 2 { 3 } else { 1 };
    let (w, h) = (
        usize::try_from(width).unwrap(),
        usize::try_from(height).unwrap(),
    );
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, color_type, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    for c in extra {
        out.extend_from_slice(c);
    }
    out.extend(chunk(b"IDAT", &zlib_zeros(h * (1 + w * channels))));
    out.extend(chunk(b"IEND", b""));
    out
}

/// A 10x10 PNG whose `iCCP` profile is 100 MB of zeros (about 630 KB compressed).
fn iccp_png() -> Vec<u8> {
    let mut iccp = b"icc\0\0".to_vec();
    iccp.extend(zlib_zeros(100_000_000));
    solid_png(10, 10, 2, &[chunk(b"iCCP", &iccp)])
}

/// The GIF canvas bomb: a 35-byte GIF89a with a 7071x7071 logical screen and one 1x1 frame.
fn canvas_gif() -> Vec<u8> {
    let mut out = b"GIF89a".to_vec();
    out.extend_from_slice(&7071_u16.to_le_bytes());
    out.extend_from_slice(&7071_u16.to_le_bytes());
    out.extend_from_slice(&[0x80, 0, 0]); // a global table of 2 colours
    out.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
    out.extend_from_slice(&[0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]); // a 1x1 frame at (0, 0)
    // LZW, minimum code size 2: clear (4), index 0, end (5), in 3-bit codes.
    out.extend_from_slice(&[2, 2, 0x44, 0x01, 0]);
    out.push(0x3b);
    out
}

/// A progressive grey 7071x7071 JPEG of `scans` scans: a DC scan, then AC refinement scans of
/// one end-of-band run each (the decoder walks every block's 63 coefficients per scan).
fn scan_bomb(scans: usize) -> Vec<u8> {
    let mut out = vec![0xff, 0xd8];
    let segment = |out: &mut Vec<u8>, marker: u8, body: &[u8]| {
        out.extend_from_slice(&[0xff, marker]);
        out.extend_from_slice(&u16::try_from(body.len() + 2).unwrap().to_be_bytes());
        out.extend_from_slice(body);
    };
    let mut dqt = vec![0];
    dqt.extend_from_slice(&[1; 64]);
    segment(&mut out, 0xdb, &dqt);
    segment(&mut out, 0xc2, &[8, 0x1b, 0x9f, 0x1b, 0x9f, 1, 1, 0x11, 0]);
    // DC table 0: two codes of length 1 (categories 0 and 1).
    let mut dht = vec![0x00, 2];
    dht.extend_from_slice(&[0; 15]);
    dht.extend_from_slice(&[0, 1]);
    segment(&mut out, 0xc4, &dht);
    // AC table 0: EOB14 (0xE0) of length 1, EOB0..EOB13 of length 5.
    let mut dht = vec![0x10, 1, 0, 0, 0, 14];
    dht.extend_from_slice(&[0; 11]);
    dht.push(0xe0);
    dht.extend((0_u8..14).map(|r| r << 4));
    segment(&mut out, 0xc4, &dht);
    for scan in 0..scans {
        let (ss, se, a) = if scan == 0 {
            (0, 0, 0x00)
        } else {
            (1, 63, 0x10)
        };
        segment(&mut out, 0xda, &[1, 1, 0x00, ss, se, a]);
        out.extend_from_slice(&[0x00, 0x00, 0x00]);
    }
    out.extend_from_slice(&[0xff, 0xd9]);
    out
}

/// A 4x4 lossless WebP whose 1x1 entropy image names group `groups - 1`, so a decoder builds
/// `groups` groups of 5 complete trees of code lengths 1..10,10 (a 1,024-entry table each).
fn huffman_webp(groups: u32) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(0x2f, 8);
    bits.put(3, 14); // width - 1
    bits.put(3, 14); // height - 1
    bits.put(1, 1); // alpha
    bits.put(0, 3); // version
    bits.put(0, 1); // no transform
    bits.put(0, 1); // no colour cache
    bits.put(1, 1); // meta prefix codes
    bits.put(0, 3); // prefix bits 2: a 1x1 entropy image
    // The entropy image: no colour cache, five simple one-symbol codes: (red, green) is the group.
    let group = groups - 1;
    bits.put(0, 1);
    for symbol in [group & 0xff, group >> 8] {
        bits.put(1, 1); // simple
        bits.put(0, 1); // one symbol
        bits.put(1, 1); // eight bits
        bits.put(symbol, 8);
    }
    for _ in 0..3 {
        bits.put(1, 1);
        bits.put(0, 1);
        bits.put(0, 1);
        bits.put(0, 1);
    }
    // Code length code: symbols 1..6 of length 3, 7..10 of length 4, in the transmission order.
    const ORDER: [u32; 14] = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10];
    let cl_length = |symbol: u32| match symbol {
        1..=6 => 3,
        7..=10 => 4,
        _ => 0,
    };
    let cl_code = |symbol: u32| match symbol {
        1..=6 => (symbol - 1, 3),
        _ => (0b1100 + symbol - 7, 4),
    };
    for _ in 0..groups {
        for _ in 0..5 {
            bits.put(0, 1); // normal code
            bits.put(14 - 4, 4);
            for symbol in ORDER {
                bits.put(cl_length(symbol), 3);
            }
            bits.put(1, 1); // max_symbol given
            bits.put(1, 3); // in 4 bits
            bits.put(11 - 2, 4);
            for length in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10] {
                let (code, n) = cl_code(length);
                bits.code(code, n);
            }
        }
    }
    // 16 pixels, each (green, red, blue, alpha) symbol 0: the 1-bit code 0.
    for _ in 0..16 * 4 {
        bits.put(0, 1);
    }
    let mut vp8l = bits.finish();
    if vp8l.len() % 2 == 1 {
        vp8l.push(0);
    }
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&u32::try_from(4 + 8 + vp8l.len()).unwrap().to_le_bytes());
    out.extend_from_slice(b"WEBPVP8L");
    out.extend_from_slice(&u32::try_from(vp8l.len()).unwrap().to_le_bytes());
    out.extend(vp8l);
    out
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
