"""Routes are connected paths of the promised shape; d-mod-k and the
OpenSM-like engine make shift permutations contention-free."""

import math
import re
from collections import deque

import numpy as np
import pytest

from topocoll.errors import SpecError, TopologyError
from topocoll.topology import (link_loads, make_router, node_order, parse_topology, pattern_pairs, route)


def all_pairs(n):
    s, d = np.divmod(np.arange(n * n), n)
    return s, d


def walk(t, s, d, links):
    """Check links form a path s -> d; return the node sequence."""
    at = s
    nodes = [s]
    for l in links:
        assert t.src[l] == at, f"link {l} does not start at {at}"
        at = int(t.dst[l])
        nodes.append(at)
    assert at == d
    if t.n_switches:  # on tori every node forwards
        for v in nodes[1:-1]:
            assert v >= t.n_endpoints, "routes do not pass through other endpoints"
    return nodes


def bfs_hops(t, s):
    nbrs = {}
    for a, b in zip(t.src.tolist(), t.dst.tolist()):
        nbrs.setdefault(a, []).append(b)
    dist = {s: 0}
    q = deque([s])
    while q:
        v = q.popleft()
        if v != s and v < t.n_endpoints and t.n_switches:
            continue
        for u in nbrs.get(v, []):
            if u not in dist:
                dist[u] = dist[v] + 1
                q.append(u)
    return dist


def fat_tree_levels(t):
    m, w = t.params["m"], t.params["w"]
    level = np.zeros(t.n_nodes, dtype=int)
    start = t.n_endpoints
    for l in range(1, len(m) + 1):
        cnt = math.prod(w[:l]) * math.prod(m[l:])
        level[start:start + cnt] = l
        start += cnt
    return level


FAT = ["kary:4,2", "kary:3,3", "pgft:2;4,4;1,2;1,2", "xgft:3;2,3,2;1,2,2", "crossbar:6"]


@pytest.mark.parametrize("spec", FAT)
@pytest.mark.parametrize("engine", ["d-mod-k", "ftree", "random", "min-hop", "up-down"])
def test_fat_tree_routes_are_minimal_up_then_down(spec, engine):
    t = parse_topology(spec)
    r = make_router(t, engine, **({"seed": 3} if engine == "random" else {}))
    s, d = all_pairs(t.n_endpoints)
    indptr, links = route(r, s, d)
    level = fat_tree_levels(t)
    for i in range(len(s)):
        path = links[indptr[i]:indptr[i + 1]]
        nodes = walk(t, s[i], d[i], path)
        lv = level[nodes]
        steps = np.sign(np.diff(lv))
        assert np.all(steps != 0)
        if len(steps):
            turn = np.argmax(steps < 0) if np.any(steps < 0) else len(steps)
            assert np.all(steps[:turn] > 0) and np.all(steps[turn:] < 0), f"{nodes} is not up then down"
        assert len(path) == bfs_hops(t, int(s[i]))[int(d[i])] if s[i] != d[i] else len(path) == 0


@pytest.mark.parametrize("k", [4, 6, 12])
@pytest.mark.parametrize("engine", ["d-mod-k", "ftree"])
def test_shift_permutations_are_contention_free_in_routing_order(k, engine):
    # Zahavi; shift-based paper §2.1.4 and Fig. 5
    t = parse_topology(f"kary:{k},2")
    r = make_router(t, engine)
    order = node_order(t, "routing")
    for shift in range(1, k * k):
        src, dst = pattern_pairs(f"shift:{shift}", order)
        assert link_loads(r, src, dst).max() == 1.0, f"shift {shift}"


@pytest.mark.parametrize("k", [6, 12])
def test_random_order_makes_shifts_collide(k):
    # the shift-based paper's Fig. 6: the same pattern, nodes in another order
    t = parse_topology(f"kary:{k},2")
    r = make_router(t, "d-mod-k")
    order = node_order(t, "random", seed=1)
    worst = max(link_loads(r, *pattern_pairs(f"shift:{s}", order)).max() for s in range(1, k * k))
    assert worst > 1


@pytest.mark.parametrize("n", [144, 288, 1152])
def test_table1_pgfts_shift_contention_free(n):
    t = parse_topology(f"table1:{n}")
    r = make_router(t, "d-mod-k")
    order = node_order(t, "routing")
    for shift in (1, 11, 12, 13, n // 2, n - 1):
        assert link_loads(r, *pattern_pairs(f"shift:{shift}", order)).max() == 1.0


def _hops(t, links):
    """A route as ``["e2→s0", "s0→s5", ...]``."""
    return [f"{t.names[t.src[l]]}→{t.names[t.dst[l]]}" for l in links]


def _named_loads(t, loads):
    """The links that carry something, ``{"s0→s5": load}``."""
    return {f"{t.names[t.src[l]]}→{t.names[t.dst[l]]}": float(loads[l]) for l in np.flatnonzero(loads)}


@pytest.mark.parametrize("engine", ["d-mod-k", "ftree"])
def test_d_mod_k_goes_up_by_destination_on_asymmetric_traffic(engine):
    """Zahavi's d-mod-k chooses the up port by the *destination* (up port
    ⌊d / Π_{k≤l} w_k p_k⌋ mod w_{l+1} p_{l+1}; docs/topology.md). On kary:4,2
    (m = 4,4; w = 1,4): endpoint e sits on leaf s(e // 4) (s0..s3); the
    leaf's up port is d mod 4 and leads to spine s(4 + d mod 4) (s4..s7);
    the spine goes down to leaf s(d // 4). ``ftree`` on a generated tree is
    d-mod-k over the routing order, which is the identity here.

    Shift permutations (the other tests) are symmetric: a rule that chose
    the up port by the *source* would also route them contention free. The
    traffic here is not: all to one endpoint, one endpoint to all, and a
    pair in both directions."""
    t = parse_topology("kary:4,2")
    r = make_router(t, engine)
    # e2 → e5: leaf s0, spine s(4 + 5 mod 4) = s5, leaf s1; back e5 → e2 by spine s(4 + 2 mod 4) = s6
    indptr, links = route(r, [2, 5], [5, 2])
    assert _hops(t, links[indptr[0]:indptr[1]]) == ["e2→s0", "s0→s5", "s5→s1", "s1→e5"]
    assert _hops(t, links[indptr[1]:indptr[2]]) == ["e5→s1", "s1→s6", "s6→s0", "s0→e2"]

    # incast: the 12 endpoints off leaf s1 send to e5. Every route climbs to spine s5 (d = 5):
    # each other leaf's 4 flows share its link to s5, and s5→s1→e5 carries all 12
    others = [e for e in range(16) if e // 4 != 1]
    incast = _named_loads(t, link_loads(r, others, [5] * 12))
    want = {f"e{e}→s{e // 4}": 1.0 for e in others}
    want.update({"s0→s5": 4.0, "s2→s5": 4.0, "s3→s5": 4.0, "s5→s1": 12.0, "s1→e5": 12.0})
    assert incast == want

    # fan-out: e5 sends to the same 12. The destinations spread over the spines by d mod 4:
    # three flows on each of s1's up links, then one on each spine → leaf link
    fanout = _named_loads(t, link_loads(r, [5] * 12, others))
    want = {"e5→s1": 12.0, **{f"s1→s{4 + j}": 3.0 for j in range(4)}}
    want.update({f"s{4 + j}→s{leaf}": 1.0 for j in range(4) for leaf in (0, 2, 3)})
    want.update({f"s{e // 4}→e{e}": 1.0 for e in others})
    assert fanout == want


def test_d_mod_k_climbs_three_levels_by_the_destinations_digits():
    """kary:2,3 (8 endpoints; level-1 switches s0..s3, level-2 s4..s7,
    level-3 s8..s11). A level-l switch's digits are ``b_2..b_l`` (up-port
    choices, radix w = 2) and ``a_{l+1}..a_3`` (positions, radix m = 2);
    its index is the mixed-radix number with ``b_2`` least significant.
    d-mod-k takes ``b_2 = d mod 2`` and ``b_3 = ⌊d / 2⌋ mod 2``.

    e0 → e7 (a_3 differs, so up to level 3): e0 → s0; up with b_2 = 7 mod 2
    = 1 to the level-2 switch (b_2 = 1, a_3 = 0) = s(4 + 1) = s5; up with
    b_3 = 3 mod 2 = 1 to (b_2 = 1, b_3 = 1) = s(8 + 3) = s11; down to
    d's half a_3 = 1: (b_2 = 1, a_3 = 1) = s(4 + 3) = s7; down to d's leaf
    s(7 // 2) = s3; e7. Back, e7 → e0 has b_2 = b_3 = 0: s3, s6, s8, s4,
    s0. (Choosing by the source would send e0 → e7 through s4, s8, s6 — this
    route of e7 → e0 reversed — and e7 → e0 through s7, s11, s5.)"""
    t = parse_topology("kary:2,3")
    r = make_router(t, "d-mod-k")
    indptr, links = route(r, [0, 7], [7, 0])
    assert _hops(t, links[indptr[0]:indptr[1]]) == ["e0→s0", "s0→s5", "s5→s11", "s11→s7", "s7→s3", "s3→e7"]
    assert _hops(t, links[indptr[1]:indptr[2]]) == ["e7→s3", "s3→s6", "s6→s8", "s8→s4", "s4→s0", "s0→e0"]


def torus_coords(t, v):
    k = t.params["k"]
    out = []
    for kk in k:
        out.append(v % kk)
        v //= kk
    return out


def torus_min_hops(t, a, b):
    total = 0
    for ca, cb, k, w in zip(torus_coords(t, a), torus_coords(t, b), t.params["k"], t.params["wrap"]):
        diff = abs(ca - cb)
        total += min(diff, k - diff) if w else diff
    return total


@pytest.mark.parametrize("spec", ["torus:4x3x5", "torus:4x4x3m", "mesh:3x4"])
@pytest.mark.parametrize("order", ["xyz", "zyx", "yxz"])
def test_torus_dor_is_minimal_and_dimension_ordered(spec, order):
    t = parse_topology(spec)
    nd = len(t.params["k"])
    order = order[:nd] if nd == 3 else "yx" if order[0] == "y" else "xy"
    r = make_router(t, "dor", order=order)
    s, d = all_pairs(t.n_endpoints)
    indptr, links = route(r, s, d)
    rank = {c: i for i, c in enumerate(order)}
    for i in range(len(s)):
        path = links[indptr[i]:indptr[i + 1]]
        nodes = walk(t, s[i], d[i], path)
        assert len(path) == torus_min_hops(t, int(s[i]), int(d[i]))
        dims = []
        for a, b in zip(nodes, nodes[1:]):
            changed = [j for j, (x, y) in enumerate(zip(torus_coords(t, a), torus_coords(t, b))) if x != y]
            assert len(changed) == 1
            dims.append(rank["xyz"[changed[0]]])
        assert dims == sorted(dims)


def test_torus_adaptive_splits_over_minimal_orders():
    t = parse_topology("torus:4x4x4")
    r = make_router(t, "adaptive")
    assert r.multipath
    s, d = all_pairs(t.n_endpoints)
    indptr, links, w = route(r, s, d, weights=True)
    for i in range(0, len(s), 7):
        seg = slice(indptr[i], indptr[i + 1])
        assert np.all((w[seg] > 0) & (w[seg] <= 1 + 1e-12))
        assert math.isclose(w[seg].sum(), torus_min_hops(t, int(s[i]), int(d[i])))
    # 0 -> (1,1,0): two orders, each first link carries half
    i = 0 * 64 + 5
    seg = slice(indptr[i], indptr[i + 1])
    assert sorted(w[seg].tolist()) == [0.5, 0.5, 0.5, 0.5]


@pytest.mark.parametrize("engine", ["minimal", "valiant", "min-hop", "up-down"])
def test_dragonfly_routes(engine):
    t = parse_topology("dragonfly:2,2,1")   # a=2, p=2, h=1, g=3
    r = make_router(t, engine, **({"seed": 5} if engine == "valiant" else {}))
    s, d = all_pairs(t.n_endpoints)
    indptr, links = route(r, s, d)
    a, p = 2, 2
    n = t.n_endpoints
    for i in range(len(s)):
        nodes = walk(t, s[i], d[i], links[indptr[i]:indptr[i + 1]])
        groups = {(v - n) // a for v in nodes[1:-1]}
        gs, gd = s[i] // (a * p), d[i] // (a * p)
        if engine == "minimal":
            assert len(nodes) - 1 <= 5 and groups <= {gs, gd}
        if engine == "valiant" and gs != gd:
            assert len(groups) == 3        # through the third group


def _lft(path):
    port = {}
    lines = path.read_text().splitlines()
    for line in lines:
        m = re.match(r"0x([0-9a-f]+) (\d+) : \(Channel Adapter", line)
        if m:
            port[int(m.group(1), 16)] = int(m.group(2))
    guid = re.search(r"guid 0x([0-9a-f]+)", lines[0]).group(1)
    return guid, port


def test_plafrim_forwarding_tables_reproduce_their_paths(data):
    t = parse_topology(f"ibnet:{data / 'plafrim-ib-subnet.txt'}")
    assert (t.n_endpoints, t.n_switches) == (125, 9)
    r = make_router(t, "ibroute", path=str(data / "ibroutes-plafrim"))
    tables = dict(_lft(f) for f in sorted((data / "ibroutes-plafrim").glob("*.txt")))
    assert len(tables) == 9
    guids, lids, n = t.params["guids"], t.params["lids"], t.n_endpoints
    s, d = all_pairs(n)
    indptr, links = route(r, s, d)
    indptr_adj = t.indptr
    for i in range(0, len(s), 3):
        if s[i] == d[i]:
            continue
        path = links[indptr[i]:indptr[i + 1]]
        nodes = walk(t, s[i], d[i], path)
        for l, v in zip(path[1:], nodes[1:-1]):
            want_port = tables[guids[v][2:]][lids[d[i]]]
            assert t.port[l] == want_port
            assert indptr_adj[v] <= l < indptr_adj[v + 1]


def test_missing_forwarding_entry_names_the_pair(data, tmp_path):
    for f in (data / "ibroutes-plafrim").glob("*.txt"):
        text = f.read_text()
        if f.name.endswith("-2.txt"):
            text = "\n".join(ln for ln in text.splitlines() if "bonobo020" not in ln) + "\n"
        (tmp_path / f.name).write_text(text)
    t = parse_topology(f"ibnet:{data / 'plafrim-ib-subnet.txt'}")
    r = make_router(t, "ibroute", path=str(tmp_path))
    dest = t.names.index("bonobo020")
    srcs = [i for i in range(t.n_endpoints) if i != dest]
    with pytest.raises(TopologyError, match=r"no route from endpoint \d+ \(\w+\) to endpoint \d+ \(bonobo020\)"):
        route(r, srcs, [dest] * len(srcs))


@pytest.mark.parametrize("spec", ["manpage-example.topo", "loginoff-144.topo", "X5.topofile", "plafrim-ib-subnet.txt"])
@pytest.mark.parametrize("engine", ["min-hop", "ftree", "up-down"])
def test_real_fabric_engines(data, spec, engine):
    t = parse_topology(f"ibnet:{data / spec}")
    r = make_router(t, engine)
    s, d = all_pairs(t.n_endpoints)
    indptr, links = route(r, s, d)
    step = max(1, len(s) // 600)
    for i in range(0, len(s), step):
        path = links[indptr[i]:indptr[i + 1]]
        walk(t, s[i], d[i], path)
        if engine != "up-down" and s[i] != d[i]:
            assert len(path) == bfs_hops(t, int(s[i]))[int(d[i])]


def test_min_hop_balances_ports():
    t = parse_topology("kary:4,2")
    r = make_router(t, "min-hop")
    # every leaf spreads the 12 remote destinations evenly over its 4 up-ports
    src, dst = pattern_pairs("alltoall", np.arange(16))
    loads = link_loads(r, src, dst)
    up = (t.src >= 16) & (t.src < 20) & (t.dst >= 20)
    assert set(loads[up].tolist()) == {12.0}


@pytest.mark.parametrize("name, kw", [("ecmp", {}), ("dor", {}), ("random", {"colour": 1}),
                                      ("random", {"seed": -1}), ("random", {"seed": "x"})])
def test_bad_router_names_and_options(name, kw):
    with pytest.raises(SpecError):
        make_router(parse_topology("kary:4,2"), name, **kw)


def test_bad_torus_order_and_endpoints():
    t = parse_topology("torus:4x4")
    with pytest.raises(SpecError, match="order"):
        make_router(t, "dor", order="xz")
    r = make_router(t)
    with pytest.raises(SpecError, match="endpoint ids"):
        route(r, [0], [16])
    with pytest.raises(SpecError, match="equal lengths"):
        route(r, [0, 1], [2])
