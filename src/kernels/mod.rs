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

use crate::error::CoreError;

/// Channels per pixel: premultiplied R, G, B, A.
pub const CHANNELS: usize = 4;

pub(crate) fn check_pixels(name: &'static str, pixels: &[f32]) -> Result<(), CoreError> {
    if !pixels.len().is_multiple_of(CHANNELS) {
        return Err(CoreError::NotPixels {
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
) -> Result<(), CoreError> {
    check_pixels(name, pixels)?;
    if pixels.len() != expected {
        return Err(CoreError::LengthMismatch {
            name,
            len: pixels.len(),
            expected,
        });
    }
    Ok(())
}
