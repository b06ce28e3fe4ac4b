"""Premultiplied RGBA images, the over operator and z-buffer compositing (NumPy).

An image is a float32 array of shape ``(height, width, 4)``; a flat pixel
vector is ``(n, 4)``. Channels are premultiplied R, G, B and alpha, 16 bytes
per pixel, as in both compositing papers (Peterka et al. 2009, §1.2;
Cavin & Demengeon 2012, §4). These NumPy functions are the references the
Rust kernels (:func:`topocoll.imaging.over`) and every compositing schedule
are checked against.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ParseError, SpecError
from ..inputs import read_text

CHANNELS = 4
PIXEL_BYTES = 16


def check_pixels(array, *, name: str, where: str, dtype=np.float32) -> np.ndarray:
    """Return `array` as an ndarray of RGBA pixels, or raise a one-line SpecError.

    Parameters
    ----------
    array : array_like
        ``(height, width, 4)`` image or ``(n, 4)`` pixel vector.
    name, where : str
        Argument and function names for the message.
    dtype : numpy dtype or None
        Required dtype (default float32); ``None`` accepts any floating dtype.
    """
    if not isinstance(array, np.ndarray):
        array = np.asarray(array)
    if array.ndim not in (2, 3) or array.shape[-1] != CHANNELS:
        raise SpecError(f"{where}: {name} has shape {array.shape}, expected (height, width, 4) "
                        "or (n, 4) RGBA pixels")
    if dtype is None:
        if not np.issubdtype(array.dtype, np.floating):
            raise SpecError(f"{where}: {name} has dtype {array.dtype}, expected a floating dtype")
    elif array.dtype != dtype:
        raise SpecError(f"{where}: {name} has dtype {array.dtype}, expected {np.dtype(dtype)}")
    return array


def check_same_shape(array: np.ndarray, like: np.ndarray, *, name: str, like_name: str,
                     where: str) -> None:
    """Raise SpecError unless `array` has the shape of `like`."""
    if array.shape != like.shape:
        raise SpecError(f"{where}: {name} has shape {array.shape}, expected {like.shape} "
                        f"like {like_name}")


def over_numpy(front, back, out=None):
    """Composite `front` over `back` (premultiplied RGBA), the NumPy reference.

    Per channel c ∈ {R, G, B, A}: ``out_c = front_c + (1 − front_A) · back_c``,
    computed as ``t = 1 − front_A`` then ``front + t · back`` with separately
    rounded operations, exactly as the Rust kernel does, so the two agree bit
    for bit.

    Parameters
    ----------
    front, back : ndarray, shape (height, width, 4) or (n, 4)
        Premultiplied RGBA pixels of one floating dtype (float32 normally;
        float64 gives a higher-precision reference). `front` is nearer.
    out : ndarray, optional
        Destination of the same shape; may be `front` or `back` (in place).

    Returns
    -------
    ndarray
        `out`, or a new array.

    Raises
    ------
    SpecError
        If a shape or dtype is wrong.

    Notes
    -----
    Over is associative but not commutative (Peterka et al. 2009, §1.2,
    postulate 2): the depth order of the ranks must be kept, which is what
    makes image compositing an ordered (non-commutative) reduce-scatter. Cost:
    3 flops per channel, γ·n for n pixels in the α-β-γ model of the
    shift-based paper's §4 (Table 1 leaves this term to the overlap column).

    References
    ----------
    .. [1] T. Porter and T. Duff, "Compositing digital images", SIGGRAPH 1984.
    .. [2] T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur,
       "A configurable algorithm for parallel image-compositing applications"
       (radix-k), SC 2009 — ``../shared/seeds/radix-k-compositing.txt`` §1.2.

    Examples
    --------
    Half-transparent red over opaque blue, and the other way round:

    >>> import numpy as np
    >>> red = np.array([[0.5, 0, 0, 0.5]], np.float32)
    >>> blue = np.array([[0, 0, 1, 1]], np.float32)
    >>> over_numpy(red, blue).tolist()
    [[0.5, 0.0, 0.5, 1.0]]
    >>> over_numpy(blue, red).tolist()
    [[0.0, 0.0, 1.0, 1.0]]
    """
    front = check_pixels(front, name="front", where="over_numpy", dtype=None)
    back = check_pixels(back, name="back", where="over_numpy", dtype=None)
    check_same_shape(back, front, name="back", like_name="front", where="over_numpy")
    if front.dtype != back.dtype:
        raise SpecError(f"over_numpy: back has dtype {back.dtype}, expected {front.dtype} like front")
    if out is None:
        out = np.empty_like(front, order="C")
    else:
        out = check_pixels(out, name="out", where="over_numpy", dtype=front.dtype)
        check_same_shape(out, front, name="out", like_name="front", where="over_numpy")
    transmittance = 1.0 - front[..., 3:4]          # a copy: safe if out is front
    if np.may_share_memory(out, front):
        np.add(front, transmittance * back, out=out)
    else:
        np.multiply(transmittance, back, out=out)
        np.add(front, out, out=out)
    return out


def zbuffer_numpy(color_a, depth_a, color_b, depth_b):
    """Z-buffer compositing: per pixel keep the nearer of two fragments.

    Parameters
    ----------
    color_a, color_b : ndarray, shape (height, width, 4) or (n, 4)
        RGBA pixels (any floating dtype, the same for both).
    depth_a, depth_b : ndarray, shape ``color.shape[:-1]``
        Depth per pixel; smaller is nearer (OpenGL window depth; use +inf
        or 1.0 for background).

    Returns
    -------
    color, depth : ndarray
        New arrays with the nearer fragment of every pixel.

    Raises
    ------
    SpecError
        If a shape or dtype is wrong.

    Notes
    -----
    A pixel wins when its ``(depth, R, G, B, A)`` is lexicographically
    smaller: nearest depth first, and equal depths broken by the colour.
    That is a minimum under a total order, so the operator is exactly
    commutative and associative, ties included, and a compositing schedule
    may combine z-buffered pieces in any order (unlike over: Cavin &
    Demengeon 2012, §2.2, ``../shared/seeds/shift-based-compositing-fat-tree.txt``).
    NaN depths are not ordered; do not use them.

    Examples
    --------
    >>> import numpy as np
    >>> c, d = zbuffer_numpy(np.ones((2, 4), np.float32), np.array([0.5, 0.9], np.float32),
    ...                      np.zeros((2, 4), np.float32), np.array([0.7, 0.1], np.float32))
    >>> c[:, 0].tolist(), d.tolist()
    ([1.0, 0.0], [0.5, 0.10000000149011612])
    """
    where = "zbuffer_numpy"
    color_a = check_pixels(color_a, name="color_a", where=where, dtype=None)
    color_b = check_pixels(color_b, name="color_b", where=where, dtype=None)
    check_same_shape(color_b, color_a, name="color_b", like_name="color_a", where=where)
    depth_a, depth_b = np.asarray(depth_a), np.asarray(depth_b)
    for name, depth in (("depth_a", depth_a), ("depth_b", depth_b)):
        if depth.shape != color_a.shape[:-1]:
            raise SpecError(f"{where}: {name} has shape {depth.shape}, expected "
                            f"{color_a.shape[:-1]} (one depth per pixel)")
    # take_a: (depth_a, colour_a) <= (depth_b, colour_b) lexicographically.
    take_a = np.ones(depth_a.shape, dtype=bool)
    for c in reversed(range(CHANNELS)):
        ca, cb = color_a[..., c], color_b[..., c]
        take_a = (ca < cb) | ((ca == cb) & take_a)
    take_a = (depth_a < depth_b) | ((depth_a == depth_b) & take_a)
    color = np.where(take_a[..., None], color_a, color_b)
    depth = np.where(take_a, depth_a, depth_b)
    return color, depth


def depth_order(p: int, order: Sequence[int] | None = None) -> np.ndarray:
    """The ranks front to back: ``0, 1, …, p−1`` by default, or `order` checked.

    Parameters
    ----------
    p : int
        Number of ranks (≥ 1).
    order : sequence of int, optional
        A permutation of ``range(p)``; ``order[0]`` is the front-most rank.

    Returns
    -------
    ndarray of int64, shape (p,)

    Raises
    ------
    SpecError
        If `p` is not positive or `order` is not a permutation of ``range(p)``.

    Notes
    -----
    Rank order is the radix-k paper's convention ("process 0's image over
    process 1's, which in turn was over process 2's", Peterka et al. 2009,
    §4); a renderer that sorts its subdomains by view direction passes its
    own permutation.

    Examples
    --------
    >>> depth_order(4).tolist(), depth_order(3, [2, 0, 1]).tolist()
    ([0, 1, 2, 3], [2, 0, 1])
    """
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)) or p < 1:
        raise SpecError(f"depth_order: p={p!r}, expected a positive integer number of ranks")
    if order is None:
        return np.arange(p, dtype=np.int64)
    values = list(order)
    if len(values) != p:
        raise SpecError(f"depth_order: order has {len(values)} ranks, expected p={p}")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise SpecError(f"depth_order: order contains {v!r}, expected integer ranks")
        if not 0 <= v < p:
            raise SpecError(f"depth_order: order contains rank {v}, expected ranks 0..{p - 1}")
    ranks = np.asarray(values, dtype=np.int64)
    counts = np.bincount(ranks, minlength=p)
    if (counts != 1).any():
        repeated = int(np.flatnonzero(counts > 1)[0])
        raise SpecError(f"depth_order: order repeats rank {repeated}, expected each of "
                        f"0..{p - 1} exactly once")
    return ranks


def depth_positions(order) -> np.ndarray:
    """Inverse of a depth order: ``positions[rank]`` is 0 for the front-most rank.

    >>> depth_positions([2, 0, 1]).tolist()
    [1, 2, 0]
    """
    order = np.asarray(order, dtype=np.int64)
    positions = np.empty_like(order)
    positions[order] = np.arange(order.size)
    return positions


_TOKEN = re.compile(r"[\s,]+")


def read_depth_order(path, p: int) -> np.ndarray:
    """Read a depth order file: ranks front to back, separated by spaces,
    commas or newlines; ``#`` starts a comment.

    Raises
    ------
    ParseError
        If a token is not an integer (names file and line).
    SpecError
        If the ranks are not a permutation of ``range(p)``.
    """
    path = Path(path)
    text = read_text(path, what="a depth order: a file of ranks front to back")
    ranks = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        for token in _TOKEN.split(line.split("#", 1)[0].strip()):
            if not token:
                continue
            try:
                ranks.append(int(token))
            except ValueError:
                raise ParseError(f"{path}:{line_number}: {token!r} is not a rank, expected an "
                                 "integer") from None
    try:
        return depth_order(p, ranks)
    except SpecError as err:
        raise SpecError(f"{path}: {err}") from None


def serial_composite(images, order: Sequence[int] | None = None, *, dtype=np.float32):
    """Composite all images serially in depth order: the reference result.

    Parameters
    ----------
    images : sequence of ndarray, or ndarray of shape (p, ...)
        One premultiplied RGBA image per rank, all of one shape.
    order : sequence of int, optional
        Ranks front to back (default rank order); see :func:`depth_order`.
    dtype : numpy dtype
        Accumulation dtype (float32 as the kernels; float64 for an
        error-free yardstick).

    Returns
    -------
    ndarray
        ``images[order[0]] over images[order[1]] over … over images[order[-1]]``.

    Notes
    -----
    Folds from the back, ``p − 1`` over operations on the full image: the
    "serial code that performed the image compositing" against which the
    radix-k paper cross-checked its results (Peterka et al. 2009, §4).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[0.5, 0, 0, 0.5]], np.float32)
    >>> b = np.array([[0, 0.5, 0, 0.5]], np.float32)
    >>> serial_composite([a, b]).tolist(), serial_composite([a, b], [1, 0]).tolist()
    ([[0.5, 0.25, 0.0, 0.75]], [[0.25, 0.5, 0.0, 0.75]])
    """
    if isinstance(images, np.ndarray) and images.ndim in (3, 4):
        images = list(images)
    images = list(images)
    if not images:
        raise SpecError("serial_composite: no images, expected one per rank")
    first = check_pixels(images[0], name="images[0]", where="serial_composite", dtype=None)
    for i, image in enumerate(images[1:], start=1):
        image = check_pixels(image, name=f"images[{i}]", where="serial_composite", dtype=None)
        check_same_shape(image, first, name=f"images[{i}]", like_name="images[0]",
                         where="serial_composite")
    ranks = depth_order(len(images), order)
    result = np.array(images[ranks[-1]], dtype=dtype, order="C", copy=True)
    for rank in ranks[-2::-1]:
        over_numpy(np.asarray(images[rank], dtype=dtype), result, out=result)
    return result
