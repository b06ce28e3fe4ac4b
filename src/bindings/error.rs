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

use std::cell::RefCell;

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::PyErr;

use crate::error::CoreError;

thread_local! {
    /// The exception a signal handler raised while a run polled
    /// ([`interrupted`]): re-raised as the run's error.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// The core's interrupt hook (`engine::core::set_interrupt_hook`): runs the
/// interpreter's pending signal handlers (only the main thread has any); an
/// exception they raise (Ctrl-C's KeyboardInterrupt) ends the run and is
/// raised by the binding in its place.
pub(crate) fn interrupted() -> bool {
    Python::with_gil(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            PENDING.with(|p| *p.borrow_mut() = Some(e));
            true
        }
    })
}

/// The exception for `err` (a `Within` takes the class of the error it wraps).
fn exception(err: &CoreError, message: String) -> PyErr {
    match err {
        CoreError::Within { error, .. } => exception(error, message),
        CoreError::Interrupted => PENDING
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| PyKeyboardInterrupt::new_err(message)),
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
