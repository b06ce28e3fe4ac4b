"""The over operator: Rust kernel == NumPy reference, algebra, z-buffer, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll import _core
from topocoll.errors import SpecError
from topocoll.imaging import (depth_order, depth_positions, make_pattern, over, over_numpy,
                              serial_composite, zbuffer_numpy)

SETTINGS = settings(max_examples=40, deadline=None)


def random_pixels(shape, seed, *, transparent_fraction=0.0):
    """Premultiplied RGBA with random alpha (some exactly 0 and 1)."""
    rng = np.random.default_rng(seed)
    image = rng.random(shape + (4,), dtype=np.float32)
    alpha = image[..., 3]
    alpha[rng.random(shape) < 0.05] = 1.0
    alpha[rng.random(shape) < transparent_fraction] = 0.0
    image[..., :3] *= image[..., 3:]
    return image


shapes = st.one_of(
    st.tuples(st.integers(0, 300)),
    st.tuples(st.integers(1, 17), st.integers(1, 23)),
)


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), threads=st.sampled_from([None, 1, 2, 3]))
def test_rust_kernel_equals_numpy_reference_bit_for_bit(shape, seed, threads):
    front = random_pixels(shape, seed)
    back = random_pixels(shape, seed + 1)
    expected = over_numpy(front, back)
    np.testing.assert_array_equal(over(front, back, threads=threads), expected)
    # In place into back, and into front.
    b = back.copy()
    assert over(front, b, out=b, threads=threads) is b
    np.testing.assert_array_equal(b, expected)
    f = front.copy()
    assert over(f, back, out=f, threads=threads) is f
    np.testing.assert_array_equal(f, expected)
    # A separate out.
    out = np.full_like(front, np.nan)
    over(front, back, out=out, threads=threads)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_large_image_streaming_path_and_thread_split(threads):
    # 2**20 + 5 pixels: out is > 16 MiB (non-temporal stores) and the pieces
    # of the threads end inside a block.
    n = 2**20 + 5
    front, back = random_pixels((n,), 11), random_pixels((n,), 12)
    expected = over_numpy(front, back)
    np.testing.assert_array_equal(over(front, back, threads=threads), expected)
    over(front, back, out=back, threads=threads)
    np.testing.assert_array_equal(back, expected)


def test_numpy_reference_matches_the_formula_in_float64():
    front, back = random_pixels((50,), 1), random_pixels((50,), 2)
    f64, b64 = front.astype(np.float64), back.astype(np.float64)
    expected = f64 + (1.0 - f64[:, 3:4]) * b64
    np.testing.assert_allclose(over_numpy(front, back), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(over_numpy(f64, b64), expected)


def test_non_contiguous_inputs_are_accepted():
    big_f, big_b = random_pixels((8, 10), 3), random_pixels((8, 10), 4)
    front, back = big_f[:, 1:7], big_b[:, 2:8]
    assert not front.flags.c_contiguous
    np.testing.assert_array_equal(over(front, back), over_numpy(front, back))


def test_all_three_arguments_the_same_array():
    x = random_pixels((33,), 5)
    expected = over_numpy(x, x)
    over(x, x, out=x)
    np.testing.assert_array_equal(x, expected)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200))
def test_over_is_associative_to_1e_6(seed, n):
    a, b, c = (random_pixels((n,), seed + i) for i in range(3))
    left = over(over(a, b), c)
    right = over(a, over(b, c))
    np.testing.assert_allclose(left, right, rtol=0, atol=1e-6)


def test_over_is_not_commutative():
    red = np.array([[0.5, 0.0, 0.0, 0.5]], np.float32)
    blue = np.array([[0.0, 0.0, 1.0, 1.0]], np.float32)
    assert over(red, blue).tolist() == [[0.5, 0.0, 0.5, 1.0]]
    assert over(blue, red).tolist() == [[0.0, 0.0, 1.0, 1.0]]
    a, b = random_pixels((100,), 7), random_pixels((100,), 8)
    assert np.abs(over(a, b) - over(b, a)).max() > 0.1


def test_serial_composite_follows_depth_order():
    p = 5
    images = [make_pattern("checker", r, p, 12, 9) for r in range(p)]
    expected = images[p - 1]
    for r in reversed(range(p - 1)):
        expected = over_numpy(images[r], expected)
    np.testing.assert_array_equal(serial_composite(images), expected)
    order = [3, 0, 4, 2, 1]
    expected = images[1]
    for r in [2, 4, 0, 3]:
        expected = over_numpy(images[r], expected)
    np.testing.assert_allclose(serial_composite(images, order), expected, atol=1e-6)
    assert np.abs(serial_composite(images, order) - serial_composite(images)).max() > 0.01
    assert depth_positions(order)[3] == 0 and depth_positions(order)[1] == 4


def fragments(n, seed, *, depth_levels):
    rng = np.random.default_rng(seed)
    color = random_pixels((n,), seed)
    # Few levels force ties; colours are drawn from few values too, so some
    # ties are broken only by later channels.
    color[rng.random(n) < 0.3] = 0.25
    depth = rng.integers(0, depth_levels, n).astype(np.float32)
    return color, depth


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 120), levels=st.sampled_from([2, 1000]))
def test_zbuffer_is_commutative_and_associative_including_ties(seed, n, levels):
    a, b, c = (fragments(n, seed + i, depth_levels=levels) for i in range(3))
    ab = zbuffer_numpy(*a, *b)
    ba = zbuffer_numpy(*b, *a)
    np.testing.assert_array_equal(ab[0], ba[0])
    np.testing.assert_array_equal(ab[1], ba[1])
    left = zbuffer_numpy(*ab, *c)
    right = zbuffer_numpy(*a, *zbuffer_numpy(*b, *c))
    np.testing.assert_array_equal(left[0], right[0])
    np.testing.assert_array_equal(left[1], right[1])
    # The kept fragment is the nearest.
    np.testing.assert_array_equal(ab[1], np.minimum(a[1], b[1]))


def test_zbuffer_keeps_nearest_pixel_whole():
    color_a = np.array([[1, 0, 0, 1], [1, 0, 0, 1]], np.float32)
    color_b = np.array([[0, 1, 0, 1], [0, 1, 0, 1]], np.float32)
    color, depth = zbuffer_numpy(color_a, np.array([0.2, 0.8], np.float32),
                                 color_b, np.array([0.5, 0.5], np.float32))
    assert color.tolist() == [[1, 0, 0, 1], [0, 1, 0, 1]]
    assert depth.tolist() == pytest.approx([0.2, 0.5])


def one_line_error(call, match):
    with pytest.raises(SpecError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def test_bad_inputs_raise_one_line_spec_errors():
    good = np.zeros((4, 4), np.float32)
    one_line_error(lambda: over(np.zeros((4, 3), np.float32), good),
                   r"over: front has shape \(4, 3\), expected \(height, width, 4\)")
    one_line_error(lambda: over(good.astype(np.float64), good),
                   r"over: front has dtype float64, expected float32")
    one_line_error(lambda: over(good, np.zeros((5, 4), np.float32)),
                   r"over: back has shape \(5, 4\), expected \(4, 4\) like front")
    one_line_error(lambda: over(good, good, threads=0), r"over: threads=0, expected a positive")
    one_line_error(lambda: over(good, good, threads=1.5), r"threads=1.5")
    one_line_error(lambda: over(good, good.copy(), out=np.zeros((3, 4), np.float32)),
                   r"over: out has shape \(3, 4\), expected \(4, 4\) like front")
    strided = np.zeros((4, 8), np.float32)[:, ::2]
    one_line_error(lambda: over(good, good.copy(), out=strided), r"out is not a writeable C-contig")
    frozen = good.copy()
    frozen.flags.writeable = False
    one_line_error(lambda: over(good, good.copy(), out=frozen), r"out is not a writeable")
    shared = np.zeros((5, 4), np.float32)
    one_line_error(lambda: over(shared[:4], good, out=shared[1:]), r"out partly overlaps")
    one_line_error(lambda: over_numpy(good, good.astype(np.float64)),
                   r"back has dtype float64, expected float32 like front")
    one_line_error(lambda: zbuffer_numpy(good, np.zeros(3), good, np.zeros(4)),
                   r"depth_a has shape \(3,\), expected \(4,\)")
    one_line_error(lambda: serial_composite([]), r"no images")
    one_line_error(lambda: serial_composite([good, np.zeros((2, 4), np.float32)]),
                   r"images\[1\] has shape \(2, 4\), expected \(4, 4\) like images\[0\]")


def test_depth_order_validation():
    assert depth_order(3).tolist() == [0, 1, 2]
    assert depth_order(3, [2, 0, 1]).tolist() == [2, 0, 1]
    one_line_error(lambda: depth_order(0), r"p=0, expected a positive integer")
    one_line_error(lambda: depth_order(3, [0, 1]), r"order has 2 ranks, expected p=3")
    one_line_error(lambda: depth_order(3, [0, 1, 3]), r"order contains rank 3, expected ranks 0..2")
    one_line_error(lambda: depth_order(3, [0, 1, 1]), r"order repeats rank 1")
    one_line_error(lambda: depth_order(2, [0, 1.0]), r"order contains 1.0, expected integer")
    one_line_error(lambda: serial_composite([np.zeros((1, 4), np.float32)] * 2, [1, 1]),
                   r"repeats rank 1")


def test_rust_binding_checks_its_own_arguments():
    # A direct caller of topocoll._core gets a ValueError, not a crash.
    good = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"over: out has shape \(3, 4\), expected \(4, 4\)"):
        _core.kernels_over(good, good, np.zeros((3, 4), np.float32), 1)
    with pytest.raises(ValueError, match=r"expected \(\.\.\., 4\) RGBA"):
        _core.kernels_over(np.zeros(8, np.float32), np.zeros(8, np.float32),
                           np.zeros(8, np.float32), 1)
    with pytest.raises(ValueError, match=r"not C-contiguous"):
        _core.kernels_over_into_back(good, np.zeros((4, 8), np.float32)[:, ::2], 1)
    with pytest.raises(TypeError):
        _core.kernels_over(good.astype(np.float64), good, good.copy(), 1)
