"""Notched box plots as PNG, the way the network-noise paper shows its samples.

Hoefler, Schneider & Lumsdaine (network-noise paper §2.1, Fig. 3) plot the
distribution of single measurements as box plots: the bar in the middle of
each box is the sample median, the box spans the 25th to the 75th
percentile, the whiskers the total range, and the *notches* the 95%
confidence interval of the median, ``median ± 1.57·IQR/√n`` (McGill, Tukey
& Larsen 1978; the paper cites Emerson & Strenio): where the notches of two
boxes do not overlap, the medians differ with 95% confidence. The statistics
are those of :class:`topocoll.sim.noise.NoiseRuns`, so a simulated ensemble
and a measured one are summarised alike.

Drawn with Pillow only (no matplotlib), like :mod:`.matrix`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import SpecError

__all__ = ["BACKGROUND", "BOX_FILL", "BOX_OUTLINE", "MEDIAN_COLOUR", "Box", "box_stats", "layout",
           "write_boxplot_png"]

BACKGROUND = (255, 255, 255)
BOX_OUTLINE = (31, 63, 143)
"""RGB of the box outline and the whiskers (a dark blue; tests look for it)."""
BOX_FILL = (198, 214, 240)
MEDIAN_COLOUR = (0, 0, 0)
"""The median bar is black, as in the paper's Fig. 3."""
REFERENCE_COLOUR = (200, 60, 60)
AXIS_COLOUR = (0, 0, 0)

_SLOT = 84           # pixels per box, horizontally
_BOX = 44            # box width, pixels
_PLOT_HEIGHT = 240   # height of the value axis, pixels
_LEFT = 68           # room for the tick labels
_TOP = 30            # room for the title
_BOTTOM = 44         # room for two lines of box labels
_RIGHT = 12
_MIN_WIDTH = 360     # room for a title line even with one or two boxes


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


@dataclass(frozen=True)
class Box:
    """Pixel geometry of one box (``y`` grows downwards) and its statistics.

    ``x0``/``x1`` are the box's outer columns; at the median the outline is
    pulled in by ``indent`` pixels on both sides (the notch); ``y_notch_hi``
    ≤ ``y_median`` ≤ ``y_notch_lo`` are the notch ends, clipped to the box.
    """

    label: str
    x0: int
    x1: int
    indent: int
    y_q3: int
    y_q1: int
    y_median: int
    y_notch_hi: int
    y_notch_lo: int
    y_max: int
    y_min: int
    stats: dict


@dataclass(frozen=True)
class Layout:
    """Image size, the value range drawn and the boxes."""

    width: int
    height: int
    lo: float
    hi: float
    boxes: tuple[Box, ...]

    def y(self, value: float) -> int:
        """Pixel row of ``value`` (the top of the value axis is ``hi``)."""
        return _TOP + int(round((self.hi - value) / (self.hi - self.lo) * (_PLOT_HEIGHT - 1)))


def _value_range(stats: list[dict], reference: float | None) -> tuple[float, float]:
    lo = min(s["min"] for s in stats)
    hi = max(s["max"] for s in stats)
    if reference is not None:
        lo, hi = min(lo, reference), max(hi, reference)
    if hi == lo:   # every sample equal: give the box some room
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def layout(series, *, reference: float | None = None) -> Layout:
    """Where every box of :func:`write_boxplot_png` goes, in pixels.

    Parameters
    ----------
    series : mapping or sequence of (label, samples)
        One box per entry, left to right.
    reference : float, optional
        A value the axis must include (the dashed line of the plot; 1.0 for
        slowdowns).

    Returns
    -------
    Layout

    Examples
    --------
    >>> lay = layout({"a": [1, 2, 3, 4, 5], "b": [2.0]})
    >>> lay.width, lay.height, len(lay.boxes)
    (360, 314, 2)
    >>> b = lay.boxes[0]               # q1 = 2, median = 3, q3 = 4: the notch (3 ± 2.8) is clipped to the box
    >>> (b.y_q3, b.y_notch_hi, b.y_median, b.y_notch_lo, b.y_q1)
    (95, 95, 150, 204, 204)
    """
    items = _series(series, "layout")
    if reference is not None and not math.isfinite(float(reference)):
        raise SpecError(f"layout: reference={reference!r}, expected a finite number")
    stats = [box_stats(v) for _, v in items]
    lo, hi = _value_range(stats, None if reference is None else float(reference))
    width = max(_MIN_WIDTH, _LEFT + _SLOT * len(items) + _RIGHT)
    height = _TOP + _PLOT_HEIGHT + _BOTTOM
    frame = Layout(width, height, lo, hi, ())
    boxes = []
    for i, ((label, _), s) in enumerate(zip(items, stats)):
        centre = _LEFT + _SLOT * i + _SLOT // 2
        x0, x1 = centre - _BOX // 2, centre + _BOX // 2
        # a notch reaching past a hinge is clipped to it (R folds it back instead)
        notch_lo, notch_hi = max(s["notch"][0], s["q1"]), min(s["notch"][1], s["q3"])
        boxes.append(Box(label, x0, x1, _BOX // 4, frame.y(s["q3"]), frame.y(s["q1"]), frame.y(s["median"]),
                         frame.y(notch_hi), frame.y(notch_lo), frame.y(s["max"]), frame.y(s["min"]), s))
    return Layout(width, height, lo, hi, tuple(boxes))


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values in ``[lo, hi]`` (steps of 1, 2 or 5 × 10^k)."""
    raw = (hi - lo) / max(1, count - 1)
    scale = 10.0 ** math.floor(math.log10(raw))
    step = next(m * scale for m in (1, 2, 5, 10) if m * scale >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


def _fit(draw, text: str, font, width: int) -> str:
    """``text`` cut (with an ellipsis) to ``width`` pixels."""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def _draw_box(draw, box: Box) -> None:
    x0, x1, d = box.x0, box.x1, box.indent
    outline = [(x0, box.y_q3), (x1, box.y_q3), (x1, box.y_notch_hi), (x1 - d, box.y_median),
               (x1, box.y_notch_lo), (x1, box.y_q1), (x0, box.y_q1), (x0, box.y_notch_lo),
               (x0 + d, box.y_median), (x0, box.y_notch_hi)]
    centre = (x0 + x1) // 2
    cap = (x1 - x0) // 4
    # whiskers first: the total range, as in the paper's Fig. 3
    for y_end, y_hinge in ((box.y_max, box.y_q3), (box.y_min, box.y_q1)):
        draw.line([(centre, y_end), (centre, y_hinge)], fill=BOX_OUTLINE)
        draw.line([(centre - cap, y_end), (centre + cap, y_end)], fill=BOX_OUTLINE)
    draw.polygon(outline, fill=BOX_FILL, outline=BOX_OUTLINE)
    draw.line([(x0 + d, box.y_median), (x1 - d, box.y_median)], fill=MEDIAN_COLOUR, width=2)


def write_boxplot_png(series, path, *, title: str | None = None, ylabel: str = "",
                      reference: float | None = None) -> Path:
    """Draw one notched box per series and save it as a PNG.

    Parameters
    ----------
    series : mapping or sequence of (label, samples)
        One box per entry, left to right; a label may hold one newline (two
        lines under the box). A series of one sample is a flat box.
    path : str or os.PathLike
        PNG file to write.
    title : str, optional
        Line above the plot.
    ylabel : str
        Unit or quantity of the value axis, printed above its tick labels.
    reference : float, optional
        A value drawn as a dashed red line across the plot (1.0: no slowdown).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    SpecError
        No series, a series without samples or with a non-finite sample, or
        Pillow not installed.

    Notes
    -----
    An RGB image of ``max(360, 68 + 84·len(series) + 12)`` × ``314`` pixels
    (boxes from the left): a linear
    value axis of 240 pixels with round tick values on the left; each box
    44 pixels wide in an 84-pixel slot, outlined in :data:`BOX_OUTLINE`,
    filled with :data:`BOX_FILL`, from the first to the third quartile,
    with the median as a black bar and notches of a quarter of the box
    width reaching in at the median (the notch ends clipped to the box);
    whiskers to the minimum and maximum (see :func:`layout` for the pixel
    geometry).

    References
    ----------
    T. Hoefler, T. Schneider, A. Lumsdaine, "The Impact of Network Noise at
    Large-Scale Communication Performance", IPDPS workshops 2009, §2.1,
    Fig. 3 — seed ``network-noise-large-scale.txt``, §2.1.
    """
    lay = layout(series, reference=reference)
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise SpecError("write_boxplot_png: Pillow is not installed, expected `pip install pillow` "
                        "(the viz extra)") from None
    image = Image.new("RGB", (lay.width, lay.height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    bottom = _TOP + _PLOT_HEIGHT - 1
    for value in _ticks(lay.lo, lay.hi):
        y = lay.y(value)
        draw.line([(_LEFT - 4, y), (_LEFT - 1, y)], fill=AXIS_COLOUR)
        text = f"{value:.4g}"
        draw.text((_LEFT - 6 - draw.textlength(text, font=font), y - 6), text, fill=AXIS_COLOUR, font=font)
    draw.line([(_LEFT - 1, _TOP), (_LEFT - 1, bottom)], fill=AXIS_COLOUR)
    draw.line([(_LEFT - 1, bottom), (lay.width - _RIGHT, bottom)], fill=AXIS_COLOUR)
    if reference is not None:
        y = lay.y(float(reference))
        for x in range(_LEFT, lay.width - _RIGHT, 8):
            draw.line([(x, y), (x + 3, y)], fill=REFERENCE_COLOUR)
    if title:
        draw.text((_LEFT, 8), _fit(draw, title, font, lay.width - _LEFT - _RIGHT), fill=AXIS_COLOUR, font=font)
    if ylabel:
        draw.text((4, _TOP - 14), _fit(draw, ylabel, font, _LEFT - 8), fill=AXIS_COLOUR, font=font)
    for box in lay.boxes:
        _draw_box(draw, box)
        centre = (box.x0 + box.x1) // 2
        for row, line in enumerate(box.label.split("\n")[:2]):
            text = _fit(draw, line, font, _SLOT - 4)
            draw.text((centre - draw.textlength(text, font=font) / 2, bottom + 6 + 14 * row), text,
                      fill=AXIS_COLOUR, font=font)
    path = Path(path)
    image.save(path, format="PNG")
    return path
