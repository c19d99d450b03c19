//! The transform budget's premise, measured: `estimate(...).memory` is never below what
//! `transform` really allocates, for every format and preset, and the hostile files of issue 27
//! (generated here, a few lines each) are refused or transformed within a small bounded peak.
//!
//! A counting global allocator (`peak_alloc`: this workspace forbids `unsafe`) wraps `System` and
//! tracks the peak of live bytes; measurements are
//! taken one at a time under a lock (the other tests of this binary take it too), from the bytes
//! live when the transform starts (the source, held by the caller, is not counted, as `Cost` says).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

use std::sync::Mutex;

use image::codecs::gif::GifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, ImageBuffer, Luma, Rgb, RgbImage};
use peak_alloc::PeakAlloc;
use vellum_imaging::{Cost, ImagingError, Preset, TransformOptions, estimate, transform};

/// Wraps `System`, counting live bytes and their peak (a reallocation counts old and new).
#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

static LOCK: Mutex<()> = Mutex::new(());
/// Estimates found below their measured peak, reported together at the end of each test.
static FAILURES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Fails with every estimate that was below its peak since the last call.
fn assert_no_underestimate() {
    let failures = std::mem::take(
        &mut *FAILURES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Runs `f` alone and returns its result and the peak of bytes it added to what was live.
fn measure<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let base = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let result = f();
    let peak = ALLOCATOR.peak_usage().saturating_sub(base);
    (result, u64::try_from(peak).unwrap())
}

const MIB: u64 = 1024 * 1024;

fn options() -> TransformOptions {
    TransformOptions::default()
}

/// Transforms `source` with `preset`, checks the estimate against the measured peak, and returns
/// the result and the peak.
fn checked(
    name: &str,
    source: &[u8],
    preset: Preset,
) -> (Result<vellum_imaging::Transformed, ImagingError>, u64) {
    let cost = estimate(source, preset, None, &options());
    let (result, peak) = measure(|| transform(source, preset, None, &options()));
    eprintln!(
        "{name:<28} {:<10} peak {:>10} estimate {:>12} {}",
        preset.key(),
        peak,
        cost.as_ref()
            .map_or_else(|e| format!("{e}"), |c| c.memory.to_string()),
        result
            .as_ref()
            .map_or_else(|e| format!("{e}"), |t| format!("{}x{}", t.width, t.height)),
    );
    match (&cost, &result) {
        (Ok(Cost { memory, .. }), Ok(_)) => {
            if *memory < peak {
                FAILURES
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!(
                        "{name} {preset:?}: estimate {memory} below the measured peak {peak}"
                    ));
            }
        }
        // A structural refusal is seen from the headers: the estimate refuses the same way.
        (Err(estimated), Err(actual)) => assert_eq!(estimated, actual, "{name} {preset:?}"),
        (Err(e), Ok(_)) => panic!("{name} {preset:?}: estimate refused ({e}) what transform did"),
        (Ok(_), Err(e)) => {
            assert!(
                !matches!(
                    e,
                    ImagingError::TooComplex { .. } | ImagingError::TooManyPixels { .. }
                ),
                "{name} {preset:?}: a structural refusal ({e}) the estimate did not report"
            );
        }
    }
    (result, peak)
}

// ---- ordinary images ----------------------------------------------------------------------------

fn gradient(width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        let r = u8::try_from(x * 255 / width).unwrap();
        let g = u8::try_from(y * 255 / height).unwrap();
        let b = u8::try_from((x * 7 + y * 13) % 256).unwrap();
        Rgb([r, g, b])
    })
}

fn encode(image: &DynamicImage, encoder: impl image::ImageEncoder) {
    encoder
        .write_image(
            image.as_bytes(),
            image.width(),
            image.height(),
            image.color().into(),
        )
        .unwrap();
}

fn jpeg_baseline(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    encode(
        &DynamicImage::ImageRgb8(gradient(width, height)),
        JpegEncoder::new_with_quality(&mut out, 85),
    );
    out
}

fn jpeg_progressive(width: u16, height: u16, grey: bool) -> Vec<u8> {
    let image = gradient(u32::from(width), u32::from(height));
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 85);
    encoder.set_progressive(true);
    if grey {
        let luma = DynamicImage::ImageRgb8(image).into_luma8();
        encoder
            .encode(luma.as_raw(), width, height, jpeg_encoder::ColorType::Luma)
            .unwrap();
    } else {
        encoder
            .encode(image.as_raw(), width, height, jpeg_encoder::ColorType::Rgb)
            .unwrap();
    }
    out
}

fn png_of(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    encode(image, PngEncoder::new(&mut out));
    out
}

fn webp_of(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    encode(image, WebPEncoder::new_lossless(&mut out));
    out
}

fn gif_of(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new_with_speed(&mut out, 30);
        let rgba = image.to_rgba8();
        encoder
            .encode(
                rgba.as_raw(),
                rgba.width(),
                rgba.height(),
                image::ExtendedColorType::Rgba8,
            )
            .unwrap();
    }
    out
}

/// `jpeg` with an EXIF APP1 segment giving `orientation` spliced in after SOI.
fn with_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = vec![
        b'M', b'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1,
    ];
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut out = vec![0xff, 0xd8, 0xff, 0xe1];
    out.extend_from_slice(&u16::try_from(2 + 6 + tiff.len()).unwrap().to_be_bytes());
    out.extend_from_slice(b"Exif\0\0");
    out.extend_from_slice(&tiff);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// A GIF of three frames (only the first is decoded).
fn animated_gif(image: &DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = GifEncoder::new_with_speed(&mut out, 30);
        for shift in 0..3_u8 {
            let mut rgba = image.to_rgba8();
            for pixel in rgba.pixels_mut() {
                pixel.0[0] = pixel.0[0].wrapping_add(shift * 40);
            }
            encoder.encode_frame(image::Frame::new(rgba)).unwrap();
        }
    }
    out
}

const PRESETS: [Preset; 7] = [
    Preset::Thumbnail,
    Preset::Small,
    Preset::Medium,
    Preset::Large,
    Preset::Size(100),
    Preset::Size(1000),
    Preset::Size(4096),
];

#[test]
fn the_estimate_is_never_below_the_peak_for_ordinary_images() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rgb = DynamicImage::ImageRgb8(gradient(2400, 1600));
    let rgba = DynamicImage::ImageRgba8(rgb.to_rgba8());
    let grey = DynamicImage::ImageLuma8(rgb.to_luma8());
    let rgb16 = DynamicImage::ImageRgb16(rgb.to_rgb16());
    let rgba16 = DynamicImage::ImageRgba16(rgba.to_rgba16());
    let grey_alpha = DynamicImage::ImageLumaA8(rgba.to_luma_alpha8());
    let small = DynamicImage::ImageRgb8(gradient(900, 600));
    let rotated = with_orientation(&jpeg_baseline(3000, 2000), 6);
    let rotated_progressive = with_orientation(&jpeg_progressive(2400, 1600, false), 8);
    let sources = [
        ("jpeg baseline 3000x2000", jpeg_baseline(3000, 2000)),
        ("jpeg baseline 2400x1600", jpeg_baseline(2400, 1600)),
        (
            "jpeg progressive 2400x1600",
            jpeg_progressive(2400, 1600, false),
        ),
        ("jpeg progressive grey", jpeg_progressive(2400, 1600, true)),
        ("png rgb", png_of(&rgb)),
        ("png rgba", png_of(&rgba)),
        ("png grey", png_of(&grey)),
        ("png rgb16", png_of(&rgb16)),
        ("png rgba16", png_of(&rgba16)),
        ("png grey alpha", png_of(&grey_alpha)),
        ("jpeg baseline rotated", rotated),
        ("jpeg progressive rotated", rotated_progressive),
        ("gif animated", animated_gif(&small)),
        ("png interlaced rgb", png_bytes(2400, 1601, 2, true, &[])),
        ("png interlaced grey", png_bytes(1203, 997, 0, true, &[])),
        ("webp lossless rgba", webp_of(&rgba)),
        ("webp lossless rgb", webp_of(&rgb)),
        ("gif", gif_of(&small)),
    ];
    for (name, source) in &sources {
        for preset in PRESETS {
            let (result, _) = checked(name, source, preset);
            result.unwrap();
        }
    }
    assert_no_underestimate();
}

// ---- hostile files --------------------------------------------------------------------------------

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

/// A solid PNG of `width x height`, 8-bit grey (type 0) or RGB (type 2), with `extra` chunks
/// before the image data.
fn solid_png(width: u32, height: u32, color_type: u8, extra: &[Vec<u8>]) -> Vec<u8> {
    png_bytes(width, height, color_type, false, extra)
}

/// As [`solid_png`], Adam7-interlaced when `interlaced`.
fn png_bytes(
    width: u32,
    height: u32,
    color_type: u8,
    interlaced: bool,
    extra: &[Vec<u8>],
) -> Vec<u8> {
    let channels: usize = if color_type == 2 { 3 } else { 1 };
    let (w, h) = (
        usize::try_from(width).unwrap(),
        usize::try_from(height).unwrap(),
    );
    let raw = if interlaced {
        // The seven passes (x0, y0, dx, dy); an empty pass has no rows at all.
        [
            (0, 0, 8, 8),
            (4, 0, 8, 8),
            (0, 4, 4, 8),
            (2, 0, 4, 4),
            (0, 2, 2, 4),
            (1, 0, 2, 2),
            (0, 1, 1, 2),
        ]
        .iter()
        .map(|&(x0, y0, dx, dy)| {
            let pw = w.saturating_sub(x0).div_ceil(dx);
            let ph = h.saturating_sub(y0).div_ceil(dy);
            if pw == 0 || ph == 0 {
                0
            } else {
                ph * (1 + pw * channels)
            }
        })
        .sum()
    } else {
        h * (1 + w * channels)
    };
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, color_type, 0, 0, u8::from(interlaced)]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    for c in extra {
        out.extend_from_slice(c);
    }
    out.extend(chunk(b"IDAT", &zlib_zeros(raw)));
    out.extend(chunk(b"IEND", b""));
    out
}

/// R4: a 10x10 PNG whose `iCCP` profile is 100 MB of zeros (about 400 KB compressed).
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

/// R7: a progressive grey 7071x7071 JPEG of `scans` scans: a DC scan, then AC refinement scans of
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

/// R10: a 4x4 lossless WebP whose 1x1 entropy image names group `groups - 1`, so the decoder
/// builds `groups` groups of 5 complete trees of code lengths 1..10,10 (a 1,024-entry table each).
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

fn structural(result: &Result<vellum_imaging::Transformed, ImagingError>) -> bool {
    matches!(
        result,
        Err(ImagingError::TooComplex { .. } | ImagingError::TooManyPixels { .. })
    )
}

#[test]
fn the_iccp_bomb_costs_what_its_pixels_cost() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let source = iccp_png();
    assert!(source.len() < 700_000, "{}", source.len());
    for preset in [Preset::Thumbnail, Preset::Size(5)] {
        let (result, peak) = checked("iCCP 100 MB png", &source, preset);
        assert!(result.is_ok() || structural(&result), "{result:?}");
        assert!(peak <= 64 * MIB, "peak {peak}");
    }
    assert_no_underestimate();
}

#[test]
fn the_gif_canvas_bomb_is_refused() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let source = canvas_gif();
    assert_eq!(source.len(), 35);
    let (result, peak) = checked("gif 7071x7071 screen", &source, Preset::Size(100));
    assert!(
        matches!(result, Err(ImagingError::TooComplex { .. })),
        "{result:?}"
    );
    assert!(peak <= 64 * MIB, "peak {peak}");
}

#[test]
fn the_webp_huffman_bomb_is_refused() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A valid file of 16 groups (one used) decodes; 17 groups for one entropy pixel, and the
    // review's 65,536, are refused.
    for groups in [16, 17, 65_536] {
        let source = huffman_webp(groups);
        let (result, peak) = checked(&format!("webp {groups} groups"), &source, Preset::Size(2));
        if groups == 16 {
            assert_eq!(result.unwrap().width, 2);
        } else {
            assert!(structural(&result), "{result:?}");
        }
        assert!(peak <= 64 * MIB, "peak {peak}");
    }
    assert_no_underestimate();
}

#[test]
fn the_scan_bomb_is_refused_on_every_path() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let source = scan_bomb(1_001);
    // 1/8 (DC), 1/4, 1/2 and full-size decodes.
    for preset in [
        Preset::Thumbnail,
        Preset::Size(1000),
        Preset::Size(3000),
        Preset::Size(4096),
    ] {
        let (result, _) = checked("jpeg 1,001 scans", &source, preset);
        assert!(
            matches!(result, Err(ImagingError::TooComplex { .. })),
            "{preset:?}: {result:?}"
        );
    }
    // At the cap, the file is left to the decoders.
    let at_cap = scan_bomb(100);
    let cost = estimate(&at_cap, Preset::Thumbnail, None, &options()).unwrap();
    assert!(cost.work >= 100 * 7071 * 7071, "{cost:?}");
}

#[test]
fn the_one_row_png_is_resized_within_a_bounded_peak() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let wide = solid_png(50_000_000, 1, 0, &[]);
    assert!(wide.len() < 400_000, "{}", wide.len());
    for preset in [
        Preset::Size(1),
        Preset::Size(5),
        Preset::Thumbnail,
        Preset::Size(4096),
    ] {
        let (result, peak) = checked("png 50,000,000x1", &wide, preset);
        let out = result.unwrap();
        assert_eq!(out.height, 1);
        assert!(peak <= 256 * MIB, "peak {peak}");
    }
    let tall = solid_png(1, 50_000_000, 0, &[]);
    let (result, peak) = checked("png 1x50,000,000", &tall, Preset::Size(3));
    assert_eq!(result.unwrap().width, 1);
    assert!(peak <= 256 * MIB, "peak {peak}");
    assert_no_underestimate();
}

#[test]
fn ordinary_images_keep_a_filtered_output() {
    let _alone = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Below the step threshold nothing changes: a 1000x10 image of black and white columns
    // resized to 100 pixels is the grey the filter gives, as before.
    let image = ImageBuffer::from_fn(1000, 10, |x, _| Luma([if x % 2 == 0 { 0_u8 } else { 255 }]));
    let source = png_of(&DynamicImage::ImageLuma8(image));
    let out = transform(&source, Preset::Size(100), None, &options()).unwrap();
    let decoded = image::load_from_memory(&out.bytes).unwrap().to_luma8();
    let value = decoded.get_pixel(50, 0).0[0];
    assert!((120..=135).contains(&value), "{value}");
}
