"""Notched box plots (network-noise paper §2.1, Fig. 3): statistics against
NumPy by hand, the image's size, one box per series, the notch pulled in at
the median and clipped at the hinges, one-sample series, one-line errors."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.viz.boxplot import (BACKGROUND, BOX_FILL, BOX_OUTLINE, MEDIAN_COLOUR, box_stats, layout,
                                  write_boxplot_png)

Image = pytest.importorskip("PIL.Image")


def _pixels(path):
    with Image.open(path) as img:
        assert img.format == "PNG"
        return np.asarray(img.convert("RGB"))


def _is(pixels, x, y, colour):
    return tuple(int(c) for c in pixels[y, x]) == colour


def test_box_stats_are_numpy_percentiles_and_the_mcgill_notch():
    values = np.random.default_rng(4).lognormal(size=37)
    s = box_stats(values)
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    half = 1.57 * (q3 - q1) / np.sqrt(37)
    assert (s["q1"], s["median"], s["q3"]) == pytest.approx((q1, med, q3), rel=1e-12)
    assert s["notch"] == pytest.approx((med - half, med + half), rel=1e-12)
    assert (s["min"], s["max"], s["n"]) == (values.min(), values.max(), 37)


def test_image_size_and_one_box_per_series(tmp_path):
    same = np.linspace(1.0, 3.0, 101)                      # every box on the same rows
    series = [(f"s{i}", same + 0.0) for i in range(5)]
    lay = layout(series)
    pixels = _pixels(write_boxplot_png(series, tmp_path / "b.png", title="t", ylabel="slowdown"))
    assert pixels.shape == (314, 68 + 84 * 5 + 12, 3) == (lay.height, lay.width, 3)
    assert len(lay.boxes) == 5
    b = lay.boxes[0]
    row = pixels[(b.y_q3 + b.y_notch_hi) // 2]              # between the upper hinge and the notch
    inside = np.all(row == BOX_FILL, axis=1).astype(int)
    starts = np.flatnonzero(np.diff(np.r_[0, inside]) == 1)
    assert len(starts) == 5                                # five filled boxes, left to right
    assert [box.x0 < x < box.x1 for box, x in zip(lay.boxes, starts)] == [True] * 5


def test_notch_is_pulled_in_at_the_median_and_straight_above_and_below(tmp_path):
    values = np.linspace(0.0, 10.0, 401)                   # n = 401: a notch well inside the box
    lay = layout({"wide": values})
    b = lay.boxes[0]
    assert b.y_q3 < b.y_notch_hi < b.y_median < b.y_notch_lo < b.y_q1
    pixels = _pixels(write_boxplot_png({"wide": values}, tmp_path / "n.png"))
    for x in (b.x0, b.x1):
        # straight sides from the hinges to the notch ends ...
        assert all(_is(pixels, x, y, BOX_OUTLINE) for y in range(b.y_q3, b.y_notch_hi + 1))
        assert all(_is(pixels, x, y, BOX_OUTLINE) for y in range(b.y_notch_lo, b.y_q1 + 1))
        # ... and pulled in at the median: outside the box there
        assert _is(pixels, x, b.y_median, BACKGROUND)
    assert _is(pixels, b.x0 + b.indent + 2, b.y_median, MEDIAN_COLOUR)
    assert _is(pixels, (b.x0 + b.x1) // 2, b.y_max, BOX_OUTLINE)   # whisker cap at the maximum
    assert _is(pixels, (b.x0 + b.x1) // 2, b.y_min, BOX_OUTLINE)


def test_a_notch_wider_than_the_box_is_clipped_to_the_hinges():
    b = layout({"few": [1.0, 2.0, 3.0, 4.0, 5.0]}).boxes[0]   # 3 ± 2.8 reaches past q1 = 2 and q3 = 4
    assert (b.y_notch_hi, b.y_notch_lo) == (b.y_q3, b.y_q1)


def test_one_sample_is_a_flat_box_with_its_median(tmp_path):
    lay = layout([("one", [2.5]), ("two", [1.0, 4.0])])
    b = lay.boxes[0]
    assert b.y_q1 == b.y_q3 == b.y_median == b.y_min == b.y_max
    pixels = _pixels(write_boxplot_png([("one", [2.5]), ("two", [1.0, 4.0])], tmp_path / "o.png"))
    assert _is(pixels, (b.x0 + b.x1) // 2, b.y_median, MEDIAN_COLOUR)
    s = box_stats([2.5])
    assert s["notch"] == (2.5, 2.5) and s["n"] == 1


def test_reference_line_is_inside_the_value_range(tmp_path):
    lay = layout({"a": [2.0, 3.0]}, reference=1.0)
    assert lay.lo < 1.0 < lay.hi
    pixels = _pixels(write_boxplot_png({"a": [2.0, 3.0]}, tmp_path / "r.png", reference=1.0))
    row = pixels[lay.y(1.0)]
    assert np.any(np.all(row == (200, 60, 60), axis=1))


@pytest.mark.parametrize("series, message", [
    ([], "no series"),
    ({}, "no series"),
    ([("empty", [])], "series 'empty' has no samples"),
    ({"bad": [1.0, float("nan")]}, "series 'bad' has a non-finite sample"),
    ({"text": ["x"]}, "series 'text' are not numbers"),
    (["oops"], "expected a (label, samples) pair"),
])
def test_bad_input_is_a_one_line_error(tmp_path, series, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        write_boxplot_png(series, tmp_path / "x.png")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "x.png").exists()
