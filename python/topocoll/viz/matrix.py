"""The per-pair bandwidth matrix of a simulated run, as Cavin & Demengeon draw it.

Cavin & Demengeon measure contention with Moody's methodology (§5): every
process times its sends to every other process; the bandwidths form a matrix
whose row ``a``, column ``b`` is the bandwidth process ``a`` measured sending
to process ``b``; the diagonal (a process sending to itself) is not measured.
The matrix becomes a grey-scale bitmap, one pixel per entry, the maximum
bandwidth white (255) and every other entry scaled towards black (0) by its
fraction of the maximum, with a histogram of the pixel values beside it
(horizontal axis: pixel value, 0 black on the left to 255 white on the right;
vertical axis: number of pixels). Uniform, near-white images mean little
contention (their Fig. 4, a crossbar); dark, spread histograms mean hot links
(Fig. 6, the same fat-tree with the nodes in alphabetical order).
:func:`matrix_figure` draws it with matplotlib: axes in ranks, a colour bar
in MB/s, and the histogram in MB/s with the minimum, mean and maximum per pair.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import SpecError
from .timeline import _traced

__all__ = ["NAN_COLOUR", "bandwidth_matrix", "histogram", "matrix_figure", "summary", "write_matrix_png"]

NAN_COLOUR = (70, 110, 170)
"""RGB of unmeasured pairs (no message, or the diagonal): a mid blue, never a
grey, so it cannot be read as a bandwidth."""



def bandwidth_matrix(sim) -> np.ndarray:
    """Bandwidth each rank achieved sending to each other rank, B/s.

    Parameters
    ----------
    sim : topocoll.sim.engine.Simulation
        A run simulated with ``trace=True``.

    Returns
    -------
    ndarray of float64, shape (p, p)
        Row ``a``, column ``b``: bytes rank ``a`` sent to rank ``b`` divided by
        the time those messages spent between injection and arrival
        (``arrive − inject``); several messages between one pair give the sum
        of their bytes over the sum of their times. NaN where ``a`` sent ``b``
        nothing, where the messages took no time, and on the diagonal (not
        measured, as in the paper).

    Raises
    ------
    SpecError
        If ``sim`` was simulated without ``trace=True``.

    References
    ----------
    J. Cavin, J. Demengeon, "Shift-based parallel image compositing on
    InfiniBand fat-trees", EGPGV 2012, §5 (after Moody's methodology and
    tools) — seed ``shift-based-compositing-fat-tree.txt``, §5.

    Examples
    --------
    >>> import numpy as np
    >>> from topocoll.schedules import generate
    >>> from topocoll.sim.engine import simulate
    >>> sim = simulate(generate("allreduce", "ring", 4, count=16, itemsize=8), trace=True)
    >>> m = bandwidth_matrix(sim)
    >>> [(int(a), int(b)) for a, b in np.argwhere(~np.isnan(m))]   # rank r sends to r + 1
    [(0, 1), (1, 2), (2, 3), (3, 0)]
    """
    tr = _traced(sim, "bandwidth_matrix")
    p = len(sim.rank_done)
    send = np.asarray(tr["send"], dtype=np.int64)
    recv = np.asarray(tr["recv"], dtype=np.int64)
    rank = np.asarray(tr["rank"], dtype=np.int64)
    src, dst = rank[send], rank[recv]
    nbytes = np.asarray(tr["nbytes"], dtype=np.float64)[send]
    took = np.asarray(tr["arrive"], dtype=np.float64) - np.asarray(tr["inject"], dtype=np.float64)
    pair = src * p + dst
    total_bytes = np.bincount(pair, weights=nbytes, minlength=p * p)
    total_time = np.bincount(pair, weights=took, minlength=p * p)
    out = np.full(p * p, np.nan)
    ok = total_time > 0
    out[ok] = total_bytes[ok] / total_time[ok]
    out = out.reshape(p, p)
    np.fill_diagonal(out, np.nan)
    return out


def _check_matrix(matrix, where: str) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise SpecError(f"{where}: matrix of shape {m.shape}, expected a non-empty square (p, p) array")
    if np.any(m[~np.isnan(m)] < 0) or np.any(np.isinf(m)):
        raise SpecError(f"{where}: matrix has negative or infinite entries, expected bandwidths >= 0 (B/s) or NaN")
    return m


def _vmax(m: np.ndarray, vmax, where: str) -> float:
    if vmax is None:
        values = m[~np.isnan(m)]
        return float(values.max()) if values.size else 0.0
    try:
        v = float(vmax)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(vmax, bool) or not math.isfinite(v) or v <= 0:
        raise SpecError(f"{where}: vmax={vmax!r}, expected a bandwidth > 0 (B/s)")
    return v


def histogram(matrix, bins: int = 20, *, vmax: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of the measured bandwidths of ``matrix`` (NaN entries left out).

    Parameters
    ----------
    matrix : array_like, shape (p, p)
        Bandwidths, B/s, NaN where not measured (:func:`bandwidth_matrix`).
    bins : int
        Number of equal-width bins over ``[0, vmax]``.
    vmax : float, optional
        Upper edge, B/s (default: the largest bandwidth). Larger values fall
        in the last bin.

    Returns
    -------
    counts : ndarray of int64, shape (bins,)
    edges : ndarray of float64, shape (bins + 1,), B/s

    Raises
    ------
    SpecError
        If ``matrix`` is not square, ``bins`` is not a positive integer or
        ``vmax`` is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> counts, edges = histogram(np.array([[np.nan, 1e9], [5e8, np.nan]]), bins=2)
    >>> counts.tolist(), edges.tolist()
    ([0, 2], [0.0, 500000000.0, 1000000000.0])
    """
    m = _check_matrix(matrix, "histogram")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise SpecError(f"histogram: bins={bins!r}, expected an integer >= 1")
    top = _vmax(m, vmax, "histogram")
    values = np.minimum(m[~np.isnan(m)], top) if top > 0 else m[~np.isnan(m)]
    counts, edges = np.histogram(values, bins=int(bins), range=(0.0, top if top > 0 else 1.0))
    return counts.astype(np.int64), edges


def summary(matrix) -> dict:
    """Minimum, mean and maximum of the measured bandwidths (B/s) and how many
    pairs were measured — the statistics the paper reports with each image.

    Examples
    --------
    >>> import numpy as np
    >>> summary(np.array([[np.nan, 2e9], [1e9, np.nan]]))
    {'min': 1000000000.0, 'mean': 1500000000.0, 'max': 2000000000.0, 'pairs': 2}
    """
    m = _check_matrix(matrix, "summary")
    values = m[~np.isnan(m)]
    if not values.size:
        return {"min": math.nan, "mean": math.nan, "max": math.nan, "pairs": 0}
    return {"min": float(values.min()), "mean": float(values.mean()), "max": float(values.max()),
            "pairs": int(values.size)}


def matrix_figure(matrix, *, vmax: float | None = None, title: str | None = None, bins: int = 64):
    """The paper's grey-scale matrix with axes, a colour bar in MB/s and its histogram.

    Parameters
    ----------
    matrix : array_like, shape (p, p)
        Bandwidths, B/s, NaN where not measured (:func:`bandwidth_matrix`).
    vmax : float, optional
        Bandwidth drawn white, B/s (default: the largest in ``matrix``; give a
        common value to compare several runs).
    title : str, optional
        Line above the matrix (default: what it shows).
    bins : int
        Histogram bins over ``[0, vmax]`` (:func:`histogram`).

    Returns
    -------
    matplotlib.figure.Figure
        Three axes: ``axes[0]`` the matrix (x: receiving rank, y: sending
        rank, rank 0 top left; one image whose data are the bandwidths in
        MB/s), ``axes[1]`` its colour bar (label ``bandwidth (MB/s)``),
        ``axes[2]`` the histogram of the measured pairs (one bar per bin,
        heights :func:`histogram`'s counts) with dashed lines at the
        minimum, mean and maximum, which its title prints in MB/s.

    Notes
    -----
    Grey scale as in the paper: ``vmax`` white, zero black; unmeasured
    entries (NaN, the diagonal) in :data:`NAN_COLOUR`, named in the legend
    under the matrix. MB = 10^6 B.

    References
    ----------
    J. Cavin, J. Demengeon, "Shift-based parallel image compositing on
    InfiniBand fat-trees", EGPGV 2012, §5, Figs. 4–7 — seed
    ``shift-based-compositing-fat-tree.txt``, §5.

    Examples
    --------
    >>> import numpy as np
    >>> fig = matrix_figure(np.array([[np.nan, 2e9], [1e9, np.nan]]))
    >>> fig.axes[0].get_xlabel(), fig.axes[1].get_ylabel()
    ('receiving rank', 'bandwidth (MB/s)')
    >>> fig.axes[2].get_title()
    'per pair: min 1000, mean 1500, max 2000 MB/s (2 pairs)'
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    from .figure import new_figure
    m = _check_matrix(matrix, "matrix_figure")
    top = _vmax(m, vmax, "matrix_figure")
    p = m.shape[0]
    counts, edges = histogram(m, bins, vmax=top if top > 0 else None)
    stats = summary(m)
    fig = new_figure(6.4, 7.6)
    grid = fig.add_gridspec(2, 1, height_ratios=(4, 1.3))
    ax = fig.add_subplot(grid[0])
    grey = ListedColormap(np.linspace(0.0, 1.0, 256)[:, None].repeat(3, axis=1), name="paper-grey"
                          ).with_extremes(bad=tuple(c / 255 for c in NAN_COLOUR))
    image = ax.imshow(np.ma.masked_invalid(m / 1e6), cmap=grey, vmin=0.0, vmax=(top or 1.0) / 1e6,
                      interpolation="nearest", origin="upper", extent=(-0.5, p - 0.5, p - 0.5, -0.5))
    ax.set_xlabel("receiving rank")
    ax.set_ylabel("sending rank")
    ax.set_title(title or f"bandwidth per pair, {p} ranks (row: sender, column: receiver)")
    bar = fig.colorbar(image, ax=ax, shrink=0.85)
    bar.set_label("bandwidth (MB/s)")
    ax.legend(handles=[Patch(facecolor=grey.get_bad(), label="not measured (diagonal, no message)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False, fontsize="small")
    hx = fig.add_subplot(grid[1])
    hx.bar(edges[:-1] / 1e6, counts, width=np.diff(edges) / 1e6, align="edge", color="0.25")
    if stats["pairs"]:
        for key, style in (("min", ":"), ("mean", "--"), ("max", "-.")):
            hx.axvline(stats[key] / 1e6, color="tab:red", linestyle=style, linewidth=1, label=key)
        hx.legend(fontsize="small", ncols=3, loc="upper left")
        hx.set_title(f"per pair: min {stats['min'] / 1e6:.0f}, mean {stats['mean'] / 1e6:.0f}, "
                     f"max {stats['max'] / 1e6:.0f} MB/s ({stats['pairs']} pairs)", fontsize="medium")
    else:
        hx.set_title("no pair measured", fontsize="medium")
    hx.set_xlim(0, edges[-1] / 1e6)
    hx.set_xlabel("bandwidth (MB/s)")
    hx.set_ylabel("pairs")
    return fig


def write_matrix_png(matrix, path, *, vmax: float | None = None, title: str | None = None) -> Path:
    """Draw ``matrix`` (:func:`matrix_figure`) and write it to ``path``.

    Parameters
    ----------
    matrix : array_like, shape (p, p)
        Bandwidths, B/s, NaN where not measured (:func:`bandwidth_matrix`).
    path : str or os.PathLike
        File to write; its suffix picks the format (``.png``, ``.svg``, ``.pdf``).
    vmax : float, optional
        Bandwidth drawn white, B/s (default: the largest in ``matrix``).
    title : str, optional
        See :func:`matrix_figure`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    SpecError
        If ``matrix`` is not square with entries >= 0 or NaN, ``vmax`` is not
        positive, or ``path`` cannot be written or has another suffix.
    """
    from .figure import check_path, save
    check_path(path, "write_matrix_png")
    m = _check_matrix(matrix, "write_matrix_png")
    _vmax(m, vmax, "write_matrix_png")
    return save(matrix_figure(m, vmax=vmax, title=title), path, "write_matrix_png")
