"""The bandwidth matrix of Cavin & Demengeon §5 against hand-computed values,
the paper's qualitative results (a crossbar and a fat-tree in routing order are
contention-free for the shift all-to-all; another node order is not, Figs. 4–6),
and its grey-scale image: sizes, white = the maximum, the histogram under it."""

from types import SimpleNamespace

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.schedules import generate
from topocoll.sim import Platform, make_network
from topocoll.sim.engine import EngineOptions, simulate
from topocoll.viz import NAN_COLOUR, bandwidth_matrix, histogram, summary, write_matrix_png

Image = pytest.importorskip("PIL.Image")


def _read(path):
    """(format, mode, size, RGB pixels) of a PNG, the file closed again."""
    with Image.open(path) as img:
        return img.format, img.mode, img.size, np.asarray(img.convert("RGB"))


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
    path = write_matrix_png(m, tmp_path / "crossbar.png")
    img = _read(path)[3]
    side = 12 * 22                              # ⌈256 / 12⌉ = 22 pixels per entry
    hist = img[side + 8:]
    bars = np.flatnonzero((hist[:-1] == 0).all(axis=2).any(axis=0))
    assert bars.min() >= 255 * side // 256       # the only bar: level 255, on the right
    assert (hist[0, bars] == 0).all()            # and it is the tallest: full height


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


def test_png_size_grey_levels_nan_colour_and_histogram(tmp_path):
    m = np.array([[np.nan, 4e9, 2e9],
                  [1e9, np.nan, 0.0],
                  [np.nan, 3e9, np.nan]])
    path = write_matrix_png(m, tmp_path / "m.png")
    fmt, mode, size, px = _read(path)
    scale = 86                                   # ⌈256 / 3⌉
    assert fmt == "PNG" and mode == "RGB"
    assert size == (3 * scale, 3 * scale + 8 + 96)

    def entry(a, b):
        block = px[a * scale:(a + 1) * scale, b * scale:(b + 1) * scale]
        assert (block == block[0, 0]).all()      # one flat square per entry
        return tuple(int(v) for v in block[0, 0])

    assert entry(0, 1) == (255, 255, 255)        # the maximum is white
    assert entry(0, 2) == (128, 128, 128)        # half of it: round(127.5)
    assert entry(2, 1) == (191, 191, 191)        # 3/4: round(191.25)
    assert entry(1, 0) == (64, 64, 64)
    assert entry(1, 2) == (0, 0, 0)              # zero bandwidth is black
    for a, b in [(0, 0), (1, 1), (2, 2), (2, 0)]:
        assert entry(a, b) == NAN_COLOUR
    # Histogram: five measured entries, one each at levels 0, 64, 128, 191, 255.
    hist = px[3 * scale + 8:]
    assert (hist[-1] == 0).all()                 # black baseline
    dark = (hist[:-1] == 0).all(axis=2)
    for level in (0, 64, 128, 191, 255):
        x = level * 3 * scale // 256
        assert dark[:, x].any(), level
    assert not dark[:, 30 * 3 * scale // 256].any()
    assert (px[3 * scale:3 * scale + 8] == 255).all()   # white margin between the panels


def test_vmax_fixes_the_white_level(tmp_path):
    m = np.array([[np.nan, 1e9], [2e9, np.nan]])
    px = _read(write_matrix_png(m, tmp_path / "v.png", vmax=4e9))[3]
    assert tuple(px[0, 128 + 5]) == (64, 64, 64)          # 1e9 of 4e9
    assert tuple(px[128 + 5, 0]) == (128, 128, 128)       # 2e9 of 4e9
    big = np.full((300, 300), 1.0)
    assert _read(write_matrix_png(big, tmp_path / "big.png"))[2] == (300, 300 + 8 + 96)


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
    (lambda: bandwidth_matrix(SimpleNamespace(trace=None)), r"^bandwidth_matrix: the simulation has no trace"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(SpecError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
