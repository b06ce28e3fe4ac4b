"""Notched box plots, the way the network-noise paper shows its samples.

Hoefler, Schneider & Lumsdaine (network-noise paper §2.1, Fig. 3) plot the
distribution of single measurements as box plots: the bar in the middle of
each box is the sample median, the box spans the 25th to the 75th
percentile, the whiskers the total range, and the *notches* the 95%
confidence interval of the median, ``median ± 1.57·IQR/√n`` (McGill, Tukey
& Larsen 1978; the paper cites Emerson & Strenio): where the notches of two
boxes do not overlap, the medians differ with 95% confidence. The statistics
are those of :class:`topocoll.sim.noise.NoiseRuns`, so a simulated ensemble
and a measured one are summarised alike; matplotlib draws them
(:meth:`~matplotlib.axes.Axes.bxp` with these statistics, not its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import SpecError

__all__ = ["BOX_FILL", "BOX_OUTLINE", "REFERENCE_COLOUR", "box_stats", "boxplot_figure", "write_boxplot_png"]

BOX_OUTLINE = "#1f3f8f"
"""Colour of the box outline and the whiskers (a dark blue)."""
BOX_FILL = "#c6d6f0"
REFERENCE_COLOUR = "#c83c3c"
"""The dashed reference line (1.0: no slowdown)."""


def box_stats(values) -> dict:
    """What one notched box shows, from its raw samples.

    Parameters
    ----------
    values : array_like of float
        The samples (at least one, all finite).

    Returns
    -------
    dict
        ``n``, ``min``, ``q1``, ``median``, ``q3``, ``max``, ``mean`` and
        ``notch`` = ``(median − 1.57·IQR/√n, median + 1.57·IQR/√n)``;
        quartiles are NumPy's (linear) percentiles.

    Raises
    ------
    SpecError
        If ``values`` is empty or holds a non-finite number.

    References
    ----------
    T. Hoefler, T. Schneider, A. Lumsdaine, "The Impact of Network Noise at
    Large-Scale Communication Performance", IPDPS workshops 2009, §2.1 and
    Fig. 3 — seed ``network-noise-large-scale.txt``, §2.1; R. McGill, J. W.
    Tukey, W. A. Larsen, "Variations of box plots", The American
    Statistician, 1978.

    Examples
    --------
    >>> s = box_stats([1.0, 2.0, 3.0, 4.0, 5.0])
    >>> s["median"], s["q1"], s["q3"], s["min"], s["max"]
    (3.0, 2.0, 4.0, 1.0, 5.0)
    >>> [round(v, 4) for v in s["notch"]]     # 3 ± 1.57·2/√5
    [1.5957, 4.4043]
    """
    from ..sim.noise import NoiseRuns   # one definition of median, quartiles and notch

    v = _samples(values, "box_stats")
    # NoiseRuns divides its times by the clean time; a clean time of 1 hands
    # it the samples as they are
    runs = NoiseRuns(clean=1.0, times=v, seeds=(), model="samples", ratio=0.0)
    q1, q3 = runs.quartiles
    return {"n": int(v.size), "min": float(v.min()), "q1": q1, "median": runs.median, "q3": q3,
            "max": float(v.max()), "mean": runs.mean, "notch": tuple(float(x) for x in runs.notch)}


def _samples(values, where: str, label: str | None = None) -> np.ndarray:
    name = f"series {label!r}" if label is not None else "values"
    try:
        v = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise SpecError(f"{where}: {name} are not numbers, expected a sequence of floats") from None
    if v.size == 0:
        raise SpecError(f"{where}: {name} has no samples, expected at least one")
    if not np.all(np.isfinite(v)):
        raise SpecError(f"{where}: {name} has a non-finite sample, expected finite numbers")
    return v


def _series(series, where: str) -> list[tuple[str, np.ndarray]]:
    """``[(label, samples), ...]`` from a mapping or a sequence of pairs."""
    items = list(series.items()) if isinstance(series, Mapping) else list(series or [])
    if not items:
        raise SpecError(f"{where}: no series, expected at least one (label, samples) pair")
    out = []
    for item in items:
        try:
            label, values = item
        except (TypeError, ValueError):
            raise SpecError(f"{where}: series entry {item!r}, expected a (label, samples) pair") from None
        out.append((str(label), _samples(values, where, str(label))))
    return out


def boxplot_figure(series, *, title: str | None = None, ylabel: str = "", reference: float | None = None):
    """One notched box per series, left to right.

    Parameters
    ----------
    series : mapping or sequence of (label, samples)
        One box per entry; a label may hold a newline. A series of one
        sample is a flat box.
    title : str, optional
    ylabel : str
        Quantity and unit of the value axis.
    reference : float, optional
        A value drawn as a dashed red line across the plot (1.0: no slowdown).

    Returns
    -------
    matplotlib.figure.Figure
        One axes; box ``i`` is drawn from :func:`box_stats` of series ``i``:
        the box from the first to the third quartile, the median bar, the
        notch (clipped to the box, as :func:`box_stats`' interval may reach
        past the hinges with few samples), whiskers to the minimum and
        maximum, no outliers. The x tick labels are the series' labels.

    Raises
    ------
    SpecError
        No series, a series without samples or with a non-finite sample.

    References
    ----------
    T. Hoefler, T. Schneider, A. Lumsdaine, "The Impact of Network Noise at
    Large-Scale Communication Performance", IPDPS workshops 2009, §2.1,
    Fig. 3 — seed ``network-noise-large-scale.txt``, §2.1.

    Examples
    --------
    >>> fig = boxplot_figure({"a": [1.0, 2.0, 3.0], "b": [2.0]}, ylabel="slowdown", reference=1.0)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()], fig.axes[0].get_ylabel()
    (['a', 'b'], 'slowdown')
    """
    from .figure import new_figure
    items = _series(series, "boxplot_figure")
    if reference is not None:
        try:
            reference = float(reference)
        except (TypeError, ValueError):
            reference = float("nan")
        if not np.isfinite(reference):
            raise SpecError(f"boxplot_figure: reference={reference!r}, expected a finite number")
    stats = []
    for label, values in items:
        s = box_stats(values)
        stats.append({"label": label, "med": s["median"], "q1": s["q1"], "q3": s["q3"], "whislo": s["min"],
                      "whishi": s["max"], "cilo": max(s["notch"][0], s["q1"]), "cihi": min(s["notch"][1], s["q3"]),
                      "mean": s["mean"], "fliers": []})
    fig = new_figure(max(4.5, 1.0 + 0.9 * len(items)), 4.2)
    ax = fig.add_subplot()
    ax.bxp(stats, shownotches=True, showfliers=False, patch_artist=True,
           boxprops=dict(facecolor=BOX_FILL, edgecolor=BOX_OUTLINE),
           whiskerprops=dict(color=BOX_OUTLINE), capprops=dict(color=BOX_OUTLINE),
           medianprops=dict(color="black", linewidth=2))
    if reference is not None:
        ax.axhline(reference, color=REFERENCE_COLOUR, linestyle="--", linewidth=1, label=f"{reference:g}")
    if title:
        ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if len(items) > 6:
        ax.tick_params(axis="x", labelrotation=30)
    return fig


def write_boxplot_png(series, path, *, title: str | None = None, ylabel: str = "",
                      reference: float | None = None) -> Path:
    """Draw :func:`boxplot_figure` and write it to ``path`` (``.png``, ``.svg``
    or ``.pdf`` by suffix). Raises :class:`SpecError` as :func:`boxplot_figure`
    does (before any file is written) and for an unknown suffix."""
    from .figure import check_path, save
    check_path(path, "write_boxplot_png")
    return save(boxplot_figure(series, title=title, ylabel=ylabel, reference=reference), path, "write_boxplot_png")
