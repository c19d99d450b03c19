//! What a source's structure costs beyond its pixel count, read from its bytes before decoding.
//!
//! The pixel limit bounds the decoded image, but decoders also allocate and work for other
//! reasons: a PNG's `iCCP` profile is inflated whole, a GIF's first frame is drawn on a canvas of
//! the logical screen's size, a progressive JPEG is decoded once per scan, a lossless WebP builds
//! Huffman tables for every group it names. Each walk here is cheap (it jumps from chunk to chunk
//! or from marker to marker, never decodes pixels) and is shared by [`crate::estimate`] and
//! [`crate::transform`], so the budget refuses what the transform would refuse, before any work.

use crate::error::ImagingError;

/// Most scans a JPEG may have (the frame's scans, all components together).
///
/// Each progressive scan is a pass over every block of the image, and refinement scans may be
/// repeated without limit: a 75 KB file of 1,000 scans costs 24 s of CPU. An ordinary progressive
/// file has about 10 (libjpeg's default script), mozjpeg's optimised scripts stay under 70; 100 is
/// also `zune-jpeg`'s default `max_scans`, so every decode path now refuses the same files (what
/// libjpeg-turbo's `-maxscans` does).
pub const MAX_JPEG_SCANS: u32 = 100;

/// A GIF's logical screen may exceed its first frame's rectangle only up to this many pixels (or
/// [`GIF_CANVAS_FACTOR`] times the frame): the first frame is drawn on a canvas of the screen's
/// size, so a 1×1 frame on a 7071×7071 screen (35 bytes) would cost 200 MB. 4 Mpx is 16 MiB of
/// RGBA canvas.
pub const GIF_CANVAS_FREE_PIXELS: u64 = 1 << 22;
/// See [`GIF_CANVAS_FREE_PIXELS`]: a screen up to this many times the first frame's area is
/// accepted whatever its size (the frame itself is bounded by the pixel limit).
pub const GIF_CANVAS_FACTOR: u64 = 4;

fn too_complex(what: String) -> ImagingError {
    ImagingError::TooComplex { what }
}

fn be16(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at..at + 2)? {
        [a, b] => Some(usize::from(u16::from_be_bytes([*a, *b]))),
        _ => None,
    }
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    match bytes.get(at..at + 2)? {
        [a, b] => Some(u32::from(u16::from_le_bytes([*a, *b]))),
        _ => None,
    }
}

fn be32(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at..at + 4)? {
        [a, b, c, d] => usize::try_from(u32::from_be_bytes([*a, *b, *c, *d])).ok(),
        _ => None,
    }
}

/// The scans of a JPEG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct JpegScans {
    /// Start-of-scan markers seen before the end of the image.
    pub scans: u32,
    /// Whether the frame is progressive (SOF2, SOF6, SOF10, SOF14).
    pub progressive: bool,
    /// Whether the frame is lossless (SOF3, SOF7, SOF11, SOF15).
    pub lossless: bool,
    /// Whether the frame is sequential Huffman (SOF0, SOF1), which `dc_jpeg` may handle.
    pub sequential: bool,
    /// Components of the frame (1 grey, 3 colour, 4 CMYK), 0 before a frame header.
    pub components: u8,
    /// 8x8 blocks of all components, padded to whole MCUs as decoders store them (a progressive
    /// decoder keeps 64 coefficients of 2 bytes for each).
    pub blocks: u64,
}

/// The 8x8 blocks a frame header declares, over all components, padded to whole MCUs.
fn frame_blocks(body: &[u8]) -> u64 {
    let (Some(height), Some(width), Some(&count)) = (be16(body, 1), be16(body, 3), body.get(5))
    else {
        return 0;
    };
    let sampling: Vec<(u64, u64)> = (0..usize::from(count))
        .filter_map(|i| body.get(6 + 3 * i + 1))
        .map(|&hv| (u64::from(hv >> 4).max(1), u64::from(hv & 15).max(1)))
        .collect();
    let h_max = sampling.iter().map(|s| s.0).max().unwrap_or(1);
    let v_max = sampling.iter().map(|s| s.1).max().unwrap_or(1);
    let mcus_x = u64::try_from(width).unwrap_or(0).div_ceil(8 * h_max);
    let mcus_y = u64::try_from(height).unwrap_or(0).div_ceil(8 * v_max);
    sampling.iter().map(|(h, v)| mcus_x * h * mcus_y * v).sum()
}

/// Index of the first 0xFF byte of `data` at or after `from` (SIMD: the walk of a 10 MB file's
/// entropy-coded data costs well under a millisecond).
fn next_ff(data: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(0xff, data.get(from..)?).map(|i| from + i)
}

/// Counts the scans of a JPEG by walking its markers (segment lengths, then the entropy-coded data
/// of each scan to the next marker), and refuses more than [`MAX_JPEG_SCANS`]. A malformed or
/// truncated stream ends the walk: the decoder reports it.
///
/// # Errors
/// [`ImagingError::TooComplex`] past the cap.
pub(crate) fn jpeg_scans(source: &[u8]) -> Result<JpegScans, ImagingError> {
    let mut found = JpegScans::default();
    if source.get(..2) != Some(&[0xff, 0xd8][..]) {
        return Ok(found);
    }
    let mut pos = 2;
    loop {
        if source.get(pos) != Some(&0xff) {
            return Ok(found);
        }
        while source.get(pos) == Some(&0xff) {
            pos += 1;
        }
        let Some(&marker) = source.get(pos) else {
            return Ok(found);
        };
        pos += 1;
        match marker {
            0xd0..=0xd7 | 0x01 | 0xd8 => continue,
            0xd9 => return Ok(found),
            _ => {}
        }
        let Some(length) = be16(source, pos).filter(|&l| l >= 2) else {
            return Ok(found);
        };
        if matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            found.progressive |= matches!(marker, 0xc2 | 0xc6 | 0xca | 0xce);
            found.lossless |= matches!(marker, 0xc3 | 0xc7 | 0xcb | 0xcf);
            found.sequential |= matches!(marker, 0xc0 | 0xc1);
            found.blocks = source.get(pos + 2..pos + length).map_or(0, frame_blocks);
            found.components = if length >= 8 {
                source.get(pos + 7).copied().unwrap_or(0)
            } else {
                0
            };
        }
        pos += length;
        if marker != 0xda {
            continue;
        }
        found.scans += 1;
        if found.scans > MAX_JPEG_SCANS {
            return Err(too_complex(format!(
                "a JPEG of more than {MAX_JPEG_SCANS} scans"
            )));
        }
        // Entropy-coded data: up to the next 0xFF that is neither stuffing (FF 00), a restart
        // marker nor a fill byte.
        loop {
            let Some(ff) = next_ff(source, pos) else {
                return Ok(found);
            };
            match source.get(ff + 1) {
                Some(0x00 | 0xd0..=0xd7) => pos = ff + 2,
                Some(0xff) => pos = ff + 1,
                Some(_) => {
                    pos = ff;
                    break;
                }
                None => return Ok(found),
            }
        }
    }
}

/// The chunks of a PNG that its decoder inflates while reading the header: only `iCCP` (`png`
/// keeps `zTXt` and `iTXt` compressed until asked, and `image` never asks). The output carries no
/// metadata, so they are dropped rather than capped.
const INFLATED_ANCILLARY: [&[u8; 4]; 1] = [b"iCCP"];

/// Whether the PNG has a chunk its decoder would inflate whole (see [`png_without_profiles`]).
pub(crate) fn png_has_inflated_chunks(source: &[u8]) -> bool {
    png_chunks(source).any(|(kind, _)| INFLATED_ANCILLARY.contains(&kind))
}

/// `(type, whole chunk range)` of each chunk of a PNG, in order, up to the first malformed one.
fn png_chunks(source: &[u8]) -> impl Iterator<Item = (&[u8; 4], std::ops::Range<usize>)> {
    let mut pos = if source.starts_with(b"\x89PNG\r\n\x1a\n") {
        8
    } else {
        source.len()
    };
    std::iter::from_fn(move || {
        let length = be32(source, pos)?;
        let kind: &[u8; 4] = source.get(pos + 4..pos + 8)?.try_into().ok()?;
        let end = pos.checked_add(12)?.checked_add(length)?.min(source.len());
        let range = pos..end;
        pos = end;
        Some((kind, range))
    })
}

/// The PNG without the ancillary chunks its decoder would inflate whole (`iCCP`: a 1 MB profile
/// compressed 1000:1 inflates to 1 GB for a 10×10 image), or `None` when it has none (no copy).
pub(crate) fn png_without_profiles(source: &[u8]) -> Option<Vec<u8>> {
    if !png_has_inflated_chunks(source) {
        return None;
    }
    let mut out = Vec::with_capacity(source.len());
    out.extend_from_slice(source.get(..8)?);
    let mut copied = 8;
    for (kind, range) in png_chunks(source) {
        if !INFLATED_ANCILLARY.contains(&kind) {
            out.extend_from_slice(source.get(range.clone())?);
        }
        copied = range.end;
    }
    // Whatever follows the last well-formed chunk goes through as it was, for the decoder to judge.
    out.extend_from_slice(source.get(copied..)?);
    Some(out)
}

/// A GIF's logical screen and the rectangle of its first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GifLayout {
    pub screen: (u32, u32),
    /// `None` when the file ends before the first image descriptor.
    pub first_frame: Option<(u32, u32)>,
}

/// Reads the logical screen and the first image descriptor of a GIF (skipping the colour table
/// and the extensions before it), and refuses a screen far larger than that frame (see
/// [`GIF_CANVAS_FREE_PIXELS`]).
///
/// # Errors
/// [`ImagingError::TooComplex`] for such a canvas.
pub(crate) fn gif_layout(source: &[u8]) -> Result<Option<GifLayout>, ImagingError> {
    let (Some(width), Some(height), Some(&flags)) =
        (le16(source, 6), le16(source, 8), source.get(10))
    else {
        return Ok(None);
    };
    let mut pos = 13;
    if flags & 0x80 != 0 {
        pos += 3 << ((flags & 7) + 1);
    }
    let mut first_frame = None;
    while let Some(&introducer) = source.get(pos) {
        match introducer {
            0x21 => {
                // Extension: label, then data sub-blocks up to an empty one.
                pos += 2;
                while let Some(&size) = source.get(pos) {
                    pos += 1 + usize::from(size);
                    if size == 0 {
                        break;
                    }
                }
            }
            0x2c => {
                if let (Some(w), Some(h)) = (le16(source, pos + 5), le16(source, pos + 7)) {
                    first_frame = Some((w, h));
                }
                break;
            }
            _ => break,
        }
    }
    let layout = GifLayout {
        screen: (width, height),
        first_frame,
    };
    let screen = u64::from(width) * u64::from(height);
    let frame = first_frame.map_or(0, |(w, h)| u64::from(w) * u64::from(h));
    if screen > GIF_CANVAS_FREE_PIXELS && screen > frame.saturating_mul(GIF_CANVAS_FACTOR) {
        return Err(too_complex(format!(
            "a GIF screen of {width}x{height} for a first frame of {frame} pixels (at most \
             {GIF_CANVAS_FACTOR} times the frame, or {GIF_CANVAS_FREE_PIXELS} pixels)"
        )));
    }
    Ok(Some(layout))
}

/// Upper bound of the Huffman tables `image-webp` builds per byte of a lossless bitstream, for a
/// bitstream the walk could not read (a full 1,024-entry `u32` table costs at least about 6
/// bytes of the file; second-level nodes less).
const WEBP_TABLE_BYTES_PER_BYTE: u64 = 1024;
/// The most Huffman tables a lossless bitstream can make `image-webp` build whatever its size:
/// 65,536 groups of 5 trees of at most a 4 KiB table and 2 × 2,328 second-level nodes.
const WEBP_MAX_TABLE_BYTES: u64 = 65_536 * 5 * (4096 + 2 * 2328 * 16);

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    match bytes.get(at..at + 3)? {
        [a, b, c] => Some(u32::from_le_bytes([*a, *b, *c, 0])),
        _ => None,
    }
}

fn le32(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at..at + 4)? {
        [a, b, c, d] => usize::try_from(u32::from_le_bytes([*a, *b, *c, *d])).ok(),
        _ => None,
    }
}

/// The Huffman tables the lossless bitstreams of a WebP (`VP8L`, lossless `ALPH`, also inside
/// animation frames) make `image-webp` build, each bitstream walked up to its groups
/// ([`crate::vp8l`]) and refused past [`crate::MAX_WEBP_HUFFMAN_GROUPS`] or past its entropy
/// image's pixels. `width x height` is the canvas the header declares.
///
/// # Errors
/// [`ImagingError::TooComplex`] for such a bitstream.
pub(crate) fn webp_huffman_tables(
    source: &[u8],
    width: u32,
    height: u32,
) -> Result<u64, ImagingError> {
    let mut total = 0_u64;
    // (start, end, frame size) of chunk lists still to walk: the file's, then each frame's.
    let mut lists = vec![(12_usize, source.len(), (width, height))];
    while let Some((mut pos, end, size)) = lists.pop() {
        while pos + 8 <= end {
            let (Some(kind), Some(length)) = (source.get(pos..pos + 4), le32(source, pos + 4))
            else {
                break;
            };
            let body = pos + 8;
            let body_end = body.saturating_add(length).min(end);
            let payload = source.get(body..body_end).unwrap_or_default();
            let stream = match kind {
                b"VP8L" => Some((payload, true)),
                b"ALPH" if payload.first().is_some_and(|flags| flags & 3 == 1) => {
                    Some((payload.get(1..).unwrap_or_default(), false))
                }
                b"ANMF" => {
                    let frame = (
                        le24(source, body + 6).map_or(width, |w| w + 1),
                        le24(source, body + 9).map_or(height, |h| h + 1),
                    );
                    lists.push((body + 16, body_end, frame));
                    None
                }
                _ => None,
            };
            if let Some((stream, header)) = stream {
                total = total.saturating_add(bitstream_tables(stream, size, header)?);
            }
            pos = body_end + (length & 1);
        }
    }
    Ok(total)
}

fn bitstream_tables(
    stream: &[u8],
    (width, height): (u32, u32),
    header: bool,
) -> Result<u64, ImagingError> {
    let Some(found) = crate::vp8l::groups(stream, width, height, header) else {
        // Malformed before its groups: the decoder will refuse it; bound it by its size.
        let bytes = u64::try_from(stream.len()).unwrap_or(u64::MAX);
        return Ok(bytes
            .saturating_mul(WEBP_TABLE_BYTES_PER_BYTE)
            .min(WEBP_MAX_TABLE_BYTES));
    };
    let max = crate::vp8l::MAX_WEBP_HUFFMAN_GROUPS;
    if crate::vp8l::too_many(&found) {
        return Err(too_complex(format!(
            "a lossless WebP bitstream of {} Huffman groups (at most {max}, and no more than its \
             entropy image's {} pixels or {})",
            found.groups,
            found.entropy_pixels,
            crate::vp8l::WEBP_FREE_GROUPS
        )));
    }
    Ok(found.table_bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn next_ff_finds_the_first_ff_at_any_alignment() {
        for at in 0..20 {
            let mut data = vec![0_u8; 20];
            data[at] = 0xff;
            assert_eq!(next_ff(&data, 0), Some(at));
            assert_eq!(next_ff(&data, at), Some(at));
            assert_eq!(next_ff(&data, at + 1), None);
        }
    }

    #[test]
    fn jpeg_scans_skip_stuffing_restarts_and_fill_bytes() {
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xc2, 0, 2];
        for _ in 0..3 {
            jpeg.extend_from_slice(&[0xff, 0xda, 0, 2, 1, 0xff, 0, 2, 0xff, 0xd3, 4, 0xff, 0xff]);
        }
        jpeg.extend_from_slice(&[0xff, 0xd9]);
        assert_eq!(
            jpeg_scans(&jpeg).unwrap(),
            JpegScans {
                scans: 3,
                progressive: true,
                lossless: false,
                sequential: false,
                components: 0,
                blocks: 0,
            }
        );
    }

    #[test]
    fn png_profiles_are_dropped_and_nothing_else() {
        let chunk = |kind: &[u8; 4], data: &[u8]| {
            let mut c = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
            c.extend_from_slice(kind);
            c.extend_from_slice(data);
            c.extend_from_slice(&[1, 2, 3, 4]);
            c
        };
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(chunk(b"IHDR", &[0; 13]));
        let plain = [png.clone(), chunk(b"IDAT", b"xy"), chunk(b"IEND", b"")].concat();
        assert_eq!(png_without_profiles(&plain), None);
        let with = [
            png,
            chunk(b"iCCP", b"profile"),
            chunk(b"IDAT", b"xy"),
            chunk(b"IEND", b""),
        ]
        .concat();
        assert_eq!(png_without_profiles(&with), Some(plain));
    }
}
