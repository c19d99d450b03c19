#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Cursor;

use image::codecs::gif::{GifDecoder, GifEncoder};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::{
    AnimationDecoder, Delay, DynamicImage, Frame, GrayImage, ImageReader, Rgb, RgbImage, Rgba,
    RgbaImage,
};

use crate::{FocalPoint, ImagingError, Preset, TransformOptions, Transformed, probe, transform};

const RED: [u8; 3] = [230, 20, 20];
const GREEN: [u8; 3] = [20, 200, 40];
const BLUE: [u8; 3] = [20, 30, 220];
const YELLOW: [u8; 3] = [240, 230, 20];

/// A smooth gradient with a little texture, so resizes have something to filter.
fn gradient(width: u32, height: u32) -> RgbImage {
    RgbImage::from_fn(width, height, |x, y| {
        let r = u8::try_from(x * 255 / width.max(1)).unwrap();
        let g = u8::try_from(y * 255 / height.max(1)).unwrap();
        let b = u8::try_from(((x / 7 + y / 5) % 2) * 60 + 100).unwrap();
        Rgb([r, g, b])
    })
}

/// Equal bands of the given colours: vertical (left to right) or horizontal (top to bottom).
fn bands(width: u32, height: u32, colors: &[[u8; 3]], vertical: bool) -> RgbImage {
    let n = u32::try_from(colors.len()).unwrap();
    RgbImage::from_fn(width, height, |x, y| {
        let i = if vertical {
            x * n / width
        } else {
            y * n / height
        };
        Rgb(colors[usize::try_from(i).unwrap()])
    })
}

fn jpeg(image: &RgbImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    DynamicImage::ImageRgb8(image.clone())
        .write_with_encoder(JpegEncoder::new_with_quality(&mut out, quality))
        .unwrap();
    out
}

fn png(image: DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    image.write_with_encoder(PngEncoder::new(&mut out)).unwrap();
    out
}

fn webp(image: DynamicImage) -> Vec<u8> {
    let mut out = Vec::new();
    image
        .write_with_encoder(WebPEncoder::new_lossless(&mut out))
        .unwrap();
    out
}

/// A minimal big-endian EXIF APP1 segment holding only an orientation tag.
fn exif_app1(orientation: u16) -> Vec<u8> {
    let mut tiff = vec![b'M', b'M', 0, 42, 0, 0, 0, 8]; // header, IFD0 at offset 8
    tiff.extend_from_slice(&[0, 1]); // one entry
    tiff.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1]); // Orientation, SHORT, count 1
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0]); // value padding
    tiff.extend_from_slice(&[0, 0, 0, 0]); // no next IFD
    let length = u16::try_from(2 + 6 + tiff.len()).unwrap();
    let mut segment = vec![0xff, 0xe1];
    segment.extend_from_slice(&length.to_be_bytes());
    segment.extend_from_slice(b"Exif\0\0");
    segment.extend_from_slice(&tiff);
    segment
}

/// `jpeg` with an EXIF orientation segment spliced in right after SOI.
fn with_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    assert_eq!(&jpeg[..2], &[0xff, 0xd8]);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&exif_app1(orientation));
    out.extend_from_slice(&jpeg[2..]);
    out
}

fn run(source: &[u8], preset: Preset) -> Transformed {
    transform(source, preset, None, &TransformOptions::default()).unwrap()
}

fn decode(bytes: &[u8]) -> DynamicImage {
    image::load_from_memory(bytes).unwrap()
}

fn assert_close(actual: [u8; 3], expected: [u8; 3], what: &str) {
    let off = actual
        .iter()
        .zip(expected)
        .any(|(&a, e)| (i16::from(a) - i16::from(e)).abs() > 40);
    assert!(!off, "{what}: got {actual:?}, expected about {expected:?}");
}

fn rgb_at(image: &DynamicImage, x: u32, y: u32) -> [u8; 3] {
    image.to_rgb8().get_pixel(x, y).0
}

/// Every preset's output size, checked from the reported size, the decoded output and its format.
#[test]
fn every_preset_has_the_contract_dimensions_for_jpeg_and_png() {
    let presets = [
        Preset::Thumbnail,
        Preset::Small,
        Preset::Medium,
        Preset::Large,
        Preset::Size(400),
        Preset::Size(40),
        Preset::Size(1),
        Preset::Size(4096),
    ];
    type Case = ((u32, u32), [(u32, u32); 8]);
    let cases: [Case; 3] = [
        (
            (3000, 2000),
            [
                (200, 200),
                (640, 427),
                (1280, 853),
                (1920, 1280),
                (400, 267),
                (40, 27),
                (1, 1),
                (3000, 2000),
            ],
        ),
        (
            (2000, 3000),
            [
                (200, 200),
                (427, 640),
                (853, 1280),
                (1280, 1920),
                (267, 400),
                (27, 40),
                (1, 1),
                (2000, 3000),
            ],
        ),
        (
            (50, 30),
            [
                (30, 30),
                (50, 30),
                (50, 30),
                (50, 30),
                (50, 30),
                (40, 24),
                (1, 1),
                (50, 30),
            ],
        ),
    ];
    for ((width, height), expected) in cases {
        let image = gradient(width, height);
        let sources = [
            ("image/jpeg", jpeg(&image, 90)),
            ("image/png", png(DynamicImage::ImageRgb8(image))),
        ];
        for (mime, source) in &sources {
            for (preset, (out_width, out_height)) in presets.iter().zip(expected) {
                let what = format!("{mime} {width}x{height} {}", preset.key());
                let out = run(source, *preset);
                assert_eq!((out.width, out.height), (out_width, out_height), "{what}");
                assert_eq!(out.mime_type, *mime, "{what}");
                assert_eq!(probe(&out.bytes).mime_type, *mime, "{what}");
                let decoded = decode(&out.bytes);
                assert_eq!(
                    (decoded.width(), decoded.height()),
                    (out_width, out_height),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn small_images_are_never_upscaled() {
    let source = png(DynamicImage::ImageRgb8(gradient(120, 90)));
    for preset in [
        Preset::Small,
        Preset::Large,
        Preset::Size(4096),
        Preset::Size(121),
    ] {
        let out = run(&source, preset);
        assert_eq!((out.width, out.height), (120, 90), "{}", preset.key());
    }
    let out = run(&source, Preset::Thumbnail);
    assert_eq!((out.width, out.height), (90, 90));
    // Lossless and same size: the pixels come back unchanged (the centred 90x90 square).
    let original = gradient(120, 90);
    let thumb = decode(&out.bytes).to_rgb8();
    assert_eq!(thumb.get_pixel(0, 0), original.get_pixel(15, 0));
    assert_eq!(thumb.get_pixel(89, 89), original.get_pixel(104, 89));
}

#[test]
fn thumbnail_crops_around_the_focal_point() {
    // Landscape: red | green | blue columns; the square crop slides along x.
    let landscape = bands(3000, 1000, &[RED, GREEN, BLUE], true);
    // Tall enough for the DC-only (1/8) decode: the 1600 px square is 8 times the thumbnail.
    let portrait = bands(1600, 4800, &[RED, GREEN, BLUE], false);
    for source in [
        jpeg(&landscape, 92),
        png(DynamicImage::ImageRgb8(landscape.clone())),
    ] {
        for (x, expected) in [
            (0.0, RED),
            (0.1, RED),
            (0.5, GREEN),
            (0.9, BLUE),
            (1.0, BLUE),
        ] {
            let focal = FocalPoint { x, y: 0.5 };
            let out = transform(
                &source,
                Preset::Thumbnail,
                Some(focal),
                &TransformOptions::default(),
            )
            .unwrap();
            assert_eq!((out.width, out.height), (200, 200));
            let thumb = decode(&out.bytes);
            for (px, py) in [(5, 5), (100, 100), (194, 194)] {
                assert_close(
                    rgb_at(&thumb, px, py),
                    expected,
                    &format!("x={x} at {px},{py}"),
                );
            }
        }
    }
    // Portrait: the crop slides along y; the default focal point is the centre.
    let source = jpeg(&portrait, 92);
    let bottom = transform(
        &source,
        Preset::Thumbnail,
        Some(FocalPoint { x: 0.5, y: 0.97 }),
        &TransformOptions::default(),
    )
    .unwrap();
    assert_eq!((bottom.width, bottom.height), (200, 200));
    assert_close(rgb_at(&decode(&bottom.bytes), 100, 100), BLUE, "bottom");
    let centre = run(&source, Preset::Thumbnail);
    assert_close(
        rgb_at(&decode(&centre.bytes), 100, 100),
        GREEN,
        "default centre",
    );
    let top = transform(
        &source,
        Preset::Thumbnail,
        Some(FocalPoint { x: 0.5, y: 0.05 }),
        &TransformOptions::default(),
    )
    .unwrap();
    assert_close(rgb_at(&decode(&top.bytes), 100, 100), RED, "top");
}

#[test]
fn thumbnail_of_a_quadrant_image_takes_the_focal_quadrant_side() {
    // 400x200 PNG: the 200x200 crop is exactly the left or right half, kept pixel for pixel.
    let image = RgbImage::from_fn(400, 200, |x, y| {
        Rgb(match (x < 200, y < 100) {
            (true, true) => RED,
            (false, true) => GREEN,
            (true, false) => BLUE,
            (false, false) => YELLOW,
        })
    });
    let source = png(DynamicImage::ImageRgb8(image));
    let right = transform(
        &source,
        Preset::Thumbnail,
        Some(FocalPoint { x: 0.8, y: 0.2 }),
        &TransformOptions::default(),
    )
    .unwrap();
    let right = decode(&right.bytes).to_rgb8();
    assert_eq!(right.get_pixel(0, 0).0, GREEN);
    assert_eq!(right.get_pixel(199, 199).0, YELLOW);
    let left = transform(
        &source,
        Preset::Thumbnail,
        Some(FocalPoint { x: 0.2, y: 0.9 }),
        &TransformOptions::default(),
    )
    .unwrap();
    let left = decode(&left.bytes).to_rgb8();
    assert_eq!(left.get_pixel(199, 0).0, RED);
    assert_eq!(left.get_pixel(0, 199).0, BLUE);
}

#[test]
fn exif_orientation_6_is_applied() {
    // Stored 300x200 with red on the left and blue on the right; orientation 6 displays it rotated
    // 90 degrees clockwise: 200x300, red on top, blue at the bottom.
    let stored = bands(300, 200, &[RED, BLUE], true);
    let source = with_orientation(&jpeg(&stored, 92), 6);
    let out = run(&source, Preset::Size(4096));
    assert_eq!((out.width, out.height), (200, 300));
    let shown = decode(&out.bytes);
    assert_eq!((shown.width(), shown.height()), (200, 300));
    assert_close(rgb_at(&shown, 100, 20), RED, "top");
    assert_close(rgb_at(&shown, 100, 280), BLUE, "bottom");
    // The output carries no EXIF, so nothing rotates it a second time.
    assert!(!out.bytes.windows(6).any(|w| w == b"Exif\0\0"));

    // A reduced (DCT-scaled) decode of a large rotated photo: the fit box applies to the
    // displayed size.
    let large = with_orientation(&jpeg(&gradient(3000, 2000), 85), 6);
    let out = run(&large, Preset::Size(400));
    assert_eq!((out.width, out.height), (267, 400));
}

#[test]
fn the_focal_point_is_read_in_the_displayed_frame() {
    // Stored red | green | blue columns, orientation 6: displayed as red / green / blue rows.
    let stored = bands(1800, 600, &[RED, GREEN, BLUE], true);
    let source = with_orientation(&jpeg(&stored, 92), 6);
    for (y, expected) in [(0.0, RED), (0.5, GREEN), (1.0, BLUE)] {
        let out = transform(
            &source,
            Preset::Thumbnail,
            Some(FocalPoint { x: 0.5, y }),
            &TransformOptions::default(),
        )
        .unwrap();
        assert_eq!((out.width, out.height), (200, 200));
        assert_close(
            rgb_at(&decode(&out.bytes), 100, 100),
            expected,
            &format!("y={y}"),
        );
    }
    // Orientation 8 (90 degrees counter-clockwise) puts the stored right side on top.
    let source = with_orientation(&jpeg(&stored, 92), 8);
    let out = transform(
        &source,
        Preset::Thumbnail,
        Some(FocalPoint { x: 0.5, y: 0.0 }),
        &TransformOptions::default(),
    )
    .unwrap();
    assert_close(
        rgb_at(&decode(&out.bytes), 100, 100),
        BLUE,
        "orientation 8 top",
    );
}

#[test]
fn every_exif_orientation_gives_the_displayed_size() {
    let base = jpeg(&gradient(64, 32), 90);
    for orientation in 1..=8_u16 {
        let out = run(&with_orientation(&base, orientation), Preset::Size(4096));
        let expected = if orientation >= 5 { (32, 64) } else { (64, 32) };
        assert_eq!(
            (out.width, out.height),
            expected,
            "orientation {orientation}"
        );
    }
}

#[test]
fn an_animated_gif_gives_its_first_frame_as_a_single_frame_gif() {
    let frame = |color: [u8; 3]| {
        Frame::from_parts(
            RgbaImage::from_pixel(80, 60, Rgba([color[0], color[1], color[2], 255])),
            0,
            0,
            Delay::from_numer_denom_ms(100, 1),
        )
    };
    let mut source = Vec::new();
    {
        let mut encoder = GifEncoder::new(&mut source);
        encoder
            .encode_frames([frame(RED), frame(BLUE), frame(GREEN)])
            .unwrap();
    }
    let frames = GifDecoder::new(Cursor::new(&source))
        .unwrap()
        .into_frames()
        .count();
    assert_eq!(frames, 3);

    for (preset, size) in [(Preset::Small, (80, 60)), (Preset::Size(40), (40, 30))] {
        let out = run(&source, preset);
        assert_eq!(out.mime_type, "image/gif");
        assert_eq!(probe(&out.bytes).mime_type, "image/gif");
        assert_eq!((out.width, out.height), size);
        assert_close(rgb_at(&decode(&out.bytes), 10, 10), RED, "first frame");
        let frames = GifDecoder::new(Cursor::new(&out.bytes))
            .unwrap()
            .into_frames()
            .count();
        assert_eq!(frames, 1);
    }
}

#[test]
fn output_format_matches_the_source_format() {
    let image = gradient(700, 500);
    let gif = {
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(image.clone())
            .write_with_encoder(GifEncoder::new_with_speed(&mut out, 30))
            .unwrap();
        out
    };
    for (source, mime) in [
        (jpeg(&image, 85), "image/jpeg"),
        (png(DynamicImage::ImageRgb8(image.clone())), "image/png"),
        (webp(DynamicImage::ImageRgb8(image.clone())), "image/webp"),
        (gif, "image/gif"),
    ] {
        assert_eq!(probe(&source).mime_type, mime);
        for preset in [Preset::Thumbnail, Preset::Small, Preset::Size(300)] {
            let out = run(&source, preset);
            assert_eq!(out.mime_type, mime);
            assert_eq!(probe(&out.bytes).mime_type, mime, "{mime} {}", preset.key());
            let decoded = decode(&out.bytes);
            assert_eq!((decoded.width(), decoded.height()), (out.width, out.height));
        }
    }
}

#[test]
fn alpha_is_kept_for_png_and_webp() {
    // Left half opaque red, right half fully transparent.
    let image = RgbaImage::from_fn(400, 300, |x, _| {
        if x < 200 {
            Rgba([RED[0], RED[1], RED[2], 255])
        } else {
            Rgba([0, 0, 0, 0])
        }
    });
    for source in [
        png(DynamicImage::ImageRgba8(image.clone())),
        webp(DynamicImage::ImageRgba8(image.clone())),
    ] {
        let out = run(&source, Preset::Size(100));
        assert_eq!((out.width, out.height), (100, 75));
        let decoded = decode(&out.bytes);
        assert!(decoded.color().has_alpha(), "{}", out.mime_type);
        let rgba = decoded.to_rgba8();
        assert_eq!(rgba.get_pixel(10, 10).0[3], 255);
        assert_eq!(rgba.get_pixel(90, 10).0[3], 0);
        // Premultiplied filtering: no dark fringe from the transparent black next to the red.
        let edge = rgba.get_pixel(49, 10).0;
        assert!(edge[0] > 150, "{edge:?}");
    }
}

#[test]
fn grayscale_jpeg_stays_grayscale() {
    let gray = GrayImage::from_fn(1600, 1200, |x, y| {
        image::Luma([u8::try_from((x + y) % 256).unwrap()])
    });
    let mut source = Vec::new();
    DynamicImage::ImageLuma8(gray)
        .write_with_encoder(JpegEncoder::new_with_quality(&mut source, 90))
        .unwrap();
    // One reduced (1/8) and one full-size decode.
    for (preset, size) in [
        (Preset::Size(200), (200, 150)),
        (Preset::Large, (1600, 1200)),
    ] {
        let out = run(&source, preset);
        assert_eq!((out.width, out.height), size);
        let decoded = decode(&out.bytes);
        assert!(!decoded.color().has_color(), "{}", preset.key());
    }
}

#[test]
fn jpeg_quality_is_configurable() {
    let source = jpeg(&gradient(800, 600), 95);
    let at = |jpeg_quality| {
        let options = TransformOptions {
            jpeg_quality,
            ..TransformOptions::default()
        };
        transform(&source, Preset::Small, None, &options)
            .unwrap()
            .bytes
            .len()
    };
    assert!(at(30) < at(82));
    assert!(at(82) < at(100));
    assert_eq!(TransformOptions::default().jpeg_quality, 82);
    assert_eq!(TransformOptions::default().max_pixels, 50_000_000);
}

#[test]
fn unsupported_formats_are_refused_with_their_type() {
    for (bytes, mime) in [
        (&b"just some text"[..], "application/octet-stream"),
        (&b""[..], "application/octet-stream"),
        (&b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"[..], "application/pdf"),
        (
            &b"BM\x3e\0\0\0\0\0\0\0\x3e\0\0\0\x28\0\0\0\x01\0\0\0\x01\0\0\0\x01\0\x01\0"[..],
            "image/bmp",
        ),
    ] {
        let err = transform(bytes, Preset::Small, None, &TransformOptions::default()).unwrap_err();
        assert_eq!(
            err,
            ImagingError::Unsupported {
                mime: mime.to_owned()
            }
        );
    }
}

#[test]
fn corrupt_images_are_corrupt_errors() {
    let valid_jpeg = jpeg(&gradient(256, 192), 90);
    let valid_png = png(DynamicImage::ImageRgb8(gradient(256, 192)));
    let mut png_garbage = valid_png[..33].to_vec(); // signature + IHDR
    png_garbage.extend_from_slice(b"\0\0\0\x10IDATgarbagegarbage!!!!");
    let mut jpeg_garbage_scan = valid_jpeg.clone();
    // Replace everything after the start of scan header with junk that is not entropy data.
    let sos = jpeg_garbage_scan
        .windows(2)
        .position(|w| w == [0xff, 0xda])
        .unwrap();
    jpeg_garbage_scan.truncate(sos + 2);
    jpeg_garbage_scan.extend_from_slice(&[0x00, 0x02, 0xff, 0xd9]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("jpeg magic only", vec![0xff, 0xd8, 0xff]),
        ("jpeg header cut", valid_jpeg[..20].to_vec()),
        ("jpeg broken scan header", jpeg_garbage_scan),
        ("png signature only", valid_png[..8].to_vec()),
        ("png garbage data", png_garbage),
        ("png cut", valid_png[..valid_png.len() / 2].to_vec()),
        ("gif header only", b"GIF89a\x10\0\x10\0\0\0\0".to_vec()),
    ];
    for (what, bytes) in cases {
        for preset in [Preset::Size(16), Preset::Large] {
            match transform(&bytes, preset, None, &TransformOptions::default()) {
                Err(ImagingError::Corrupt(message)) => assert!(!message.is_empty()),
                other => panic!("{what} {}: {other:?}", preset.key()),
            }
        }
    }
}

fn png_header_only(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]); // RGB8, CRC not checked by the sniffer
    bytes
}

fn jpeg_header_only(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xc0, 0, 17, 8];
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    bytes
}

#[test]
fn declared_pixel_bombs_are_refused_before_decoding() {
    let too_many = |width, height| ImagingError::TooManyPixels {
        width,
        height,
        max: 50_000_000,
    };
    let gif = {
        let mut bytes = b"GIF89a".to_vec();
        bytes.extend_from_slice(&30000_u16.to_le_bytes());
        bytes.extend_from_slice(&30000_u16.to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 0x3b]);
        bytes
    };
    let webp = {
        // VP8X header with a 30000x30000 canvas (stored minus one, 24-bit little endian).
        let mut bytes = b"RIFF\x1a\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        bytes.extend_from_slice(&29999_u32.to_le_bytes()[..3]);
        bytes.extend_from_slice(&29999_u32.to_le_bytes()[..3]);
        bytes
    };
    for (what, bytes) in [
        ("png", png_header_only(30000, 30000)),
        ("jpeg", jpeg_header_only(30000, 30000)),
        ("gif", gif),
        ("webp", webp),
    ] {
        let err = transform(
            &bytes,
            Preset::Thumbnail,
            None,
            &TransformOptions::default(),
        )
        .unwrap_err();
        assert_eq!(err, too_many(30000, 30000), "{what}");
    }
    // The limit is configurable, and checked on real images too.
    let options = TransformOptions {
        max_pixels: 1000,
        ..TransformOptions::default()
    };
    let err = transform(&jpeg(&gradient(50, 30), 90), Preset::Small, None, &options).unwrap_err();
    assert_eq!(
        err,
        ImagingError::TooManyPixels {
            width: 50,
            height: 30,
            max: 1000
        }
    );
    let exactly = TransformOptions {
        max_pixels: 1500,
        ..TransformOptions::default()
    };
    assert!(transform(&jpeg(&gradient(50, 30), 90), Preset::Small, None, &exactly).is_ok());
}

/// Random byte mutations of valid JPEGs never panic, on every decode path: a 4:4:4 file with EXIF
/// from `image` and a 4:2:0 file with restart markers from `jpeg-encoder`.
#[test]
fn mutated_jpegs_never_panic() {
    let with_exif = with_orientation(&jpeg(&gradient(256, 192), 85), 6);
    let with_restarts = {
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 80);
        encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
        encoder.set_restart_interval(4);
        encoder
            .encode(
                gradient(256, 192).as_raw(),
                256,
                192,
                jpeg_encoder::ColorType::Rgb,
            )
            .unwrap();
        out
    };
    let mut state: u64 = 0x5eed_1234_abcd_0042;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut outcomes = [0_usize; 2];
    for i in 0..200 {
        let mut bytes = if i % 2 == 0 {
            with_exif.clone()
        } else {
            with_restarts.clone()
        };
        let mutations = 1 + next() % 8;
        for _ in 0..mutations {
            let at = usize::try_from(next() % u64::try_from(bytes.len()).unwrap()).unwrap();
            bytes[at] = u8::try_from(next() & 0xff).unwrap();
        }
        if next() % 5 == 0 {
            let keep = usize::try_from(next() % u64::try_from(bytes.len()).unwrap()).unwrap();
            bytes.truncate(keep);
        }
        // Size(20) takes the DC-only (1/8) path, Size(100) jpeg-decoder's 1/2 decode, Size(200)
        // and thumbnail the full-size one.
        let preset = [
            Preset::Size(20),
            Preset::Size(100),
            Preset::Size(200),
            Preset::Thumbnail,
        ][(i / 2) % 4];
        let result = transform(&bytes, preset, None, &TransformOptions::default());
        outcomes[usize::from(result.is_ok())] += 1;
    }
    // Most single-byte hits land in entropy data and still decode; both outcomes occur.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

#[test]
fn the_fixture_photo_transforms() {
    let bytes = include_bytes!("../../../../fixtures/images/draft.jpg");
    let out = run(bytes, Preset::Thumbnail);
    assert_eq!((out.width, out.height), (200, 200));
    let out = run(bytes, Preset::Size(400));
    assert_eq!((out.width, out.height), (400, 300));
    let reader = ImageReader::new(Cursor::new(&out.bytes))
        .with_guessed_format()
        .unwrap();
    assert_eq!(reader.format(), Some(image::ImageFormat::Jpeg));
}
