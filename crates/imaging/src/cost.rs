//! What a transform will cost, known before it runs: the transform budget of the HTTP layer admits
//! a transform by this estimate, so it must never be lower than what [`crate::transform`] really
//! allocates for the same input (the tests compare it with measured peaks).

use crate::error::ImagingError;
use crate::preset::{FocalPoint, Plan, Preset, plan};
use crate::structure;
use crate::transform::{Format, TransformOptions, dct_reduction, header, step_size};

/// Memory and work of one transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Peak bytes held at once by decode, resize and encode together (the source bytes excluded:
    /// the caller holds those already).
    pub memory: u64,
    /// Work in abstract units (about one per source pixel decoded and per output pixel
    /// produced), for deadlines and fairness rather than admission.
    pub work: u64,
}

/// Fixed overhead of any transform: decoder and encoder state, tables, small scratch buffers.
const BASE: u64 = 4 * 1024 * 1024;

/// Bytes a resize filter tap costs in `fast_image_resize`'s coefficient tables (an `f64` while the
/// tables are built, then a fixed-point copy, and the bounds of each output pixel), rounded up.
const TAP_BYTES: u64 = 24;

/// Estimates the cost of rendering `preset` of `source`, from its header and structure alone.
///
/// `memory` is never lower than the peak [`crate::transform`] allocates for the same input (an
/// integration test measures both with a counting allocator, for every format and preset and for
/// the hostile files of issue 27). It follows the path the transform takes: for a JPEG the decode
/// scale (1/8 from the DC coefficients, 1/4 and 1/2 in the DCT domain, or full size) and the
/// decoder's own buffers (a progressive file keeps every coefficient until its last scan); for a
/// PNG the decoded sample depth and the copy without `iCCP`; for a lossless WebP an upper bound of
/// its Huffman tables; for a GIF the canvas and the first frame; then the resizer's buffers and
/// coefficient tables (stepped for over-long sides), the orientation and the encoder. The phases
/// do not overlap in time, so the peak is that of the most expensive phase plus what it holds.
///
/// `work` counts about one unit per pixel decoded per pass: a progressive JPEG's full-size blocks
/// once per scan (whatever the decode scale, every scan is entropy-decoded), the decoded source
/// otherwise (a GIF's first frame only, the others are never read), plus the output pixels.
///
/// Structural refusals are reported here exactly as [`crate::transform`] reports them, before any
/// work: more than [`crate::MAX_JPEG_SCANS`] scans, a GIF screen far larger than its first frame,
/// a lossless WebP bitstream far larger than its pixels.
///
/// # Errors
/// As [`crate::transform`] would before decoding: [`ImagingError::Unsupported`],
/// [`ImagingError::Corrupt`] for no size in the header, [`ImagingError::TooManyPixels`], and
/// [`ImagingError::TooComplex`] for the structural limits above.
pub fn estimate(
    source: &[u8],
    preset: Preset,
    focal: Option<FocalPoint>,
    options: &TransformOptions,
) -> Result<Cost, ImagingError> {
    let (format, width, height) = header(source, options.max_pixels)?;
    let plan = plan(preset, width, height, focal.unwrap_or_default().clamped());
    let decode = match format {
        Format::Jpeg => jpeg(source, width, height, &plan)?,
        Format::Png => png(source, width, height),
        Format::WebP => webp(source, width, height)?,
        Format::Gif => gif(source, width, height)?,
    };
    let out_pixels = u64::from(plan.out_width) * u64::from(plan.out_height);
    let channels = decode.channels;
    let resize = resize(&decode, (width, height), &plan);
    let resized = out_pixels * channels;
    // Rotating the output makes one copy; the encoder's buffers come on top of the resized image.
    let finish = resized * 2 + encoder(format, out_pixels, channels);
    let memory = BASE + decode.peak.max(decode.held + resize).max(finish);
    Ok(Cost {
        memory,
        work: decode.work + out_pixels,
    })
}

/// What decoding costs, and what it leaves for the resize.
#[derive(Debug, Clone, Copy)]
struct Decode {
    /// Peak bytes while decoding (the decoded image included).
    peak: u64,
    /// The decoded image handed to the resize: its size and bytes per pixel.
    size: (u32, u32),
    channels: u64,
    /// Bytes held with it (the decoded image).
    held: u64,
    work: u64,
}

fn pixels((width, height): (u32, u32)) -> u64 {
    u64::from(width) * u64::from(height)
}

/// `len` rounded up to a whole number of 16-pixel MCUs (the largest a decoder pads to).
fn padded(len: u32) -> u64 {
    u64::from(len).div_ceil(16) * 16
}

fn jpeg(source: &[u8], width: u32, height: u32, plan: &Plan) -> Result<Decode, ImagingError> {
    let scans = structure::jpeg_scans(source)?;
    let components = u64::from(scans.components.clamp(1, 4));
    let full = pixels((width, height));
    let padded_full = padded(width) * padded(height);
    // The decoders' output: grey stays grey, CMYK is four bytes before it becomes RGB.
    let out_channels = match components {
        1 => 1,
        4 => 4,
        _ => 3,
    };
    let channels = if components == 1 { 1 } else { 3 };
    // Every coefficient of the frame: 64 of 2 bytes per block.
    let all_coefficients = scans.blocks.max(padded_full / 64) * 128;
    // A progressive decoder keeps every coefficient of the frame until the last scan.
    let coefficients = if scans.progressive {
        all_coefficients
    } else {
        0
    };
    let reduction = if scans.lossless {
        1
    } else {
        dct_reduction(plan)
    };
    let size = (
        width.div_ceil(reduction.max(1)),
        height.div_ceil(reduction.max(1)),
    );
    let decoded = pixels(size);
    let padded_decoded = padded_full / u64::from(reduction * reduction).max(1);
    let peak = if reduction == 1 && !scans.lossless {
        // zune-jpeg through `image`: the output, the coefficients, rows of MCUs being upsampled.
        full * out_channels + coefficients + padded(width) * components * 256
    } else {
        // jpeg-decoder (and `dc_jpeg`, which needs less): component planes at the decoded scale,
        // the interleaved output and a CMYK frame's RGB conversion; a lossless frame's 16-bit
        // samples and their 8-bit copy. Its progressive path copies the coefficients once more.
        // Its sequential path hands each row of coefficients to a thread per component over an
        // unbounded channel: when those threads get no CPU (a loaded machine) the rows pile up,
        // at worst the whole frame's (seen: a 3000x2000 file to 640 px peaked at 9.0 MB on a
        // busy CI machine against 7.6 MB without this term).
        let sixteen = if scans.lossless { 2 } else { 1 };
        let cmyk = if components == 4 { decoded * 3 } else { 0 };
        let in_flight = if scans.progressive {
            coefficients * 2
        } else {
            all_coefficients
        };
        padded_decoded * components * sixteen
            + decoded * out_channels * (sixteen + 1)
            + cmyk
            + in_flight
    };
    let passes = if scans.progressive {
        u64::from(scans.scans.max(1))
    } else {
        1
    };
    Ok(Decode {
        peak,
        size,
        channels,
        held: decoded * channels,
        work: padded_full * passes,
    })
}

fn png(source: &[u8], width: u32, height: u32) -> Decode {
    let full = pixels((width, height));
    // IHDR: bit depth at 24, colour type at 25; a palette may become RGBA.
    let depth = u64::from(source.get(24).copied().unwrap_or(16));
    let channels = match source.get(25) {
        Some(0) => 1,
        Some(4) => 2,
        Some(2) => 3,
        _ => 4,
    };
    let sample = if depth > 8 { 2 } else { 1 };
    let decoded = full * channels * sample;
    // 16-bit samples are converted to 8 bits in a second buffer.
    let converted = if sample == 2 { full * channels } else { 0 };
    // png's current and previous rows, and the copy without `iCCP`.
    let rows = 2 * (u64::from(width) * channels * sample + 1);
    let stripped = if structure::png_has_inflated_chunks(source) {
        u64::try_from(source.len()).unwrap_or(u64::MAX)
    } else {
        0
    };
    Decode {
        peak: decoded + converted + rows + stripped,
        size: (width, height),
        channels,
        held: full * channels,
        work: full,
    }
}

fn webp(source: &[u8], width: u32, height: u32) -> Result<Decode, ImagingError> {
    let full = pixels((width, height));
    let tables = structure::webp_huffman_tables(source, width, height)?;
    // The output (RGBA at most), the decoder's ARGB or YUV planes and alpha, an animation canvas.
    Ok(Decode {
        peak: full * 4 * 3 + tables,
        size: (width, height),
        channels: 4,
        held: full * 4,
        work: full,
    })
}

fn gif(source: &[u8], width: u32, height: u32) -> Result<Decode, ImagingError> {
    let full = pixels((width, height));
    let frame = structure::gif_layout(source)?
        .and_then(|layout| layout.first_frame)
        .map_or(full, pixels);
    // The RGBA canvas, the first frame in RGBA and as palette indices.
    Ok(Decode {
        peak: full * 4 + frame * 5,
        size: (width, height),
        channels: 4,
        held: full * 4,
        work: frame,
    })
}

/// Coefficient tables of one axis resized from `from` to `to` pixels with Lanczos3 (3 lobes).
fn taps(from: f64, to: u32) -> u64 {
    let scale = (from / f64::from(to.max(1))).max(1.0);
    // Finite and small: at most about 6 * 65,535 taps a pixel.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let window = (6.0 * scale).ceil() as u64 + 2;
    u64::from(to) * window * TAP_BYTES
}

/// Bytes the resize allocates beyond the decoded image it reads.
fn resize(decode: &Decode, full_size: (u32, u32), plan: &Plan) -> u64 {
    let channels = decode.channels;
    let out = (plan.out_width, plan.out_height);
    let crop = plan.crop;
    let reduced = decode.size != full_size;
    if !reduced
        && (crop.left, crop.top, crop.width, crop.height) == (0, 0, full_size.0, full_size.1)
        && out == full_size
    {
        return 0;
    }
    let dst = pixels(out) * channels;
    // The crop in the decoded image's pixels.
    let scale_x = f64::from(decode.size.0) / f64::from(full_size.0.max(1));
    let scale_y = f64::from(decode.size.1) / f64::from(full_size.1.max(1));
    let (mut crop_w, mut crop_h) = (
        f64::from(crop.width) * scale_x,
        f64::from(crop.height) * scale_y,
    );
    let mut step = 0;
    if let Some(size) = step_size(crop_w, crop_h, out) {
        // Nearest-neighbour tables are one offset per output pixel.
        step = pixels(size) * channels + (u64::from(size.0) + u64::from(size.1)) * 8;
        (crop_w, crop_h) = (f64::from(size.0), f64::from(size.1));
    }
    // Within f64's exact range: sides under 2^32.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (crop_px_w, crop_px_h) = (crop_w.ceil() as u64 + 1, crop_h.ceil() as u64 + 1);
    // Alpha is premultiplied in a copy of the image read (the whole decoded one, or the step);
    // one pass goes to an intermediate image.
    let premultiplied = if channels.is_multiple_of(2) {
        if step > 0 {
            crop_px_w * crop_px_h * channels
        } else {
            pixels(decode.size) * channels
        }
    } else {
        0
    };
    let intermediate = (u64::from(out.0) * crop_px_h).max(crop_px_w * u64::from(out.1)) * channels;
    let tables = taps(crop_w, out.0) + taps(crop_h, out.1);
    step + premultiplied + intermediate + tables + dst
}

/// What the encoder allocates for `pixels` output pixels of `channels` bytes.
fn encoder(format: Format, pixels: u64, channels: u64) -> u64 {
    match format {
        // Rows of blocks, the output (up to about 3 bytes a pixel at quality 100, in a growing
        // vector).
        Format::Jpeg => pixels * 4,
        // Filtered rows and the compressed output (incompressible at worst).
        Format::Png => pixels * channels * 2,
        // ARGB words, the backward references and histograms, the output.
        Format::WebP => pixels * 8,
        // RGBA conversion, the palette indices, the LZW output.
        Format::Gif => pixels * 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = image::RgbImage::new(width, height);
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn the_estimate_covers_the_decoded_source_and_refuses_what_transform_refuses() {
        let source = png(400, 300);
        let cost = estimate(&source, Preset::Small, None, &TransformOptions::default()).unwrap();
        assert!(cost.memory >= 4 * 400 * 300, "{cost:?}");
        assert_eq!(cost.work, 400 * 300 + 400 * 300);
        assert!(cost.memory < 16 * 1024 * 1024, "{cost:?}");
        let tight = TransformOptions {
            max_pixels: 1000,
            ..TransformOptions::default()
        };
        assert!(matches!(
            estimate(&source, Preset::Small, None, &tight),
            Err(ImagingError::TooManyPixels { .. })
        ));
        assert!(matches!(
            estimate(
                b"plain text",
                Preset::Small,
                None,
                &TransformOptions::default()
            ),
            Err(ImagingError::Unsupported { .. })
        ));
    }
}
