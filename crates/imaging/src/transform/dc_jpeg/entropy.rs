//! The entropy-coded layer of [`super`]: Huffman tables and the bit reader that decodes DC
//! symbols and skips AC coefficients (the decoder's hot loop), apart from the marker parsing and
//! the sampling that turn DC values into pixels.

use super::{Result, Unhandled};

/// Bits of look-ahead resolved by one table access.
const LUT_BITS: u32 = 10;
const LUT_SIZE: usize = 1 << LUT_BITS;
/// In a [`Huffman::skip`] entry: the block ends here.
const SKIP_EOB: u16 = 1 << 10;

/// A Huffman decoding table (ITU T.81 Annex C/F.2.2.3).
#[derive(Debug, Clone)]
pub(super) struct Huffman {
    /// For each `LUT_BITS`-bit prefix: `(code length << 8) | symbol`, or 0 when the code is longer.
    lut: Box<[u16; LUT_SIZE]>,
    /// For AC tables, each prefix's whole effect on a block being skipped: the bits to drop (code
    /// and coefficient bits, low 5 bits), how far the coefficient index advances (next 5 bits),
    /// and [`SKIP_EOB`]; 0 when the code is longer than `LUT_BITS`.
    skip: Box<[u16; LUT_SIZE]>,
    /// Per code length 1..=16: the largest code of that length (-1 if none), the first code, and
    /// the index of its symbol.
    max_code: [i32; 17],
    min_code: [i32; 17],
    first_index: [i32; 17],
    symbols: Vec<u8>,
}

/// The [`Huffman::skip`] entry of an AC symbol with a code of `length` bits.
fn skip_entry(length: u32, symbol: u8) -> u16 {
    let (run, size) = (u16::from(symbol >> 4), u16::from(symbol & 15));
    let length = u16::try_from(length).unwrap_or(31);
    match (run, size) {
        (15, 0) => length | 16 << 5,
        (_, 0) => length | SKIP_EOB,
        _ => (length + size) | (run + 1) << 5,
    }
}

impl Huffman {
    pub(super) fn new(counts: &[u8], symbols: &[u8]) -> Result<Huffman> {
        let bad = || Unhandled("bad huffman table");
        let mut table = Huffman {
            lut: Box::new([0; LUT_SIZE]),
            skip: Box::new([0; LUT_SIZE]),
            max_code: [-1; 17],
            min_code: [0; 17],
            first_index: [0; 17],
            symbols: symbols.to_vec(),
        };
        let mut code: i32 = 0;
        let mut index: i32 = 0;
        for (length, &count) in (1_u32..=16).zip(counts) {
            let slot = usize::try_from(length).map_err(|_| bad())?;
            *table.min_code.get_mut(slot).ok_or_else(bad)? = code;
            *table.first_index.get_mut(slot).ok_or_else(bad)? = index;
            for _ in 0..count {
                let symbol = *usize::try_from(index)
                    .ok()
                    .and_then(|i| symbols.get(i))
                    .ok_or_else(bad)?;
                if length <= LUT_BITS {
                    let shift = LUT_BITS - length;
                    let start = usize::try_from(code << shift).map_err(|_| bad())?;
                    let range = start..start + (1 << shift);
                    let entry = u16::try_from(length << 8).map_err(|_| bad())? | u16::from(symbol);
                    table
                        .lut
                        .get_mut(range.clone())
                        .ok_or_else(bad)?
                        .fill(entry);
                    let skip = skip_entry(length, symbol);
                    table.skip.get_mut(range).ok_or_else(bad)?.fill(skip);
                }
                code += 1;
                index += 1;
            }
            if count > 0 {
                *table.max_code.get_mut(slot).ok_or_else(bad)? = code - 1;
            }
            if code > (1 << length) {
                return Err(bad());
            }
            code <<= 1;
        }
        Ok(table)
    }
}

/// Whether none of the 8 bytes of `word` is 0xFF.
#[inline]
fn no_ff_byte(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let inverted = !word; // 0xFF bytes become zero bytes
    inverted.wrapping_sub(ONES) & !inverted & HIGHS == 0
}

/// The entropy-coded bit stream: bytes with `FF 00` stuffing, ended by a marker.
#[derive(Debug)]
pub(super) struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    /// Bits are consumed from the top.
    buffer: u64,
    count: u32,
    /// Zero bits appended after the data ran out (a marker or the end of the file).
    padding: u32,
}

impl<'a> Bits<'a> {
    pub(super) fn new(data: &'a [u8], pos: usize) -> Bits<'a> {
        Bits {
            data,
            pos,
            buffer: 0,
            count: 0,
            padding: 0,
        }
    }

    /// Fills the buffer to more than 56 bits.
    #[inline]
    fn refill(&mut self) {
        // Fast path: the next 8 bytes hold no 0xFF (so no stuffing and no marker).
        if let Some(chunk) = self.data.get(self.pos..self.pos + 8)
            && let Ok(bytes) = <[u8; 8]>::try_from(chunk)
        {
            let word = u64::from_be_bytes(bytes);
            if no_ff_byte(word) {
                let take = (64 - self.count) / 8; // whole bytes that fit: 1..=8
                let incoming = word.checked_shr(64 - 8 * take).unwrap_or(0);
                self.buffer |= incoming
                    .checked_shl(64 - self.count - 8 * take)
                    .unwrap_or(0);
                self.count += 8 * take;
                self.pos += usize::try_from(take).unwrap_or(0);
                return;
            }
        }
        while self.count <= 56 {
            let byte = match self.data.get(self.pos) {
                Some(0xff) => {
                    if self.data.get(self.pos + 1) == Some(&0) {
                        self.pos += 2;
                        0xff
                    } else {
                        // A marker: leave it for the caller, pad with zeros.
                        self.padding += 8;
                        0
                    }
                }
                Some(&byte) => {
                    self.pos += 1;
                    byte
                }
                None => {
                    self.padding += 8;
                    0
                }
            };
            self.buffer |= u64::from(byte) << (56 - self.count);
            self.count += 8;
        }
    }

    /// The next `n` (1..=16) bits, not consumed. The buffer must hold at least `n`.
    #[inline]
    fn peek(&self, n: u32) -> u32 {
        u32::try_from(self.buffer >> (64 - n)).unwrap_or(0)
    }

    /// The table index of the next `LUT_BITS` bits.
    #[inline]
    fn peek_index(&self) -> usize {
        usize::try_from(self.buffer >> (64 - LUT_BITS)).unwrap_or(0) & (LUT_SIZE - 1)
    }

    #[inline]
    fn consume(&mut self, n: u32) {
        self.buffer = self.buffer.checked_shl(n).unwrap_or(0);
        self.count = self.count.saturating_sub(n);
    }

    /// Decodes one Huffman symbol.
    #[inline]
    pub(super) fn symbol(&mut self, table: &Huffman) -> Result<u8> {
        if self.count < 32 {
            self.refill();
        }
        let entry = table.lut.get(self.peek_index()).copied().unwrap_or(0);
        if entry != 0 {
            self.consume(u32::from(entry >> 8));
            return Ok(u8::try_from(entry & 0xff).unwrap_or(0));
        }
        self.slow_symbol(table)
    }

    /// A code longer than `LUT_BITS`.
    #[cold]
    fn slow_symbol(&mut self, table: &Huffman) -> Result<u8> {
        let bits = i32::try_from(self.peek(16)).unwrap_or(0);
        for length in (LUT_BITS + 1)..=16 {
            let slot = usize::try_from(length).unwrap_or(0);
            let code = bits >> (16 - length);
            let max = table.max_code.get(slot).copied().unwrap_or(-1);
            if code <= max {
                self.consume(length);
                let offset = table.first_index.get(slot).copied().unwrap_or(0) + code
                    - table.min_code.get(slot).copied().unwrap_or(0);
                return usize::try_from(offset)
                    .ok()
                    .and_then(|i| table.symbols.get(i))
                    .copied()
                    .ok_or(Unhandled("bad huffman code"));
            }
        }
        Err(Unhandled("bad huffman code"))
    }

    /// `n` (0..=16) raw bits as a signed value (T.81 F.2.2.1 EXTEND).
    #[inline]
    pub(super) fn receive_extend(&mut self, n: u32) -> i32 {
        if n == 0 {
            return 0;
        }
        if self.count < n {
            self.refill();
        }
        let value = i32::try_from(self.peek(n)).unwrap_or(0);
        self.consume(n);
        if value < 1 << (n - 1) {
            value - (1 << n) + 1
        } else {
            value
        }
    }

    /// Parses one block's AC coefficients without keeping them. The hot loop of the decoder: it
    /// works on local copies of the bit buffer so they stay in registers.
    #[inline]
    pub(super) fn skip_ac(&mut self, table: &Huffman) -> Result<()> {
        self.skip_ac_from(table, 1)
    }

    /// Decodes one block's AC coefficients at zig-zag positions 1, 2 and 4 (the natural
    /// positions (0,1), (1,0) and (1,1): with the DC value, what a 2x2 inverse DCT reads) and
    /// skips the rest, for the 1/4-size decode.
    #[inline]
    pub(super) fn low_ac(&mut self, table: &Huffman) -> Result<[i32; 3]> {
        let mut low = [0; 3];
        let mut k = 1_u32;
        while k <= 4 {
            let symbol = self.symbol(table)?;
            let (run, size) = (u32::from(symbol >> 4), u32::from(symbol & 15));
            if size == 0 {
                if run != 15 {
                    // End of block: every later coefficient is zero.
                    return Ok(low);
                }
                k += 16;
                continue;
            }
            k += run;
            let value = self.receive_extend(size);
            match k {
                1 => low[0] = value,
                2 => low[1] = value,
                4 => low[2] = value,
                64.. => return Err(Unhandled("bad AC run")),
                _ => {}
            }
            k += 1;
        }
        if k < 64 {
            self.skip_ac_from(table, k)?;
        }
        Ok(low)
    }

    /// [`Self::skip_ac`] from coefficient `k` on.
    #[inline]
    fn skip_ac_from(&mut self, table: &Huffman, mut k: u32) -> Result<()> {
        let mut buffer = self.buffer;
        let mut count = self.count;
        while k < 64 {
            if count < 32 {
                self.buffer = buffer;
                self.count = count;
                self.refill();
                buffer = self.buffer;
                count = self.count;
            }
            let index = usize::try_from(buffer >> (64 - LUT_BITS)).unwrap_or(0) & (LUT_SIZE - 1);
            let mut entry = table.skip.get(index).copied().unwrap_or(0);
            if entry == 0 {
                // A code longer than the table: decode it the slow way (its bits are consumed).
                self.buffer = buffer;
                self.count = count;
                entry = skip_entry(0, self.slow_symbol(table)?);
                buffer = self.buffer;
                count = self.count;
            }
            // At most 31 bits (a 16-bit code and 15 coefficient bits), and `count` is at least 32.
            let drop = u32::from(entry & 31);
            buffer <<= drop;
            count -= drop;
            if entry & SKIP_EOB != 0 {
                break;
            }
            k += u32::from((entry >> 5) & 31);
        }
        self.buffer = buffer;
        self.count = count;
        Ok(())
    }

    /// Whether more bits were consumed than the data held.
    pub(super) fn overran(&self) -> bool {
        self.count < self.padding
    }

    /// At the end of a restart interval: drops the partial byte and reads the RSTn marker.
    pub(super) fn restart(&mut self) -> Result<()> {
        if self.overran() {
            return Err(Unhandled("truncated scan"));
        }
        self.buffer = 0;
        self.count = 0;
        self.padding = 0;
        if self.data.get(self.pos) != Some(&0xff) {
            return Err(Unhandled("missing restart marker"));
        }
        while self.data.get(self.pos) == Some(&0xff) {
            self.pos += 1;
        }
        match self.data.get(self.pos) {
            Some(0xd0..=0xd7) => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(Unhandled("missing restart marker")),
        }
    }
}
