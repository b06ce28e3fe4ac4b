"""Symbolic verification: replay a schedule on contributions, not numbers.

Every block value is ``(origin_block, seq)``: the block it came from and the
sequence of half-open rank intervals whose inputs it reduces, left to right.
For a commutative operator only the multiset of ranks matters; for a
non-commutative one the sequence must be exactly the depth (rank) order; for
an idempotent one (max, min, and, or) a rank may appear more than once (and
for an idempotent non-commutative one, such as ``first``, only where two
in-order pieces overlap).
At the end every output block is compared with the collective's definition
(:mod:`topocoll.schedules.collectives`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import SpecError, VerificationError
from ..operators import NAMED
from ..schedules.collectives import expected_contributions
from ..schedules.ir import Schedule
from .replay import describe, replay

# name -> (commutative, idempotent): the predefined operators of
# :mod:`topocoll.operators`, and two that stand for user operators
OPERATORS = {
    **{op.name: (op.commutative, op.idempotent) for op in NAMED.values()},
    "noncommutative": (False, False), "noncommutative_idempotent": (False, True), "over": (False, False),
}


@dataclass(frozen=True, slots=True)
class Sym:
    block: int
    seq: tuple[tuple[int, int], ...]

    def __str__(self) -> str:
        return format_seq(self.seq)


def format_seq(seq) -> str:
    parts = []
    for lo, hi in seq:
        parts.append(f"x{lo}" if hi == lo + 1 else f"x{lo}..x{hi - 1}")
    return "∘".join(parts) if parts else "∅"


def _concat(left, right):
    if left and right and left[-1][1] == right[0][0]:
        return left[:-1] + ((left[-1][0], right[0][1]),) + right[1:]
    return left + right


def _normalise(seq):
    """Sort and merge touching intervals; overlaps (double counts) stay visible."""
    out: list[list[int]] = []
    for lo, hi in sorted(seq):
        if out and out[-1][1] == lo:
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _union(seq):
    out: list[list[int]] = []
    for lo, hi in sorted(seq):
        if out and out[-1][1] >= lo:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


class SymbolicAlgebra:
    """Contributions are named by depth position (rank order unless the
    schedule gives a ``depth_order``), so in-order means ``x0∘x1∘…``."""

    def __init__(self, commutative: bool, idempotent: bool, depth_order=None):
        self.commutative = commutative
        self.idempotent = idempotent
        self.position = None
        if depth_order is not None:
            self.position = {rank: pos for pos, rank in enumerate(depth_order)}

    def initial(self, rank, block):
        pos = rank if self.position is None else self.position[rank]
        return Sym(block, ((pos, pos + 1),))

    def combine(self, left, right, where):
        if left.block != right.block:
            raise VerificationError(
                f"{where()}: reduces data of block {left.block} with data of block {right.block}")
        if self.commutative and self.idempotent:
            return Sym(left.block, _union(left.seq + right.seq))
        if self.commutative:
            return Sym(left.block, _normalise(left.seq + right.seq))
        # Associativity alone can only ever merge neighbours in depth order:
        # two pieces with a gap (or in the wrong order) can never become the
        # in-order result, so reject at once and name them. An idempotent
        # non-commutative operator (``first``) may also merge in-order pieces
        # that overlap: [a, c)∘[b, d) = [a, b)[b, c)[b, c)[c, d) = [a, d) for
        # a ≤ b ≤ c ≤ d; nothing else (x1x2∘x0x1 is not x0x1x2 for ``last``).
        if left.seq and right.seq:
            (a, c), (b, d) = left.seq[-1], right.seq[0]
            if self.idempotent and a <= b <= c <= d:
                return Sym(left.block, left.seq[:-1] + ((a, d),) + right.seq[1:])
            if c != b:
                raise VerificationError(
                    f"{where()}: composites non-adjacent pieces {left} (front) and {right} (back) "
                    "of a non-commutative operator")
        return Sym(left.block, _concat(left.seq, right.seq))

    def check(self, value, expected) -> str | None:
        """None if ``value`` satisfies the contribution ``expected``, else why not."""
        exp_block, exp_seq = expected
        want = format_seq(exp_seq)
        if value.block != exp_block:
            return f"holds data of block {value.block}, expected block {exp_block} ({want})"
        if value.seq == exp_seq or (self.commutative and self.idempotent and _union(value.seq) == _union(exp_seq)):
            return None
        got_ranks = _expand(value.seq)
        want_ranks = _expand(exp_seq)
        missing = sorted(set(want_ranks) - set(got_ranks))
        extra = sorted(set(got_ranks) - set(want_ranks))
        if missing:
            return f"misses {_ranks(missing)}: found {value}, expected {want}"
        if extra:
            return f"holds foreign {_ranks(extra)}: found {value}, expected {want}"
        twice = sorted(r for r, c in Counter(got_ranks).items() if c > 1)
        if twice and not self.idempotent:
            return f"counts {_ranks(twice)} twice: found {value}, expected {want} once each"
        if self.commutative:
            return None
        return f"wrong order for a non-commutative operator: found {value}, expected {want}"


def _expand(seq):
    out = []
    for lo, hi in seq:
        out.extend(range(lo, hi))
    return out


def _ranks(ranks) -> str:
    shown = ", ".join(f"x{r}" for r in ranks[:8])
    return ("contribution " if len(ranks) == 1 else "contributions ") + shown + (" ..." if len(ranks) > 8 else "")


def operator_properties(op: str | None, schedule: Schedule) -> tuple[str, bool, bool]:
    """Resolve ``op`` (default: the strictest operator the schedule supports)."""
    if op is None:
        if schedule.needs.idempotent:
            op = "max"
        elif schedule.needs.commutative:
            op = "sum"
        else:
            op = "noncommutative"
    if op not in OPERATORS:
        raise SpecError(f"operator {op!r}, expected one of {', '.join(OPERATORS)}")
    return (op, *OPERATORS[op])


@dataclass(frozen=True, slots=True)
class VerifyWarning:
    """A defect that does not make the result wrong, only the schedule slower.

    ``kind`` is ``"dead reduction"``: a reduction whose result never reaches
    an output of the collective (overwritten, or left in a buffer nothing
    reads), a γ term the cost model charges for nothing.
    """

    kind: str
    rank: int
    index: int
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_report` proved: the operator and the warnings."""

    op: str
    warnings: tuple[VerifyWarning, ...] = ()


def verify_report(schedule: Schedule, op: str | None = None, *, on_round_end=None,
                  on_transfer=None) -> VerifyReport:
    """Like :func:`verify`, and also collect warnings (dead reductions).

    Warnings are returned, not emitted through :mod:`warnings`: the caller
    (CLI, tests, the tuner) decides what to do with them.

    Examples
    --------
    Rank 0 of this reduce folds ``x0`` into ``tmp`` after it has used
    ``tmp``: a γ term for nothing.

    >>> from topocoll.schedules.ir import RIGHT, Schedule, ScheduleBuilder
    >>> b = ScheduleBuilder(2)
    >>> _ = b.send(1, 0, (0,), round=0), b.recv(0, 1, (0,), buf="tmp", round=0)
    >>> _ = b.reduce(0, (0,), src="tmp", side=RIGHT, round=0)
    >>> _ = b.reduce(0, (0,), src="data", dst="tmp", side=RIGHT, round=0)
    >>> report = verify_report(Schedule.from_ops("reduce", b.build(), root=0), op="sum")
    >>> report.op, [(w.kind, w.rank, w.index) for w in report.warnings]
    ('sum', [('dead reduction', 0, 2)])
    """
    dead: list = []
    op = _verify(schedule, op, on_round_end, on_transfer, dead)
    warnings = tuple(
        VerifyWarning("dead reduction", rank, idx,
                      f"{schedule.label()}: {describe(rank, idx, schedule.ops[rank][idx])}: dead reduction, "
                      f"its result in {', '.join(f'{buf}[{b}]' for buf, b in keys[:4])}"
                      f"{' ...' if len(keys) > 4 else ''} never reaches an output (overwritten or never read)")
        for rank, idx, keys in dead)
    return VerifyReport(op, warnings)


def verify(schedule: Schedule, op: str | None = None, *, on_round_end=None, on_transfer=None,
           warnings: list | None = None) -> str:
    """Prove ``schedule`` computes its collective for operator ``op``.

    Returns the operator name it was verified for; raises
    :class:`VerificationError` naming rank, buffer block and expected versus
    found contributions otherwise. Matching follows MPI's posting order
    (MPI-3.1 §3.5) under rendezvous sends, so a schedule that passes runs
    under ``topocoll.mpi.plan`` and any MPI, eager or rendezvous. If ``warnings``
    is a list, the :class:`VerifyWarning` s of :func:`verify_report` are
    appended to it (tracking them costs a little, so only then).
    """
    if warnings is not None:
        report = verify_report(schedule, op, on_round_end=on_round_end, on_transfer=on_transfer)
        warnings.extend(report.warnings)
        return report.op
    return _verify(schedule, op, on_round_end, on_transfer, None)


def _verify(schedule, op, on_round_end, on_transfer, dead) -> str:
    op, commutative, idempotent = operator_properties(op, schedule)
    algebra = SymbolicAlgebra(commutative, idempotent, schedule.depth_order)
    values = replay(schedule, algebra, on_round_end=on_round_end, on_transfer=on_transfer, unused=dead)
    for rank in range(schedule.p):
        for block, expected in expected_contributions(schedule, rank).items():
            value = values[rank].get(("data", block))
            if value is None:
                raise VerificationError(
                    f"{schedule.label()} with op={op}: rank {rank} data[{block}] never written, "
                    f"expected {format_seq(expected[1])}")
            why = algebra.check(value, expected)
            if why:
                raise VerificationError(f"{schedule.label()} with op={op}: rank {rank} data[{block}] {why}")
    return op
