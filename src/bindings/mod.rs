//! Python bindings, one module per core area. Each exposes
//! `register(m: &Bound<PyModule>) -> PyResult<()>`; add one line below.

use pyo3::prelude::*;

pub fn register_all(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let _ = m;
    Ok(())
}
