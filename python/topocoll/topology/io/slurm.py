"""Node lists from disk: hostfiles and Slurm ``topology.conf``.

``topology.conf`` (Slurm ``topology/tree`` plugin) lines read
``SwitchName=S Nodes=host[1-5,7],other`` (leaf switches) or
``SwitchName=S Switches=...``; the rank order they give is the leaf
switches' node lists in file order.
"""

from __future__ import annotations

import re
from pathlib import Path

from topocoll.errors import ParseError
from topocoll.inputs import read_text

__all__ = ["expand_hostlist", "read_hostfile", "read_slurm_topology_order"]

#: host names one hostlist expands to at most (the largest machines have about 10^5 nodes)
MAX_HOSTLIST = 1_000_000
#: slots of one hostfile line at most (cores of one host; ranks per host are bounded again by --ppn)
MAX_SLOTS = 1_000_000


def expand_hostlist(text: str, where="hostlist") -> list:
    """Expand a Slurm hostlist: ``'sl390lin[1-3,7],x'`` -> ``['sl390lin1', 'sl390lin2', 'sl390lin3', 'sl390lin7', 'x']``."""
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m:
            out.append(part)
            continue
        prefix, body, suffix = m.groups()
        for rng in body.split(","):
            r = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", rng)
            if not r:
                raise ParseError(f"{where}: range {rng!r} in {part!r}, expected N or N-M (numbers of at most 9 digits)")
            lo, hi = r.group(1), r.group(2) or r.group(1)
            if int(hi) < int(lo):
                raise ParseError(f"{where}: range {rng!r} runs backwards, expected N-M with N <= M")
            width = len(lo) if lo.startswith("0") else 0
            if len(out) + int(hi) - int(lo) + 1 > MAX_HOSTLIST:     # before building the names
                raise ParseError(f"{where}: {part!r} names more than {MAX_HOSTLIST:,} hosts, expected at most "
                                 f"{MAX_HOSTLIST:,} (MAX_HOSTLIST)")
            out.extend(f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1))
    return out


def _hostfile_lines(path):
    """``(line number, host, slots or None)`` of each host line of a hostfile
    (``host``, ``host slots=4`` or ``host:4``; ``#`` starts a comment)."""
    path = Path(path)
    lines = read_text(path, what="a hostfile ('HOST', 'HOST:N' or 'HOST slots=N' lines)").splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?::(\d+)|\s+slots=(\d+)(?:\s+max[-_]slots=\d+)?)?", line)
        if not m:
            raise ParseError(f"{path}:{no}: {line[:60]!r}, expected 'HOST', 'HOST:N' or 'HOST slots=N'")
        n = m.group(2) or m.group(3)
        if n is not None and (len(n) > 7 or int(n) > MAX_SLOTS):
            raise ParseError(f"{path}:{no}: {n} slots, expected at most {MAX_SLOTS:,} (MAX_SLOTS)")
        yield no, m.group(1), None if n is None else int(n)


def read_hostfile(path) -> list:
    """Host names, one per line (``host``, ``host slots=4`` or ``host:4``);
    ``#`` starts a comment. Slot counts are ignored and repeated hosts kept
    once: topocoll maps ranks to endpoints, not to cores."""
    return [host for _, host, _ in _hostfile_lines(path)]


def read_hostfile_slots(path) -> list:
    """``(host, slots)`` per line of a hostfile (slots None where the line
    gives none; ``HOST:N`` and ``HOST slots=N`` both give N), in file order,
    a repeated host's slots added (Open MPI's and MPICH's reading)."""
    slots: dict[str, int | None] = {}
    for no, host, n in _hostfile_lines(path):
        if n is not None and n < 1:
            raise ParseError(f"{path}:{no}: slots={n}, expected at least 1")
        if host in slots and n is not None and slots[host] is not None:
            slots[host] += n
        elif host not in slots or n is not None:
            slots[host] = n
    return list(slots.items())


def read_slurm_topology_order(path) -> list:
    """Node names of a ``topology.conf`` in leaf-switch order."""
    path = Path(path)
    lines = read_text(path, what="a Slurm topology.conf").splitlines()
    nodes = []
    for no, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" not in fields or any("=" not in f for f in line.split()):
            raise ParseError(f"{path}:{no}: {line[:60]!r}, expected 'SwitchName=S Nodes=...' or 'SwitchName=S Switches=...'")
        if "Nodes" in fields:
            nodes.extend(expand_hostlist(fields["Nodes"], f"{path}:{no}"))
    return nodes
