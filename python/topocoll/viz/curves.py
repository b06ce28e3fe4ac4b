"""Time against message size, one curve per algorithm: what ``compare`` ranks,
as a picture (log axes: sizes and times span decades).

Examples
--------
>>> from topocoll.tune import rank
>>> rows = rank("allreduce", 8, [8, 1024, 1 << 20], workers=1)
>>> fig = curves_figure(rows, title="allreduce, P = 8")
>>> ax = fig.axes[0]
>>> ax.get_xscale(), ax.get_yscale(), ax.get_xlabel(), ax.get_ylabel()
('log', 'log', 'message size (B)', 'time (µs)')
>>> len(ax.get_lines()) == len({r.algorithm for r in rows})
True
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import SpecError

__all__ = ["bars_figure", "curve_label", "curves", "curves_figure", "write_bars", "write_curves"]

_MARKERS = "osD^v<>ph*XP"


def curve_label(algorithm: str, params: dict | None) -> str:
    """``algorithm (k=v, ...)``, or the bare name without parameters.

    >>> curve_label("bruck", {"n": 2}), curve_label("ring", {})
    ('bruck (n=2)', 'ring')
    """
    shown = ", ".join(f"{k}={v}" for k, v in (params or {}).items())
    return f"{algorithm} ({shown})" if shown else algorithm


def curves(rows) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{algorithm: (sizes in B, times in s)}`` from ranked rows (anything with
    ``algorithm``, ``size``, ``time`` and optionally ``params``), sizes
    ascending. An algorithm whose resolved parameters change with the size
    (``n='auto'``) stays one curve, named by its algorithm alone."""
    by: dict[str, list[tuple[int, float]]] = {}
    labels: dict[str, set] = {}
    for r in rows:
        t = float(r.time)
        if not math.isfinite(t):
            continue
        by.setdefault(r.algorithm, []).append((int(r.size), t))
        labels.setdefault(r.algorithm, set()).add(curve_label(r.algorithm, getattr(r, "params", None)))
    out = {}
    for algorithm, points in by.items():
        points.sort()
        name = next(iter(labels[algorithm])) if len(labels[algorithm]) == 1 else algorithm
        out[name] = (np.array([s for s, _ in points], dtype=float), np.array([t for _, t in points]))
    return out


def curves_figure(rows, *, title: str | None = None, time_scale: tuple[float, str] = (1e6, "µs")):
    """One line per algorithm, time (µs) against message size (B), log–log.

    Parameters
    ----------
    rows : iterable of :class:`topocoll.tune.Ranked` (or alike)
    title : str, optional
    time_scale : (float, str)
        Factor and unit of the time axis (default ``(1e6, "µs")``), to match a table beside it.

    Returns
    -------
    matplotlib.figure.Figure
        One axes with one line per algorithm (label :func:`curve_label`),
        a legend ordered by the time at the largest size (fastest first).

    Raises
    ------
    SpecError
        No row with a finite time, or a size that is not positive.
    """
    from .figure import new_figure
    data = curves(rows)
    if not data:
        raise SpecError("curves_figure: no result with a finite time, expected at least one ranked row")
    if any((sizes <= 0).any() for sizes, _ in data.values()):
        raise SpecError("curves_figure: a message size <= 0, expected sizes > 0 B on a log axis")
    fig = new_figure(6.4, 4.4)
    ax = fig.add_subplot()
    order = sorted(data, key=lambda name: (data[name][1][-1], name))
    for i, name in enumerate(order):
        sizes, times = data[name]
        ax.plot(sizes, times * time_scale[0], marker=_MARKERS[i % len(_MARKERS)], label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (B)")
    ax.set_ylabel(f"time ({time_scale[1]})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def write_curves(rows, path, *, title: str | None = None, time_scale: tuple[float, str] = (1e6, "µs")) -> Path:
    """Write :func:`curves_figure` to ``path`` (``.png``, ``.svg`` or ``.pdf``)."""
    from .figure import check_path, save
    check_path(path, "write_curves")
    return save(curves_figure(rows, title=title, time_scale=time_scale), path, "write_curves")


def bars_figure(groups: dict, *, ylabel: str, scale: float = 1.0, title: str | None = None):
    """Grouped horizontal bars: ``{series: {algorithm: value}}``, one bar per
    (algorithm, series), values multiplied by ``scale`` (1e3: s → ms).

    Algorithms are listed top to bottom by their value in the first series
    (smallest first); an algorithm missing from a series has no bar there.

    Returns
    -------
    matplotlib.figure.Figure
        One axes; its bar containers are labelled by series (the legend),
        the y tick labels are the algorithms.

    Examples
    --------
    >>> fig = bars_figure({"routing": {"a": 2.0, "b": 1.0}, "random": {"a": 3.0}}, ylabel="s")
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['b', 'a']
    >>> [[float(bar.get_width()) for bar in c] for c in fig.axes[0].containers]
    [[1.0, 2.0], [3.0]]
    """
    from .figure import new_figure
    if not groups or not any(groups.values()):
        raise SpecError("bars_figure: no values, expected {series: {algorithm: value}}")
    first = next(iter(groups.values()))
    names = sorted(first, key=lambda a: (first[a], a))
    names += sorted({a for g in groups.values() for a in g} - set(names))
    fig = new_figure(6.4, 1.2 + 0.32 * len(names) * max(1, len(groups)))
    ax = fig.add_subplot()
    height = 0.8 / len(groups)
    for i, (series, values) in enumerate(groups.items()):
        rows = [j for j, a in enumerate(names) if a in values and math.isfinite(values[a])]
        ax.barh([j - 0.4 + height * (i + 0.5) for j in rows], [values[names[j]] * scale for j in rows],
                height=height, label=series)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel(ylabel)
    ax.grid(axis="x", alpha=0.3)
    if len(groups) > 1:       # under the axes: never over a bar
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=len(groups),
                  frameon=False)
    if title:
        ax.set_title(title, fontsize="medium")
    return fig


def write_bars(groups: dict, path, *, ylabel: str, scale: float = 1.0, title: str | None = None) -> Path:
    """Write :func:`bars_figure` to ``path`` (``.png``, ``.svg`` or ``.pdf``)."""
    from .figure import check_path, save
    check_path(path, "write_bars")
    return save(bars_figure(groups, ylabel=ylabel, scale=scale, title=title), path, "write_bars")
