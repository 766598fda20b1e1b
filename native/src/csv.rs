//! CSV file lines (`CsvEncoder.encode_txn`): the compiled Python line formatter, field by field.
//!
//! The op prefixes, the delimiter's escaped form and the ENUM fields come from the Python `_TableFormatter`
//! (`_TableFormatter.native_spec`); values are written as its generated f-strings write them.

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::kernel::{Img, Op, Protocol, Writer};
use crate::layout::{Cell, Class, Fallback, Res};
use crate::spec::Spec;
use crate::text::{base64, go_float_v, hex, int, uint};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    F32,
    F64,
    Dec,
    Bin,
    Str,
    Enum,
    Set,
}

impl Kind {
    fn of(code: i64) -> Option<Kind> {
        Some(match code {
            0 => Kind::Int,
            1 => Kind::F32,
            2 => Kind::F64,
            3 => Kind::Dec,
            4 => Kind::Bin,
            5 => Kind::Str,
            6 => Kind::Enum,
            7 => Kind::Set,
            _ => return None,
        })
    }

    fn takes(self, class: Class) -> bool {
        matches!(
            (self, class),
            (_, Class::Null)
                | (Kind::Int | Kind::Enum | Kind::Set, Class::Int)
                | (Kind::F32, Class::Float)
                | (Kind::F64, Class::Double)
                | (Kind::Dec, Class::Decimal)
                | (Kind::Bin, Class::Bytes)
                | (Kind::Str, Class::Text)
        )
    }
}

pub struct Csv {
    prefixes: [Vec<u8>; 3],
    delimiter: Vec<u8>,
    delimiter_escape: Vec<u8>,
    null: Vec<u8>,
    quote: Option<u8>,
    terminator: Vec<u8>,
    include_commit_ts: bool,
    old_value: bool,
    handle_key: bool,
    /// The single integer handle-key column (None: the table has no handle key, the field is NULL).
    handle_key_pos: Option<usize>,
    columns: Vec<(usize, Kind)>,
    /// Per written column: ENUM fields (already quoted) or SET element names.
    elements: Vec<Vec<Vec<u8>>>,
    hex: bool,
}

impl Csv {
    pub fn new(spec: &Spec<'_, '_>, classes: &[Option<Class>]) -> PyResult<Self> {
        let prefixes: [Vec<u8>; 3] =
            spec.bytes_list("prefixes")?.try_into().map_err(|_| PyValueError::new_err("prefixes: need 3"))?;
        let quote = spec.bytes("quote")?;
        if quote.len() > 1 {
            return Err(PyValueError::new_err("quote: one byte at most"));
        }
        let mut columns = Vec::new();
        for (pos, code) in spec.pairs("columns")? {
            let pos = usize::try_from(pos).ok().filter(|p| *p < classes.len());
            let (Some(pos), Some(kind)) = (pos, Kind::of(code)) else {
                return Err(PyValueError::new_err("columns: bad entry"));
            };
            if let Some(class) = classes[pos] {
                if !kind.takes(class) {
                    return Err(PyNotImplementedError::new_err(format!("column {pos}: {class:?} value for {kind:?}")));
                }
            }
            columns.push((pos, kind));
        }
        let elements: Vec<Vec<Vec<u8>>> = spec.dict_item("elements")?.extract()?;
        if elements.len() != columns.len() {
            return Err(PyValueError::new_err("elements: one list per column"));
        }
        let key = spec.int("handle_key_pos")?;
        let handle_key_pos = match usize::try_from(key) {
            Err(_) => None,
            Ok(pos) if pos < classes.len() => Some(pos),
            Ok(_) => return Err(PyValueError::new_err("handle_key_pos: out of range")),
        };
        if let Some(pos) = handle_key_pos {
            if classes[pos].is_some_and(|c| c != Class::Int && c != Class::Null) {
                return Err(PyNotImplementedError::new_err("handle key: not an integer"));
            }
        }
        Ok(Csv {
            prefixes,
            delimiter: spec.bytes("delimiter")?,
            delimiter_escape: spec.bytes("delimiter_escape")?,
            null: spec.bytes("null")?,
            quote: quote.first().copied(),
            terminator: spec.bytes("terminator")?,
            include_commit_ts: spec.flag("include_commit_ts")?,
            old_value: spec.flag("old_value")?,
            handle_key: spec.flag("handle_key")?,
            handle_key_pos,
            columns,
            elements,
            hex: spec.flag("hex")?,
        })
    }

    /// A string field (`message.string_formatter`): quoted with embedded quotes doubled, or escaped.
    fn string(&self, out: &mut Vec<u8>, s: &[u8]) {
        match self.quote {
            Some(q) => {
                out.push(q);
                let mut last = 0;
                for (i, &b) in s.iter().enumerate() {
                    if b == q {
                        out.extend_from_slice(&s[last..=i]);
                        out.push(q);
                        last = i + 1;
                    }
                }
                out.extend_from_slice(&s[last..]);
                out.push(q);
            }
            None => {
                let d = &self.delimiter;
                let mut i = 0;
                while i < s.len() {
                    if s[i..].starts_with(d) {
                        out.extend_from_slice(&self.delimiter_escape);
                        i += d.len();
                        continue;
                    }
                    match s[i] {
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        b'\r' => out.extend_from_slice(b"\\r"),
                        b'\n' => out.extend_from_slice(b"\\n"),
                        b => out.push(b),
                    }
                    i += 1;
                }
            }
        }
    }

    fn value(&self, out: &mut Vec<u8>, k: usize, img: &Img<'_>, tmp: &mut Vec<u8>) -> Res<()> {
        let (pos, kind) = self.columns[k];
        let cell = img.cells[pos];
        tmp.clear();
        match (kind, cell) {
            (_, Cell::Null) => out.extend_from_slice(&self.null),
            (Kind::Enum, Cell::U(v)) => {
                let fields = &self.elements[k];
                if v == 0 || v as usize > fields.len() {
                    return Err(Fallback); // the Python path raises EncodeError naming the column
                }
                out.extend_from_slice(&fields[v as usize - 1]);
            }
            (Kind::Set, Cell::U(v)) => {
                let names = &self.elements[k];
                if names.len() < 64 && v >> names.len() != 0 {
                    return Err(Fallback);
                }
                let mut first = true;
                for (i, name) in names.iter().enumerate() {
                    if i < 64 && v >> i & 1 == 1 {
                        if !first {
                            tmp.push(b',');
                        }
                        first = false;
                        tmp.extend_from_slice(name);
                    }
                }
                self.string(out, tmp);
            }
            (_, Cell::I(v)) => int(out, v),
            (_, Cell::U(v)) => uint(out, v),
            (_, Cell::F32(v)) => go_float_v(out, v as f64, true).ok_or(Fallback)?,
            (_, Cell::F64(v)) => go_float_v(out, v, false).ok_or(Fallback)?,
            (_, Cell::Dec { neg, text }) => {
                if neg {
                    tmp.push(b'-');
                }
                tmp.extend_from_slice(img.bytes(text));
                self.string(out, tmp);
            }
            (_, Cell::Bin(s)) => {
                if self.hex {
                    hex(tmp, img.bytes(s));
                } else {
                    base64(tmp, img.bytes(s));
                }
                self.string(out, tmp);
            }
            (_, Cell::Str(s)) => self.string(out, img.bytes(s)),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &self,
        out: &mut Vec<u8>,
        code: usize,
        commit_ts: u64,
        update: bool,
        key_image: &Img<'_>,
        img: &Img<'_>,
        tmp: &mut Vec<u8>,
    ) -> Res<()> {
        out.extend_from_slice(&self.prefixes[code]);
        if self.include_commit_ts {
            out.extend_from_slice(&self.delimiter);
            uint(out, commit_ts);
        }
        if self.old_value {
            out.extend_from_slice(&self.delimiter);
            out.extend_from_slice(if update { b"true" } else { b"false" });
        }
        if self.handle_key {
            out.extend_from_slice(&self.delimiter);
            match self.handle_key_pos {
                None => out.extend_from_slice(&self.null),
                Some(pos) => {
                    tmp.clear();
                    match key_image.cells[pos] {
                        Cell::I(v) => int(tmp, v),
                        Cell::U(v) => uint(tmp, v),
                        Cell::Null => tmp.extend_from_slice(b"None"), // str(None), as the Python formatter
                        _ => return Err(Fallback),
                    }
                    let key = std::mem::take(tmp);
                    self.string(out, &key);
                    *tmp = key;
                }
            }
        }
        for k in 0..self.columns.len() {
            out.extend_from_slice(&self.delimiter);
            self.value(out, k, img, tmp)?;
        }
        out.extend_from_slice(&self.terminator);
        Ok(())
    }
}

pub struct CsvWriter<'a> {
    csv: &'a Csv,
    out: Vec<u8>,
    tmp: Vec<u8>,
}

impl Protocol for Csv {
    fn writer(&self, _clock_ms: i64) -> Box<dyn Writer + '_> {
        Box::new(CsvWriter { csv: self, out: Vec::with_capacity(1 << 16), tmp: Vec::new() })
    }
}

const I: usize = 0;
const U: usize = 1;
const D: usize = 2;

impl Writer for CsvWriter<'_> {
    fn row(&mut self, op: Op, commit_ts: u64, before: Option<&Img<'_>>, after: Option<&Img<'_>>) -> Res<()> {
        let c = self.csv;
        let (out, tmp) = (&mut self.out, &mut self.tmp);
        match op {
            Op::Insert => {
                let new = after.ok_or(Fallback)?;
                c.line(out, I, commit_ts, false, new, new, tmp)
            }
            Op::Delete => {
                let old = before.ok_or(Fallback)?;
                c.line(out, D, commit_ts, false, old, old, tmp)
            }
            Op::Update => {
                let (old, new) = (before.ok_or(Fallback)?, after.ok_or(Fallback)?);
                if c.old_value {
                    c.line(out, D, commit_ts, true, new, old, tmp)?;
                    c.line(out, I, commit_ts, true, new, new, tmp)
                } else {
                    c.line(out, U, commit_ts, false, new, new, tmp)
                }
            }
        }
    }

    fn finish(&mut self, py: Python<'_>, rows: usize) -> PyResult<Py<PyAny>> {
        let data = PyBytes::new(py, &self.out);
        Ok(PyTuple::new(py, [data.into_any(), rows.into_pyobject(py)?.into_any()])?.into_any().unbind())
    }
}
