//! The transform presets of the operator contract, their keys, and the output geometry they ask
//! for.

/// Side of the square `thumbnail` cover-crop.
pub const THUMBNAIL_SIDE: u32 = 200;
/// Largest `N` accepted in `size-N`.
pub const MAX_SIZE: u32 = 4096;

/// A transform preset (operator contract, "Files and transforms").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// Cover-crop to 200x200 around the focal point (a smaller square for smaller images).
    Thumbnail,
    /// Fit within 640x640.
    Small,
    /// Fit within 1280x1280.
    Medium,
    /// Fit within 1920x1920.
    Large,
    /// Fit within NxN, N in `1..=4096`.
    Size(u32),
}

impl Preset {
    /// Parses a transform key: `thumbnail`, `small`, `medium`, `large`, or `size-N` with `N` in
    /// `1..=4096` written in plain decimal digits without sign or leading zeros (so every preset has
    /// exactly one key). Anything else, including other letter cases, is `None`.
    #[must_use]
    pub fn parse(key: &str) -> Option<Preset> {
        match key {
            "thumbnail" => Some(Preset::Thumbnail),
            "small" => Some(Preset::Small),
            "medium" => Some(Preset::Medium),
            "large" => Some(Preset::Large),
            _ => {
                let digits = key.strip_prefix("size-")?;
                let canonical = !digits.is_empty()
                    && digits.len() <= 4
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && !digits.starts_with('0');
                if !canonical {
                    return None;
                }
                let n: u32 = digits.parse().ok()?;
                (1..=MAX_SIZE).contains(&n).then_some(Preset::Size(n))
            }
        }
    }

    /// The canonical key, e.g. `thumbnail` or `size-400`; [`Preset::parse`] of it gives the preset
    /// back (for `Size(N)` with `N` in range).
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            Preset::Thumbnail => "thumbnail".to_owned(),
            Preset::Small => "small".to_owned(),
            Preset::Medium => "medium".to_owned(),
            Preset::Large => "large".to_owned(),
            Preset::Size(n) => format!("size-{n}"),
        }
    }

    /// The one preset that renders the same output as `self` on a `width x height` source, so that
    /// equal outputs are computed and stored once.
    ///
    /// A fit preset (`small`, `medium`, `large`, `size-N`) whose box is at or above the source's
    /// longer side never scales (nothing is upscaled): it renders the source at its own size,
    /// exactly as `Size(max(width, height))` does, which is returned. Every other preset,
    /// `thumbnail` included, is returned unchanged. The HTTP layer stores the derivative under the
    /// canonical preset's key, so the 4,096 `size-N` keys of a 1600×1067 image make at most 1,600
    /// distinct outputs, and every key from `size-1600` up is one original-size derivative instead of
    /// one per key. (The longer side is the same before and after EXIF orientation.)
    #[must_use]
    pub fn canonical(self, width: u32, height: u32) -> Preset {
        let longer = width.max(height);
        match self.fit_box() {
            Some(side) if side >= longer && longer >= 1 => Preset::Size(longer.min(MAX_SIZE)),
            _ => self,
        }
    }

    /// The bounding box of the fit presets; `None` for the thumbnail.
    fn fit_box(self) -> Option<u32> {
        match self {
            Preset::Thumbnail => None,
            Preset::Small => Some(640),
            Preset::Medium => Some(1280),
            Preset::Large => Some(1920),
            Preset::Size(n) => Some(n.max(1)),
        }
    }
}

/// Where the subject of an image is, as fractions of its (displayed, i.e. EXIF-oriented) width and
/// height: `(0, 0)` is the top-left corner, `(1, 1)` the bottom-right. The thumbnail crop is
/// centred on it as far as the image allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FocalPoint {
    pub x: f64,
    pub y: f64,
}

impl Default for FocalPoint {
    fn default() -> Self {
        FocalPoint { x: 0.5, y: 0.5 }
    }
}

impl FocalPoint {
    /// Both coordinates clamped to `0..=1`, NaN taken as the centre.
    pub(crate) fn clamped(self) -> FocalPoint {
        fn clamp(v: f64) -> f64 {
            if v.is_nan() { 0.5 } else { v.clamp(0.0, 1.0) }
        }
        FocalPoint {
            x: clamp(self.x),
            y: clamp(self.y),
        }
    }
}

/// A source rectangle in pixels of the full-size image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
}

/// What a preset makes of a `width x height` image: the part of it to use and the output size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub crop: Rect,
    pub out_width: u32,
    pub out_height: u32,
}

/// `value * num / den` rounded to the nearest integer, at least 1.
fn scale_round(value: u32, num: u32, den: u32) -> u32 {
    let den = u64::from(den.max(1));
    let scaled = (u64::from(value) * u64::from(num) + den / 2) / den;
    u32::try_from(scaled).unwrap_or(u32::MAX).max(1)
}

/// Output size of fitting `width x height` within `side x side`, never upscaling: the longer side
/// becomes `side`, the other keeps the aspect ratio (rounded to nearest, at least 1 px).
pub(crate) fn fit_within(width: u32, height: u32, side: u32) -> (u32, u32) {
    if width <= side && height <= side {
        return (width, height);
    }
    if width >= height {
        (side, scale_round(height, side, width))
    } else {
        (scale_round(width, side, height), side)
    }
}

/// The plan for `preset` on an image of `width x height` (both at least 1), with `focal` already
/// clamped and expressed in the same frame as `width` and `height`.
pub(crate) fn plan(preset: Preset, width: u32, height: u32, focal: FocalPoint) -> Plan {
    let full = Rect {
        left: 0,
        top: 0,
        width,
        height,
    };
    match preset.fit_box() {
        Some(side) => {
            let (out_width, out_height) = fit_within(width, height, side);
            Plan {
                crop: full,
                out_width,
                out_height,
            }
        }
        None => {
            // Cover-crop to a square: the largest square of the image, placed around the focal
            // point, scaled down to the thumbnail side (never up).
            let square = width.min(height);
            let place = |length: u32, at: f64| -> u32 {
                let free = length - square;
                let ideal = at * f64::from(length) - f64::from(square) / 2.0;
                // `ideal` is finite and `free` fits in f64 exactly; the cast saturates.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let start = ideal.round().clamp(0.0, f64::from(free)) as u32;
                start.min(free)
            };
            let side = square.min(THUMBNAIL_SIDE);
            Plan {
                crop: Rect {
                    left: place(width, focal.x),
                    top: place(height, focal.y),
                    width: square,
                    height: square,
                },
                out_width: side,
                out_height: side,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn named_presets_parse_and_round_trip() {
        for (key, preset) in [
            ("thumbnail", Preset::Thumbnail),
            ("small", Preset::Small),
            ("medium", Preset::Medium),
            ("large", Preset::Large),
            ("size-1", Preset::Size(1)),
            ("size-400", Preset::Size(400)),
            ("size-4096", Preset::Size(4096)),
        ] {
            assert_eq!(Preset::parse(key), Some(preset), "{key}");
            assert_eq!(preset.key(), key);
        }
    }

    #[test]
    fn malformed_and_out_of_range_keys_are_rejected() {
        for key in [
            "",
            "size-",
            "size-0",
            "size-4097",
            "size-10000",
            "size-99999999999",
            "size-abc",
            "size-01",
            "size-0400",
            "size-+4",
            "size--4",
            "size- 4",
            "size-4 ",
            "size-4.0",
            "Size-4",
            "SIZE-4",
            "size_4",
            "size4",
            "Thumbnail",
            "THUMBNAIL",
            "thumb",
            "xlarge",
            " small",
            "small ",
            "size-٤",
        ] {
            assert_eq!(Preset::parse(key), None, "{key:?}");
        }
    }

    #[test]
    fn fit_keeps_aspect_rounds_to_nearest_and_never_upscales() {
        assert_eq!(fit_within(3000, 2000, 640), (640, 427));
        assert_eq!(fit_within(2000, 3000, 640), (427, 640));
        assert_eq!(fit_within(4000, 3000, 400), (400, 300));
        assert_eq!(fit_within(640, 100, 640), (640, 100));
        assert_eq!(fit_within(50, 30, 640), (50, 30));
        assert_eq!(fit_within(5000, 2, 100), (100, 1));
        assert_eq!(fit_within(1, 5000, 1), (1, 1));
    }

    #[test]
    fn thumbnail_plan_centres_on_the_focal_point_within_the_image() {
        let centre = plan(Preset::Thumbnail, 3000, 2000, FocalPoint::default());
        assert_eq!(
            centre.crop,
            Rect {
                left: 500,
                top: 0,
                width: 2000,
                height: 2000
            }
        );
        assert_eq!((centre.out_width, centre.out_height), (200, 200));
        let left = plan(Preset::Thumbnail, 3000, 2000, FocalPoint { x: 0.0, y: 0.5 });
        assert_eq!(left.crop.left, 0);
        let right = plan(Preset::Thumbnail, 3000, 2000, FocalPoint { x: 1.0, y: 0.5 });
        assert_eq!(right.crop.left, 1000);
        let tiny = plan(Preset::Thumbnail, 50, 30, FocalPoint::default());
        assert_eq!((tiny.out_width, tiny.out_height), (30, 30));
        assert_eq!((tiny.crop.left, tiny.crop.width), (10, 30));
    }

    #[test]
    fn canonical_presets_name_one_original_size_output() {
        // At or above the longer side: the original size, whichever the key.
        for preset in [
            Preset::Small,
            Preset::Size(640),
            Preset::Size(4096),
            Preset::Large,
        ] {
            assert_eq!(preset.canonical(640, 427), Preset::Size(640), "{preset:?}");
            assert_eq!(preset.canonical(427, 640), Preset::Size(640), "{preset:?}");
        }
        assert_eq!(Preset::Medium.canonical(1600, 1067), Preset::Medium);
        assert_eq!(Preset::Large.canonical(1600, 1067), Preset::Size(1600));
        assert_eq!(Preset::Size(1601).canonical(1600, 1067), Preset::Size(1600));
        // Below the longer side, and the thumbnail: unchanged.
        assert_eq!(Preset::Size(1599).canonical(1600, 1067), Preset::Size(1599));
        assert_eq!(Preset::Small.canonical(1600, 1067), Preset::Small);
        assert_eq!(Preset::Thumbnail.canonical(100, 50), Preset::Thumbnail);
        assert_eq!(Preset::Thumbnail.canonical(4000, 3000), Preset::Thumbnail);
        // The canonical preset renders the same plan as the original one.
        for (w, h) in [(640, 427), (1, 1), (50, 30), (4096, 10), (10, 4096)] {
            for preset in [
                Preset::Small,
                Preset::Medium,
                Preset::Large,
                Preset::Size(4096),
            ] {
                let canonical = preset.canonical(w, h);
                assert_eq!(
                    plan(preset, w, h, FocalPoint::default()),
                    plan(canonical, w, h, FocalPoint::default()),
                    "{preset:?} {w}x{h}"
                );
            }
        }
    }

    #[test]
    fn focal_points_are_clamped() {
        let f = FocalPoint {
            x: f64::NAN,
            y: 7.0,
        }
        .clamped();
        assert_eq!(f, FocalPoint { x: 0.5, y: 1.0 });
    }
}
