"""Figures with matplotlib, drawn off-screen (the Agg canvas): one place that
makes a :class:`~matplotlib.figure.Figure` and one that saves it.

Every picture of :mod:`topocoll.viz` is built by a ``*_figure`` function that
returns the figure (tests read its axes, images and texts), and written by a
``write_*`` function through :func:`save`, whose format follows the file's
suffix: ``.png`` (raster, 120 dpi), ``.svg`` (text kept as text, so a reader
can search it) or ``.pdf``. No ``pyplot``: no global state, no GUI backend,
nothing shared between threads.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SpecError
from ..outputs import atomic

__all__ = ["FORMATS", "check_path", "fit_titles", "new_figure", "save"]

#: file suffixes :func:`save` writes, and matplotlib's name for each
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DPI = 120


def new_figure(width: float, height: float):
    """An empty figure of ``width`` × ``height`` inches on an Agg canvas,
    with a constrained layout (labels and colour bars never overlap)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def check_path(path, where: str) -> tuple[Path, str]:
    """``(path, format)`` of a picture file, checked before anything is drawn.

    Raises
    ------
    SpecError
        ``path`` names a directory or its suffix is not one of :data:`FORMATS`.
    """
    text = os.fspath(path)
    if text.endswith(("/", os.sep)):
        raise SpecError(f"{where}: {text!r} names a directory, expected a file such as {text + 'picture.png'!r}")
    fmt = FORMATS.get(Path(text).suffix.lower())
    if fmt is None:
        raise SpecError(f"{where}: {text!r} has suffix {Path(text).suffix or '(none)'!r}, expected one of "
                        f"{', '.join(FORMATS)}")
    return Path(text), fmt


def fit_titles(fig) -> None:
    """Wrap every axes title (and the figure's own) onto as many lines as it needs to fit its
    axes' width, so that no title is cut at the figure's edge ("P=", "…50 runs per"). Width in
    characters: the axes' width in points over 0.55 em per character, a conservative average
    for DejaVu Sans (matplotlib's default font)."""
    import textwrap
    width_in = fig.get_figwidth()
    for ax in fig.axes:
        for loc in ("center", "left", "right"):
            title = ax.get_title(loc)
            if not title or "\n" in title:
                continue
            size = ax.title.get_fontsize() if loc == "center" else ax._left_title.get_fontsize()
            chars = max(12, int(width_in * ax.get_position().width * 72 / (0.55 * size)))
            if len(title) > chars:
                ax.set_title("\n".join(textwrap.wrap(title, chars)), loc=loc)
    if fig._suptitle is not None and "\n" not in fig._suptitle.get_text():
        text = fig._suptitle.get_text()
        chars = max(12, int(width_in * 72 / (0.55 * fig._suptitle.get_fontsize())))
        if len(text) > chars:
            fig._suptitle.set_text("\n".join(textwrap.wrap(text, chars)))


def save(fig, path, where: str) -> Path:
    """Write ``fig`` to ``path`` in the format its suffix names, whole or not at all (a temporary
    file renamed into place, :func:`topocoll.outputs.atomic`: an error or Ctrl-C while drawing leaves
    no 0-byte or half-written picture).

    Raises
    ------
    SpecError
        The suffix is not one of :data:`FORMATS`, ``path`` names a
        directory, or the file cannot be written (one line, naming ``where``).
    """
    path, fmt = check_path(path, where)
    fit_titles(fig)
    import matplotlib
    with atomic(path, option=where, binary=True) as out, \
            matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "topocoll"}):
        fig.savefig(out, format=fmt, metadata={"Date": None} if fmt in ("svg", "pdf") else None)
    return path
