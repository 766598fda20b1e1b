//! Text rendering shared by the protocols: JSON string escaping (Go's rules), numbers, base64, hex, SQL and
//! Python literals. Each function appends to a byte buffer and reproduces one Python reference function,
//! named in its doc comment.

use std::fmt::Write as _;

use crate::layout::Sink;

/// Which escapes a JSON writer uses for BS and FF: canal-json's easyjson writes `\u0008`/`\u000c`
/// (`canal_json.plan.go_fix`), Go's encoding/json as the simple protocol uses writes `\b`/`\f`
/// (`simple.message.go_json_dumps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Json {
    Canal,
    Go,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Bytes a JSON string cannot hold as they are: controls, `"`, `\\`, the HTML-unsafe `<`, `>`, `&`, and 0xE2
/// (the lead byte of U+2028/U+2029, checked further).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xe2] = true;
    t
};

/// A JSON string literal of valid UTF-8 `s`: orjson's escapes, then Go's HTML-safe ones (`<`, `>`, `&`,
/// U+2028, U+2029) and the BS/FF spelling of `mode`.
pub fn json_str(out: &mut Vec<u8>, s: &[u8], mode: Json) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut last = 0;
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if !SPECIAL[b as usize] {
            i += 1;
            continue;
        }
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => {
                if mode == Json::Canal {
                    b"\\u0008"
                } else {
                    b"\\b"
                }
            }
            0x0c => {
                if mode == Json::Canal {
                    b"\\u000c"
                } else {
                    b"\\f"
                }
            }
            b'<' => b"\\u003c",
            b'>' => b"\\u003e",
            b'&' => b"\\u0026",
            0xe2 => {
                if s.get(i + 1) == Some(&0x80) && matches!(s.get(i + 2), Some(0xa8) | Some(0xa9)) {
                    out.extend_from_slice(&s[last..i]);
                    out.extend_from_slice(if s[i + 2] == 0xa8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    last = i;
                } else {
                    i += 1;
                }
                continue;
            }
            _ => {
                out.extend_from_slice(&s[last..i]);
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
                i += 1;
                last = i;
                continue;
            }
        };
        out.extend_from_slice(&s[last..i]);
        out.extend_from_slice(esc);
        i += 1;
        last = i;
    }
    out.extend_from_slice(&s[last..]);
    out.push(b'"');
}

/// A JSON string of bytes read as ISO-8859-1 (`bytes.decode("latin-1")`): each byte is one code point.
pub fn json_latin1(out: &mut Vec<u8>, s: &[u8], mode: Json) {
    if s.is_ascii() {
        return json_str(out, s, mode);
    }
    let mut utf8 = Vec::with_capacity(s.len() * 2);
    for &b in s {
        if b < 0x80 {
            utf8.push(b);
        } else {
            utf8.push(0xc0 | (b >> 6));
            utf8.push(0x80 | (b & 0x3f));
        }
    }
    json_str(out, &utf8, mode);
}

pub fn int(out: &mut Vec<u8>, v: i64) {
    let mut buf = itoa_buf();
    out.extend_from_slice(fmt_i64(&mut buf, v));
}

pub fn uint(out: &mut Vec<u8>, v: u64) {
    let mut buf = itoa_buf();
    out.extend_from_slice(fmt_u64(&mut buf, v));
}

fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

fn fmt_u64(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

fn fmt_i64(buf: &mut [u8; 20], v: i64) -> &[u8] {
    if v >= 0 {
        return fmt_u64(buf, v as u64);
    }
    let mut tmp = [0u8; 20];
    let digits = fmt_u64(&mut tmp, v.unsigned_abs());
    let n = digits.len();
    buf[0] = b'-';
    buf[1..=n].copy_from_slice(digits);
    &buf[..=n]
}

/// Go `FormatFloat(v, 'f', -1, 64)` (`canal_json.values.f64_text`, `simple.values.float64_text`): shortest
/// round-trip digits, positional. None for NaN and infinities (left to Python).
pub fn f64_positional(out: &mut Vec<u8>, v: f64) -> Option<()> {
    if !v.is_finite() {
        return None;
    }
    signed_positional(out, v.is_sign_negative(), shortest(ryu::Buffer::new().format_finite(v)));
    Some(())
}

/// Go `FormatFloat(float32(v), 'f', -1, 32)` (`canal_json.values.f32_text`, `simple.values.float32_text`).
pub fn f32_positional(out: &mut Vec<u8>, v: f32) -> Option<()> {
    if !v.is_finite() {
        return None;
    }
    signed_positional(out, v.is_sign_negative(), shortest(ryu::Buffer::new().format_finite(v)));
    Some(())
}

/// `-` for a negative value (`-0` too, as Go prints it), then the digits positionally.
fn signed_positional(out: &mut Vec<u8>, negative: bool, (digits, exp): (String, i32)) {
    if negative {
        out.push(b'-');
    }
    positional(out, &digits, exp);
}

/// Shortest round-trip digits (no leading or trailing zeros) and the decimal exponent of the first digit, from
/// ryu's rendering of a finite value (its sign ignored). Ryu is the algorithm of Go's `strconv`, Python's `repr`
/// and orjson: where two shortest digit strings are equally near the value (562949953421312.25 -> `.2` or `.3`)
/// all of them take the even one, which Rust's own `Display` does not (it gives `.3`).
fn shortest(text: &str) -> (String, i32) {
    let text = text.trim_start_matches('-');
    let (mantissa, exp) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = int.chars().chain(frac.chars()).collect();
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all[lead..].trim_end_matches('0');
    if digits.is_empty() {
        return ("0".to_string(), 0);
    }
    (digits.to_string(), int.len() as i32 + exp - lead as i32 - 1)
}

/// Go `%v` of a float (`gofmt.go_float_v`, CSV's float rendering): exponent form below 1e-4 and from 1e6 on.
pub fn go_float_v(out: &mut Vec<u8>, v: f64, bits32: bool) -> Option<()> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
        return Some(());
    }
    if v < 0.0 {
        out.push(b'-');
    }
    let a = v.abs();
    let (digits, exp) = if bits32 {
        shortest(ryu::Buffer::new().format_finite(a as f32))
    } else {
        shortest(ryu::Buffer::new().format_finite(a))
    };
    if !(-4..6).contains(&exp) {
        out.push(digits.as_bytes()[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        let _ = write!(Sink(out), "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        positional(out, &digits, exp);
    }
    Some(())
}

fn positional(out: &mut Vec<u8>, digits: &str, exp: i32) {
    let point = exp + 1;
    let d = digits.as_bytes();
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(d);
    } else if point as usize >= d.len() {
        out.extend_from_slice(d);
        out.extend(std::iter::repeat_n(b'0', point as usize - d.len()));
    } else {
        out.extend_from_slice(&d[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&d[point as usize..]);
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard padded base64 (`binascii.b2a_base64(v, newline=False)`).
pub fn base64(out: &mut Vec<u8>, s: &[u8]) {
    let mut chunks = s.chunks_exact(3);
    for c in &mut chunks {
        let n = (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32;
        out.extend_from_slice(&[
            B64[(n >> 18) as usize & 63],
            B64[(n >> 12) as usize & 63],
            B64[(n >> 6) as usize & 63],
            B64[n as usize & 63],
        ]);
    }
    match chunks.remainder() {
        [a] => {
            let n = (*a as u32) << 16;
            out.extend_from_slice(&[B64[(n >> 18) as usize & 63], B64[(n >> 12) as usize & 63], b'=', b'=']);
        }
        [a, b] => {
            let n = (*a as u32) << 16 | (*b as u32) << 8;
            out.extend_from_slice(&[
                B64[(n >> 18) as usize & 63],
                B64[(n >> 12) as usize & 63],
                B64[(n >> 6) as usize & 63],
                b'=',
            ]);
        }
        _ => {}
    }
}

/// Lower-case hex (`bytes.hex()`).
pub fn hex(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Python `str(Decimal)` of a decoded DECIMAL (`Decimal("<unscaled>e-<scale>")`), given the positional text
/// of its absolute value: plain unless the adjusted exponent is below -6, then `1.23E-8` (`decimal.__str__`).
pub fn py_decimal_str(out: &mut Vec<u8>, neg: bool, positional_text: &[u8], scale: usize) {
    let digits: Vec<u8> = positional_text.iter().copied().filter(|c| *c != b'.').collect();
    let first = digits.iter().position(|d| *d != b'0').unwrap_or(digits.len() - 1);
    let coeff = &digits[first..];
    let exp = -(scale as i64);
    let leftdigits = exp + coeff.len() as i64;
    if neg {
        out.push(b'-');
    }
    if leftdigits > -6 {
        // plain: exactly the positional text (scale fraction digits)
        out.extend_from_slice(positional_text);
        return;
    }
    out.push(coeff[0]);
    if coeff.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(&coeff[1..]);
    }
    let _ = write!(Sink(out), "E{:+}", leftdigits - 1);
}

/// A SQL string literal (`sql_values._text`): quoted, with MySQL's backslash escapes.
pub fn sql_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'\'');
    for &b in s {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\'' => out.extend_from_slice(b"\\'"),
            0 => out.extend_from_slice(b"\\0"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x1a => out.extend_from_slice(b"\\Z"),
            b'"' => out.extend_from_slice(b"\\\""),
            _ => out.push(b),
        }
    }
    out.push(b'\'');
}

/// A SQL hex literal of bytes (`sql_values._bytes`): `X'…'`, or `''` when empty.
pub fn sql_bytes(out: &mut Vec<u8>, s: &[u8]) {
    if s.is_empty() {
        out.extend_from_slice(b"''");
        return;
    }
    out.extend_from_slice(b"X'");
    hex(out, s);
    out.push(b'\'');
}

/// Python `repr(str)` of an ASCII string; None when it holds other characters (printability of non-ASCII
/// characters needs the Unicode database: left to Python).
pub fn py_repr_str(out: &mut Vec<u8>, s: &[u8]) -> Option<()> {
    if !s.is_ascii() {
        return None;
    }
    py_repr_quoted(out, s, false);
    Some(())
}

/// Python `repr(bytes)`: `b'…'`.
pub fn py_repr_bytes(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'b');
    py_repr_quoted(out, s, true);
}

fn py_repr_quoted(out: &mut Vec<u8>, s: &[u8], bytes: bool) {
    let quote = if s.contains(&b'\'') && !s.contains(&b'"') { b'"' } else { b'\'' };
    out.push(quote);
    for &b in s {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ if b == quote => {
                out.push(b'\\');
                out.push(b);
            }
            0x20..=0x7e => out.push(b),
            _ if !bytes && b >= 0x80 => out.push(b),
            _ => {
                out.extend_from_slice(b"\\x");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
        }
    }
    out.push(quote);
}

/// Python `repr(float)`: shortest round-trip digits, positional with at least one fraction digit from 1e-4
/// up to 1e16, else `1e+16` / `1.5e-05`. None for NaN and infinities.
pub fn py_float_repr(out: &mut Vec<u8>, v: f64) -> Option<()> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return Some(());
    }
    if v < 0.0 {
        out.push(b'-');
    }
    let (digits, exp) = shortest(ryu::Buffer::new().format_finite(v.abs()));
    if (-4..16).contains(&exp) {
        let before = out.len();
        positional(out, &digits, exp);
        if !out[before..].contains(&b'.') {
            out.extend_from_slice(b".0");
        }
    } else {
        out.push(digits.as_bytes()[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        let _ = write!(Sink(out), "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    Some(())
}

/// `zlib.crc32` (CRC-32/IEEE).
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_escapes_like_orjson_then_go() {
        let text = "a\"b\\c\n\t\u{8}\u{c}\u{1}<>&\u{2028}é\u{7f}";
        assert_eq!(
            s(|o| json_str(o, text.as_bytes(), Json::Canal)),
            "\"a\\\"b\\\\c\\n\\t\\u0008\\u000c\\u0001\\u003c\\u003e\\u0026\\u2028é\u{7f}\""
        );
        assert_eq!(s(|o| json_str(o, "\u{8}\u{c}\u{2029}".as_bytes(), Json::Go)), "\"\\b\\f\\u2029\"");
        assert_eq!(s(|o| json_latin1(o, &[0x41, 0xe6, 0x8b, 0x3c], Json::Canal)), "\"Aæ\u{8b}\\u003c\"");
    }

    #[test]
    fn numbers() {
        assert_eq!(s(|o| int(o, i64::MIN)), "-9223372036854775808");
        assert_eq!(s(|o| uint(o, u64::MAX)), "18446744073709551615");
        assert_eq!(s(|o| int(o, 0)), "0");
        assert_eq!(s(|o| f64_positional(o, 1e20).unwrap()), "100000000000000000000");
        assert_eq!(s(|o| f64_positional(o, -0.0).unwrap()), "-0");
        assert_eq!(s(|o| f64_positional(o, 1.0).unwrap()), "1");
        assert_eq!(s(|o| f32_positional(o, 0.1).unwrap()), "0.1");
        assert!(f64_positional(&mut Vec::new(), f64::NAN).is_none());
        assert_eq!(s(|o| go_float_v(o, 1e6, false).unwrap()), "1e+06");
        assert_eq!(s(|o| go_float_v(o, 123456.5, false).unwrap()), "123456.5");
        assert_eq!(s(|o| go_float_v(o, 0.00001234, false).unwrap()), "1.234e-05");
        assert_eq!(s(|o| go_float_v(o, 0.0001, false).unwrap()), "0.0001");
        assert_eq!(s(|o| go_float_v(o, 1e100, false).unwrap()), "1e+100");
        assert_eq!(s(|o| go_float_v(o, 3.4028235e38, true).unwrap()), "3.4028235e+38");
    }

    #[test]
    fn equally_near_shortest_digits_take_the_even_one_as_go_and_python() {
        // 2^49 + 0.25 and 2^50 + 0.25: `.2` and `.3` both round-trip; Go's strconv and Python's repr print `.2`
        let (tie49, tie50) = (2f64.powi(49) + 0.25, 2f64.powi(50) + 0.25);
        assert_eq!(s(|o| f64_positional(o, tie49).unwrap()), "562949953421312.2");
        assert_eq!(s(|o| f64_positional(o, -tie50).unwrap()), "-1125899906842624.2");
        assert_eq!(s(|o| go_float_v(o, tie49, false).unwrap()), "5.629499534213122e+14");
        assert_eq!(s(|o| py_float_repr(o, tie49).unwrap()), "562949953421312.2");
        assert_eq!(s(|o| f64_positional(o, 0.000_012_5).unwrap()), "0.0000125");
        assert_eq!(s(|o| f32_positional(o, -16_777_216.0).unwrap()), "-16777216");
    }

    #[test]
    fn python_float_repr_and_crc() {
        assert_eq!(s(|o| py_float_repr(o, 1e16).unwrap()), "1e+16");
        assert_eq!(s(|o| py_float_repr(o, 1e15).unwrap()), "1000000000000000.0");
        assert_eq!(s(|o| py_float_repr(o, 0.0001).unwrap()), "0.0001");
        assert_eq!(s(|o| py_float_repr(o, 0.00001).unwrap()), "1e-05");
        assert_eq!(s(|o| py_float_repr(o, -1.5e-7).unwrap()), "-1.5e-07");
        assert_eq!(s(|o| py_float_repr(o, 0.1f32 as f64).unwrap()), "0.10000000149011612");
        assert_eq!(s(|o| py_float_repr(o, -0.0).unwrap()), "-0.0");
        assert_eq!(s(|o| py_float_repr(o, 123.0).unwrap()), "123.0");
        assert_eq!(crc32(b"(1,)"), 0x1ae8_24a8);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn base64_and_hex() {
        assert_eq!(s(|o| base64(o, b"")), "");
        assert_eq!(s(|o| base64(o, b"f")), "Zg==");
        assert_eq!(s(|o| base64(o, b"fo")), "Zm8=");
        assert_eq!(s(|o| base64(o, b"foob")), "Zm9vYg==");
        assert_eq!(s(|o| hex(o, &[0, 0xab])), "00ab");
    }

    #[test]
    fn python_decimal_str() {
        assert_eq!(s(|o| py_decimal_str(o, false, b"0.0000000005", 10)), "5E-10");
        assert_eq!(s(|o| py_decimal_str(o, false, b"0.0000000000", 10)), "0E-10");
        assert_eq!(s(|o| py_decimal_str(o, true, b"0.0000000123", 10)), "-1.23E-8");
        assert_eq!(s(|o| py_decimal_str(o, false, b"0.000001", 6)), "0.000001");
        assert_eq!(s(|o| py_decimal_str(o, true, b"12.50", 2)), "-12.50");
        assert_eq!(s(|o| py_decimal_str(o, false, b"7", 0)), "7");
    }

    #[test]
    fn sql_and_python_literals() {
        assert_eq!(s(|o| sql_str(o, b"a'b\\\0\n\r\x1a\"")), "'a\\'b\\\\\\0\\n\\r\\Z\\\"'");
        assert_eq!(s(|o| sql_bytes(o, b"")), "''");
        assert_eq!(s(|o| sql_bytes(o, b"\x01\xff")), "X'01ff'");
        assert_eq!(s(|o| py_repr_str(o, b"it's").unwrap()), "\"it's\"");
        assert_eq!(s(|o| py_repr_str(o, b"a'\"\x01\x7f").unwrap()), "'a\\'\"\\x01\\x7f'");
        assert!(py_repr_str(&mut Vec::new(), "é".as_bytes()).is_none());
        assert_eq!(s(|o| py_repr_bytes(o, b"\x00a'\xff")), "b\"\\x00a'\\xff\"");
    }
}
