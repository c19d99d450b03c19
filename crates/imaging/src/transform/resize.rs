//! Crop and resize in one pass with `fast_image_resize`.

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

use super::{Layout, Pixels};
use crate::error::ImagingError;
use crate::preset::Plan;

fn pixel_type(layout: Layout) -> PixelType {
    match layout {
        Layout::L8 => PixelType::U8,
        Layout::La8 => PixelType::U8x2,
        Layout::Rgb8 => PixelType::U8x3,
        Layout::Rgba8 => PixelType::U8x4,
    }
}

fn failed(error: impl std::fmt::Display) -> ImagingError {
    ImagingError::Encode(format!("resize failed: {error}"))
}

/// Applies `plan` (expressed on an image of `full_size`) to `pixels`, which may be a reduced
/// decode of that image: the crop box is scaled to the decoded size, then resized to the planned
/// output with Lanczos3 (alpha premultiplied while filtering). An exact-size crop is copied.
pub(crate) fn crop_and_resize(
    pixels: Pixels,
    full_size: (u32, u32),
    plan: Plan,
) -> Result<Pixels, ImagingError> {
    let out = (plan.out_width, plan.out_height);
    let crop = plan.crop;
    if (pixels.width, pixels.height) == full_size {
        let whole =
            (crop.left, crop.top, crop.width, crop.height) == (0, 0, full_size.0, full_size.1);
        if whole && out == full_size {
            return Ok(pixels);
        }
        let exact = (crop.width, crop.height) == out;
        let crop_box = (
            f64::from(crop.left),
            f64::from(crop.top),
            f64::from(crop.width),
            f64::from(crop.height),
        );
        return resample(&pixels, crop_box, out, exact);
    }
    // A reduced decode: the crop box in its pixels (a fractional box is fine for the filter).
    let scale_x = f64::from(pixels.width) / f64::from(full_size.0.max(1));
    let scale_y = f64::from(pixels.height) / f64::from(full_size.1.max(1));
    let left = f64::from(crop.left) * scale_x;
    let top = f64::from(crop.top) * scale_y;
    let width = (f64::from(crop.width) * scale_x).min(f64::from(pixels.width) - left);
    let height = (f64::from(crop.height) * scale_y).min(f64::from(pixels.height) - top);
    resample(&pixels, (left, top, width, height), out, false)
}

/// Longest side of a crop the Lanczos3 filter reads in one pass.
///
/// `fast_image_resize`'s coefficient tables grow with the source side, not the output: about 50
/// bytes per source pixel along each axis (a 50,000,000×1 PNG cost 2.4 GiB). A longer side is
/// first reduced by a nearest-neighbour pass (whose tables are the output's size) to
/// [`STEP_FACTOR`] times the output, then filtered; the tables then cost at most about 3 MiB per
/// axis. No photograph has such a side (JPEG stops at 65,535), so ordinary outputs are unchanged.
pub const MAX_FILTER_SIDE: u32 = 65_535;
/// How much larger than the output the nearest-neighbour pass leaves an over-long side, so the
/// Lanczos3 pass still has several samples per output pixel to filter.
pub(crate) const STEP_FACTOR: u32 = 3;

/// The intermediate size of the stepped resize of a `width x height` crop to `out`, or `None`
/// when the crop is filtered in one pass (see [`MAX_FILTER_SIDE`]).
pub(crate) fn step_size(
    width: f64,
    height: f64,
    (out_width, out_height): (u32, u32),
) -> Option<(u32, u32)> {
    let limit = f64::from(MAX_FILTER_SIDE);
    if width <= limit && height <= limit {
        return None;
    }
    let side = |len: f64, out: u32| -> u32 {
        // `len` is a crop side of a decoded image, positive and under 2^32; the cast saturates.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = len.ceil().max(1.0) as u32;
        if len > limit {
            whole.min(out.saturating_mul(STEP_FACTOR))
        } else {
            whole
        }
    };
    Some((side(width, out_width), side(height, out_height)))
}

fn resample(
    pixels: &Pixels,
    (left, top, width, height): (f64, f64, f64, f64),
    (out_width, out_height): (u32, u32),
    exact_copy: bool,
) -> Result<Pixels, ImagingError> {
    let pixel_type = pixel_type(pixels.layout);
    let src =
        ImageRef::new(pixels.width, pixels.height, &pixels.data, pixel_type).map_err(failed)?;
    let mut dst = Image::new(out_width, out_height, pixel_type);
    let mut resizer = Resizer::new();
    if !exact_copy
        && let Some((step_width, step_height)) = step_size(width, height, (out_width, out_height))
    {
        let mut step = Image::new(step_width, step_height, pixel_type);
        let nearest = ResizeOptions::new()
            .resize_alg(ResizeAlg::Nearest)
            .crop(left, top, width, height);
        resizer.resize(&src, &mut step, &nearest).map_err(failed)?;
        let filter = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
        resizer.resize(&step, &mut dst, &filter).map_err(failed)?;
        return Pixels::new(out_width, out_height, pixels.layout, dst.into_vec());
    }
    // Nearest on a same-size integer box is a plain copy of the crop.
    let algorithm = if exact_copy {
        ResizeAlg::Nearest
    } else {
        ResizeAlg::Convolution(FilterType::Lanczos3)
    };
    let options = ResizeOptions::new()
        .resize_alg(algorithm)
        .crop(left, top, width, height);
    resizer.resize(&src, &mut dst, &options).map_err(failed)?;
    Pixels::new(out_width, out_height, pixels.layout, dst.into_vec())
}
