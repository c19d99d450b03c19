//! A low-frequency decoder for sequential (baseline) Huffman JPEGs: the 1/8- and 1/4-scale
//! decodes.
//!
//! The DC coefficient of an 8x8 block is its mean, so the DC values alone are the image at 1/8
//! size (what libjpeg's `scale_denom = 8` produces); the DC value and the three lowest AC
//! coefficients give each block's 2x2 samples, the image at 1/4 size (the same 2x2 inverse DCT
//! as `jpeg-decoder`'s scaled decode). Every other AC coefficient still has to be parsed to find
//! the next block, but it is only skipped: no dequantisation, no storage, no full-size colour
//! conversion. `jpeg-decoder` decodes all 64 coefficients of every block through a generic
//! byte-at-a-time reader, which was 40% of a cold 2000x1500 → 400 transform (issue 23).
//!
//! Only the common layout is handled: 8-bit sequential Huffman frames with one component, or three
//! components (YCbCr, or RGB per Adobe/component ids) in one interleaved scan, with sampling
//! factors up to 2 and optional restart intervals. Anything else, and any inconsistency in the
//! data (including truncation), is an [`Unhandled`] error on which the caller falls back to
//! `jpeg-decoder`, which decides between decoding and reporting the file as corrupt.

mod entropy;

use super::{Layout, Pixels};
use entropy::{Bits, Huffman};

/// Why the fast path did not produce an image (the caller falls back, so this is for debugging).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unhandled(pub &'static str);

type Result<T> = std::result::Result<T, Unhandled>;

#[derive(Debug, Clone, Copy)]
struct Component {
    id: u8,
    h: u32,
    v: u32,
    quant: usize,
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    width: u32,
    height: u32,
    components: [Component; 3],
    count: usize,
}

fn be16(data: &[u8], at: usize) -> Result<usize> {
    match (data.get(at), data.get(at + 1)) {
        (Some(&a), Some(&b)) => Ok(usize::from(u16::from_be_bytes([a, b]))),
        _ => Err(Unhandled("truncated header")),
    }
}

/// Decodes `source` at 1/`reduction` size (`ceil(width / reduction) x ceil(height /
/// reduction)`; `reduction` 8 or 4), or says why it cannot. `expected` is the size the caller
/// checked against its pixel limit; a frame of another size is refused.
pub(crate) fn decode(source: &[u8], expected: (u32, u32), reduction: u32) -> Result<Pixels> {
    // Samples per block along each axis.
    let scale = match reduction {
        8 => 1,
        4 => 2,
        _ => return Err(Unhandled("only 1/8 and 1/4")),
    };
    if source.get(..2) != Some(&[0xff, 0xd8][..]) {
        return Err(Unhandled("no SOI"));
    }
    let mut pos = 2;
    // The low quantisers of each table, DC and AC Huffman tables by id.
    let mut dc_quant: [Option<LowQuant>; 4] = [None; 4];
    let mut dc_tables: [Option<Huffman>; 4] = [None, None, None, None];
    let mut ac_tables: [Option<Huffman>; 4] = [None, None, None, None];
    let mut frame: Option<Frame> = None;
    let mut restart_interval = 0_usize;
    let mut adobe_transform: Option<u8> = None;
    loop {
        // Markers, possibly preceded by fill bytes.
        if source.get(pos) != Some(&0xff) {
            return Err(Unhandled("expected a marker"));
        }
        while source.get(pos) == Some(&0xff) {
            pos += 1;
        }
        let marker = *source.get(pos).ok_or(Unhandled("truncated"))?;
        pos += 1;
        if matches!(marker, 0xd0..=0xd7 | 0x01) {
            continue;
        }
        if matches!(marker, 0xd8 | 0xd9) {
            return Err(Unhandled("no scan"));
        }
        let length = be16(source, pos)?;
        if length < 2 {
            return Err(Unhandled("bad segment length"));
        }
        let segment = source
            .get(pos + 2..pos + length.max(2))
            .ok_or(Unhandled("truncated segment"))?;
        match marker {
            // SOF0 (baseline) and SOF1 (extended sequential), Huffman coded.
            0xc0 | 0xc1 => {
                let parsed = parse_frame(segment)?;
                if frame.is_some() || (parsed.width, parsed.height) != expected {
                    return Err(Unhandled("unexpected frame header"));
                }
                frame = Some(parsed);
            }
            // Any other frame type: progressive, lossless, arithmetic, hierarchical.
            0xc2 | 0xc3 | 0xc5..=0xc7 | 0xc9..=0xcb | 0xcd..=0xcf => {
                return Err(Unhandled("not a sequential Huffman frame"));
            }
            0xc4 => parse_huffman(segment, &mut dc_tables, &mut ac_tables)?,
            0xdb => parse_quant(segment, &mut dc_quant)?,
            0xdd => restart_interval = be16(segment, 0)?,
            0xee if segment.get(..5) == Some(&b"Adobe"[..]) => {
                adobe_transform = segment.get(11).copied();
            }
            0xda => {
                let frame = frame.ok_or(Unhandled("scan before frame"))?;
                let scan_end = pos + length;
                return decode_scan(
                    source,
                    scan_end,
                    segment,
                    &frame,
                    &Tables {
                        dc_quant,
                        dc: &dc_tables,
                        ac: &ac_tables,
                    },
                    Markers {
                        restart_interval,
                        adobe_transform,
                    },
                    scale,
                );
            }
            _ => {}
        }
        pos += length;
    }
}

fn parse_frame(segment: &[u8]) -> Result<Frame> {
    if segment.first() != Some(&8) {
        return Err(Unhandled("not 8-bit"));
    }
    let height = u32::try_from(be16(segment, 1)?).map_err(|_| Unhandled("size"))?;
    let width = u32::try_from(be16(segment, 3)?).map_err(|_| Unhandled("size"))?;
    let count = usize::from(*segment.get(5).ok_or(Unhandled("truncated frame"))?);
    if width == 0 || height == 0 || !(count == 1 || count == 3) {
        return Err(Unhandled("unsupported frame layout"));
    }
    let mut components = [Component {
        id: 0,
        h: 1,
        v: 1,
        quant: 0,
    }; 3];
    for (i, component) in components.iter_mut().take(count).enumerate() {
        let at = 6 + 3 * i;
        let (Some(&id), Some(&sampling), Some(&quant)) =
            (segment.get(at), segment.get(at + 1), segment.get(at + 2))
        else {
            return Err(Unhandled("truncated frame"));
        };
        let (h, v) = (u32::from(sampling >> 4), u32::from(sampling & 15));
        if !(1..=2).contains(&h) || !(1..=2).contains(&v) || quant > 3 {
            return Err(Unhandled("unsupported sampling"));
        }
        *component = Component {
            id,
            h,
            v,
            quant: usize::from(quant),
        };
    }
    Ok(Frame {
        width,
        height,
        components,
        count,
    })
}

fn parse_huffman(
    mut segment: &[u8],
    dc_tables: &mut [Option<Huffman>; 4],
    ac_tables: &mut [Option<Huffman>; 4],
) -> Result<()> {
    while let Some(&class_id) = segment.first() {
        let counts = segment.get(1..17).ok_or(Unhandled("truncated DHT"))?;
        let total: usize = counts.iter().map(|&c| usize::from(c)).sum();
        let symbols = segment
            .get(17..17 + total)
            .ok_or(Unhandled("truncated DHT"))?;
        let table = Huffman::new(counts, symbols)?;
        let id = usize::from(class_id & 15);
        let slot = match class_id >> 4 {
            0 => dc_tables.get_mut(id),
            1 => ac_tables.get_mut(id),
            _ => None,
        }
        .ok_or(Unhandled("bad DHT"))?;
        *slot = Some(table);
        segment = segment.get(17 + total..).unwrap_or(&[]);
    }
    Ok(())
}

/// A quantisation table's steps at zig-zag positions 0 (DC), 1, 2 and 4.
type LowQuant = [i32; 4];

fn parse_quant(mut segment: &[u8], dc_quant: &mut [Option<LowQuant>; 4]) -> Result<()> {
    while let Some(&precision_id) = segment.first() {
        let id = usize::from(precision_id & 15);
        let wide = precision_id >> 4 != 0;
        let step = |k: usize| -> Result<i32> {
            if wide {
                i32::try_from(be16(segment, 1 + 2 * k)?).map_err(|_| Unhandled("DQT"))
            } else {
                Ok(i32::from(
                    *segment.get(1 + k).ok_or(Unhandled("truncated DQT"))?,
                ))
            }
        };
        let low = [step(0)?, step(1)?, step(2)?, step(4)?];
        *dc_quant.get_mut(id).ok_or(Unhandled("bad DQT"))? = Some(low);
        let size = if wide { 129 } else { 65 };
        segment = segment.get(size..).ok_or(Unhandled("truncated DQT"))?;
    }
    Ok(())
}

#[derive(Debug)]
struct Tables<'t> {
    dc_quant: [Option<LowQuant>; 4],
    dc: &'t [Option<Huffman>; 4],
    ac: &'t [Option<Huffman>; 4],
}

/// What the segments before the scan said about it: the restart interval (DRI) and the Adobe
/// colour transform (APP14).
#[derive(Debug, Clone, Copy)]
struct Markers {
    restart_interval: usize,
    adobe_transform: Option<u8>,
}

/// One component of the scan, ready to decode.
#[derive(Debug)]
struct ScanComponent<'t> {
    /// Position in the frame header (the scan may list components in another order).
    frame_index: usize,
    h: u32,
    v: u32,
    quant: LowQuant,
    dc: &'t Huffman,
    ac: &'t Huffman,
    predictor: i32,
    /// Samples, `scale` x `scale` per block, `wide` per row.
    plane: Vec<u8>,
    wide: usize,
}

fn decode_scan(
    source: &[u8],
    data_start: usize,
    header: &[u8],
    frame: &Frame,
    tables: &Tables<'_>,
    markers: Markers,
    scale: usize,
) -> Result<Pixels> {
    let Markers {
        restart_interval,
        adobe_transform,
    } = markers;
    let in_scan = usize::from(*header.first().ok_or(Unhandled("truncated SOS"))?);
    if in_scan != frame.count {
        return Err(Unhandled("scan does not cover all components"));
    }
    // A single-component scan is not interleaved: its MCU is one block, whatever its sampling.
    let interleaved = frame.count > 1;
    let (h_max, v_max) = if interleaved {
        let components = frame.components.iter().take(frame.count);
        (
            components.clone().map(|c| c.h).max().unwrap_or(1),
            components.map(|c| c.v).max().unwrap_or(1),
        )
    } else {
        (1, 1)
    };
    let (mcu_w, mcu_h) = if interleaved {
        (8 * h_max, 8 * v_max)
    } else {
        (8, 8)
    };
    let mcus_x = frame.width.div_ceil(mcu_w);
    let mcus_y = frame.height.div_ceil(mcu_h);

    let mut components = Vec::with_capacity(frame.count);
    for i in 0..frame.count {
        let (Some(&id), Some(&selectors)) = (header.get(1 + 2 * i), header.get(2 + 2 * i)) else {
            return Err(Unhandled("truncated SOS"));
        };
        let (frame_index, component) = frame
            .components
            .iter()
            .take(frame.count)
            .enumerate()
            .find(|(_, c)| c.id == id)
            .ok_or(Unhandled("unknown scan component"))?;
        if components
            .iter()
            .any(|c: &ScanComponent<'_>| c.frame_index == frame_index)
        {
            return Err(Unhandled("component listed twice"));
        }
        let dc = tables
            .dc
            .get(usize::from(selectors >> 4))
            .and_then(Option::as_ref)
            .ok_or(Unhandled("missing DC table"))?;
        let ac = tables
            .ac
            .get(usize::from(selectors & 15))
            .and_then(Option::as_ref)
            .ok_or(Unhandled("missing AC table"))?;
        let quant = tables
            .dc_quant
            .get(component.quant)
            .copied()
            .flatten()
            .ok_or(Unhandled("missing quantisation table"))?;
        let (h, v) = if interleaved {
            (component.h, component.v)
        } else {
            (1, 1)
        };
        let blocks_wide = usize::try_from(mcus_x * h).map_err(|_| Unhandled("size"))?;
        let blocks_high = usize::try_from(mcus_y * v).map_err(|_| Unhandled("size"))?;
        let wide = blocks_wide * scale;
        components.push(ScanComponent {
            frame_index,
            h,
            v,
            quant,
            dc,
            ac,
            predictor: 0,
            plane: vec![0; wide * blocks_high * scale],
            wide,
        });
    }
    // Spectral selection 0..=63, no successive approximation: a sequential scan.
    let tail = 1 + 2 * frame.count;
    if header.get(tail..tail + 3) != Some(&[0, 63, 0][..]) {
        return Err(Unhandled("not a sequential scan"));
    }

    let mut bits = Bits::new(source, data_start);
    let mut mcus_done = 0_usize;
    for mcu_y in 0..mcus_y {
        for mcu_x in 0..mcus_x {
            if restart_interval > 0 && mcus_done > 0 && mcus_done.is_multiple_of(restart_interval) {
                bits.restart()?;
                for component in &mut components {
                    component.predictor = 0;
                }
            }
            for component in &mut components {
                for by in 0..component.v {
                    for bx in 0..component.h {
                        let size = u32::from(bits.symbol(component.dc)?);
                        if size > 11 {
                            return Err(Unhandled("bad DC difference"));
                        }
                        let diff = bits.receive_extend(size);
                        component.predictor = component.predictor.wrapping_add(diff);
                        let x = usize::try_from(mcu_x * component.h + bx).unwrap_or(usize::MAX);
                        let y = usize::try_from(mcu_y * component.v + by).unwrap_or(usize::MAX);
                        let at = y.saturating_mul(scale).saturating_mul(component.wide)
                            + x.saturating_mul(scale);
                        if scale == 1 {
                            bits.skip_ac(component.ac)?;
                            let value = sample(component.predictor, component.quant[0]);
                            if let Some(cell) = component.plane.get_mut(at) {
                                *cell = value;
                            }
                        } else {
                            let low = bits.low_ac(component.ac)?;
                            let block = idct_2x2(component.predictor, low, component.quant);
                            let wide = component.wide;
                            for (offset, value) in [0, 1, wide, wide + 1].into_iter().zip(block) {
                                if let Some(cell) = component.plane.get_mut(at + offset) {
                                    *cell = value;
                                }
                            }
                        }
                    }
                }
            }
            mcus_done += 1;
        }
    }
    if bits.overran() {
        return Err(Unhandled("truncated scan"));
    }
    to_pixels(frame, &components, (h_max, v_max), adobe_transform, scale)
}

/// DC value to sample: the 1x1 inverse DCT (`dc * q / 8`), level-shifted and clamped.
#[inline]
fn sample(dc: i32, quant: i32) -> u8 {
    clamp_sample((dc.wrapping_mul(quant).wrapping_add(4) >> 3).wrapping_add(128))
}

#[inline]
fn clamp_sample(value: i32) -> u8 {
    u8::try_from(value.clamp(0, 255)).unwrap_or(u8::MAX)
}

/// A block's 2x2 samples (row by row) from its DC value and the AC coefficients at zig-zag 1, 2
/// and 4 (natural (0,1), (1,0), (1,1)): the 2x2 inverse DCT, as `jpeg-decoder` computes it.
#[inline]
fn idct_2x2(dc: i32, [z1, z2, z4]: [i32; 3], [q0, q1, q2, q4]: LowQuant) -> [u8; 4] {
    let s00 = dc.wrapping_mul(q0);
    let s01 = z1.wrapping_mul(q1);
    let s10 = z2.wrapping_mul(q2);
    let s11 = z4.wrapping_mul(q4);
    let bias = 4 + (128 << 3);
    let (x0, x2) = (s00 + s10 + bias, s00 - s10 + bias);
    let (x1, x3) = (s01 + s11, s01 - s11);
    [
        clamp_sample((x0 + x1) >> 3),
        clamp_sample((x0 - x1) >> 3),
        clamp_sample((x2 + x3) >> 3),
        clamp_sample((x2 - x3) >> 3),
    ]
}

/// The nearest block and the next one towards `pos` along an axis whose blocks cover two output
/// pixels each (`halved`), clamped to `len` blocks; `(pos, pos)` along a full-resolution axis.
#[inline]
fn taps(pos: usize, halved: bool, len: usize) -> (usize, usize) {
    if !halved {
        return (pos, pos);
    }
    let near = pos / 2;
    let far = if pos.is_multiple_of(2) {
        near.saturating_sub(1)
    } else {
        (near + 1).min(len.saturating_sub(1))
    };
    (near, far)
}

/// One component's samples at the decoded size (1/8 or 1/4 of the image).
#[derive(Debug)]
struct Plane<'a> {
    samples: &'a [u8],
    wide: usize,
    high: usize,
    halved_x: bool,
    halved_y: bool,
}

impl<'a> Plane<'a> {
    fn new(component: &'a ScanComponent<'_>, h_max: u32, v_max: u32) -> Plane<'a> {
        let samples = component.plane.as_slice();
        let wide = component.wide.max(1);
        Plane {
            high: samples.len() / wide,
            samples,
            wide,
            halved_x: component.h < h_max,
            halved_y: component.v < v_max,
        }
    }

    fn row(&self, y: usize) -> &[u8] {
        self.samples
            .get(y * self.wide..(y + 1) * self.wide)
            .unwrap_or(&[])
    }

    /// Output row `y` (`width` pixels) into `out`. A subsampled component is interpolated like
    /// libjpeg's "fancy" upsampling: 3/4 of the nearest block and 1/4 of the next one towards the
    /// pixel, in each halved direction.
    fn output_row(&self, y: usize, width: usize, out: &mut Vec<u8>) {
        out.clear();
        let (near_y, far_y) = taps(y, self.halved_y, self.high);
        let near = self.row(near_y);
        if !self.halved_x && !self.halved_y {
            out.extend_from_slice(near.get(..width).unwrap_or(near));
            return;
        }
        let far = self.row(far_y);
        for x in 0..width {
            let (near_x, far_x) = taps(x, self.halved_x, self.wide);
            let at = |row: &[u8], i: usize| u16::from(row.get(i).copied().unwrap_or(0));
            let value = 9 * at(near, near_x)
                + 3 * at(near, far_x)
                + 3 * at(far, near_x)
                + at(far, far_x)
                + 8;
            out.push(u8::try_from(value >> 4).unwrap_or(u8::MAX));
        }
    }
}

fn to_pixels(
    frame: &Frame,
    components: &[ScanComponent<'_>],
    (h_max, v_max): (u32, u32),
    adobe_transform: Option<u8>,
    scale: usize,
) -> Result<Pixels> {
    let reduction = 8 / u32::try_from(scale).map_err(|_| Unhandled("scale"))?;
    let width = frame.width.div_ceil(reduction);
    let height = frame.height.div_ceil(reduction);
    let to_usize = |v: u32| usize::try_from(v).map_err(|_| Unhandled("size"));
    let (w, h) = (to_usize(width)?, to_usize(height)?);
    // Y, Cb, Cr (or R, G, B) in frame order.
    let mut ordered: Vec<&ScanComponent<'_>> = components.iter().collect();
    ordered.sort_by_key(|c| c.frame_index);
    let planes: Vec<Plane> = ordered
        .into_iter()
        .map(|c| Plane::new(c, h_max, v_max))
        .collect();
    match planes.as_slice() {
        [luma] => {
            let mut data = Vec::with_capacity(w * h);
            let mut row = Vec::with_capacity(w);
            for y in 0..h {
                luma.output_row(y, w, &mut row);
                data.extend_from_slice(&row);
            }
            Pixels::new(width, height, Layout::L8, data).map_err(|_| Unhandled("size"))
        }
        [first, second, third] => {
            // RGB when Adobe says "no transform", or the ids spell R, G, B without an Adobe marker.
            let ids: Vec<u8> = frame.components.iter().map(|c| c.id).collect();
            let rgb = adobe_transform == Some(0)
                || (adobe_transform.is_none() && ids == [b'R', b'G', b'B']);
            let byte = |v: i32| u8::try_from(v.clamp(0, 255)).unwrap_or(0);
            let mut data = Vec::with_capacity(w * h * 3);
            let (mut a, mut b, mut c) = (
                Vec::with_capacity(w),
                Vec::with_capacity(w),
                Vec::with_capacity(w),
            );
            for y in 0..h {
                first.output_row(y, w, &mut a);
                second.output_row(y, w, &mut b);
                third.output_row(y, w, &mut c);
                for ((&y, &cb), &cr) in a.iter().zip(&b).zip(&c) {
                    if rgb {
                        data.extend_from_slice(&[y, cb, cr]);
                    } else {
                        let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
                        // JFIF YCbCr to RGB in 16.16 fixed point.
                        let r = y + ((91_881 * cr + 32_768) >> 16);
                        let g = y + ((-22_554 * cb - 46_802 * cr + 32_768) >> 16);
                        let b = y + ((116_130 * cb + 32_768) >> 16);
                        data.extend_from_slice(&[byte(r), byte(g), byte(b)]);
                    }
                }
            }
            Pixels::new(width, height, Layout::Rgb8, data).map_err(|_| Unhandled("size"))
        }
        _ => Err(Unhandled("unsupported component count")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use image::codecs::jpeg::JpegEncoder;
    use image::{DynamicImage, GrayImage, Luma, Rgb, RgbImage};

    fn encode(image: DynamicImage) -> Vec<u8> {
        let mut out = Vec::new();
        image
            .write_with_encoder(JpegEncoder::new_with_quality(&mut out, 95))
            .unwrap();
        out
    }

    /// The DC decode matches `jpeg-decoder`'s 1/8 decode, and the 2x2 decode its 1/4 decode, to
    /// within rounding.
    fn compare(source: &[u8]) {
        compare_at(source, 8);
        compare_at(source, 4);
    }

    fn compare_at(source: &[u8], reduction: u32) {
        let (width, height) = {
            let mut d = jpeg_decoder::Decoder::new(source);
            d.read_info().unwrap();
            let info = d.info().unwrap();
            (u32::from(info.width), u32::from(info.height))
        };
        let ours = decode(source, (width, height), reduction).unwrap();
        let mut reference = jpeg_decoder::Decoder::new(source);
        let request = |len: u32| u16::try_from(len.div_ceil(reduction)).unwrap();
        reference.scale(request(width), request(height)).unwrap();
        let expected = reference.decode().unwrap();
        let info = reference.info().unwrap();
        assert_eq!(
            (ours.width, ours.height),
            (u32::from(info.width), u32::from(info.height))
        );
        assert_eq!(ours.data.len(), expected.len());
        let worst = ours
            .data
            .iter()
            .zip(&expected)
            .map(|(&a, &b)| (i16::from(a) - i16::from(b)).abs())
            .max()
            .unwrap();
        // Both upsample chroma the same way; only rounding differs.
        assert!(worst <= 4, "1/{reduction}: largest difference {worst}");
    }

    #[test]
    fn matches_jpeg_decoder_on_colour_and_grey() {
        let colour = RgbImage::from_fn(203, 131, |x, y| {
            Rgb([
                u8::try_from(x % 256).unwrap(),
                u8::try_from((y * 2) % 256).unwrap(),
                u8::try_from((x + y) % 256).unwrap(),
            ])
        });
        compare(&encode(DynamicImage::ImageRgb8(colour.clone())));
        let grey = GrayImage::from_fn(77, 45, |x, y| Luma([u8::try_from((x * y) % 256).unwrap()]));
        compare(&encode(DynamicImage::ImageLuma8(grey)));
        // 4:2:0 with restart markers, from jpeg-encoder.
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 80);
        encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
        encoder.set_restart_interval(3);
        encoder
            .encode(colour.as_raw(), 203, 131, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        compare(&out);
        // Sensor-like grain: every block has AC coefficients well past position 4.
        let grain = RgbImage::from_fn(160, 96, |x, y| {
            let noise = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) % 61;
            Rgb([
                u8::try_from((x + noise) % 256).unwrap(),
                u8::try_from((y * 2 + noise) % 256).unwrap(),
                u8::try_from((noise * 4) % 256).unwrap(),
            ])
        });
        compare(&encode(DynamicImage::ImageRgb8(grain)));
    }

    #[test]
    fn only_one_eighth_and_one_quarter_are_decoded_here() {
        let grey = GrayImage::from_fn(40, 40, |x, _| Luma([u8::try_from(x * 6).unwrap()]));
        let source = encode(DynamicImage::ImageLuma8(grey));
        for reduction in [0, 1, 2, 3, 16] {
            assert!(decode(&source, (40, 40), reduction).is_err(), "{reduction}");
        }
        let quarter = decode(&source, (40, 40), 4).unwrap();
        assert_eq!((quarter.width, quarter.height), (10, 10));
    }

    #[test]
    fn progressive_and_truncated_files_are_left_to_the_fallback() {
        let colour = RgbImage::from_fn(64, 64, |x, _| Rgb([u8::try_from(x * 4).unwrap(), 0, 0]));
        let mut progressive = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut progressive, 80);
        encoder.set_progressive(true);
        encoder
            .encode(colour.as_raw(), 64, 64, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        assert!(decode(&progressive, (64, 64), 8).is_err());
        let baseline = encode(DynamicImage::ImageRgb8(colour));
        assert!(decode(&baseline, (64, 64), 8).is_ok());
        assert!(decode(&baseline, (64, 65), 8).is_err());
        assert!(decode(&baseline[..baseline.len() / 2], (64, 64), 8).is_err());
        assert!(decode(&baseline[..100], (64, 64), 8).is_err());
    }
}
