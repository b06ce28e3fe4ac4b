"""Time against message size per algorithm: the lines are the ranked rows'
times (µs) at their sizes, on log axes, the legend fastest first at the
largest size."""

from types import SimpleNamespace

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.viz.curves import curves, curves_figure, write_curves


def _row(algorithm, size, time, **params):
    return SimpleNamespace(algorithm=algorithm, size=size, time=time, params=params)


ROWS = [_row("ring", 8, 30e-6), _row("bruck", 8, 5e-6, n=2), _row("ring", 1024, 40e-6),
        _row("bruck", 1024, 50e-6, n=2), _row("binomial", 8, float("nan"))]


def test_lines_are_the_rows_in_microseconds_on_log_axes(tmp_path):
    fig = curves_figure(ROWS, title="t")
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"ring", "bruck (n=2)"}                  # NaN (left out) draws nothing
    assert list(lines["ring"].get_xdata()) == [8, 1024]
    assert np.allclose(lines["ring"].get_ydata(), [30, 40])
    assert np.allclose(lines["bruck (n=2)"].get_ydata(), [5, 50])
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["ring", "bruck (n=2)"]   # 40 < 50 µs at 1 KiB
    svg = write_curves(ROWS, tmp_path / "c.svg", title="allreduce").read_text()
    assert "allreduce" in svg and "time (µs)" in svg


def test_parameters_resolved_per_size_stay_one_curve():
    data = curves([_row("nway", 8, 1e-6, n=1), _row("nway", 64, 2e-6, n=3)])
    assert list(data) == ["nway"] and list(data["nway"][0]) == [8, 64]


def test_nothing_to_draw_is_one_line():
    with pytest.raises(SpecError, match="^curves_figure: no result with a finite time"):
        curves_figure([_row("ring", 8, float("nan"))])
