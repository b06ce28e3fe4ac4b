//! Python face of `crate::kernels`: the over operator and active pixels on
//! NumPy float32 arrays, with the interpreter released while Rust works.
//!
//! `topocoll.imaging` validates everything first and raises `SpecError`;
//! the checks here are the last line (a [`CoreError`] named after the
//! function, a `ValueError` with one line in Python) so that a direct caller
//! of `topocoll._core` cannot reach undefined behaviour.

use numpy::{
    IntoPyArray, PyArray1, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::error::CoreError;
use crate::kernels::{active, over, CHANNELS};

fn invalid(function: &'static str, message: String) -> CoreError {
    CoreError::InvalidArgument(message).within(function)
}

fn shape_str(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Shape of a pixel array: C-contiguous, at least 1-D, last axis 4.
fn pixel_shape<'a>(
    function: &'static str,
    name: &str,
    shape: &'a [usize],
    c_contiguous: bool,
) -> Result<&'a [usize], CoreError> {
    if shape.len() < 2 || shape[shape.len() - 1] != CHANNELS {
        return Err(invalid(
            function,
            format!(
                "{name} has shape {}, expected (..., {CHANNELS}) RGBA pixels",
                shape_str(shape)
            ),
        ));
    }
    if !c_contiguous {
        return Err(invalid(
            function,
            format!("{name} is not C-contiguous, expected a contiguous float32 array"),
        ));
    }
    Ok(shape)
}

fn readonly<'a>(
    function: &'static str,
    name: &str,
    a: &'a PyReadonlyArrayDyn<'_, f32>,
) -> Result<&'a [f32], CoreError> {
    pixel_shape(function, name, a.shape(), a.is_c_contiguous())?;
    a.as_slice()
        .map_err(|e| invalid(function, format!("{name}: {e}")))
}

fn readwrite<'a>(
    function: &'static str,
    name: &str,
    a: &'a mut PyReadwriteArrayDyn<'_, f32>,
) -> Result<&'a mut [f32], CoreError> {
    pixel_shape(function, name, a.shape(), a.is_c_contiguous())?;
    a.as_slice_mut()
        .map_err(|e| invalid(function, format!("{name}: {e}")))
}

fn same_shape(
    function: &'static str,
    name: &str,
    shape: &[usize],
    like: &[usize],
) -> Result<(), CoreError> {
    if shape != like {
        return Err(invalid(
            function,
            format!(
                "{name} has shape {}, expected {} like front",
                shape_str(shape),
                shape_str(like)
            ),
        ));
    }
    Ok(())
}

fn runs_slice<'a>(
    function: &'static str,
    name: &str,
    a: &'a PyReadonlyArrayDyn<'_, u32>,
) -> Result<&'a [u32], CoreError> {
    if !a.is_c_contiguous() {
        return Err(invalid(
            function,
            format!("{name} is not C-contiguous, expected a contiguous uint32 array"),
        ));
    }
    a.as_slice()
        .map_err(|e| invalid(function, format!("{name}: {e}")))
}

/// out = front over back (premultiplied RGBA float32, same shapes).
#[pyfunction]
#[pyo3(signature = (front, back, out, threads=1))]
fn kernels_over(
    py: Python<'_>,
    front: PyReadonlyArrayDyn<'_, f32>,
    back: PyReadonlyArrayDyn<'_, f32>,
    mut out: PyReadwriteArrayDyn<'_, f32>,
    threads: usize,
) -> PyResult<()> {
    const F: &str = "over";
    same_shape(F, "back", back.shape(), front.shape())?;
    same_shape(F, "out", out.shape(), front.shape())?;
    let f = readonly(F, "front", &front)?;
    let b = readonly(F, "back", &back)?;
    let o = readwrite(F, "out", &mut out)?;
    py.allow_threads(|| over::par_over(f, b, o, threads))
        .map_err(|e| e.within(F))?;
    Ok(())
}

/// back = front over back, in place.
#[pyfunction]
#[pyo3(signature = (front, back, threads=1))]
fn kernels_over_into_back(
    py: Python<'_>,
    front: PyReadonlyArrayDyn<'_, f32>,
    mut back: PyReadwriteArrayDyn<'_, f32>,
    threads: usize,
) -> PyResult<()> {
    const F: &str = "over_into_back";
    same_shape(F, "back", back.shape(), front.shape())?;
    let f = readonly(F, "front", &front)?;
    let b = readwrite(F, "back", &mut back)?;
    py.allow_threads(|| over::par_over_into_back(f, b, threads))
        .map_err(|e| e.within(F))?;
    Ok(())
}

/// front = front over back, in place.
#[pyfunction]
#[pyo3(signature = (front, back, threads=1))]
fn kernels_over_into_front(
    py: Python<'_>,
    mut front: PyReadwriteArrayDyn<'_, f32>,
    back: PyReadonlyArrayDyn<'_, f32>,
    threads: usize,
) -> PyResult<()> {
    const F: &str = "over_into_front";
    same_shape(F, "back", back.shape(), front.shape())?;
    let b = readonly(F, "back", &back)?;
    let f = readwrite(F, "front", &mut front)?;
    py.allow_threads(|| over::par_over_into_front(f, b, threads))
        .map_err(|e| e.within(F))?;
    Ok(())
}

type EncodedArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>);

fn to_arrays(py: Python<'_>, e: active::Encoded) -> EncodedArrays<'_> {
    (e.runs.into_pyarray(py), e.pixels.into_pyarray(py))
}

/// Run-length encode pixels: (runs as flat uint32 pairs, active pixels flat).
#[pyfunction]
fn kernels_active_encode<'py>(
    py: Python<'py>,
    pixels: PyReadonlyArrayDyn<'py, f32>,
) -> PyResult<EncodedArrays<'py>> {
    const F: &str = "encode_active";
    let p = readonly(F, "pixels", &pixels)?;
    let e = py
        .allow_threads(|| active::encode(p))
        .map_err(|e| e.within(F))?;
    Ok(to_arrays(py, e))
}

/// Decode runs + active pixels into the dense `out` (zeros elsewhere).
#[pyfunction]
fn kernels_active_decode(
    py: Python<'_>,
    runs: PyReadonlyArrayDyn<'_, u32>,
    pixels: PyReadonlyArrayDyn<'_, f32>,
    mut out: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    const F: &str = "decode";
    let r = runs_slice(F, "runs", &runs)?;
    let p = readonly(F, "pixels", &pixels)?;
    let o = readwrite(F, "out", &mut out)?;
    py.allow_threads(|| active::decode(r, p, o))
        .map_err(|e| e.within(F))?;
    Ok(())
}

/// front over back with both encoded; returns the encoded result.
#[pyfunction]
fn kernels_active_over<'py>(
    py: Python<'py>,
    front_runs: PyReadonlyArrayDyn<'py, u32>,
    front_pixels: PyReadonlyArrayDyn<'py, f32>,
    back_runs: PyReadonlyArrayDyn<'py, u32>,
    back_pixels: PyReadonlyArrayDyn<'py, f32>,
    n_pixels: usize,
) -> PyResult<EncodedArrays<'py>> {
    const F: &str = "over_sparse";
    let fr = runs_slice(F, "front runs", &front_runs)?;
    let fp = readonly(F, "front pixels", &front_pixels)?;
    let br = runs_slice(F, "back runs", &back_runs)?;
    let bp = readonly(F, "back pixels", &back_pixels)?;
    let e = py
        .allow_threads(|| active::over(fr, fp, br, bp, n_pixels))
        .map_err(|e| e.within(F))?;
    Ok(to_arrays(py, e))
}

/// back = front over back with front encoded, back dense (in place).
#[pyfunction]
fn kernels_active_over_into_back(
    py: Python<'_>,
    front_runs: PyReadonlyArrayDyn<'_, u32>,
    front_pixels: PyReadonlyArrayDyn<'_, f32>,
    mut back: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    const F: &str = "over_sparse";
    let fr = runs_slice(F, "front runs", &front_runs)?;
    let fp = readonly(F, "front pixels", &front_pixels)?;
    let b = readwrite(F, "back", &mut back)?;
    py.allow_threads(|| active::over_into_dense_back(fr, fp, b))
        .map_err(|e| e.within(F))?;
    Ok(())
}

/// front = front over back with front dense, back encoded (in place).
#[pyfunction]
fn kernels_active_over_into_front(
    py: Python<'_>,
    mut front: PyReadwriteArrayDyn<'_, f32>,
    back_runs: PyReadonlyArrayDyn<'_, u32>,
    back_pixels: PyReadonlyArrayDyn<'_, f32>,
) -> PyResult<()> {
    const F: &str = "over_sparse";
    let br = runs_slice(F, "back runs", &back_runs)?;
    let bp = readonly(F, "back pixels", &back_pixels)?;
    let f = readwrite(F, "front", &mut front)?;
    py.allow_threads(|| active::over_into_dense_front(f, br, bp))
        .map_err(|e| e.within(F))?;
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kernels_over, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_over_into_back, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_over_into_front, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_active_encode, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_active_decode, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_active_over, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_active_over_into_back, m)?)?;
    m.add_function(wrap_pyfunction!(kernels_active_over_into_front, m)?)?;
    Ok(())
}
