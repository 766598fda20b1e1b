//! sparkcdc's native core, imported from Python as `sparkcdc._native`: binlog rows events straight to a
//! sink's payloads.
//!
//! The surface is one class. `Kernel(protocol, layout, columns, callbacks, spec)` is built once per table map,
//! table version and codec config from plain values the Python codecs derive from their own per-table plans;
//! `Kernel.encode(events, clock_ms)` turns the rows events of one table's transaction into what the protocol's
//! Python encoder returns for the same rows (storage file bytes, Kafka message values, MySQL statement values).
//! It returns None when the Python path must handle these events instead (a value it does not render, a
//! key-changing UPDATE the sink splits, a truncated event...): the Python reference then writes its exact
//! output, or raises its exact error. Pure: no I/O, no global state, no panic crosses the boundary.

mod canal;
mod csv;
mod kernel;
mod layout;
mod simple;
mod spec;
mod sql;
mod text;

use pyo3::prelude::*;

/// The crate version, for diagnostics (`sparkcdc._native.VERSION`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", VERSION)?;
    m.add_class::<kernel::Kernel>()?;
    Ok(())
}
