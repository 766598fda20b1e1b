//! canal-json lines: the storage sink's file lines (`CanalJsonTxnEncoder.encode_txn`) and the Kafka
//! messages (`CanalJsonMessageEncoder.encode_rows`, the same lines without terminator).
//!
//! Everything constant per table comes from the Python `TablePlan` (`TablePlan.native_spec`): the line
//! heads, the sqlType/mysqlType fragments for every pattern of unsigned promotions, the escaped column keys.
//! Per row this writes `head, mid, types, old, "data":[image], tail` as the generated Python code does.

use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::kernel::{Img, Op, Protocol, Writer};
use crate::layout::{Cell, Class, Fallback, Res};
use crate::spec::Spec;
use crate::text::{f32_positional, f64_positional, int, json_latin1, json_str, uint, Json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    F32,
    F64,
    Dec,
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
            4 => Kind::Bin,
            5 => Kind::Str,
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
                | (Kind::Str, Class::Text)
        )
    }
}

pub struct Canal {
    heads: [Vec<u8>; 3],
    /// (table position, kind) of the written columns, and their `"name":` keys.
    columns: Vec<(usize, Kind)>,
    keys: Vec<Vec<u8>>,
    types: Vec<Vec<u8>>,
    promotions: Vec<(usize, i64)>,
    key_columns: Vec<usize>,
    key_types: Vec<Vec<u8>>,
    key_promotions: Vec<(usize, i64)>,
    only_updated: bool,
    delete_key_only: bool,
    tidb_extension: bool,
    terminator: Vec<u8>,
    /// MQ form: one message per row, each at most this long (else the Python path handles the rows).
    limit: Option<usize>,
}

fn promotions(spec: &Spec<'_, '_>, key: &str, width: usize) -> PyResult<Vec<(usize, i64)>> {
    spec.pairs(key)?
        .into_iter()
        .map(|(k, t)| {
            if k >= 0 && (k as usize) < width {
                Ok((k as usize, t))
            } else {
                Err(pyo3::exceptions::PyValueError::new_err(format!("{key}: column {k} out of range")))
            }
        })
        .collect()
}

impl Canal {
    pub fn new(spec: &Spec<'_, '_>, classes: &[Option<Class>], mq: bool) -> PyResult<Self> {
        let heads = spec.bytes_list("heads")?;
        let heads: [Vec<u8>; 3] =
            heads.try_into().map_err(|_| pyo3::exceptions::PyValueError::new_err("heads: need 3"))?;
        let kinds = spec.pairs("columns")?;
        let mut columns = Vec::with_capacity(kinds.len());
        for (pos, code) in kinds {
            let pos = usize::try_from(pos).ok().filter(|p| *p < classes.len());
            let (Some(pos), Some(kind)) = (pos, Kind::of(code)) else {
                return Err(pyo3::exceptions::PyValueError::new_err("columns: bad entry"));
            };
            if let Some(class) = classes[pos] {
                if !kind.takes(class) {
                    return Err(PyNotImplementedError::new_err(format!("column {pos}: {class:?} value for {kind:?}")));
                }
            }
            columns.push((pos, kind));
        }
        let width = columns.len();
        let keys = spec.bytes_list("names")?;
        let types = spec.bytes_list("types")?;
        let promotions_ = promotions(spec, "promotions", width)?;
        let key_columns = spec.positions("key_columns", width)?;
        let key_types = spec.bytes_list("key_types")?;
        let key_promotions = promotions(spec, "key_promotions", key_columns.len())?;
        if keys.len() != width || types.len() != 1 << promotions_.len() || key_types.len() != 1 << key_promotions.len()
        {
            return Err(pyo3::exceptions::PyValueError::new_err("canal-json spec: inconsistent sizes"));
        }
        Ok(Canal {
            heads,
            columns,
            keys,
            types,
            promotions: promotions_,
            key_columns,
            key_types,
            key_promotions,
            only_updated: spec.flag("only_updated")?,
            delete_key_only: spec.flag("delete_key_only")?,
            tidb_extension: spec.flag("tidb_extension")?,
            terminator: if mq { Vec::new() } else { spec.bytes("terminator")? },
            limit: if mq { Some(usize::try_from(spec.int("limit")?).unwrap_or(0)) } else { None },
        })
    }

    fn value(&self, out: &mut Vec<u8>, cell: &Cell, img: &Img<'_>) -> Res<()> {
        match cell {
            Cell::Null => out.extend_from_slice(b"null"),
            Cell::I(v) => {
                out.push(b'"');
                int(out, *v);
                out.push(b'"');
            }
            Cell::U(v) => {
                out.push(b'"');
                uint(out, *v);
                out.push(b'"');
            }
            Cell::F32(v) => {
                out.push(b'"');
                f32_positional(out, *v).ok_or(Fallback)?;
                out.push(b'"');
            }
            Cell::F64(v) => {
                out.push(b'"');
                f64_positional(out, *v).ok_or(Fallback)?;
                out.push(b'"');
            }
            Cell::Dec { neg, text } => {
                out.push(b'"');
                if *neg {
                    out.push(b'-');
                }
                out.extend_from_slice(img.bytes(*text));
                out.push(b'"');
            }
            Cell::Bin(s) => json_latin1(out, img.bytes(*s), Json::Canal),
            Cell::Str(s) => json_str(out, img.bytes(*s), Json::Canal),
        }
        Ok(())
    }

    /// `{"name":value,…}` of the written columns whose index `keep` accepts.
    fn image(&self, out: &mut Vec<u8>, img: &Img<'_>, keep: impl Fn(usize) -> bool) -> Res<()> {
        out.push(b'{');
        let mut first = true;
        for (k, (pos, _)) in self.columns.iter().enumerate() {
            if !keep(k) {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&self.keys[k]);
            self.value(out, &img.cells[*pos], img)?;
        }
        out.push(b'}');
        Ok(())
    }

    fn pattern(&self, promotions: &[(usize, i64)], value: impl Fn(usize) -> Cell) -> usize {
        let mut index = 0;
        for (j, (k, threshold)) in promotions.iter().enumerate() {
            let above = match value(*k) {
                Cell::I(v) => v > *threshold,
                Cell::U(v) => v as i128 > *threshold as i128,
                _ => false,
            };
            if above {
                index |= 1 << j;
            }
        }
        index
    }

    fn types_of(&self, img: &Img<'_>) -> &[u8] {
        &self.types[self.pattern(&self.promotions, |k| img.cells[self.columns[k].0])]
    }

    fn key_types_of(&self, img: &Img<'_>) -> &[u8] {
        &self.key_types[self.pattern(&self.key_promotions, |j| img.cells[self.columns[self.key_columns[j]].0])]
    }

    /// Python `!=` of two values of a written column.
    fn differ(&self, k: usize, old: &Img<'_>, new: &Img<'_>) -> bool {
        let pos = self.columns[k].0;
        match (&old.cells[pos], &new.cells[pos]) {
            (Cell::F32(a), Cell::F32(b)) => a != b,
            (Cell::F64(a), Cell::F64(b)) => a != b,
            (a, b) => !crate::layout::same_bytes(a, b, &old.bufs, &new.bufs),
        }
    }
}

pub struct CanalWriter<'a> {
    canal: &'a Canal,
    ts: Vec<u8>,
    out: Vec<u8>,
    /// MQ form: where each message ends in `out`.
    ends: Vec<usize>,
    mid: Vec<u8>,
    tail: Vec<u8>,
    last_ts: Option<u64>,
}

impl Protocol for Canal {
    fn writer(&self, clock_ms: i64) -> Box<dyn Writer + '_> {
        let mut ts = Vec::new();
        int(&mut ts, clock_ms);
        Box::new(CanalWriter {
            canal: self,
            ts,
            out: Vec::with_capacity(1 << 16),
            ends: Vec::new(),
            mid: Vec::new(),
            tail: Vec::new(),
            last_ts: None,
        })
    }
}

impl Writer for CanalWriter<'_> {
    fn row(&mut self, op: Op, commit_ts: u64, before: Option<&Img<'_>>, after: Option<&Img<'_>>) -> Res<()> {
        let c = self.canal;
        if self.last_ts != Some(commit_ts) {
            self.mid.clear();
            uint(&mut self.mid, commit_ts >> 18);
            self.mid.extend_from_slice(b",\"ts\":");
            self.mid.extend_from_slice(&self.ts);
            self.tail.clear();
            if c.tidb_extension {
                self.tail.extend_from_slice(b"],\"_tidb\":{\"commitTs\":");
                uint(&mut self.tail, commit_ts);
                self.tail.extend_from_slice(b"}}");
            } else {
                self.tail.extend_from_slice(b"]}");
            }
            self.tail.extend_from_slice(&c.terminator);
            self.last_ts = Some(commit_ts);
        }
        let start = self.out.len();
        let out = &mut self.out;
        match op {
            Op::Insert => {
                let new = after.ok_or(Fallback)?;
                out.extend_from_slice(&c.heads[0]);
                out.extend_from_slice(&self.mid);
                out.extend_from_slice(c.types_of(new));
                out.extend_from_slice(b"null,\"data\":[");
                c.image(out, new, |_| true)?;
            }
            Op::Delete => {
                let old = before.ok_or(Fallback)?;
                out.extend_from_slice(&c.heads[2]);
                out.extend_from_slice(&self.mid);
                if c.delete_key_only {
                    out.extend_from_slice(c.key_types_of(old));
                    out.extend_from_slice(b"null,\"data\":[");
                    c.image(out, old, |k| c.key_columns.contains(&k))?;
                } else {
                    out.extend_from_slice(c.types_of(old));
                    out.extend_from_slice(b"null,\"data\":[");
                    c.image(out, old, |_| true)?;
                }
            }
            Op::Update => {
                let (old, new) = (before.ok_or(Fallback)?, after.ok_or(Fallback)?);
                out.extend_from_slice(&c.heads[1]);
                out.extend_from_slice(&self.mid);
                out.extend_from_slice(c.types_of(new));
                out.push(b'[');
                if c.only_updated {
                    c.image(out, old, |k| c.differ(k, old, new))?;
                } else {
                    c.image(out, old, |_| true)?;
                }
                out.extend_from_slice(b"],\"data\":[");
                c.image(out, new, |_| true)?;
            }
        }
        out.extend_from_slice(&self.tail);
        if let Some(limit) = c.limit {
            if out.len() - start > limit {
                return Err(Fallback); // above max-message-bytes: the Python path handles or refuses it
            }
            self.ends.push(out.len());
        }
        Ok(())
    }

    fn finish(&mut self, py: Python<'_>, rows: usize) -> PyResult<Py<PyAny>> {
        if self.canal.limit.is_some() {
            let mut start = 0;
            let list = PyList::empty(py);
            for &end in &self.ends {
                list.append(PyBytes::new(py, &self.out[start..end]))?;
                start = end;
            }
            return Ok(list.into_any().unbind());
        }
        let data = PyBytes::new(py, &self.out);
        Ok(PyTuple::new(py, [data.into_any(), rows.into_pyobject(py)?.into_any()])?.into_any().unbind())
    }
}
