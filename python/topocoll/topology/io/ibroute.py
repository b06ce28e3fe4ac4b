"""Read ``ibroute`` dumps: one switch's unicast linear forwarding table (LFT).

Format (infiniband-diags ``ibroute``, ``dump_unicast_tables``)::

    Unicast lids [0x0-0x91] of switch Lid 2 guid 0x000b8cffff004939 (MT47396 ...):
      Lid  Out   Destination
           Port     Info
    0x0001 015 : (Channel Adapter portguid 0x0002c9030002da23: 'bonobo020 HCA-1')
    0x0002 000 : (Switch portguid 0x000b8cffff004939: 'MT47396 ...')
    134 valid lids dumped

:func:`forwarding_tables` turns the parsed dumps into the per-switch,
per-destination-endpoint link table that
:func:`topocoll.topology.routing.make_router` follows (``ibroute`` engine).

Dumps as they come
------------------
``ibroute`` writes its table to stdout and its own diagnostics to stderr
(``ibroute: iberror: failed: dump tables: ...``, ``/usr/sbin/ibroute:
iberror: [pid 1234] failed: ...``, ``ibwarn: [1234] ...``, ``SubnGet()
failed; MAD status ...``); a dump taken with ``2>&1`` holds both, a
diagnostic usually after the table, sometimes among its entries (stderr is
unbuffered, stdout is not). A diagnostic line therefore decides nothing on
its own: what decides is whether the table is **complete**, i.e.

1. the file has exactly one header ``Unicast lids [0xLO-0xHI] of switch ...
   guid 0xG (...)``, before every entry;
2. every other line is an entry ``0xLID PORT [: (DESTINATION)]`` (the
   destinations ibroute prints: ``Channel Adapter|Switch|Router portguid
   0x...: 'desc'``, ``unknown node and type``, ``illegal port``, ``path #i
   out of n``, or none with ``ibroute -n``), the column titles, the trailer,
   a diagnostic line as above, a ``#`` comment or a blank line;
3. entry LIDs increase strictly (ibroute prints them in order: a LID seen
   again is "listed twice", a smaller one is "out of order") and lie in
   ``[LO, HI]``;
4. its end is proven, either by the trailer ``N [valid ]lids dumped`` with
   N equal to the number of entries and no entry after it, or, where the
   trailer is missing (ibroute stops at a failed block query without
   printing it), by the fabric: no LID the fabric assigns lies in
   ``(last listed LID, HI]``. Only :func:`forwarding_tables` knows the
   fabric, so :func:`parse_ibroute` accepts a table without trailer and
   records ``dumped=None``.

A complete table is used; its diagnostic lines (and a missing trailer)
become one-line warnings. Anything else is a *defect* of that dump: a line
that parses as none of the above, a second header, no header, an entry
LID listed twice, out of order or outside ``[LO, HI]``, a trailer count
that differs from the entries listed, an entry after the trailer, a table
without trailer that stops before the fabric's last LID, an unreadable
file; and, against the fabric, an entry for an endpoint that leaves by a
port with no cable. ``strict=True`` raises the first defect (files in
name order, lines in order) as a one-line ``FILE:LINE: ...`` error;
``strict=False`` (the default of :func:`forwarding_tables` and the router)
skips that switch's whole table, routes through the others and reports
the skipped switch and the endpoint pairs left without a route. Two dumps
of the same switch GUID are an error in both modes (which one is current
cannot be told).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from topocoll.errors import ParseError, SpecError, TopologyError
from topocoll.inputs import TABLE_BYTES, read_bytes

__all__ = ["parse_ibroute", "read_ibroute_dir", "forwarding_tables", "LinearForwardingTable",
           "ForwardingTables"]

_HEAD = re.compile(r"^Unicast lids \[0x([0-9a-fA-F]+)-0x([0-9a-fA-F]+)\] of switch (.*?) guid 0x([0-9a-fA-F]+) \((.*)\):\s*$")
_ENTRY = re.compile(r"^0x([0-9a-fA-F]+)\s+(\d+)(?:\s+:\s+\((.*)\))?\s*$")
_DEST = re.compile(r"^(Channel Adapter|Switch|Router) portguid 0x([0-9a-fA-F]+):\s*'(.*)'$")
_TAIL = re.compile(r"^(\d+) (valid )?lids dumped\s*$")
_DIAG = re.compile(r"^(?:\S*ibroute:\s+)?(?:iberror|ibwarn):|^\S*ibroute:\s|^SubnGet\(\) failed")
_KIND = {"Channel Adapter": "CA", "Switch": "SW", "Router": "RT"}
_NONE = np.iinfo(np.uint32).max
#: at most this many lines of one kind of warning; the rest is counted
_MAX_LINES = 5
#: endpoint pairs named as examples of pairs without a route
_EXAMPLES = 3


@dataclass(frozen=True)
class LinearForwardingTable:
    """One switch's LFT as dumped.

    ``entries[lid] = (out_port, kind, portguid, line)`` with kind ``'CA'``,
    ``'SW'``, ``'RT'``, ``'?'`` (destination unknown or not resolved),
    ``'invalid'`` (``illegal port``, ``ibroute -a``) or ``'path'`` (a further
    LID of an LMC port). ``lid_range`` is the header's ``[LO, HI]``,
    ``dumped`` the trailer's count (None without trailer), ``diagnostics``
    the tool's own lines as ``(line, text)``, ``defect`` the first defect as
    ``'FILE:LINE: ...'`` (None for a table that may be used; see the module
    notes for what is checked here and what against the fabric).
    """

    path: str
    switch_lid: int
    switch_guid: str
    entries: dict
    description: str = ""
    lid_range: tuple = (0, 0)
    dumped: int | None = None
    diagnostics: tuple = ()
    defect: str | None = None
    last_line: int = 0          # the file's last non-blank line: where a cut-off table ends


def parse_ibroute(path, *, strict: bool = True) -> LinearForwardingTable:
    """Parse one ``ibroute`` dump.

    Parameters
    ----------
    path : str or Path
    strict : bool
        True (default for a single file): raise the first defect. False:
        return the table with ``defect`` set instead (what
        :func:`read_ibroute_dir` does, so that one bad dump does not hide
        the others).

    Returns
    -------
    LinearForwardingTable

    Raises
    ------
    ParseError
        With ``strict``: ``FILE:LINE: ...`` for the first defect (a line
        that is neither header, column titles, entry, trailer nor one of
        ibroute's own diagnostics; an entry before the header; a LID listed
        twice, out of order or outside the header's range; a trailer count
        that differs from the entries; an entry after the trailer; no header).

    Examples
    --------
    >>> from pathlib import Path
    >>> d = Path(__file__).resolve().parents[4] / "tests/data/topology/mess/ibroute-trailing-error"
    >>> lft = parse_ibroute(d / "ibroute-fe80_0000_0000_0000-2.txt")
    >>> lft.switch_guid, lft.dumped, len(lft.entries), lft.defect
    ('000b8cffff004939', 134, 134, None)
    >>> lft.diagnostics[0][1][:35]
    'ibroute: iberror: failed: dump tabl'
    """
    path = Path(path)
    try:
        lines = read_bytes(path, limit=TABLE_BYTES, what="an ibroute dump", text=True).decode(
            errors="replace").splitlines()
    except ParseError as e:
        return _done(strict, path, None, {}, [], None, str(e), 0)
    head = None
    entries: dict = {}
    diagnostics: list = []
    dumped = None
    defect = None
    last_lid = -1
    n_lines = 0
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        n_lines = no
        m = _HEAD.match(line)
        if m:
            if head is not None and defect is None:
                defect = f"{path}:{no}: second table header, expected one switch per file"
            elif head is None:
                lid = re.search(r"\bLid (\d+)\b", m.group(3))
                head = (int(lid.group(1)) if lid else -1, m.group(4).lower(), m.group(5),
                        (int(m.group(1), 16), int(m.group(2), 16)))
                if defect is None and entries:
                    defect = f"{path}:{no}: table header after its entries, expected it first"
            continue
        if defect is not None:
            continue  # after the first defect only the header is still looked for (to name the switch)
        if line.startswith("Lid ") or line.startswith("Port ") or line.startswith("#"):
            continue
        if _DIAG.match(line):
            diagnostics.append((no, line))
            continue
        m = _ENTRY.match(line)
        if m:
            lid = int(m.group(1), 16)
            if head is None:
                defect = f"{path}:{no}: entry before the 'Unicast lids [...] of switch' header"
            elif dumped is not None:
                defect = f"{path}:{no}: entry after the trailer '{dumped} valid lids dumped'"
            elif lid in entries:
                defect = f"{path}:{no}: lid {lid:#06x} listed twice (first on line {entries[lid][3]})"
            elif lid < last_lid:
                defect = f"{path}:{no}: lid {lid:#06x} out of order after lid {last_lid:#06x}, expected increasing lids"
            elif not head[3][0] <= lid <= head[3][1]:
                defect = (f"{path}:{no}: lid {lid:#06x} outside the header's range "
                          f"[{head[3][0]:#x}-{head[3][1]:#x}]")
            else:
                kind, guid = _destination(m.group(3))
                if kind is None:
                    defect = (f"{path}:{no}: cannot parse destination {m.group(3)[:60]!r}, expected "
                              "'Channel Adapter|Switch|Router portguid 0x...: ...' or 'unknown node and type'")
                else:
                    entries[lid] = (int(m.group(2)), kind, guid, no)
                    last_lid = lid
            continue
        m = _TAIL.match(line)
        if m:
            if dumped is not None:
                defect = f"{path}:{no}: second trailer, expected one table per file"
            else:
                dumped = int(m.group(1))
                if dumped != len(entries):
                    defect = (f"{path}:{no}: trailer says {dumped} lids dumped but {len(entries)} entries are "
                              f"listed: table incomplete")
            continue
        defect = (f"{path}:{no}: cannot parse {line[:60]!r}, expected "
                  "'0xLID PORT : (Channel Adapter|Switch portguid 0x...: ...)'")
    if head is None and defect is None:
        defect = f"{path}:1: no 'Unicast lids [...] of switch Lid N guid 0x...' header"
    return _done(strict, path, head, entries, diagnostics, dumped, defect, n_lines)


def _destination(text):
    """(kind, portguid) of an entry's destination text, (None, None) if unknown."""
    if text is None:
        return "?", ""                      # ibroute -n: destinations not resolved
    text = text.strip()
    m = _DEST.match(text)
    if m:
        return _KIND[m.group(1)], m.group(2).lower()
    if text == "unknown node and type":
        return "?", ""
    if re.fullmatch(r"(path #\d+ - )?illegal port", text):
        return "invalid", ""
    if re.fullmatch(r"path #\d+ out of \d+(: portguid 0x[0-9a-fA-F]+)?", text):
        return "path", ""
    return None, None


def _done(strict, path, head, entries, diagnostics, dumped, defect, n_lines):
    if defect is not None and strict:
        raise ParseError(defect)
    lid, guid, desc, lid_range = head if head is not None else (-1, "", "", (0, 0))
    return LinearForwardingTable(str(path), lid, guid, entries, desc, lid_range, dumped,
                                 tuple(diagnostics), defect, n_lines)


def read_ibroute_dir(directory, *, strict: bool = False) -> list:
    """Parse every ``*.txt`` dump in ``directory`` (sorted by name).

    With ``strict=False`` (default) a defective dump comes back with its
    ``defect`` set; :func:`forwarding_tables` skips it and says so.

    Raises
    ------
    ParseError
        No dump in ``directory``; with ``strict``, the first defect.
    """
    directory = Path(directory)
    files = sorted(directory.glob("*.txt")) if directory.is_dir() else []
    if not files:
        raise ParseError(f"{directory}: no ibroute dumps (*.txt) found, expected one file per switch")
    return [parse_ibroute(f, strict=strict) for f in files]


def strictness(value) -> bool:
    """The ``strict`` routing option: a bool, or ``true/false/yes/no/1/0`` from a spec string."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SpecError(f"routing 'ibroute': strict={value!r}, expected true or false")


@dataclass(frozen=True)
class ForwardingTables:
    """What :func:`forwarding_tables` made of a set of dumps.

    ``entries``: out-link id per (switch, destination endpoint), row-major,
    ``2**32 - 1`` where there is none; ``skipped``: ``(guid, path, defect)``
    of every dump whose table was not used; ``unroutable``: the number of
    ordered endpoint pairs (source != destination) the tables do not
    route, with up to three ``examples`` as ``(src, dst)``; ``warnings``:
    one-line texts for the user (skipped switches, diagnostics of used
    dumps, switches without a dump, pairs without route).
    """

    entries: np.ndarray
    skipped: tuple = ()
    unroutable: int = 0
    examples: tuple = ()
    warnings: tuple = ()


def forwarding_tables(topology, lfts, *, strict: bool = False) -> ForwardingTables:
    """Per (switch, destination endpoint) out-link ids from parsed LFTs.

    Endpoints are matched by the LID the topology assigns them (entries
    whose destination is a switch or router are not used), ports by the
    topology's physical port numbers.

    Parameters
    ----------
    topology : Topology
        A real fabric (``ibnet:``).
    lfts : list of LinearForwardingTable
        As :func:`read_ibroute_dir` returns them, in file order.
    strict : bool
        False (default): a defective dump (see the module notes), or one of
        a switch the fabric lacks, is skipped with a warning and the other
        tables are used. True: the first such dump raises.

    Returns
    -------
    ForwardingTables

    Raises
    ------
    ParseError
        Two dumps of the same switch (both files named), in any mode; with
        ``strict``, the first defect of a dump (``FILE:LINE: ...``).
    TopologyError
        The topology is not a real fabric; no dump is usable; with
        ``strict``, a dump of a switch the fabric lacks or an entry that
        leaves by a port with no cable.
    """
    if topology.port is None or "guids" not in topology.params:
        raise TopologyError(f"ibroute: {topology.spec} is not a real fabric read from ibnetdiscover")
    n, nsw = topology.n_endpoints, topology.n_switches
    guids = topology.params["guids"]
    lids = topology.params["lids"]
    sw_index = {g[2:].lower(): i for i, g in enumerate(guids) if i >= n}
    ep_by_lid = {lid: i for i, lid in enumerate(lids[:n]) if lid >= 0}
    fabric_lids = np.array(sorted(lid for lid in lids if lid >= 0), dtype=np.int64)
    seen: dict = {}
    for lft in lfts:
        if lft.switch_guid and lft.switch_guid in seen:
            raise ParseError(f"ibroute: {seen[lft.switch_guid]} and {lft.path} both dump switch "
                             f"0x{lft.switch_guid}, expected one dump per switch (which one is current is ambiguous)")
        if lft.switch_guid:
            seen[lft.switch_guid] = lft.path
    indptr = topology.indptr
    entries = np.full(nsw * n, _NONE, dtype=np.uint32)
    skipped, foreign, used, notes = [], [], set(), []
    for lft in lfts:
        v = sw_index.get(lft.switch_guid) if lft.switch_guid else None
        defect = lft.defect
        if defect is None and v is None:
            defect = f"{lft.path}: switch guid 0x{lft.switch_guid} is not in {topology.spec}"
            if strict:
                raise TopologyError(defect)
            foreign.append(defect)
            continue
        if defect is None and lft.dumped is None:
            lo, hi = lft.lid_range
            last = max(lft.entries, default=lo - 1)
            after = fabric_lids[(fabric_lids > last) & (fabric_lids <= hi)]
            if len(after):
                defect = (f"{lft.path}:{lft.last_line}: table stops at lid {last:#06x} without the 'N valid lids "
                          f"dumped' trailer, but the fabric has {len(after)} more lids up to {int(after[-1]):#06x}: "
                          f"table incomplete")
        row = {}
        if defect is None:
            lo = indptr[v]
            ports = {int(p): lo + i for i, p in enumerate(topology.port[lo:indptr[v + 1]])}
            for lid, (port, kind, _guid, line) in lft.entries.items():
                d = ep_by_lid.get(lid)
                if kind not in ("CA", "?") or d is None:
                    continue  # a switch's LID, an invalid entry, a LID of no endpoint (e.g. a second HCA port)
                link = ports.get(port)
                if link is None:
                    defect = (f"{lft.path}:{line}: lid {lid:#06x} leaves switch 0x{lft.switch_guid} by port "
                              f"{port}, which is not connected")
                    if strict:
                        raise TopologyError(defect)
                    break
                row[d] = link
        if defect is not None:
            if strict:
                raise ParseError(defect)
            skipped.append((lft.switch_guid, lft.path, defect))
            continue
        base = (v - n) * n
        for d, link in row.items():
            entries[base + d] = link
        used.add(v)
        if lft.dumped is not None:
            how = f"'{lft.dumped} valid lids dumped'"
        else:
            how = (f"no trailer, but its entries reach lid {max(lft.entries, default=0):#06x}, the fabric's last "
                   f"in [{lft.lid_range[0]:#x}-{lft.lid_range[1]:#x}]")
        if lft.diagnostics:
            no, text = lft.diagnostics[-1]
            notes.append(f"ibroute: {lft.path}:{no}: the tool's own message ignored, table complete ({how}) "
                         f"and used: {text!r}")
        elif lft.dumped is None:
            notes.append(f"ibroute: {lft.path}:{lft.last_line}: table used, {how}")
    if not used:
        first = (skipped[0][2] if skipped else foreign[0]) if (skipped or foreign) else "no dump"
        raise TopologyError(f"ibroute: no usable forwarding table among {len(lfts)} dumps for {topology.spec}; "
                            f"first problem: {first}")
    warnings = _capped(notes, "more dumps with ibroute's own messages, tables used")
    lid_of = {g: lft.switch_lid for lft in lfts for g in [lft.switch_guid] if g}
    warnings += _capped([f"ibroute: switch 0x{g} (lid {lid_of[g]}) skipped, its table is unusable: {why}" if g else
                         f"ibroute: {p} skipped, no usable table: {why}" for g, p, why in skipped],
                        "more dumps skipped")
    warnings += _capped([f"ibroute: {why}; dump ignored" for why in foreign], "more dumps of foreign switches ignored")
    dumped_guids = {g for g, _p, _why in skipped if g}
    undumped = [i for i in range(n, n + nsw) if i not in used and guids[i][2:].lower() not in dumped_guids]
    if undumped:
        names = ", ".join(f"0x{guids[i][2:]}" for i in undumped[:_MAX_LINES])
        more = f" and {len(undumped) - _MAX_LINES} more" if len(undumped) > _MAX_LINES else ""
        warnings.append(f"ibroute: {len(undumped)} of {nsw} switches have no dump ({names}{more}); "
                        "routes that reach them stop there")
    count, examples = _unroutable(topology, entries)
    if count:
        names = topology.names
        ex = ", ".join(f"{names[s]} -> {names[d]}" for s, d in examples)
        warnings.append(f"ibroute: {count} of {n * (n - 1)} endpoint pairs have no route through the usable "
                        f"tables (e.g. {ex})")
    return ForwardingTables(entries, tuple(skipped), count, tuple(examples), tuple(warnings))


def _capped(lines, what):
    if len(lines) <= _MAX_LINES:
        return list(lines)
    return list(lines[:_MAX_LINES - 1]) + [f"ibroute: {len(lines) - _MAX_LINES + 1} {what}"]


def _unroutable(topology, entries):
    """Ordered endpoint pairs (s != d) that following the tables does not deliver.

    Mirrors the table router: ``s`` injects on its first link, then every
    switch forwards by its entry for ``d``; a missing entry, a detour through
    another endpoint or a loop means no route. Vectorised over destinations
    (chunks bound the memory to a few MiB per leaf switch row).
    """
    n, nsw = topology.n_endpoints, topology.n_switches
    indptr, dst = topology.indptr, topology.dst.astype(np.int64)
    has_link = indptr[1:n + 1] > indptr[:n]
    first = np.full(n, -1, dtype=np.int64)
    first[has_link] = dst[indptr[:n][has_link]]
    table = entries.reshape(nsw, n)
    leaves = np.unique(first[first >= n])
    count, examples = 0, []
    # sources not on a switch: no link, or a cable straight to another endpoint
    for s in np.flatnonzero(first < n):
        bad = n - 1 - (1 if 0 <= first[s] != s else 0)
        count += bad
        if len(examples) < _EXAMPLES:
            examples.extend((int(s), int(d)) for d in range(n) if d != s and d != first[s])
            del examples[_EXAMPLES:]
    if not len(leaves):
        return count, examples
    rows = leaves - n
    members = [np.flatnonzero(first == leaf) for leaf in leaves]
    per_leaf = np.array([len(m) for m in members], dtype=np.int64)
    chunk = max(1, (1 << 22) // max(nsw, len(leaves), 1))
    for c0 in range(0, n, chunk):
        cols = np.arange(c0, min(n, c0 + chunk))
        t = table[:, cols]
        nxt = np.full(t.shape, -1, dtype=np.int64)
        ok_entry = t != _NONE
        nxt[ok_entry] = dst[t[ok_entry]]
        pos = nxt[rows].copy()                          # (leaves, cols): next node from each leaf
        col = np.broadcast_to(np.arange(len(cols)), pos.shape)
        target = np.broadcast_to(cols, pos.shape)
        delivered = np.zeros(pos.shape, dtype=bool)
        active = np.ones(pos.shape, dtype=bool)
        for _ in range(nsw + 1):
            arrived = active & (pos == target)
            delivered |= arrived
            active &= ~arrived & (pos >= n)             # -1 (no entry) or another endpoint: stop, undelivered
            if not active.any():
                break
            pos[active] = nxt[pos[active] - n, col[active]]
        failed = ~delivered                            # still active here: a loop
        count += int((failed * per_leaf[:, None]).sum())
        # (d, d) is no pair: remove destinations failing from their own leaf
        own = np.flatnonzero(np.isin(first[cols], leaves))
        if len(own):
            li = np.searchsorted(leaves, first[cols][own])
            count -= int(failed[li, own].sum())
        if len(examples) < _EXAMPLES:
            for i, j in zip(*np.nonzero(failed)):
                s = next((int(x) for x in members[i] if x != cols[j]), None)
                if s is not None:
                    examples.append((s, int(cols[j])))
                if len(examples) >= _EXAMPLES:
                    break
    return count, examples
