"""Read ``ibnetdiscover`` output (plain and ``-p`` / ports form) into a
:class:`~topocoll.topology.network.Topology`.

Plain form (rdma-core ``ibnetdiscover(8)``)::

    Switch  24 "S-005442ba00003080"   # "ISR9024 Voltaire" base port 0 lid 6 lmc 0
    [22]    "H-0008f10403961354"[1](8f10403961355)   # "MT23108 ..." lid 4 4xSDR
    Ca      2 "H-0008f10403960984"    # "MT23108 InfiniHost Mellanox Technologies"
    [1](8f10403960985)  "S-0008f10400410015"[6]  # lid 16 lmc 1 "SW-6IB4 Voltaire" lid 3 4xSDR

Ports form (``ibnetdiscover -p``)::

    SW   142 36 0x0008f10500108c9e 4x QDR - CA   139  1 0x0002c903004e26b1 ( 'Voltaire ...' - 'manumanu HCA-1' )
    CA   139  1 0x0002c903004e26b1 4x QDR - SW   142 36 0x0008f10500108c9e ( ... )

Every port line names a cable end; both ends must agree. Endpoints are the
channel adapters (``Ca``/``CA``) in order of appearance, then the switches.
In the ports form an adapter is identified by its port GUID. Routers
(``Rt``/``RT``) are reported as unsupported; any other line is an error
naming the file, line and what was expected.

Messy real data, handled explicitly:

- **SHARP aggregation nodes.** A Quantum (HDR/NDR) switch exposes its
  in-network aggregation node as a ``Ca`` whose node description contains
  ``Aggregation Node`` (``"Mellanox Technologies Aggregation Node"``), cabled
  to a switch port of its own. They are not compute endpoints: by default
  they and their cables are set aside, listed in
  ``topology.params["aggregation_nodes"]`` (guid, name, lid, attached switch
  node and port), and left out of endpoints, orders, patterns, diameter and
  bisection figures. ``aggregation_nodes="endpoints"`` keeps them as
  endpoints (the behaviour of a plain graph reader).
- **Link speed.** Every port line must carry the cable's width and speed:
  widths ``1x 2x 4x 8x 12x``, speeds ``SDR DDR QDR FDR10 FDR EDR HDR NDR XDR``
  (:data:`LANE_RATE`); anything else, ibnetdiscover's own ``??``/``???`` for
  an unknown value included, is rejected with ``FILE:LINE``.
- **Node kinds.** ibnetdiscover names switches ``S-<guid>`` and adapters
  ``H-<guid>``: a ``Switch`` with an ``H-`` id, a ``Ca`` with an ``S-`` id, or
  (ports form) one GUID given as both ``SW`` and ``CA`` is rejected.
- **Multi-rail hosts.** Several adapters of one host (``"node01 mlx5_0"``,
  ``"node01 mlx5_1"``) are separate endpoints sharing the host name;
  ``topology.params["adapters"]`` holds each endpoint's adapter name, which
  orders a host's rails (see :func:`~topocoll.topology.order.node_order`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from topocoll.errors import ParseError
from topocoll.inputs import TABLE_BYTES, read_bytes, read_text

from ..network import Topology, make_topology

__all__ = ["parse_ibnetdiscover", "link_bandwidth", "LANE_RATE", "LINK_WIDTHS"]

#: data rate per lane in bit/s after line coding, every speed InfiniBand defines up to XDR:
#: SDR/DDR/QDR signal at 2.5/5/10 Gbaud with 8b/10b; FDR10 at 10.3125 and FDR at 14.0625
#: Gbaud with 64b/66b (FDR: 13.64 Gb/s); EDR 25, HDR 50 (PAM4), NDR 100, XDR 200 Gb/s of data
#: per lane (nominal, before FEC).
LANE_RATE = {"SDR": 2e9, "DDR": 4e9, "QDR": 8e9, "FDR10": 10e9, "FDR": 13.64e9,
             "EDR": 25e9, "HDR": 50e9, "NDR": 100e9, "XDR": 200e9}
#: lanes per link (PortInfo LinkWidthActive: 1x, 2x, 4x, 8x, 12x)
LINK_WIDTHS = (1, 2, 4, 8, 12)
IB_LATENCY = 1e-6
#: node description of a SHARP in-network aggregation node
_AGGREGATION = re.compile(r"aggregation node", re.IGNORECASE)
_AGGREGATION_MODES = ("set-aside", "endpoints")


def link_bandwidth(width: int, speed: str) -> float:
    """Data bandwidth in B/s of an IB link, e.g. ``(4, 'QDR')`` -> 4e9, ``(4, 'NDR')`` -> 5e10.

    Raises
    ------
    ValueError
        A width or speed InfiniBand does not define.
    """
    if width not in LINK_WIDTHS or speed not in LANE_RATE:
        raise ValueError(f"link {width}x{speed}: expected width {', '.join(f'{w}x' for w in LINK_WIDTHS)} "
                         f"and speed {', '.join(LANE_RATE)}")
    return width * LANE_RATE[speed] / 8


def _expected_speed():
    return (f"expected WIDTHxSPEED with width {'/'.join(f'{w}x' for w in LINK_WIDTHS)} "
            f"and speed {'/'.join(LANE_RATE)}")


class _Fabric:
    def __init__(self, path):
        self.path = path
        self.nodes = {}   # id -> dict(kind, desc, lid, line, order)
        self.ports = {}   # (id, port) -> (rid, rport, bw, line)

    def err(self, line, msg):
        raise ParseError(f"{self.path}:{line}: {msg}")

    def node(self, line, nid, kind, desc="", lid=None):
        # ibnetdiscover names switches S-<guid>, adapters (channel adapters) H-<guid>
        want = {"S-": "SW", "H-": "CA"}.get(nid[:2].upper())
        if want is not None and want != kind:
            what = {"SW": "Switch", "CA": "Ca"}
            self.err(line, f"{what[kind]} with id {nid!r}: ibnetdiscover names switches 'S-<guid>' and "
                           f"adapters 'H-<guid>', expected a {what[want]} for this id")
        if nid in self.nodes:
            old = self.nodes[nid]
            if old["kind"] != kind:
                self.err(line, f"node {nid} declared as {kind}, earlier as {old['kind']} (line {old['line']})")
            if lid is not None and old["lid"] is None:
                old["lid"] = lid
            return
        self.nodes[nid] = {"kind": kind, "desc": desc, "lid": lid, "line": line, "order": len(self.nodes)}

    def port(self, line, nid, p, rid, rp, bw):
        key = (nid, p)
        if key in self.ports and self.ports[key][:2] != (rid, rp):
            self.err(line, f"port {nid}[{p}] connected twice: to {rid}[{rp}] and {self.ports[key][0]}[{self.ports[key][1]}]")
        self.ports[key] = (rid, rp, bw, line)

    def build(self, spec, names_map, require_declared=True, aggregation_nodes="set-aside") -> Topology:
        for (nid, p), (rid, rp, _bw, line) in self.ports.items():
            if rid not in self.nodes:
                other = {"S-": "H-", "H-": "S-"}.get(rid[:2].upper(), "?") + rid[2:]
                if other in self.nodes:
                    kinds = {"S-": "a switch", "H-": "an adapter"}
                    self.err(line, f"port {nid}[{p}] connects to {rid}, {kinds[rid[:2].upper()]} id, but that GUID is "
                                   f"declared as {kinds[other[:2].upper()]} {other} (line {self.nodes[other]['line']}), "
                                   "expected the same node kind at both ends of a reference")
                if require_declared:
                    self.err(line, f"dangling port: {nid}[{p}] connects to {rid}[{rp}], which is never declared")
                continue
            back = self.ports.get((rid, rp))
            if back is None:
                self.err(line, f"dangling port: {nid}[{p}] connects to {rid}[{rp}], but {rid} lists no port {rp}")
            if back[:2] != (nid, p):
                self.err(line, f"inconsistent cable: {nid}[{p}] -> {rid}[{rp}] but {rid}[{rp}] -> {back[0]}[{back[1]}]")
        if not self.nodes:
            raise ParseError(f"{self.path}:1: no Switch or Ca node found, expected ibnetdiscover output")
        cas = sorted((n for n, v in self.nodes.items() if v["kind"] == "CA"), key=lambda n: self.nodes[n]["order"])
        sws = sorted((n for n, v in self.nodes.items() if v["kind"] == "SW"), key=lambda n: self.nodes[n]["order"])
        aggs = []
        if aggregation_nodes == "set-aside":   # SHARP aggregation nodes: a kind of their own
            aggs = [n for n in cas if _AGGREGATION.search(self.nodes[n]["desc"])]
            cas = [n for n in cas if not _AGGREGATION.search(self.nodes[n]["desc"])]
        index = {n: i for i, n in enumerate(cas + sws)}
        # a cable runs at the slower of the speeds its two ends report
        rows = sorted((index[a], p, index[b], min(bw, self.ports.get((b, rp), (0, 0, bw))[2]))
                      for (a, p), (b, rp, bw, _l) in self.ports.items() if a in index and b in index)
        src = np.array([r[0] for r in rows], dtype=np.uint32)
        dst = np.array([r[2] for r in rows], dtype=np.uint32)
        port = np.array([r[1] for r in rows], dtype=np.int32)
        bw = np.array([r[3] for r in rows], dtype=np.float64)
        names, guids, lids, descs = [], [], [], []
        for n in cas + sws:
            info = self.nodes[n]
            guids.append(n)
            lids.append(info["lid"] if info["lid"] is not None else -1)
            descs.append(info["desc"])
            names.append(names_map.get(n) or _hostname(info["desc"]) or n)
        params = {"path": str(self.path), "guids": tuple(guids), "lids": tuple(lids),
                  "descriptions": tuple(descs),
                  "adapters": tuple(_adapter(self.nodes[n]["desc"]) for n in cas),
                  "aggregation_nodes": self._aggregation_records(aggs, index)}
        return make_topology(spec, "ibnet", len(cas), len(sws), src, dst, bw, IB_LATENCY,
                             params=params, names=names, port=port)

    def _aggregation_records(self, aggs, index):
        """Per aggregation node: guid, name, lid, and the switch (node id, guid,
        description) and port it hangs on (None where it is not cabled)."""
        attached = {a: [] for a in aggs}
        for (a, p), (rid, rp, _bw, _l) in self.ports.items():
            if a in attached and rid in index and self.nodes[rid]["kind"] == "SW":
                attached[a].append((p, rid, rp))
        out = []
        for a in aggs:
            info = self.nodes[a]
            rec = {"guid": a, "name": info["desc"], "lid": info["lid"] if info["lid"] is not None else -1,
                   "switch": None, "switch_guid": None, "switch_name": None, "port": None}
            if attached[a]:
                _p, rid, rp = min(attached[a])
                rec.update(switch=index[rid], switch_guid=rid, switch_name=self.nodes[rid]["desc"], port=rp)
            out.append(rec)
        return tuple(out)


def _adapter(desc):
    """``'stage114 mlx4_0'`` -> ``'mlx4_0'``; ``''`` where the description names no adapter."""
    parts = desc.split()
    if len(parts) == 2 and re.fullmatch(r"mlx\d+_\d+|HCA-\d+|hfi\d+_\d+|qib\d+", parts[1]):
        return parts[1]
    return ""


def _hostname(desc):
    """``'stage114 mlx4_0'`` -> ``'stage114'``; generic adapter names -> None."""
    parts = desc.split()
    if len(parts) == 2 and re.fullmatch(r"mlx\d+_\d+|HCA-\d+|hfi\d+_\d+|qib\d+", parts[1]):
        return parts[0]
    return None


_NODE = re.compile(r'^(\w+)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"([^"]*)"(.*))?$')
_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s*(#.*)?$')
_WIDTH_SPEED = re.compile(r"^(\d+)x([A-Z0-9]+)$")
_LID = re.compile(r"\blid (\d+)")
_SKIP = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=|^Non-Chassis Nodes$|^Chassis ")
_PLINE = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+(\d+)x\s+(\S+)\s+"
    r"(?:-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)|'(.*)')\s*$")


def _plain(fab, lines):
    current = None
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#") or _SKIP.search(line):
            continue
        m = _NODE.match(line)
        if m and not line.startswith("["):
            kind, nports, nid, desc, rest = m.groups()
            if kind == "Rt":
                fab.err(no, f"node type 'Rt' (IB router {nid}) is not supported, expected Switch or Ca")
            if kind not in ("Switch", "Ca"):
                fab.err(no, f"unknown node type {kind!r}, expected Switch or Ca")
            lid = _LID.search(rest or "")
            fab.node(no, nid, "SW" if kind == "Switch" else "CA", desc or "",
                     int(lid.group(1)) if (lid and kind == "Switch") else None)
            current = (nid, kind, int(nports))
            continue
        m = _PORT.match(line)
        if m:
            if current is None:
                fab.err(no, "port line before any Switch or Ca header")
            p, _g, rid, rp, _rg, comment = m.groups()
            p, rp = int(p), int(rp)
            if not 1 <= p <= current[2] and not (current[1] == "Switch" and p == 0):
                fab.err(no, f"port {p} of {current[0]} outside 1..{current[2]}")
            comment = comment or ""
            bw = _plain_speed(fab, no, comment)
            if current[1] == "Ca":
                lid = _LID.search(comment)
                if lid and fab.nodes[current[0]]["lid"] is None:
                    fab.nodes[current[0]]["lid"] = int(lid.group(1))
            fab.port(no, current[0], p, rid, rp, bw)
            continue
        fab.err(no, f"cannot parse {line[:60]!r}, expected a node header (Switch/Ca N \"id\"), "
                    "a port line ([p] \"id\"[q]) or vendid=/devid=/...guid= lines")


def _plain_speed(fab, no, comment):
    """Bandwidth of the ``4xQDR`` token that ends a plain port line's comment:
    ``# "remote description" lid 3 4xQDR`` (``-f`` may append ``s= w= e=``)."""
    tail = comment.rsplit('"', 1)[-1] if '"' in comment else comment.lstrip("#")
    tokens = [t for t in tail.split() if not re.fullmatch(r"[swe]=\d+", t)]
    for i in range(len(tokens) - 1):          # the token after "lid N"
        if tokens[i] == "lid" and tokens[i + 1].isdigit():
            tokens = tokens[i + 2:]
            break
    if not tokens:
        fab.err(no, f"no link width and speed at the end of the port line, {_expected_speed()}, e.g. 4xQDR")
    m = _WIDTH_SPEED.match(tokens[0])
    if not m or int(m.group(1)) not in LINK_WIDTHS or m.group(2) not in LANE_RATE:
        fab.err(no, f"link width and speed {tokens[0]!r}, {_expected_speed()}")
    return link_bandwidth(int(m.group(1)), m.group(2))


def _ports_form(fab, lines):
    kinds = {}
    guid_kind = {}   # guid -> (SW|CA, line): one GUID is one node kind

    def declare(no, kind, guid):
        old = guid_kind.setdefault(guid, (kind, no))
        if old[0] != kind:
            fab.err(no, f"GUID 0x{guid} given as {kind}, but as {old[0]} on line {old[1]}, "
                        "expected one node kind per GUID")

    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("DR path"):
            continue
        m = _PLINE.match(line)
        if not m:
            head = line.split()[0]
            if head not in ("SW", "CA", "RT") or len(head) != 2:
                fab.err(no, f"unknown node type {head!r}, expected SW or CA lines of ibnetdiscover -p")
            fab.err(no, f"cannot parse {line[:60]!r}, expected 'SW|CA lid port 0xguid 4x SPEED - SW|CA lid port 0xguid ( ... )'")
        (kind, lid, p, guid, width, speed, rkind, rlid, rp, rguid, desc, rdesc, alone) = m.groups()
        for k in (kind, rkind):
            if k == "RT":
                fab.err(no, "node type 'RT' (IB router) is not supported, expected SW or CA")
        nid = f"{'S' if kind == 'SW' else 'H'}-{guid.lower()}"
        declare(no, kind, guid.lower())
        fab.node(no, nid, kind, desc if desc is not None else (alone or ""), int(lid))
        if rkind is None:
            continue  # unconnected port
        if speed not in LANE_RATE:
            fab.err(no, f"link speed {speed!r}, expected one of {', '.join(LANE_RATE)}")
        if int(width) not in LINK_WIDTHS:
            fab.err(no, f"link width {width}x, expected one of {', '.join(f'{w}x' for w in LINK_WIDTHS)}")
        declare(no, rkind, rguid.lower())
        rid = f"{'S' if rkind == 'SW' else 'H'}-{rguid.lower()}"
        kinds[rid] = (rkind, int(rlid), rdesc, no)
        fab.port(no, nid, int(p), rid, int(rp), link_bandwidth(int(width), speed))
    for rid, (rkind, rlid, rdesc, no) in kinds.items():
        if rid not in fab.nodes:
            fab.node(no, rid, rkind, rdesc, rlid)


def read_node_map(path) -> dict:
    """Read a ``GUID-id hostname`` map (``H-003048c74e4a0000 x5570comp1``)."""
    out = {}
    for no, raw in enumerate(read_text(path, what="a map of 'NODE-ID HOSTNAME' lines").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ParseError(f"{path}:{no}: {raw.strip()[:60]!r}, expected 'NODE-ID HOSTNAME'")
        out[parts[0]] = parts[1]
    return out


def parse_ibnetdiscover(path, *, node_map=None, spec=None, aggregation_nodes="set-aside") -> Topology:
    """Parse an ibnetdiscover file (plain or ``-p`` form, detected).

    Parameters
    ----------
    path : str or Path
    node_map : str or Path or dict, optional
        ``NODE-ID HOSTNAME`` lines (as PSMN's ``X5.map``) naming endpoints.
    aggregation_nodes : {"set-aside", "endpoints"}
        SHARP aggregation nodes (``Ca`` nodes described as ``... Aggregation
        Node``): set aside into ``params["aggregation_nodes"]`` (default), or
        kept as endpoints.

    Raises
    ------
    ParseError
        ``FILE:LINE: what was found, what was expected`` for a malformed or
        unknown line, a missing or unknown link width/speed, an adapter id
        declared as a switch (or the reverse), a dangling port or an
        inconsistent cable.
    """
    if aggregation_nodes not in _AGGREGATION_MODES:
        raise ParseError(f"aggregation_nodes={aggregation_nodes!r}, expected one of {', '.join(_AGGREGATION_MODES)}")
    path = Path(path)
    text = read_bytes(path, limit=TABLE_BYTES, what="an ibnetdiscover dump", text=True).decode(errors="replace")
    names_map = read_node_map(node_map) if isinstance(node_map, (str, Path)) else dict(node_map or {})
    lines = text.splitlines()
    fab = _Fabric(path)
    ports_form = any(re.match(r"^(SW|CA)\s+\d+\s+\d+\s+0x", ln) for ln in lines[:2000])
    if ports_form:
        _ports_form(fab, lines)
    else:
        _plain(fab, lines)
    return fab.build(spec or f"ibnet:{path}", names_map, aggregation_nodes=aggregation_nodes)
