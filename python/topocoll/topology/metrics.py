"""Network metrics: counts, diameter, bisection bandwidth (theoretical and
effective), link loads of a pattern and their histogram.

The effective bisection bandwidth follows Hoefler, Schneider & Lumsdaine,
"Multistage switches are not crossbars: effects of static routing in
high-performance networks", IEEE Cluster 2008 (cited as [16] in the
network-noise paper, seed ``network-noise-large-scale.txt`` §3.1): split the
endpoints into two random halves, pair them off, let every pair exchange
data in both directions at once, give each flow ``min(bandwidth / load)``
over its links, and average the flows' fractions of full bandwidth over
many random bisections.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from topocoll import _core
from topocoll.errors import SpecError, TopologyError

from .network import Topology
from .routing import Router, _endpoints
from .torus import _whole

__all__ = ["pattern_pairs", "link_loads", "load_histogram", "effective_bisection_bandwidth",
           "EffectiveBisection", "diameter", "bisection_bandwidth", "torus_bisection_cables", "summary",
           "max_flow_bisection", "FlowBisection", "MAX_FLOW_LINKS"]


def pattern_pairs(pattern: str, order: np.ndarray, *, seed: int = 0):
    """(src, dst) endpoint pairs of a communication pattern over ranks.

    Parameters
    ----------
    pattern : str
        ``shift:S`` (rank r sends to (r + S) mod P, shift-based paper eq. 1),
        ``random`` (a seeded random permutation without fixed points where
        P > 1) or ``alltoall`` (every ordered pair, P (P-1) flows).
    order : numpy.ndarray
        rank -> endpoint (see :func:`~topocoll.topology.order.node_order`).
    """
    p = len(order)
    ranks = np.arange(p)
    kind, _, arg = pattern.partition(":")
    if kind == "shift":
        try:
            s = int(arg)
        except ValueError:
            raise SpecError(f"pattern {pattern!r}: expected shift:S with an integer S") from None
        if not 0 < s < p:
            raise SpecError(f"pattern {pattern!r}: S={s}, expected 1 <= S <= P-1 = {p - 1}")
        return order[ranks], order[(ranks + s) % p]
    if kind == "random":
        rng = np.random.default_rng(int(seed))
        perm = rng.permutation(p)
        if p > 1:  # Sattolo-free fix-up: rotate fixed points onto the next rank's target
            fixed = np.flatnonzero(perm == ranks)
            if len(fixed):
                perm[fixed] = np.roll(perm[fixed], 1)
                if len(fixed) == 1:
                    j = (fixed[0] + 1) % p
                    perm[fixed[0]], perm[j] = perm[j], perm[fixed[0]]
        return order[ranks], order[perm]
    if kind == "alltoall":
        if p > 4096:
            raise SpecError(f"pattern 'alltoall' on {p} ranks: {p * (p - 1)} flows, expected P <= 4096 "
                            "(use shift:S for one round)")
        src = np.repeat(ranks, p - 1)
        off = np.tile(np.arange(1, p), p)
        return order[src], order[(src + off) % p]
    raise SpecError(f"pattern {pattern!r}: expected shift:S, random or alltoall")


def link_loads(router: Router, src, dst) -> np.ndarray:
    """Number of routes crossing each directed link (float64; fractional for
    the ``adaptive`` split).

    Examples
    --------
    >>> from topocoll.topology import parse_topology, make_router
    >>> r = make_router(parse_topology("crossbar:4"))
    >>> float(link_loads(r, [0, 1], [2, 2]).max())      # two flows into endpoint 2
    2.0
    """
    router.require_static("link_loads")
    s = _endpoints(router, src, "src")
    d = _endpoints(router, dst, "dst")
    if len(s) != len(d):
        raise SpecError(f"link_loads: {len(s)} sources but {len(d)} destinations")
    try:
        return router.engine.loads(s, d)
    except ValueError as e:
        from .routing import _explain
        from topocoll.errors import TopologyError
        raise TopologyError(f"{router.name} on {router.topology.spec}: {_explain(router, e)}") from None


def load_histogram(loads) -> dict:
    """``{load: number of links}`` over all links (idle links count as 0)."""
    values, counts = np.unique(np.round(np.asarray(loads, dtype=float), 9), return_counts=True)
    return {float(v): int(c) for v, c in zip(values, counts)}


@dataclass(frozen=True)
class EffectiveBisection:
    """Effective bisection bandwidth: ``mean`` fraction of full bandwidth per
    flow, over ``samples`` (one per random bisection, drawn with ``seed``)."""

    mean: float
    std: float
    samples: np.ndarray
    seed: int

    @property
    def n_bisections(self) -> int:
        return len(self.samples)


def effective_bisection_bandwidth(router: Router, n_bisections: int = 1000, *, seed: int = 0,
                                  order=None, chunk: int = 64) -> EffectiveBisection:
    """Effective bisection bandwidth under static routing (Hoefler et al. 2008).

    Parameters
    ----------
    router : Router
    n_bisections : int
        Number of random bisections.
    seed : int
        Seed of the bisections.
    order : array_like, optional
        Distinct endpoints taking part (all by default); an odd one out sits
        idle.

    Returns
    -------
    EffectiveBisection
        ``mean`` is 1.0 on a crossbar; the paper reports 0.40-0.60 on real
        full-bisection InfiniBand fat trees.

    Raises
    ------
    SpecError
        ``n_bisections`` is not an integer >= 1; ``order`` names an endpoint
        twice (a flow from an endpoint to itself would count as full
        bandwidth) or one outside the topology.
    TopologyError
        A sampled pair has no route (e.g. ``up-down`` with hand-given roots,
        incomplete forwarding tables); the message names both endpoints.

    Examples
    --------
    >>> from topocoll.topology import parse_topology, make_router
    >>> effective_bisection_bandwidth(make_router(parse_topology("crossbar:16")), 10).mean
    1.0
    """
    router.require_static("effective bisection bandwidth")
    if not _whole(n_bisections) or int(n_bisections) < 1:
        raise SpecError(f"ebb: n_bisections={n_bisections!r}, expected an integer >= 1")
    t = router.topology
    eps = np.arange(t.n_endpoints) if order is None else _distinct_endpoints(t, order)
    half = len(eps) // 2
    if half < 1:
        raise SpecError(f"ebb: {len(eps)} endpoints, expected at least 2")
    rng = np.random.default_rng(int(seed))
    bw = np.ascontiguousarray(router.topology.bandwidth, dtype=np.float64)
    out = []
    left = int(n_bisections)
    while left:
        c = min(chunk, left)
        perms = np.stack([rng.permutation(len(eps))[: 2 * half] for _ in range(c)])
        a, b = eps[perms[:, :half]], eps[perms[:, half:]]
        src = np.concatenate([a, b], axis=1).reshape(-1)
        dst = np.concatenate([b, a], axis=1).reshape(-1)
        try:
            out.append(router.engine.ebb(src.astype(np.uint32), dst.astype(np.uint32), 2 * half, bw))
        except ValueError as e:  # a sampled pair without route, named as route() names it
            from .routing import _explain
            raise TopologyError(f"{router.name} on {t.spec}: {_explain(router, e)}") from None
        left -= c
    samples = np.concatenate(out)
    return EffectiveBisection(float(samples.mean()), float(samples.std()), samples, int(seed))


def _distinct_endpoints(t: Topology, order) -> np.ndarray:
    """``order`` as int64 endpoint ids, each at most once (one-line errors)."""
    arr = np.asarray(order)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise SpecError(f"ebb: order must be a 1-D sequence of integer endpoint ids, got {arr.dtype} of shape "
                        f"{arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= t.n_endpoints):
        bad = int(arr[(arr < 0) | (arr >= t.n_endpoints)][0])
        raise SpecError(f"ebb: order names endpoint {bad}, expected endpoint ids in 0..{t.n_endpoints - 1}")
    uniq, counts = np.unique(arr, return_counts=True)
    if np.any(counts > 1):
        e = int(uniq[counts > 1][0])
        where = np.flatnonzero(arr == e)
        raise SpecError(f"ebb: endpoint {e} ({t.names[e]}) appears {len(where)} times in the order (ranks "
                        f"{', '.join(map(str, where[:4].tolist()))}{', ...' if len(where) > 4 else ''}), "
                        "expected distinct endpoints: a bisection pairs off different endpoints")
    return arr


def diameter(topology: Topology) -> int:
    """Largest hop count of a shortest path between two endpoints.

    Closed forms for fat trees, tori and balanced dragonflies
    (``g = a*h + 1``); for real fabrics and other dragonflies a
    breadth-first search over the switches only, in Rust on all cores
    (``src/routing/bfs.rs``): endpoints never forward, so the distance of
    two endpoints is 2 + the distance of their switches (2 on one switch, 1
    for a direct adapter-to-adapter cable), the minimum over every switch an
    endpoint is cabled to (multi-homed adapters included).

    Raises
    ------
    TopologyError
        Some endpoint cannot reach another; the message names both.
    """
    t = topology
    if t.family == "xgft":
        m = t.params["m"]
        top = max((i + 1 for i, mi in enumerate(m) if mi > 1), default=0)
        return 2 * top
    if t.family == "torus":
        return sum((k // 2 if w and k > 2 else k - 1) for k, w in zip(t.params["k"], t.params["wrap"]))
    if t.family == "dragonfly" and t.params["g"] == t.params["a"] * t.params["h"] + 1 and t.n_endpoints > 1:
        # one global cable per group pair: local-global-local between most router pairs
        P = t.params
        if P["g"] > 1:
            return 2 + 1 + 2 * (P["a"] > 1)
        return 2 + (P["a"] > 1)
    # real fabrics, and dragonflies with fewer groups, whose extra global
    # cables shorten some paths (dragonfly:3,1,1,2 has diameter 4, not 5)
    return _search_diameter(t)


def _search_diameter(t: Topology) -> int:
    hops, unreachable = _core.routing_endpoint_diameter(t.n_nodes, t.n_endpoints,
                                                        np.ascontiguousarray(t.src, dtype=np.uint32),
                                                        np.ascontiguousarray(t.dst, dtype=np.uint32))
    if unreachable is not None:
        a, b = unreachable
        raise TopologyError(f"{t.spec}: endpoint {b} ({t.names[b]}) is unreachable from endpoint {a} "
                            f"({t.names[a]}), expected a connected fabric")
    return int(hops)


def torus_bisection_cables(k, wrap) -> int:
    """Fewest cables between two halves of a torus / mesh (sizes ``k``,
    per-dimension ``wrap``); halves of ``P // 2`` and ``P - P // 2`` nodes.

    Halving dimension ``d`` cuts each of its ``L = P / k_d`` lines once if
    the line is open (a mesh dimension, or a ring of 2, which has a single
    cable) and twice if it is a ring of ``k_d >= 3``. For an even ``k_d``
    that is a bisection. For an odd ``k_d`` the plane cut leaves one side a
    plane short, so half the lines (a bisection of the cross-section, the
    torus without dimension ``d``) cut one plane further along: every
    cross-section cable between the two sets of lines crosses the cut once,
    in that plane. Hence::

        B(k) = min over d with k_d >= 2 of
                 P / k_d * (2 if wrap_d and k_d > 2 else 1)
               + (B(k without d) if k_d is odd else 0)

    with ``B`` of no dimension = 0. The minimum runs over *every* dimension:
    on ``8x8x8m`` the mesh dimension (64 cables) beats the wrapped ones (128).
    With even sizes ``B`` is the plane cut (``2 k^(n-1)`` on a k-ary n-cube
    torus: Dally & Towles, *Principles and Practices of Interconnection
    Networks*, 2004, ch. 5); a 3x3 torus needs 8 (2k + 2), not the 6 of a
    plane cut. ``B`` equals the exhaustive minimum over all balanced node
    splits for every shape of up to 18 nodes (3,680 shapes, 1-4 dimensions,
    every wrap pattern, checked when it was derived; the tests redo it up to
    12 nodes), and the cut it describes is built and counted on larger ones.

    Examples
    --------
    >>> torus_bisection_cables((8, 8, 16), (True, True, True))    # halve the 16-ring
    128
    >>> torus_bisection_cables((8, 8, 8), (True, True, False))    # halve the mesh dimension
    64
    >>> torus_bisection_cables((3, 3), (True, True))
    8
    """
    return _bisection_cables(tuple(int(x) for x in k), tuple(bool(w) for w in wrap))


@functools.lru_cache(maxsize=256)
def _bisection_cables(k: tuple, wrap: tuple) -> int:
    p = math.prod(k)
    best = None
    for d, (kd, w) in enumerate(zip(k, wrap)):
        if kd < 2:
            continue
        cut = p // kd * (2 if w and kd > 2 else 1)
        if kd % 2:
            cut += _bisection_cables(k[:d] + k[d + 1:], wrap[:d] + wrap[d + 1:])
        best = cut if best is None else min(best, cut)
    return best or 0


def bisection_bandwidth(topology: Topology) -> float | None:
    """Theoretical bisection bandwidth in B/s (one direction), or None.

    Fat trees: ``N/2 * b * min(1, min_l up(l)/down(l))`` with the up/down
    capacity ratio of a level-``l`` subtree; tori and meshes: ``b`` times
    :func:`torus_bisection_cables` (halve the dimension that cuts fewest
    cables, wrap-around cables counted only where it wraps; odd sizes jog);
    dragonflies: global cables between two halves of the groups (one
    direction). Real fabrics and imported graphs: an upper bound, the least
    maximum flow between two halves of the endpoints over a few halvings
    (:func:`max_flow_bisection`); None above :data:`MAX_FLOW_LINKS` links.

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> bisection_bandwidth(parse_topology("torus:8x8x8m")) / 1e9    # the mesh dimension: 64 cables
    11.2
    """
    t = topology
    b = float(np.min(t.bandwidth)) if t.n_links else 0.0
    n = t.n_endpoints
    if t.family == "xgft":
        m, w, p = t.params["m"], t.params["w"], t.params["p"]
        ratio = 1.0
        for l in range(1, len(m)):
            up = math.prod(w[: l + 1]) * p[l]
            ratio = min(ratio, up / math.prod(m[:l]))
        return n / 2 * b * ratio if n > 1 else 0.0
    if t.family == "torus":
        return torus_bisection_cables(t.params["k"], t.params["wrap"]) * b
    if t.family == "dragonfly":
        P = t.params
        g, a, pp = P["g"], P["a"], P["p"]
        if g > 1:
            half = set(range(g // 2))
            mask = (t.src >= n) & (t.dst >= n)
            s_g = (t.src[mask].astype(np.int64) - n) // a
            d_g = (t.dst[mask].astype(np.int64) - n) // a
            cut = np.sum(np.isin(s_g, list(half)) & ~np.isin(d_g, list(half)))
            return float(min(cut * b, (g // 2) * a * pp * b))
        return float(a // 2 * (a - a // 2) * b)
    if t.n_links > MAX_FLOW_LINKS:
        return None
    return max_flow_bisection(t).bandwidth


#: largest network whose bisection is bounded by max flows (pure Python Dinic, a few seconds)
MAX_FLOW_LINKS = 200_000


@dataclass(frozen=True)
class FlowBisection:
    """An upper bound on the bisection bandwidth: ``bandwidth`` (B/s, one direction) is the
    maximum flow from one half of the endpoints to the other under the halving ``halving``
    (the least of those tried, ``tried`` maps each halving to its flow)."""

    bandwidth: float
    halving: str
    tried: dict

    method = "max-flow upper bound"


def max_flow_bisection(topology: Topology) -> FlowBisection:
    """Bisection bandwidth bound of an arbitrary network by maximum flows.

    The bisection bandwidth is the least, over splits of the endpoints into halves A and B, of the
    capacity of the cheapest cut between them, where switches may lie on either side; for one
    split that cut is the maximum flow from A to B (max-flow min-cut, with every link's bandwidth
    as its capacity, one direction). Trying every split is intractable (min bisection is NP-hard),
    so this takes the least maximum flow over a few structured halvings: the routing order (leaf
    switch by leaf switch on real fabrics; groups and chassis on imported dragonflies), a
    breadth-first order over the network from endpoint 0, and endpoint index order. Any halving
    bounds the bisection from above; on structured networks these orders find the cheapest
    cut (checked on fat trees, tori and dragonflies against their closed forms in the tests).

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> max_flow_bisection(parse_topology("kary:4,2")).bandwidth / 2e9    # 8 cables cross
    8.0
    """
    from .routing import routing_order
    t = topology
    n = t.n_endpoints
    if n < 2:
        return FlowBisection(0.0, "none", {})
    orders = {"routing order": np.asarray(routing_order(t)), "index order": np.arange(n)}
    orders["breadth-first order"] = _bfs_endpoint_order(t)
    tried = {}
    seen = set()
    for name, order in orders.items():
        half = frozenset(order[: n // 2].tolist())
        if half in seen:
            continue
        seen.add(half)
        side = np.zeros(t.n_nodes, dtype=np.int8)
        side[order[: n // 2]] = 1
        side[order[n // 2: 2 * (n // 2)]] = 2     # an odd one out takes part on neither side
        tried[name] = _max_flow(t, side)
    best = min(tried, key=tried.get)
    return FlowBisection(float(tried[best]), best, tried)


def _bfs_endpoint_order(t: Topology) -> np.ndarray:
    n = t.n_endpoints
    indptr, dst = t.indptr, t.dst
    seen = np.zeros(t.n_nodes, dtype=bool)
    seen[0] = True
    queue, out, head = [0], [], 0
    while head < len(queue):
        v = queue[head]
        head += 1
        if v < n:
            out.append(v)
        for u in dst[indptr[v]:indptr[v + 1]].tolist():
            if not seen[u]:
                seen[u] = True
                queue.append(u)
    rest = [e for e in range(n) if not seen[e]]
    return np.array(out + rest, dtype=np.int64)


def _max_flow(t: Topology, side: np.ndarray) -> float:
    """Dinic's maximum flow from the endpoints with ``side == 1`` to those with ``side == 2``."""
    nn = t.n_nodes
    S, T = nn, nn + 1
    src = t.src.astype(np.int64).tolist()
    dst = t.dst.astype(np.int64).tolist()
    # no flow between endpoints exceeds what their own links carry: a link capped there changes no
    # minimum cut, and keeps the tolerance below relative to the links that matter (a link 10^9 times
    # faster than the hosts' once set it above the hosts' capacity: a bisection of 0 B/s)
    host = (t.src < t.n_endpoints) | (t.dst < t.n_endpoints)
    most = float(np.sum(t.bandwidth[host])) if host.any() else float(np.sum(t.bandwidth))
    cap_in = np.minimum(t.bandwidth.astype(float), most).tolist()
    big = float(np.sum(cap_in)) + 1.0
    edges_u, edges_v, caps = [], [], []
    for u, v, c in zip(src, dst, cap_in):
        edges_u += [u, v]
        edges_v += [v, u]
        caps += [c, 0.0]
    for e in np.flatnonzero(side == 1).tolist():
        edges_u += [S, e]
        edges_v += [e, S]
        caps += [big, 0.0]
    for e in np.flatnonzero(side == 2).tolist():
        edges_u += [e, T]
        edges_v += [T, e]
        caps += [big, 0.0]
    m = len(edges_u)
    adj = [[] for _ in range(nn + 2)]
    for i in range(m):
        adj[edges_u[i]].append(i)
    cap = caps
    flow = 0.0
    eps = 1e-9 * max(1.0, max(cap_in, default=1.0))
    while True:
        level = [-1] * (nn + 2)
        level[S] = 0
        queue = [S]
        for v in queue:
            for i in adj[v]:
                w = edges_v[i]
                if level[w] < 0 and cap[i] > eps:
                    level[w] = level[v] + 1
                    queue.append(w)
        if level[T] < 0:
            return flow
        it = [0] * (nn + 2)
        while True:               # blocking flow: augmenting paths along the levels, iterative DFS
            path = []             # edge ids from S
            v = S
            while v != T:
                advanced = False
                while it[v] < len(adj[v]):
                    i = adj[v][it[v]]
                    w = edges_v[i]
                    if cap[i] > eps and level[w] == level[v] + 1:
                        path.append(i)
                        v = w
                        advanced = True
                        break
                    it[v] += 1
                if not advanced:
                    if v == S:
                        break
                    level[v] = -1          # dead end: never again in this phase
                    i = path.pop()
                    v = edges_u[i]
                    it[v] += 1
            if v != T:
                break
            f = min(cap[i] for i in path)
            for i in path:
                cap[i] -= f
                cap[i ^ 1] += f
            flow += f


def summary(topology: Topology) -> dict:
    """Counts, diameter and bisection bandwidth (``bisection_method`` says which: theoretical, or
    for real fabrics and imported graphs a :func:`max_flow_bisection` upper bound)."""
    closed = topology.family in ("xgft", "torus", "dragonfly")
    if closed:
        bis, method = bisection_bandwidth(topology), "theoretical"
    elif topology.n_links > MAX_FLOW_LINKS:
        bis, method = None, f"not computed: more than {MAX_FLOW_LINKS:,} links"
    else:
        fb = max_flow_bisection(topology)
        bis = fb.bandwidth
        k = len(fb.tried)
        method = f"max-flow upper bound, least of {k} halving{'s' if k > 1 else ''}: {fb.halving}"
    return {
        "spec": topology.spec,
        "endpoints": topology.n_endpoints,
        "switches": topology.n_switches,
        "links": topology.n_links,
        "cables": topology.n_links // 2,
        "diameter": diameter(topology),
        "bisection_bandwidth": bis,
        "bisection_method": method,
    }
