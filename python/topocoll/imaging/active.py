"""Active pixels: IceT-style run-length encoding that skips transparent runs.

The radix-k paper composites every pixel ("the worst case, where all pixels
of all images are used") and names culling inactive pixels as future work,
expecting smaller messages to favour higher radices in early rounds
(Peterka et al. 2009, §1.2, §4 and §5.2,
``../shared/seeds/radix-k-compositing.txt``). This module is that
optimisation in the form IceT ships: an image is a list of
``(inactive, active)`` run lengths plus the active pixels, and the over
operator runs directly on the encoded form (``src/kernels/active.rs``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from ..errors import SpecError
from .images import CHANNELS, check_pixels
from .kernel import check_out, contiguous, over, same_buffer

RUN_BYTES = 8          # one (inactive, active) pair of uint32 counts


@dataclass(frozen=True, eq=False)
class SparseImage:
    """An image with its fully transparent runs left out.

    Attributes
    ----------
    runs : ndarray of uint32, shape (r, 2)
        ``(inactive, active)`` pixel counts in pixel order; together they
        cover every pixel.
    pixels : ndarray of float32, shape (a, 4)
        The active pixels, in order.
    shape : tuple of int
        Shape of the dense image, ``(height, width, 4)`` or ``(n, 4)``.

    Notes
    -----
    A pixel is inactive when all four premultiplied channels are 0: it is
    the identity of over, so leaving it out changes no result. Bytes on the
    wire: ``8 · r + 16 · a`` (:attr:`nbytes`), against ``16 · n`` dense.
    Construction checks that the runs and pixels agree (O(r)).
    """

    runs: np.ndarray
    pixels: np.ndarray
    shape: tuple

    def __post_init__(self):
        where = "SparseImage"
        shape = tuple(int(d) for d in self.shape)
        if len(shape) not in (2, 3) or shape[-1] != CHANNELS or min(shape) < 0:
            raise SpecError(f"{where}: shape={shape}, expected (height, width, 4) or (n, 4)")
        runs, pixels = self.runs, self.pixels
        if not isinstance(runs, np.ndarray) or runs.dtype != np.uint32 or runs.ndim != 2 \
                or runs.shape[1] != 2:
            raise SpecError(f"{where}: runs is {_describe(runs)}, expected a (r, 2) uint32 array")
        if not isinstance(pixels, np.ndarray) or pixels.dtype != np.float32 \
                or pixels.ndim != 2 or pixels.shape[1] != CHANNELS:
            raise SpecError(f"{where}: pixels is {_describe(pixels)}, expected an (a, 4) "
                            "float32 array")
        covered = int(runs.sum(dtype=np.uint64))
        n_pixels = int(np.prod(shape[:-1]))
        if covered != n_pixels:
            raise SpecError(f"{where}: runs cover {covered} pixels, expected {n_pixels} for "
                            f"shape {shape}")
        n_active = int(runs[:, 1].sum(dtype=np.uint64))
        if n_active != len(pixels):
            raise SpecError(f"{where}: runs count {n_active} active pixels, expected "
                            f"{len(pixels)} (the pixels given)")
        object.__setattr__(self, "runs", contiguous(runs))
        object.__setattr__(self, "pixels", contiguous(pixels))
        object.__setattr__(self, "shape", shape)

    @property
    def n_pixels(self) -> int:
        """Pixels of the dense image."""
        return int(np.prod(self.shape[:-1]))

    @property
    def n_active(self) -> int:
        """Active (stored) pixels."""
        return len(self.pixels)

    @property
    def nbytes(self) -> int:
        """Bytes of the encoded form: 8 per run pair + 16 per active pixel."""
        return RUN_BYTES * len(self.runs) + self.pixels.nbytes

    @property
    def dense_nbytes(self) -> int:
        """Bytes of the same image dense: 16 per pixel."""
        return 16 * self.n_pixels

    def decode(self, out=None) -> np.ndarray:
        """The dense image; see :func:`decode_active`."""
        return decode_active(self, out)

    def __repr__(self) -> str:
        return (f"SparseImage(shape={self.shape}, runs={len(self.runs)}, active={self.n_active}, "
                f"nbytes={self.nbytes})")


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.shape} {value.dtype} array"
    return type(value).__name__


def _wrap(runs: np.ndarray, pixels: np.ndarray, shape: tuple) -> SparseImage:
    return SparseImage(runs.reshape(-1, 2), pixels.reshape(-1, CHANNELS), shape)


def encode_active(pixels) -> SparseImage:
    """Run-length encode an image, leaving out fully transparent runs.

    Parameters
    ----------
    pixels : ndarray of float32, shape (height, width, 4) or (n, 4)
        Premultiplied RGBA, fewer than 2**32 pixels.

    Returns
    -------
    SparseImage

    Raises
    ------
    SpecError
        If the shape or dtype is wrong.

    Examples
    --------
    >>> import numpy as np
    >>> image = np.zeros((6, 4), np.float32)
    >>> image[[0, 3, 4]] = [0.1, 0.2, 0.3, 0.5]
    >>> sparse = encode_active(image)
    >>> sparse.runs.tolist(), sparse.n_active, sparse.nbytes
    ([[0, 1], [2, 2], [1, 0]], 3, 72)
    >>> bool((sparse.decode() == image).all())
    True
    """
    pixels = check_pixels(pixels, name="pixels", where="encode_active")
    if pixels.size // CHANNELS >= 2**32:
        raise SpecError(f"encode_active: image has {pixels.size // CHANNELS} pixels, expected "
                        "fewer than 2**32 (uint32 run lengths)")
    runs, active = _core.kernels_active_encode(contiguous(pixels))
    return _wrap(runs, active, pixels.shape)


def _check_sparse(value, *, name: str, where: str) -> SparseImage:
    if not isinstance(value, SparseImage):
        raise SpecError(f"{where}: {name} is {_describe(value)}, expected a SparseImage")
    return value


def decode_active(sparse: SparseImage, out=None) -> np.ndarray:
    """Expand a :class:`SparseImage` to its dense image (zeros where inactive).

    Parameters
    ----------
    sparse : SparseImage
    out : ndarray of float32, optional
        C-contiguous destination of shape ``sparse.shape``.
    """
    sparse = _check_sparse(sparse, name="sparse", where="decode_active")
    if out is None:
        out = np.empty(sparse.shape, dtype=np.float32)
    else:
        out = check_out(out, sparse.shape, where="decode_active", like_name="sparse")
    _core.kernels_active_decode(sparse.runs, sparse.pixels, out)
    return out


def over_sparse(front, back, out=None):
    """Composite `front` over `back` where either or both are encoded.

    Parameters
    ----------
    front, back : SparseImage or ndarray of float32
        Premultiplied RGBA of one dense shape; `front` is nearer.
    out : ndarray of float32, optional
        Only when one side is dense. ``out=back`` (dense back) or
        ``out=front`` (dense front) composites in place; by default a new
        dense array is returned.

    Returns
    -------
    SparseImage or ndarray
        Encoded when both inputs are encoded (only overlapping active runs
        are blended; the others are copied), dense otherwise.

    Raises
    ------
    SpecError
        If the shapes differ, an input is neither form, or `out` is given
        with two encoded inputs.

    Notes
    -----
    The sparse-sparse case is IceT's compressed-compressed composite: the
    output is already encoded for the next round's message, and the work is
    proportional to the runs and active pixels, not to the image. The
    result decodes to exactly :func:`over_numpy` of the dense images.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((4, 4), np.float32); a[0] = [0.5, 0, 0, 0.5]
    >>> b = np.zeros((4, 4), np.float32); b[:2] = [0, 0, 1, 1]
    >>> c = over_sparse(encode_active(a), encode_active(b))
    >>> c.runs.tolist(), c.decode()[:, 2].tolist()
    ([[0, 2], [2, 0]], [0.5, 1.0, 0.0, 0.0])
    """
    where = "over_sparse"
    front_sparse, back_sparse = isinstance(front, SparseImage), isinstance(back, SparseImage)
    if not front_sparse:
        front = check_pixels(front, name="front", where=where)
    if not back_sparse:
        back = check_pixels(back, name="back", where=where)
    if tuple(back.shape) != tuple(front.shape):
        raise SpecError(f"{where}: back has shape {tuple(back.shape)}, expected "
                        f"{tuple(front.shape)} like front")
    if front_sparse and back_sparse:
        if out is not None:
            raise SpecError(f"{where}: out given with two SparseImages, expected out=None "
                            "(the result is a new SparseImage)")
        runs, active = _core.kernels_active_over(front.runs, front.pixels, back.runs,
                                                 back.pixels, front.n_pixels)
        return _wrap(runs, active, front.shape)
    if not front_sparse and not back_sparse:
        return over(front, back, out)
    if front_sparse:
        if out is None:
            out = np.array(back, dtype=np.float32, order="C", copy=True)
        else:
            out = check_out(out, back.shape, where=where, like_name="back")
            if not same_buffer(out, back):
                np.copyto(out, back)
        _core.kernels_active_over_into_back(front.runs, front.pixels, out)
        return out
    if out is None:
        out = np.array(front, dtype=np.float32, order="C", copy=True)
    else:
        out = check_out(out, front.shape, where=where)
        if not same_buffer(out, front):
            np.copyto(out, front)
    _core.kernels_active_over_into_front(out, back.runs, back.pixels)
    return out
