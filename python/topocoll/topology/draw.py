"""Draw a small topology with its link loads as SVG (no dependencies).

Layout: fat trees and real fabrics in rows by distance from the endpoints
(endpoints at the bottom); tori as a grid of the first two dimensions with
further dimensions side by side. A cable is coloured by the larger load of
its two directions, idle cables grey.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from topocoll.errors import SpecError

from .network import Topology

__all__ = ["draw_svg"]

MAX_NODES = 2000


def _levels(t):
    n = t.n_endpoints
    level = np.full(t.n_nodes, -1)
    level[:n] = 0
    indptr = t.indptr
    frontier = list(range(n))
    d = 0
    while frontier:
        d += 1
        nxt = []
        for v in frontier:
            for u in t.dst[indptr[v]:indptr[v + 1]]:
                if level[u] < 0:
                    level[u] = d
                    nxt.append(int(u))
        frontier = nxt
    level[level < 0] = d
    return level


def _positions(t):
    if t.family == "torus":
        k = list(t.params["k"]) + [1, 1]
        v = np.arange(t.n_nodes)
        x, y, rest = v % k[0], (v // k[0]) % k[1], v // (k[0] * k[1])
        return (x + rest * (k[0] + 1)) * 40.0 + 30, y * 40.0 + 30
    level = _levels(t)
    xs = np.zeros(t.n_nodes)
    width = max(np.bincount(level).max(), 1)
    for l in np.unique(level):
        idx = np.flatnonzero(level == l)
        xs[idx] = (np.arange(len(idx)) + 0.5) * (width * 14.0 / len(idx)) + 20
    return xs, (level.max() - level) * 80.0 + 30


def draw_svg(topology: Topology, path, loads=None) -> Path:
    """Write ``path`` (SVG) showing ``topology`` and optional per-link ``loads``.

    Raises
    ------
    SpecError
        More than 2,000 nodes (too many to read in a drawing), or ``path``
        cannot be written (its directory is missing or read-only).
    """
    t = topology
    if str(path).endswith(("/", os.sep)):   # Path() would drop the slash and write a file of that name
        raise SpecError(f"draw: {str(path)!r} names a directory, expected a file such as "
                        f"{str(path) + 'topology.svg'!r}")
    if t.n_nodes > MAX_NODES:
        raise SpecError(f"--draw: {t.spec} has {t.n_nodes} nodes, expected at most {MAX_NODES} to draw")
    x, y = _positions(t)
    loads = np.zeros(t.n_links) if loads is None else np.asarray(loads, dtype=float)
    top = loads.max() if loads.size and loads.max() > 0 else 1.0
    cable = {}
    for i, (a, b) in enumerate(zip(t.src.tolist(), t.dst.tolist())):
        key = (min(a, b), max(a, b))
        cable[key] = max(cable.get(key, 0.0), loads[i])
    parts = []
    for (a, b), ld in cable.items():
        if ld == 0:
            colour, width = "#cccccc", 1
        else:
            f = ld / top
            colour, width = f"rgb({int(255 * f)},{int(80 * (1 - f))},{int(255 * (1 - f))})", 1 + 3 * f
        parts.append(f'<line x1="{x[a]:.1f}" y1="{y[a]:.1f}" x2="{x[b]:.1f}" y2="{y[b]:.1f}" '
                     f'stroke="{colour}" stroke-width="{width:.1f}"><title>{t.names[a]} - {t.names[b]}: {ld:g}</title></line>')
    for v in range(t.n_nodes):
        fill = "#2b6cb0" if v < t.n_endpoints else "#444444"
        parts.append(f'<circle cx="{x[v]:.1f}" cy="{y[v]:.1f}" r="4" fill="{fill}"><title>{t.names[v]}</title></circle>')
    w, h = x.max() + 40, y.max() + 60
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}">\n'
           f'<text x="10" y="{h - 15:.0f}" font-family="sans-serif" font-size="12">{t.spec} — max link load {top:g}</text>\n'
           + "\n".join(parts) + "\n</svg>\n")
    path = Path(path)
    try:
        path.write_text(svg)
    except OSError as e:   # a missing or read-only directory, a directory given as the file
        raise SpecError(f"draw: cannot write {str(path)!r} ({e.strerror or e}), expected a file in an existing, "
                        "writable directory") from None
    return path
