"""Networks given as a graph with their own forwarding (family ``graph``):
imported SimGrid platforms, SimGrid's and Cray's dragonflies, Cray ``rtr``
link lists.

A :class:`GraphBuilder` collects named nodes and directed links (with
bandwidth, latency, a SimGrid-style resource name and a link class), then
:meth:`GraphBuilder.build` numbers endpoints first, sorts the link table by
source node (stable, so each node's links keep their order of creation) and
turns per-(switch, destination) next links into the forwarding table the
``table`` routing engine follows (``params["forwarding"]``,
``entries[(switch - n_endpoints) * n_endpoints + d]``, 2**32 - 1 for none).

Forwarding by destination is what InfiniBand LFTs and SimGrid's cluster
zones do; where a platform's own routes depend on the source too (a SimGrid
fat tree's parallel down cables, Full zones with per-pair routes that
disagree), the importer says so in a warning (``params["warnings"]``).
"""

from __future__ import annotations

import numpy as np

from topocoll.errors import SpecError

from .network import Topology, make_topology

__all__ = ["GraphBuilder", "NO_ENTRY", "MAX_TABLE_ENTRIES"]

NO_ENTRY = 2 ** 32 - 1
#: forwarding tables are switches x endpoints entries of 4 bytes: at most 256 MiB
MAX_TABLE_ENTRIES = 1 << 26


class GraphBuilder:
    """Collects nodes and links; endpoints and switches may come in any order."""

    def __init__(self, what: str):
        self.what = what
        self.names: list[str] = []
        self.is_endpoint: list[bool] = []
        self.index: dict[str, int] = {}
        self.src: list[int] = []
        self.dst: list[int] = []
        self.bw: list[float] = []
        self.lat: list[float] = []
        self.link_names: list[str] = []
        self.link_cls: list[str] = []
        self.fwd_node: list = []     # arrays of (node, dst node, link) triples
        self.fwd_dst: list = []
        self.fwd_link: list = []
        self.coords: dict[int, tuple] = {}
        self.injection: set[int] = set()

    def inject(self, link: int) -> None:
        """Make ``link`` its source node's first link: the one an endpoint injects on (the
        ``table`` engine sends from an endpoint's first link)."""
        self.injection.add(int(link))

    def node(self, name: str, endpoint: bool) -> int:
        if name in self.index:
            raise SpecError(f"{self.what}: node {name!r} declared twice, expected unique names")
        self.index[name] = len(self.names)
        self.names.append(name)
        self.is_endpoint.append(bool(endpoint))
        return self.index[name]

    def link(self, u: int, v: int, bandwidth: float, latency: float, name: str, cls: str) -> int:
        self.src.append(u)
        self.dst.append(v)
        self.bw.append(float(bandwidth))
        self.lat.append(float(latency))
        self.link_names.append(name)
        self.link_cls.append(cls)
        return len(self.src) - 1

    def forward(self, node, dst, link) -> None:
        """At ``node`` (switch), packets for endpoint node ``dst`` leave on ``link``
        (builder ids; scalars or arrays)."""
        node, dst, link = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=np.int64))
                                                for x in (node, dst, link)))
        keep = link >= 0
        self.fwd_node.append(node[keep])
        self.fwd_dst.append(dst[keep])
        self.fwd_link.append(link[keep])

    def build(self, spec: str, params: dict | None = None, *, tables: bool = True) -> Topology:
        ep = np.array(self.is_endpoint, dtype=bool)
        n_nodes = len(self.names)
        order = np.concatenate([np.flatnonzero(ep), np.flatnonzero(~ep)])
        new = np.empty(n_nodes, dtype=np.int64)
        new[order] = np.arange(n_nodes)
        n_ep = int(ep.sum())
        n_sw = n_nodes - n_ep
        src = new[np.asarray(self.src, dtype=np.int64)] if self.src else np.zeros(0, np.int64)
        dst = new[np.asarray(self.dst, dtype=np.int64)] if self.dst else np.zeros(0, np.int64)
        preferred = np.zeros(len(src), dtype=bool)
        preferred[list(self.injection)] = True
        perm = np.lexsort((np.arange(len(src)), ~preferred, src))
        link_new = np.empty(len(perm), dtype=np.int64)
        link_new[perm] = np.arange(len(perm))
        names, cls_index = np.unique(np.asarray(self.link_cls, dtype=object)[perm].astype(str), return_inverse=True) \
            if self.link_cls else (np.array([], dtype=str), np.zeros(0, np.int64))
        params = dict(params or {})
        params["link_names"] = tuple(np.asarray(self.link_names, dtype=object)[perm].tolist())
        params["link_class"] = (tuple(names.tolist()), cls_index.astype(np.int64))
        if self.coords:
            params["coords"] = {int(new[k]): v for k, v in self.coords.items()}
        if tables:
            if n_sw * n_ep > MAX_TABLE_ENTRIES:
                raise SpecError(f"{spec}: forwarding tables of {n_sw} switches x {n_ep} endpoints, expected at most "
                                f"{MAX_TABLE_ENTRIES:,} entries")
            entries = np.full(n_sw * n_ep, NO_ENTRY, dtype=np.uint32)
            if self.fwd_node:
                node = new[np.concatenate(self.fwd_node)]
                d = new[np.concatenate(self.fwd_dst)]
                link = link_new[np.concatenate(self.fwd_link)]
                if np.any(node < n_ep) or np.any(d >= n_ep):
                    raise SpecError(f"{spec}: a forwarding entry at an endpoint or towards a switch, expected "
                                    "switch -> endpoint entries")
                entries[(node - n_ep) * n_ep + d] = link.astype(np.uint32)
            params["forwarding"] = entries
        return make_topology(spec, "graph", n_ep, n_sw, src[perm], dst[perm],
                             np.asarray(self.bw, dtype=np.float64)[perm], np.asarray(self.lat, dtype=np.float64)[perm],
                             params=params, names=[self.names[i] for i in order])
