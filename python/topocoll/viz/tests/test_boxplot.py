"""Notched box plots (network-noise paper §2.1, Fig. 3): statistics against
NumPy by hand, the figure drawn from them (one box per series, the notch
pulled in at the median and clipped at the hinges, whiskers to the range),
one-sample series, the reference line, one-line errors."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.viz.boxplot import REFERENCE_COLOUR, box_stats, boxplot_figure, write_boxplot_png


def test_box_stats_are_numpy_percentiles_and_the_mcgill_notch():
    values = np.random.default_rng(4).lognormal(size=37)
    s = box_stats(values)
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    half = 1.57 * (q3 - q1) / np.sqrt(37)
    assert (s["q1"], s["median"], s["q3"]) == pytest.approx((q1, med, q3), rel=1e-12)
    assert s["notch"] == pytest.approx((med - half, med + half), rel=1e-12)
    assert (s["min"], s["max"], s["n"]) == (values.min(), values.max(), 37)


def _outline(fig, i):
    """(x, y) vertices of box ``i``'s outline."""
    return fig.axes[0].patches[i].get_path().vertices


def test_one_box_per_series_left_to_right_with_its_labels():
    same = np.linspace(1.0, 3.0, 101)
    fig = boxplot_figure([(f"s{i}", same + i) for i in range(5)], title="t", ylabel="slowdown")
    ax = fig.axes[0]
    assert len(ax.patches) == 5
    centres = [np.mean(_outline(fig, i)[:, 0]) for i in range(5)]
    assert centres == sorted(centres)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"s{i}" for i in range(5)]
    assert (ax.get_title(), ax.get_ylabel()) == ("t", "slowdown")


def test_box_spans_the_quartiles_and_the_notch_is_pulled_in_at_the_median():
    values = np.linspace(0.0, 10.0, 401)          # q1 2.5, median 5, q3 7.5; notch 5 ± 1.57·5/√401
    fig = boxplot_figure({"wide": values})
    xy = _outline(fig, 0)
    assert xy[:, 1].min() == pytest.approx(2.5) and xy[:, 1].max() == pytest.approx(7.5)
    half = 1.57 * 5.0 / np.sqrt(401)
    ys = set(np.round(xy[:, 1], 9))
    assert {round(5 - half, 9), round(5 + half, 9)} <= ys          # the notch ends are vertices
    at_median = xy[np.isclose(xy[:, 1], 5.0), 0]
    widest = np.ptp(xy[:, 0])
    assert np.ptp(at_median) < widest                               # narrower at the median: the notch
    lines = fig.axes[0].get_lines()
    ends = sorted(y for line in lines for y in line.get_ydata())
    assert ends[0] == 0.0 and ends[-1] == 10.0                      # whiskers to the total range


def test_a_notch_wider_than_the_box_is_clipped_to_the_hinges():
    xy = _outline(boxplot_figure({"few": [1.0, 2.0, 3.0, 4.0, 5.0]}), 0)   # 3 ± 2.8 reaches past 2 and 4
    assert xy[:, 1].min() == pytest.approx(2.0) and xy[:, 1].max() == pytest.approx(4.0)


def test_one_sample_is_a_flat_box_at_its_value():
    fig = boxplot_figure([("one", [2.5]), ("two", [1.0, 4.0])])
    xy = _outline(fig, 0)
    assert np.allclose(xy[:, 1], 2.5)
    s = box_stats([2.5])
    assert s["notch"] == (2.5, 2.5) and s["n"] == 1


def test_reference_line_and_written_files(tmp_path):
    fig = boxplot_figure({"a": [2.0, 3.0]}, reference=1.0)
    ref = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert len(ref) == 1 and list(ref[0].get_ydata()) == [1.0, 1.0] and ref[0].get_color() == REFERENCE_COLOUR
    assert fig.axes[0].get_ylim()[0] < 1.0
    png = write_boxplot_png({"a": [2.0, 3.0]}, tmp_path / "r.png", reference=1.0)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = write_boxplot_png({"binomial": [2.0, 3.0]}, tmp_path / "r.svg", ylabel="slowdown").read_text()
    assert "binomial" in svg and "slowdown" in svg


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
