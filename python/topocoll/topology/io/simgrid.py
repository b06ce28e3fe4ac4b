"""SimGrid platform files (``platform.xml``, DTD version 4.1, SimGrid 3.32) in and out.

In (:func:`read_simgrid`, spec ``simgrid:PATH``): the platform's one zone of hosts, which is

- a ``<cluster>``: flat (private links, optional backbone), ``FAT_TREE``, ``TORUS`` or
  ``DRAGONFLY``, each routed as SimGrid 3.32 routes it (``ClusterZone``, ``FatTreeZone``,
  ``TorusZone``, ``DragonflyZone``), link names as SimGrid makes them; or several flat clusters
  side by side in a ``Full`` zone, joined by ``zoneRoute`` elements through their routers
  (``NetZoneImpl::get_global_route``);
- or a ``Full``, ``Floyd`` or ``Dijkstra`` zone with ``<host>``, ``<router>``, ``<link>`` and
  ``<route>`` elements. Full zones give every host pair's links; the nodes between links are
  inferred from where consecutive links of the routes meet (a switch per meeting point; a host that
  routes pass through, as in SimGrid's ``small_platform.xml``, becomes a switch ``<host>_port`` with
  the host on an ideal cable, class ``attach``, 1 PB/s and no latency). Floyd and
  Dijkstra zones give one-hop routes (the graph's edges) and SimGrid's shortest paths, cost = links
  per edge, are computed here as ``FloydZone``/``DijkstraZone`` do.

Routes become forwarding tables (routing ``table``, the default; ``min-hop`` and ``up-down`` work
too). Where SimGrid's semantics cannot be represented they are named in warnings
(``Topology.params["warnings"]``; ``strict=True`` raises them as errors): ``SHARED`` links (one
resource for both directions; topocoll gives each direction its own bandwidth), ``FATPIPE`` links,
loopback and limiter links, routes from a host to itself, ``<prop>``, ``<config>`` and deployment
elements (ignored), routes that
no destination-based table can follow (a fat tree's parallel cables chosen by source, Full routes
that disagree at a switch). Bad input (an unknown tag or attribute value, a dangling ``link_ctn``,
a host without a route to another host, an unsupported zone kind, several zones of hosts) is a
one-line :class:`~topocoll.errors.SpecError` naming ``FILE:LINE``.

Out (:func:`write_simgrid`, ``topocoll topo SPEC --export-simgrid FILE``): any network and routing
as one ``Full`` zone: a host per endpoint, a ``SPLITDUPLEX`` link per cable (so the two directions
are separate resources, as in topocoll) and a route per ordered host pair, the links of topocoll's
route. SMPI runs it; SimGrid's ``Host.route_to`` returns those links (checked in the tests). A
switched network's export reads back into the same routes; a direct one (torus) only into SimGrid,
since topocoll's tables forward at switches.
"""

from __future__ import annotations

import math
import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from topocoll.errors import SpecError
from topocoll.inputs import TABLE_BYTES, read_bytes
from topocoll.outputs import write_text

from ..dragonfly import simgrid_dragonfly
from ..graph import GraphBuilder
from ..network import MAX_LATENCY_S, Topology
from ..torus import torus

__all__ = ["read_simgrid", "write_simgrid", "parse_simgrid_bandwidth", "parse_simgrid_time", "MAX_EXPORT_ENDPOINTS"]

#: endpoints of an exported network: a Full zone has one route per ordered host pair
MAX_EXPORT_ENDPOINTS = 1024
#: hosts of a Full zone (one route per ordered pair)
MAX_FULL_HOSTS = 4096
#: bandwidth of the ideal cable that attaches a host routes pass through to its own switch
ATTACH_BANDWIDTH = 1e15
#: netpoints of a Floyd / Dijkstra zone (Floyd-Warshall is cubic)
MAX_ROUTED_NETPOINTS = 1024
#: deepest element nesting read (platform, zones, cluster or route, link_ctn); the readers recurse
#: once per zone, and SimGrid's example platforms nest at most four zones
MAX_XML_DEPTH = 64
#: links of a FAT_TREE cluster, estimated from its declaration before anything is built (SimGrid's
#: largest example fat tree has 1,536; 20 M links take about 2 GB here)
MAX_FAT_TREE_LINKS = 20_000_000

_DECIMAL = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0 ** 10, "Mi": 2.0 ** 20, "Gi": 2.0 ** 30, "Ti": 2.0 ** 40, "Pi": 2.0 ** 50, "Ei": 2.0 ** 60}
_TIME = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9,
         "ps": 1e12}   # seconds per unit above 1 s, units per second below (exact decimals)
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def parse_simgrid_bandwidth(text: str, where: str = "bandwidth") -> float:
    """A SimGrid bandwidth in B/s: ``'1.25GBps'``, ``'10Gbps'`` (bits), ``'1GiBps'`` (binary).

    >>> parse_simgrid_bandwidth("10Gbps")
    1250000000.0
    """
    m = re.fullmatch(_NUMBER + r"\s*(k|Ki|[MGTPE]i?)?([Bb])ps", text.strip())
    if not m or (m.group(2) or "") not in {**_DECIMAL, **_BINARY}:
        raise SpecError(f"{where}: bandwidth {text!r}, expected a number with SimGrid's unit, e.g. '1.25GBps', "
                        "'10Gbps' or '1GiBps'")
    value = float(m.group(1)) * {**_DECIMAL, **_BINARY}[m.group(2) or ""]
    value = value / 8 if m.group(3) == "b" else value
    if not (math.isfinite(value) and value > 0):     # 0Bps would be simulated as infinitely fast
        raise SpecError(f"{where}: bandwidth {text!r} is {value!r} B/s, expected a finite bandwidth > 0")
    return value


def parse_simgrid_time(text: str, where: str = "latency") -> float:
    """A SimGrid time in s: ``'1us'``, ``'50ns'``, ``'0'`` (zero needs no unit).

    >>> parse_simgrid_time("1.5us")
    1.5e-06
    """
    t = text.strip()
    m = re.fullmatch(_NUMBER + r"\s*(w|d|h|m|s|ms|us|ns|ps)?", t)
    if not m or (m.group(2) is None and float(m.group(1)) != 0):
        raise SpecError(f"{where}: time {text!r}, expected a number with SimGrid's unit, e.g. '1us' or '50ns'")
    scale = _TIME[m.group(2) or "s"]
    value = float(m.group(1)) / scale if m.group(2) in ("ms", "us", "ns", "ps") else float(m.group(1)) * scale
    if not (math.isfinite(value) and value <= MAX_LATENCY_S):    # '1e400s' would be simulated as no latency
        raise SpecError(f"{where}: time {text!r} is {value!r} s, expected a finite time in 0..{MAX_LATENCY_S:g} s "
                        "(0: none)")
    return value


# --------------------------------------------------------------------------- XML with line numbers

@dataclass
class _El:
    tag: str
    attrs: dict
    line: int
    children: list = field(default_factory=list)


def _parse_xml(path: Path) -> _El:
    data = read_bytes(path, limit=TABLE_BYTES, what="a SimGrid platform file", text=True, error=SpecError)
    root = _El("#document", {}, 1)
    stack = [root]
    parser = xml.parsers.expat.ParserCreate()

    def start(tag, attrs):
        if len(stack) > MAX_XML_DEPTH:    # before the readers below recurse into it
            raise SpecError(f"{path}:{parser.CurrentLineNumber}: <{tag}> nested {len(stack)} elements deep, "
                            f"expected at most {MAX_XML_DEPTH} (MAX_XML_DEPTH; SimGrid's platforms nest a few "
                            "zones)")
        el = _El(tag, dict(attrs), parser.CurrentLineNumber)
        stack[-1].children.append(el)
        stack.append(el)

    def end(_tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise SpecError(f"{path}:{e.lineno}: not well-formed XML ({xml.parsers.expat.ErrorString(e.code)}), "
                        "expected a SimGrid platform file") from None
    if len(root.children) != 1 or root.children[0].tag != "platform":
        line = root.children[0].line if root.children else 1
        raise SpecError(f"{path}:{line}: root element <{root.children[0].tag if root.children else ''}>, "
                        "expected <platform version=\"4.1\">")
    return root.children[0]


#: elements that carry no network: ignored with a warning
_IGNORED = {"prop": "properties", "config": "configuration", "actor": "deployment", "process": "deployment",
            "argument": "deployment", "disk": "disks", "storage": "storages", "storage_type": "storages",
            "mount": "storages", "model_prop": "storages", "trace": "traces", "trace_connect": "traces",
            "include": "includes", "random": "random"}
_WHY_IGNORED = {"zoneRoute": "routes between zones are not read: one zone of hosts",
                "ASroute": "routes between zones are not read: one zone of hosts",
                "bypassRoute": "bypass routes are not read", "bypassZoneRoute": "bypass routes are not read"}
_ZONE_KINDS = ("Full", "Floyd", "Dijkstra", "DijkstraCache")
_CLUSTER_KINDS = ("FLAT", "FAT_TREE", "TORUS", "DRAGONFLY")
_SHARING = ("SHARED", "SPLITDUPLEX", "FATPIPE", "WIFI", "NONLINEAR")


class _Reader:
    def __init__(self, path: Path, strict: bool):
        self.path = path
        self.strict = strict
        self.warnings: list[str] = []
        self.ignored: dict = {}      # tag (or (tag, zone)) -> lines
        self.params_extra: dict = {}
        self.parent: dict = {}       # id(cluster element) -> the zone holding it

    def err(self, line, msg):
        raise SpecError(f"{self.path}:{line}: {msg}")

    def warn(self, line, msg):
        text = f"simgrid: {self.path}:{line}: {msg}"
        if self.strict:
            raise SpecError(text + " (--strict)")
        self.warnings.append(text)

    def need(self, el, key):
        if key not in el.attrs:
            self.err(el.line, f"<{el.tag}> without {key}=, expected {key}=\"...\"")
        return el.attrs[key]

    # ---- structure
    def read(self, spec) -> Topology:
        plat = _parse_xml(self.path)
        version = plat.attrs.get("version")
        if version not in ("4", "4.0", "4.1"):
            self.err(plat.line, f"platform version={version!r}, expected version=\"4.1\" (run simgrid_update_xml "
                                "on older files)")
        holders = []   # (element, kind) of every zone or cluster holding hosts
        self._scan(plat, holders, depth=0)
        if not holders:
            self.err(plat.line, "no <host> and no <cluster>, expected one zone of hosts")
        if len(holders) > 1:
            root = self.parent.get(id(holders[0][0]))
            for el, kind in holders:
                if el.tag != "cluster" or kind != "FLAT" or self.parent.get(id(el)) is not root \
                        or root.attrs.get("routing") != "Full":
                    self.err(el.line, f"second zone of hosts <{el.tag} id={el.attrs.get('id')!r}>: routes between "
                                      "zones are read only between flat clusters of one Full zone, expected one "
                                      "zone of hosts or flat clusters side by side")
        el, kind = holders[0]
        if len(holders) > 1:
            topo = self._clusters(root, [h[0] for h in holders], spec)
        elif el.tag == "cluster":
            topo = self._cluster(el, spec)
        else:
            topo = self._routed_zone(el, kind, spec)
        for what, lines in self.ignored.items():
            many = "s" if len(lines) > 1 else ""
            if isinstance(what, tuple):        # (tag, zone) of a zone without hosts
                self.warn(lines[0], f"{len(lines)} <{what[0]}> element{many} of zone {what[1]!r} ignored (outside "
                                    "the zone of hosts)")
            else:
                self.warn(lines[0], f"{len(lines)} <{what}> element{many} ignored "
                                    f"({_WHY_IGNORED.get(what, 'no network in them')})")
        topo.params["warnings"] = tuple(self.warnings) + tuple(topo.params.get("warnings", ()))
        topo.params["path"] = str(self.path)
        return topo

    def _scan(self, el, holders, depth):
        for ch in el.children:
            if ch.tag in _IGNORED:
                self.ignored.setdefault(ch.tag, []).append(ch.line)
                continue
            if ch.tag in ("zone", "AS"):
                kind = ch.attrs.get("routing", "")
                hosts = [c for c in ch.children if c.tag == "host"]
                if kind not in _ZONE_KINDS + ("None",) and (hosts or depth == 0):
                    self.err(ch.line, f"zone {ch.attrs.get('id')!r} with routing={kind!r}, expected one of "
                                      f"{', '.join(_ZONE_KINDS)} (or a <cluster>)")
                for c in ch.children:
                    if c.tag not in ("zone", "AS", "cluster", "host", "router", "link", "route", "backbone",
                                     "zoneRoute", "ASroute", "bypassRoute", "bypassZoneRoute", *_IGNORED):
                        self.err(c.line, f"unknown tag <{c.tag}> in a zone, expected zone, cluster, host, router, "
                                         "link, route, zoneRoute or prop")
                if hosts:
                    holders.append((ch, kind))
                else:     # links and routes of a zone without hosts lead nowhere topocoll reads
                    for c in ch.children:
                        if c.tag in ("link", "route", "router", "backbone"):
                            self.ignored.setdefault((c.tag, ch.attrs.get("id", "")), []).append(c.line)
                self._scan(ch, holders, depth + 1)
            elif ch.tag == "cluster":
                holders.append((ch, ch.attrs.get("topology", "FLAT")))
                self.parent[id(ch)] = el
                for c in ch.children:
                    if c.tag not in _IGNORED:
                        self.err(c.line, f"unknown tag <{c.tag}> in a cluster, expected only <prop>")
                    self.ignored.setdefault(c.tag, []).append(c.line)
            elif el.tag == "platform" and ch.tag in ("host", "link", "route", "router"):
                self.err(ch.line, f"<{ch.tag}> directly in <platform>, expected it inside a <zone>")
            elif ch.tag in ("host", "router", "link", "route", "backbone", "zoneRoute", "ASroute", "bypassRoute",
                            "bypassZoneRoute", "link_ctn", "host_link", "peer", "cabinet"):
                if ch.tag in ("zoneRoute", "ASroute", "bypassRoute", "bypassZoneRoute"):
                    self.ignored.setdefault(ch.tag, []).append(ch.line)
                if ch.tag in ("host_link", "peer", "cabinet"):
                    self.err(ch.line, f"<{ch.tag}> is not supported, expected a cluster or a Full/Floyd/Dijkstra zone")
            else:
                self.err(ch.line, f"unknown tag <{ch.tag}>, expected zone, cluster, host, router, link, route or prop")

    # ---- clusters
    def _radical(self, el):
        text = self.need(el, "radical")
        out = []
        for part in text.split(","):
            m = re.fullmatch(r"\s*(\d{1,9})\s*(?:-\s*(\d{1,9}))?\s*", part)
            if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
                self.err(el.line, f"cluster radical={text!r}, expected ranges such as '0-31' or '0-3,8,10-11'")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if len(out) + hi - lo + 1 > 1_000_000:      # before building the list
                self.err(el.line, f"cluster radical={text!r}: more than 1,000,000 hosts, expected at most that")
            out.extend(range(lo, hi + 1))
        return out

    def _cluster(self, el, spec) -> Topology:
        cid = self.need(el, "id")
        kind = el.attrs.get("topology", "FLAT")
        if kind not in _CLUSTER_KINDS:
            self.err(el.line, f"cluster {cid!r} topology={kind!r}, expected one of {', '.join(_CLUSTER_KINDS)}")
        where = f"{self.path}:{el.line}"
        bw = parse_simgrid_bandwidth(self.need(el, "bw"), f"{where}: cluster {cid!r} bw")
        lat = parse_simgrid_time(self.need(el, "lat"), f"{where}: cluster {cid!r} lat")
        sharing = el.attrs.get("sharing_policy", "SPLITDUPLEX")
        if sharing not in _SHARING[:3]:
            self.err(el.line, f"cluster {cid!r} sharing_policy={sharing!r}, expected SHARED, SPLITDUPLEX or FATPIPE")
        if sharing != "SPLITDUPLEX":
            how = ("shares one link between both directions" if sharing == "SHARED"
                   else "gives every flow the full bandwidth")
            self.warn(el.line, f"cluster {cid!r} sharing_policy={sharing}: SimGrid {how}, topocoll models a "
                               "full-duplex cable of that bandwidth")
        radical = self._radical(el)
        names = [f"{el.attrs.get('prefix', '')}{i}{el.attrs.get('suffix', '')}" for i in radical]
        for key in ("loopback_bw", "loopback_lat"):
            if key in el.attrs:
                self.warn(el.line, f"cluster {cid!r} {key} ignored: topocoll never routes a rank to itself")
                break
        if "limiter_link" in el.attrs:
            self.warn(el.line, f"cluster {cid!r} limiter_link={el.attrs['limiter_link']} ignored: topocoll has no "
                               "per-host limiter links (use host.bw=)")
        params_text = el.attrs.get("topo_parameters", "")
        spec = spec or f"simgrid:{self.path}"
        split = sharing == "SPLITDUPLEX"
        if kind == "FLAT":
            return self._flat(el, cid, names, bw, lat, split, spec)
        if kind == "TORUS":
            dims = self._int_list(el, params_text, ",", "TORUS topo_parameters", "e.g. '4,4,4'")
            if math.prod(dims) != len(names):
                self.err(el.line, f"cluster {cid!r}: TORUS {params_text} has {math.prod(dims)} places for "
                                  f"{len(names)} hosts, expected equal")
            t = torus(dims, True, bandwidth=bw, latency=lat, spec=spec)
            t.params.update(default_routing="dor:tie=simgrid", kind="simgrid-torus", cluster=cid,
                            link_names=_torus_link_names(t, cid, split))
            object.__setattr__(t, "names", tuple(names))
            return t
        if kind == "DRAGONFLY":
            parts = params_text.split(";")
            if len(parts) != 4:
                self.err(el.line, f"cluster {cid!r}: DRAGONFLY topo_parameters={params_text!r}, expected "
                                  "'groups,links;chassis,links;routers,links;nodes', e.g. '4,1;4,1;4,1;2'")
            levels = [self._int_list(el, x, ",", "DRAGONFLY level", "two integers 'count,links'") for x in parts[:3]]
            if any(len(x) != 2 for x in levels):
                self.err(el.line, f"cluster {cid!r}: DRAGONFLY topo_parameters={params_text!r}, expected "
                                  "'groups,links;chassis,links;routers,links;nodes'")
            nodes = self._int_list(el, parts[3], ",", "DRAGONFLY nodes", "one integer")
            if len(nodes) != 1:
                self.err(el.line, f"cluster {cid!r}: DRAGONFLY nodes {parts[3]!r}, expected one integer")
            (nodes,) = nodes
            (g, gl), (c, cl), (b, bl) = levels
            if g * c * b * nodes != len(names):
                self.err(el.line, f"cluster {cid!r}: DRAGONFLY {params_text} has {g * c * b * nodes} places for "
                                  f"{len(names)} hosts, expected equal")
            try:
                return simgrid_dragonfly(g, c, b, nodes, links=(gl, cl, bl), bandwidth=bw, latency=lat,
                                         host_names=names, cluster=cid, split_duplex=split, spec=spec)
            except SpecError as e:
                self.err(el.line, str(e))
        return self._fat_tree(el, cid, names, bw, lat, split, params_text, spec)

    def _int_list(self, el, text, sep, what, example):
        try:
            vals = [int(x) for x in text.split(sep)]
        except ValueError:
            vals = []
        if not vals or any(v < 1 for v in vals):
            self.err(el.line, f"{what} {text!r}, expected integers >= 1 ({example})")
        return vals

    def _flat(self, el, cid, names, bw, lat, split, spec):
        gb = GraphBuilder(spec)
        hosts, ingress, _egress, backbone = self._flat_into(gb, el, cid, names, bw, lat, split)
        if backbone is not None:
            gb.forward(ingress, hosts, backbone)
        return gb.build(spec, {"kind": "simgrid-cluster", "cluster": cid})

    def _flat_into(self, gb, el, cid, names, bw, lat, split):
        """A flat cluster's hosts, switches and links in ``gb``; returns (hosts, ingress, egress, backbone)."""
        hosts = []
        for name in names:
            if name in gb.index:
                self.err(el.line, f"cluster {cid!r}: host {name!r} declared twice, expected unique host names")
            hosts.append(gb.node(name, True))
        sfx = ("_UP", "_DOWN") if split else ("", "")
        if "bb_bw" in el.attrs:
            bb_bw = parse_simgrid_bandwidth(el.attrs["bb_bw"], f"{self.path}:{el.line}: cluster {cid!r} bb_bw")
            bb_lat = parse_simgrid_time(el.attrs.get("bb_lat", "0"), f"{self.path}:{el.line}: cluster {cid!r} bb_lat")
            bb_sharing = el.attrs.get("bb_sharing_policy", "SHARED")
            if bb_sharing not in ("SHARED", "FATPIPE"):
                self.err(el.line, f"cluster {cid!r} bb_sharing_policy={bb_sharing!r}, expected SHARED or FATPIPE")
            if bb_sharing == "FATPIPE":
                self.warn(el.line, f"cluster {cid!r} FATPIPE backbone: SimGrid gives every flow {el.attrs['bb_bw']}, "
                                   "topocoll shares the backbone link between the flows crossing it")
            # the backbone is one resource every route crosses: a link from an ingress to an egress switch
            ingress, egress = gb.node(f"{cid}_ingress", False), gb.node(f"{cid}_egress", False)
            backbone = gb.link(ingress, egress, bb_bw, bb_lat, f"{cid}_backbone", "backbone")
        else:
            ingress = egress = gb.node(f"{cid}_switch", False)
            backbone = None
        down = []
        for h, r in zip(hosts, self._radical(el)):
            gb.link(h, ingress, bw, lat, f"{cid}_link_{r}{sfx[0]}", "host")
            down.append(gb.link(egress, h, bw, lat, f"{cid}_link_{r}{sfx[1]}", "host"))
        gb.forward(egress, hosts, down)
        return hosts, ingress, egress, backbone

    def _clusters(self, root, clusters, spec) -> Topology:
        """Flat clusters side by side in a Full zone, joined by ``zoneRoute`` elements.

        SimGrid's route between hosts of two clusters (``NetZoneImpl::get_global_route``) is the
        source's route to its cluster's router (private link up, backbone), the zone route's links,
        and the router's route to the destination (backbone, private link down). Here a packet
        leaves a cluster after its backbone (at the egress switch) and enters the other before its
        backbone (at the ingress switch); a zone route is a chain of links from the one to the other.
        """
        spec = spec or f"simgrid:{self.path}"
        gb = GraphBuilder(spec)
        info = {}
        for el in clusters:
            cid = self.need(el, "id")
            if cid in info:
                self.err(el.line, f"cluster id {cid!r} declared twice, expected unique ids")
            where = f"{self.path}:{el.line}"
            bw = parse_simgrid_bandwidth(self.need(el, "bw"), f"{where}: cluster {cid!r} bw")
            lat = parse_simgrid_time(self.need(el, "lat"), f"{where}: cluster {cid!r} lat")
            sharing = el.attrs.get("sharing_policy", "SPLITDUPLEX")
            if sharing not in _SHARING[:3]:
                self.err(el.line, f"cluster {cid!r} sharing_policy={sharing!r}, expected SHARED, SPLITDUPLEX or "
                                  "FATPIPE")
            if sharing != "SPLITDUPLEX":
                self.warn(el.line, f"cluster {cid!r} sharing_policy={sharing}: topocoll models a full-duplex cable")
            for key in ("loopback_bw", "limiter_link"):
                if key in el.attrs:
                    self.warn(el.line, f"cluster {cid!r} {key} ignored: topocoll has no loopback or limiter links")
            names = [f"{el.attrs.get('prefix', '')}{i}{el.attrs.get('suffix', '')}" for i in self._radical(el)]
            router = (el.attrs.get("router_id")       # SimGrid's default name of a cluster's router
                      or f"{el.attrs.get('prefix', '')}{cid}_router{el.attrs.get('suffix', '')}")
            hosts, ingress, egress, backbone = self._flat_into(gb, el, cid, names, bw, lat, sharing == "SPLITDUPLEX")
            info[cid] = {"el": el, "hosts": hosts, "ingress": ingress, "egress": egress, "backbone": backbone,
                         "router": router}
        links = {}
        for c in root.children:
            if c.tag in ("link", "backbone"):
                lid = self.need(c, "id")
                sharing = c.attrs.get("sharing_policy", "SHARED")
                if sharing not in _SHARING[:3]:
                    self.err(c.line, f"link {lid!r} sharing_policy={sharing!r}, expected SHARED, SPLITDUPLEX or "
                                     "FATPIPE")
                links[lid] = (parse_simgrid_bandwidth(self.need(c, "bandwidth"), f"{self.path}:{c.line}: link {lid!r}"),
                              parse_simgrid_time(c.attrs.get("latency", "0"), f"{self.path}:{c.line}: link {lid!r}"),
                              sharing, c.line)
        # drop the zone-level links and routes the scan set aside: they are read here
        for key in [k for k in self.ignored if isinstance(k, tuple) and k[1] == root.attrs.get("id", "")]:
            del self.ignored[key]
        for tag in ("zoneRoute", "ASroute"):
            self.ignored.pop(tag, None)
        chains = {}
        users = {}
        for zr in root.children:
            if zr.tag not in ("zoneRoute", "ASroute"):
                continue
            src, dst = self.need(zr, "src"), self.need(zr, "dst")
            for z, gw, key in ((src, zr.attrs.get("gw_src"), "gw_src"), (dst, zr.attrs.get("gw_dst"), "gw_dst")):
                if z not in info:
                    self.err(zr.line, f"zoneRoute {src!r} -> {dst!r}: {z!r} is no cluster of zone "
                                      f"{root.attrs.get('id')!r}, expected one of {', '.join(info)}")
                if gw != info[z]["router"]:
                    self.err(zr.line, f"zoneRoute {src!r} -> {dst!r}: {key}={gw!r}, expected the router of cluster "
                                      f"{z!r}, {info[z]['router']!r}")
            hops = []
            for lc in zr.children:
                if lc.tag in _IGNORED:
                    self.ignored.setdefault(lc.tag, []).append(lc.line)
                    continue
                if lc.tag != "link_ctn":
                    self.err(lc.line, f"unknown tag <{lc.tag}> in a zoneRoute, expected <link_ctn id=...>")
                lid = self.need(lc, "id")
                if lid not in links:
                    self.err(lc.line, f"dangling link_ctn id={lid!r} in the zoneRoute from {src!r} to {dst!r}, "
                                      "expected a <link> of this zone")
                direction = lc.attrs.get("direction", "NONE")
                if (links[lid][2] == "SPLITDUPLEX") != (direction in ("UP", "DOWN")):
                    self.err(lc.line, f"link_ctn id={lid!r} direction={direction} on a {links[lid][2]} link, "
                                      "expected UP or DOWN exactly on SPLITDUPLEX links")
                hops.append((lid, direction == "DOWN"))
            pairs = [(src, dst, hops)]
            if zr.attrs.get("symmetrical", "YES").upper() == "YES":
                pairs.append((dst, src, [(lid, not rev) for lid, rev in reversed(hops)]))
            for a, b, hs in pairs:
                if (a, b) in chains:
                    self.err(zr.line, f"zoneRoute from {a!r} to {b!r} given twice, expected one per pair")
                at, chain = info[a]["egress"], []
                for k, (lid, rev) in enumerate(hs):
                    nxt = info[b]["ingress"] if k == len(hs) - 1 else gb.node(f"{a}_to_{b}_junction_{k}", False)
                    bwl, latl, sharing, _line = links[lid]
                    name = f"{lid}_{'DOWN' if rev else 'UP'}" if sharing == "SPLITDUPLEX" else lid
                    chain.append(gb.link(at, nxt, bwl, latl, name, "link"))
                    users.setdefault(name, set()).add((a, b))
                    at = nxt
                chains[(a, b)] = chain
        missing = [(a, b) for a in info for b in info if a != b and (a, b) not in chains]
        if missing:
            a, b = missing[0]
            self.err(root.line, f"zone {root.attrs.get('id')!r}: no zoneRoute from cluster {a!r} to {b!r}, so hosts "
                                f"{gb.names[info[a]['hosts'][0]]!r} and {gb.names[info[b]['hosts'][0]]!r} are "
                                "unroutable; expected a zoneRoute between every two clusters")
        shared = sorted(n for n, pairs in users.items() if len(pairs) > 1 and len({frozenset(p) for p in pairs}) > 1)
        if shared:
            self.warn(root.line, f"{len(shared)} link{'s' if len(shared) > 1 else ''} of zone "
                                 f"{root.attrs.get('id')!r} (e.g. {shared[0]!r}) "
                                 f"carr{'y' if len(shared) > 1 else 'ies'} the routes of several cluster pairs: "
                                 "SimGrid shares one resource, topocoll gives each pair its own copy")
        one_way = [lid for lid, v in links.items() if v[2] == "SHARED" and any(n == lid for n in users)]
        if one_way:
            self.warn(links[one_way[0]][3], f"{len(one_way)} SHARED link{'s' if len(one_way) > 1 else ''} between "
                                            f"clusters (e.g. {one_way[0]!r}): SimGrid shares one resource between "
                                            "both directions, topocoll gives each direction the full bandwidth")
        for lid, v in links.items():
            if not any(n in (lid, f"{lid}_UP", f"{lid}_DOWN") for n in users):
                self.warn(v[3], f"link {lid!r} is on no zoneRoute, left out")
        all_hosts = [h for x in info.values() for h in x["hosts"]]
        for cid, c in info.items():
            if c["backbone"] is not None:      # everything a host sends crosses its backbone first
                gb.forward(c["ingress"], all_hosts, c["backbone"])
            for (a, b), chain in chains.items():
                if a != cid:
                    continue
                nodes = [gb.src[li] for li in chain]
                for node, li in zip(nodes, chain):
                    gb.forward(node, info[b]["hosts"], li)
        return gb.build(spec, {"kind": "simgrid-clusters", "clusters": tuple(info)})

    def _fat_tree(self, el, cid, names, bw, lat, split, text, spec):
        parts = text.split(";")
        if len(parts) != 4:
            self.err(el.line, f"cluster {cid!r}: FAT_TREE topo_parameters={text!r}, expected "
                              "'levels;down1,..;up1,..;count1,..', e.g. '2;4,4;1,2;1,2'")
        levels = self._int_list(el, parts[0], ",", "FAT_TREE levels", "one integer")
        if len(levels) != 1:
            self.err(el.line, f"cluster {cid!r}: FAT_TREE levels {parts[0]!r}, expected one integer")
        (levels,) = levels
        down, up, count = (self._int_list(el, x, ",", "FAT_TREE vector", f"{levels} integers") for x in parts[1:])
        if not len(down) == len(up) == len(count) == levels:
            self.err(el.line, f"cluster {cid!r}: FAT_TREE {text}: vectors of {len(down)}, {len(up)}, {len(count)} "
                              f"values, expected {levels} each")
        if math.prod(down) != len(names):
            self.err(el.line, f"cluster {cid!r}: FAT_TREE {text} has {math.prod(down)} leaves for {len(names)} "
                              "hosts, expected equal")
        ft = _SimgridFatTree(levels, down, up, count)
        if ft.n_nodes > 2_000_000:
            self.err(el.line, f"cluster {cid!r}: FAT_TREE {text} has {ft.n_nodes} nodes, expected at most 2,000,000")
        if ft.n_links > MAX_FAT_TREE_LINKS:
            self.err(el.line, f"cluster {cid!r}: FAT_TREE {text} has {ft.n_links:,} links, expected at most "
                              f"{MAX_FAT_TREE_LINKS:,} (MAX_FAT_TREE_LINKS)")
        if up[0] * count[0] > 1:
            self.warn(el.line, f"cluster {cid!r}: hosts with {up[0] * count[0]} up links: SimGrid picks one by "
                               "destination, topocoll's hosts inject on their first link")
        if any(c > 1 for c in count[1:]):
            self.warn(el.line, f"cluster {cid!r}: parallel cables (count {','.join(map(str, count))}): SimGrid "
                               "picks the down cable by source, topocoll's tables by destination (same switches, "
                               "the cable may differ)")
        return ft.build(cid, names, bw, lat, split, spec)

    # ---- Full / Floyd / Dijkstra
    def _routed_zone(self, zone, kind, spec) -> Topology:
        zid = zone.attrs.get("id", "")
        spec = spec or f"simgrid:{self.path}"
        hosts, routers, links, routes = [], [], {}, []
        for c in zone.children:
            if c.tag == "host":
                hosts.append(c)
                for cc in c.children:
                    if cc.tag not in _IGNORED:
                        self.err(cc.line, f"unknown tag <{cc.tag}> in a host, expected prop")
                    self.ignored.setdefault(cc.tag, []).append(cc.line)
            elif c.tag == "router":
                routers.append(c)
            elif c.tag in ("link", "backbone"):
                lid = self.need(c, "id")
                if lid in links:
                    self.err(c.line, f"link {lid!r} declared twice (first on line {links[lid][3]}), expected unique "
                                     "ids")
                bwt = self.need(c, "bandwidth")
                sharing = c.attrs.get("sharing_policy", "SHARED")
                if sharing not in _SHARING[:3]:
                    self.err(c.line, f"link {lid!r} sharing_policy={sharing!r}, expected SHARED, SPLITDUPLEX or "
                                     "FATPIPE (WIFI and NONLINEAR links are not supported)")
                if "," in bwt:
                    self.err(c.line, f"link {lid!r} bandwidth={bwt!r}: several bandwidths are for WIFI links, "
                                     "expected one value")
                links[lid] = (parse_simgrid_bandwidth(bwt, f"{self.path}:{c.line}: link {lid!r}"),
                              parse_simgrid_time(c.attrs.get("latency", "0"), f"{self.path}:{c.line}: link {lid!r}"),
                              sharing, c.line)
            elif c.tag == "route":
                routes.append(c)
        names = {}
        for h in hosts + routers:
            hid = self.need(h, "id")
            if hid in names:
                self.err(h.line, f"{h.tag} {hid!r} declared twice, expected unique ids")
            names[hid] = h
        parsed, self_routes = [], []
        for r in routes:
            src, dst = self.need(r, "src"), self.need(r, "dst")
            for end in (src, dst):
                if end not in names:
                    self.err(r.line, f"route from {src!r} to {dst!r}: {end!r} is no host or router of zone {zid!r}, "
                                     "expected a declared netpoint")
            hops = []
            for lc in r.children:
                if lc.tag in _IGNORED:
                    self.ignored.setdefault(lc.tag, []).append(lc.line)
                    continue
                if lc.tag != "link_ctn":
                    self.err(lc.line, f"unknown tag <{lc.tag}> in a route, expected <link_ctn id=...>")
                lid = self.need(lc, "id")
                if lid not in links:
                    self.err(lc.line, f"dangling link_ctn id={lid!r} in the route from {src!r} to {dst!r}, expected "
                                      "a <link> declared in this zone")
                direction = lc.attrs.get("direction", "NONE")
                split = links[lid][2] == "SPLITDUPLEX"
                if split and direction not in ("UP", "DOWN"):
                    self.err(lc.line, f"link_ctn id={lid!r} of a SPLITDUPLEX link without direction=UP|DOWN, "
                                      "expected one")
                if not split and direction not in ("NONE",):
                    self.err(lc.line, f"link_ctn id={lid!r} direction={direction} on a {links[lid][2]} link, "
                                      "expected no direction")
                hops.append((lid, direction == "DOWN"))
            if not hops:
                self.err(r.line, f"route from {src!r} to {dst!r} without links, expected <link_ctn> elements")
            sym = r.attrs.get("symmetrical", "YES").upper()
            if sym not in ("YES", "NO"):
                self.err(r.line, f"route symmetrical={r.attrs['symmetrical']!r}, expected YES or NO")
            if src == dst:
                self_routes.append(r.line)
                continue
            parsed.append((src, dst, hops, r.line))
            if sym == "YES":
                parsed.append((dst, src, [(lid, not rev) for lid, rev in reversed(hops)], r.line))
        if self_routes:
            self.warn(self_routes[0], f"{len(self_routes)} route{'s' if len(self_routes) > 1 else ''} from a host to "
                                      "itself (loopback) ignored: topocoll never routes a rank to itself")
        used = {lid for _s, _d, hops, _l in parsed for lid, _r in hops}
        for policy, what in (("SHARED", "SimGrid shares one resource between both directions, topocoll gives each "
                                        "direction the full bandwidth"),
                             ("FATPIPE", "SimGrid gives every flow the full bandwidth, topocoll shares it")):
            some = [lid for lid in links if links[lid][2] == policy and lid in used]
            if some:
                self.warn(links[some[0]][3], f"{len(some)} {policy} link{'s' if len(some) > 1 else ''} (e.g. "
                                             f"{some[0]!r}): {what}")
        host_ids = [self.need(h, "id") for h in hosts]
        if kind == "Full" and len(host_ids) > MAX_FULL_HOSTS:
            self.err(zone.line, f"zone {zid!r} (Full) has {len(host_ids)} hosts, expected at most {MAX_FULL_HOSTS} "
                                "(a route per host pair)")
        if kind == "Full":
            return self._full(zid, host_ids, list(names), links, parsed, spec, zone)
        return self._shortest(zid, kind, host_ids, list(names), links, parsed, spec, zone)

    def _full(self, zid, host_ids, netpoints, links, parsed, spec, zone):
        """Nodes from where consecutive links meet (union-find over link ends)."""
        ends = {}          # symbol -> index; link ends are ('L', lid, 0|1), netpoints ('N', name)
        parent = []

        def sym(key):
            if key not in ends:
                ends[key] = len(parent)
                parent.append(len(parent))
            return ends[key]

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for name in netpoints:
            sym(("N", name))
        traversals = []
        for src, dst, hops, line in parsed:
            at = find(sym(("N", src)))
            trav = []
            for lid, rev in hops:
                a, b = sym(("L", lid, 0)), sym(("L", lid, 1))
                if links[lid][2] != "SPLITDUPLEX":   # one resource: orientation from where we stand
                    rev = find(b) == at and find(a) != at
                tail, head = (b, a) if rev else (a, b)
                parent[find(tail)] = at          # the link starts where the route stands
                at = find(head)
                trav.append((lid, rev))
            parent[find(sym(("N", dst)))] = at   # and the last link ends at the destination
            traversals.append((src, dst, trav, line))
        return self._assemble(zid, host_ids, netpoints, links, traversals, ends, find, spec, zone)

    def _assemble(self, zid, host_ids, netpoints, links, traversals, ends, find, spec, zone):
        cls_of_netpoint = {}
        for name in netpoints:
            r = find(ends[("N", name)])
            if r in cls_of_netpoint:
                other = cls_of_netpoint[r]
                line = next(line for s, d, _t, line in traversals if {s, d} & {name, other})
                self.err(line, f"routes make {other!r} and {name!r} one point (a route's links run from one to "
                               "the other without a link between them), expected distinct netpoints")
            cls_of_netpoint[r] = name
        host_set = set(host_ids)
        # a host some route passes through (SimGrid's links need no host to forward) becomes a switch
        # "<host>_port" with the host on an ideal attachment cable (1 PB/s, no latency): topocoll's
        # endpoints do not forward
        host_cls = {find(ends[("N", h)]): h for h in host_ids}
        transit = set()
        for _s, _d, trav, _l in traversals:
            for lid, rev in trav[:-1]:
                head = find(ends[("L", lid, 0 if rev else 1)])
                if head in host_cls:
                    transit.add(head)
        gb = GraphBuilder(spec)
        node_of = {}
        attach = {}
        for name in host_ids:
            r = find(ends[("N", name)])
            h = gb.node(name, True)
            if r in transit:
                port = gb.node(f"{name}_port", False)
                attach[name] = (gb.link(h, port, ATTACH_BANDWIDTH, 0.0, f"{name}_attach_UP", "attach"),
                                gb.link(port, h, ATTACH_BANDWIDTH, 0.0, f"{name}_attach_DOWN", "attach"))
                node_of[r] = port
            else:
                node_of[r] = h
        for name in netpoints:
            r = find(ends[("N", name)])
            if r not in node_of:
                node_of[r] = gb.node(name, False)
        junction = 0
        used = sorted({lid for _s, _d, trav, _l in traversals for lid, _r in trav}, key=lambda x: links[x][3])
        for lid in links:
            if lid not in set(used):
                self.warn(links[lid][3], f"link {lid!r} is on no route, left out")
        link_id = {}
        for lid in used:
            bw, lat, sharing, line = links[lid]
            a, b = find(ends[("L", lid, 0)]), find(ends[("L", lid, 1)])
            if a == b:
                self.err(line, f"link {lid!r}: the routes make both its ends one point, expected a link between "
                               "two nodes")
            for r in (a, b):
                if r not in node_of:
                    node_of[r] = gb.node(f"{zid}_junction_{junction}", False)
                    junction += 1
            names = (f"{lid}_UP", f"{lid}_DOWN") if sharing == "SPLITDUPLEX" else (lid, lid)
            link_id[(lid, False)] = gb.link(node_of[a], node_of[b], bw, lat, names[0], "link")
            link_id[(lid, True)] = gb.link(node_of[b], node_of[a], bw, lat, names[1], "link")
        pair_routes = {}
        for src, dst, trav, line in traversals:
            if src in host_set and dst in host_set and src != dst:
                hops = [link_id[t] for t in trav]
                if src in attach:
                    hops.insert(0, attach[src][0])
                if dst in attach:
                    hops.append(attach[dst][1])
                pair_routes.setdefault((src, dst), (hops, line))
        if attach:
            self.params_extra["attached_hosts"] = tuple(attach)
        return self._tables(gb, zid, host_ids, pair_routes, zone, kind="Full")

    def _tables(self, gb, zid, host_ids, pair_routes, zone, kind):
        missing = [(a, b) for a in host_ids for b in host_ids if a != b and (a, b) not in pair_routes]
        if missing:
            a, b = missing[0]
            self.err(zone.line, f"zone {zid!r} ({kind}): no route from host {a!r} to host {b!r} ({len(missing)} "
                                "host pairs unroutable), expected a route between every two hosts")
        n_ep = len(host_ids)
        first = {}
        entries = {}
        conflicts = []
        for (s, d), (route, line) in pair_routes.items():
            hs, hd = gb.index[s], gb.index[d]
            for k, li in enumerate(route):
                u = gb.src[li]
                if k == 0:
                    if u != hs:
                        self.err(line, f"route from {s!r} to {d!r} does not start at {s!r}, expected its first link "
                                       "to leave the source")
                    first.setdefault(s, (li, line))
                    if first[s][0] != li:
                        conflicts.append((s, d, line, f"host {s!r} injects on another link than on line "
                                                        f"{first[s][1]}"))
                    continue
                if gb.is_endpoint[u]:
                    self.err(line, f"route from {s!r} to {d!r} passes through host {gb.names[u]!r}, expected "
                                   "routes through routers only (topocoll's endpoints do not forward)")
                old = entries.setdefault((u, hd), (li, line))
                if old[0] != li:
                    conflicts.append((s, d, line, f"at {gb.names[u]} towards {d!r} it takes another link than the "
                                                  f"route on line {old[1]}"))
        if conflicts:
            s, d, line, why = conflicts[0]
            self.warn(line, f"zone {zid!r}: {len(conflicts)} hop{'s' if len(conflicts) > 1 else ''} of SimGrid's "
                            "routes cannot be followed by forwarding tables per destination, topocoll routes them "
                            f"as the first route does (e.g. route {s!r} -> {d!r}: {why})")
        for li, _line in first.values():      # a host injects on its first link: the one its routes start on
            gb.inject(li)
        if entries:
            u, d = zip(*entries)
            gb.forward(list(u), list(d), [v[0] for v in entries.values()])
        return gb.build(gb.what, {"kind": f"simgrid-{kind.lower()}", "zone": zid, **self.params_extra})

    def _shortest(self, zid, kind, host_ids, netpoints, links, parsed, spec, zone):
        """Floyd / Dijkstra: routes are edges; SimGrid's shortest paths (cost = links per edge)."""
        if len(netpoints) > MAX_ROUTED_NETPOINTS:
            self.err(zone.line, f"zone {zid!r} ({kind}) has {len(netpoints)} netpoints, expected at most "
                                f"{MAX_ROUTED_NETPOINTS}")
        idx = {n: i for i, n in enumerate(netpoints)}
        n = len(netpoints)
        edge = {}
        for src, dst, hops, line in parsed:
            key = (idx[src], idx[dst])
            if key in edge:
                self.err(line, f"route from {src!r} to {dst!r} given twice (line {edge[key][1]}), expected one route "
                               "per pair")
            edge[key] = (hops, line)
        # topocoll nodes: netpoints plus one junction between consecutive links of a multi-link edge
        gb = GraphBuilder(spec)
        node = {}
        for name in host_ids:
            node[name] = gb.node(name, True)
        for name in netpoints:
            if name not in node:
                node[name] = gb.node(name, False)
        edge_links = {}
        junction = 0
        for (a, b), (hops, line) in edge.items():
            at = node[netpoints[a]]
            chain = []
            for k, (lid, rev) in enumerate(hops):
                bw, lat, sharing, _l = links[lid]
                if k == len(hops) - 1:
                    nxt = node[netpoints[b]]
                else:
                    nxt = gb.node(f"{zid}_junction_{junction}", False)
                    junction += 1
                name = f"{lid}_{'DOWN' if rev else 'UP'}" if sharing == "SPLITDUPLEX" else lid
                chain.append(gb.link(at, nxt, bw, lat, name, "link"))
                at = nxt
            edge_links[(a, b)] = chain
        if kind == "Floyd":
            pred = _floyd(n, {k: len(v[0]) for k, v in edge.items()})
        else:
            pred = _dijkstra(n, {k: len(v[0]) for k, v in edge.items()}, [idx[h] for h in host_ids])
        pair_routes = {}
        for s in host_ids:
            for d in host_ids:
                if s == d:
                    continue
                si, cur = idx[s], idx[d]
                hops = []
                for _ in range(n):
                    p = pred[si][cur] if isinstance(pred, dict) else pred[si, cur]
                    if p < 0:
                        break
                    hops.append((p, cur))
                    cur = p
                    if cur == si:
                        break
                if cur != si or not hops:
                    continue
                route = [li for a, b in reversed(hops) for li in edge_links[(a, b)]]
                pair_routes[(s, d)] = (route, edge[hops[-1]][1])
        return self._tables(gb, zid, host_ids, pair_routes, zone, kind=kind)


def _torus_link_names(t, cid, split):
    """SimGrid's names of a TORUS cluster's links: node ``a`` makes ``{id}_link_from_{a}_to_{b}`` towards its
    + neighbour ``b`` in each dimension (``TorusZone::create_torus_links``), ``_UP`` traversed a -> b,
    ``_DOWN`` b -> a. In a dimension of 2 both nodes make a cable to the other; SimGrid's routes
    use the one of the node at coordinate 0 both ways (checked against SimGrid 3.32), as topocoll's
    single cable."""
    k = t.params["k"]
    strides = np.cumprod([1, *k[:-1]])
    out = []
    for a, b in zip(t.src.tolist(), t.dst.tolist()):
        name = None
        for kd, st in zip(k, strides.tolist()):
            ca, cb = (a // st) % kd, (b // st) % kd
            if ca == cb:
                continue
            if (ca + 1) % kd == cb and not (kd == 2 and ca == 1):   # a ring of 2: routes use node 0's cable
                name = f"{cid}_link_from_{a}_to_{b}" + ("_UP" if split else "")
            else:
                name = f"{cid}_link_from_{b}_to_{a}" + ("_DOWN" if split else "")
        out.append(name)
    return tuple(out)


def _floyd(n, cost):
    """SimGrid's FloydZone: predecessor table after Floyd-Warshall, updating on strictly better costs."""
    inf = np.inf
    c = np.full((n, n), inf)
    pred = np.full((n, n), -1, dtype=np.int64)
    for (a, b), w in cost.items():
        c[a, b] = w
        pred[a, b] = a
    for k in range(n):
        via = c[:, k:k + 1] + c[k:k + 1, :]
        better = (c[:, k:k + 1] < inf) & (c[k:k + 1, :] < inf) & ((c == inf) | (via < c))
        c = np.where(better, via, c)
        pred = np.where(better, np.broadcast_to(pred[k:k + 1, :], pred.shape), pred)
    return pred


def _dijkstra(n, cost, sources):
    """SimGrid's DijkstraZone: from each source, relax edges in order of the graph's adjacency; a node's
    predecessor changes only on a strictly shorter path."""
    import heapq
    adj = [[] for _ in range(n)]
    for (a, b), w in cost.items():
        adj[a].append((b, w))
    out = {}
    for s in sources:
        dist = [math.inf] * n
        pred = [-1] * n
        dist[s] = 0
        heap = [(0, s)]
        while heap:
            du, u = heapq.heappop(heap)
            if du > dist[u]:
                continue
            for v, w in adj[u]:
                if du + w < dist[v]:
                    dist[v] = du + w
                    pred[v] = u
                    heapq.heappush(heap, (dist[v], v))
        out[s] = pred
    return out


class _SimgridFatTree:
    """SimGrid 3.32's ``FatTreeZone``: nodes, labels, links and routing, transcribed."""

    def __init__(self, levels, down, up, count):
        self.levels, self.down, self.up, self.count = levels, down, up, count
        self.by_level = [math.prod(down)]
        for i in range(levels):
            self.by_level.append(math.prod(up[:i + 1]) * math.prod(down[i + 1:]))
        self.n_nodes = sum(self.by_level)
        # each node below the top has up[l] parents, count[l] cables to each, a link each way
        self.n_links = 2 * sum(self.by_level[i] * up[i] * count[i] for i in range(levels))

    def build(self, cid, names, bw, lat, split, spec) -> Topology:
        L, down, up, count = self.levels, self.down, self.up, self.count
        n = len(names)
        # nodes in SimGrid's order: hosts (level 0, position = rank), then switches level by level;
        # a switch's id counts down from 2 * n - 1 (FatTreeZone::generate_switches)
        level, position, ident = [], [], []
        for j in range(n):
            level.append(0), position.append(j), ident.append(j)
        k = 2 * n
        for i in range(L):
            for j in range(self.by_level[i + 1]):
                k -= 1
                level.append(i + 1), position.append(j), ident.append(k)
        labels = []
        for i in range(L + 1):
            maxl = [down[j] if j + 1 > i else up[j] for j in range(L)]
            cur = [0] * L
            for _ in range(self.by_level[i]):
                labels.append(tuple(cur))
                pos = 0
                while pos < L:
                    cur[pos] += 1
                    if cur[pos] >= maxl[pos]:
                        cur[pos] = 0
                        pos += 1
                    else:
                        break
        start = np.cumsum([0] + self.by_level)
        gb = GraphBuilder(spec)
        node = [gb.node(names[j], True) for j in range(n)]
        node += [gb.node(f"{cid}_switch_{ident[v]}", False) for v in range(n, len(level))]
        parents = [[None] * (up[level[v]] * count[level[v]]) if level[v] < L else [] for v in range(len(level))]
        children = [[None] * (down[level[v] - 1] * count[level[v] - 1]) if level[v] > 0 else []
                    for v in range(len(level))]
        uid = 0
        sfx = ("_UP", "_DOWN") if split else ("", "")
        by_label = [{labels[v]: v for v in range(start[lv], start[lv + 1])} for lv in range(L + 1)]
        for v in range(len(level)):
            lv = level[v]
            if lv == L:
                continue
            # related parents (FatTreeZone::are_related): the same label but at index lv, in position order
            related = sorted(by_label[lv + 1][labels[v][:lv] + (j,) + labels[v][lv + 1:]] for j in range(up[lv]))
            for pidx in related:
                for j in range(count[lv]):
                    pport = labels[v][lv] + j * down[lv]
                    cport = labels[pidx][lv] + j * up[lv]
                    name = f"link_from_{ident[v]}_{ident[pidx]}_{uid}"
                    uid += 1
                    upl = gb.link(node[v], node[pidx], bw, lat, name + sfx[0], "host" if lv == 0 else f"level{lv + 1}")
                    dnl = gb.link(node[pidx], node[v], bw, lat, name + sfx[1], "host" if lv == 0 else f"level{lv + 1}")
                    children[pidx][pport] = (dnl, v)
                    parents[v][cport] = (upl, pidx)

        # forwarding per (switch, destination), vectorised over destinations. A destination in the
        # switch's subtree (labels equal from the switch's level up) goes down to child port
        # label[level - 1] (SimGrid: the first port >= source position mod count times down[level-1]
        # congruent to it; by destination, as if from position 0); any other goes up to parent port
        # position / prod(up * count below) mod up * count (FatTreeZone::get_local_route).
        host_labels = np.array(labels[:n], dtype=np.int64).reshape(n, L)
        pos = np.array(position[:n], dtype=np.int64)
        fwd_u, fwd_d, fwd_l = [], [], []
        for v in range(n, len(level)):
            lv = level[v]
            inside = np.all(host_labels[:, lv:] == np.array(labels[v][lv:], dtype=np.int64), axis=1)
            link = np.full(n, -1, dtype=np.int64)
            kids = np.array([c[0] if c else -1 for c in children[v]], dtype=np.int64)
            link[inside] = kids[host_labels[inside, lv - 1]]
            if lv < L:
                ups = np.array([c[0] if c else -1 for c in parents[v]], dtype=np.int64)
                below = math.prod(up[i] * count[i] for i in range(lv))
                link[~inside] = ups[(pos[~inside] // below) % (up[lv] * count[lv])]
            fwd_u.append(np.full(n, node[v]))
            fwd_d.append(np.array(node[:n]))
            fwd_l.append(link)
        fwd_u, fwd_d, fwd_l = np.concatenate(fwd_u), np.concatenate(fwd_d), np.concatenate(fwd_l)
        gb.forward(fwd_u, fwd_d, fwd_l)
        return gb.build(spec, {"kind": "simgrid-fat-tree", "cluster": cid, "levels": L, "down": tuple(down),
                               "up": tuple(up), "count": tuple(count)})


def read_simgrid(path, *, spec: str | None = None, strict: bool = False) -> Topology:
    """Read a SimGrid platform file into a :class:`~topocoll.topology.network.Topology` (family
    ``graph``, or ``torus`` for a ``TORUS`` cluster, routed ``dor:tie=simgrid``).

    Parameters
    ----------
    path : str or Path
    spec : str, optional
        The spec string to record (``simgrid:PATH`` by default).
    strict : bool
        Raise the first warning (see the module docstring) as a :class:`SpecError`.

    Raises
    ------
    SpecError
        ``FILE:LINE: what, expected ...`` for anything the reader cannot take.
    """
    return _Reader(Path(path), strict).read(spec)


# --------------------------------------------------------------------------- out

#: CPU seconds per route link written and per route (measured: ``topo aries:2 --export-simgrid``, 589,056
#: routes over 3,039,744 links, 2.2 s user + system, 7–18 s wall at load average 11–14 on 2 cores)
EXPORT_S_PER_HOP = 6e-7
EXPORT_S_PER_ROUTE = 6e-7
#: bytes of XML per route link (aries:2: 217 MB for 3,039,744 links)
EXPORT_BYTES_PER_HOP = 72


def _xml_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text)


def export_seconds(routes: int, hops: int) -> float:
    """Expected wall-clock seconds to write ``routes`` routes of ``hops`` links in all: CPU time at
    :data:`EXPORT_S_PER_HOP` and :data:`EXPORT_S_PER_ROUTE`, on this machine as loaded now."""
    from ...progress import wall_seconds
    return wall_seconds(EXPORT_S_PER_HOP * hops + EXPORT_S_PER_ROUTE * routes)


def check_export(topology: Topology, router=None):
    """The router of an export of ``topology``, refused in one line (before anything is written)
    where the export cannot be made: more than :data:`MAX_EXPORT_ENDPOINTS` endpoints, a per-packet
    or multipath routing."""
    from ..routing import make_router
    t, n = topology, topology.n_endpoints
    if n > MAX_EXPORT_ENDPOINTS:
        raise SpecError(f"--export-simgrid: {t.spec} has {n} endpoints, expected at most {MAX_EXPORT_ENDPOINTS} "
                        f"(a Full zone holds one route per ordered host pair: {n * (n - 1):,})")
    r = router if router is not None else make_router(t)
    r.require_static("--export-simgrid")
    if r.multipath:
        raise SpecError(f"--export-simgrid: routing {r.name} splits flows over several paths, expected a single-path "
                        "routing (SimGrid routes are one link list per pair)")
    return r


def write_simgrid(topology: Topology, path, *, router=None, progress: bool = False) -> dict:
    """Write ``topology`` with ``router``'s routes (the family default if None) as a SimGrid 3.32
    platform: one ``Full`` zone, a host per endpoint (1 Gf), a ``SPLITDUPLEX`` link per cable (a
    directed link and its reverse; a link without reverse is a ``SHARED`` link used one way) and one
    route per ordered host pair. Returns counts (hosts, cables, routes).

    With ``progress`` (the CLI): once the routes are known, a line on stderr with their number and
    the expected time and file size when that passes :data:`topocoll.progress.SAY_FIRST_S`
    (:func:`export_seconds`), and a progress bar on a terminal.

    Raises
    ------
    SpecError
        More than :data:`MAX_EXPORT_ENDPOINTS` endpoints, a multipath or per-packet routing, or an
        unwritable path.
    """
    from ..routing import route
    t = topology
    n = t.n_endpoints
    r = check_export(t, router)
    hosts = [_xml_id(x) for x in t.names[:n]]
    if len(set(hosts)) != n:   # multi-rail hosts share a name: number the adapters
        hosts = [f"{h}_e{i}" for i, h in enumerate(hosts)]
    src, dst = np.divmod(np.arange(n * n, dtype=np.int64), n)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    indptr, links = route(r, src, dst) if len(src) else (np.zeros(1, np.int64), np.zeros(0, np.uint32))
    meter = None
    if progress:
        from ...progress import bar, say_first
        say_first(f"--export-simgrid {t.spec}: {n} hosts, {len(src):,} routes over {len(links):,} links, about "
                  f"{EXPORT_BYTES_PER_HOP * len(links) / 1e6:.0f} MB", export_seconds(len(src), len(links)))
        meter = bar(len(src), "--export-simgrid", unit="route")
    # a directed link and its reverse are one SPLITDUPLEX cable (<id>_UP one way, <id>_DOWN back);
    # a link without a reverse is a SHARED link used in one direction only
    given = t.params.get("link_names")
    ref, cables = {}, []
    partner = {}
    for i, (a, b) in enumerate(zip(t.src.tolist(), t.dst.tolist())):
        rev = partner.get((b, a))
        if rev:
            j = rev.pop(0)
            cables[ref[j][0]] = (j, i)
            ref[j] = (ref[j][0], "_UP")
            ref[i] = (ref[j][0], "_DOWN")
        else:
            ref[i] = (len(cables), "")
            cables.append((i, None))
            partner.setdefault((a, b), []).append(i)
    cable_id = []
    for k, (i, j) in enumerate(cables):
        base = given[i] if given is not None and given[i] else f"{t.names[t.src[i]]}-{t.names[t.dst[i]]}"
        cable_id.append(_xml_id(f"c{k}_{re.sub(r'_(UP|DOWN)$', '', base)}"))
    lines = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">',
             f"  <!-- topocoll: {t.spec}, routing {r.name}; {n} hosts, {len(cables)} cables, {len(src)} routes -->",
             '  <zone id="topocoll" routing="Full">']
    lines += [f'    <host id="{h}" speed="1Gf"/>' for h in hosts]
    for k, (i, j) in enumerate(cables):
        policy = "SPLITDUPLEX" if j is not None else "SHARED"
        if j is not None and (t.bandwidth[i] != t.bandwidth[j] or t.latency[i] != t.latency[j]):
            raise SpecError(f"--export-simgrid: link {i} and its reverse {j} differ in bandwidth or latency, "
                            "expected symmetric cables (a SPLITDUPLEX link has one bandwidth)")
        lines.append(f'    <link id="{cable_id[k]}" bandwidth="{float(t.bandwidth[i])!r}Bps" '
                     f'latency="{float(t.latency[i])!r}s" sharing_policy="{policy}"/>')

    def ctn(i):
        k, sfx = ref[i]
        return f'<link_ctn id="{cable_id[k]}"{f" direction={chr(34)}{sfx[1:]}{chr(34)}" if sfx else ""}/>'

    for k in range(len(src)):
        hops = links[indptr[k]:indptr[k + 1]].tolist()
        body = "".join(ctn(i) for i in hops)
        lines.append(f'    <route src="{hosts[src[k]]}" dst="{hosts[dst[k]]}" symmetrical="NO">{body}</route>')
        if meter is not None and k % 4096 == 4095:
            meter.update(4096)
    if meter is not None:
        meter.close()
    lines += ["  </zone>", "</platform>", ""]
    write_text(path, "\n".join(lines), option="--export-simgrid")
    return {"hosts": n, "cables": len(cables), "routes": int(len(src)), "path": str(path)}
