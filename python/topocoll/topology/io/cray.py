"""Cray XC (Aries) link lists from ``rtr --interconnect``.

No format specification from Cray could be found; the reader follows the lines that NERSC's
LogSet tool parses (``utils/archFromInterconnect.pl`` in github.com/NERSC/LogSet, which documents
them with these examples)::

    c0-0c0s0a0l00(0:0:0) green -> c0-0c0s6a0l10(0:0:6)
    c0-0c0s0a0l01(0:0:0) blue -> unused
    c0-0c0s0a0l50(0:0:0) ptile -> processor

Each line is one tile (port) of an Aries router: the tile's cname (``c<cabinet x>-<cabinet
y>c<chassis>s<slot>a0l<tile>``; the router is the part before ``l``), the router's coordinates in
brackets, the link colour and the far tile, ``unused`` or ``processor``. The bracketed triple is
read as (group, chassis in the group, slot), that is (group, row, column) of the Aries shape
(:func:`~topocoll.topology.dragonfly.aries`): in the example, slot 6 of chassis 0 reads
``(0:0:6)``. Green tiles join routers of a row, black tiles routers of a column (three tiles, so
three parallel cables, per pair), blue tiles groups. Processor tiles ``l50`` .. ``l57`` feed the
router's four NICs two by two (tile digit // 2, as LogSet does); each NIC is an endpoint named
after its node (``c0-0c0s0n0``), with one ``host`` link to its router.

Every cable is listed from both ends; one listed from a single end is used with a warning (an
error under ``strict``), a tile naming two different far tiles is an error, and so is any line that
is not of this form. Routing is Aries' row-first minimal rule over the cables found
(:func:`~topocoll.topology.dragonfly.aries_tables`); where a cable the rule needs is missing the
network keeps no tables, routes ``min-hop`` and says so in a warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from topocoll.errors import SpecError
from topocoll.inputs import TABLE_BYTES, read_text

from ..dragonfly import ARIES_BANDWIDTH, ARIES_LATENCY, aries_tables
from ..graph import GraphBuilder
from ..network import Topology

__all__ = ["read_rtr"]

_LINE = re.compile(r"^(c\d+-\d+c\d+s\d+a\d+)l(\d+)\s*[\(\[](\d+):(\d+):(\d+)[\)\]]\s+(\S+)\s+->\s+(\S+)\s*$")
_FAR = re.compile(r"^(c\d+-\d+c\d+s\d+a\d+)l(\d+)\s*[\(\[](\d+):(\d+):(\d+)[\)\]]$")
_COLOURS = ("green", "black", "blue")
MAX_LINES = 5_000_000
#: largest router coordinate (group, chassis, slot) read: a Cray XC has at most 241 groups of 6 chassis
#: of 16 slots; the bound leaves room for other shapes and keeps every coordinate far inside int64
MAX_COORDINATE = 65535


def _coordinates(path, no: int, router: str, digits) -> tuple:
    """A router's bracketed ``(group, chassis, slot)``, each in ``0 .. MAX_COORDINATE``."""
    for name, text in zip(("group", "chassis", "slot"), digits):
        if len(text) > 5 or int(text) > MAX_COORDINATE:
            raise SpecError(f"{path}:{no}: router {router} {name} {text}, expected 0..{MAX_COORDINATE} "
                            "(MAX_COORDINATE)")
    return tuple(int(x) for x in digits)


def read_rtr(path, *, spec: str | None = None, strict: bool = False, latency: float = ARIES_LATENCY) -> Topology:
    """Read an ``rtr --interconnect`` dump (see the module docstring) into a ``graph`` topology with
    classes ``host``, ``green``, ``black``, ``blue`` (bandwidths :data:`ARIES_BANDWIDTH`).

    Raises
    ------
    SpecError
        ``FILE:LINE: what, expected ...`` for a line of another form, a tile linked twice, or a file
        without routers and nodes.
    """
    path = Path(path)
    spec = spec or f"rtr:{path}"
    text = read_text(path, limit=TABLE_BYTES, what="an rtr --interconnect dump", error=SpecError)
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise SpecError(f"{path}: {len(lines)} lines, expected at most {MAX_LINES:,}")
    warnings = []

    def warn(msg):
        if strict:
            raise SpecError(msg + " (--strict)")
        warnings.append(msg)

    routers = {}      # name -> (group, row, column)
    tiles = {}        # (router, tile) -> (colour, far (router, tile), line)
    nics = {}         # (router, nic) -> line
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise SpecError(f"{path}:{no}: {line[:70]!r}, expected 'TILE(g:c:s) COLOUR -> TILE(g:c:s)|unused|"
                            "processor' as rtr --interconnect prints it")
        router, tile, g, r, c, colour, far = m.groups()
        coords = _coordinates(path, no, router, (g, r, c))
        if routers.setdefault(router, coords) != coords:
            raise SpecError(f"{path}:{no}: router {router} at {coords}, but at {routers[router]} before, expected "
                            "one place per router")
        if colour == "ptile":
            if far != "processor":
                raise SpecError(f"{path}:{no}: ptile to {far!r}, expected 'processor'")
            nic = int(tile[-1]) // 2
            if nic > 3:
                raise SpecError(f"{path}:{no}: processor tile l{tile}, expected tiles whose last digit is 0-7 "
                                "(two per NIC)")
            nics.setdefault((router, nic), no)
            continue
        if colour not in _COLOURS:
            raise SpecError(f"{path}:{no}: link colour {colour!r}, expected green, black, blue or ptile (Gemini "
                            "torus dumps are not supported)")
        if far == "unused":
            continue
        fm = _FAR.match(far)
        if not fm:
            raise SpecError(f"{path}:{no}: far end {far!r}, expected a tile such as c0-0c0s6a0l10(0:0:6), "
                            "'unused' or 'processor'")
        fcoords = _coordinates(path, no, fm.group(1), fm.group(3, 4, 5))
        if routers.setdefault(fm.group(1), fcoords) != fcoords:
            raise SpecError(f"{path}:{no}: router {fm.group(1)} at {fcoords}, but at {routers[fm.group(1)]} "
                            "before, expected one place per router")
        key = (router, tile)
        if key in tiles:
            raise SpecError(f"{path}:{no}: tile {router}l{tile} listed twice (line {tiles[key][2]}), expected one "
                            "line per tile")
        tiles[key] = (colour, (fm.group(1), fm.group(2)), no)
    if not nics or not routers:
        raise SpecError(f"{path}:1: no routers with processor tiles, expected an rtr --interconnect dump of an "
                        "Aries system")
    cables = []
    one_sided = []
    for key, (colour, far, no) in tiles.items():
        back = tiles.get(far)
        if back is None:
            one_sided.append((key, far, no))
            cables.append((key[0], far[0], colour))
            continue
        if back[1] != key:
            raise SpecError(f"{path}:{no}: tile {key[0]}l{key[1]} -> {far[0]}l{far[1]}, but that tile leads to "
                            f"{back[1][0]}l{back[1][1]} (line {back[2]}), expected both ends to agree")
        if back[0] != colour:
            raise SpecError(f"{path}:{no}: {colour} cable whose other end (line {back[2]}) says {back[0]}, expected "
                            "one colour per cable")
        if key < far:
            cables.append((key[0], far[0], colour))
    if one_sided:
        (r, t), (fr, ft), no = one_sided[0]
        warn(f"rtr: {path}:{no}: {len(one_sided)} cable{'s' if len(one_sided) > 1 else ''} listed from one end only "
             f"(e.g. {r}l{t} -> {fr}l{ft}), used as full-duplex cables")
    gb = GraphBuilder(spec)
    order = sorted(routers, key=lambda x: (routers[x], x))
    nic_list = sorted(nics, key=lambda k: (routers[k[0]], k[0], k[1]))
    host = {k: gb.node(re.sub(r"a\d+$", f"n{k[1]}", k[0]), True) for k in nic_list}
    node = {r: gb.node(r, False) for r in order}
    for (r, nic), h in host.items():
        for u, v in ((h, node[r]), (node[r], h)):
            gb.link(u, v, ARIES_BANDWIDTH["host"], latency, f"{gb.names[u]}-{gb.names[v]}", "host")
    for a, b, colour in sorted(cables, key=lambda x: (routers[x[0]], routers[x[1]], x[2])):
        for u, v in ((node[a], node[b]), (node[b], node[a])):
            gb.link(u, v, ARIES_BANDWIDTH[colour], latency, f"{gb.names[u]}-{gb.names[v]}", colour)
    coords = np.array([routers[r] for r in order], dtype=np.int64).reshape(-1, 3)
    rid = {node[r]: i for i, r in enumerate(order)}
    hid = {h: i for i, h in enumerate(host.values())}
    params = {"kind": "rtr", "path": str(path), "routers": len(order),
              "groups": int(coords[:, 0].max()) + 1}
    try:
        aries_tables(gb, rid, hid, coords, rows=int(coords[:, 1].max()) + 1, columns=int(coords[:, 2].max()) + 1)
        tables = True
    except SpecError as e:
        warn(f"rtr: {path}: {str(e).split(': ', 1)[-1]}; no Aries tables, routing min-hop")
        tables = False
    params["warnings"] = tuple(warnings)
    return gb.build(spec, params, tables=tables)
