//! Python bindings, one module per core area. Each exposes
//! `register(m: &Bound<PyModule>) -> PyResult<()>`; add one line below.

use pyo3::prelude::*;

mod kernels;

pub fn register_all(m: &Bound<'_, PyModule>) -> PyResult<()> {
    kernels::register(m)?;
    let _ = m;
    Ok(())
}
