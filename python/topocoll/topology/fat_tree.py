"""Fat trees: crossbar, k-ary n-tree, XGFT and PGFT/RLFT generators.

An XGFT(h; m_1..m_h; w_1..w_h) (Öhring, Ibel, Das & Kumar, "On generalized
fat trees", IPPS 1995) is built recursively: level ``l`` is ``m_l`` copies of
the level ``l-1`` tree plus ``w_1 ... w_l`` new top switches, each level-``l-1``
node having ``w_l`` parents. A PGFT (Zahavi, "D-Mod-K routing providing
non-blocking traffic for shift permutations on real life fat trees", 2010)
adds ``p_l`` parallel cables between a node and each parent.

Table 1 of Hoefler, Schneider & Lumsdaine, "The impact of network noise at
large-scale communication performance" (seed ``network-noise-large-scale.txt``,
§4) writes its trees as ``xgft(h, m_2..m_h, w_2..w_h)``: ``m_1 = 12`` hosts
per leaf and ``w_1 = 1`` are implied. :data:`NETWORK_NOISE_TABLE1` lists the
full parameters; ``p`` is chosen so that every switch is a 24-port switch
with as many up as down ports (full bisection bandwidth), except the 2,304
tree, whose table counts force 12 down / 8 up ports at level 2 (a 3:2 taper:
a parallel factor 1.5 would be needed, which no integer PGFT has).
"""

from __future__ import annotations

import math

from topocoll import _core
from topocoll.errors import SpecError

from .network import Topology, make_topology

__all__ = ["crossbar", "kary_n_tree", "xgft", "pgft", "network_noise_table1", "NETWORK_NOISE_TABLE1"]

#: Default link model: 4x DDR InfiniBand, 2 GB/s per direction, 1 µs per link.
IB_DDR_BANDWIDTH = 2e9
IB_DDR_LATENCY = 1e-6

#: Table 1 of the network-noise paper: layout -> (endpoints, switches, m, w, p).
NETWORK_NOISE_TABLE1 = {
    "xgft(2,12,6)": (144, 18, (12, 12), (1, 6), (1, 2)),
    "xgft(2,24,12)": (288, 36, (12, 24), (1, 12), (1, 1)),
    "xgft(3,12,8,12,4)": (1152, 240, (12, 12, 8), (1, 12, 4), (1, 1, 3)),
    "xgft(3,12,16,12,8)": (2304, 480, (12, 12, 16), (1, 12, 8), (1, 1, 1)),
    "xgft(3,12,24,12,12)": (3456, 720, (12, 12, 24), (1, 12, 12), (1, 1, 1)),
    "xgft(4,12,12,6,12,12,3)": (10368, 3024, (12, 12, 12, 6), (1, 12, 12, 3), (1, 1, 1, 4)),
    "xgft(4,12,12,12,12,12,6)": (20736, 6048, (12, 12, 12, 12), (1, 12, 12, 6), (1, 1, 1, 2)),
}


def _positive_ints(name, values, what):
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int,)) and not (hasattr(v, "__index__")):
            raise SpecError(f"{name}: {what}={list(values)} must be integers")
        if int(v) < 1:
            raise SpecError(f"{name}: {what}={list(values)} has {v}, expected every value >= 1")
        out.append(int(v))
    return tuple(out)


def pgft(m, w, p=None, *, bandwidth=IB_DDR_BANDWIDTH, latency=IB_DDR_LATENCY, spec=None) -> Topology:
    """Parallel-ports generalised fat tree PGFT(h; m; w; p).

    Parameters
    ----------
    m : sequence of int
        ``m_l``: children per level-``l`` switch (``m_1`` endpoints per leaf).
    w : sequence of int
        ``w_l``: parents per level-``l-1`` node.
    p : sequence of int, optional
        ``p_l``: parallel cables between a level-``l-1`` node and each parent
        (all 1, an XGFT, by default).
    bandwidth : float
        B/s per link direction. latency : float, s per link.

    Returns
    -------
    Topology
        ``prod(m)`` endpoints; level ``l`` has ``prod(w[:l]) * prod(m[l:])``
        switches.

    Raises
    ------
    SpecError
        Lengths differ or a value is < 1.

    Examples
    --------
    >>> t = pgft((12, 12), (1, 6), (1, 2))   # xgft(2,12,6) of Table 1
    >>> t.n_endpoints, t.n_switches
    (144, 18)
    """
    m = _positive_ints("pgft", m, "m")
    w = _positive_ints("pgft", w, "w")
    p = _positive_ints("pgft", p if p is not None else [1] * len(m), "p")
    if not (len(m) == len(w) == len(p)) or not m:
        raise SpecError(f"pgft: m={list(m)}, w={list(w)}, p={list(p)} must have the same non-zero length h")
    h = len(m)
    n_nodes = sum(math.prod(w[:l]) * math.prod(m[l:]) for l in range(h + 1))
    if n_nodes > 5_000_000:
        raise SpecError(f"pgft: {n_nodes} nodes, expected at most 5,000,000")
    src, dst = _core.routing_xgft_links(list(m), list(w), list(p))
    n_endpoints = math.prod(m)
    family_spec = spec or f"pgft:{h};{','.join(map(str, m))};{','.join(map(str, w))};{','.join(map(str, p))}"
    return make_topology(family_spec, "xgft", n_endpoints, n_nodes - n_endpoints, src, dst,
                         bandwidth, latency, params={"h": h, "m": m, "w": w, "p": p})


def xgft(m, w, **kw) -> Topology:
    """Extended generalised fat tree XGFT(h; m; w): a PGFT with single cables.

    Examples
    --------
    >>> xgft((12, 12, 24), (1, 12, 12)).n_switches   # xgft(3,12,24,12,12) of Table 1
    720
    """
    kw.setdefault("spec", f"xgft:{len(m)};{','.join(map(str, m))};{','.join(map(str, w))}")
    return pgft(m, w, None, **kw)


def kary_n_tree(k, n, **kw) -> Topology:
    """k-ary n-tree (Petrini & Vanneschi, 1997) = XGFT(n; k..k; 1, k..k).

    ``k**n`` endpoints and ``n * k**(n-1)`` switches of 2k ports.

    Examples
    --------
    >>> t = kary_n_tree(12, 2)
    >>> t.n_endpoints, t.n_switches
    (144, 24)
    """
    k, n = _positive_ints("kary", (k, n), "k,n")
    kw.setdefault("spec", f"kary:{k},{n}")
    return pgft((k,) * n, (1,) + (k,) * (n - 1), None, **kw)


def crossbar(n, **kw) -> Topology:
    """One ideal switch with ``n`` endpoints (a 1-level tree).

    Examples
    --------
    >>> crossbar(144).n_switches
    1
    """
    (n,) = _positive_ints("crossbar", (n,), "n")
    kw.setdefault("spec", f"crossbar:{n}")
    t = pgft((n,), (1,), None, **kw)
    return t


def network_noise_table1(layout_or_endpoints, **kw) -> Topology:
    """A fat tree of Table 1 of the network-noise paper, by layout or size.

    Parameters
    ----------
    layout_or_endpoints : str or int
        ``"xgft(3,12,24,12,12)"`` or ``3456``.
    """
    for layout, (n, _s, m, w, p) in NETWORK_NOISE_TABLE1.items():
        if layout_or_endpoints in (layout, n, str(n)):
            kw.setdefault("spec", f"table1:{n}")
            return pgft(m, w, p, **kw)
    sizes = ", ".join(str(v[0]) for v in NETWORK_NOISE_TABLE1.values())
    raise SpecError(f"table1: {layout_or_endpoints!r} is not in Table 1, expected one of {sizes}")
