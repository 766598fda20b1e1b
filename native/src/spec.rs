//! Reading a kernel's spec: the plain values (a dict) the Python codecs derive from their per-table plans.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pub struct Spec<'a, 'py> {
    dict: &'a Bound<'py, PyDict>,
}

fn missing(key: &str) -> PyErr {
    PyValueError::new_err(format!("native kernel spec has no {key:?}"))
}

impl<'a, 'py> Spec<'a, 'py> {
    pub fn new(dict: &'a Bound<'py, PyDict>) -> Self {
        Spec { dict }
    }

    pub fn dict_item(&self, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.dict.get_item(key)?.ok_or_else(|| missing(key))
    }

    pub fn bytes(&self, key: &str) -> PyResult<Vec<u8>> {
        let item = self.dict_item(key)?;
        let b = item.cast::<PyBytes>().map_err(|_| PyValueError::new_err(format!("spec {key:?} must be bytes")))?;
        Ok(b.as_bytes().to_vec())
    }

    pub fn bytes_list(&self, key: &str) -> PyResult<Vec<Vec<u8>>> {
        self.dict_item(key)?.extract::<Vec<Vec<u8>>>()
    }

    pub fn flag(&self, key: &str) -> PyResult<bool> {
        self.dict_item(key)?.extract()
    }

    pub fn int(&self, key: &str) -> PyResult<i64> {
        self.dict_item(key)?.extract()
    }

    pub fn ints(&self, key: &str) -> PyResult<Vec<i64>> {
        self.dict_item(key)?.extract()
    }

    pub fn pairs(&self, key: &str) -> PyResult<Vec<(i64, i64)>> {
        self.dict_item(key)?.extract()
    }

    /// Table column positions (each below `width`).
    pub fn positions(&self, key: &str, width: usize) -> PyResult<Vec<usize>> {
        let values: Vec<i64> = self.dict_item(key)?.extract()?;
        values
            .into_iter()
            .map(|v| {
                if v >= 0 && (v as usize) < width {
                    Ok(v as usize)
                } else {
                    Err(PyValueError::new_err(format!("spec {key:?}: column {v} out of range")))
                }
            })
            .collect()
    }
}
