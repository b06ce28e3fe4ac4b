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

import math
from dataclasses import dataclass

import numpy as np

from topocoll.errors import SpecError

from .network import Topology
from .routing import Router, _endpoints

__all__ = ["pattern_pairs", "link_loads", "load_histogram", "effective_bisection_bandwidth",
           "EffectiveBisection", "diameter", "bisection_bandwidth", "summary"]


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
        Endpoints taking part (all by default); an odd one out sits idle.

    Returns
    -------
    EffectiveBisection
        ``mean`` is 1.0 on a crossbar; the paper reports 0.40-0.60 on real
        full-bisection InfiniBand fat trees.

    Examples
    --------
    >>> from topocoll.topology import parse_topology, make_router
    >>> effective_bisection_bandwidth(make_router(parse_topology("crossbar:16")), 10).mean
    1.0
    """
    if isinstance(n_bisections, bool) or int(n_bisections) < 1:
        raise SpecError(f"ebb: n_bisections={n_bisections}, expected >= 1")
    eps = np.arange(router.topology.n_endpoints) if order is None else np.asarray(order)
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
        out.append(router.engine.ebb(src.astype(np.uint32), dst.astype(np.uint32), 2 * half, bw))
        left -= c
    samples = np.concatenate(out)
    return EffectiveBisection(float(samples.mean()), float(samples.std()), samples, int(seed))


def diameter(topology: Topology) -> int:
    """Largest hop count of a shortest path between two endpoints.

    Closed forms for the generated families; breadth-first search for real
    fabrics.
    """
    t = topology
    if t.family == "xgft":
        m = t.params["m"]
        top = max((i + 1 for i, mi in enumerate(m) if mi > 1), default=0)
        return 2 * top
    if t.family == "torus":
        return sum((k // 2 if w and k > 2 else k - 1) for k, w in zip(t.params["k"], t.params["wrap"]))
    if t.family == "dragonfly":
        P = t.params
        if P["g"] > 1:
            return 2 + 1 + 2 * (P["a"] > 1)
        return 2 + (P["a"] > 1)
    return _bfs_diameter(t)


def _bfs_diameter(t):
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
        reach = [dist[e] for e in range(n) if e in dist]
        if len(reach) < n:
            missing = next(e for e in range(n) if e not in dist)
            from topocoll.errors import TopologyError
            raise TopologyError(f"{t.spec}: endpoint {t.names[missing]} is unreachable from {t.names[s]}")
        best = max(best, max(reach))
    return best


def bisection_bandwidth(topology: Topology) -> float | None:
    """Theoretical bisection bandwidth in B/s (one direction), or None.

    Fat trees: ``N/2 * b * min(1, min_l up(l)/down(l))`` with the up/down
    capacity ratio of a level-``l`` subtree; tori: the links cut by halving
    the largest dimension; dragonflies: global cables between two halves of
    the groups (one direction). Real fabrics: None (an NP-hard min cut).
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
        k, wrap = t.params["k"], t.params["wrap"]
        i = int(np.argmax(k))
        if k[i] < 2:
            return 0.0
        cuts = 2 if (wrap[i] and k[i] > 2) else 1
        return cuts * (n // k[i]) * b
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
    return None


def summary(topology: Topology) -> dict:
    """Counts, diameter and theoretical bisection bandwidth."""
    return {
        "spec": topology.spec,
        "endpoints": topology.n_endpoints,
        "switches": topology.n_switches,
        "links": topology.n_links,
        "cables": topology.n_links // 2,
        "diameter": diameter(topology),
        "bisection_bandwidth": bisection_bandwidth(topology),
    }
