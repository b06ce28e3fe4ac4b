"""Test patterns, PNG output, depth-order files, and the module doctests."""

import doctest

import numpy as np
import pytest

from topocoll.errors import ParseError, SpecError
from topocoll.imaging import (PATTERNS, active, images, kernel, make_pattern, patterns, png,
                              read_depth_order, save_png, serial_composite)


@pytest.mark.parametrize("name", PATTERNS)
def test_patterns_are_premultiplied_float32(name):
    image = make_pattern(name, 2, 5, width=21, height=13, seed=3)
    assert image.shape == (13, 21, 4) and image.dtype == np.float32
    assert image.flags.c_contiguous
    alpha = image[..., 3]
    assert (alpha >= 0).all() and (alpha <= 1).all()
    assert (image[..., :3] <= alpha[..., None] + 1e-7).all()      # premultiplied
    np.testing.assert_array_equal(make_pattern(name, 2, 5, 21, 13, seed=3), image)


def test_checker_is_offset_from_the_previous_rank():
    width, height = 64, 48
    side = min(width, height) // 8
    step = side // 4
    previous = make_pattern("checker", 2, 8, width, height)[..., 3]
    current = make_pattern("checker", 3, 8, width, height)[..., 3]
    assert not np.array_equal(previous, current)
    # Rank r at (y, x) shows what rank r − 1 shows at (y + step, x + step).
    np.testing.assert_array_equal(current[:-step, :-step], previous[step:, step:])
    assert set(np.unique(current).tolist()) == {0.25, 0.5}      # every pixel active


def test_random_pattern_depends_on_seed_and_rank():
    a = make_pattern("random", 0, 2, 8, 8, seed=1)
    assert not np.array_equal(a, make_pattern("random", 1, 2, 8, 8, seed=1))
    assert not np.array_equal(a, make_pattern("random", 0, 2, 8, 8, seed=2))


def test_sphere_pattern_has_transparent_corners():
    image = make_pattern("sphere", 1, 4, 40, 30)
    assert image[0, 0].tolist() == [0, 0, 0, 0]
    assert 0.1 < np.mean(image[..., 3] > 0) < 0.5


def test_pattern_errors():
    with pytest.raises(SpecError, match=r"name='stripes', expected one of checker, random, sphere"):
        make_pattern("stripes", 0, 1, 4, 4)
    with pytest.raises(SpecError, match=r"rank=4, expected 0 <= rank < p=4"):
        make_pattern("checker", 4, 4, 4, 4)
    with pytest.raises(SpecError, match=r"width=0, expected an integer >= 1"):
        make_pattern("checker", 0, 4, 0, 4)


def test_save_png_roundtrip(tmp_path):
    from PIL import Image

    p = 3
    picture = serial_composite([make_pattern("sphere", r, p, 32, 24) for r in range(p)])
    path = save_png(picture, tmp_path / "out.png")
    with Image.open(path) as loaded:
        assert loaded.mode == "RGBA" and loaded.size == (32, 24)
        pixels = np.asarray(loaded)
    alpha = picture[..., 3]
    np.testing.assert_allclose(pixels[..., 3], np.rint(alpha * 255), atol=1)
    inside = alpha > 0.5
    straight = picture[..., :3][inside] / alpha[inside][:, None]
    np.testing.assert_allclose(pixels[..., :3][inside], np.rint(straight * 255), atol=1)
    path = save_png(picture, tmp_path / "rgb.png", background=(1.0, 1.0, 1.0))
    with Image.open(path) as loaded:
        assert loaded.mode == "RGB"
        assert np.asarray(loaded)[0, 0].tolist() == [255, 255, 255]    # background
    with pytest.raises(SpecError, match=r"save_png: image has shape \(4, 4\), expected"):
        save_png(np.zeros((4, 4), np.float32), tmp_path / "x.png")
    with pytest.raises(SpecError, match=r"background=\(2, 0, 0\), expected 3 floats"):
        save_png(picture, tmp_path / "x.png", background=(2, 0, 0))


def test_read_depth_order(tmp_path):
    path = tmp_path / "order.txt"
    path.write_text("# front to back\n2, 0\n3 1\n")
    assert read_depth_order(path, 4).tolist() == [2, 0, 3, 1]
    path.write_text("2 0\nthree 1\n")
    with pytest.raises(ParseError, match=r"order.txt:2: 'three' is not a rank"):
        read_depth_order(path, 4)
    path.write_text("0 1 1 2\n")
    with pytest.raises(SpecError, match=r"order.txt: depth_order: order repeats rank 1"):
        read_depth_order(path, 4)
    with pytest.raises(ParseError, match=r"missing.txt: cannot read \(.*\), expected a depth order"):
        read_depth_order(tmp_path / "missing.txt", 4)


@pytest.mark.parametrize("module", [active, images, kernel, patterns, png],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
