//! Decoding, at reduced size in the DCT domain where the plan allows it.

use std::io::Cursor;

use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use jpeg_decoder::{CodingProcess, PixelFormat};

use super::{Format, Layout, Pixels, check_pixels};
use crate::error::ImagingError;
use crate::preset::Plan;
use crate::structure;

/// A decoded source.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// The pixels in the stored frame, possibly reduced (1/2, 1/4, 1/8) from `full_size`.
    pub pixels: Pixels,
    /// The stored frame's full size, in which `plan` is expressed.
    pub full_size: (u32, u32),
    /// How to turn the stored frame upright.
    pub orientation: Orientation,
    /// The crop and output size, in the stored frame.
    pub plan: Plan,
}

fn corrupt(error: impl std::fmt::Display) -> ImagingError {
    ImagingError::Corrupt(error.to_string())
}

/// Decodes `source`; `plan_for(width, height, orientation)` is asked for the plan once the
/// stored size and orientation are known, before any pixel is decoded. `header_size` is the size
/// the header declares (checked against `max_pixels` already).
pub(crate) fn decode(
    source: &[u8],
    format: Format,
    header_size: (u32, u32),
    max_pixels: u64,
    plan_for: impl FnOnce(u32, u32, Orientation) -> Plan,
) -> Result<Decoded, ImagingError> {
    match format {
        Format::Jpeg => decode_jpeg(source, max_pixels, plan_for),
        Format::Png => {
            // An inflated profile would cost far more than the pixels, and is not carried over.
            let stripped = structure::png_without_profiles(source);
            let source = stripped.as_deref().unwrap_or(source);
            decode_with_image(source, ImageFormat::Png, max_pixels, None, plan_for)
        }
        Format::WebP => {
            structure::webp_huffman_tables(source, header_size.0, header_size.1)?;
            decode_with_image(source, ImageFormat::WebP, max_pixels, None, plan_for)
        }
        Format::Gif => {
            structure::gif_layout(source)?;
            decode_with_image(source, ImageFormat::Gif, max_pixels, None, plan_for)
        }
    }
}

/// The largest DCT reduction (8 = 1/8 size, 4, 2, or 1 = full size) that still leaves the planned
/// crop at least as large as the output in both directions, so the resize only ever shrinks.
pub(crate) fn dct_reduction(plan: &Plan) -> u32 {
    [8_u64, 4, 2]
        .into_iter()
        .find(|&d| {
            u64::from(plan.crop.width) >= u64::from(plan.out_width) * d
                && u64::from(plan.crop.height) >= u64::from(plan.out_height) * d
        })
        .and_then(|d| u32::try_from(d).ok())
        .unwrap_or(1)
}

/// `ceil(len / reduction)`, what `jpeg-decoder` produces for one axis.
fn reduced(len: u16, reduction: u32) -> u16 {
    u16::try_from(u32::from(len).div_ceil(reduction.max(1))).unwrap_or(u16::MAX)
}

fn decode_jpeg(
    source: &[u8],
    max_pixels: u64,
    plan_for: impl FnOnce(u32, u32, Orientation) -> Plan,
) -> Result<Decoded, ImagingError> {
    // Every path below decodes each scan in turn: refuse a scan bomb before any of them.
    structure::jpeg_scans(source)?;
    let mut decoder = jpeg_decoder::Decoder::new(source);
    // Never let the decoder allocate more than the pixel limit allows (4 bytes for CMYK).
    decoder.set_max_decoding_buffer_size(
        usize::try_from(max_pixels.saturating_mul(4)).unwrap_or(usize::MAX),
    );
    decoder.read_info().map_err(corrupt)?;
    let info = decoder
        .info()
        .ok_or_else(|| corrupt("JPEG without a frame header"))?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    // The header was checked already; this guards against a decoder reading another frame header.
    check_pixels(width, height, max_pixels)?;
    // APP1 (EXIF) precedes the frame header, so `read_info` has seen it.
    let orientation = decoder
        .exif_data()
        .and_then(Orientation::from_exif_chunk)
        .unwrap_or(Orientation::NoTransforms);
    let plan = plan_for(width, height, orientation);
    let reduction = dct_reduction(&plan);

    if reduction == 1 && info.coding_process != CodingProcess::Lossless {
        // Full-size decode: zune-jpeg is the faster decoder for that.
        return decode_with_image(
            source,
            ImageFormat::Jpeg,
            max_pixels,
            Some(orientation),
            |_, _, _| plan,
        );
    }

    if matches!(reduction, 4 | 8) && info.coding_process == CodingProcess::DctSequential {
        // The DC coefficients are the 1/8 image, with the three lowest AC ones the 1/4 image: the
        // fast path for the common baseline layouts, falling through to jpeg-decoder for anything
        // it does not handle.
        if let Ok(pixels) = super::dc_jpeg::decode(source, (width, height), reduction) {
            return Ok(Decoded {
                pixels,
                full_size: (width, height),
                orientation,
                plan,
            });
        }
    }

    if reduction > 1 && info.coding_process != CodingProcess::Lossless {
        // Ask along the longer axis only, so the decoder picks exactly this reduction.
        let request = if info.width >= info.height {
            (reduced(info.width, reduction), u16::MAX)
        } else {
            (u16::MAX, reduced(info.height, reduction))
        };
        decoder.scale(request.0, request.1).map_err(corrupt)?;
    }
    let data = decoder.decode().map_err(corrupt)?;
    let info = decoder
        .info()
        .ok_or_else(|| corrupt("JPEG without a frame header"))?;
    let (out_width, out_height) = (u32::from(info.width), u32::from(info.height));
    let pixels = match info.pixel_format {
        PixelFormat::L8 => Pixels::new(out_width, out_height, Layout::L8, data)?,
        PixelFormat::RGB24 => Pixels::new(out_width, out_height, Layout::Rgb8, data)?,
        PixelFormat::CMYK32 => {
            Pixels::new(out_width, out_height, Layout::Rgb8, cmyk_to_rgb(&data))?
        }
        PixelFormat::L16 => Pixels::new(out_width, out_height, Layout::L8, l16_to_l8(&data))?,
    };
    Ok(Decoded {
        pixels,
        full_size: (width, height),
        orientation,
        plan,
    })
}

/// `jpeg-decoder`'s CMYK output (already un-inverted: 0 is no ink) to RGB.
fn cmyk_to_rgb(cmyk: &[u8]) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(cmyk.len() / 4 * 3);
    for pixel in cmyk.chunks_exact(4) {
        if let [c, m, y, k] = *pixel {
            let k = 255 - u16::from(k);
            for ink in [c, m, y] {
                let value = (255 - u16::from(ink)) * k / 255;
                rgb.push(u8::try_from(value).unwrap_or(u8::MAX));
            }
        }
    }
    rgb
}

/// 16-bit grey (lossless JPEG, native endian) to 8 bits, scaled so the brightest sample's top bit
/// is kept (the sample precision itself is not reported).
fn l16_to_l8(data: &[u8]) -> Vec<u8> {
    let samples = data
        .chunks_exact(2)
        .map(|pair| match *pair {
            [a, b] => u16::from_ne_bytes([a, b]),
            _ => 0,
        })
        .collect::<Vec<_>>();
    let max = samples.iter().copied().max().unwrap_or(0);
    let shift = (16 - max.leading_zeros()).saturating_sub(8);
    samples
        .into_iter()
        .map(|s| u8::try_from(s >> shift).unwrap_or(u8::MAX))
        .collect()
}

/// Full-size decode through `image`. `orientation`, when given, replaces what the decoder reports.
fn decode_with_image(
    source: &[u8],
    format: ImageFormat,
    max_pixels: u64,
    orientation: Option<Orientation>,
    plan_for: impl FnOnce(u32, u32, Orientation) -> Plan,
) -> Result<Decoded, ImagingError> {
    let mut reader = ImageReader::with_format(Cursor::new(source), format);
    let mut limits = Limits::default();
    // The decoded buffer (at most 4 bytes a pixel) plus as much again for the decoder's own work.
    limits.max_alloc = Some(max_pixels.saturating_mul(8));
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    if width == 0 || height == 0 {
        return Err(corrupt("zero-sized image"));
    }
    // What the decoder will allocate for, which for a GIF can differ from the header read first.
    check_pixels(width, height, max_pixels)?;
    let orientation = match orientation {
        Some(orientation) => orientation,
        None => decoder.orientation().map_err(corrupt)?,
    };
    let plan = plan_for(width, height, orientation);
    let image = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    Ok(Decoded {
        pixels: from_dynamic(image)?,
        full_size: (width, height),
        orientation,
        plan,
    })
}

/// An 8-bit interleaved buffer of `image` (16-bit and float images are reduced to 8 bits).
pub(crate) fn from_dynamic(image: DynamicImage) -> Result<Pixels, ImagingError> {
    let (width, height) = (image.width(), image.height());
    let (layout, data) = match image {
        DynamicImage::ImageLuma8(buffer) => (Layout::L8, buffer.into_raw()),
        DynamicImage::ImageLumaA8(buffer) => (Layout::La8, buffer.into_raw()),
        DynamicImage::ImageRgb8(buffer) => (Layout::Rgb8, buffer.into_raw()),
        DynamicImage::ImageRgba8(buffer) => (Layout::Rgba8, buffer.into_raw()),
        other => {
            let color = other.color();
            match (color.has_color(), color.has_alpha()) {
                (false, false) => (Layout::L8, other.into_luma8().into_raw()),
                (false, true) => (Layout::La8, other.into_luma_alpha8().into_raw()),
                (true, false) => (Layout::Rgb8, other.into_rgb8().into_raw()),
                (true, true) => (Layout::Rgba8, other.into_rgba8().into_raw()),
            }
        }
    };
    Pixels::new(width, height, layout, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::Rect;

    fn plan(crop: (u32, u32), out: (u32, u32)) -> Plan {
        Plan {
            crop: Rect {
                left: 0,
                top: 0,
                width: crop.0,
                height: crop.1,
            },
            out_width: out.0,
            out_height: out.1,
        }
    }

    #[test]
    fn dct_reduction_keeps_the_crop_at_least_as_large_as_the_output() {
        assert_eq!(dct_reduction(&plan((4000, 3000), (400, 300))), 8);
        assert_eq!(dct_reduction(&plan((3000, 3000), (200, 200))), 8);
        assert_eq!(dct_reduction(&plan((4000, 3000), (640, 480))), 4);
        assert_eq!(dct_reduction(&plan((4000, 3000), (1920, 1440))), 2);
        assert_eq!(dct_reduction(&plan((3000, 2000), (1920, 1280))), 1);
        assert_eq!(dct_reduction(&plan((50, 30), (50, 30))), 1);
    }

    #[test]
    fn cmyk_and_l16_conversions() {
        // No ink is white, full cyan is (0, 255, 255), full black is black.
        assert_eq!(
            cmyk_to_rgb(&[0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 255]),
            vec![255, 255, 255, 0, 255, 255, 0, 0, 0]
        );
        let l16: Vec<u8> = [0_u16, 2048, 4095]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(l16_to_l8(&l16), vec![0, 128, 255]);
    }
}
