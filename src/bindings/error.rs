//! The one mapping of [`CoreError`] to a Python exception, so every binding
//! propagates a core error with `?`.
//!
//! Every kind is a `ValueError` carrying the core's one-line message, as the
//! core has always raised: `topocoll.errors`' `SpecError` and `TopologyError`
//! subclass `ValueError`, and the Python packages that call the core
//! (`topocoll.topology`, `topocoll.imaging`) validate first and re-raise what
//! still gets through with their own context (routing name, topology spec,
//! node names), which the core does not know. A kind that should reach Python
//! as another class changes here and nowhere else.

use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

use crate::error::CoreError;

/// The exception for `err` (a `Within` takes the class of the error it wraps).
fn exception(err: &CoreError, message: String) -> PyErr {
    match err {
        CoreError::Within { error, .. } => exception(error, message),
        CoreError::NotPixels { .. }
        | CoreError::LengthMismatch { .. }
        | CoreError::BadRuns(_)
        | CoreError::InvalidArgument(_)
        | CoreError::Topology(_)
        | CoreError::NoRoute(_) => PyValueError::new_err(message),
    }
}

impl From<CoreError> for PyErr {
    fn from(err: CoreError) -> PyErr {
        exception(&err, err.to_string())
    }
}
