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

__all__ = ["FORMATS", "check_path", "new_figure", "save"]

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
    import matplotlib
    with atomic(path, option=where, binary=True) as out, \
            matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "topocoll"}):
        fig.savefig(out, format=fmt, metadata={"Date": None} if fmt in ("svg", "pdf") else None)
    return path
