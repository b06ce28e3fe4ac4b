"""Reduction operators as a plan applies them: in place, whole blocks at a time.

``dst = src ∘ dst`` (``left``: the received data goes in front) or
``dst = dst ∘ src``, as :class:`~topocoll.schedules.ops.Reduce` defines
them. Predefined operators run a NumPy ufunc with ``out=dst`` (no temporary),
``over`` runs the Rust compositing kernel in place
(:func:`topocoll.imaging.over`), and any ``f(left, right) -> array`` is
called on whole blocks. No per-element Python anywhere.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import SpecError
from ..verify.reference import UFUNCS

#: MPI's predefined operators by their mpi4py names
MPI_NAMES = {"SUM": "sum", "PROD": "prod", "MAX": "max", "MIN": "min",
             "BAND": "band", "BOR": "bor", "BXOR": "xor"}


class Operator:
    """``name`` and ``apply(triples, left) -> callable`` for a plan."""

    commutative = True

    def __init__(self, name: str, func: Callable):
        self.name, self.func = name, func

    def check(self, buf: np.ndarray) -> None:
        pass

    def apply(self, triples, left: bool):
        """A call doing ``dst = src ∘ old`` (``left``) or ``dst = old ∘ src``
        for each ``(dst, src, old)`` (``old`` is ``dst`` itself, or the input
        block ``dst`` takes over)."""
        f = self.func
        if left:
            def run():
                for dst, src, old in triples:
                    dst[...] = f(src, old)
        else:
            def run():
                for dst, src, old in triples:
                    dst[...] = f(old, src)
        return run

    def __call__(self, left, right):
        return self.func(left, right)


class Ufunc(Operator):
    def apply(self, triples, left: bool):
        f = self.func
        if len(triples) == 1:
            dst, src, old = triples[0]
            if left:
                return lambda: f(src, old, out=dst)
            return lambda: f(old, src, out=dst)
        if left:
            def run():
                for dst, src, old in triples:
                    f(src, old, out=dst)
        else:
            def run():
                for dst, src, old in triples:
                    f(old, src, out=dst)
        return run


class Over(Operator):
    """Premultiplied RGBA ``front + (1 - front.alpha) * back``, float32 rows
    of 4 channels, by the Rust kernel writing into ``dst``."""

    commutative = False

    def __init__(self, threads: int | None = None):
        from ..imaging import over

        super().__init__("over", lambda front, back: over(front, back, threads=threads))
        self._over, self._threads = over, threads

    def check(self, buf: np.ndarray) -> None:
        if buf.dtype != np.float32 or buf.shape[1:] != (4,):
            raise SpecError(f"op='over' on a {buf.dtype} buffer of rows {buf.shape[1:]}, "
                            "expected float32 RGBA rows of shape (n, 4)")

    def apply(self, triples, left: bool):
        over, threads = self._over, self._threads
        if left:      # dst = src over old
            def run():
                for dst, src, old in triples:
                    over(src, old, out=dst, threads=threads)
        else:         # dst = old over src
            def run():
                for dst, src, old in triples:
                    over(old, src, out=dst, threads=threads)
        return run


def as_operator(op) -> Operator:
    """An :class:`Operator` from a name, a predefined ``MPI.Op``, a callable or itself."""
    if isinstance(op, Operator):
        return op
    if isinstance(op, str):
        if op == "over":
            return Over()
        if op in UFUNCS:
            return Ufunc(op, UFUNCS[op])
        raise SpecError(f"op={op!r}, expected one of {', '.join(UFUNCS)}, over, an MPI.Op or a callable")
    name = _mpi_op_name(op)
    if name is not None:
        return Ufunc(name, UFUNCS[name])
    if callable(op):
        return Operator(getattr(op, "__name__", "callable"), op)
    raise SpecError(f"op={op!r}, expected a name, a predefined MPI.Op or a callable")


def _mpi_op_name(op):
    try:
        from mpi4py import MPI
    except ImportError:   # pragma: no cover - mpi4py is a dependency
        return None
    if isinstance(op, MPI.Op):
        for mpi_name, name in MPI_NAMES.items():
            if op == getattr(MPI, mpi_name):
                return name
        raise SpecError(f"op={op!r}: a user-defined MPI.Op, expected a predefined one "
                        "(SUM, PROD, MAX, MIN, BAND, BOR, BXOR) or a Python callable")
    return None
