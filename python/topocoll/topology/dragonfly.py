"""Dragonfly (Kim, Dally, Scott & Abts, "Technology-driven, highly-scalable
dragonfly topology", ISCA 2008).

``g`` groups of ``a`` routers; each router has ``p`` endpoints, ``a - 1``
local links (groups are fully connected) and ``h`` global links. Global
cables are dealt round-robin over group pairs, so the balanced maximum
``g = a*h + 1`` gives exactly one cable per pair of groups.
"""

from __future__ import annotations

import numpy as np

from topocoll import _core
from topocoll.errors import SpecError

from .graph import GraphBuilder
from .network import Topology, make_topology

__all__ = ["dragonfly", "simgrid_dragonfly", "aries", "aries_tables"]

DRAGONFLY_BANDWIDTH = 12.5e9
DRAGONFLY_LATENCY = 100e-9


def dragonfly(a, p, h, g=None, *, bandwidth=DRAGONFLY_BANDWIDTH, latency=DRAGONFLY_LATENCY, spec=None) -> Topology:
    """Dragonfly with ``a`` routers per group, ``p`` endpoints per router, ``h``
    global links per router and ``g`` groups (``a*h + 1`` by default).

    Examples
    --------
    >>> t = dragonfly(4, 2, 2)        # Kim et al.'s balanced a = 2p = 2h
    >>> t.n_endpoints, t.n_switches
    (72, 36)
    """
    vals = [a, p, h] + ([g] if g is not None else [])
    if any(isinstance(v, bool) or int(v) != v or int(v) < 1 for v in vals):
        raise SpecError(f"dragonfly: a,p,h,g={vals}, expected integers >= 1")
    a, p, h = int(a), int(p), int(h)
    g = a * h + 1 if g is None else int(g)
    if g > a * h + 1:
        raise SpecError(f"dragonfly: g={g} exceeds a*h+1={a * h + 1}, expected at most one group per global port")
    if g * a * (p + 1) > 4_000_000:
        raise SpecError(f"dragonfly: {g * a * (p + 1)} nodes, expected at most 4,000,000")
    src, dst = _core.routing_dragonfly_links(a, p, h, g)
    spec = spec or f"dragonfly:{a},{p},{h},{g}"
    return make_topology(spec, "dragonfly", g * a * p, g * a, src, dst, bandwidth, latency,
                         params={"a": a, "p": p, "h": h, "g": g})


# --------------------------------------------------------------------------- dragonflies as built

#: SimGrid's cluster defaults are the caller's; Cray XC (Aries) per-class defaults, B/s per direction:
#: electrical (green, black) 5.25 GB/s, optical (blue) 4.7 GB/s per link (Alverson, Froese, Kaplan &
#: Roweth, "Cray XC Series Network", Cray white paper WP-Aries01-1112, 2012); the NIC's injection
#: bandwidth is taken as 10 GB/s and every hop as 100 ns (assumptions: override with host.bw= etc.)
ARIES_BANDWIDTH = {"host": 10e9, "green": 5.25e9, "black": 5.25e9, "blue": 4.7e9}
ARIES_LATENCY = 100e-9
MAX_GRAPH_NODES = 2_000_000
#: cables of a dragonfly built here, one Python object each while building
MAX_GRAPH_CABLES = 2_000_000


def simgrid_dragonfly(groups, chassis, routers, nodes, *, links=(1, 1, 1), bandwidth=DRAGONFLY_BANDWIDTH,
                      latency=DRAGONFLY_LATENCY, host_names=None, cluster="dragonfly", split_duplex=True,
                      first_link_id=0, spec=None) -> Topology:
    """SimGrid's four-level dragonfly (``DragonflyZone``, SimGrid 3.32) with its minimal routing.

    ``topo_parameters="groups,blue;chassis,black;routers,green;nodes"``: ``groups`` groups of
    ``chassis`` chassis of ``routers`` routers (blades) with ``nodes`` hosts each. Routers of a
    chassis are all-to-all (green), routers of one blade position are all-to-all across the chassis
    of a group (black), and router number ``j`` of group ``i`` (chassis ``j // routers``, blade
    ``j % routers``) holds the one blue cable to group ``j``. ``links`` are the counts of parallel
    cables per level (blue, black, green); as SimGrid does, they become one link of ``count x
    bandwidth``.

    Routing (``get_local_route``): towards another group, a green hop to blade ``G`` of the own
    chassis, a black hop to chassis 0, the blue cable; then, as inside a group, a green hop to the
    target blade and a black hop to the target chassis. Every step depends on the current router
    and the destination only, so it is a forwarding table (routing ``table``).

    SimGrid needs ``groups <= routers``: its route always takes blade ``G`` of the chassis (3.32
    crashes otherwise, checked). One difference, kept on purpose: inside a group, from a chassis
    other than 0 with a different blade, SimGrid 3.32 believes it reached chassis 0 after the green
    hop and appends the black link of chassis 0's router, a link that is not on the path; topocoll
    routes the connected path (green, then black only where the chassis differ).

    Examples
    --------
    >>> t = simgrid_dragonfly(4, 4, 4, 2)         # SimGrid's documentation example 4,1;4,1;4,1;2
    >>> t.n_endpoints, t.n_switches
    (128, 64)
    """
    vals = [groups, chassis, routers, nodes, *links]
    if any(isinstance(v, bool) or int(v) != v or int(v) < 1 for v in vals):
        raise SpecError(f"simgrid dragonfly: groups, chassis, routers, nodes and link counts {vals}, expected "
                        "integers >= 1")
    g, c, b, p = int(groups), int(chassis), int(routers), int(nodes)
    blue_n, black_n, green_n = (int(x) for x in links)
    if g > b and g > 1:
        raise SpecError(f"simgrid dragonfly: {g} groups but {b} routers per chassis, expected groups <= routers "
                        "(SimGrid 3.32 routes to group G through blade G of chassis 0 and crashes otherwise)")
    n_r = g * c * b
    n = n_r * p
    if n + n_r > MAX_GRAPH_NODES:
        raise SpecError(f"simgrid dragonfly: {n + n_r} nodes, expected at most {MAX_GRAPH_NODES:,}")
    cables = n + g * c * b * (b - 1) // 2 + g * b * c * (c - 1) // 2 + g * (g - 1) // 2
    if cables > MAX_GRAPH_CABLES:
        raise SpecError(f"simgrid dragonfly: {cables:,} cables, expected at most {MAX_GRAPH_CABLES:,}")
    host_names = list(host_names) if host_names is not None else [f"node-{i}" for i in range(n)]
    if len(host_names) != n:
        raise SpecError(f"simgrid dragonfly: {len(host_names)} hosts for {n} = {g}*{c}*{b}*{p} places, expected "
                        "as many hosts as the topology has")
    gb = GraphBuilder(spec or "simgrid-dragonfly")
    hosts = [gb.node(name, True) for name in host_names]
    rnode = [gb.node(f"{cluster}_router_{r}", False) for r in range(n_r)]
    uid = [first_link_id]
    sfx = ("_UP", "_DOWN") if split_duplex else ("", "")

    def cable(u, v, base, count, cls):
        name = f"{base}_{uid[0]}"
        uid[0] += 1
        return (gb.link(u, v, bandwidth * count, latency, name + sfx[0], cls),
                gb.link(v, u, bandwidth * count, latency, name + sfx[1], cls))

    down = np.zeros(n, dtype=np.int64)
    for r in range(n_r):
        for j in range(p):
            _up, down[r * p + j] = cable(hosts[r * p + j], rnode[r], f"local_link_from_router_{r}_to_node_{j}", 1,
                                         "host")
    green = np.full((n_r, b), -1, dtype=np.int64)
    for i in range(g * c):
        for j in range(b):
            for k in range(j + 1, b):
                u, v = i * b + j, i * b + k
                green[u, k], green[v, j] = cable(rnode[u], rnode[v], f"green_link_in_chassis_{i % c}_between_routers_"
                                                 f"{j}_and_{k}", green_n, "green")
    black = np.full((n_r, c), -1, dtype=np.int64)
    for i in range(g):
        for j in range(c):
            for k in range(j + 1, c):
                for l in range(b):
                    u, v = i * b * c + j * b + l, i * b * c + k * b + l
                    black[u, k], black[v, j] = cable(rnode[u], rnode[v], f"black_link_in_group_{i}_between_chassis_"
                                                     f"{j}_and_{k}_blade_{l}", black_n, "black")
    blue = np.full(n_r, -1, dtype=np.int64)
    for i in range(g):
        for j in range(i + 1, g):
            ri, rj = i * b * c + j, j * b * c + i
            blue[ri], blue[rj] = cable(rnode[ri], rnode[rj], f"blue_link_between_group_{i}_and_{j}_routers_{ri}_and_"
                                       f"{rj}", blue_n, "blue")
    d = np.arange(n)
    dg, dc, db = d // (c * b * p), (d // (b * p)) % c, (d // p) % b
    dr = d // p
    for r in range(n_r):
        rg, rc, rb = r // (c * b), (r // b) % c, r % b
        link = np.where(dr == r, down, -1)
        other = dg != rg
        # towards another group: blade G of this chassis, chassis 0, then the blue cable
        link = np.where(other & (rb != dg), green[r, np.minimum(dg, b - 1)], link)
        link = np.where(other & (rb == dg) & (rc != 0), black[r, 0], link)
        link = np.where(other & (rb == dg) & (rc == 0), blue[r], link)
        same = ~other & (dr != r)
        link = np.where(same & (rb != db), green[r, db], link)
        link = np.where(same & (rb == db), black[r, dc], link)
        gb.forward(rnode[r], np.asarray(hosts)[d], link)
    params = {"kind": "simgrid-dragonfly", "groups": g, "chassis": c, "routers": b, "nodes": p,
              "links": (blue_n, black_n, green_n)}
    return gb.build(spec or f"simgrid-dragonfly:{g},{blue_n};{c},{black_n};{b},{green_n};{p}", params)


def aries(groups, rows=6, columns=16, nodes=4, *, global_cables=1, black_cables=3, bandwidth=None,
          latency=ARIES_LATENCY, spec=None) -> Topology:
    """The Cray XC (Aries) dragonfly: groups of ``rows x columns`` routers.

    A group is ``rows`` chassis (6 in an XC two-cabinet group) of ``columns`` blades (16), one
    Aries router per blade with ``nodes`` nodes (4). Routers of a chassis (a row) are all-to-all
    over the backplane (green, rank 1); routers in the same slot (a column) are all-to-all across
    the chassis with ``black_cables`` parallel copper cables (3, rank 2); groups are all-to-all
    with ``global_cables`` optical cables per pair (blue, rank 3), dealt round-robin over the
    group's routers in order of the far group. Classes ``host``, ``green``, ``black``, ``blue``
    (defaults :data:`ARIES_BANDWIDTH`).

    Routing (``table``): minimal, row first: a green hop to the column of the router holding the
    cable (or of the target), a black hop to its row, the blue cable, the same inside the target
    group; of parallel cables, number ``d mod count`` for destination ``d``.

    References: Alverson et al., "Cray XC Series Network", 2012; Faanes et al., "Cray Cascade: a
    scalable HPC system based on a Dragonfly network", SC 2012; NERSC, "Cori interconnect".

    Examples
    --------
    >>> t = aries(2)
    >>> t.n_endpoints, t.n_switches
    (768, 192)
    """
    vals = [groups, rows, columns, nodes, global_cables, black_cables]
    if any(isinstance(v, bool) or int(v) != v or int(v) < 1 for v in vals):
        raise SpecError(f"aries: groups, rows, columns, nodes, global and black cables {vals}, expected integers >= 1")
    g, R, C, p = int(groups), int(rows), int(columns), int(nodes)
    bw = dict(ARIES_BANDWIDTH)
    if bandwidth is not None:
        bw = {k: bandwidth for k in bw}
    n_r = g * R * C
    if n_r * (p + 1) > MAX_GRAPH_NODES:
        raise SpecError(f"aries: {n_r * (p + 1)} nodes, expected at most {MAX_GRAPH_NODES:,}")
    cables = (n_r * p + g * R * C * (C - 1) // 2 + g * C * R * (R - 1) // 2 * int(black_cables)
              + g * (g - 1) // 2 * int(global_cables))
    if cables > MAX_GRAPH_CABLES:
        raise SpecError(f"aries: {cables:,} cables, expected at most {MAX_GRAPH_CABLES:,}")
    gb = GraphBuilder(spec or "aries")
    coords = [(gi, r, col) for gi in range(g) for r in range(R) for col in range(C)]
    hosts = [gb.node(f"c{gi}-r{r}c{col}n{k}", True) for gi, r, col in coords for k in range(p)]
    rnode = [gb.node(f"c{gi}-r{r}c{col}a0", False) for gi, r, col in coords]
    links = []
    for ri, (gi, r, col) in enumerate(coords):
        for k in range(p):
            links.append((hosts[ri * p + k], rnode[ri], "host"))
    for gi in range(g):
        base = gi * R * C
        for r in range(R):
            for c1 in range(C):
                for c2 in range(c1 + 1, C):
                    links.append((rnode[base + r * C + c1], rnode[base + r * C + c2], "green"))
        for col in range(C):
            for r1 in range(R):
                for r2 in range(r1 + 1, R):
                    for _ in range(int(black_cables)):
                        links.append((rnode[base + r1 * C + col], rnode[base + r2 * C + col], "black"))
    slot = [0] * g
    for gi in range(g):
        for gj in range(gi + 1, g):
            for _ in range(int(global_cables)):
                ri = gi * R * C + slot[gi] % (R * C)
                rj = gj * R * C + slot[gj] % (R * C)
                slot[gi] += 1
                slot[gj] += 1
                links.append((rnode[ri], rnode[rj], "blue"))
    for u, v, cls in links:
        gb.link(u, v, bw[cls], latency, f"{gb.names[u]}-{gb.names[v]}", cls)
        gb.link(v, u, bw[cls], latency, f"{gb.names[v]}-{gb.names[u]}", cls)
    rid = {node: i for i, node in enumerate(rnode)}
    hid = {node: i for i, node in enumerate(hosts)}
    router_coords = np.array(coords, dtype=np.int64).reshape(-1, 3)
    aries_tables(gb, rid, hid, router_coords, rows=R, columns=C)
    params = {"kind": "aries", "groups": g, "rows": R, "columns": C, "nodes": p,
              "global_cables": int(global_cables), "black_cables": int(black_cables)}
    return gb.build(spec or f"aries:{g},{R},{C},{p}", params)


def aries_tables(gb: GraphBuilder, rid: dict, hid: dict, coords: np.ndarray, *, rows: int, columns: int) -> None:
    """Row-first minimal forwarding of an Aries dragonfly, from the links in ``gb``.

    ``rid``: builder node -> router index (``coords[i] = (group, row, column)``); ``hid``:
    builder node -> endpoint index. Each router forwards a destination's packets over the green
    link to the column of the router it heads for (the destination's, or the one holding a blue
    cable to the destination's group), else the black link to that router's row, else the blue
    cable or the node's own link; of parallel cables the one numbered ``d mod count``.

    Raises
    ------
    SpecError
        A link the rule needs is missing (the message names the routers).
    """
    n_r = len(coords)
    n = len(hid)
    groups = int(coords[:, 0].max()) + 1 if n_r else 0
    node_of_r = {i: node for node, i in rid.items()}
    node_of_h = {i: node for node, i in hid.items()}
    green = {}   # (router, column) -> [links]
    black = {}   # (router, row) -> [links]
    blue = {}    # (group, far group) -> [(router, link)]
    down = np.full(n, -1, dtype=np.int64)
    host_router = np.full(n, -1, dtype=np.int64)
    for li, (u, v, cls) in enumerate(zip(gb.src, gb.dst, gb.link_cls)):
        if u in rid and v in rid:
            a, b = coords[rid[u]], coords[rid[v]]
            if cls == "blue" or a[0] != b[0]:
                blue.setdefault((int(a[0]), int(b[0])), []).append((rid[u], li))
            elif a[1] == b[1]:
                green.setdefault((rid[u], int(b[2])), []).append(li)
            elif a[2] == b[2]:
                black.setdefault((rid[u], int(b[1])), []).append(li)
        elif u in rid and v in hid:
            down[hid[v]] = li
            host_router[hid[v]] = rid[u]
    if np.any(down < 0):
        h = int(np.flatnonzero(down < 0)[0])
        raise SpecError(f"{gb.what}: endpoint {gb.names[node_of_h[h]]} has no link from a router, expected one")
    d = np.arange(n)
    host_nodes = np.array([node_of_h[i] for i in range(n)], dtype=np.int64)
    tr_of_h = host_router
    dgroup = coords[tr_of_h, 0]
    for r in range(n_r):
        rg, rrow, rcol = (int(x) for x in coords[r])
        target = tr_of_h.copy()
        link = np.full(n, -1, dtype=np.int64)
        far = dgroup != rg
        for G in np.unique(dgroup[far]):
            cables = blue.get((rg, int(G)))
            if not cables:
                raise SpecError(f"{gb.what}: no blue cable from group {rg} to group {int(G)}, expected every "
                                "group pair cabled")
            sel = np.flatnonzero(dgroup == G)
            k = d[sel] % len(cables)
            routers = np.array([c[0] for c in cables])[k]
            target[sel] = routers
            here = routers == r
            link[sel[here]] = np.array([c[1] for c in cables])[k[here]]
        link = np.where(tr_of_h == r, down, link)
        todo = np.flatnonzero(link < 0)
        tcol, trow = coords[target[todo], 2], coords[target[todo], 1]
        via_green = tcol != rcol
        for sel, table, key, what in ((via_green, green, tcol, "green link to column"),
                                      (~via_green, black, trow, "black link to row")):
            for k in np.unique(key[sel]).tolist():
                ls = table.get((r, k))
                if not ls:
                    raise SpecError(f"{gb.what}: no {what} {k} from router {gb.names[node_of_r[r]]}, expected rows "
                                    "and columns all-to-all")
                idx = todo[sel & (key == k)]
                link[idx] = np.asarray(ls, dtype=np.int64)[idx % len(ls)]
        gb.forward(node_of_r[r], host_nodes, link)
