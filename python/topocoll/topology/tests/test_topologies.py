"""Counts and link tables of the generated families (closed forms, Table 1)."""

import math
from collections import Counter

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.topology import crossbar, dragonfly, kary_n_tree, parse_topology, pgft


def cables_are_full_duplex(t):
    fwd = Counter(zip(t.src.tolist(), t.dst.tolist()))
    rev = Counter(zip(t.dst.tolist(), t.src.tolist()))
    return fwd == rev


# Hoefler, Schneider & Lumsdaine, Table 1: layout, # endpoints, # switches
TABLE1 = [
    ("xgft(2,12,6)", 144, 18),
    ("xgft(2,24,12)", 288, 36),
    ("xgft(3,12,8,12,4)", 1152, 240),
    ("xgft(3,12,16,12,8)", 2304, 480),
    ("xgft(3,12,24,12,12)", 3456, 720),
    ("xgft(4,12,12,6,12,12,3)", 10368, 3024),
    ("xgft(4,12,12,12,12,12,6)", 20736, 6048),
]


@pytest.mark.parametrize("layout, endpoints, switches", TABLE1)
def test_network_noise_table1_counts(layout, endpoints, switches):
    t = parse_topology(f"table1:{endpoints}")
    assert (t.n_endpoints, t.n_switches) == (endpoints, switches)
    # the paper's notation: xgft(h, m_2..m_h, w_2..w_h) with m_1 = 12, w_1 = 1
    nums = [int(x) for x in layout[5:-1].split(",")]
    h = nums[0]
    assert t.params["m"] == (12, *nums[1:h])
    assert t.params["w"] == (1, *nums[h:])
    # built from 24-port switches
    degree = np.bincount(t.src, minlength=t.n_nodes)[t.n_endpoints:]
    assert degree.max() <= 24
    assert cables_are_full_duplex(t)


@pytest.mark.parametrize("layout, endpoints, switches", [r for r in TABLE1 if r[1] <= 3456 and r[1] != 2304])
def test_table1_trees_have_full_bisection_switches(layout, endpoints, switches):
    # every non-top switch has as many up as down cables
    t = parse_topology(f"table1:{endpoints}")
    n = t.n_endpoints
    level = np.zeros(t.n_nodes, dtype=int)
    m, w = t.params["m"], t.params["w"]
    start = n
    for l in range(1, len(m) + 1):
        cnt = math.prod(w[:l]) * math.prod(m[l:])
        level[start:start + cnt] = l
        start += cnt
    up = np.bincount(t.src[level[t.dst] > level[t.src]], minlength=t.n_nodes)
    down = np.bincount(t.src[level[t.dst] < level[t.src]], minlength=t.n_nodes)
    inner = (level > 0) & (level < len(m))
    assert np.all(up[inner] == down[inner])
    assert np.all(down[level == len(m)] == 24)


@pytest.mark.parametrize("k, n", [(2, 3), (4, 2), (4, 3), (12, 2), (3, 4)])
def test_kary_n_tree_counts(k, n):
    t = kary_n_tree(k, n)
    assert t.n_endpoints == k ** n
    assert t.n_switches == n * k ** (n - 1)
    assert t.n_links == 2 * n * k ** n      # k^n cables between consecutive levels
    assert cables_are_full_duplex(t)


def test_crossbar():
    t = crossbar(144)
    assert (t.n_endpoints, t.n_switches, t.n_links) == (144, 1, 288)
    assert set(t.dst[t.src < 144].tolist()) == {144}


@pytest.mark.parametrize("spec, dims, wraps", [
    ("torus:8x8x16", (8, 8, 16), (1, 1, 1)),
    ("torus:8x8x4m", (8, 8, 4), (1, 1, 0)),
    ("mesh:4x5", (4, 5), (0, 0)),
    ("torus:5", (5,), (1,)),
    ("torus:4x2x3", (4, 2, 3), (1, 1, 1)),
])
def test_torus_link_counts(spec, dims, wraps):
    t = parse_topology(spec)
    n = math.prod(dims)
    cables = sum(n // k * (k if w and k > 2 else k - 1) for k, w in zip(dims, wraps))
    assert t.n_endpoints == n and t.n_switches == 0
    assert t.n_links == 2 * cables
    assert cables_are_full_duplex(t)


def test_torus_neighbours_differ_in_one_coordinate_by_one():
    t = parse_topology("torus:4x3x5m")
    k = np.array([4, 3, 5])
    cs = np.stack(np.unravel_index(t.src, k[::-1])[::-1], axis=1)
    cd = np.stack(np.unravel_index(t.dst, k[::-1])[::-1], axis=1)
    diff = (cd - cs) % k
    moved = diff != 0
    assert np.all(moved.sum(axis=1) == 1)
    step = diff[moved]
    kk = np.broadcast_to(k, diff.shape)[moved]
    assert np.all((step == 1) | (step == kk - 1))


@pytest.mark.parametrize("a, p, h", [(4, 2, 2), (2, 1, 1), (3, 2, 1)])
def test_balanced_dragonfly_one_global_cable_per_group_pair(a, p, h):
    t = dragonfly(a, p, h)
    g = a * h + 1
    n = g * a * p
    assert (t.n_endpoints, t.n_switches) == (n, g * a)
    sw = (t.src >= n) & (t.dst >= n)
    gs, gd = (t.src[sw] - n) // a, (t.dst[sw] - n) // a
    glob = Counter(zip(gs[gs != gd].tolist(), gd[gs != gd].tolist()))
    assert len(glob) == g * (g - 1) and set(glob.values()) == {1}
    degree = np.bincount(t.src, minlength=t.n_nodes)[n:]
    assert np.all(degree == p + (a - 1) + h)


def test_pgft_parallel_cables():
    t = pgft((12, 12), (1, 6), (1, 2))
    pairs = Counter(zip(t.src.tolist(), t.dst.tolist()))
    leaf_to_spine = [c for (s, d), c in pairs.items() if 144 <= s < 156 and d >= 156]
    assert len(leaf_to_spine) == 72 and set(leaf_to_spine) == {2}


def test_link_attributes_and_options():
    t = parse_topology("torus:4x4@bw=175MB/s,lat=100ns")
    assert np.all(t.bandwidth == 175e6) and np.allclose(t.latency, 100e-9, rtol=1e-12)
    t = parse_topology("kary:4,2")
    assert np.all(t.bandwidth == 2e9) and np.all(t.latency == 1e-6)
    indptr = t.indptr
    assert indptr[-1] == t.n_links and np.all(t.src[indptr[20]:indptr[21]] == 20)


@pytest.mark.parametrize("spec", [
    "kary", "kary:4", "kary:0,2", "kary:-1,2", "kary:a,b", "crossbar:0", "torus:8x0x4", "torus:8xqx4",
    "xgft:2;12,12", "xgft:2;12,12;1", "pgft:2;12,12;1,6", "table1:100", "dragonfly:4,2", "dragonfly:1,1,1,9",
    "blob:3", "torus:4x4@bw=fast", "torus:4x4@lat=-1s", "torus:4x4@colour=red", "ibnet:",
])
def test_bad_specs_give_one_line_errors(spec):
    with pytest.raises(SpecError) as e:
        parse_topology(spec)
    assert "\n" not in str(e.value)


def test_torus_dimension_classes_mark_each_rings_wrap_cable_both_ways():
    """torus:8x8x4m: dimension 0 has 8·4 = 32 rings, dimension 1 another 32,
    each with one wrap cable = 2 dateline links; the mesh dimension has none:
    128 dateline links, 64 per torus dimension; every link moves in one dimension."""
    from topocoll.topology.torus import NOT_A_DIMENSION, dimension_classes, torus

    t = torus((8, 8, 4), wrap=(True, True, False))
    dim, dateline = dimension_classes(t)
    assert int(dateline.sum()) == 128
    assert np.bincount(dim[dateline], minlength=3).tolist() == [64, 64, 0]
    assert set(np.unique(dim).tolist()) == {0, 1, 2}
    src, dst = t.src[dateline], t.dst[dateline]
    assert (np.abs(src.astype(int) % 8 - dst.astype(int) % 8)[dim[dateline] == 0] == 7).all()
    from topocoll.topology import kary_n_tree
    xgft = kary_n_tree(4, 2)
    d2, l2 = dimension_classes(xgft)
    assert (d2 == NOT_A_DIMENSION).all() and not l2.any()
