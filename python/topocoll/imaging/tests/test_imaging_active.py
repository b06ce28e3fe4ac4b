"""Active pixels: run-length roundtrip, sparse over == dense over, bytes, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll import _core
from topocoll.errors import SpecError
from topocoll.imaging import (SparseImage, decode_active, encode_active, make_pattern,
                              over_numpy, over_sparse)

SETTINGS = settings(max_examples=40, deadline=None)


def sparse_pixels(shape, seed, active_fraction):
    """Random premultiplied pixels, active in runs of 1..40 pixels."""
    rng = np.random.default_rng(seed)
    image = rng.random(shape + (4,), dtype=np.float32)
    image[..., :3] *= image[..., 3:]
    flat = image.reshape(-1, 4)
    i = 0
    while i < len(flat):
        run = int(rng.integers(1, 41))
        if rng.random() >= active_fraction:
            flat[i:i + run] = 0.0
        i += run
    return image


shapes = st.one_of(st.tuples(st.integers(0, 400)),
                   st.tuples(st.integers(1, 12), st.integers(1, 30)))
fractions = st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0])


def expected_runs(image):
    """Reference encoder in plain Python."""
    active = np.any(image.reshape(-1, 4) != 0, axis=1)
    runs, i, n = [], 0, len(active)
    while i < n:
        start = i
        while i < n and not active[i]:
            i += 1
        mid = i
        while i < n and active[i]:
            i += 1
        runs.append([mid - start, i - mid])
    return runs


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), fraction=fractions)
def test_roundtrip_and_bytes(shape, seed, fraction):
    image = sparse_pixels(shape, seed, fraction)
    sparse = encode_active(image)
    assert sparse.shape == image.shape
    assert sparse.runs.tolist() == expected_runs(image)
    np.testing.assert_array_equal(sparse.decode(), image)
    mask = np.any(image.reshape(-1, 4) != 0, axis=1)
    np.testing.assert_array_equal(sparse.pixels, image.reshape(-1, 4)[mask])
    assert sparse.nbytes == 8 * len(sparse.runs) + 16 * int(mask.sum())
    assert sparse.dense_nbytes == image.nbytes


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), ff=fractions, fb=fractions)
def test_sparse_over_equals_dense_over(shape, seed, ff, fb):
    front = sparse_pixels(shape, seed, ff)
    back = sparse_pixels(shape, seed + 1, fb)
    expected = over_numpy(front, back)
    sf, sb = encode_active(front), encode_active(back)
    both = over_sparse(sf, sb)
    assert isinstance(both, SparseImage)
    np.testing.assert_array_equal(both.decode(), expected)
    # The result is canonical: what encoding the dense result gives.
    assert both.runs.tolist() == expected_runs(expected)
    np.testing.assert_array_equal(over_sparse(sf, back), expected)
    np.testing.assert_array_equal(over_sparse(front, sb), expected)
    np.testing.assert_array_equal(over_sparse(front, back), expected)
    # In place, dense side.
    b = back.copy()
    assert over_sparse(sf, b, out=b) is b
    np.testing.assert_array_equal(b, expected)
    f = front.copy()
    assert over_sparse(f, sb, out=f) is f
    np.testing.assert_array_equal(f, expected)
    out = np.full_like(front, np.nan)
    over_sparse(sf, back, out=out)
    np.testing.assert_array_equal(out, expected)


def test_sparse_over_is_still_ordered():
    a = np.zeros((3, 4), np.float32)
    b = np.zeros((3, 4), np.float32)
    a[1] = [0.5, 0, 0, 0.5]
    b[1:] = [0, 0, 1, 1]
    ab = over_sparse(encode_active(a), encode_active(b)).decode()
    ba = over_sparse(encode_active(b), encode_active(a)).decode()
    assert ab[1].tolist() == [0.5, 0, 0.5, 1] and ba[1].tolist() == [0, 0, 1, 1]


def test_emissive_pixel_is_active_and_zero_is_not():
    image = np.zeros((4, 4), np.float32)
    image[1] = [0.2, 0.0, 0.0, 0.0]        # alpha 0, colour not: adds light under over
    image[2] = [0.0, 0.0, 0.0, -0.0]       # negative zero is still transparent
    sparse = encode_active(image)
    assert sparse.runs.tolist() == [[1, 1], [2, 0]]
    back = np.full((4, 4), 0.5, np.float32)
    np.testing.assert_array_equal(over_sparse(sparse, back), over_numpy(image, back))


def test_sphere_pattern_compresses():
    image = make_pattern("sphere", 0, 1, 64, 48)
    sparse = encode_active(image)
    active = np.count_nonzero(image[..., 3])
    assert sparse.n_active == active < image.shape[0] * image.shape[1]
    assert len(sparse.runs) <= 48 + 1             # about one run per row
    assert sparse.nbytes < 0.5 * image.nbytes


def test_bad_sparse_inputs():
    good = encode_active(np.ones((4, 4), np.float32))
    with pytest.raises(SpecError, match=r"SparseImage: runs cover 5 pixels, expected 4"):
        SparseImage(np.array([[1, 4]], np.uint32), np.zeros((4, 4), np.float32), (4, 4))
    with pytest.raises(SpecError, match=r"runs count 3 active pixels, expected 4"):
        SparseImage(np.array([[1, 3]], np.uint32), np.zeros((4, 4), np.float32), (4, 4))
    with pytest.raises(SpecError, match=r"runs is a \(2,\) int64 array, expected a \(r, 2\) uint32"):
        SparseImage(np.array([0, 4]), np.zeros((4, 4), np.float32), (4, 4))
    with pytest.raises(SpecError, match=r"shape=\(4, 3\), expected"):
        SparseImage(good.runs, good.pixels, (4, 3))
    with pytest.raises(SpecError, match=r"over_sparse: back has shape \(5, 4\), expected \(4, 4\)"):
        over_sparse(good, encode_active(np.ones((5, 4), np.float32)))
    with pytest.raises(SpecError, match=r"out given with two SparseImages"):
        over_sparse(good, good, out=np.zeros((4, 4), np.float32))
    with pytest.raises(SpecError, match=r"decode_active: sparse is a \(4, 4\) float32 array, expected a SparseImage"):
        decode_active(np.zeros((4, 4), np.float32))
    with pytest.raises(SpecError, match=r"decode_active: out has shape \(2, 4\), expected \(4, 4\)"):
        decode_active(good, out=np.zeros((2, 4), np.float32))
    with pytest.raises(SpecError, match=r"encode_active: pixels has dtype float64"):
        encode_active(np.zeros((4, 4)))
    # The Rust side checks runs against pixels on its own, too.
    with pytest.raises(ValueError, match=r"decode: runs cover 3 pixels, expected 4"):
        _core.kernels_active_decode(np.array([1, 2], np.uint32), np.zeros((2, 4), np.float32),
                                    np.zeros((4, 4), np.float32))
