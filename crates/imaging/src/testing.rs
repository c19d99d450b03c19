//! Generators of the hostile images of issue 27 (and of plain PNGs), shared by the imaging
//! crate's tests and the server's black-box tests: each builds its bytes in a few lines, so no
//! test needs binary fixtures of megabytes. Compiled only with the `testing` feature.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::missing_panics_doc,
    clippy::must_use_candidate
)]

pub fn crc32(bytes: &[u8]) -> u32 {
    let mut table = [0_u32; 256];
    for (n, entry) in (0_u32..).zip(table.iter_mut()) {
        let mut c = n;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    let mut crc = !0_u32;
    for &b in bytes {
        crc = table[usize::from((crc as u8) ^ b)] ^ (crc >> 8);
    }
    !crc
}

/// An LSB-first bit writer (deflate and VP8L order).
#[derive(Default, Debug)]
pub struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    pub fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push((self.acc & 0xff) as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code, most significant bit first.
    pub fn code(&mut self, code: u32, length: u32) {
        for i in (0..length).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push((self.acc & 0xff) as u8);
        }
        self.out
    }
}

/// A zlib stream of `n` zero bytes: one fixed-Huffman block of length-258 copies at distance 1
/// (13 bits each, so 100 MB compress to about 630 KB).
pub fn zlib_zeros(n: usize) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // fixed Huffman codes
    let mut left = n;
    if left > 0 {
        bits.code(0x30, 8); // literal 0
        left -= 1;
    }
    while left >= 258 {
        bits.code(0xc5, 8); // length 258 (symbol 285)
        bits.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        bits.code(0x30, 8);
    }
    bits.code(0, 7); // end of block
    let mut out = vec![0x78, 0x01];
    out.extend(bits.finish());
    let b = u32::try_from(n % 65_521).unwrap();
    out.extend_from_slice(&((b << 16) | 1).to_be_bytes());
    out
}

pub fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&[&kind[..], data].concat());
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// A solid PNG of `width x height`, 8-bit grey (type 0) or RGB (type 2), with `extra` chunks
/// before the image data.
pub fn solid_png(width: u32, height: u32, color_type: u8, extra: &[Vec<u8>]) -> Vec<u8> {
    png_bytes(width, height, color_type, false, extra)
}

/// As [`solid_png`], Adam7-interlaced when `interlaced`.
pub fn png_bytes(
    width: u32,
    height: u32,
    color_type: u8,
    interlaced: bool,
    extra: &[Vec<u8>],
) -> Vec<u8> {
    let channels: usize = if color_type == 2 { 3 } else { 1 };
    let (w, h) = (
        usize::try_from(width).unwrap(),
        usize::try_from(height).unwrap(),
    );
    let raw = if interlaced {
        // The seven passes (x0, y0, dx, dy); an empty pass has no rows at all.
        [
            (0, 0, 8, 8),
            (4, 0, 8, 8),
            (0, 4, 4, 8),
            (2, 0, 4, 4),
            (0, 2, 2, 4),
            (1, 0, 2, 2),
            (0, 1, 1, 2),
        ]
        .iter()
        .map(|&(x0, y0, dx, dy)| {
            let pw = w.saturating_sub(x0).div_ceil(dx);
            let ph = h.saturating_sub(y0).div_ceil(dy);
            if pw == 0 || ph == 0 {
                0
            } else {
                ph * (1 + pw * channels)
            }
        })
        .sum()
    } else {
        h * (1 + w * channels)
    };
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, color_type, 0, 0, u8::from(interlaced)]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    for c in extra {
        out.extend_from_slice(c);
    }
    out.extend(chunk(b"IDAT", &zlib_zeros(raw)));
    out.extend(chunk(b"IEND", b""));
    out
}

/// R4: a 10x10 PNG whose `iCCP` profile is 100 MB of zeros (about 400 KB compressed).
pub fn iccp_png() -> Vec<u8> {
    let mut iccp = b"icc\0\0".to_vec();
    iccp.extend(zlib_zeros(100_000_000));
    solid_png(10, 10, 2, &[chunk(b"iCCP", &iccp)])
}

/// The GIF canvas bomb: a 35-byte GIF89a with a 7071x7071 logical screen and one 1x1 frame.
pub fn canvas_gif() -> Vec<u8> {
    let mut out = b"GIF89a".to_vec();
    out.extend_from_slice(&7071_u16.to_le_bytes());
    out.extend_from_slice(&7071_u16.to_le_bytes());
    out.extend_from_slice(&[0x80, 0, 0]); // a global table of 2 colours
    out.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
    out.extend_from_slice(&[0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]); // a 1x1 frame at (0, 0)
    // LZW, minimum code size 2: clear (4), index 0, end (5), in 3-bit codes.
    out.extend_from_slice(&[2, 2, 0x44, 0x01, 0]);
    out.push(0x3b);
    out
}

/// R7: a progressive grey 7071x7071 JPEG of `scans` scans: a DC scan, then AC refinement scans of
/// one end-of-band run each (the decoder walks every block's 63 coefficients per scan).
pub fn scan_bomb(scans: usize) -> Vec<u8> {
    let mut out = vec![0xff, 0xd8];
    let segment = |out: &mut Vec<u8>, marker: u8, body: &[u8]| {
        out.extend_from_slice(&[0xff, marker]);
        out.extend_from_slice(&u16::try_from(body.len() + 2).unwrap().to_be_bytes());
        out.extend_from_slice(body);
    };
    let mut dqt = vec![0];
    dqt.extend_from_slice(&[1; 64]);
    segment(&mut out, 0xdb, &dqt);
    segment(&mut out, 0xc2, &[8, 0x1b, 0x9f, 0x1b, 0x9f, 1, 1, 0x11, 0]);
    // DC table 0: two codes of length 1 (categories 0 and 1).
    let mut dht = vec![0x00, 2];
    dht.extend_from_slice(&[0; 15]);
    dht.extend_from_slice(&[0, 1]);
    segment(&mut out, 0xc4, &dht);
    // AC table 0: EOB14 (0xE0) of length 1, EOB0..EOB13 of length 5.
    let mut dht = vec![0x10, 1, 0, 0, 0, 14];
    dht.extend_from_slice(&[0; 11]);
    dht.push(0xe0);
    dht.extend((0_u8..14).map(|r| r << 4));
    segment(&mut out, 0xc4, &dht);
    for scan in 0..scans {
        let (ss, se, a) = if scan == 0 {
            (0, 0, 0x00)
        } else {
            (1, 63, 0x10)
        };
        segment(&mut out, 0xda, &[1, 1, 0x00, ss, se, a]);
        out.extend_from_slice(&[0x00, 0x00, 0x00]);
    }
    out.extend_from_slice(&[0xff, 0xd9]);
    out
}

/// R10: a 4x4 lossless WebP whose 1x1 entropy image names group `groups - 1`, so the decoder
/// builds `groups` groups of 5 complete trees of code lengths 1..10,10 (a 1,024-entry table each).
pub fn huffman_webp(groups: u32) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(0x2f, 8);
    bits.put(3, 14); // width - 1
    bits.put(3, 14); // height - 1
    bits.put(1, 1); // alpha
    bits.put(0, 3); // version
    bits.put(0, 1); // no transform
    bits.put(0, 1); // no colour cache
    bits.put(1, 1); // meta prefix codes
    bits.put(0, 3); // prefix bits 2: a 1x1 entropy image
    // The entropy image: no colour cache, five simple one-symbol codes: (red, green) is the group.
    let group = groups - 1;
    bits.put(0, 1);
    for symbol in [group & 0xff, group >> 8] {
        bits.put(1, 1); // simple
        bits.put(0, 1); // one symbol
        bits.put(1, 1); // eight bits
        bits.put(symbol, 8);
    }
    for _ in 0..3 {
        bits.put(1, 1);
        bits.put(0, 1);
        bits.put(0, 1);
        bits.put(0, 1);
    }
    // Code length code: symbols 1..6 of length 3, 7..10 of length 4, in the transmission order.
    const ORDER: [u32; 14] = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10];
    let cl_length = |symbol: u32| match symbol {
        1..=6 => 3,
        7..=10 => 4,
        _ => 0,
    };
    let cl_code = |symbol: u32| match symbol {
        1..=6 => (symbol - 1, 3),
        _ => (0b1100 + symbol - 7, 4),
    };
    for _ in 0..groups {
        for _ in 0..5 {
            bits.put(0, 1); // normal code
            bits.put(14 - 4, 4);
            for symbol in ORDER {
                bits.put(cl_length(symbol), 3);
            }
            bits.put(1, 1); // max_symbol given
            bits.put(1, 3); // in 4 bits
            bits.put(11 - 2, 4);
            for length in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10] {
                let (code, n) = cl_code(length);
                bits.code(code, n);
            }
        }
    }
    // 16 pixels, each (green, red, blue, alpha) symbol 0: the 1-bit code 0.
    for _ in 0..16 * 4 {
        bits.put(0, 1);
    }
    let mut vp8l = bits.finish();
    if vp8l.len() % 2 == 1 {
        vp8l.push(0);
    }
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&u32::try_from(4 + 8 + vp8l.len()).unwrap().to_le_bytes());
    out.extend_from_slice(b"WEBPVP8L");
    out.extend_from_slice(&u32::try_from(vp8l.len()).unwrap().to_le_bytes());
    out.extend(vp8l);
    out
}
