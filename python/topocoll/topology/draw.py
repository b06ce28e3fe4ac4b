"""Draw a topology with its link loads (matplotlib; SVG, PNG or PDF by suffix).

Layout: fat trees and real fabrics in rows by distance from the endpoints
(endpoints at the bottom); tori as a grid of the first two dimensions with
further dimensions side by side. A cable is coloured by the larger load of its
two directions on a colour scale with its unit (a colour bar), idle cables thin
and grey; parallel cables between the same two nodes are drawn side by side,
each with its own load. A legend names endpoints, switches and idle cables.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from topocoll.errors import SpecError

from .network import Topology

__all__ = ["cables", "draw_svg", "topology_figure"]

MAX_NODES = 2000
#: colour map of loaded cables (light yellow, low, to dark purple, high)
CMAP = "plasma_r"
#: gap between parallel cables, in the layout's units (nodes are 40 apart on a torus grid)
PARALLEL_GAP = 6.0


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


def cables(topology: Topology, loads=None) -> list[tuple[int, int, int, float]]:
    """The cables of ``topology`` with their loads: ``(a, b, j, load)`` with
    ``a < b`` the two nodes, ``j`` = 0, 1, … numbering parallel cables between
    them, and ``load`` the larger of the cable's two directions (the ``j``-th
    link ``a → b`` and the ``j``-th link ``b → a``, in link-id order).

    Examples
    --------
    >>> from topocoll.topology import parse_topology
    >>> t = parse_topology("kary:2,2")
    >>> len(cables(t)) == t.n_links // 2
    True
    """
    loads = np.zeros(topology.n_links) if loads is None else np.asarray(loads, dtype=float)
    if loads.shape != (topology.n_links,):
        raise SpecError(f"draw: loads of shape {loads.shape}, expected one per link ({topology.n_links},)")
    links: dict[tuple[int, int], list[float]] = {}
    for i, (a, b) in enumerate(zip(topology.src.tolist(), topology.dst.tolist())):
        links.setdefault((a, b), []).append(float(loads[i]))
    out = []
    for (a, b), forward in links.items():
        if a > b:
            continue
        backward = links.get((b, a), [])
        for j in range(max(len(forward), len(backward))):
            ld = max(forward[j] if j < len(forward) else 0.0, backward[j] if j < len(backward) else 0.0)
            out.append((a, b, j, ld))
    for (a, b), backward in links.items():     # cables listed only from the larger node's side
        if a > b and (b, a) not in links:
            out.extend((b, a, j, ld) for j, ld in enumerate(backward))
    return out


def topology_figure(topology: Topology, loads=None, *, unit: str | None = None, title: str | None = None,
                    vmax: float | None = None):
    """``topology`` with its cables coloured by ``loads`` (one per directed link).

    Parameters
    ----------
    topology : Topology
    loads : array_like, optional
        Load of every directed link (bytes of a run, flows of a pattern, ...).
    unit : str, optional
        What a load counts, for the colour bar's label (``bytes``, ``flows``).
    title : str, optional
        Default: the spec and the largest load.
    vmax : float, optional
        Top of the colour scale (default: the largest load); give two drawings the same one so a
        colour means the same load in both.

    Returns
    -------
    matplotlib.figure.Figure
        ``axes[0]`` the drawing: one line per cable, its ``gid``
        ``cable-A-B-J`` (:func:`cables`), idle cables grey and dotted; node
        markers in two collections with gids ``endpoints`` and ``switches``;
        ``axes[1]`` the colour bar (label ``link load (UNIT)``).

    Raises
    ------
    SpecError
        More than 2,000 nodes, or ``loads`` not one per link.
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D

    from ..viz.figure import new_figure
    t = topology
    if t.n_nodes > MAX_NODES:
        raise SpecError(f"--draw: {t.spec} has {t.n_nodes} nodes, expected at most {MAX_NODES} to draw")
    x, y = _positions(t)
    drawn = cables(t, loads)
    top = max((ld for *_, ld in drawn), default=0.0)
    if vmax is not None and not (vmax > 0 and vmax >= top):
        raise SpecError(f"--draw: vmax={vmax!r}, expected a positive colour-scale top at least the largest load "
                        f"({top:g})")
    norm = Normalize(0.0, vmax or (top if top > 0 else 1.0))
    cmap = colormaps[CMAP]
    span_x, span_y = float(np.ptp(x)) + 80, float(np.ptp(y)) + 80
    torus = t.family == "torus"
    width = min(16.0, max(5.0, span_x / 60)) + 1.5
    height = min(12.0, max(3.5, span_y / 60)) + 0.8 if torus else min(9.0, 2.0 + 1.6 * (np.ptp(y) / 80 + 1))
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    parallel: dict[tuple[int, int], int] = {}
    for a, b, j, _ in drawn:
        parallel[a, b] = max(parallel.get((a, b), 0), j + 1)
    for a, b, j, ld in sorted(drawn, key=lambda c: c[3]):      # loaded cables on top
        dx, dy = x[b] - x[a], y[b] - y[a]
        length = float(np.hypot(dx, dy)) or 1.0
        shift = (j - (parallel[a, b] - 1) / 2) * PARALLEL_GAP
        ox, oy = -dy / length * shift, dx / length * shift
        style = dict(color="#bbbbbb", linewidth=0.8, linestyle=":") if ld == 0 else \
            dict(color=cmap(norm(ld)), linewidth=1.2 + 2.8 * ld / norm.vmax)
        line = Line2D([x[a] + ox, x[b] + ox], [y[a] + oy, y[b] + oy], zorder=1 + (ld > 0), **style)
        line.set_gid(f"cable-{a}-{b}-{j}")
        ax.add_line(line)
    n = t.n_endpoints
    ends = ax.scatter(x[:n], y[:n], s=22, c="#2b6cb0", zorder=3, label="endpoint")
    ends.set_gid("endpoints")
    if t.n_nodes > n:
        sw = ax.scatter(x[n:], y[n:], s=40, c="#444444", marker="s", zorder=3, label="switch")
        sw.set_gid("switches")
    ax.plot([], [], color="#bbbbbb", linestyle=":", label="idle cable")
    if any(p > 1 for p in parallel.values()):
        ax.plot([], [], color="none", label=f"parallel cables side by side (up to {max(parallel.values())})")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.02), ncols=4, frameon=False, fontsize="small")
    if torus:
        ax.set_aspect("equal")
    ax.set_xlim(x.min() - 20, x.max() + 20)
    ax.set_ylim(y.min() - 20, y.max() + 20)
    if not torus:
        ax.invert_yaxis()        # rows by distance from the endpoints: endpoints at the bottom
    ax.set_axis_off()
    ax.set_title(title or f"{t.spec}: link loads, largest {top:g}" + (f" {unit}" if unit else ""))
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.8)
    bar.set_label(f"link load ({unit})" if unit else "link load (larger direction of each cable)")
    return fig


def draw_svg(topology: Topology, path, loads=None, *, unit: str | None = None, title: str | None = None,
             vmax: float | None = None) -> Path:
    """Write ``path`` showing ``topology`` and optional per-link ``loads``
    (:func:`topology_figure`); the suffix picks the format (``.svg``, ``.png``, ``.pdf``).

    Raises
    ------
    SpecError
        More than 2,000 nodes (too many to read in a drawing), or ``path``
        cannot be written (its directory is missing or read-only).
    """
    from ..viz.figure import check_path, save
    if str(path).endswith(("/", os.sep)):   # Path() would drop the slash and write a file of that name
        raise SpecError(f"draw: {str(path)!r} names a directory, expected a file such as "
                        f"{str(path) + 'topology.svg'!r}")
    check_path(path, "draw")
    parent = Path(path).parent
    if not (parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)):   # before drawing
        raise SpecError(f"draw: cannot write {str(path)!r} (directory {str(parent)!r} "
                        f"{'is not writable' if parent.is_dir() else 'does not exist'}), expected a file in an "
                        "existing, writable directory")
    fig = topology_figure(topology, loads, unit=unit, title=title, vmax=vmax)
    return save(fig, path, "draw")       # whole or not at all
