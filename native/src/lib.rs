//! sparkcdc's native core, imported from Python as `sparkcdc._native`.
//!
//! Pure functions only: bytes and plain values in, bytes out; no I/O and no global state.

use pyo3::prelude::*;

/// The crate version, for diagnostics (`sparkcdc._native.VERSION`).
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", VERSION)?;
    Ok(())
}
