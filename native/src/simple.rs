//! simple protocol JSON messages (`SimpleEncoder.encode_rows` with encoding-format json): one message per
//! row, `head, "data":{…}, "old":{…}` with the images' columns in name order.
//!
//! The message head up to `"type":"` and after `buildTs` comes from the Python encoder (`SimpleEncoder
//! .native_spec`), so the table-level members are written by the reference code.

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::kernel::{Img, Op, Protocol, Writer};
use crate::layout::{Cell, Class, Fallback, Res};
use crate::spec::Spec;
use crate::text::{base64, f32_positional, f64_positional, int, json_str, uint, Json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    F32,
    F64,
    Dec,
    Ts,
    Bin,
    Str,
}

impl Kind {
    fn of(code: i64) -> Option<Kind> {
        Some(match code {
            0 => Kind::Int,
            1 => Kind::F32,
            2 => Kind::F64,
            3 => Kind::Dec,
            4 => Kind::Ts,
            5 => Kind::Bin,
            6 => Kind::Str,
            _ => return None,
        })
    }

    fn takes(self, class: Class) -> bool {
        matches!(
            (self, class),
            (_, Class::Null)
                | (Kind::Int, Class::Int)
                | (Kind::F32, Class::Float)
                | (Kind::F64, Class::Double)
                | (Kind::Dec, Class::Decimal)
                | (Kind::Bin, Class::Bytes)
                | (Kind::Ts | Kind::Str, Class::Text)
        )
    }
}

pub struct Simple {
    head: Vec<u8>,
    head_tail: Vec<u8>,
    columns: Vec<(usize, Kind)>,
    keys: Vec<Vec<u8>>,
    location: Vec<u8>,
    limit: usize,
}

impl Simple {
    pub fn new(spec: &Spec<'_, '_>, classes: &[Option<Class>]) -> PyResult<Self> {
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
        let keys = spec.bytes_list("names")?;
        if keys.len() != columns.len() || columns.is_empty() {
            return Err(PyValueError::new_err("simple spec: one name per column, at least one column"));
        }
        Ok(Simple {
            head: spec.bytes("head")?,
            head_tail: spec.bytes("head_tail")?,
            columns,
            keys,
            location: spec.bytes("location")?,
            limit: usize::try_from(spec.int("limit")?).unwrap_or(0),
        })
    }

    fn image(&self, out: &mut Vec<u8>, img: &Img<'_>) -> Res<()> {
        out.push(b'{');
        for (k, (pos, kind)) in self.columns.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.keys[k]);
            let cell = img.cells[*pos];
            if let (Kind::Ts, Cell::Str(_)) = (kind, cell) {
                out.extend_from_slice(b"{\"location\":");
                out.extend_from_slice(&self.location);
                out.extend_from_slice(b",\"value\":");
            }
            match cell {
                Cell::Null => out.extend_from_slice(b"null"),
                Cell::I(v) => {
                    out.push(b'"');
                    int(out, v);
                    out.push(b'"');
                }
                Cell::U(v) => {
                    out.push(b'"');
                    uint(out, v);
                    out.push(b'"');
                }
                Cell::F32(v) => {
                    out.push(b'"');
                    f32_positional(out, v).ok_or(Fallback)?;
                    out.push(b'"');
                }
                Cell::F64(v) => {
                    out.push(b'"');
                    f64_positional(out, v).ok_or(Fallback)?;
                    out.push(b'"');
                }
                Cell::Dec { neg, text } => {
                    out.push(b'"');
                    if neg {
                        out.push(b'-');
                    }
                    out.extend_from_slice(img.bytes(text));
                    out.push(b'"');
                }
                Cell::Bin(s) => {
                    out.push(b'"');
                    base64(out, img.bytes(s));
                    out.push(b'"');
                }
                Cell::Str(s) => json_str(out, img.bytes(s), Json::Go),
            }
            if let (Kind::Ts, Cell::Str(_)) = (kind, cell) {
                out.push(b'}');
            }
        }
        out.push(b'}');
        Ok(())
    }
}

pub struct SimpleWriter<'a> {
    simple: &'a Simple,
    build_ts: Vec<u8>,
    out: Vec<u8>,
    ends: Vec<usize>,
}

impl Protocol for Simple {
    fn writer(&self, clock_ms: i64) -> Box<dyn Writer + '_> {
        let mut build_ts = Vec::new();
        int(&mut build_ts, clock_ms);
        Box::new(SimpleWriter { simple: self, build_ts, out: Vec::with_capacity(1 << 16), ends: Vec::new() })
    }
}

impl Writer for SimpleWriter<'_> {
    fn row(&mut self, op: Op, commit_ts: u64, before: Option<&Img<'_>>, after: Option<&Img<'_>>) -> Res<()> {
        let s = self.simple;
        let start = self.out.len();
        let out = &mut self.out;
        out.extend_from_slice(&s.head);
        out.extend_from_slice(match op {
            Op::Insert => b"INSERT",
            Op::Update => b"UPDATE",
            Op::Delete => b"DELETE",
        });
        out.extend_from_slice(b"\",\"commitTs\":");
        uint(out, commit_ts);
        out.extend_from_slice(b",\"buildTs\":");
        out.extend_from_slice(&self.build_ts);
        out.extend_from_slice(&s.head_tail);
        if let Some(new) = after {
            out.extend_from_slice(b",\"data\":");
            s.image(out, new)?;
        }
        if let Some(old) = before {
            out.extend_from_slice(b",\"old\":");
            s.image(out, old)?;
        }
        out.push(b'}');
        if out.len() - start > s.limit {
            return Err(Fallback);
        }
        self.ends.push(out.len());
        Ok(())
    }

    fn finish(&mut self, py: Python<'_>, _rows: usize) -> PyResult<Py<PyAny>> {
        let mut start = 0;
        let list = PyList::empty(py);
        for &end in &self.ends {
            list.append(PyBytes::new(py, &self.out[start..end]))?;
            start = end;
        }
        Ok(list.into_any().unbind())
    }
}
