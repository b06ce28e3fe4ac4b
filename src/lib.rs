//! The topocoll Rust core, built by maturin as `topocoll._core`.
//!
//! Core modules (`kernels`, `routing`, later `engine`) are plain Rust with no
//! pyo3, so `cargo test` runs without Python. They fail with the one error
//! type [`error::CoreError`]; `bindings/error.rs` maps it to Python, once. The Python faces live in
//! `bindings/`, one file per core module, each with a `register` function.
//! (The style guide keeps every binding in lib.rs; one binding file per area
//! keeps lib.rs a table of contents and lets areas grow independently.)

use pyo3::prelude::*;

mod bindings;
pub mod engine;
pub mod error;
pub mod kernels;
pub mod routing;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    bindings::register_all(m)?;
    Ok(())
}
