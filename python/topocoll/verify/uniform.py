"""Same result on every rank: do all ranks compute a result with the same bracketing?

MPI requires that "all processes participating in these operations receive
identical results" (MPI-1.1 §4.9.6, MPI-3.1 §5.9.6, All-Reduce). IEEE-754
addition and multiplication are commutative bit for bit (``a + b == b + a``)
but not associative, so two ranks' results for one block are bitwise equal
for every input exactly when they evaluate the same *expression tree*: the
same bracketing of the same inputs. Recursive doubling and halving
(pairwise exchange, Rabenseifner), trees and the ring bracket every result
the same way on every rank; Bruck's n-port combine and the n-way
dissemination (End et al. 2016 §III-B, §III-C,
``shared/seeds/butterfly-allreduce-gaspi.txt``) accumulate a cyclically
shifted window on each rank, so from P = 3 on each rank holds its own
bracketing and float sums may differ in the last bits.

This module replays a schedule (:func:`~.replay.replay`) on expression
trees, interned so that each distinct tree is one int, and compares, result
by result, the trees of every rank that holds the same result of the
collective (the same contribution of
:func:`~topocoll.schedules.collectives.expected_contributions`: block ``b``
of an allreduce on every rank, block ``b`` of a gather on its root only)
with the tree of the lowest such rank. A result held by one rank only (a
reduce, a reduce-scatter's block, an all-to-all's block) trivially agrees.

*Identical* means: the trees are equal

- ``operands="commutative"``: up to swapping the two operands of any
  node. Equal trees then give bitwise equal results for every deterministic
  operator with ``f(a, b) == f(b, a)`` bit for bit: IEEE-754 sum and product
  (NaN payloads aside), integer and bitwise operators;
- ``operands="ordered"``: exactly, operand order included. Equal trees give
  bitwise equal results for every deterministic operator, commutative or
  not: user operators, and NumPy's float ``max``/``min``, which return the
  second operand on ties, so ``max(+0.0, -0.0)`` and ``max(-0.0, +0.0)``
  differ in the sign bit.

Different trees mean the results *may* differ: for float32 sums they do in
the last bits for most inputs (verify/tests/test_uniform.py shows it with
the reference executor); for exact operators (integer arithmetic, bitwise
operators) they never do, whatever the trees (:func:`operands_for`).

Blocks of zero bytes hold nothing and are not compared (a barrier moves
no data, so its ranks trivially agree).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..schedules.collectives import expected_contributions
from ..schedules.ir import Schedule
from ..schedules.pattern import OpsPattern
from .replay import replay
from .symbolic import OPERATORS

__all__ = [
    "OPERANDS", "Difference", "UniformityReport", "SameResult", "ALLREDUCE_SAME_RESULT",
    "uniformity_report", "identical_results", "operands_for", "same_result", "catalogue_identical",
]

#: how trees are compared (see the module docstring)
OPERANDS = ("commutative", "ordered")

#: operators whose result never depends on the bracketing, whatever the element type
_EXACT_OPERATORS = frozenset({"band", "bor", "xor", "land", "lor", "lxor"})
#: float operators that commute bit for bit (IEEE-754 §5.4.1: the rounded exact result)
_COMMUTING_FLOAT_OPERATORS = frozenset({"sum", "prod"})

#: longest rendering of a tree in a report
_SHOWN = 120


class _TreeAlgebra:
    """Expression trees, hash-consed: a leaf is a negative int, an inner node
    a non-negative index into ``nodes`` (its two operands), so equal trees are
    equal ints and a replay at P = 1024 holds one small tuple per distinct
    partial result. In commutative mode a node stores its operands sorted,
    which is the canonical form of a tree up to commutation."""

    __slots__ = ("commutative", "nblocks", "base", "table", "nodes", "lowest")

    def __init__(self, p: int, nblocks: int, commutative: bool):
        self.commutative = commutative
        self.nblocks = nblocks
        self.base = p * nblocks            # leaves are rank·nblocks + block − base < 0
        self.table: dict[tuple[int, int], int] = {}
        self.nodes: list[tuple[int, int]] = []
        self.lowest: list[int] = []        # each node's lowest leaf, to print it in rank order

    def initial(self, rank, block):
        return rank * self.nblocks + block - self.base

    def combine(self, left, right, where):
        key = (right, left) if self.commutative and right < left else (left, right)
        node = self.table.get(key)
        if node is None:
            node = self.table[key] = len(self.nodes)
            self.nodes.append(key)
            self.lowest.append(min(self._lowest(left), self._lowest(right)))
        return node

    def _lowest(self, value):
        return value if value < 0 else self.lowest[value]

    def render(self, value, block: int, limit: int = _SHOWN) -> str:
        """``((x0∘x1)∘x2)``: ``x{rank}`` for a rank's block ``block``,
        ``x{rank}[b]`` for its block ``b``; cut after ``limit`` characters."""
        out: list[str] = []
        size = 0
        stack: list = [value]
        while stack and size <= limit:
            item = stack.pop()
            if isinstance(item, str):
                text = item
            elif item < 0:
                rank, b = divmod(item + self.base, self.nblocks)
                text = f"x{rank}" if b == block else f"x{rank}[{b}]"
            else:
                left, right = self.nodes[item]
                if self.commutative and self._lowest(right) < self._lowest(left):
                    left, right = right, left
                stack.extend((")", right, "∘", left, "("))
                continue
            out.append(text)
            size += len(text)
        text = "".join(out)
        return text if not stack else text[:limit] + " …"


@dataclass(frozen=True, slots=True)
class Difference:
    """Rank ``rank`` holds the result in its ``data[block]`` as another tree
    than ``reference``, the lowest rank holding the same result (in its
    ``data[reference_block]``); both trees as text."""

    rank: int
    block: int
    reference: int
    reference_block: int
    found: str
    expected: str

    def __str__(self) -> str:
        return (f"rank {self.rank} data[{self.block}] = {self.found}, "
                f"rank {self.reference} data[{self.reference_block}] = {self.expected}")


@dataclass(frozen=True, slots=True)
class UniformityReport:
    """What :func:`uniformity_report` found.

    ``differing`` lists every ``(rank, block, reference rank)`` whose tree
    differs from the reference rank's for the same result, in rank then block
    order; ``first`` renders the first of them.
    """

    label: str
    operands: str
    differing: tuple[tuple[int, int, int], ...]
    first: Difference | None

    @property
    def identical(self) -> bool:
        return not self.differing

    def __str__(self) -> str:
        if self.identical:
            return f"{self.label}: every rank holds the same result ({self.operands} operands)"
        ranks = sorted({r for r, _, _ in self.differing})
        return (f"{self.label}: results differ on {len(ranks)} rank(s) ({self.operands} operands): "
                f"{self.first}")


def _check_operands(operands: str) -> str:
    if operands not in OPERANDS:
        raise SpecError(f"operands={operands!r}, expected one of {', '.join(OPERANDS)}")
    return operands


def uniformity_report(schedule: Schedule, *, operands: str = "commutative") -> UniformityReport:
    """Replay ``schedule`` on expression trees and compare the ranks' results.

    Parameters
    ----------
    schedule : Schedule
        Any valid schedule (the replay raises :class:`VerificationError` on a
        defective one, as :func:`~.symbolic.verify` does).
    operands : {"commutative", "ordered"}
        Compare trees up to swapping operands (IEEE-754 sum and product), or
        exactly (non-commutative operators, float max/min); see the module
        docstring.

    Returns
    -------
    UniformityReport
        Every (rank, block) whose tree differs from that of the lowest rank
        holding the same result; blocks of zero bytes are skipped.

    Notes
    -----
    Cost: one replay (as the symbolic verifier), with one dict look-up per
    reduced block, so it grows with the schedule's operations on every rank:
    at P = 1024 (one block) 0.35–0.55 s for ``bruck`` and 0.3–0.5 s for
    ``pairwise_exchange``, plus 0.1–0.3 s to build their operations; 9–19 s
    for ``rabenseifner`` (P blocks, P² block reductions) and 6 s for ``ring``
    at P = 256 (this 2-core machine, shared and loaded, so ranges). Most of
    it is the replay's matching and hazard checks.

    Examples
    --------
    Bruck at P = 3: rank r combines its input with ``x_{r+1}∘x_{r+2}``.

    >>> from topocoll.schedules.registry import generate
    >>> print(uniformity_report(generate("allreduce", "bruck", 3)))
    allreduce/bruck(p=3, n=1): results differ on 2 rank(s) (commutative operands): rank 1 data[0] = ((x0∘x2)∘x1), rank 0 data[0] = (x0∘(x1∘x2))
    >>> uniformity_report(generate("allreduce", "pairwise_exchange", 6)).identical
    True
    """
    _check_operands(operands)
    p, nblocks = schedule.p, schedule.nblocks
    algebra = _TreeAlgebra(p, nblocks, operands == "commutative")
    values = replay(schedule, algebra)
    nonempty = schedule.block_bytes > 0
    # contribution -> (lowest rank holding it, its block there, its tree)
    reference: dict[tuple, tuple[int, int, int | None]] = {}
    differing: list[tuple[int, int, int]] = []
    first = None
    for rank in range(p):
        held = values[rank]
        for block, contribution in expected_contributions(schedule, rank).items():
            if not nonempty[block]:
                continue
            tree = held.get(("data", block))
            ref_rank, ref_block, ref_tree = reference.setdefault(contribution, (rank, block, tree))
            if ref_tree == tree:
                continue
            differing.append((rank, block, ref_rank))
            if first is None:
                first = Difference(rank, block, ref_rank, ref_block, _show(algebra, tree, contribution[0]),
                                   _show(algebra, ref_tree, contribution[0]))
    return UniformityReport(schedule.label(), operands, tuple(differing), first)


def _show(algebra: _TreeAlgebra, tree, block: int) -> str:
    return "never written" if tree is None else algebra.render(tree, block)


def operands_for(op: str = "sum", dtype=None) -> str | None:
    """How results of ``op`` on elements of ``dtype`` must agree in bracketing.

    Returns ``None`` where the bracketing never changes the result (bitwise
    and logical operators; any predefined operator on integers or booleans,
    whose arithmetic wraps modulo 2^bits and is associative);
    ``"commutative"`` for float sum and product; ``"ordered"`` for float
    max/min (NumPy returns the second operand on ties: ±0.0) and for
    operators that do not commute (``"noncommutative"``, ``"over"``, user
    operators). ``dtype`` ``None`` stands for a floating-point type.

    Examples
    --------
    >>> operands_for("sum", "float32"), operands_for("sum", "int64"), operands_for("max", "float64")
    ('commutative', None, 'ordered')
    """
    if op not in OPERATORS:
        raise SpecError(f"operator {op!r}, expected one of {', '.join(OPERATORS)}")
    commutative, _ = OPERATORS[op]
    kind = "f" if dtype is None else np.dtype(dtype).kind
    if op in _EXACT_OPERATORS or (commutative and kind in "biu"):
        return None
    if op in _COMMUTING_FLOAT_OPERATORS and kind in "fc":
        return "commutative"
    return "ordered"


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 256


def _cache_key(schedule: Schedule, operands: str):
    """What determines the trees of a generated schedule; ``None`` for
    hand-written or mutated op lists (their label does not name their ops)."""
    if type(schedule.pattern) is OpsPattern:   # Schedule.from_ops, Schedule.with_ops
        return None
    return (schedule.collective, schedule.algorithm, schedule.p, schedule.count, schedule.nblocks,
            repr(sorted(schedule.params.items())), schedule.root, schedule.depth_order, operands)


def identical_results(schedule: Schedule, op: str = "sum", dtype=None) -> bool:
    """Whether every rank holding a result of ``schedule`` holds it bit for bit
    the same, for operator ``op`` on elements of ``dtype``.

    ``True`` is a guarantee for any deterministic implementation of ``op``
    (the trees are equal, see the module docstring); ``False`` means ranks
    bracket differently and, for floats, may differ in the last bits. Meant
    for plan time: exact operators (:func:`operands_for` ``None``) answer at
    once; otherwise :func:`uniformity_report` runs once per generated
    schedule (cached by collective, algorithm, P, count, blocks and
    parameters; hand-written op lists are not cached). Cost at P = 1024,
    uncached, building the operations included: ``bruck`` 0.4–0.7 s,
    ``pairwise_exchange`` 0.5–0.8 s (one block); cached: 3–7 µs. Algorithms
    with P blocks cost more (``rabenseifner`` at P = 1024: 9–19 s);
    :func:`catalogue_identical` answers for catalogue algorithms in O(1).
    User operators: pass ``"noncommutative"`` (whether they commute bit for
    bit is unknown).

    Examples
    --------
    >>> from topocoll.schedules.registry import generate
    >>> bruck = generate("allreduce", "bruck", 4)
    >>> identical_results(bruck), identical_results(bruck, "sum", "int32")
    (False, True)
    >>> identical_results(generate("allreduce", "rabenseifner", 5, count=40), "sum", "float32")
    True
    """
    operands = operands_for(op, dtype)
    if operands is None:
        return True
    key = _cache_key(schedule, operands)
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    same = uniformity_report(schedule, operands=operands).identical
    if key is not None:
        _CACHE[key] = same
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return same


# ---- the catalogue ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SameResult:
    """Up to which P an algorithm gives every rank the same result.

    ``text`` is what ``topocoll algorithms`` shows; ``commutative_up_to`` and
    ``ordered_up_to`` the largest P at which the trees agree under each
    comparison (``None``: every P). ``per_schedule``: the answer depends on
    the parameters, not on P alone (a hierarchical schedule agrees where its
    leaders' algorithm does, on its leaders): :func:`catalogue_identical`
    returns ``None`` so callers analyse the schedule, and :meth:`holds`
    answers for the registry's sweep only (tested).
    """

    text: str
    commutative_up_to: int | None = None
    ordered_up_to: int | None = None
    per_schedule: bool = False

    def holds(self, p: int, operands: str = "commutative") -> bool:
        """Whether every rank's trees agree at ``p`` ranks."""
        bound = self.commutative_up_to if _check_operands(operands) == "commutative" else self.ordered_up_to
        return bound is None or p <= bound


EVERY_P = SameResult("yes")
#: two ranks combine the same pair (x0∘x1 and x1∘x0: equal up to operand order)
AT_MOST_TWO = SameResult("P ≤ 2 only", commutative_up_to=2, ordered_up_to=1)
NO_DATA = SameResult("no data")

#: every allreduce algorithm of the catalogue: what :func:`uniformity_report`
#: finds, for every parameter set of its ``sweep``, under both comparisons.
#: verify/tests/test_uniform.py holds it at P = 1..12, 16, 17, 31, 32, 33 and
#: 20 random P ≤ 70 (``make test``), at every P ≤ 130 (``make test-all``;
#: ordered operands P ≤ 64)
ALLREDUCE_SAME_RESULT: dict[str, SameResult] = {
    "binomial": EVERY_P,                      # reduce to 0 in rank order, then a broadcast
    # the leaders' results, broadcast: as the leaders' algorithm (inter=) on its leaders
    "hierarchical": SameResult("as its leaders' algorithm (analysed per schedule)", per_schedule=True),
    "bruck": AT_MOST_TWO,                     # rank r: x_r∘(window from r+1) (End et al. §III-C)
    "butterfly_virtual": EVERY_P,             # butterfly: both partners combine the same two values
    "nway_dissemination": AT_MOST_TWO,        # rank r's window starts at r (End et al. §III-B)
    "nway_dissemination_unadapted": AT_MOST_TWO,
    "pairwise_exchange": EVERY_P,             # recursive doubling, lower rank's data left
    "rabenseifner": EVERY_P,                  # each block reduced once, then gathered
    "ring": EVERY_P,                          # each block reduced once around the ring, then copied
    "synthesized": EVERY_P,                   # each block reduced once, at its owner, then copied (synth/plan.py)
}


def same_result(collective: str, name: str) -> SameResult | None:
    """The rule for ``collective``/``name``; ``None`` for an allreduce
    algorithm nobody has analysed yet.

    Collectives other than allreduce and barrier agree at every P by their
    definition: a reduce, reduce-scatter or gather leaves each result on one
    rank, and bcast, allgather and alltoall copy inputs without reducing them
    (the tests hold this for the catalogue, too).
    """
    if collective == "allreduce":
        return ALLREDUCE_SAME_RESULT.get(name)
    if collective == "barrier":
        return NO_DATA
    return EVERY_P


def catalogue_identical(collective: str, name: str, p: int, op: str = "sum", dtype=None) -> bool | None:
    """:func:`identical_results` for a catalogue algorithm at ``p`` ranks,
    without building its schedule: O(1), from :func:`same_result` (held
    against the analysis by the tests). ``None`` where the algorithm has no
    rule. For choosing among candidate algorithms (``algorithm="auto"``) at
    any P: the analysis itself costs a replay (:func:`identical_results`).

    Examples
    --------
    >>> catalogue_identical("allreduce", "bruck", 1024), catalogue_identical("allreduce", "bruck", 1024, "sum", "int64")
    (False, True)
    >>> catalogue_identical("allreduce", "rabenseifner", 65536, "max", "float32")
    True
    """
    operands = operands_for(op, dtype)
    if operands is None:
        return True
    rule = same_result(collective, name)
    return None if rule is None or rule.per_schedule else rule.holds(p, operands)
