//! A walk of a lossless WebP (VP8L) bitstream up to its Huffman groups, without decoding pixels.
//!
//! `image-webp` reads the entropy image, then builds every Huffman group it names (5 trees each, up
//! to a 4 KiB table a tree) before the first pixel, with no memory accounting: a 4×4 image naming
//! group 65,535 makes it build 65,536 groups, 1.3 GB. This walk decodes what precedes the groups
//! (the transforms' sub-images and the entropy image, each a small fraction of the image), counts
//! the groups, and measures the tables they would need, so a bitstream with more groups than
//! [`MAX_WEBP_HUFFMAN_GROUPS`] or than its entropy image has pixels is refused before any decoder
//! allocates for them. The rules followed are those of the WebP lossless specification (RFC 9649)
//! as `image-webp` 0.2 implements them.

/// Most Huffman groups a lossless WebP bitstream may have.
///
/// libwebp's encoder clusters its histograms into at most 2,600 groups (`MAX_HUFF_IMAGE_SIZE`),
/// other encoders use one; a group costs up to about 20 KiB of tables, so 4,096 groups bound
/// them near 80 MiB. A bitstream may also have no more groups than its entropy image has pixels
/// (an encoder numbers the groups it uses, densely), beyond [`WEBP_FREE_GROUPS`]: that is what
/// refuses a 4×4 image naming group 65,535.
pub const MAX_WEBP_HUFFMAN_GROUPS: u32 = 4096;
/// Groups a lossless WebP bitstream may have whatever the size of its entropy image (under 2 MB
/// of tables).
pub const WEBP_FREE_GROUPS: u32 = 16;

/// What the walk found in one bitstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Groups {
    /// Huffman groups of the main image.
    pub groups: u32,
    /// Pixels of its entropy image (1 without one).
    pub entropy_pixels: u64,
    /// Bytes of the Huffman tables `image-webp` builds for the main image's groups.
    pub table_bytes: u64,
}

/// Distance codes 1..=120 to (dx, dy) (RFC 9649, 5.2.2).
const DISTANCE_MAP: [(i8, i8); 120] = [
    (0, 1),
    (1, 0),
    (1, 1),
    (-1, 1),
    (0, 2),
    (2, 0),
    (1, 2),
    (-1, 2),
    (2, 1),
    (-2, 1),
    (2, 2),
    (-2, 2),
    (0, 3),
    (3, 0),
    (1, 3),
    (-1, 3),
    (3, 1),
    (-3, 1),
    (2, 3),
    (-2, 3),
    (3, 2),
    (-3, 2),
    (0, 4),
    (4, 0),
    (1, 4),
    (-1, 4),
    (4, 1),
    (-4, 1),
    (3, 3),
    (-3, 3),
    (2, 4),
    (-2, 4),
    (4, 2),
    (-4, 2),
    (0, 5),
    (3, 4),
    (-3, 4),
    (4, 3),
    (-4, 3),
    (5, 0),
    (1, 5),
    (-1, 5),
    (5, 1),
    (-5, 1),
    (2, 5),
    (-2, 5),
    (5, 2),
    (-5, 2),
    (4, 4),
    (-4, 4),
    (3, 5),
    (-3, 5),
    (5, 3),
    (-5, 3),
    (0, 6),
    (6, 0),
    (1, 6),
    (-1, 6),
    (6, 1),
    (-6, 1),
    (2, 6),
    (-2, 6),
    (6, 2),
    (-6, 2),
    (4, 5),
    (-4, 5),
    (5, 4),
    (-5, 4),
    (3, 6),
    (-3, 6),
    (6, 3),
    (-6, 3),
    (0, 7),
    (7, 0),
    (1, 7),
    (-1, 7),
    (5, 5),
    (-5, 5),
    (7, 1),
    (-7, 1),
    (4, 6),
    (-4, 6),
    (6, 4),
    (-6, 4),
    (2, 7),
    (-2, 7),
    (7, 2),
    (-7, 2),
    (3, 7),
    (-3, 7),
    (7, 3),
    (-7, 3),
    (5, 6),
    (-5, 6),
    (6, 5),
    (-6, 5),
    (8, 0),
    (4, 7),
    (-4, 7),
    (7, 4),
    (-7, 4),
    (8, 1),
    (8, 2),
    (6, 6),
    (-6, 6),
    (8, 3),
    (5, 7),
    (-5, 7),
    (7, 5),
    (-7, 5),
    (8, 4),
    (6, 7),
    (-6, 7),
    (7, 6),
    (-7, 6),
    (8, 5),
    (7, 7),
    (-7, 7),
    (8, 6),
    (8, 7),
];

/// The order code length code lengths are sent in.
const CODE_LENGTH_ORDER: [usize; 19] = [
    17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
];

/// `image-webp`'s first-level table bits and the size of a second-level node.
const TABLE_BITS: u8 = 10;
const NODE_BYTES: u64 = 16;

/// LSB-first bits of a byte slice; `None` past its end.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn peek(&self, count: u8) -> u32 {
        let byte = self.pos / 8;
        let mut word = 0_u64;
        for i in 0..4 {
            word |= u64::from(self.data.get(byte + i).copied().unwrap_or(0)) << (8 * i);
        }
        let bits = (word >> (self.pos % 8)) & ((1_u64 << count) - 1);
        u32::try_from(bits).unwrap_or(0)
    }

    fn read(&mut self, count: u8) -> Option<u32> {
        let value = self.peek(count);
        self.pos += usize::from(count);
        (self.pos <= self.data.len() * 8).then_some(value)
    }
}

/// A prefix code as the walk decodes it.
enum Code {
    Single(u16),
    /// Indexed by the next `bits` bits: `(symbol, length)`, length 0 for an invalid prefix.
    Table {
        bits: u8,
        table: Vec<(u16, u8)>,
    },
}

impl Code {
    fn decode(&self, bits: &mut Bits<'_>) -> Option<u16> {
        match self {
            Code::Single(symbol) => Some(*symbol),
            Code::Table { bits: width, table } => {
                let &(symbol, length) = table.get(usize::try_from(bits.peek(*width)).ok()?)?;
                if length == 0 {
                    return None;
                }
                bits.read(length)?;
                Some(symbol)
            }
        }
    }

    /// The canonical code of `lengths` (a single used symbol takes no bits).
    fn from_lengths(lengths: &[u8]) -> Option<Code> {
        let used: Vec<usize> = (0..lengths.len())
            .filter(|&i| lengths.get(i).is_some_and(|&l| l > 0))
            .collect();
        match used.as_slice() {
            [] => return None,
            [only] => return Some(Code::Single(u16::try_from(*only).ok()?)),
            _ => {}
        }
        let max = lengths.iter().copied().max()?;
        if max > 15 {
            return None;
        }
        let mut counts = [0_u32; 16];
        for &l in lengths {
            *counts.get_mut(usize::from(l))? += 1;
        }
        counts[0] = 0;
        let mut next = [0_u32; 16];
        let mut code = 0;
        for (slot, count) in next.iter_mut().skip(1).zip(counts) {
            code = (code + count) << 1;
            *slot = code;
        }
        let mut table = vec![(0_u16, 0_u8); 1 << max];
        for symbol in used {
            let length = *lengths.get(symbol)?;
            let slot = next.get_mut(usize::from(length))?;
            let code = *slot;
            *slot += 1;
            let reversed = code.reverse_bits() >> (32 - u32::from(length));
            let mut index = usize::try_from(reversed).ok()?;
            while let Some(entry) = table.get_mut(index) {
                *entry = (u16::try_from(symbol).ok()?, length);
                index += 1 << length;
            }
        }
        Some(Code::Table { bits: max, table })
    }
}

/// Bytes `image-webp` allocates for the tree of `lengths` (its table and second-level nodes).
fn tree_bytes(lengths: &[u8]) -> u64 {
    let used = lengths.iter().filter(|&&l| l > 0).count();
    if used < 2 {
        return 0;
    }
    let max = lengths.iter().copied().max().unwrap_or(0);
    let table_bits = max.min(TABLE_BITS);
    let long = lengths.iter().filter(|&&l| l > table_bits).count();
    (1_u64 << table_bits) * 4 + 2 * u64::try_from(long).unwrap_or(0) * NODE_BYTES
}

/// A prefix code as sent: a simple code of one or two symbols (the first decoded from bit 0,
/// whatever the symbols' order), or code lengths.
enum Spec {
    Simple(u16, Option<u16>),
    Lengths(Vec<u8>),
}

impl Spec {
    fn code(&self) -> Option<Code> {
        match self {
            Spec::Simple(only, None) => Some(Code::Single(*only)),
            Spec::Simple(zero, Some(one)) => Some(Code::Table {
                bits: 1,
                table: vec![(*zero, 1), (*one, 1)],
            }),
            Spec::Lengths(lengths) => Code::from_lengths(lengths),
        }
    }

    /// Bytes `image-webp` allocates for this tree.
    fn bytes(&self) -> u64 {
        match self {
            Spec::Simple(_, None) => 0,
            // A two-entry table and three nodes.
            Spec::Simple(_, Some(_)) => 2 * 4 + 3 * NODE_BYTES,
            Spec::Lengths(lengths) => tree_bytes(lengths),
        }
    }
}

/// Reads one prefix code (RFC 9649, 3.7.2.1).
fn read_spec(bits: &mut Bits<'_>, alphabet: usize) -> Option<Spec> {
    if bits.read(1)? == 1 {
        let two = bits.read(1)? == 1;
        let first_width = if bits.read(1)? == 1 { 8 } else { 1 };
        let first = u16::try_from(bits.read(first_width)?).ok()?;
        let second = if two {
            Some(u16::try_from(bits.read(8)?).ok()?)
        } else {
            None
        };
        if usize::from(first.max(second.unwrap_or(0))) >= alphabet {
            return None;
        }
        return Some(Spec::Simple(first, second));
    }
    let mut lengths = vec![0_u8; alphabet];
    let mut code_length_lengths = [0_u8; 19];
    let count = 4 + usize::try_from(bits.read(4)?).ok()?;
    for &symbol in CODE_LENGTH_ORDER.get(..count)? {
        *code_length_lengths.get_mut(symbol)? = u8::try_from(bits.read(3)?).ok()?;
    }
    let code_length_code = Code::from_lengths(&code_length_lengths)?;
    let mut max_symbol = if bits.read(1)? == 1 {
        let width = 2 + 2 * u8::try_from(bits.read(3)?).ok()?;
        let max = 2 + usize::try_from(bits.read(width)?).ok()?;
        if max > alphabet {
            return None;
        }
        max
    } else {
        alphabet
    };
    let mut previous = 8_u8;
    let mut symbol = 0;
    while symbol < alphabet && max_symbol > 0 {
        max_symbol -= 1;
        let length = code_length_code.decode(bits)?;
        if length < 16 {
            let length = u8::try_from(length).ok()?;
            *lengths.get_mut(symbol)? = length;
            symbol += 1;
            if length != 0 {
                previous = length;
            }
        } else {
            let (extra, offset, value) = match length {
                16 => (2, 3, previous),
                17 => (3, 3, 0),
                _ => (7, 11, 0),
            };
            let repeat = offset + usize::try_from(bits.read(extra)?).ok()?;
            lengths.get_mut(symbol..symbol + repeat)?.fill(value);
            symbol += repeat;
        }
    }
    Some(Spec::Lengths(lengths))
}

/// `ceil(size / 2^bits)`.
fn subsample(size: u32, bits: u8) -> u32 {
    size.div_ceil(1 << bits)
}

/// A length or distance from its prefix symbol and extra bits.
fn prefix_value(bits: &mut Bits<'_>, symbol: u16) -> Option<usize> {
    if symbol < 4 {
        return Some(usize::from(symbol) + 1);
    }
    let extra = u8::try_from((symbol - 2) >> 1).ok()?;
    let offset = (2 + usize::from(symbol & 1)) << extra;
    Some(offset + usize::try_from(bits.read(extra)?).ok()? + 1)
}

/// Reads the colour cache bits (0 for none).
fn color_cache_bits(bits: &mut Bits<'_>) -> Option<u8> {
    if bits.read(1)? == 0 {
        return Some(0);
    }
    let cache = u8::try_from(bits.read(4)?).ok()?;
    (1..=11).contains(&cache).then_some(cache)
}

/// The alphabet sizes of a group's five codes.
fn alphabets(cache_bits: u8) -> [usize; 5] {
    let cache = if cache_bits == 0 { 0 } else { 1 << cache_bits };
    [256 + 24 + cache, 256, 256, 256, 40]
}

/// Decodes an entropy-coded sub-image of `width x height` (one group, no meta codes): the
/// pixels as ARGB.
fn sub_image(bits: &mut Bits<'_>, width: u32, height: u32) -> Option<Vec<u32>> {
    let cache_bits = color_cache_bits(bits)?;
    let mut codes = Vec::with_capacity(5);
    for alphabet in alphabets(cache_bits) {
        codes.push(read_spec(bits, alphabet)?.code()?);
    }
    let [green, red, blue, alpha, distance] = codes.as_slice() else {
        return None;
    };
    let count = usize::try_from(u64::from(width) * u64::from(height)).ok()?;
    let mut cache = vec![0_u32; if cache_bits == 0 { 0 } else { 1 << cache_bits }];
    let mut pixels: Vec<u32> = Vec::with_capacity(count);
    let insert = |cache: &mut Vec<u32>, argb: u32| {
        if cache_bits > 0 {
            let index = 0x1e35_a7bd_u32.wrapping_mul(argb) >> (32 - u32::from(cache_bits));
            if let Some(slot) = cache.get_mut(usize::try_from(index).unwrap_or(0)) {
                *slot = argb;
            }
        }
    };
    while pixels.len() < count {
        let symbol = green.decode(bits)?;
        if symbol < 256 {
            let r = u32::from(red.decode(bits)?);
            let b = u32::from(blue.decode(bits)?);
            let a = u32::from(alpha.decode(bits)?);
            let argb = (a << 24) | (r << 16) | (u32::from(symbol) << 8) | b;
            pixels.push(argb);
            insert(&mut cache, argb);
        } else if symbol < 280 {
            let length = prefix_value(bits, symbol - 256)?;
            let distance_symbol = distance.decode(bits)?;
            let code = prefix_value(bits, distance_symbol)?;
            let distance = if code > 120 {
                code - 120
            } else {
                let &(dx, dy) = DISTANCE_MAP.get(code - 1)?;
                let d = i64::from(dx) + i64::from(dy) * i64::from(width);
                usize::try_from(d.max(1)).ok()?
            };
            if distance > pixels.len() || count - pixels.len() < length {
                return None;
            }
            for _ in 0..length {
                let argb = *pixels.get(pixels.len() - distance)?;
                pixels.push(argb);
                insert(&mut cache, argb);
            }
        } else {
            let argb = *cache.get(usize::from(symbol - 280))?;
            pixels.push(argb);
        }
    }
    Some(pixels)
}

/// Whether `found` has more groups than [`MAX_WEBP_HUFFMAN_GROUPS`], or than its entropy image
/// has pixels (beyond [`WEBP_FREE_GROUPS`]).
pub(crate) fn too_many(found: &Groups) -> bool {
    found.groups > MAX_WEBP_HUFFMAN_GROUPS
        || u64::from(found.groups) > found.entropy_pixels.max(u64::from(WEBP_FREE_GROUPS))
}

/// Walks a VP8L bitstream of `width x height` (`header`: whether it starts with the 5-byte VP8L
/// header, as a `VP8L` chunk does; an `ALPH` chunk's does not) up to its Huffman groups. `None`
/// when the bitstream is malformed before that point (the decoder will say so).
pub(crate) fn groups(data: &[u8], width: u32, height: u32, header: bool) -> Option<Groups> {
    let mut bits = Bits { data, pos: 0 };
    let (width, height) = if header {
        if bits.read(8)? != 0x2f {
            return None;
        }
        let w = bits.read(14)? + 1;
        let h = bits.read(14)? + 1;
        bits.read(4)?;
        (w, h)
    } else {
        (width, height)
    };
    // Transforms, each at most once; colour indexing narrows the image.
    let mut xsize = width;
    let mut seen = [false; 4];
    while bits.read(1)? == 1 {
        let kind = usize::try_from(bits.read(2)?).ok()?;
        if std::mem::replace(seen.get_mut(kind)?, true) {
            return None;
        }
        match kind {
            0 | 1 => {
                let size_bits = u8::try_from(bits.read(3)?).ok()? + 2;
                sub_image(
                    &mut bits,
                    subsample(xsize, size_bits),
                    subsample(height, size_bits),
                )?;
            }
            3 => {
                let colors = bits.read(8)? + 1;
                sub_image(&mut bits, colors, 1)?;
                let pack = match colors {
                    0..=2 => 3,
                    3..=4 => 2,
                    5..=16 => 1,
                    _ => 0,
                };
                xsize = subsample(xsize, pack);
            }
            _ => {}
        }
    }
    let cache_bits = color_cache_bits(&mut bits)?;
    let (groups, entropy_pixels) = if bits.read(1)? == 1 {
        let prefix_bits = u8::try_from(bits.read(3)?).ok()? + 2;
        let (w, h) = (
            subsample(xsize, prefix_bits),
            subsample(height, prefix_bits),
        );
        let entropy = sub_image(&mut bits, w, h)?;
        let groups = entropy
            .iter()
            .map(|argb| (argb >> 8) & 0xffff)
            .max()
            .unwrap_or(0)
            + 1;
        (groups, u64::from(w) * u64::from(h))
    } else {
        (1, 1)
    };
    let mut found = Groups {
        groups,
        entropy_pixels,
        table_bytes: 0,
    };
    if too_many(&found) {
        return Some(found);
    }
    for _ in 0..groups {
        for alphabet in alphabets(cache_bits) {
            found.table_bytes += read_spec(&mut bits, alphabet)?.bytes();
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn canonical_codes_decode_lsb_first() {
        // Lengths 1, 2, 2: codes 0, 10, 11, sent most significant bit first.
        let code = Code::from_lengths(&[1, 2, 2]).unwrap();
        // Bits in stream order: 0 | 1,0 | 1,1 -> byte 0b11_01_0 read LSB first.
        let data = [0b0001_1010_u8];
        let mut bits = Bits {
            data: &data,
            pos: 0,
        };
        assert_eq!(code.decode(&mut bits), Some(0));
        assert_eq!(code.decode(&mut bits), Some(1));
        assert_eq!(code.decode(&mut bits), Some(2));
    }

    #[test]
    fn a_real_encoder_output_has_one_group() {
        let image = image::RgbaImage::from_fn(64, 48, |x, y| {
            let byte = |v: u32| u8::try_from(v % 256).unwrap();
            image::Rgba([byte(x * 4), byte(y * 5), byte((x ^ y) * 3), 255])
        });
        let mut out = Vec::new();
        image::DynamicImage::ImageRgba8(image)
            .write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(&mut out))
            .unwrap();
        // RIFF header (12) + chunk header (8).
        let found = groups(&out[20..], 0, 0, true).unwrap();
        assert_eq!(found.groups, 1, "{found:?}");
        assert!(
            found.table_bytes > 0 && found.table_bytes < 64 * 1024,
            "{found:?}"
        );
    }
}
