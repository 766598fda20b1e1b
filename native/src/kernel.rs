//! The one Python-facing class: a table's compiled kernel, and the loop over a transaction's rows events.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::canal::Canal;
use crate::csv::Csv;
use crate::layout::{reader_for, same_bytes, Bufs, Callbacks, Cell, Fallback, Layout, Res, TextKind};
use crate::simple::Simple;
use crate::spec::Spec;
use crate::sql::Sql;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Insert,
    Update,
    Delete,
}

/// One row image in the table's column order (TableInfo), with the buffers its spans point into.
pub struct Img<'a> {
    pub cells: &'a [Cell],
    pub bufs: Bufs<'a>,
}

impl Img<'_> {
    pub fn bytes(&self, span: crate::layout::Span) -> &[u8] {
        self.bufs.get(span)
    }
}

/// What a protocol does with each row, and what it hands back at the end.
pub trait Writer {
    fn row(&mut self, op: Op, commit_ts: u64, before: Option<&Img<'_>>, after: Option<&Img<'_>>) -> Res<()>;
    fn finish(&mut self, py: Python<'_>, rows: usize) -> PyResult<Py<PyAny>>;
}

/// Per-call writer state of the kernel's protocol.
pub trait Protocol: Send + Sync {
    fn writer(&self, clock_ms: i64) -> Box<dyn Writer + '_>;
}

struct PyCallbacks<'py> {
    py: Python<'py>,
    funcs: &'py [Py<PyAny>],
}

impl Callbacks for PyCallbacks<'_> {
    fn text(&mut self, callback: usize, raw: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let f = self.funcs.get(callback)?;
        let value = f.bind(self.py).call1((PyBytes::new(self.py, raw),)).ok()?;
        let s = value.cast::<PyString>().ok()?;
        out.extend_from_slice(s.to_str().ok()?.as_bytes());
        Some(())
    }
}

/// A table's kernel for one protocol and codec config (see the crate docs).
///
/// `layout`: per table-map column `(binlog type, meta0, meta1, unsigned, text kind, callback index or -1)`,
/// text kind 0 bytes, 1 UTF-8, 2 latin1, 3 callback. `columns`: per table column, its table-map position or -1
/// (absent: NULL). `callbacks`: Python functions `bytes -> str` for the columns whose kind is 3.
#[pyclass(module = "sparkcdc._native", frozen)]
pub struct Kernel {
    layout: Layout,
    columns: Vec<Option<usize>>,
    callbacks: Vec<Py<PyAny>>,
    /// Table columns whose change makes an UPDATE one the sink splits (empty: none is split).
    split_keys: Vec<usize>,
    /// The table's columns are the table map's, in order (no rearranging per row).
    identity: bool,
    protocol: Box<dyn Protocol>,
}

type LayoutColumn = (u8, usize, usize, bool, u8, i64);

#[pymethods]
impl Kernel {
    #[new]
    fn new(
        protocol: &str,
        layout: Vec<LayoutColumn>,
        columns: Vec<i64>,
        callbacks: Vec<Py<PyAny>>,
        spec: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let mut readers = Vec::with_capacity(layout.len());
        for (i, (typ, m0, m1, unsigned, kind, cb)) in layout.into_iter().enumerate() {
            let kind = match kind {
                0 => TextKind::Bytes,
                1 => TextKind::Utf8,
                2 => TextKind::Latin1,
                3 => TextKind::Callback,
                _ => return Err(PyValueError::new_err(format!("column {i}: unknown text kind {kind}"))),
            };
            let callback = if cb >= 0 { Some(cb as usize) } else { None };
            if callback.is_some_and(|c| c >= callbacks.len()) {
                return Err(PyValueError::new_err(format!("column {i}: no callback {cb}")));
            }
            let reader = reader_for(typ, m0, m1, unsigned, kind, callback)
                .ok_or_else(|| PyValueError::new_err(format!("column {i}: binlog type {typ} has no native reader")))?;
            readers.push(reader);
        }
        let n = readers.len();
        let columns = columns
            .into_iter()
            .map(|c| match c {
                -1 => Ok(None),
                c if c >= 0 && (c as usize) < n => Ok(Some(c as usize)),
                c => Err(PyValueError::new_err(format!("column position {c} is not in the table map"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let spec = Spec::new(spec);
        let split_keys = spec.positions("split_keys", columns.len())?;
        let classes: Vec<_> = columns.iter().map(|c| c.map(|m| readers[m].class())).collect();
        let scales: Vec<usize> = columns
            .iter()
            .map(|c| match c.map(|m| readers[m]) {
                Some(crate::layout::Reader::Decimal { scale, .. }) => scale,
                _ => 0,
            })
            .collect();
        let protocol: Box<dyn Protocol> = match protocol {
            "canal-json" => Box::new(Canal::new(&spec, &classes, false)?),
            "canal-json-mq" => Box::new(Canal::new(&spec, &classes, true)?),
            "csv" => Box::new(Csv::new(&spec, &classes)?),
            "simple" => Box::new(Simple::new(&spec, &classes)?),
            "mysql" => Box::new(Sql::new(&spec, &classes, scales)?),
            other => return Err(PyValueError::new_err(format!("unknown protocol {other:?}"))),
        };
        let identity = columns.len() == n && columns.iter().enumerate().all(|(i, c)| *c == Some(i));
        Ok(Kernel { layout: Layout { readers }, columns, callbacks, split_keys, identity, protocol })
    }

    /// Encodes a transaction's rows events of this table (objects with `data`, `start`, `end`, `op` and
    /// `commit_ts`); `clock_ms` is the wall clock the protocol writes (canal-json `ts`, simple `buildTs`).
    /// Returns the protocol's result, or None: take the Python path for these events.
    fn encode(&self, py: Python<'_>, events: &Bound<'_, PyList>, clock_ms: i64) -> PyResult<Option<Py<PyAny>>> {
        let mut batch = Vec::with_capacity(events.len());
        for ev in events.iter() {
            let data = ev.getattr(pyo3::intern!(py, "data"))?;
            let data = data.cast_into::<PyBytes>().map_err(|e| PyValueError::new_err(e.to_string()))?;
            let start: usize = ev.getattr(pyo3::intern!(py, "start"))?.extract()?;
            let end: usize = ev.getattr(pyo3::intern!(py, "end"))?.extract()?;
            let commit_ts: u64 = ev.getattr(pyo3::intern!(py, "commit_ts"))?.extract()?;
            let op = ev.getattr(pyo3::intern!(py, "op"))?.getattr(pyo3::intern!(py, "value"))?;
            let op = match op.extract::<&str>()? {
                "INSERT" => Op::Insert,
                "UPDATE" => Op::Update,
                "DELETE" => Op::Delete,
                other => return Err(PyValueError::new_err(format!("unknown row op {other:?}"))),
            };
            batch.push((data, start, end, op, commit_ts));
        }
        let mut cb = PyCallbacks { py, funcs: &self.callbacks };
        let mut writer = self.protocol.writer(clock_ms);
        let run = catch_unwind(AssertUnwindSafe(|| -> Res<usize> {
            let mut rows = 0;
            for (data, start, end, op, commit_ts) in &batch {
                rows += self.event(data.as_bytes(), *start, *end, *op, *commit_ts, writer.as_mut(), &mut cb)?;
            }
            Ok(rows)
        }));
        match run {
            Ok(Ok(rows)) => Ok(Some(writer.finish(py, rows)?)),
            Ok(Err(Fallback)) | Err(_) => Ok(None),
        }
    }
}

impl Kernel {
    #[allow(clippy::too_many_arguments)]
    fn event(
        &self,
        ev: &[u8],
        start: usize,
        end: usize,
        op: Op,
        commit_ts: u64,
        writer: &mut dyn Writer,
        cb: &mut dyn Callbacks,
    ) -> Res<usize> {
        if end > ev.len() {
            return Err(Fallback);
        }
        let header = self.layout.header(ev, start, op == Op::Update)?;
        let mut pos = header.pos;
        let (mut raw_a, mut raw_b) = (Vec::new(), Vec::new());
        let (mut cells_a, mut cells_b) = (Vec::new(), Vec::new());
        let (mut scratch_a, mut scratch_b) = (Vec::new(), Vec::new());
        let mut rows = 0;
        while pos < end {
            scratch_a.clear();
            scratch_b.clear();
            self.layout.decode_image(ev, &mut pos, end, &header.present, &mut raw_a, &mut scratch_a, cb)?;
            let first = self.arrange(&raw_a, &mut cells_a);
            let first = Img { cells: first, bufs: Bufs { event: ev, scratch: &scratch_a } };
            match op {
                Op::Insert => writer.row(op, commit_ts, None, Some(&first))?,
                Op::Delete => writer.row(op, commit_ts, Some(&first), None)?,
                Op::Update => {
                    self.layout.decode_image(
                        ev,
                        &mut pos,
                        end,
                        &header.present_after,
                        &mut raw_b,
                        &mut scratch_b,
                        cb,
                    )?;
                    let second = self.arrange(&raw_b, &mut cells_b);
                    let second = Img { cells: second, bufs: Bufs { event: ev, scratch: &scratch_b } };
                    for &k in &self.split_keys {
                        if !same_bytes(&first.cells[k], &second.cells[k], &first.bufs, &second.bufs) {
                            return Err(Fallback); // a key-changing UPDATE: the sink splits it (Python path)
                        }
                    }
                    writer.row(op, commit_ts, Some(&first), Some(&second))?
                }
            }
            rows += 1;
        }
        if pos != end {
            return Err(Fallback);
        }
        Ok(rows)
    }

    /// The image in table-column order (the table map's order when they line up).
    fn arrange<'a>(&self, raw: &'a [Cell], out: &'a mut Vec<Cell>) -> &'a [Cell] {
        if self.identity {
            return raw;
        }
        out.clear();
        out.extend(self.columns.iter().map(|c| c.map(|m| raw[m]).unwrap_or(Cell::Null)));
        out
    }
}
