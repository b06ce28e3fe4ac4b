"""Orders, patterns, loads and bisection bandwidth (closed forms and the
cited paper's claims)."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.topology import (bisection_bandwidth, diameter, effective_bisection_bandwidth, link_loads,
                               load_histogram, make_router, node_order, parse_topology, pattern_pairs, summary)


def test_ebb_is_exactly_one_on_a_crossbar():
    e = effective_bisection_bandwidth(make_router(parse_topology("crossbar:36")), 50, seed=4)
    assert e.mean == 1.0 and e.n_bisections == 50 and e.seed == 4


@pytest.mark.parametrize("k", [8, 12])
def test_ebb_of_full_bisection_two_level_tree_is_well_below_one(k):
    # Hoefler et al. [16]: 40-60 % on real full-bisection fat trees
    r = make_router(parse_topology(f"kary:{k},2"), "d-mod-k")
    e = effective_bisection_bandwidth(r, 200, seed=0)
    assert 0.3 < e.mean < 0.8
    assert np.all((e.samples > 0) & (e.samples <= 1))
    again = effective_bisection_bandwidth(r, 200, seed=0)
    assert np.array_equal(e.samples, again.samples)


def test_ebb_single_pattern_by_hand():
    # 4-ary 2-tree: bisection {0,1,2,3} <-> {4,8,12,5} in both directions
    r = make_router(parse_topology("kary:4,2"), "d-mod-k")
    src = np.array([0, 1, 2, 3, 4, 8, 12, 5], dtype=np.uint32)
    dst = np.array([4, 8, 12, 5, 0, 1, 2, 3], dtype=np.uint32)
    bw = r.topology.bandwidth
    (frac,) = r.engine.ebb(src, dst, 8, bw)
    # leaf-0 flows to 4, 8, 12 share up-port 0 (d mod 4 = 0): 1/3 each; 3 -> 5 alone.
    # the reverse flows come from three leaves, each alone on its up-port 0..3,
    # and go down to leaf 0 on ports d mod 4 = 0, 1, 2, 3: all distinct
    assert frac == pytest.approx((3 * (1 / 3) + 1 + 4) / 8)


def test_alltoall_loads_on_a_crossbar():
    t = parse_topology("crossbar:8")
    loads = link_loads(make_router(t), *pattern_pairs("alltoall", np.arange(8)))
    assert np.all(loads == 7)
    assert load_histogram(loads) == {7.0: 16}


def test_histogram_counts_every_link():
    t = parse_topology("kary:4,2")
    loads = link_loads(make_router(t), *pattern_pairs("random", np.arange(16), seed=2))
    h = load_histogram(loads)
    assert sum(h.values()) == t.n_links
    assert sum(k * v for k, v in h.items()) == loads.sum()


def test_random_pattern_is_a_permutation_without_fixed_points():
    order = np.arange(50) * 2
    for seed in range(20):
        src, dst = pattern_pairs("random", order, seed=seed)
        assert sorted(dst.tolist()) == sorted(order.tolist())
        assert np.all(src != dst)


@pytest.mark.parametrize("bad", ["shift:0", "shift:16", "shift:x", "transpose"])
def test_bad_patterns(bad):
    with pytest.raises(SpecError):
        pattern_pairs(bad, np.arange(16))


def test_orders():
    t = parse_topology("torus:4x4x4")
    blocked = node_order(t, "blocked:2x2x2")
    assert sorted(blocked.tolist()) == list(range(64))
    # second block of 8 ranks is the next block along x: x in {2,3}
    assert sorted(blocked[8:16].tolist()) == [2, 3, 6, 7, 18, 19, 22, 23]
    r1 = node_order(t, "random", seed=9)
    assert np.array_equal(r1, node_order(t, "random", seed=9))
    assert not np.array_equal(r1, node_order(t, "random", seed=10))
    assert node_order(t, "identity", n_ranks=5).tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(SpecError, match="65 ranks but only 64 endpoints"):
        node_order(t, "identity", n_ranks=65)
    with pytest.raises(SpecError, match="dividing"):
        node_order(t, "blocked:3x2x2")
    with pytest.raises(SpecError, match="not a torus"):
        node_order(parse_topology("kary:4,2"), "blocked:2x2")
    with pytest.raises(SpecError):
        node_order(t, "alphabetical")


def test_real_fabric_routing_order_groups_by_leaf(data):
    t = parse_topology(f"ibnet:{data / 'loginoff-144.topo'}")
    order = node_order(t, "routing")
    assert sorted(order.tolist()) == list(range(144))
    leaf = {int(d): int(s) for s, d in zip(t.src, t.dst) if d < 144}
    leaves = [leaf[e] for e in order]
    changes = sum(1 for a, b in zip(leaves, leaves[1:]) if a != b)
    assert changes == len(set(leaves)) - 1


@pytest.mark.parametrize("spec, diam", [("crossbar:5", 2), ("kary:4,3", 6), ("torus:8x8x16", 16),
                                        ("torus:8x8x4m", 11), ("mesh:3x4", 5), ("dragonfly:4,2,2", 5)])
def test_diameter_closed_forms(spec, diam):
    assert diameter(parse_topology(spec)) == diam


def test_diameter_of_real_fabric_by_search(data):
    assert diameter(parse_topology(f"ibnet:{data / 'manpage-example.topo'}")) == 3
    assert diameter(parse_topology(f"ibnet:{data / 'loginoff-144.topo'}")) == 4


def test_bisection_bandwidth_closed_forms():
    assert bisection_bandwidth(parse_topology("crossbar:10")) == 5 * 2e9
    assert bisection_bandwidth(parse_topology("kary:12,2")) == 72 * 2e9
    assert bisection_bandwidth(parse_topology("table1:2304")) == pytest.approx(1152 * 2e9 * 8 / 12)
    assert bisection_bandwidth(parse_topology("torus:8x8x16")) == 2 * 64 * 175e6
    assert bisection_bandwidth(parse_topology("torus:8x8x16m")) == 64 * 175e6
    # balanced dragonfly g = 9: 4 x 5 = 20 global cables across the halves
    assert bisection_bandwidth(parse_topology("dragonfly:4,2,2")) == 20 * 12.5e9


def test_summary():
    s = summary(parse_topology("kary:12,2"))
    assert (s["endpoints"], s["switches"], s["cables"], s["diameter"]) == (144, 24, 288, 4)
