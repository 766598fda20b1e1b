//! Row images of a binlog rows event, decoded into cells: the native twin of `capture/row_decoder.py`.
//!
//! A `Layout` is built once per table map (the Python side describes each column: binlog type, metadata,
//! signedness and how its bytes become text). Decoding a row fills one `Cell` per table-map column and
//! renders the values that need text (DECIMAL, temporal types, padded BINARY) into a scratch buffer, so no
//! value allocates. Anything the Python decoder would do differently or refuse (a truncated row, a value the
//! Python arithmetic would render in an unusual way, text that is not valid UTF-8) stops decoding with
//! `Fallback`: the caller then lets the Python path handle the event, which produces its exact output or
//! its exact error.

use std::fmt::Write as _;

/// The caller must take the Python path for this event (never an error of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fallback;

pub type Res<T> = Result<T, Fallback>;

// Binlog column types (`capture/table_map.py`).
pub const T_TINY: u8 = 1;
pub const T_SHORT: u8 = 2;
pub const T_LONG: u8 = 3;
pub const T_FLOAT: u8 = 4;
pub const T_DOUBLE: u8 = 5;
pub const T_NULL: u8 = 6;
pub const T_TIMESTAMP: u8 = 7;
pub const T_LONGLONG: u8 = 8;
pub const T_INT24: u8 = 9;
pub const T_DATE: u8 = 10;
pub const T_TIME: u8 = 11;
pub const T_DATETIME: u8 = 12;
pub const T_YEAR: u8 = 13;
pub const T_NEWDATE: u8 = 14;
pub const T_VARCHAR: u8 = 15;
pub const T_BIT: u8 = 16;
pub const T_TIMESTAMP2: u8 = 17;
pub const T_DATETIME2: u8 = 18;
pub const T_TIME2: u8 = 19;
pub const T_JSON: u8 = 245;
pub const T_NEWDECIMAL: u8 = 246;
pub const T_ENUM: u8 = 247;
pub const T_SET: u8 = 248;
pub const T_TINY_BLOB: u8 = 249;
pub const T_MEDIUM_BLOB: u8 = 250;
pub const T_LONG_BLOB: u8 = 251;
pub const T_BLOB: u8 = 252;
pub const T_VAR_STRING: u8 = 253;
pub const T_STRING: u8 = 254;
pub const T_GEOMETRY: u8 = 255;

/// How a character column's bytes become its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// `bytes` in Python (charset binary).
    Bytes,
    /// UTF-8 (utf8mb3/utf8mb4); anything but valid UTF-8 falls back.
    Utf8,
    /// MySQL's latin1 (cp1252 with its five holes mapped to U+0081 etc., `charsets._latin1`).
    Latin1,
    /// The Python decoder of the column (other charsets, binary JSON, TIMESTAMP in a zone): a callback.
    Callback,
}

/// How many bytes a column's value takes, for columns decoded by a Python callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Fixed(usize),
    /// A little-endian length of this many bytes, then the value.
    Prefixed(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Int {
        size: usize,
        unsigned: bool,
    },
    Float,
    Double,
    Year,
    Decimal {
        precision: usize,
        scale: usize,
        size: usize,
    },
    Date,
    DateTime2 {
        fsp: usize,
    },
    Timestamp2 {
        fsp: usize,
    },
    Time2 {
        fsp: usize,
    },
    DateTime,
    Time,
    Timestamp,
    Bit {
        size: usize,
    },
    EnumSet {
        size: usize,
    },
    /// CHAR/VARCHAR: 1- or 2-byte length; BINARY(n) is padded with 0x00 to `pad`.
    Str {
        len_bytes: usize,
        kind: TextKind,
        pad: usize,
    },
    /// BLOB/TEXT/GEOMETRY: `len_bytes` little-endian length.
    Blob {
        len_bytes: usize,
        kind: TextKind,
    },
    Null,
    /// Decoded by the Python callback `callback` (a text value).
    Call {
        shape: Shape,
        callback: usize,
    },
}

/// What a column's value is in Python (the row decoder's type): decides which renderers may take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Int,
    Float,
    Double,
    Decimal,
    Text,
    Bytes,
    Null,
}

impl Reader {
    pub fn class(&self) -> Class {
        match self {
            Reader::Int { .. } | Reader::Year | Reader::Bit { .. } | Reader::EnumSet { .. } => Class::Int,
            Reader::Float => Class::Float,
            Reader::Double => Class::Double,
            Reader::Decimal { .. } => Class::Decimal,
            Reader::Date
            | Reader::DateTime2 { .. }
            | Reader::Timestamp2 { .. }
            | Reader::Time2 { .. }
            | Reader::DateTime
            | Reader::Time
            | Reader::Timestamp
            | Reader::Call { .. } => Class::Text,
            Reader::Str { kind, .. } | Reader::Blob { kind, .. } => {
                if *kind == TextKind::Bytes {
                    Class::Bytes
                } else {
                    Class::Text
                }
            }
            Reader::Null => Class::Null,
        }
    }
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// Bytes of a binary DECIMAL(precision, scale) (`values.decimal_size`).
pub fn decimal_size(precision: usize, scale: usize) -> usize {
    let intg = precision.saturating_sub(scale);
    (intg / 9) * 4 + DIG2BYTES[intg % 9] + (scale / 9) * 4 + DIG2BYTES[scale % 9]
}

fn frac_bytes(fsp: usize) -> usize {
    fsp.div_ceil(2)
}

/// The column description the Python side sends: (binlog type, meta0, meta1, unsigned, text kind, callback).
/// `meta0`/`meta1` are the table map's metadata (pack length, max length, (precision, scale), (bits, bytes),
/// fsp). Returns None for a type the Python decoder does not decode either (it raises then).
pub fn reader_for(
    typ: u8,
    meta0: usize,
    meta1: usize,
    unsigned: bool,
    kind: TextKind,
    callback: Option<usize>,
) -> Option<Reader> {
    if let Some(cb) = callback {
        let shape = match typ {
            T_TIMESTAMP2 => Shape::Fixed(4 + frac_bytes(meta0)),
            T_TIMESTAMP => Shape::Fixed(4),
            T_VARCHAR | T_VAR_STRING | T_STRING => Shape::Prefixed(if meta0 < 256 { 1 } else { 2 }),
            T_BLOB | T_JSON | T_TINY_BLOB | T_MEDIUM_BLOB | T_LONG_BLOB | T_GEOMETRY => {
                Shape::Prefixed(if meta0 == 0 { 4 } else { meta0 })
            }
            _ => return None,
        };
        if let Shape::Prefixed(n) = shape {
            if n > 4 {
                return None;
            }
        }
        return Some(Reader::Call { shape, callback: cb });
    }
    Some(match typ {
        T_TINY => Reader::Int { size: 1, unsigned },
        T_SHORT => Reader::Int { size: 2, unsigned },
        T_INT24 => Reader::Int { size: 3, unsigned },
        T_LONG => Reader::Int { size: 4, unsigned },
        T_LONGLONG => Reader::Int { size: 8, unsigned },
        T_FLOAT => Reader::Float,
        T_DOUBLE => Reader::Double,
        T_YEAR => Reader::Year,
        T_NEWDECIMAL => {
            if meta0 == 0 || meta0 > 65 || meta1 > meta0 {
                return None;
            }
            Reader::Decimal { precision: meta0, scale: meta1, size: decimal_size(meta0, meta1) }
        }
        T_DATE | T_NEWDATE => Reader::Date,
        T_DATETIME2 if meta0 <= 6 => Reader::DateTime2 { fsp: meta0 },
        T_TIMESTAMP2 if meta0 <= 6 => Reader::Timestamp2 { fsp: meta0 },
        T_TIME2 if meta0 <= 6 => Reader::Time2 { fsp: meta0 },
        T_DATETIME => Reader::DateTime,
        T_TIME => Reader::Time,
        T_TIMESTAMP => Reader::Timestamp,
        T_BIT => {
            // meta = (bits, bytes): (bytes * 8 + bits + 7) // 8 bytes, big-endian
            let size = (meta1 * 8 + meta0).div_ceil(8);
            if size > 8 {
                return None;
            }
            Reader::Bit { size }
        }
        T_ENUM | T_SET => {
            if meta0 == 0 || meta0 > 8 {
                return None;
            }
            Reader::EnumSet { size: meta0 }
        }
        T_VARCHAR | T_VAR_STRING | T_STRING => {
            let pad = if typ == T_STRING && kind == TextKind::Bytes { meta0 } else { 0 };
            Reader::Str { len_bytes: if meta0 < 256 { 1 } else { 2 }, kind, pad }
        }
        T_BLOB | T_TINY_BLOB | T_MEDIUM_BLOB | T_LONG_BLOB | T_GEOMETRY => {
            let len_bytes = if meta0 == 0 { 4 } else { meta0 };
            if len_bytes > 4 {
                return None;
            }
            let kind = if typ == T_GEOMETRY { TextKind::Bytes } else { kind };
            Reader::Blob { len_bytes, kind }
        }
        T_NULL => Reader::Null,
        _ => return None, // JSON needs its callback; old DECIMAL, VECTOR: the Python decoder refuses them too
    })
}

/// Where a span's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Src {
    Event,
    Scratch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub src: Src,
    pub start: usize,
    pub end: usize,
}

/// One decoded value. Text spans are valid UTF-8; `Dec` is the positional text of the absolute value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell {
    Null,
    I(i64),
    U(u64),
    F32(f32),
    F64(f64),
    Dec { neg: bool, text: Span },
    Str(Span),
    Bin(Span),
}

impl Cell {
    pub fn is_null(&self) -> bool {
        matches!(self, Cell::Null)
    }
}

/// A row's bytes: the event and the scratch buffer its rendered values live in.
pub struct Bufs<'a> {
    pub event: &'a [u8],
    pub scratch: &'a [u8],
}

impl Bufs<'_> {
    pub fn get(&self, s: Span) -> &[u8] {
        match s.src {
            Src::Event => &self.event[s.start..s.end],
            Src::Scratch => &self.scratch[s.start..s.end],
        }
    }
}

/// Whether two cells hold the same value, byte for byte (NULL equals NULL).
pub fn same_bytes(a: &Cell, b: &Cell, bufs_a: &Bufs<'_>, bufs_b: &Bufs<'_>) -> bool {
    match (a, b) {
        (Cell::Null, Cell::Null) => true,
        (Cell::I(x), Cell::I(y)) => x == y,
        (Cell::U(x), Cell::U(y)) => x == y,
        (Cell::F32(x), Cell::F32(y)) => x.to_bits() == y.to_bits(),
        (Cell::F64(x), Cell::F64(y)) => x.to_bits() == y.to_bits(),
        (Cell::Dec { neg: n1, text: t1 }, Cell::Dec { neg: n2, text: t2 }) => {
            n1 == n2 && bufs_a.get(*t1) == bufs_b.get(*t2)
        }
        (Cell::Str(x), Cell::Str(y)) | (Cell::Bin(x), Cell::Bin(y)) => bufs_a.get(*x) == bufs_b.get(*y),
        _ => false,
    }
}

/// Calls into Python for the columns a callback decodes: returns the value's UTF-8 text, or None to fall back.
pub trait Callbacks {
    fn text(&mut self, callback: usize, raw: &[u8], out: &mut Vec<u8>) -> Option<()>;
}

/// The table map's columns, in table-map order.
#[derive(Debug, Clone)]
pub struct Layout {
    pub readers: Vec<Reader>,
}

/// The rows part of a rows event: where the rows start, and which columns each image holds.
pub struct RowsHeader {
    pub pos: usize,
    pub present: Vec<bool>,
    pub present_after: Vec<bool>,
}

fn lenenc_int(b: &[u8], p: usize) -> Res<(u64, usize)> {
    let first = *b.get(p).ok_or(Fallback)?;
    let (n, width) = match first {
        0..=0xfa => return Ok((first as u64, p + 1)),
        0xfc => (2, 3),
        0xfd => (3, 4),
        0xfe => (8, 9),
        _ => return Err(Fallback),
    };
    let bytes = b.get(p + 1..p + 1 + n).ok_or(Fallback)?;
    let mut v = 0u64;
    for (i, x) in bytes.iter().enumerate() {
        v |= (*x as u64) << (8 * i);
    }
    Ok((v, p + width))
}

fn bits_of(b: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|i| b[i >> 3] & (1 << (i & 7)) != 0).collect()
}

impl Layout {
    /// Reads the column count and the column-presence bitmaps (two for UPDATE events). `start` is where the
    /// column count is (as `RowDecoder.decode_rows`).
    pub fn header(&self, ev: &[u8], start: usize, update: bool) -> Res<RowsHeader> {
        let (ncols, mut p) = lenenc_int(ev, start)?;
        if ncols as usize != self.readers.len() {
            return Err(Fallback);
        }
        let n = self.readers.len();
        let nbytes = n.div_ceil(8);
        let present = bits_of(ev.get(p..p + nbytes).ok_or(Fallback)?, n);
        p += nbytes;
        let present_after = if update {
            let after = bits_of(ev.get(p..p + nbytes).ok_or(Fallback)?, n);
            p += nbytes;
            after
        } else {
            present.clone()
        };
        Ok(RowsHeader { pos: p, present, present_after })
    }

    /// Decodes one row image at `*pos` (ending before `end`) into `cells` (one per table-map column; absent
    /// columns are NULL), rendering text into `scratch` (appended to, never cleared here).
    #[allow(clippy::too_many_arguments)]
    pub fn decode_image(
        &self,
        ev: &[u8],
        pos: &mut usize,
        end: usize,
        present: &[bool],
        cells: &mut Vec<Cell>,
        scratch: &mut Vec<u8>,
        cb: &mut dyn Callbacks,
    ) -> Res<()> {
        let ev = ev.get(..end).ok_or(Fallback)?;
        let count = present.iter().filter(|x| **x).count();
        let nb = count.div_ceil(8);
        let nulls = ev.get(*pos..*pos + nb).ok_or(Fallback)?;
        let mut p = *pos + nb;
        cells.clear();
        let mut j = 0usize;
        for (i, reader) in self.readers.iter().enumerate() {
            if !present[i] {
                cells.push(Cell::Null);
                continue;
            }
            let null = nulls[j >> 3] & (1 << (j & 7)) != 0;
            j += 1;
            if null {
                cells.push(Cell::Null);
                continue;
            }
            cells.push(read(reader, ev, &mut p, scratch, cb)?);
        }
        *pos = p;
        Ok(())
    }
}

fn take<'a>(ev: &'a [u8], p: &mut usize, n: usize) -> Res<&'a [u8]> {
    let s = ev.get(*p..*p + n).ok_or(Fallback)?;
    *p += n;
    Ok(s)
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, x| (acc << 8) | *x as u64)
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, x| (acc << 8) | *x as u64)
}

fn scratch_span(scratch: &[u8], start: usize) -> Span {
    Span { src: Src::Scratch, start, end: scratch.len() }
}

fn read(r: &Reader, ev: &[u8], p: &mut usize, scratch: &mut Vec<u8>, cb: &mut dyn Callbacks) -> Res<Cell> {
    Ok(match *r {
        Reader::Int { size, unsigned } => {
            let v = le(take(ev, p, size)?);
            if unsigned {
                Cell::U(v)
            } else {
                let shift = 64 - 8 * size as u32;
                Cell::I(((v << shift) as i64) >> shift)
            }
        }
        Reader::Float => Cell::F32(f32::from_le_bytes(take(ev, p, 4)?.try_into().map_err(|_| Fallback)?)),
        Reader::Double => Cell::F64(f64::from_le_bytes(take(ev, p, 8)?.try_into().map_err(|_| Fallback)?)),
        Reader::Year => {
            let v = take(ev, p, 1)?[0] as i64;
            Cell::I(if v != 0 { v + 1900 } else { 0 })
        }
        Reader::Bit { size } => Cell::U(be(take(ev, p, size)?)),
        Reader::EnumSet { size } => Cell::U(le(take(ev, p, size)?)),
        Reader::Decimal { precision, scale, size } => {
            let raw = take(ev, p, size)?;
            let start = scratch.len();
            let neg = decimal_text(raw, precision, scale, scratch)?;
            Cell::Dec { neg, text: scratch_span(scratch, start) }
        }
        Reader::Date => {
            let x = le(take(ev, p, 3)?);
            let start = scratch.len();
            pad(scratch, x >> 9, 4);
            scratch.push(b'-');
            pad(scratch, (x >> 5) & 15, 2);
            scratch.push(b'-');
            pad(scratch, x & 31, 2);
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::DateTime2 { fsp } => {
            let fb = frac_bytes(fsp);
            let x = be(take(ev, p, 5 + fb)?);
            let packed = x >> (8 * fb);
            if packed < 0x80_0000_0000 {
                return Err(Fallback); // the Python decoder's arithmetic would go negative
            }
            let y = packed - 0x80_0000_0000;
            let start = scratch.len();
            let ymd = y >> 17;
            let ym = ymd >> 5;
            let hms = y & 0x1FFFF;
            date_time(scratch, [ym / 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63]);
            if fsp > 0 {
                let scale = match fb {
                    1 => 10000,
                    2 => 100,
                    _ => 1,
                };
                let frac = (x & ((1u64 << (8 * fb)) - 1)) * scale / 10u64.pow(6 - fsp as u32);
                scratch.push(b'.');
                pad(scratch, frac, fsp);
            }
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::Timestamp2 { fsp } => {
            let sec = be(take(ev, p, 4)?);
            let fb = frac_bytes(fsp);
            let f = take(ev, p, fb)?;
            let micro = match fsp {
                0 => 0,
                1 | 2 => f[0] as u64 * 10000,
                3 | 4 => (((f[0] as u64) << 8) | f[1] as u64) * 100,
                _ => ((f[0] as u64) << 16) | ((f[1] as u64) << 8) | f[2] as u64,
            };
            let start = scratch.len();
            if sec == 0 && micro == 0 {
                scratch.extend_from_slice(b"0000-00-00 00:00:00");
            } else {
                utc_text(sec as i64, scratch);
            }
            frac_text(micro, fsp, scratch);
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::Time2 { fsp } => {
            let fb = frac_bytes(fsp);
            let raw = be(take(ev, p, 3 + fb)?) as i64;
            let v = raw - (0x80_0000i64 << (8 * fb));
            let neg = v < 0;
            let a = v.unsigned_abs();
            let hms = a >> (8 * fb);
            let frac_raw = a & ((1u64 << (8 * fb)) - 1);
            let micro = match fb {
                0 => 0,
                1 => frac_raw * 10000,
                2 => frac_raw * 100,
                _ => frac_raw,
            };
            let start = scratch.len();
            if neg {
                scratch.push(b'-');
            }
            clock(scratch, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63);
            frac_text(micro, fsp, scratch);
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::DateTime => {
            let v = le(take(ev, p, 8)?);
            let (d, t) = (v / 1_000_000, v % 1_000_000);
            let start = scratch.len();
            date_time(scratch, [d / 10000, d / 100 % 100, d % 100, t / 10000, t / 100 % 100, t % 100]);
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::Time => {
            let raw = le(take(ev, p, 3)?);
            let v = ((raw << 40) as i64) >> 40;
            let a = v.unsigned_abs();
            let start = scratch.len();
            if v < 0 {
                scratch.push(b'-');
            }
            clock(scratch, a / 10000, a / 100 % 100, a % 100);
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::Timestamp => {
            let sec = le(take(ev, p, 4)?);
            let start = scratch.len();
            if sec == 0 {
                scratch.extend_from_slice(b"0000-00-00 00:00:00");
            } else {
                utc_text(sec as i64, scratch);
            }
            Cell::Str(scratch_span(scratch, start))
        }
        Reader::Str { len_bytes, kind, pad } => {
            let n = le(take(ev, p, len_bytes)?) as usize;
            let raw = take(ev, p, n)?;
            if kind == TextKind::Bytes && n < pad {
                let start = scratch.len();
                scratch.extend_from_slice(raw);
                scratch.resize(start + pad, 0);
                Cell::Bin(scratch_span(scratch, start))
            } else {
                text_cell(kind, raw, *p - n, scratch)?
            }
        }
        Reader::Blob { len_bytes, kind } => {
            let n = le(take(ev, p, len_bytes)?) as usize;
            let raw = take(ev, p, n)?;
            text_cell(kind, raw, *p - n, scratch)?
        }
        Reader::Null => Cell::Null,
        Reader::Call { shape, callback } => {
            let raw = match shape {
                Shape::Fixed(n) => take(ev, p, n)?,
                Shape::Prefixed(lb) => {
                    let n = le(take(ev, p, lb)?) as usize;
                    take(ev, p, n)?
                }
            };
            let start = scratch.len();
            cb.text(callback, raw, scratch).ok_or(Fallback)?;
            Cell::Str(scratch_span(scratch, start))
        }
    })
}

fn text_cell(kind: TextKind, raw: &[u8], at: usize, scratch: &mut Vec<u8>) -> Res<Cell> {
    let span = Span { src: Src::Event, start: at, end: at + raw.len() };
    Ok(match kind {
        TextKind::Bytes => Cell::Bin(span),
        TextKind::Utf8 => {
            if std::str::from_utf8(raw).is_err() {
                return Err(Fallback); // surrogate-escaped text: each protocol has its own rule, left to Python
            }
            Cell::Str(span)
        }
        TextKind::Latin1 => {
            if raw.is_ascii() {
                Cell::Str(span)
            } else {
                let start = scratch.len();
                latin1_to_utf8(raw, scratch);
                Cell::Str(scratch_span(scratch, start))
            }
        }
        TextKind::Callback => return Err(Fallback),
    })
}

/// cp1252 for 0x80..0x9F; the five bytes cp1252 leaves undefined map to U+0081 etc. (MySQL's latin1).
const CP1252_HIGH: [u16; 32] = [
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D,
    0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A,
    0x0153, 0x009D, 0x017E, 0x0178,
];

fn latin1_to_utf8(raw: &[u8], out: &mut Vec<u8>) {
    let mut buf = [0u8; 4];
    for &b in raw {
        let c = if (0x80..0xA0).contains(&b) { CP1252_HIGH[(b - 0x80) as usize] as u32 } else { b as u32 };
        let ch = char::from_u32(c).unwrap_or('\u{FFFD}');
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
}

/// `"." + ("%06d" % micro)[:fsp]`, nothing for fsp 0 (`values._frac_text`).
fn frac_text(micro: u64, fsp: usize, out: &mut Vec<u8>) {
    if fsp == 0 {
        return;
    }
    let mut digits = Vec::with_capacity(8);
    pad(&mut digits, micro, 6);
    out.push(b'.');
    out.extend_from_slice(&digits[..fsp.min(digits.len())]);
}

/// `YYYY-MM-DD HH:MM:SS` of a Unix time in UTC.
fn utc_text(sec: i64, out: &mut Vec<u8>) {
    let days = sec.div_euclid(86400);
    let rem = sec.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(Sink(out), "{:04}-{:02}-{:02} {:02}:{:02}:{:02}", y, m, d, rem / 3600, rem / 60 % 60, rem % 60);
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A fixed buffer the DECIMAL digits are collected in (no allocation per value).
struct Buf<'a> {
    data: &'a mut [u8; 72],
    len: usize,
}

impl Buf<'_> {
    fn extend_from_slice(&mut self, s: &[u8]) {
        self.data[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
    }
}

/// Binary DECIMAL -> positional text of its absolute value with exactly `scale` fraction digits; returns
/// whether it is negative (and not zero). A digit group beyond its digits falls back (the Python arithmetic
/// would carry it into the next group).
fn decimal_text(raw: &[u8], precision: usize, scale: usize, out: &mut Vec<u8>) -> Res<bool> {
    let mut b = [0u8; 32];
    let b = &mut b[..raw.len()];
    b.copy_from_slice(raw);
    let positive = b[0] & 0x80 != 0;
    if !positive {
        for x in b.iter_mut() {
            *x = !*x;
        }
    }
    b[0] &= 0x7f;
    let intg = precision - scale;
    let mut digits_buf = [0u8; 72];
    let mut digits = Buf { data: &mut digits_buf, len: 0 };
    let mut q = 0usize;
    let mut group = |n_bytes: usize, n_digits: usize, digits: &mut Buf<'_>| -> Res<()> {
        let v = be(&b[q..q + n_bytes]);
        q += n_bytes;
        if v >= 10u64.pow(n_digits as u32) {
            return Err(Fallback);
        }
        let mut s = [b'0'; 9];
        let mut v = v;
        for k in (0..n_digits).rev() {
            s[k] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        digits.extend_from_slice(&s[..n_digits]);
        Ok(())
    };
    if !intg.is_multiple_of(9) {
        group(DIG2BYTES[intg % 9], intg % 9, &mut digits)?;
    }
    for _ in 0..intg / 9 {
        group(4, 9, &mut digits)?;
    }
    for _ in 0..scale / 9 {
        group(4, 9, &mut digits)?;
    }
    if !scale.is_multiple_of(9) {
        group(DIG2BYTES[scale % 9], scale % 9, &mut digits)?;
    }
    let digits = &digits.data[..digits.len];
    let (int_digits, frac_digits) = digits.split_at(intg);
    let first = int_digits.iter().position(|d| *d != b'0').unwrap_or(int_digits.len());
    if first == int_digits.len() {
        out.push(b'0');
    } else {
        out.extend_from_slice(&int_digits[first..]);
    }
    if scale > 0 {
        out.push(b'.');
        out.extend_from_slice(frac_digits);
    }
    let zero = digits.iter().all(|d| *d == b'0');
    Ok(!positive && !zero)
}

/// `v` in decimal, zero-padded to at least `width` digits (`"%0<width>d"`).
pub fn pad(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(buf.len() - width.min(buf.len()));
    out.extend_from_slice(&buf[start..]);
}

/// `YYYY-MM-DD HH:MM:SS` from its parts (`"%04d-%02d-%02d %02d:%02d:%02d"`).
fn date_time(out: &mut Vec<u8>, parts: [u64; 6]) {
    pad(out, parts[0], 4);
    out.push(b'-');
    pad(out, parts[1], 2);
    out.push(b'-');
    pad(out, parts[2], 2);
    out.push(b' ');
    clock(out, parts[3], parts[4], parts[5]);
}

fn clock(out: &mut Vec<u8>, h: u64, m: u64, s: u64) {
    pad(out, h, 2);
    out.push(b':');
    pad(out, m, 2);
    out.push(b':');
    pad(out, s, 2);
}

/// `fmt::Write` into a byte vector.
pub struct Sink<'a>(pub &'a mut Vec<u8>);

impl std::fmt::Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoCallbacks;

    impl Callbacks for NoCallbacks {
        fn text(&mut self, _callback: usize, _raw: &[u8], _out: &mut Vec<u8>) -> Option<()> {
            None
        }
    }

    /// Decodes `values` (a row without its NULL bitmap: no NULLs); spans index `bitmap + values`.
    fn decode(readers: Vec<Reader>, values: &[u8]) -> (Vec<Cell>, Vec<u8>) {
        let mut row = vec![0u8; readers.len().div_ceil(8)];
        row.extend_from_slice(values);
        let row = &row[..];
        let layout = Layout { readers };
        let present = vec![true; layout.readers.len()];
        let mut cells = Vec::new();
        let mut scratch = Vec::new();
        let mut pos = 0;
        layout.decode_image(row, &mut pos, row.len(), &present, &mut cells, &mut scratch, &mut NoCallbacks).unwrap();
        assert_eq!(pos, row.len());
        (cells, scratch)
    }

    fn text(cell: &Cell, values: &[u8], scratch: &[u8]) -> String {
        let mut row = vec![0u8; 1];
        row.extend_from_slice(values);
        let bufs = Bufs { event: &row, scratch };
        match cell {
            Cell::Str(s) | Cell::Bin(s) => String::from_utf8(bufs.get(*s).to_vec()).unwrap(),
            Cell::Dec { neg, text } => {
                format!("{}{}", if *neg { "-" } else { "" }, std::str::from_utf8(bufs.get(*text)).unwrap())
            }
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn integers_sign_extend() {
        let row = [0xffu8, 0xfe, 0xff, 0xff, 0x80];
        let (cells, _) = decode(
            vec![
                Reader::Int { size: 1, unsigned: false },
                Reader::Int { size: 3, unsigned: false },
                Reader::Int { size: 1, unsigned: true },
            ],
            &row,
        );
        assert_eq!(cells, vec![Cell::I(-1), Cell::I(-2), Cell::U(0x80)]);
    }

    #[test]
    fn nulls_and_absent_columns() {
        let layout = Layout { readers: vec![Reader::Int { size: 1, unsigned: false }; 3] };
        let row = [0b10u8, 7, 9];
        let mut cells = Vec::new();
        let mut scratch = Vec::new();
        let mut pos = 0;
        layout
            .decode_image(&row, &mut pos, row.len(), &[true, true, true], &mut cells, &mut scratch, &mut NoCallbacks)
            .unwrap();
        assert_eq!(cells, vec![Cell::I(7), Cell::Null, Cell::I(9)]);
        let row = [0u8, 5];
        let mut pos = 0;
        layout
            .decode_image(&row, &mut pos, row.len(), &[false, true, false], &mut cells, &mut scratch, &mut NoCallbacks)
            .unwrap();
        assert_eq!(cells, vec![Cell::Null, Cell::I(5), Cell::Null]);
    }

    #[test]
    fn truncated_row_falls_back() {
        let layout = Layout { readers: vec![Reader::Int { size: 4, unsigned: false }] };
        let row = [0u8, 1, 2];
        let mut pos = 0;
        let r =
            layout.decode_image(&row, &mut pos, row.len(), &[true], &mut Vec::new(), &mut Vec::new(), &mut NoCallbacks);
        assert_eq!(r, Err(Fallback));
    }

    #[test]
    fn decimal_text_keeps_scale_and_sign() {
        // DECIMAL(10,2) 1234567.89: intg 8 -> 4 bytes (8 digits), scale 2 -> 1 byte
        let mut raw = vec![0x80u8, 0x12, 0xD6, 0x87, 89];
        raw[0] |= 0x00;
        let mut out = Vec::new();
        assert!(!decimal_text(&raw, 10, 2, &mut out).unwrap());
        assert_eq!(out, b"1234567.89");
        let neg: Vec<u8> = raw.iter().map(|x| !x).collect();
        let mut out = Vec::new();
        assert!(decimal_text(&neg, 10, 2, &mut out).unwrap());
        assert_eq!(out, b"1234567.89");
        let zero = [0x80u8, 0, 0, 0, 0];
        let mut out = Vec::new();
        assert!(!decimal_text(&zero, 10, 2, &mut out).unwrap());
        assert_eq!(out, b"0.00");
        let over = [0x80u8, 0, 0, 0, 200];
        assert_eq!(decimal_text(&over, 10, 2, &mut Vec::new()), Err(Fallback));
    }

    #[test]
    fn temporal_text() {
        // DATETIME2(3) 2024-02-29 13:45:07.123
        let ymd: u64 = ((2024 * 13 + 2) << 5) | 29;
        let hms: u64 = (13 << 12) | (45 << 6) | 7;
        let packed = (((ymd << 17) | hms) + 0x80_0000_0000) << 16 | 1230;
        let row: Vec<u8> = packed.to_be_bytes()[1..].to_vec();
        let (cells, scratch) = decode(vec![Reader::DateTime2 { fsp: 3 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "2024-02-29 13:45:07.123");
        let row = 1_700_000_000u32.to_be_bytes();
        let (cells, scratch) = decode(vec![Reader::Timestamp2 { fsp: 0 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "2023-11-14 22:13:20");
        let row = [0u8, 0, 0, 0, 0];
        let (cells, scratch) = decode(vec![Reader::Timestamp2 { fsp: 2 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "0000-00-00 00:00:00.00");
        // TIME2(0) -838:59:59
        let hms: i64 = (838 << 12) | (59 << 6) | 59;
        let row: Vec<u8> = ((0x80_0000 - hms) as u32).to_be_bytes()[1..].to_vec();
        let (cells, scratch) = decode(vec![Reader::Time2 { fsp: 0 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "-838:59:59");
    }

    #[test]
    fn latin1_maps_cp1252_and_its_holes() {
        let row = [3u8, 0x80, 0x81, 0xe9];
        let (cells, scratch) = decode(vec![Reader::Str { len_bytes: 1, kind: TextKind::Latin1, pad: 0 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "\u{20ac}\u{81}\u{e9}");
    }

    #[test]
    fn binary_char_is_padded_and_bad_utf8_falls_back() {
        let row = [2u8, b'a', b'b'];
        let (cells, scratch) = decode(vec![Reader::Str { len_bytes: 1, kind: TextKind::Bytes, pad: 4 }], &row);
        assert_eq!(text(&cells[0], &row, &scratch), "ab\0\0");
        let layout = Layout { readers: vec![Reader::Str { len_bytes: 1, kind: TextKind::Utf8, pad: 0 }] };
        let row = [0u8, 1, 0xff];
        let mut pos = 0;
        let r =
            layout.decode_image(&row, &mut pos, row.len(), &[true], &mut Vec::new(), &mut Vec::new(), &mut NoCallbacks);
        assert_eq!(r, Err(Fallback));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19782), (2024, 2, 29));
        assert_eq!(civil_from_days(49710), (2106, 2, 7));
    }
}
