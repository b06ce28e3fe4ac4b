//! Python bindings, one module per core area. Each exposes
//! `register(m: &Bound<PyModule>) -> PyResult<()>`; add one line below.
//! A core error crosses with `?`: [`error`] holds its one mapping to Python.

use pyo3::prelude::*;

mod config;
mod engine;
mod error;
mod kernels;
mod routing;
mod traffic;

pub fn register_all(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::engine::core::set_interrupt_hook(error::interrupted);
    engine::register(m)?;
    kernels::register(m)?;
    routing::register(m)?;
    traffic::register(m)?;
    let _ = m;
    Ok(())
}
