//! The MySQL sink's statement values (`sink/mysql/encoder.render_rows`): per row its key as the DELETE
//! statement names it, its VALUES tuple for REPLACE, and the conflict slots it touches.
//!
//! Literals are `mysql/sql_values.literal` and `row_tuple`; a slot is `zlib.crc32(repr(values)) % slots` of
//! each unique index's values (`sink/mysql/conflict.KeySlots`), so `repr` of the Python values is written
//! here too (a text key with non-ASCII characters falls back: its repr needs the Unicode database).

use pyo3::exceptions::{PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::kernel::{Img, Op, Protocol, Writer};
use crate::layout::{Cell, Class, Fallback, Res};
use crate::spec::Spec;
use crate::text::{crc32, int, py_decimal_str, py_float_repr, py_repr_bytes, py_repr_str, sql_bytes, sql_str, uint};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Dec,
    Str,
    Bin,
}

impl Kind {
    fn of(code: i64) -> Option<Kind> {
        Some(match code {
            0 => Kind::Int,
            1 => Kind::Float,
            2 => Kind::Dec,
            3 => Kind::Str,
            4 => Kind::Bin,
            _ => return None,
        })
    }

    fn takes(self, class: Class) -> bool {
        matches!(
            (self, class),
            (_, Class::Null)
                | (Kind::Int, Class::Int)
                | (Kind::Float, Class::Float | Class::Double)
                | (Kind::Dec, Class::Decimal)
                | (Kind::Str, Class::Text)
                | (Kind::Bin, Class::Bytes)
        )
    }
}

pub struct Sql {
    /// Per table column: its decimal scale (DECIMAL only), for `str(Decimal)`.
    scales: Vec<usize>,
    values: Vec<usize>,
    keys: Vec<usize>,
    indexes: Vec<Vec<usize>>,
    serial: bool,
    slots: u32,
}

impl Sql {
    /// `scales`: each table column's DECIMAL scale in the table map (what `str(Decimal)` is written with).
    pub fn new(spec: &Spec<'_, '_>, classes: &[Option<Class>], scales: Vec<usize>) -> PyResult<Self> {
        let kinds = spec.ints("kinds")?;
        if kinds.len() != classes.len() {
            return Err(PyValueError::new_err("kinds: one per column"));
        }
        for (pos, code) in kinds.iter().enumerate() {
            let kind = Kind::of(*code).ok_or_else(|| PyValueError::new_err("kinds: bad entry"))?;
            if let Some(class) = classes[pos] {
                if !kind.takes(class) {
                    return Err(PyNotImplementedError::new_err(format!("column {pos}: {class:?} value for {kind:?}")));
                }
            }
        }
        let width = classes.len();
        let indexes: Vec<Vec<i64>> = spec.dict_item("indexes")?.extract()?;
        let indexes = indexes
            .into_iter()
            .map(|idx| {
                idx.into_iter()
                    .map(|p| usize::try_from(p).ok().filter(|p| *p < width).ok_or(()))
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| PyValueError::new_err("indexes: column out of range"))?;
        let keys = spec.positions("keys", width)?;
        if keys.is_empty() {
            return Err(PyNotImplementedError::new_err("a table without a key is applied row by row"));
        }
        let slots = spec.int("slots")?;
        if !(1..=32).contains(&slots) {
            return Err(PyValueError::new_err("slots: 1..32"));
        }
        Ok(Sql {
            scales,
            values: spec.positions("values", width)?,
            keys,
            indexes,
            serial: spec.flag("serial")?,
            slots: slots as u32,
        })
    }

    /// `sql_values.literal` of one value.
    fn literal(&self, out: &mut Vec<u8>, pos: usize, img: &Img<'_>) -> Res<()> {
        match img.cells[pos] {
            Cell::Null => out.extend_from_slice(b"NULL"),
            Cell::I(v) => int(out, v),
            Cell::U(v) => uint(out, v),
            Cell::F32(v) => py_float_repr(out, v as f64).ok_or(Fallback)?,
            Cell::F64(v) => py_float_repr(out, v).ok_or(Fallback)?,
            Cell::Dec { neg, text } => {
                if neg {
                    out.push(b'-');
                }
                out.extend_from_slice(img.bytes(text));
            }
            Cell::Str(s) => sql_str(out, img.bytes(s)),
            Cell::Bin(s) => sql_bytes(out, img.bytes(s)),
        }
        Ok(())
    }

    /// `row_tuple`: `(v1,v2,…)`.
    fn tuple(&self, out: &mut Vec<u8>, positions: &[usize], img: &Img<'_>) -> Res<()> {
        out.push(b'(');
        for (i, pos) in positions.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.literal(out, *pos, img)?;
        }
        out.push(b')');
        Ok(())
    }

    /// The compaction key as the DELETE statement writes it: `literal(k)`, or `row_tuple(k)` for several columns.
    fn key(&self, out: &mut Vec<u8>, img: &Img<'_>) -> Res<()> {
        if self.keys.len() == 1 {
            self.literal(out, self.keys[0], img)
        } else {
            self.tuple(out, &self.keys, img)
        }
    }

    /// Python `repr` of one value.
    fn repr(&self, out: &mut Vec<u8>, pos: usize, img: &Img<'_>) -> Res<()> {
        match img.cells[pos] {
            Cell::Null => out.extend_from_slice(b"None"),
            Cell::I(v) => int(out, v),
            Cell::U(v) => uint(out, v),
            Cell::F32(v) => py_float_repr(out, v as f64).ok_or(Fallback)?,
            Cell::F64(v) => py_float_repr(out, v).ok_or(Fallback)?,
            Cell::Dec { neg, text } => {
                out.extend_from_slice(b"Decimal('");
                py_decimal_str(out, neg, img.bytes(text), self.scales[pos]);
                out.extend_from_slice(b"')");
            }
            Cell::Str(s) => py_repr_str(out, img.bytes(s)).ok_or(Fallback)?,
            Cell::Bin(s) => py_repr_bytes(out, img.bytes(s)),
        }
        Ok(())
    }

    /// `KeySlots.of`: the bitmask of the slots the row's unique-index values hash to.
    fn slots_of(&self, images: [Option<&Img<'_>>; 2], tmp: &mut Vec<u8>) -> Res<u32> {
        let all = if self.slots == 32 { u32::MAX } else { (1u32 << self.slots) - 1 };
        if self.serial {
            return Ok(all);
        }
        let mut mask = 0u32;
        for img in images.into_iter().flatten() {
            for idx in &self.indexes {
                if idx.iter().any(|p| img.cells[*p].is_null()) {
                    continue; // NULLs never conflict in a unique index
                }
                tmp.clear();
                tmp.push(b'(');
                for (i, p) in idx.iter().enumerate() {
                    if i > 0 {
                        tmp.extend_from_slice(b", ");
                    }
                    self.repr(tmp, *p, img)?;
                }
                if idx.len() == 1 {
                    tmp.push(b',');
                }
                tmp.push(b')');
                mask |= 1 << (crc32(tmp) % self.slots);
            }
        }
        Ok(if mask == 0 { 1 } else { mask })
    }
}

/// A text range of the writer's buffer.
type Range = Option<(usize, usize)>;
/// (commit_ts, op, slots, key before, key after, values).
type RenderedRow = (u64, u8, u32, Range, Range, Range);

pub struct SqlWriter<'a> {
    sql: &'a Sql,
    /// (commit_ts, op, slots, key before, key after, values) per row; texts as ranges of `text`.
    rows: Vec<RenderedRow>,
    text: Vec<u8>,
    tmp: Vec<u8>,
}

impl Protocol for Sql {
    fn writer(&self, _clock_ms: i64) -> Box<dyn Writer + '_> {
        Box::new(SqlWriter { sql: self, rows: Vec::new(), text: Vec::with_capacity(1 << 16), tmp: Vec::new() })
    }
}

impl SqlWriter<'_> {
    fn span(&mut self, f: impl FnOnce(&Sql, &mut Vec<u8>) -> Res<()>) -> Res<(usize, usize)> {
        let start = self.text.len();
        f(self.sql, &mut self.text)?;
        Ok((start, self.text.len()))
    }
}

impl Writer for SqlWriter<'_> {
    fn row(&mut self, op: Op, commit_ts: u64, before: Option<&Img<'_>>, after: Option<&Img<'_>>) -> Res<()> {
        let code = match op {
            Op::Insert => 0,
            Op::Update => 1,
            Op::Delete => 2,
        };
        let slots = self.sql.slots_of([before, after], &mut self.tmp)?;
        let key_before = match before {
            Some(img) => Some(self.span(|s, out| s.key(out, img))?),
            None => None,
        };
        let key_after = match after {
            Some(img) => Some(self.span(|s, out| s.key(out, img))?),
            None => None,
        };
        let values = match after {
            Some(img) => Some(self.span(|s, out| s.tuple(out, &s.values, img))?),
            None => None,
        };
        self.rows.push((commit_ts, code, slots, key_before, key_after, values));
        Ok(())
    }

    fn finish(&mut self, py: Python<'_>, _rows: usize) -> PyResult<Py<PyAny>> {
        let list = PyList::empty(py);
        let text = &self.text;
        // every range was written by this writer from valid UTF-8 pieces
        let piece = |r: Option<(usize, usize)>| -> PyResult<Py<PyAny>> {
            Ok(match r {
                None => py.None(),
                Some((a, b)) => PyString::new(
                    py,
                    std::str::from_utf8(&text[a..b]).map_err(|e| PyValueError::new_err(e.to_string()))?,
                )
                .into_any()
                .unbind(),
            })
        };
        for (commit_ts, code, slots, kb, ka, values) in &self.rows {
            let row = PyTuple::new(
                py,
                [
                    commit_ts.into_pyobject(py)?.into_any().unbind(),
                    code.into_pyobject(py)?.into_any().unbind(),
                    slots.into_pyobject(py)?.into_any().unbind(),
                    piece(*kb)?,
                    piece(*ka)?,
                    piece(*values)?,
                ],
            )?;
            list.append(row)?;
        }
        Ok(list.into_any().unbind())
    }
}
