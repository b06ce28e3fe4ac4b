//! The one error type of the Rust core (plain Rust, no pyo3).
//!
//! Every fallible core function returns `Result<T, CoreError>`; the message
//! of each variant is one line: what is wrong and what was expected. The
//! Python face adds nothing but the mapping to a Python exception, written
//! once in `bindings/error.rs` (`impl From<CoreError> for PyErr`), so a
//! binding propagates a core error with `?`.
//!
//! The Python packages validate every argument before calling the core and
//! raise `topocoll.errors` themselves; a `CoreError` that reaches Python is
//! the last line of defence, and `topocoll.topology` re-raises routing errors
//! as `TopologyError` with the routing, the topology and node names added.

use std::fmt;

use crate::kernels::CHANNELS;

/// Why the core refused its arguments or could not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A pixel slice length is not a multiple of [`CHANNELS`].
    NotPixels { name: &'static str, len: usize },
    /// Two slices that must hold the same pixels differ in length.
    LengthMismatch {
        name: &'static str,
        len: usize,
        expected: usize,
    },
    /// A run-length encoding is inconsistent with its pixels.
    BadRuns(String),
    /// An argument outside its domain: a shape, a name, a permutation, an id
    /// or a length that does not match another.
    InvalidArgument(String),
    /// A network that cannot be built or is inconsistent (sizes, link table).
    Topology(String),
    /// A pair the routing cannot route (missing table entry, loop, dead end).
    NoRoute(String),
    /// The user asked a long run to stop (Ctrl-C; `engine::core::Poll`).
    Interrupted,
    /// `error` raised inside the Python-facing function `function`; shown as
    /// `function: error`.
    Within {
        function: &'static str,
        error: Box<CoreError>,
    },
}

impl CoreError {
    /// This error as raised by the Python-facing function `function`.
    pub fn within(self, function: &'static str) -> CoreError {
        CoreError::Within {
            function,
            error: Box::new(self),
        }
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::NotPixels { name, len } => write!(
                f,
                "{name} has {len} floats, expected a multiple of {CHANNELS} (RGBA pixels)"
            ),
            CoreError::LengthMismatch {
                name,
                len,
                expected,
            } => {
                write!(f, "{name} has {len} floats, expected {expected}")
            }
            CoreError::BadRuns(message)
            | CoreError::InvalidArgument(message)
            | CoreError::Topology(message)
            | CoreError::NoRoute(message) => f.write_str(message),
            CoreError::Interrupted => f.write_str("interrupted"),
            CoreError::Within { function, error } => write!(f, "{function}: {error}"),
        }
    }
}

impl std::error::Error for CoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_context_prefixes_them() {
        let e = CoreError::NotPixels {
            name: "front",
            len: 7,
        };
        assert_eq!(
            e.to_string(),
            "front has 7 floats, expected a multiple of 4 (RGBA pixels)"
        );
        let e = CoreError::NoRoute("route 0 -> 3 loops".into()).within("route");
        assert_eq!(e.to_string(), "route: route 0 -> 3 loops");
        assert!(!e.to_string().contains('\n'));
    }
}
