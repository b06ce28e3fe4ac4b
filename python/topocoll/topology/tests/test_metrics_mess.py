"""Topology metrics that scale, and no silent wrong answers (issue 11, defects 5-8):
the Rust diameter against a Python BFS oracle, the torus bisection against
brute-force cuts, and one-line errors for an unroutable eBB pair, duplicate
eBB endpoints, fractional sizes, Valiant on two groups and --draw into a
missing directory."""

import itertools
import math
import shutil

import numpy as np
import pytest

from topocoll.__main__ import main
from topocoll.errors import SpecError, TopologyError
from topocoll.topology import (bisection_bandwidth, diameter, effective_bisection_bandwidth, make_router,
                               node_order, parse_topology)
from topocoll.topology.draw import draw_svg
from topocoll.topology.metrics import _search_diameter, torus_bisection_cables
from topocoll.topology.network import make_topology
from topocoll.topology.torus import torus


def cli(argv, capsys):
    """(exit status, stdout, stderr) of ``topocoll ARGV``."""
    try:
        rc = main(argv)
    except SystemExit as e:   # argparse errors exit through SystemExit
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line_error(rc, err):
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning:")]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("topocoll: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- 7. diameter: Rust switch-level BFS == Python BFS from every endpoint -------------------------

def bfs_diameter_oracle(t):
    """The old pure-Python diameter: BFS from every endpoint, never forwarding
    through another endpoint. Returns the diameter or the first unreachable
    (from, to) pair."""
    n = t.n_endpoints
    indptr = t.indptr
    nbrs = [t.dst[indptr[v]:indptr[v + 1]] for v in range(t.n_nodes)]
    best = 0
    for s in range(n):
        dist = {s: 0}
        frontier = [s]
        while frontier:
            nxt = []
            for v in frontier:
                if v < n and v != s:
                    continue
                for u in nbrs[v]:
                    u = int(u)
                    if u not in dist:
                        dist[u] = dist[v] + 1
                        nxt.append(u)
            frontier = nxt
        for e in range(n):
            if e not in dist:
                return (s, e)
        best = max(best, max(dist[e] for e in range(n)))
    return best


def switched(t):
    """``t`` with every node made a switch carrying one endpoint of its own
    (a torus, whose nodes are endpoints and routers at once, as a switched
    network): endpoint distances grow by 2."""
    p = t.n_nodes
    links = [(i, p + i) for i in range(p)] + [(p + i, i) for i in range(p)]
    links += [(p + int(a), p + int(b)) for a, b in zip(t.src, t.dst)]
    links.sort(key=lambda x: x[0])
    src, dst = zip(*links)
    return make_topology(f"switched {t.spec}", "ibnet", p, p, src, dst, 1e9, 1e-6)


GENERATED = ["crossbar:5", "kary:2,2", "kary:4,2", "kary:3,3", "xgft:2;4,3;1,2", "pgft:2;4,4;1,2;1,2",
             "table1:144", "dragonfly:4,2,2", "dragonfly:2,2,1", "dragonfly:3,1,1,2"]
TORI = ["torus:4x4", "torus:5x3", "torus:8x8x4m", "mesh:3x4", "torus:2x3x2m", "torus:7"]
FABRICS = ["manpage-example.topo", "loginoff-144.topo", "plafrim-ib-subnet.txt", "X5.topofile",
           "mess/diameter-dual-homed.topo"]


@pytest.mark.parametrize("spec", GENERATED)
def test_rust_diameter_equals_oracle_and_closed_form_on_generated_networks(spec):
    t = parse_topology(spec)
    assert _search_diameter(t) == bfs_diameter_oracle(t) == diameter(t)


def test_closed_forms_equal_the_search_over_small_parameter_sweeps():
    n = 0
    for a, h, p in itertools.product(range(1, 5), range(1, 4), (1, 2)):
        for g in range(1, a * h + 2):
            t = parse_topology(f"dragonfly:{a},{p},{h},{g}")
            assert _search_diameter(t) == diameter(t), t.spec
            n += 1
    for levels in (1, 2, 3):
        for m, w, par in itertools.product(itertools.product((1, 2, 3), repeat=levels), repeat=3):
            if any(x > 2 for x in w + par) or math.prod(m) * max(1, math.prod(w)) > 54:
                continue
            spec = f"pgft:{levels};{','.join(map(str, m))};{','.join(map(str, w))};{','.join(map(str, par))}"
            t = parse_topology(spec)   # w1 = 2: every endpoint on two leaf switches (multi-homed)
            assert _search_diameter(t) == diameter(t), spec
            n += 1
    assert n > 500


def test_unbalanced_dragonfly_diameter_counts_its_extra_global_cables():
    # g = 2 < a*h + 1 = 4: router i of group 0 is cabled to router i of group 1, so any two
    # routers of different groups are at most 2 router hops apart (the closed form said 5)
    assert diameter(parse_topology("dragonfly:3,1,1,2")) == 4
    assert diameter(parse_topology("dragonfly:3,1,1,4")) == 5


@pytest.mark.parametrize("spec", TORI)
def test_rust_diameter_on_tori_with_a_switch_per_node(spec):
    t = parse_topology(spec)
    s = switched(t)
    assert _search_diameter(s) == bfs_diameter_oracle(s) == diameter(t) + 2


@pytest.mark.parametrize("name", FABRICS)
def test_rust_diameter_equals_oracle_on_real_fabrics(data, name):
    t = parse_topology(f"ibnet:{data / name}")
    assert diameter(t) == _search_diameter(t) == bfs_diameter_oracle(t)


def test_dual_homed_adapter_counts_its_nearest_switch(data):
    # gamma's port 1 is on S4, 3 switch hops from S1 where alpha and beta are; port 2 is on S1
    t = parse_topology(f"ibnet:{data / 'mess' / 'diameter-dual-homed.topo'}")
    assert t.n_endpoints == 3 and diameter(t) == 2


def test_direct_adapter_cable_and_random_small_graphs_match_the_oracle():
    rng = np.random.default_rng(11)
    for _ in range(150):
        n, sw = int(rng.integers(1, 7)), int(rng.integers(0, 6))
        n_cables = int(rng.integers(1, 3 * (n + sw)))
        cables = {tuple(sorted(map(int, rng.integers(0, n + sw, 2)))) for _ in range(n_cables)}
        links = sorted({(a, b) for a, b in cables if a != b} | {(b, a) for a, b in cables if a != b})
        if not links:
            continue
        src, dst = zip(*links)
        t = make_topology("random", "ibnet", n, sw, src, dst, 1e9, 1e-6)
        want = bfs_diameter_oracle(t)
        if isinstance(want, tuple):
            with pytest.raises(TopologyError, match="is unreachable from endpoint"):
                _search_diameter(t)
        else:
            assert _search_diameter(t) == want


def test_unreachable_endpoint_is_a_one_line_error(data, capsys):
    path = data / "mess" / "diameter-two-islands.topo"
    with pytest.raises(TopologyError, match=r"endpoint 2 \(gamma\) is unreachable from endpoint 0 \(alpha\)"):
        diameter(parse_topology(f"ibnet:{path}"))
    rc, _, err = cli(["topo", f"ibnet:{path}"], capsys)
    assert "is unreachable from endpoint 0 (alpha)" in one_line_error(rc, err)


# --- 6. theoretical bisection of tori and meshes ------------------------------------------------

@pytest.mark.parametrize("shape,gbs", [("8x8x8m", 11.2), ("8x8x6m", 11.2), ("4x4x4m", 2.8),
                                       ("16x16x16m", 44.8), ("8x8x16", 22.4), ("8x8x16m", 11.2)])
def test_issue_numbers(shape, gbs):
    assert bisection_bandwidth(parse_topology(f"torus:{shape}")) == pytest.approx(gbs * 1e9)


def crossing(t, side):
    """Directed links of ``t`` from ``side`` to the rest (= cables cut)."""
    return int(np.sum(side[t.src] & ~side[t.dst]))


def coords(t):
    k = t.params["k"]
    v = np.arange(t.n_nodes)
    out = []
    for kd in k:
        out.append(v % kd)
        v = v // kd
    return out


def small_shapes(max_nodes, max_dims=3, max_k=6):
    for dims in range(1, max_dims + 1):
        for k in itertools.product(range(1, max_k + 1), repeat=dims):
            if 2 <= math.prod(k) <= max_nodes:
                for wrap in itertools.product((True, False), repeat=dims):
                    yield k, wrap


def test_even_shapes_equal_the_cheapest_plane_cut_counted_on_the_links():
    n = 0
    for k, wrap in small_shapes(96, max_k=8):
        if any(kd % 2 for kd in k if kd > 1):
            continue
        t = torus(k, wrap)
        c = coords(t)
        cuts = [crossing(t, c[d] < kd // 2) for d, kd in enumerate(k) if kd >= 2]
        assert torus_bisection_cables(k, wrap) == min(cuts), (k, wrap)
        n += 1
    assert n > 300


def jog_cut(k, wrap):
    """The balanced cut ``torus_bisection_cables`` describes, as a side mask
    over the nodes of ``torus(k, wrap)`` (built, not counted)."""
    p = math.prod(k)
    if p == 1:
        return np.array([True])

    def cost(d):   # the formula's term for halving dimension d
        jog = torus_bisection_cables(k[:d] + k[d + 1:], wrap[:d] + wrap[d + 1:]) if k[d] % 2 else 0
        return p // k[d] * (2 if wrap[d] and k[d] > 2 else 1) + jog

    best = min((d for d in range(len(k)) if k[d] >= 2), key=cost)
    v = np.arange(p)
    stride = math.prod(k[:best])
    cd = (v // stride) % k[best]
    rest = v % stride + (v // (stride * k[best])) * stride     # index in the cross-section
    if k[best] % 2 == 0:
        return cd < k[best] // 2
    x = jog_cut(k[:best] + k[best + 1:], wrap[:best] + wrap[best + 1:])
    return cd < k[best] // 2 + x[rest]


@pytest.mark.parametrize("k,wrap", [((5, 5), (True, True)), ((7, 3, 5), (True, False, True)), ((9, 2), (False, False)),
                                    ((3, 3, 3), (True, True, True)), ((5, 4, 3), (False, True, True)),
                                    ((11,), (True,)), ((6, 5), (True, False))])
def test_odd_shapes_the_formula_is_a_balanced_cut_of_the_generated_links(k, wrap):
    t = torus(k, wrap)
    side = jog_cut(k, wrap)
    p = t.n_endpoints
    assert side.sum() in (p // 2, p - p // 2)
    assert crossing(t, side) == torus_bisection_cables(k, wrap)


def test_equals_the_exhaustive_minimum_bisection_of_every_small_shape():
    n = 0
    for k, wrap in small_shapes(12, max_dims=3, max_k=6):
        t = torus(k, wrap)
        p = t.n_endpoints
        src, dst = t.src.astype(np.intp), t.dst.astype(np.intp)
        best = None
        for rest in itertools.combinations(range(1, p), (p + 1) // 2 - 1):   # node 0 on the larger side
            side = np.zeros(p, bool)
            side[0] = True
            side[list(rest)] = True
            cut = int(np.sum(side[src] & ~side[dst]))
            best = cut if best is None else min(best, cut)
        assert torus_bisection_cables(k, wrap) == best, (k, wrap)
        n += 1
    assert n > 200


def test_bisection_edge_shapes():
    assert torus_bisection_cables((1, 1), (True, True)) == 0
    assert torus_bisection_cables((2,), (True,)) == 1          # a ring of 2 is one cable
    assert torus_bisection_cables((2, 2), (True, True)) == 2
    assert torus_bisection_cables((3, 3), (True, True)) == 8   # 2k + 2 on an odd k x k torus
    assert torus_bisection_cables((4, 5), (False, False)) == 5


# --- 5. eBB with a pair that has no route -------------------------------------------------------

def test_ebb_without_route_is_the_same_one_line_error_as_pattern(capsys):
    base = ["topo", "kary:2,2", "--routing", "up-down:roots=4 5 6 7"]
    rc, _, err = cli(base + ["--pattern", "shift:1"], capsys)
    pattern_error = one_line_error(rc, err)
    rc, _, err = cli(base + ["--ebb", "3"], capsys)
    ebb_error = one_line_error(rc, err)
    assert "up-down on kary:2,2: updown: no legal route from endpoint" in ebb_error
    assert "(e" in ebb_error and pattern_error.split(": updown:")[0] == ebb_error.split(": updown:")[0]
    with pytest.raises(TopologyError, match=r"no legal route from endpoint \d \(e\d\)"):
        effective_bisection_bandwidth(make_router(parse_topology("kary:2,2"), "up-down", roots=[4, 5, 6, 7]), 3)


def test_ebb_with_incomplete_forwarding_tables(data, tmp_path, capsys):
    damaged = data / "mess" / "ibroute-truncated"
    if not damaged.is_dir():
        pytest.skip("mess/ibroute-truncated not present")
    tables = tmp_path / "ibroutes"
    shutil.copytree(data / "ibroutes-plafrim", tables)
    for f in damaged.iterdir():
        shutil.copy(f, tables / f.name)
    rc, _, err = cli(["topo", f"ibnet:{data / 'plafrim-ib-subnet.txt'}", "--routing", f"ibroute:path={tables}",
                      "--ebb", "5"], capsys)
    line = one_line_error(rc, err)
    assert "ibroute on ibnet:" in line and "no route from endpoint" in line


# --- 8c. eBB over an order with duplicate endpoints ---------------------------------------------

def test_ebb_order_with_duplicates_names_the_duplicate():
    r = make_router(parse_topology("kary:4,2"))
    with pytest.raises(SpecError, match=r"endpoint 5 \(e5\) appears 2 times in the order \(ranks 1, 3\)"):
        effective_bisection_bandwidth(r, 4, order=[0, 5, 2, 5])
    with pytest.raises(SpecError, match="endpoint 16, expected endpoint ids in 0..15"):
        effective_bisection_bandwidth(r, 4, order=[0, 16])
    assert effective_bisection_bandwidth(r, 4, order=[0, 5, 2, 7]).mean < 1.0 + 1e-12


# --- 8d. fractional sizes and counts ------------------------------------------------------------

@pytest.mark.parametrize("dims", [(4.5, 4), (4, 3.7), (True, 4), ("4", 4), (float("nan"), 2), (0, 4)])
def test_fractional_or_odd_torus_sizes_are_refused(dims):
    with pytest.raises(SpecError, match="torus: dimension size"):
        torus(dims)


def test_integral_sizes_of_any_type_are_fine():
    assert torus((4.0, np.int64(3))).n_endpoints == 12


@pytest.mark.parametrize("n", [3.7, 0.5, True, "3"])
def test_fractional_rank_counts_are_refused(n):
    with pytest.raises(SpecError, match=f"n_ranks={n!r}, expected an integer"):
        node_order(parse_topology("kary:4,2"), "identity", n_ranks=n)
    assert len(node_order(parse_topology("kary:4,2"), "identity", n_ranks=3.0)) == 3


@pytest.mark.parametrize("n", [2.5, True, "3", 0])
def test_fractional_bisection_counts_are_refused(n):
    with pytest.raises(SpecError, match="n_bisections"):
        effective_bisection_bandwidth(make_router(parse_topology("crossbar:4")), n)


@pytest.mark.parametrize("argv,what", [(["topo", "torus:4.5x4"], "dimension '4.5'"),
                                       (["topo", "kary:4,2", "--ranks", "3.7"], "'3.7' is not an integer")])
def test_fractional_values_on_the_command_line(argv, what, capsys):
    rc, _, err = cli(argv, capsys)
    assert what in one_line_error(rc, err)


# --- 8e. Valiant routing needs a third group ----------------------------------------------------

@pytest.mark.parametrize("spec", ["dragonfly:3,1,1,2", "dragonfly:2,1,1,1"])
def test_valiant_on_fewer_than_three_groups_is_refused(spec, capsys):
    with pytest.raises(SpecError, match=r"routing 'valiant' on .*expected g >= 3"):
        make_router(parse_topology(spec), "valiant")
    rc, _, err = cli(["topo", spec, "--routing", "valiant", "--pattern", "shift:1"], capsys)
    assert "expected g >= 3" in one_line_error(rc, err)
    assert make_router(parse_topology(spec), "minimal").name == "minimal"


# --- 8f. drawing into a missing directory -------------------------------------------------------

def test_draw_into_a_missing_directory(tmp_path, capsys):
    t = parse_topology("kary:2,2")
    missing = tmp_path / "no" / "such" / "dir.svg"
    with pytest.raises(SpecError, match=f"draw: cannot write '{missing}'"):
        draw_svg(t, missing)
    with pytest.raises(SpecError, match="names a directory"):
        draw_svg(t, str(tmp_path) + "/")
    rc, _, err = cli(["topo", "kary:2,2", "--draw", str(missing)], capsys)
    assert str(missing) in one_line_error(rc, err)
    assert not (tmp_path / "no").exists()
