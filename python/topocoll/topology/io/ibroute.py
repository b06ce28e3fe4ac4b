"""Read ``ibroute`` dumps: one switch's unicast linear forwarding table (LFT).

Format (infiniband-diags ``ibroute``)::

    Unicast lids [0x0-0x91] of switch Lid 2 guid 0x000b8cffff004939 (MT47396 ...):
      Lid  Out   Destination
           Port     Info
    0x0001 015 : (Channel Adapter portguid 0x0002c9030002da23: 'bonobo020 HCA-1')
    0x0002 000 : (Switch portguid 0x000b8cffff004939: 'MT47396 ...')
    134 valid lids dumped

:func:`forwarding_tables` turns a directory of dumps into the per-switch,
per-destination-endpoint link table that
:func:`topocoll.topology.routing.make_router` follows (``ibroute`` engine).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topocoll.errors import ParseError, TopologyError

__all__ = ["parse_ibroute", "read_ibroute_dir", "forwarding_tables", "LinearForwardingTable"]

_HEAD = re.compile(r"^Unicast lids \[0x([0-9a-fA-F]+)-0x([0-9a-fA-F]+)\] of switch Lid (\d+) guid 0x([0-9a-fA-F]+) \((.*)\):\s*$")
_ENTRY = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)\s+:\s+\((Channel Adapter|Switch|Router) portguid 0x([0-9a-fA-F]+):\s*'(.*)'\)\s*$")
_TAIL = re.compile(r"^(\d+) (valid )?lids dumped\s*$")


@dataclass(frozen=True)
class LinearForwardingTable:
    """One switch's LFT: ``entries[lid] = (out_port, kind, portguid, line)``."""

    path: str
    switch_lid: int
    switch_guid: str
    entries: dict


def parse_ibroute(path) -> LinearForwardingTable:
    """Parse one ``ibroute`` dump.

    Raises
    ------
    ParseError
        ``FILE:LINE: ...`` for a line that is neither header, column titles,
        entry nor trailer, or an entry before the header.
    """
    path = Path(path)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as e:
        raise ParseError(f"{path}: cannot read ({e.strerror})") from None
    head = None
    entries = {}
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("Lid ") or line.startswith("Port ") or line.startswith("#"):
            continue
        m = _HEAD.match(line)
        if m:
            if head is not None:
                raise ParseError(f"{path}:{no}: second table header, expected one switch per file")
            head = (int(m.group(3)), m.group(4).lower())
            continue
        m = _ENTRY.match(line)
        if m:
            if head is None:
                raise ParseError(f"{path}:{no}: entry before the 'Unicast lids [...] of switch' header")
            lid = int(m.group(1), 16)
            if lid in entries:
                raise ParseError(f"{path}:{no}: lid {lid:#06x} listed twice")
            kind = {"Channel Adapter": "CA", "Switch": "SW", "Router": "RT"}[m.group(3)]
            entries[lid] = (int(m.group(2)), kind, m.group(4).lower(), no)
            continue
        if _TAIL.match(line):
            continue
        raise ParseError(f"{path}:{no}: cannot parse {line[:60]!r}, expected '0xLID PORT : (Channel Adapter|Switch portguid 0x...: ...)'")
    if head is None:
        raise ParseError(f"{path}:1: no 'Unicast lids [...] of switch Lid N guid 0x...' header")
    return LinearForwardingTable(str(path), head[0], head[1], entries)


def read_ibroute_dir(directory) -> list:
    """Parse every ``*.txt`` dump in ``directory`` (sorted by name)."""
    directory = Path(directory)
    files = sorted(directory.glob("*.txt")) if directory.is_dir() else []
    if not files:
        raise ParseError(f"{directory}: no ibroute dumps (*.txt) found, expected one file per switch")
    return [parse_ibroute(f) for f in files]


def forwarding_tables(topology, lfts) -> np.ndarray:
    """Per (switch, destination endpoint) out-link ids from parsed LFTs.

    Endpoints are matched by the LID the topology assigns them and
    destination kinds by GUID; ports by the topology's physical port numbers.

    Returns
    -------
    numpy.ndarray of uint32, shape (n_switches * n_endpoints,)
        ``2**32 - 1`` where a switch has no entry for an endpoint.

    Raises
    ------
    TopologyError
        A dump names a switch the fabric does not have, or a port that is
        not connected.
    """
    if topology.port is None or "guids" not in topology.params:
        raise TopologyError(f"ibroute: {topology.spec} is not a real fabric read from ibnetdiscover")
    n, nsw = topology.n_endpoints, topology.n_switches
    guids = topology.params["guids"]
    lids = topology.params["lids"]
    sw_index = {g[2:].lower(): i for i, g in enumerate(guids) if i >= n}
    ep_by_lid = {lid: i for i, lid in enumerate(lids[:n]) if lid >= 0}
    indptr = topology.indptr
    entries = np.full(nsw * n, np.iinfo(np.uint32).max, dtype=np.uint32)
    for lft in lfts:
        v = sw_index.get(lft.switch_guid)
        if v is None:
            raise TopologyError(f"{lft.path}: switch guid 0x{lft.switch_guid} is not in {topology.spec}")
        lo, hi = indptr[v], indptr[v + 1]
        ports = {int(p): lo + i for i, p in enumerate(topology.port[lo:hi])}
        for lid, (port, kind, _guid, line) in lft.entries.items():
            if kind != "CA":
                continue
            d = ep_by_lid.get(lid)
            if d is None:
                continue  # a LID of no endpoint of this fabric (e.g. a second HCA port)
            link = ports.get(port)
            if link is None:
                raise TopologyError(f"{lft.path}:{line}: lid {lid:#06x} leaves switch 0x{lft.switch_guid} by port {port}, which is not connected")
            entries[(v - n) * n + d] = link
    return entries
