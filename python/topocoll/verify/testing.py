"""Inputs and operators for checking schedules against serial references.

``affine`` is an associative, non-commutative operator on NumPy structured
elements: each element is an affine map ``x -> a·x + b (mod 2**31 - 1)`` and
``affine(left, right)`` composes them, so any schedule that reorders
contributions produces a different array, not just a different symbol.
"""

from __future__ import annotations

import numpy as np

from ..schedules.ir import Recv, Schedule, Send
from .reference import defined_inputs, defined_result_blocks, execute, serial_reference

MODULUS = 2**31 - 1
AFFINE = np.dtype([("a", np.int64), ("b", np.int64)])


def affine(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left ∘ right`` where ``(f ∘ g)(x) = f(g(x))``: associative, not commutative."""
    out = np.empty_like(left)
    out["a"] = (left["a"] * right["a"]) % MODULUS
    out["b"] = (left["a"] * right["b"] + left["b"]) % MODULUS
    return out


def affine_inputs(p: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(p):
        x = np.empty(count, dtype=AFFINE)
        x["a"] = rng.integers(2, MODULUS, count)
        x["b"] = rng.integers(0, MODULUS, count)
        out.append(x)
    return out


def integer_inputs(p: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-1000, 1000, count, dtype=np.int64) for _ in range(p)]


def check_against_reference(schedule, inputs, op) -> None:
    """Execute ``schedule`` with the reference interpreter and assert every
    output block equals what the collective's definition says it must hold
    (:func:`~topocoll.verify.reference.serial_reference`; raises
    AssertionError naming the rank and block).

    The schedule's own metadata is checked against the definition too: a
    reduce-scatter's ``result_blocks(r)`` must name the one block the
    definition puts on rank ``r`` (the MPI layer and ``composite`` assemble
    pictures from it), an allgather's ``input_blocks(r)`` block ``r``.
    """
    outputs = execute(schedule, inputs, op)
    expected = serial_reference(schedule, inputs, op)
    bounds = schedule.bounds
    for rank, blocks in enumerate(expected):
        for position, want in blocks.items():
            got = outputs[rank][bounds[position]:bounds[position + 1]]
            if not np.array_equal(got, want):
                raise AssertionError(
                    f"{schedule.label()}: rank {rank} block {position} = {got[:4]}..., expected {want[:4]}...")
    for rank in range(schedule.p):
        if schedule.collective == "reduce_scatter" and schedule.result_blocks is not None:
            claimed, defined = tuple(schedule.result_blocks(rank)), defined_result_blocks(schedule, rank)
            if claimed != defined:
                shown = f"block {defined[0]}" if len(defined) == 1 else f"blocks {defined}"
                raise AssertionError(f"{schedule.label()}: result_blocks({rank}) = {claimed}, but the "
                                     f"definition puts {shown} on rank {rank}")
        if schedule.collective in ("allgather", "gather") and schedule.input_blocks is not None:
            claimed, defined = tuple(schedule.input_blocks(rank)), tuple(defined_inputs(schedule, rank))
            if claimed != defined:
                raise AssertionError(f"{schedule.label()}: input_blocks({rank}) = {claimed}, but the "
                                     f"definition gives rank {rank} block(s) {defined}")


def round_rows(rnd, *, ordered: bool = False) -> list[tuple[int, int, int]]:
    """The messages of a round summary as ``(src, dst, nbytes)`` rows, sorted
    unless ``ordered`` (then in program order: rank, then posting order)."""
    rows = list(zip(rnd.src.tolist(), rnd.dst.tolist(), rnd.nbytes.tolist()))
    return rows if ordered else sorted(rows)


def assert_views_equal(schedule, ranks=None) -> None:
    """Every view of ``schedule`` agrees with its per-rank operations.

    The op program the pattern streams equals the one derived column by
    column from every rank's op list (:func:`~topocoll.schedules.program.chunks_from_ops`,
    dependencies by data flow), and ``ops_for(rank)`` equals that rank's list.
    """
    from ..schedules.program import chunks_from_ops

    ops = schedule.ops
    for rank in (range(schedule.p) if ranks is None else ranks):
        assert schedule.pattern.ops_for(rank) == ops[rank], f"{schedule.label()}: ops_for({rank}) differs"
    fast = list(schedule.program())
    slow = list(chunks_from_ops(ops, schedule.pattern.buffers(), schedule.block_bytes))
    assert [c.round for c in fast] == [c.round for c in slow], f"{schedule.label()}: round numbers differ"
    for a, b in zip(fast, slow):
        for name in a.__dataclass_fields__:
            x, y = getattr(a, name), getattr(b, name)
            same = np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
            assert same, f"{schedule.label()} round {a.round}: op program column {name} differs from the per-rank ops"


def shifted_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(1+a)(1+b) − 1 mod 2**31 − 1``: associative, commutative, not idempotent
    (a user-defined operator that double counts visibly); use non-negative
    inputs below the modulus (:func:`positive_inputs`)."""
    return ((1 + left) * (1 + right) - 1) % MODULUS


def positive_inputs(p: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, MODULUS - 1, count, dtype=np.int64) for _ in range(p)]


def rounds_needed(p: int, n: int) -> int:
    """⌈log_{n+1} p⌉ by repeated multiplication: the round count of the
    n-way dissemination and Bruck algorithms, computed independently of them."""
    k = 0
    while (n + 1) ** k < p:
        k += 1
    return k


def relay(p: int, hops: list[tuple[int, int]], nbytes: int = 1000):
    """A message of ``nbytes`` handed along ``hops`` (rank a → rank b), each
    send waiting for the receive before it: one message in flight at a time
    (the simulator tests' exact-time schedule)."""
    ops = [[] for _ in range(p)]
    for step, (a, b) in enumerate(hops):
        after = (len(ops[a]) - 1,) if ops[a] else ()
        ops[a].append(Send(b, "data", (0,), 0, step, after))
        ops[b].append(Recv(a, "data", (0,), (0,), 0, step))
    return Schedule.from_ops("bcast", ops, count=nbytes, itemsize=1, nblocks=1, root=hops[0][0])
