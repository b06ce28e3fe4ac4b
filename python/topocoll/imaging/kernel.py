"""The over operator on large images, in Rust (``src/kernels/over.rs``).

Python validates and decides which kernel runs (out of place, into `back`,
into `front`); Rust composites with the interpreter released.
"""

from __future__ import annotations

import numpy as np

from .. import _core
from ..errors import SpecError
from .images import check_pixels, check_same_shape


def check_threads(threads, *, where: str) -> int:
    """``None`` → 1; otherwise a positive int, or a one-line SpecError."""
    if threads is None:
        return 1
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)) \
            or threads < 1:
        raise SpecError(f"{where}: threads={threads!r}, expected a positive integer or None")
    return int(threads)


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """True when `a` and `b` view exactly the same memory the same way."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def contiguous(array: np.ndarray) -> np.ndarray:
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def check_out(out, shape: tuple, *, where: str, like_name: str = "front") -> np.ndarray:
    """`out` as a writeable C-contiguous float32 array of `shape`, or SpecError."""
    out = check_pixels(out, name="out", where=where)
    if out.shape != tuple(shape):
        raise SpecError(f"{where}: out has shape {out.shape}, expected {tuple(shape)} "
                        f"like {like_name}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise SpecError(f"{where}: out is not a writeable C-contiguous array, expected one "
                        "to composite into")
    return out


def over(front, back, out=None, *, threads=None):
    """Composite `front` over `back` with the Rust kernel.

    Parameters
    ----------
    front, back : ndarray of float32, shape (height, width, 4) or (n, 4)
        Premultiplied RGBA; `front` is nearer. Non-contiguous inputs are
        copied first.
    out : ndarray of float32, optional
        Destination, C-contiguous, of the same shape. ``out=back`` composites
        in place into the back image (the accumulated result is behind the
        incoming piece); ``out=front`` in place into the front image. Any
        other overlap with an input is refused.
    threads : int, optional
        Threads to split the pixels over (default 1: one MPI rank per core is
        the usual set-up). Fewer are used for small images (< 65,536 pixels
        per thread).

    Returns
    -------
    ndarray
        `out`, or a new array.

    Raises
    ------
    SpecError
        If a shape, dtype or `threads` is wrong, or `out` partly overlaps an
        input.

    Notes
    -----
    Same arithmetic as :func:`over_numpy`, bit for bit. The kernel streams
    two reads and one write and is memory-bound: its target is ≥ 50 % of the
    bandwidth of a plain copy of the same bytes (issue 3;
    ``benchmarks/bench_compositing_kernel.py``). Parallelising over across
    pixels on multicore nodes is the radix-k paper's future work (Peterka et
    al. 2009, §5.2, ``../shared/seeds/radix-k-compositing.txt``). Outputs of
    16 MiB or more that are not in place are written with non-temporal stores.

    Examples
    --------
    >>> import numpy as np
    >>> red = np.array([[0.5, 0, 0, 0.5]], np.float32)
    >>> blue = np.array([[0, 0, 1, 1]], np.float32)
    >>> over(red, blue).tolist()
    [[0.5, 0.0, 0.5, 1.0]]
    >>> _ = over(red, blue, out=blue)     # in place: blue is now the composite
    >>> blue.tolist()
    [[0.5, 0.0, 0.5, 1.0]]
    """
    where = "over"
    front = check_pixels(front, name="front", where=where)
    back = check_pixels(back, name="back", where=where)
    check_same_shape(back, front, name="back", like_name="front", where=where)
    threads = check_threads(threads, where=where)
    if out is None:
        out = np.empty(front.shape, dtype=np.float32)
        _core.kernels_over(contiguous(front), contiguous(back), out, threads)
        return out
    out = check_out(out, front.shape, where=where)
    if same_buffer(out, back):
        if np.may_share_memory(front, back):
            front = front.copy()
        _core.kernels_over_into_back(contiguous(front), out, threads)
    elif same_buffer(out, front):
        if np.may_share_memory(front, back):
            back = back.copy()
        _core.kernels_over_into_front(out, contiguous(back), threads)
    elif np.may_share_memory(out, front) or np.may_share_memory(out, back):
        raise SpecError("over: out partly overlaps front or back, expected out to be "
                        "front, back, or separate memory")
    else:
        _core.kernels_over(contiguous(front), contiguous(back), out, threads)
    return out
