//! Rendering a [`Preset`] of an image: bytes in, bytes out.
//!
//! The pipeline, in the source's stored (un-oriented) frame so that rotation only ever touches the
//! small output:
//!
//! 1. sniff the format (JPEG, PNG, WebP, GIF) and read the size from the header; refuse more than
//!    [`TransformOptions::max_pixels`] before any pixel is decoded, and what costs more than its
//!    pixels (the `structure` and `vp8l` walks, shared with [`crate::estimate`]): a JPEG of more
//!    than [`crate::MAX_JPEG_SCANS`] scans on every decode path, a GIF screen far larger than its
//!    first frame, a lossless WebP with more Huffman groups than [`crate::MAX_WEBP_HUFFMAN_GROUPS`]
//!    or than its entropy image has pixels; a PNG's `iCCP` chunks are dropped, never inflated;
//! 2. read the EXIF orientation and plan the crop and output size (the focal point is given in the
//!    displayed frame and mapped into the stored one);
//! 3. decode: a JPEG whose planned output is at most an eighth of the source decodes only its DC
//!    coefficients, which are the image at 1/8 size (`dc_jpeg`, for baseline files; others go to
//!    `jpeg-decoder`); at most a half or a quarter, it decodes straight to that size in the DCT
//!    domain (`jpeg-decoder`); other JPEGs decode at full size with `zune-jpeg` (through `image`);
//!    PNG, WebP and GIF (first frame) through `image`;
//! 4. crop and resize in one pass with `fast_image_resize` (Lanczos3, SIMD, alpha-aware); a crop
//!    side longer than [`MAX_FILTER_SIDE`] is first reduced by a nearest-neighbour pass to three
//!    times the output, so the filter's coefficient tables stay bounded by the output;
//! 5. apply the orientation and encode in the source format: JPEG with `jpeg-encoder` at
//!    [`TransformOptions::jpeg_quality`], PNG, lossless WebP (`image` has no lossy WebP encoder),
//!    single-frame GIF. Metadata (EXIF, including GPS positions) is not carried over.

mod dc_jpeg;
mod decode;
mod encode;
mod resize;

pub(crate) use decode::dct_reduction;
pub use resize::MAX_FILTER_SIDE;
pub(crate) use resize::step_size;

#[cfg(test)]
mod tests;

use image::metadata::Orientation;

use crate::error::ImagingError;
use crate::preset::{FocalPoint, Preset, plan};

/// Settings of [`transform`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransformOptions {
    /// JPEG output quality, 1 to 100 (values outside are clamped). Default 82.
    pub jpeg_quality: u8,
    /// Largest `width * height` a source may declare; larger ones fail with
    /// [`ImagingError::TooManyPixels`] before decoding. Default 50,000,000.
    pub max_pixels: u64,
}

impl Default for TransformOptions {
    fn default() -> Self {
        TransformOptions {
            jpeg_quality: 82,
            max_pixels: 50_000_000,
        }
    }
}

/// A rendered transform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformed {
    /// The encoded image.
    pub bytes: Vec<u8>,
    /// Its MIME type: always the source's (`image/jpeg`, `image/png`, `image/webp`, `image/gif`).
    pub mime_type: &'static str,
    /// Its size in pixels, as displayed (EXIF orientation applied).
    pub width: u32,
    pub height: u32,
}

/// The source formats a transform accepts; the output has the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Jpeg,
    Png,
    WebP,
    Gif,
}

impl Format {
    pub(crate) fn from_mime(mime: &str) -> Option<Format> {
        match mime {
            "image/jpeg" => Some(Format::Jpeg),
            "image/png" => Some(Format::Png),
            "image/webp" => Some(Format::WebP),
            "image/gif" => Some(Format::Gif),
            _ => None,
        }
    }

    fn mime_type(self) -> &'static str {
        match self {
            Format::Jpeg => "image/jpeg",
            Format::Png => "image/png",
            Format::WebP => "image/webp",
            Format::Gif => "image/gif",
        }
    }
}

/// How the bytes of a [`Pixels`] buffer are laid out: 8 bits per channel, interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    L8,
    La8,
    Rgb8,
    Rgba8,
}

impl Layout {
    fn channels(self) -> usize {
        match self {
            Layout::L8 => 1,
            Layout::La8 => 2,
            Layout::Rgb8 => 3,
            Layout::Rgba8 => 4,
        }
    }
}

/// A decoded image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pixels {
    pub width: u32,
    pub height: u32,
    pub layout: Layout,
    pub data: Vec<u8>,
}

impl Pixels {
    /// Checks that `data` holds exactly `width * height` pixels of `layout`.
    fn new(width: u32, height: u32, layout: Layout, data: Vec<u8>) -> Result<Pixels, ImagingError> {
        let expected = usize::try_from(u64::from(width) * u64::from(height))
            .ok()
            .and_then(|n| n.checked_mul(layout.channels()));
        if expected != Some(data.len()) || width == 0 || height == 0 {
            return Err(ImagingError::Corrupt(format!(
                "decoder returned {} bytes for {width}x{height} {layout:?}",
                data.len()
            )));
        }
        Ok(Pixels {
            width,
            height,
            layout,
            data,
        })
    }
}

/// Maps a focal point given on the displayed image into the stored image's frame.
pub(crate) fn focal_in_stored_frame(focal: FocalPoint, orientation: Orientation) -> FocalPoint {
    let FocalPoint { x, y } = focal;
    let (u, v) = match orientation {
        Orientation::NoTransforms => (x, y),
        Orientation::FlipHorizontal => (1.0 - x, y),
        Orientation::Rotate180 => (1.0 - x, 1.0 - y),
        Orientation::FlipVertical => (x, 1.0 - y),
        Orientation::Rotate90FlipH => (y, x),
        Orientation::Rotate90 => (y, 1.0 - x),
        Orientation::Rotate270FlipH => (1.0 - y, 1.0 - x),
        Orientation::Rotate270 => (1.0 - y, x),
    };
    FocalPoint { x: u, y: v }
}

/// Renders `preset` of `source` (JPEG, PNG, WebP, or the first frame of a GIF) in the source's
/// format.
///
/// The size declared in the header is checked against `options.max_pixels` before decoding. JPEG
/// EXIF orientation is applied (the output is upright and carries no EXIF). The fit presets keep
/// the aspect ratio (rounded to the nearest pixel, at least 1); `thumbnail` cover-crops to 200x200
/// around `focal` (default: the centre), or to a square of the smaller side when that is under
/// 200. Nothing is ever upscaled.
///
/// # Errors
/// [`ImagingError::Unsupported`] for other formats, [`ImagingError::TooManyPixels`] for images over
/// the limit, [`ImagingError::TooComplex`] for the structural limits above (refused before
/// decoding, as [`crate::estimate`] refuses them), [`ImagingError::Corrupt`] when decoding fails,
/// [`ImagingError::Encode`] when encoding does.
pub fn transform(
    source: &[u8],
    preset: Preset,
    focal: Option<FocalPoint>,
    options: &TransformOptions,
) -> Result<Transformed, ImagingError> {
    let (format, width, height) = header(source, options.max_pixels)?;

    let focal = focal.unwrap_or_default().clamped();
    let decoded = decode::decode(
        source,
        format,
        (width, height),
        options.max_pixels,
        |w, h, orientation| plan(preset, w, h, focal_in_stored_frame(focal, orientation)),
    )?;

    let resized = resize::crop_and_resize(decoded.pixels, decoded.full_size, decoded.plan)?;
    let oriented = encode::orient(resized, decoded.orientation)?;
    let (out_width, out_height) = (oriented.width, oriented.height);
    let bytes = encode::encode(oriented, format, options.jpeg_quality)?;
    Ok(Transformed {
        bytes,
        mime_type: format.mime_type(),
        width: out_width,
        height: out_height,
    })
}

/// The source's format and declared size, refused as a transform refuses them before any work:
/// an unsupported type, no size in the header, or more than `max_pixels`. [`transform`] and
/// [`crate::estimate`] both start here, so they refuse the same inputs.
pub(crate) fn header(source: &[u8], max_pixels: u64) -> Result<(Format, u32, u32), ImagingError> {
    let probe = crate::probe::probe(source);
    let Some(format) = Format::from_mime(&probe.mime_type) else {
        return Err(ImagingError::Unsupported {
            mime: probe.mime_type,
        });
    };
    let (width, height) = match (probe.width, probe.height) {
        (Some(w), Some(h)) if w > 0 && h > 0 => (w, h),
        _ => {
            return Err(ImagingError::Corrupt(
                "the image header declares no size".to_owned(),
            ));
        }
    };
    check_pixels(width, height, max_pixels)?;
    Ok((format, width, height))
}

/// Refuses images of more than `max` pixels.
pub(crate) fn check_pixels(width: u32, height: u32, max: u64) -> Result<(), ImagingError> {
    if u64::from(width) * u64::from(height) > max {
        return Err(ImagingError::TooManyPixels { width, height, max });
    }
    Ok(())
}
