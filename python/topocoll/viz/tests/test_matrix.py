"""The bandwidth matrix of Cavin & Demengeon §5 against hand-computed values,
the paper's qualitative results (a crossbar and a fat-tree in routing order are
contention-free for the shift all-to-all; another node order is not, Figs. 4–6),
and its picture (matplotlib figure objects and the written files): the image's
data in MB/s with the maximum white, the colour bar's unit, the histogram's bars
and its min/mean/max per pair."""

from types import SimpleNamespace

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import Platform, make_network
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.viz import NAN_COLOUR, bandwidth_matrix, histogram, matrix_figure, summary, write_matrix_png


def _bars(fig):
    """Heights and left edges (MB/s) of the histogram's bars."""
    patches = fig.axes[2].patches
    return [p.get_height() for p in patches], [p.get_x() for p in patches]


def _fake(ranks, messages, p):
    """A traced run with one op per entry of ``ranks`` and messages as
    (send op, recv op, bytes, inject, arrive)."""
    send, recv, nbytes, inject, arrive = (np.array(c) for c in zip(*messages))
    n = len(ranks)
    op_bytes = np.zeros(n, np.int64)
    op_bytes[send] = nbytes
    trace = {"rank": np.array(ranks), "kind": np.zeros(n, np.int8), "peer": np.zeros(n, np.int64),
             "nbytes": op_bytes, "round": np.zeros(n, np.int64), "start": np.zeros(n), "end": np.ones(n),
             "send": send.astype(np.uint32), "recv": recv.astype(np.uint32),
             "inject": inject.astype(float), "arrive": arrive.astype(float)}
    return SimpleNamespace(trace=trace, rank_done=np.zeros(p))


@pytest.mark.parametrize("p", [3, 5, 8])
def test_ring_allreduce_on_a_crossbar_measures_exactly_the_ring_pairs(p):
    sim = simulate(generate("allreduce", "ring", p, count=16 * p, itemsize=8), trace=True)
    m = bandwidth_matrix(sim)
    assert m.shape == (p, p)
    expected = np.zeros((p, p), bool)
    expected[np.arange(p), (np.arange(p) + 1) % p] = True
    assert np.array_equal(~np.isnan(m), expected)
    tr = sim.trace
    src, dst = tr["rank"][tr["send"]], tr["rank"][tr["recv"]]
    for a in range(p):
        mine = (src == a) & (dst == (a + 1) % p)
        by_hand = tr["nbytes"][tr["send"]][mine].sum() / (tr["arrive"][mine] - tr["inject"][mine]).sum()
        assert m[a, (a + 1) % p] == pytest.approx(by_hand, rel=1e-12)
    # An ideal crossbar at the platform's bandwidth: every message at 2 GB/s.
    assert np.nanmax(m) == pytest.approx(Platform().bandwidth, rel=1e-9)


def test_several_messages_give_summed_bytes_over_summed_time_and_the_diagonal_is_not_measured():
    #          op: 0  1  2  3  4  5
    sim = _fake([0, 1, 0, 1, 2, 2],
                [(0, 1, 100, 0.0, 1.0),      # 0 -> 1: 100 B in 1 s
                 (2, 3, 300, 1.0, 4.0),      # 0 -> 1: 300 B in 3 s  => 400 B / 4 s
                 (4, 5, 50, 0.0, 1.0)],      # 2 -> 2: a rank sending to itself
                3)
    m = bandwidth_matrix(sim)
    assert m[0, 1] == 100.0
    assert np.isnan(m[2, 2]) and np.isnan(m[1, 0])
    assert np.count_nonzero(~np.isnan(m)) == 1


def test_zero_time_messages_are_not_measured():
    sim = _fake([0, 1], [(0, 1, 64, 2.0, 2.0)], 2)
    assert np.isnan(bandwidth_matrix(sim)).all()


def _shift(p, platform=Platform(), options=EngineOptions(sync="barrier")):
    sched = generate("alltoall", "shift", p, count=p * 1024, itemsize=8)
    return bandwidth_matrix(simulate(sched, platform, options=options, trace=True))


def test_shift_alltoall_on_a_crossbar_is_uniform(tmp_path):
    """Fig. 4: on one crossbar switch the shift-based pattern sees no
    contention: every pair at the full bandwidth, one white histogram bar."""
    m = _shift(12, options=EngineOptions(sync="rounds"))
    s = summary(m)
    assert s["pairs"] == 12 * 11
    assert s["min"] == pytest.approx(s["max"], rel=1e-9) == pytest.approx(Platform().bandwidth, rel=1e-9)
    counts, edges = histogram(m, bins=10)
    assert counts.tolist() == [0] * 9 + [132]
    fig = matrix_figure(m, bins=10)
    heights, lefts = _bars(fig)
    assert heights == [0] * 9 + [132]                     # one bar: every pair at the maximum
    assert lefts[-1] == pytest.approx(0.9 * Platform().bandwidth / 1e6)
    assert fig.axes[2].get_title() == "per pair: min 2000, mean 2000, max 2000 MB/s (132 pairs)"
    path = write_matrix_png(m, tmp_path / "crossbar.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_shift_alltoall_on_a_fat_tree_in_routing_order_beats_another_order():
    """Figs. 5–6: on a 2-level fat-tree with d-mod-k routing, nodes in the
    routing engine's order give every pair the full bandwidth; a random order
    puts several flows on one link (lower minimum and mean)."""
    def on(order):
        net = make_network("kary:6,2@lat=0s", 36, routing="d-mod-k", order=order, seed=1)
        return summary(_shift(36, Platform(alpha=0, network=net)))
    good, bad = on("routing"), on("random")
    assert good["min"] == pytest.approx(good["max"], rel=1e-9)
    assert bad["min"] < good["min"] / 2 and bad["mean"] < good["mean"]


def test_figure_image_is_the_matrix_in_mb_per_s_with_nan_masked_and_a_grey_scale():
    m = np.array([[np.nan, 4e9, 2e9],
                  [1e9, np.nan, 0.0],
                  [np.nan, 3e9, np.nan]])
    fig = matrix_figure(m, title="three ranks")
    ax, bar, hist = fig.axes
    (image,) = ax.get_images()
    data = image.get_array()
    assert np.array_equal(data.mask, np.isnan(m))                  # unmeasured entries are masked ...
    assert np.allclose(data.filled(-1), np.where(np.isnan(m), -1, m / 1e6))   # ... the others in MB/s
    assert image.get_clim() == (0.0, 4000.0)                       # the maximum is the top of the scale
    cmap = image.get_cmap()
    assert cmap(1.0)[:3] == (1.0, 1.0, 1.0) and cmap(0.0)[:3] == (0.0, 0.0, 0.0)   # white max, black zero
    assert tuple(round(c * 255) for c in cmap.get_bad()[:3]) == NAN_COLOUR
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("three ranks", "receiving rank", "sending rank")
    assert bar.get_ylabel() == "bandwidth (MB/s)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["not measured (diagonal, no message)"]
    # Histogram: five measured entries, 0, 1, 2, 3, 4 GB/s, in 4 bins of 1000 MB/s over [0, 4000].
    heights, lefts = _bars(matrix_figure(m, bins=4))
    assert heights == [1, 1, 1, 2] and lefts == [0.0, 1000.0, 2000.0, 3000.0]
    assert hist.get_xlabel() == "bandwidth (MB/s)" and hist.get_ylabel() == "pairs"
    assert hist.get_title() == "per pair: min 0, mean 2000, max 4000 MB/s (5 pairs)"
    lines = sorted(line.get_xdata()[0] for line in hist.get_lines())
    assert lines == [0.0, 2000.0, 4000.0]                          # min, mean, max


def test_written_files_png_and_svg_with_its_texts(tmp_path):
    m = np.array([[np.nan, 1e9], [2e9, np.nan]])
    png = write_matrix_png(m, tmp_path / "m.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = write_matrix_png(m, tmp_path / "m.svg", title="two ranks").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for text in ("two ranks", "bandwidth (MB/s)", "receiving rank", "per pair: min 1000, mean 1500, max 2000"):
        assert text in svg, text


def test_an_unwritable_path_is_one_line_naming_the_file():
    # pictures are written whole through topocoll.outputs.atomic, whose OS errors are one-line SpecErrors
    with pytest.raises(SpecError, match="'/no/such/dir/x.png': cannot write there") as info:
        write_matrix_png(np.ones((2, 2)), "/no/such/dir/x.png")
    assert "\n" not in str(info.value)


def test_vmax_fixes_the_white_level():
    m = np.array([[np.nan, 1e9], [2e9, np.nan]])
    (image,) = matrix_figure(m, vmax=4e9).axes[0].get_images()
    assert image.get_clim() == (0.0, 4000.0)


def test_histogram_counts_measured_entries_over_zero_to_max():
    m = np.array([[np.nan, 1.0, 2.0], [3.0, np.nan, 4.0], [np.nan, np.nan, np.nan]])
    counts, edges = histogram(m, bins=4)
    assert counts.tolist() == [0, 1, 1, 2] and edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    counts, edges = histogram(m, bins=2, vmax=2.0)               # larger values in the last bin
    assert counts.tolist() == [0, 4] and edges[-1] == 2.0
    counts, _ = histogram(np.full((2, 2), np.nan))
    assert counts.sum() == 0
    assert summary(np.full((2, 2), np.nan))["pairs"] == 0


@pytest.mark.parametrize("call, message", [
    (lambda: histogram(np.ones((2, 3))), r"^histogram: matrix of shape \(2, 3\), expected a non-empty square"),
    (lambda: histogram(np.ones((2, 2)), bins=0), r"^histogram: bins=0, expected an integer >= 1$"),
    (lambda: histogram(-np.ones((2, 2))), r"^histogram: matrix has negative or infinite entries"),
    (lambda: write_matrix_png(np.ones((2, 2)), "x.png", vmax=-1), r"^write_matrix_png: vmax=-1, expected a "
                                                                   r"bandwidth > 0 \(B/s\)$"),
    (lambda: write_matrix_png(np.ones(4), "x.png"), r"^write_matrix_png: matrix of shape \(4,\)"),
    (lambda: write_matrix_png(np.ones((2, 2)), "x.jpg"), r"^write_matrix_png: 'x.jpg' has suffix '.jpg', expected "
                                                          r"one of .png, .svg, .pdf$"),
    (lambda: bandwidth_matrix(SimpleNamespace(trace=None)), r"^bandwidth_matrix: the simulation has no trace"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(SpecError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
