"""Spec strings for topologies, as on the command line.

========================================  ===========================================
``crossbar:N``                            one switch, N endpoints
``kary:k,n``                              k-ary n-tree
``xgft:h;m1,..,mh;w1,..,wh``              XGFT (Öhring et al.)
``pgft:h;m1,..,mh;w1,..,wh;p1,..,ph``     PGFT / RLFT (Zahavi), p parallel cables
``table1:N``                              the network-noise paper's Table-1 tree with N endpoints
``torus:8x8x16``, ``torus:8x8x4m``        torus; an ``m`` suffix makes that dimension a mesh
``mesh:4x4``                              all dimensions mesh
``dragonfly:a,p,h[,g]``                   dragonfly (Kim et al.)
``simgrid-dragonfly:g,l;c,l;r,l;n``       SimGrid's dragonfly (groups, chassis, routers,
                                          nodes; parallel links per level), its routing
``aries:g[,rows,cols,nodes]``             Cray XC (Aries): groups of 6 x 16 routers, 4 nodes
``ibnet:PATH``                            a real fabric from ibnetdiscover (plain or -p)
``simgrid:PATH``                          a SimGrid platform file (clusters; Full, Floyd,
                                          Dijkstra zones)
``rtr:PATH``                              a Cray ``rtr --interconnect`` link list
``SPEC+ppn=N[,dist=,lat=,bw=,mem=]``       several ranks per host of SPEC
                                          (:mod:`topocoll.topology.nodes`); SPEC's
                                          ``@`` options go before ``+ppn=`` or
                                          after the node options
========================================  ===========================================

Options follow ``@``, comma-separated: ``bw=`` (e.g. ``2GB/s``, ``2GiB/s``,
``10Gbit/s``), ``lat=`` (e.g. ``1us``), and for ``ibnet`` ``map=PATH`` (a
``NODE-ID HOSTNAME`` file): ``torus:8x8x16@bw=175MB/s,lat=100ns``.

Link classes: ``CLASS.bw=`` and ``CLASS.lat=`` set one class of links apart
(see :func:`~topocoll.topology.network.link_classes`): ``host`` (links with an
endpoint at one end) and ``switch`` on every network with switches,
``level2`` .. ``levelh`` on fat trees, ``x``/``y``/``z`` on tori, ``local`` and
``global`` on dragonflies, ``green``/``black``/``blue`` on SimGrid's and Cray's
dragonflies: ``kary:12,2@lat=1us,host.lat=200ns``,
``aries:4@blue.bw=4.7GB/s``. A bare ``bw=``/``lat=`` applies to every link
first, the generic classes next, the specific ones last.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from topocoll.errors import SpecError

from .dragonfly import ARIES_LATENCY
from .dragonfly import aries as _aries
from .dragonfly import dragonfly as _dragonfly
from .dragonfly import simgrid_dragonfly as _simgrid_dragonfly
from . import fat_tree as _ft
from .torus import torus as _torus
from .network import Topology, parse_bandwidth, parse_latency, with_link_classes

__all__ = ["parse_topology"]


def _ints(text, spec, what, count=None):
    parts = [x.strip() for x in text.split(",")] if text.strip() else []
    try:
        vals = [int(x) for x in parts]
    except ValueError:
        raise SpecError(f"{spec}: {what}={text!r}, expected comma-separated integers") from None
    if count is not None and len(vals) not in (count if isinstance(count, tuple) else (count,)):
        raise SpecError(f"{spec}: {what}={text!r} has {len(vals)} values, expected {count}")
    if any(v < 1 for v in vals):
        raise SpecError(f"{spec}: {what}={text!r}, expected sizes >= 1")
    return vals


def parse_topology(spec: str, *, strict: bool = False) -> Topology:
    """Build a topology from a spec string (see the module docstring).

    ``strict``: imported files (``simgrid:``) raise their first warning as an error.

    Raises
    ------
    SpecError
        The string does not parse, or a size is zero or negative.

    Examples
    --------
    >>> parse_topology("kary:4,3").n_endpoints
    64
    >>> parse_topology("torus:8x8x4m").params["wrap"]
    (True, True, False)
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise SpecError(f"topology spec {spec!r}: expected FAMILY:PARAMS, e.g. 'kary:12,2' or 'torus:8x8x16'")
    if spec.count("+ppn=") > 1:     # rpartition below would nest hosts in hosts
        raise SpecError(f"topology spec {spec!r}: +ppn= given {spec.count('+ppn=')} times, expected it once")
    if "+ppn=" in spec:   # several ranks per host: topocoll.topology.nodes
        from .nodes import parse_node_spec, with_nodes
        fabric_spec, _, node_opts = spec.rpartition("+ppn=")
        if "@" in node_opts:   # the fabric's @options after the node part: either order is accepted
            node_opts, _, fabric_opts = node_opts.partition("@")
            if "@" in fabric_spec:
                raise SpecError(f"{spec}: @options both before and after +ppn=, expected the fabric's options "
                                "once (e.g. crossbar:4@bw=2GB/s+ppn=2 or crossbar:4+ppn=2@bw=2GB/s)")
            fabric_spec = f"{fabric_spec}@{fabric_opts}"
        nodes = parse_node_spec("ppn=" + node_opts, spec)
        return with_nodes(parse_topology(fabric_spec, strict=strict), nodes, spec)
    body, _, opts = spec.partition("@")
    family, _, params = body.partition(":")
    family = family.strip().lower()
    kw = {}
    classes = {}
    node_map = None
    if opts:
        seen = set()
        for item in opts.split(","):
            key, eq, value = item.partition("=")
            if not eq:
                raise SpecError(f"{spec}: option {item!r}, expected KEY=VALUE (bw=, lat=, CLASS.bw=, CLASS.lat=, map=)")
            key = key.strip()
            if key in seen:
                raise SpecError(f"{spec}: option {key}= given twice, expected each option once")
            seen.add(key)
            cls, dot, what = key.rpartition(".")
            if dot and what in ("bw", "lat") and re.fullmatch(r"[a-z][a-z0-9_]*", cls):
                classes.setdefault(cls, {})["bandwidth" if what == "bw" else "latency"] = (
                    parse_bandwidth(value) if what == "bw" else parse_latency(value))
            elif key == "bw":
                kw["bandwidth"] = parse_bandwidth(value)
            elif key == "lat":
                kw["latency"] = parse_latency(value)
            elif key == "map" and family == "ibnet":
                node_map = value.strip()
            else:
                raise SpecError(f"{spec}: unknown option {key!r}, expected bw=, lat=, CLASS.bw=, CLASS.lat= or "
                                "(ibnet) map=")
    topo = _build(spec, family, params, kw, node_map, strict)
    return with_link_classes(topo, classes)


def _uniform(topo, kw):
    """Every link at ``kw``'s bandwidth / latency (imported fabrics carry their own)."""
    if not kw:
        return topo
    return replace(topo, bandwidth=np.full(topo.n_links, kw["bandwidth"]) if "bandwidth" in kw else topo.bandwidth,
                   latency=np.full(topo.n_links, kw["latency"]) if "latency" in kw else topo.latency)


def _build(spec, family, params, kw, node_map, strict) -> Topology:
    if family == "crossbar":
        (n,) = _ints(params, spec, "N", 1)
        return _ft.crossbar(n, spec=spec, **kw)
    if family == "kary":
        k, n = _ints(params, spec, "k,n", 2)
        return _ft.kary_n_tree(k, n, spec=spec, **kw)
    if family in ("xgft", "pgft"):
        groups = params.split(";")
        want = 3 if family == "xgft" else 4
        if len(groups) != want:
            form = "h;m1,..,mh;w1,..,wh" + (";p1,..,ph" if family == "pgft" else "")
            raise SpecError(f"{spec}: expected {family}:{form}")
        (h,) = _ints(groups[0], spec, "h", 1)
        m = _ints(groups[1], spec, "m", h)
        w = _ints(groups[2], spec, "w", h)
        p = _ints(groups[3], spec, "p", h) if family == "pgft" else None
        return _ft.pgft(m, w, p, spec=spec, **kw)
    if family == "table1":
        return _ft.network_noise_table1(params.strip(), spec=spec, **kw)
    if family in ("torus", "mesh"):
        dims, wraps = [], []
        for part in params.lower().split("x"):
            m = re.fullmatch(r"\s*(\d+)\s*(m?)\s*", part)
            if not m or int(m.group(1)) < 1:
                raise SpecError(f"{spec}: dimension {part!r}, expected a size >= 1 with an optional 'm' (mesh), e.g. 8x8x4m")
            dims.append(int(m.group(1)))
            wraps.append(family == "torus" and not m.group(2))
        return _torus(dims, wraps, spec=spec, **kw)
    if family == "dragonfly":
        vals = _ints(params, spec, "a,p,h[,g]", (3, 4))
        return _dragonfly(*vals, spec=spec, **kw)
    if family == "simgrid-dragonfly":
        parts = params.split(";")
        if len(parts) != 4:
            raise SpecError(f"{spec}: expected simgrid-dragonfly:groups,links;chassis,links;routers,links;nodes, "
                            "e.g. 4,1;4,1;4,1;2")
        (g, gl), (c, cl), (r, rl) = (_ints(x, spec, "count,links", 2) for x in parts[:3])
        (n,) = _ints(parts[3], spec, "nodes", 1)
        return _simgrid_dragonfly(g, c, r, n, links=(gl, cl, rl), spec=spec, **kw)
    if family == "aries":
        vals = _ints(params, spec, "g[,rows,cols,nodes]", (1, 2, 3, 4))
        topo = _aries(*vals, spec=spec, latency=kw.get("latency", ARIES_LATENCY))
        return _uniform(topo, {k: v for k, v in kw.items() if k == "bandwidth"})    # bw= overrides every class
    if family in ("ibnet", "simgrid", "rtr") and not params.strip():
        raise SpecError(f"{spec}: expected {family}:PATH to a file")
    if family == "ibnet":
        from .io.ibnetdiscover import parse_ibnetdiscover
        topo = parse_ibnetdiscover(params.strip(), node_map=node_map, spec=spec)
        return _uniform(topo, kw)
    if family == "simgrid":
        from .io.simgrid import read_simgrid
        return _uniform(read_simgrid(params.strip(), spec=spec, strict=strict), kw)
    if family == "rtr":
        from .io.cray import read_rtr
        return _uniform(read_rtr(params.strip(), spec=spec, strict=strict), kw)
    raise SpecError(f"topology spec {spec!r}: unknown family {family!r}, expected crossbar, kary, xgft, pgft, "
                    "table1, torus, mesh, dragonfly, simgrid-dragonfly, aries, ibnet, simgrid or rtr")
