//! Pixel kernels for sort-last image compositing (plain Rust, no pyo3).
//!
//! - [`over`]: the Porter-Duff *over* operator on premultiplied RGBA `f32`
//!   pixels, dense, serial or split over threads.
//! - [`active`]: IceT-style active-pixel run-length encoding and compositing
//!   directly on the encoded form.
//!
//! Pixels are stored as flat `f32` slices, four channels per pixel
//! (R, G, B, A), 16 bytes per pixel as in Peterka et al., *Radix-k image
//! compositing* (SC 2009), §1.2 (`../shared/seeds/radix-k-compositing.txt`).

pub mod active;
pub mod over;

use std::fmt;

/// Channels per pixel: premultiplied R, G, B, A.
pub const CHANNELS: usize = 4;

/// Why a kernel refused its arguments. Each message is one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelError {
    /// A slice length is not a multiple of [`CHANNELS`].
    NotPixels { name: &'static str, len: usize },
    /// Two slices that must hold the same pixels differ in length.
    LengthMismatch {
        name: &'static str,
        len: usize,
        expected: usize,
    },
    /// A run-length encoding is inconsistent with its pixels.
    BadRuns(String),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::NotPixels { name, len } => write!(
                f,
                "{name} has {len} floats, expected a multiple of {CHANNELS} (RGBA pixels)"
            ),
            KernelError::LengthMismatch {
                name,
                len,
                expected,
            } => {
                write!(f, "{name} has {len} floats, expected {expected}")
            }
            KernelError::BadRuns(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for KernelError {}

pub(crate) fn check_pixels(name: &'static str, pixels: &[f32]) -> Result<(), KernelError> {
    if !pixels.len().is_multiple_of(CHANNELS) {
        return Err(KernelError::NotPixels {
            name,
            len: pixels.len(),
        });
    }
    Ok(())
}

pub(crate) fn check_same(
    name: &'static str,
    pixels: &[f32],
    expected: usize,
) -> Result<(), KernelError> {
    check_pixels(name, pixels)?;
    if pixels.len() != expected {
        return Err(KernelError::LengthMismatch {
            name,
            len: pixels.len(),
            expected,
        });
    }
    Ok(())
}
