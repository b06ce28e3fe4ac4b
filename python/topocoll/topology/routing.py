"""Static routing engines; every one answers a batch of (source, destination)
endpoint pairs with the links of each route as CSR arrays.

=================  =====================  =============================================
family             engine                 what
=================  =====================  =============================================
fat trees          ``d-mod-k`` (default)  Zahavi's destination-mod-k up-port choice
                   ``ftree``              OpenSM fat-tree routing: d-mod-k over the
                                          routing order (Zahavi et al. 2010)
                   ``random``             per-(src, dst) seeded hash, ECMP-like
                   ``min-hop``            OpenSM minhop: minimal, port-balanced tables
                   ``up-down``            up*/down* from the top switches
torus / mesh       ``dor`` (default)      dimension order (``order='xyz'``), shortest
                                          direction, ``tie='positive'``
                                          (``'simgrid'``: SimGrid's TorusZone, +
                                          except k/2 -> 0, which goes -)
                   ``shortest``           ``dor`` with ``tie='source-parity'``
                   ``adaptive``           even flow split over the minimal dimension orders
                                          (packet model: JSQ over the dynamic VCs, a
                                          dimension-order escape VC with bubble flow
                                          control)
                   ``dor-bubble``         dimension order on one VC with bubble flow
                                          control, no dateline (Blue Gene/L's
                                          deterministic routing, all-to-all paper §2);
                                          ``dor`` in the static models
dragonfly          ``minimal`` (default)  local-global-local
                   ``valiant``            via a random intermediate group (seeded;
                                          needs g >= 3 groups)
                   ``ugal``               UGAL-L per packet: minimal or Valiant by the
                                          source router's queues (seeded; the packet
                                          model only: no static route exists)
imported graphs    ``table`` (default)    the platform's own routes as forwarding
                                          tables (SimGrid zones, Cray dragonflies)
                   ``min-hop``, ``up-down``
real fabrics       ``min-hop`` (default)  from the graph
                   ``ftree``              min-hop balanced in the routing order
                   ``up-down``            up*/down*
                   ``ibroute``            the fabric's own LFTs (``path=DIR`` of dumps)
=================  =====================  =============================================

``min-hop`` and ``up-down`` work on any network with switches. References:
Zahavi, "D-Mod-K routing providing non-blocking traffic for shift
permutations on real life fat trees", CCIT TR 776, 2010; Zahavi, Johnson,
Kerbyson & Lang, "Optimized InfiniBand fat-tree routing for shift all-to-all
communication patterns", CCPE 2010 (the engine the shift-based compositing
paper relies on, seed ``shift-based-compositing-fat-tree.txt`` §2.1.4, §5.2);
Schroeder et al., "Autonet", 1991 (up*/down*).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from topocoll import _core
from topocoll.errors import SpecError, TopocollError, TopologyError

from .network import Topology

__all__ = ["Router", "make_router", "route", "routing_order", "ENGINES", "parse_routing"]

ENGINES = {
    "xgft": ("d-mod-k", "ftree", "random", "min-hop", "up-down"),
    "torus": ("dor", "shortest", "adaptive", "dor-bubble"),
    "dragonfly": ("minimal", "valiant", "ugal", "min-hop", "up-down"),
    "ibnet": ("min-hop", "ftree", "up-down", "ibroute"),
    "graph": ("table", "min-hop", "up-down"),
}
#: k/2 tie rules of static torus routes
STATIC_TIES = ("positive", "negative", "source-parity", "simgrid")
#: k/2 tie rules of the escape channel the packet model routes per packet (``src/engine/adaptive.rs``,
#: ``EscapeTie``): always +, or a seeded draw per packet
PER_PACKET_TIES = ("positive", "random")
_OPTIONS = {"random": {"seed"}, "valiant": {"seed"}, "ugal": {"seed"}, "dor": {"order", "tie"}, "shortest": {"order"},
            "adaptive": {"tie", "seed"}, "dor-bubble": {"tie", "seed"}, "ibroute": {"path", "strict"},
            "up-down": {"roots"}}


@dataclass(frozen=True, eq=False)
class Router:
    """A routing engine bound to a topology (build with :func:`make_router`).

    ``warnings``: one-line texts on what the engine did with messy input
    (e.g. ``ibroute`` dumps skipped or with the tool's own error lines).
    """

    topology: Topology
    name: str
    options: dict
    engine: object = field(repr=False)
    warnings: tuple = ()

    @property
    def per_packet(self) -> bool:
        """True when the route is chosen per packet by queue state (``ugal``):
        only the packet model can follow it; static views refuse it."""
        return self.name == "ugal"

    def require_static(self, what: str) -> None:
        """Refuse, in one line, to give ``what`` a static route of a per-packet routing."""
        if self.per_packet:
            raise SpecError(f"routing {self.name} on {self.topology.spec}: {what} needs a static route, but "
                            f"{self.name} chooses minimal or Valiant per packet by queue occupancy; expected "
                            "--model packet, or routing minimal or valiant")

    @property
    def multipath(self) -> bool:
        """True when routes are flows split over several paths (``adaptive``)."""
        return self.engine.multipath

    def __repr__(self):
        opts = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"Router({self.name}{':' + opts if opts else ''} on {self.topology.spec})"


def parse_routing(text: str):
    """``'dor:order=zyx,tie=negative'`` -> ``('dor', {'order': 'zyx', 'tie': 'negative'})``."""
    name, _, rest = text.partition(":")
    opts = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SpecError(f"routing {text!r}: option {item!r}, expected KEY=VALUE")
        opts[key.strip()] = value.strip()
    return name.strip(), opts


def _dim_order(order, ndim):
    if isinstance(order, str):
        letters = "xyzwuv"
        if re.fullmatch(r"[0-9]+", order):
            idx = [int(c) for c in order]
        else:
            idx = [letters.find(c) for c in order.lower()]
    else:
        idx = [int(c) for c in order]
    if sorted(idx) != list(range(ndim)):
        raise SpecError(f"dor: order={order!r}, expected a permutation of the {ndim} dimensions such as "
                        f"{'xyzwuv'[:ndim]!r}")
    return idx


def routing_order(topology: Topology) -> np.ndarray:
    """Endpoints in the order a fat-tree routing engine indexes them.

    Generated networks are already numbered leaf by leaf, port by port, so
    this is the identity. On a real fabric it is leaf switch by leaf switch
    (in discovery order), then by switch port — "the order given by the
    OpenSM routing engine" of the shift-based paper (§5.2).
    """
    n = topology.n_endpoints
    if topology.family != "ibnet":
        return np.arange(n, dtype=np.int64)
    src, dst, port = topology.src, topology.dst, topology.port
    down = (src >= n) & (dst < n)
    keys = {}
    for s, d, p in zip(src[down], dst[down], port[down]):
        keys.setdefault(int(d), (int(s), int(p)))
    return np.array(sorted(range(n), key=lambda e: keys.get(e, (1 << 40, e))), dtype=np.int64)


def _top_switches(topology):
    """Up*/down* roots when none are given: the switches at the centre of the
    endpoints, kept only if they let every endpoint pair route.

    OpenSM's UPDN engine ranks every switch by BFS distance from its roots and
    auto-detects the roots from its min-hop tables: a switch is a root when
    one hop count covers > 90 % of the channel adapters and no other count
    covers > 5 % (``doc/current-routing.txt``, "UPDN Routing Algorithm";
    ``updn_find_root_nodes_by_min_hop`` in ``osm_ucast_updn.c``). That rule
    counts every CA, SHARP aggregation nodes included, and marks leaves of
    large trees as roots too. Here the candidates are the switches whose
    farthest endpoint-bearing switch is nearest (minimal eccentricity over the
    leaves: the top level of a fat tree, whatever hangs off it without hosts),
    computed by a bit-parallel BFS from all leaves at once. Several roots
    route every pair only if any two endpoints can go up to a common root;
    that is checked, and where it fails (dragonflies, irregular graphs) the
    lowest-numbered candidate alone is the root, which always routes every
    pair of a connected network.
    """
    if topology.family == "xgft":
        return list(range(topology.n_nodes - _n_top(topology), topology.n_nodes))
    if topology.n_switches == 0:
        raise TopologyError(f"up-down: {topology.spec} has no switches")
    n, nsw = topology.n_endpoints, topology.n_switches
    src = topology.src.astype(np.int64)
    dst = topology.dst.astype(np.int64)
    # leaves: switches with an endpoint attached
    leaf_of = dst[(src < n) & (dst >= n)] - n
    leaves = np.unique(leaf_of)
    if len(leaves) == 0:
        return [n]
    # switch-level adjacency (sorted by source, as the link table)
    keep = (src >= n) & (dst >= n)
    ss, sd = src[keep] - n, dst[keep] - n
    # reach[s] = bitset of leaves within `level` hops of switch s
    words = (len(leaves) + 63) // 64
    bit = np.arange(len(leaves))
    reach = np.zeros((nsw, words), dtype=np.uint64)
    reach[leaves, bit // 64] |= np.left_shift(np.uint64(1), (bit % 64).astype(np.uint64))
    full = np.full(words, np.uint64(0xFFFFFFFFFFFFFFFF))
    if len(leaves) % 64:
        full[-1] = np.uint64((1 << (len(leaves) % 64)) - 1)
    ecc = np.full(nsw, -1, dtype=np.int64)
    has_out = np.unique(ss)
    starts = np.searchsorted(ss, has_out)
    for level in range(nsw + 1):
        done = (ecc < 0) & np.all(reach == full, axis=1)
        ecc[done] = level
        if np.all(ecc >= 0) or len(ss) == 0:
            break
        new = reach.copy()
        new[has_out] |= np.bitwise_or.reduceat(reach[sd], starts, axis=0)
        if np.array_equal(new, reach):
            break      # disconnected: up-down reports the unreachable node itself
        reach = new
    if np.all(ecc < 0):
        return [n + int(leaves[0])]
    best = ecc[ecc >= 0].min()
    roots = [n + int(i) for i in np.flatnonzero(ecc == best)]
    if len(roots) > 1 and not _updown_complete(topology, roots):
        roots = roots[:1]
    return roots


def _updown_complete(topology, roots):
    """True when up*/down* from ``roots`` routes every endpoint pair: the sets
    of roots reachable by up moves ((rank, id) decreasing, as in the Rust
    engine) from any two endpoints intersect."""
    n, nn = topology.n_endpoints, topology.n_nodes
    indptr, dst = topology.indptr, topology.dst
    rank = np.full(nn, -1, dtype=np.int64)
    rank[roots] = 0
    frontier = list(roots)
    while frontier:
        nxt = []
        for x in frontier:
            for y in dst[indptr[x]:indptr[x + 1]].tolist():
                if rank[y] < 0:
                    rank[y] = rank[x] + 1
                    if y >= n:
                        nxt.append(y)
        frontier = nxt
    if np.any(rank < 0):
        return False
    up = {r: 1 << i for i, r in enumerate(roots)}   # node -> bitset of roots reachable upwards
    for v in sorted(range(n, nn), key=lambda v: (rank[v], v)):
        acc = up.get(v, 0)
        for u in dst[indptr[v]:indptr[v + 1]].tolist():
            if u >= n and (rank[u], u) < (rank[v], v):
                acc |= up[u]
        up[v] = acc
    sets = set()
    for e in range(n):
        acc = 0
        for u in dst[indptr[e]:indptr[e + 1]].tolist():
            if u >= n and (rank[u], u) < (rank[e], e):
                acc |= up[u]
        sets.add(acc)
    common = -1
    for x in sets:
        common &= x
    if common:
        return True
    sets = list(sets)
    return all(a & b for i, a in enumerate(sets) for b in sets[i + 1:])


def _n_top(topology):
    import math
    return math.prod(topology.params["w"])


def make_router(topology: Topology, name: str | None = None, **options) -> Router:
    """Bind a routing engine to a topology.

    Parameters
    ----------
    topology : Topology
    name : str, optional
        Engine name (see the module docstring); the family's default if
        omitted. ``'NAME:key=value,...'`` is accepted too.
    **options
        ``seed`` (random, valiant; adaptive and dor-bubble with ``tie=random``:
        the per-packet draw of the k/2 tie), ``order`` and ``tie`` (dor), ``path``
        (ibroute: a directory of dumps), ``strict`` (ibroute: fail on the
        first defective dump instead of skipping that switch with a warning
        in ``Router.warnings``), ``roots`` (up-down: node ids).

    Raises
    ------
    SpecError
        Unknown engine for this family or unknown option.
    TopologyError
        The engine cannot route this network (e.g. forwarding tables that
        name switches the fabric lacks).

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> r = make_router(parse_topology("kary:4,2"), "d-mod-k")
    >>> route(r, [0], [5])[1].tolist()   # up at leaf 0 by port 5 mod 4, down to leaf 1
    [0, 17, 53, 29]
    """
    fam = topology.family
    if fam == "nodes":   # the fabric's own routing, composed with the nodes' links (routing::nodes)
        t = topology
        fabric = make_router(t.params["fabric"], name, **options)
        try:
            engine = _core.RoutingEngine.nodes(fabric.engine, t.n_nodes, t.src, t.dst, t.params["nodes"].ppn)
        except ValueError as e:
            raise TopologyError(f"nodes on {t.spec}: {e}") from None
        return Router(t, fabric.name, fabric.options, engine, fabric.warnings)
    if name is None:
        # an imported network names the routing its source used (SimGrid's torus: dor:tie=simgrid)
        name = topology.params.get("default_routing") or ENGINES[fam][0]
        if fam == "graph" and "forwarding" not in topology.params:
            name = "min-hop"
    if ":" in name:
        name, extra = parse_routing(name)
        options = {**extra, **options}
    if name not in ENGINES[fam]:
        raise SpecError(f"routing {name!r} on {topology.spec}: expected one of {', '.join(ENGINES[fam])}")
    unknown = set(options) - _OPTIONS.get(name, set())
    if unknown:
        allowed = ", ".join(sorted(_OPTIONS.get(name, ()))) or "none"
        raise SpecError(f"routing {name!r}: unknown option(s) {', '.join(sorted(unknown))}, expected {allowed}")
    t = topology
    seed = options.get("seed", 0)
    try:
        seed = int(seed)
    except (TypeError, ValueError):
        raise SpecError(f"routing {name!r}: seed={seed!r}, expected an integer") from None
    if seed < 0:
        raise SpecError(f"routing {name!r}: seed={seed}, expected >= 0")
    args = (t.n_nodes, t.n_endpoints, t.src, t.dst)
    try:
        if fam == "xgft" and name in ("d-mod-k", "ftree", "random"):
            P = t.params
            engine = _core.RoutingEngine.fat_tree(t.src, t.dst, list(P["m"]), list(P["w"]), list(P["p"]),
                                                  "random" if name == "random" else "d-mod-k", seed)
        elif fam == "torus":
            k, wrap = t.params["k"], t.params["wrap"]
            order = _dim_order(options.get("order", "xyzwuv"[:len(k)] if len(k) <= 6 else list(range(len(k)))), len(k))
            tie = options.get("tie", "source-parity" if name == "shortest" else "positive")
            ties = PER_PACKET_TIES if name == "dor-bubble" else STATIC_TIES + (
                ("random",) if name == "adaptive" else ())
            if tie not in ties:
                raise SpecError(f"routing {name!r}: tie={tie!r}, expected {', '.join(ties)}")
            if "seed" in options and tie != "random":
                raise SpecError(f"routing {name!r}: seed={options['seed']!r} with tie={tie!r}, expected a seed "
                                "only with tie=random (a draw per packet)")
            # tie=random is drawn per packet by the packet model; a static view (flow) splits by source
            # parity, the per-flow rule that balances the two directions as the draws do on average
            static_tie = "source-parity" if tie == "random" else tie
            engine = _core.RoutingEngine.torus(t.src, t.dst, list(k), list(wrap), order, static_tie,
                                               name == "adaptive")
        elif fam == "dragonfly" and name in ("minimal", "valiant", "ugal"):
            P = t.params
            if name in ("valiant", "ugal") and P["g"] < 3:
                raise SpecError(f"routing {name!r} on {t.spec}: g={P['g']} groups, expected g >= 3 (Valiant "
                                "routes through an intermediate group other than the source's and the "
                                "destination's; use 'minimal')")
            engine = _core.RoutingEngine.dragonfly(t.src, t.dst, P["a"], P["p"], P["h"], P["g"],
                                                   seed if name == "valiant" else None)
        elif name == "table":
            if "forwarding" not in t.params:
                raise SpecError(f"routing 'table' on {t.spec}: the network carries no forwarding tables, expected "
                                "min-hop or up-down")
            engine = _core.RoutingEngine.table(*args, t.params["forwarding"])
        elif name == "min-hop":
            engine = _core.RoutingEngine.minhop(*args)
        elif name == "ftree":  # real fabric: min-hop balanced in routing order
            engine = _core.RoutingEngine.minhop(*args, routing_order(t).astype(np.uint32))
        elif name == "up-down":
            roots = options.get("roots")
            roots = [int(r) for r in (roots.split() if isinstance(roots, str) else roots)] if roots else _top_switches(t)
            if any(not 0 <= r < t.n_nodes for r in roots):
                raise SpecError(f"up-down: roots={roots}, expected node ids in 0..{t.n_nodes - 1}")
            engine = _core.RoutingEngine.updown(*args, roots)
        elif name == "ibroute":
            from .io.ibroute import forwarding_tables, read_ibroute_dir, strictness
            if "path" not in options:
                raise SpecError("routing 'ibroute': expected path=DIR holding one ibroute dump per switch")
            tables = forwarding_tables(t, read_ibroute_dir(options["path"]),
                                       strict=strictness(options.get("strict", False)))
            engine = _core.RoutingEngine.table(*args, tables.entries)
            return Router(t, name, dict(options), engine, tables.warnings)
        else:  # pragma: no cover - guarded by ENGINES
            raise SpecError(f"routing {name!r} on {t.spec}: not available")
    except ValueError as e:
        if isinstance(e, TopocollError):
            raise
        raise TopologyError(f"{name} on {t.spec}: {e}") from None
    return Router(t, name, dict(options), engine)


def _endpoints(router, values, what):
    arr = np.asarray(values)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= router.topology.n_endpoints):
        raise SpecError(f"route: {what} must be endpoint ids in 0..{router.topology.n_endpoints - 1}")
    return np.ascontiguousarray(arr, dtype=np.uint32)


def _explain(router, err):
    names = router.topology.names
    def sub(m):
        i = int(m.group(2))
        return f"{m.group(1)} {i} ({names[i]})" if i < len(names) else m.group(0)
    return re.sub(r"(endpoint|switch|node) (\d+)", sub, str(err))


def route(router: Router, src, dst, *, weights: bool = False):
    """Routes of a batch of endpoint pairs as CSR arrays.

    Parameters
    ----------
    router : Router
    src, dst : array_like of int
        Endpoint ids, same length.
    weights : bool
        Also return the fraction of each pair's flow on each listed link
        (1.0 except for the ``adaptive`` torus split).

    Returns
    -------
    indptr : numpy.ndarray of int64, shape (len(src) + 1,)
    links : numpy.ndarray of uint32
        Pair ``i`` uses ``links[indptr[i]:indptr[i+1]]``, in path order for
        single-path engines.
    weights : numpy.ndarray of float64, only with ``weights=True``

    Raises
    ------
    TopologyError
        Some pair has no route; the message names the pair.
    """
    router.require_static("route()")
    s = _endpoints(router, src, "src")
    d = _endpoints(router, dst, "dst")
    if len(s) != len(d):
        raise SpecError(f"route: {len(s)} sources but {len(d)} destinations, expected equal lengths")
    try:
        indptr, links, w = router.engine.route(s, d)
    except ValueError as e:
        raise TopologyError(f"{router.name} on {router.topology.spec}: {_explain(router, e)}") from None
    indptr = indptr.astype(np.int64)
    return (indptr, links, w) if weights else (indptr, links)
