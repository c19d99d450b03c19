//! Orientation and encoding of the output.

use image::codecs::gif::GifEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::metadata::Orientation;
use image::{DynamicImage, ExtendedColorType, ImageBuffer, ImageEncoder};

use super::decode::from_dynamic;
use super::{Format, Layout, Pixels};
use crate::error::ImagingError;

/// GIF colour quantisation effort, 1 (best, slowest) to 30 (fastest): `image`'s recommended
/// balance.
const GIF_SPEED: i32 = 10;

fn encode_error(error: impl std::fmt::Display) -> ImagingError {
    ImagingError::Encode(error.to_string())
}

fn to_dynamic(pixels: Pixels) -> Result<DynamicImage, ImagingError> {
    let Pixels {
        width,
        height,
        layout,
        data,
    } = pixels;
    let image = match layout {
        Layout::L8 => ImageBuffer::from_raw(width, height, data).map(DynamicImage::ImageLuma8),
        Layout::La8 => ImageBuffer::from_raw(width, height, data).map(DynamicImage::ImageLumaA8),
        Layout::Rgb8 => ImageBuffer::from_raw(width, height, data).map(DynamicImage::ImageRgb8),
        Layout::Rgba8 => ImageBuffer::from_raw(width, height, data).map(DynamicImage::ImageRgba8),
    };
    image.ok_or_else(|| encode_error("pixel buffer does not match its size"))
}

/// Turns the (small) output upright.
pub(crate) fn orient(pixels: Pixels, orientation: Orientation) -> Result<Pixels, ImagingError> {
    if orientation == Orientation::NoTransforms {
        return Ok(pixels);
    }
    let mut image = to_dynamic(pixels)?;
    image.apply_orientation(orientation);
    from_dynamic(image)
}

fn color_type(layout: Layout) -> ExtendedColorType {
    match layout {
        Layout::L8 => ExtendedColorType::L8,
        Layout::La8 => ExtendedColorType::La8,
        Layout::Rgb8 => ExtendedColorType::Rgb8,
        Layout::Rgba8 => ExtendedColorType::Rgba8,
    }
}

/// Encodes `pixels` as `format`; `jpeg_quality` is clamped to 1..=100.
pub(crate) fn encode(
    pixels: Pixels,
    format: Format,
    jpeg_quality: u8,
) -> Result<Vec<u8>, ImagingError> {
    let mut out = Vec::new();
    match format {
        Format::Jpeg => {
            let too_large = || encode_error("JPEG dimensions are limited to 65535");
            let width = u16::try_from(pixels.width).map_err(|_| too_large())?;
            let height = u16::try_from(pixels.height).map_err(|_| too_large())?;
            let (data, color) = match pixels.layout {
                Layout::L8 => (pixels.data, jpeg_encoder::ColorType::Luma),
                // JPEG has no alpha: drop it.
                Layout::La8 => (
                    pixels
                        .data
                        .chunks_exact(2)
                        .filter_map(|p| p.first().copied())
                        .collect(),
                    jpeg_encoder::ColorType::Luma,
                ),
                Layout::Rgb8 => (pixels.data, jpeg_encoder::ColorType::Rgb),
                Layout::Rgba8 => (pixels.data, jpeg_encoder::ColorType::Rgba),
            };
            jpeg_encoder::Encoder::new(&mut out, jpeg_quality.clamp(1, 100))
                .encode(&data, width, height, color)
                .map_err(encode_error)?;
        }
        Format::Png => {
            PngEncoder::new(&mut out)
                .write_image(
                    &pixels.data,
                    pixels.width,
                    pixels.height,
                    color_type(pixels.layout),
                )
                .map_err(encode_error)?;
        }
        Format::WebP => {
            WebPEncoder::new_lossless(&mut out)
                .write_image(
                    &pixels.data,
                    pixels.width,
                    pixels.height,
                    color_type(pixels.layout),
                )
                .map_err(encode_error)?;
        }
        Format::Gif => {
            let (width, height) = (pixels.width, pixels.height);
            let (data, color) = match pixels.layout {
                Layout::Rgb8 => (pixels.data, ExtendedColorType::Rgb8),
                Layout::Rgba8 => (pixels.data, ExtendedColorType::Rgba8),
                Layout::L8 | Layout::La8 => (
                    to_dynamic(pixels)?.into_rgba8().into_raw(),
                    ExtendedColorType::Rgba8,
                ),
            };
            // The trailer is written when the encoder is dropped, at the end of this block.
            let mut encoder = GifEncoder::new_with_speed(&mut out, GIF_SPEED);
            encoder
                .encode(&data, width, height, color)
                .map_err(encode_error)?;
        }
    }
    Ok(out)
}
