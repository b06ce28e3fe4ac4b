"""Reduction operators as a plan applies them: in place, whole blocks at a time.

``dst = src ∘ dst`` (``left``: the received data goes in front) or
``dst = dst ∘ src``, as :class:`~topocoll.schedules.ops.Reduce` defines
them. Predefined operators run a NumPy ufunc with ``out=dst`` (no temporary),
``over`` runs the Rust compositing kernel in place
(:func:`topocoll.imaging.over`), a user-defined ``MPI.Op`` runs
``MPI_Reduce_local``, and any ``f(left, right) -> array`` is called on whole
blocks. No per-element Python anywhere.

Every operator says what it is, since algorithms differ in what they need
(:class:`~topocoll.schedules.ir.OperatorNeeds`): predefined operators carry
MPI's properties (:mod:`topocoll.operators`), a user-defined ``MPI.Op`` its
``Is_commutative()`` (and is not idempotent: MPI cannot say so), and a
callable is neither commutative nor idempotent unless wrapped in
:class:`Operator` with ``commutative=True`` / ``idempotent=True``.
:func:`check_operator` is the one check a plan makes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import SpecError
from ..operators import MPI_NAMES, MPI_UNSUPPORTED, NAMED, properties_text
from ..schedules.ir import OperatorNeeds
from ..schedules.registry import catalogue, operator_allows


class Operator:
    """A reduction operator and what it is: ``f(left, right) -> array``.

    Parameters
    ----------
    func : callable
        Applied to whole blocks; ``left`` is the lower rank (the front).
    commutative, idempotent : bool
        What the operator is (as ``MPI.Op.Create(func, commute=...)`` says);
        an algorithm that needs more is refused (:func:`check_operator`).
        Both default to False, the safe side: a wrong ``True`` gives wrong
        results, a wrong ``False`` only fewer algorithms.
    name : str, optional
        How errors and signatures name it (default ``func.__name__``).

    Examples
    --------
    >>> import numpy as np
    >>> matmul = Operator(lambda a, b: a @ b, name="matmul")
    >>> matmul.commutative, matmul.idempotent
    (False, False)
    >>> Operator(np.maximum, commutative=True, idempotent=True).describe()
    'op=maximum (commutative, idempotent)'
    """

    def __init__(self, func: Callable, *, commutative: bool = False, idempotent: bool = False,
                 name: str | None = None):
        if not callable(func):
            raise SpecError(f"Operator: {func!r} is not callable, expected f(left, right) -> array")
        for what, value in (("commutative", commutative), ("idempotent", idempotent)):
            if not isinstance(value, (bool, np.bool_)):
                raise SpecError(f"Operator: {what}={value!r}, expected True or False")
        self.func = func
        self.commutative, self.idempotent = bool(commutative), bool(idempotent)
        self.name = name if name is not None else getattr(func, "__name__", "callable")

    def describe(self) -> str:
        return f"op={self.name} ({properties_text(self.commutative, self.idempotent)})"

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
    """A predefined operator: its NumPy ufunc writes into ``dst``."""

    def __init__(self, name: str):
        known = NAMED[name]
        super().__init__(known.ufunc, commutative=known.commutative, idempotent=known.idempotent, name=name)

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


class MpiUserOp(Operator):
    """A user-defined ``MPI.Op`` (``MPI.Op.Create``), applied by
    ``MPI_Reduce_local(inbuf, inoutbuf)``: ``inoutbuf = inbuf ∘ inoutbuf``."""

    def __init__(self, op):
        super().__init__(op.Reduce_local, commutative=op.Is_commutative(), idempotent=False,
                         name=f"MPI.Op({op.py2f()})")
        self.mpi_op = op

    def apply(self, triples, left: bool):
        op = self.mpi_op
        if left:      # dst = src ∘ old
            def run():
                for dst, src, old in triples:
                    if old is not dst:
                        dst[...] = old
                    op.Reduce_local(src, dst)
        else:         # dst = old ∘ src
            def run():
                for dst, src, old in triples:
                    scratch = src.copy()
                    op.Reduce_local(old, scratch)
                    dst[...] = scratch
        return run

    def __call__(self, left, right):
        out = np.array(right, copy=True)
        self.mpi_op.Reduce_local(np.ascontiguousarray(left), out)
        return out


class Over(Operator):
    """Premultiplied RGBA ``front + (1 - front.alpha) * back``, float32 rows
    of 4 channels, by the Rust kernel writing into ``dst``."""

    def __init__(self, threads: int | None = None):
        from ..imaging import over

        super().__init__(lambda front, back: over(front, back, threads=threads), name="over")
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
    """An :class:`Operator` from a name, an ``MPI.Op``, a callable or itself.

    A bare callable is neither commutative nor idempotent (wrap it in
    :class:`Operator` to say otherwise).
    """
    if isinstance(op, Operator):
        return op
    if isinstance(op, str):
        if op == "over":
            return Over()
        if op in NAMED:
            return Ufunc(op)
        raise SpecError(f"op={op!r}, expected one of {', '.join(NAMED)}, over, an MPI.Op or a callable")
    found = _from_mpi_op(op)
    if found is not None:
        return found
    if callable(op):
        return Operator(op)
    raise SpecError(f"op={op!r}, expected a name, an MPI.Op or a callable")


def _from_mpi_op(op) -> Operator | None:
    try:
        from mpi4py import MPI
    except ImportError:   # pragma: no cover - mpi4py is a dependency
        return None
    if not isinstance(op, MPI.Op):
        return None
    if op == MPI.OP_NULL:
        raise SpecError("op=MPI.OP_NULL, expected a predefined MPI.Op, a user MPI.Op or a callable")
    for mpi_name, name in MPI_NAMES.items():
        if op == getattr(MPI, mpi_name):
            return Ufunc(name)
    for mpi_name, why in MPI_UNSUPPORTED.items():
        if op == getattr(MPI, mpi_name, None):
            raise SpecError(f"op=MPI.{mpi_name}: not supported ({why}), expected one of "
                            f"{', '.join('MPI.' + n for n in MPI_NAMES)}, a user MPI.Op or a callable")
    return MpiUserOp(op)


def _allows(needs: OperatorNeeds, operator: Operator) -> bool:
    return operator_allows(needs, commutative=operator.commutative, idempotent=operator.idempotent)


def refusal(label: str, needs: OperatorNeeds, operator: Operator, alternatives) -> str:
    """The one line a plan refuses with: which algorithm, what it needs (and
    which predefined operators have it), what the operator is, what would work."""
    wanted = ("a commutative, idempotent" if needs.idempotent and needs.commutative
              else "an idempotent" if needs.idempotent else "a commutative")
    fits = [op.name for op in NAMED.values()
            if operator_allows(needs, commutative=op.commutative, idempotent=op.idempotent)]
    others = f"; algorithms that work with it: {', '.join(alternatives)}" if alternatives else \
        "; no algorithm of this collective works with it"
    return f"{label} needs {wanted} operator ({', '.join(fits)}), {operator.describe()} is not{others}"


def algorithms_for(collective: str, p: int, operator: Operator) -> list[str]:
    """The catalogue's ``collective`` algorithms that exist for ``p`` and whose
    needs (with their default parameters) ``operator`` meets."""
    return sorted(info.name for info in catalogue().values()
                  if info.collective == collective and info.supports(p, info.sweep[0])
                  and _allows(info.needs, operator))


def check_operator(schedule, operator: Operator) -> str | None:
    """None if ``operator`` meets the schedule's exact needs, else its
    :func:`refusal`.

    A barrier's payload carries no result (only the arrival of its messages
    matters), so any operator will do.
    """
    if schedule.collective == "barrier" or _allows(schedule.needs, operator):
        return None
    return refusal(schedule.label(), schedule.needs, operator,
                   algorithms_for(schedule.collective, schedule.p, operator))
