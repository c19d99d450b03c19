//! What a transform will cost, known before it runs: the transform budget of the HTTP layer admits
//! a transform by this estimate, so it must never be lower than what [`crate::transform`] really
//! allocates for the same input (the tests compare it with measured peaks).

use crate::error::ImagingError;
use crate::preset::{FocalPoint, Preset, plan};
use crate::transform::{TransformOptions, check_pixels};

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

/// Fixed overhead of any transform: decoder state, encoder buffers, the resizer's scratch.
const BASE: u64 = 4 * 1024 * 1024;

/// Estimates the cost of rendering `preset` of `source`, from its header alone.
///
/// # Errors
/// As [`crate::transform`] would before decoding: an unsupported type, no size in the header, or
/// more pixels than `options.max_pixels`.
pub fn estimate(
    source: &[u8],
    preset: Preset,
    focal: Option<FocalPoint>,
    options: &TransformOptions,
) -> Result<Cost, ImagingError> {
    let probe = crate::probe::probe(source);
    if !matches!(
        probe.mime_type.as_str(),
        "image/jpeg" | "image/png" | "image/webp" | "image/gif"
    ) {
        return Err(ImagingError::Unsupported {
            mime: probe.mime_type,
        });
    }
    let (width, height) = match (probe.width, probe.height) {
        (Some(w), Some(h)) if w > 0 && h > 0 => (w, h),
        _ => {
            return Err(ImagingError::Corrupt(
                "the image header declares no size".to_owned(),
            ));
        }
    };
    check_pixels(width, height, options.max_pixels)?;
    let out = plan(preset, width, height, focal.unwrap_or_default().clamped());
    let source_pixels = u64::from(width) * u64::from(height);
    let out_pixels = u64::from(out.out_width) * u64::from(out.out_height);
    // Decoded RGBA at full size, the resized and the oriented output, and the encoded bytes.
    let memory = BASE + 4 * source_pixels + 3 * 4 * out_pixels;
    Ok(Cost {
        memory,
        work: source_pixels + out_pixels,
    })
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
