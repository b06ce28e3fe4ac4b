"""Link loads drawn on the topology (matplotlib): one line per cable with the
larger load of its two directions, parallel cables apart, a colour bar with the
unit, a legend; the SVG keeps its texts and ids."""

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from topocoll.errors import SpecError
from topocoll.topology import parse_topology
from topocoll.topology.draw import CMAP, cables, draw_svg, topology_figure
from topocoll.topology.network import make_topology


def _two_switches_with_three_cables():
    """Endpoints 0, 1 on switches 2, 3; switches joined by three parallel cables."""
    pairs = [(0, 2), (1, 3), (2, 3), (2, 3), (2, 3)]
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    return make_topology("hand", "fabric", 2, 2, src, dst, 1e9, 0.0, names=("e0", "e1", "s0", "s1"))


def _lines(fig):
    return {line.get_gid(): line for line in fig.axes[0].get_lines() if line.get_gid()}


def test_cables_take_the_larger_direction_and_number_parallel_ones():
    t = _two_switches_with_three_cables()
    loads = np.zeros(t.n_links)
    loads[[2, 3, 4]] = [5, 0, 1]          # 2 → 3 on the three cables
    loads[[7, 8, 9]] = [1, 7, 0]          # 3 → 2
    got = sorted(cables(t, loads))
    assert got == [(0, 2, 0, 0.0), (1, 3, 0, 0.0), (2, 3, 0, 5.0), (2, 3, 1, 7.0), (2, 3, 2, 1.0)]


def test_parallel_cables_are_drawn_apart_and_coloured_by_their_own_load():
    t = _two_switches_with_three_cables()
    loads = np.zeros(t.n_links)
    loads[[2, 3, 4]] = [5, 0, 1]
    loads[[7, 8, 9]] = [1, 7, 0]
    fig = topology_figure(t, loads, unit="bytes")
    lines = _lines(fig)
    assert sorted(lines) == ["cable-0-2-0", "cable-1-3-0", "cable-2-3-0", "cable-2-3-1", "cable-2-3-2"]
    mids = [np.mean(lines[f"cable-2-3-{j}"].get_xydata(), axis=0) for j in range(3)]
    gaps = [np.hypot(*(mids[j + 1] - mids[j])) for j in range(2)]
    assert gaps[0] == pytest.approx(gaps[1]) and gaps[0] > 1       # three distinct, evenly spaced lines
    from matplotlib import colormaps
    cmap = colormaps[CMAP]
    assert to_rgba(lines["cable-2-3-1"].get_color()) == cmap(1.0)  # the largest load: top of the scale
    assert to_rgba(lines["cable-2-3-0"].get_color()) == cmap(5 / 7)
    assert lines["cable-0-2-0"].get_linestyle() == ":"             # idle: dotted grey
    bar = fig.axes[1]
    assert bar.get_ylabel() == "link load (bytes)"
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[:3] == ["endpoint", "switch", "idle cable"] and "parallel cables" in legend[3]


def test_svg_has_one_id_per_cable_and_the_unit(tmp_path):
    t = parse_topology("kary:4,2")
    svg = draw_svg(t, tmp_path / "k.svg", np.arange(t.n_links, dtype=float), unit="flows").read_text()
    assert svg.count('id="cable-') == t.n_links // 2
    assert "link load (flows)" in svg and 'id="endpoints"' in svg and 'id="switches"' in svg
    png = draw_svg(t, tmp_path / "k.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bad_input_is_one_line():
    t = parse_topology("kary:2,2")
    with pytest.raises(SpecError, match=r"^draw: loads of shape \(3,\), expected one per link"):
        topology_figure(t, [1, 2, 3])
    with pytest.raises(SpecError, match=r"^draw: 'x.gif' has suffix '.gif'"):
        draw_svg(t, "x.gif")


def test_vmax_sets_one_colour_scale_for_two_drawings():
    """Two runs drawn with the same vmax: a cable of load 5 has one colour in both, whatever each run's
    own largest load; a vmax below the largest load is refused (the scale would saturate silently)."""
    t = _two_switches_with_three_cables()
    small, large = np.zeros(t.n_links), np.zeros(t.n_links)
    small[2], large[2], large[3] = 5, 5, 10
    a, b = (topology_figure(t, loads, vmax=10) for loads in (small, large))
    assert _lines(a)["cable-2-3-0"].get_color() == _lines(b)["cable-2-3-0"].get_color()
    own = topology_figure(t, small)
    assert own.axes[0].get_lines() and _lines(own)["cable-2-3-0"].get_color() != _lines(a)["cable-2-3-0"].get_color()
    assert a.axes[1].get_ylim() == pytest.approx((0, 10))
    with pytest.raises(SpecError, match="vmax=4"):
        topology_figure(t, large, vmax=4)
