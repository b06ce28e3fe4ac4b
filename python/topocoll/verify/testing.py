"""Inputs and operators for checking schedules against serial references.

``affine`` is an associative, non-commutative operator on NumPy structured
elements: each element is an affine map ``x -> a·x + b (mod 2**31 - 1)`` and
``affine(left, right)`` composes them, so any schedule that reorders
contributions produces a different array, not just a different symbol.
"""

from __future__ import annotations

import numpy as np

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
    """Execute ``schedule`` and assert every output block equals the serial
    reduction the collective defines (raises AssertionError naming it)."""
    from .reference import execute, serial_reference

    outputs = execute(schedule, inputs, op)
    expected = serial_reference(schedule, inputs, op)
    bounds = schedule.bounds
    for rank, blocks in enumerate(expected):
        for position, want in blocks.items():
            got = outputs[rank][bounds[position]:bounds[position + 1]]
            if not np.array_equal(got, want):
                raise AssertionError(
                    f"{schedule.label()}: rank {rank} block {position} = {got[:4]}..., expected {want[:4]}...")


def round_rows(rnd, *, ordered: bool = False) -> list[tuple[int, int, int, int, int]]:
    """A round of the array view as ``(src, dst, nbytes, dep_round, reduced)``
    rows, sorted unless ``ordered`` (then in the generator's own row order)."""
    rows = list(zip(rnd.src.tolist(), rnd.dst.tolist(), rnd.nbytes.tolist(),
                    rnd.dep_round.tolist(), rnd.reduced.tolist()))
    return rows if ordered else sorted(rows)


def assert_views_equal(schedule, *, ordered: bool = False) -> None:
    """The generator's vectorised array view equals the one derived from its
    per-rank operations (:func:`~topocoll.schedules.ir.rounds_from_ops`),
    round by round; empty rounds are ignored."""
    from ..schedules.ir import rounds_from_ops

    fast = [r for r in schedule.rounds() if len(r)]
    slow = [r for r in rounds_from_ops(schedule.ops, schedule.block_bytes) if len(r)]
    assert [r.round for r in fast] == [r.round for r in slow], f"{schedule.label()}: round numbers differ"
    for a, b in zip(fast, slow):
        assert round_rows(a, ordered=ordered) == round_rows(b, ordered=ordered), \
            f"{schedule.label()} round {a.round}: array view differs from the per-rank ops"


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
