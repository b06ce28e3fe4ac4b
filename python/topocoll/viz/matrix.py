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
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import SpecError
from .timeline import _traced

__all__ = ["NAN_COLOUR", "bandwidth_matrix", "histogram", "summary", "write_matrix_png"]

NAN_COLOUR = (70, 110, 170)
"""RGB of unmeasured pairs (no message, or the diagonal): a mid blue, never a
grey, so it cannot be read as a bandwidth."""

_MIN_SIDE = 256          # the matrix is scaled up to at least this many pixels
_HIST_HEIGHT = 96        # histogram panel height, pixels
_MARGIN = 8


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


def _pixel_values(m: np.ndarray, vmax: float) -> np.ndarray:
    """Grey level 0..255 of every entry (the maximum 255), -1 where NaN."""
    out = np.full(m.shape, -1, dtype=np.int16)
    measured = ~np.isnan(m)
    if vmax > 0:
        out[measured] = np.rint(np.clip(m[measured] / vmax, 0.0, 1.0) * 255.0).astype(np.int16)
    else:
        out[measured] = 0
    return out


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


def write_matrix_png(matrix, path, *, vmax: float | None = None) -> Path:
    """Draw ``matrix`` as the paper's grey-scale image with its histogram under it.

    Parameters
    ----------
    matrix : array_like, shape (p, p)
        Bandwidths, B/s, NaN where not measured (:func:`bandwidth_matrix`).
    path : str or os.PathLike
        PNG file to write.
    vmax : float, optional
        Bandwidth drawn white, B/s (default: the largest in ``matrix``; give a
        common value to compare several runs).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    SpecError
        If ``matrix`` is not square with entries >= 0 or NaN, ``vmax`` is not
        positive, or Pillow is not installed.

    Notes
    -----
    An RGB PNG. Top: entry ``(a, b)`` is a square of ``s × s`` pixels at row
    ``a``, column ``b``, with ``s = ⌈256 / p⌉`` (at least 1) so that small
    matrices stay visible; its grey level is ``round(255 · bandwidth /
    vmax)`` (clipped), so ``vmax`` is white and zero is black, as in the
    paper. Unmeasured entries (NaN, the diagonal) are :data:`NAN_COLOUR`.
    Below, after an 8-pixel margin: a 96-pixel-high histogram of the grey
    levels of the measured entries, one black bar per level 0…255 from left
    to right, heights relative to the tallest, on white.

    References
    ----------
    J. Cavin, J. Demengeon, "Shift-based parallel image compositing on
    InfiniBand fat-trees", EGPGV 2012, §5, Figs. 4–7 — seed
    ``shift-based-compositing-fat-tree.txt``, §5.
    """
    m = _check_matrix(matrix, "write_matrix_png")
    top = _vmax(m, vmax, "write_matrix_png")
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        raise SpecError("write_matrix_png: Pillow is not installed, expected `pip install pillow` "
                        "(the viz extra)") from None
    p = m.shape[0]
    scale = max(1, -(-_MIN_SIDE // p))
    side = p * scale
    grey = _pixel_values(m, top)
    rgb = np.empty((p, p, 3), dtype=np.uint8)
    rgb[...] = np.clip(grey, 0, 255).astype(np.uint8)[..., None]
    rgb[grey < 0] = NAN_COLOUR
    rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)

    height = side + _MARGIN + _HIST_HEIGHT
    canvas = np.full((height, side, 3), 255, dtype=np.uint8)
    canvas[:side] = rgb
    image = Image.fromarray(canvas)               # (h, w, 3) uint8: RGB
    draw = ImageDraw.Draw(image)
    counts = np.bincount(grey[grey >= 0].ravel(), minlength=256)
    tallest = int(counts.max()) if counts.size else 0
    y0, y1 = side + _MARGIN, height - 1           # panel rows; y1 is the baseline
    draw.line([(0, y1), (side - 1, y1)], fill=(0, 0, 0))
    if tallest > 0:
        for level in np.flatnonzero(counts).tolist():
            x0 = level * side // 256
            x1 = max(x0, (level + 1) * side // 256 - 1)
            h = max(1, round(int(counts[level]) / tallest * (y1 - y0)))
            draw.rectangle([x0, y1 - h, x1, y1], fill=(0, 0, 0))
    path = Path(path)
    image.save(path, format="PNG")
    return path
