"""Reference executor: run a schedule in one process on real NumPy buffers.

The same replay as the symbolic verifier, with arrays instead of symbols, so
every algorithm can be compared with a direct serial computation without MPI.
Operators: ``sum``, ``prod``, ``max``, ``min``, ``band``, ``bor``, ``xor`` or
any binary callable ``f(left, right) -> array`` (left is the lower rank side
for non-commutative operators).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import SpecError
from ..schedules.collectives import expected_contributions
from ..schedules.ir import Schedule
from .replay import replay

UFUNCS: dict[str, Callable] = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "band": np.bitwise_and, "bor": np.bitwise_or, "xor": np.bitwise_xor,
}


def resolve_operator(op) -> Callable:
    if callable(op):
        return op
    if op not in UFUNCS:
        raise SpecError(f"operator {op!r}, expected one of {', '.join(UFUNCS)} or a callable")
    return UFUNCS[op]


class _ArrayAlgebra:
    def __init__(self, schedule, inputs, func):
        self.bounds = schedule.bounds
        self.inputs = inputs
        self.func = func

    def initial(self, rank, block):
        lo, hi = self.bounds[block], self.bounds[block + 1]
        return self.inputs[rank][lo:hi].copy()

    def combine(self, left, right, where):
        return self.func(left, right)


def execute(schedule: Schedule, inputs, op="sum") -> list[np.ndarray]:
    """Run ``schedule`` on ``inputs`` (one array of ``count`` elements per rank).

    Returns each rank's ``data`` buffer at the end; blocks the schedule never
    wrote on a rank are left as that rank's input (or zeros where it had none).
    """
    func = resolve_operator(op)
    if len(inputs) != schedule.p:
        raise SpecError(f"execute: {len(inputs)} input arrays, expected p={schedule.p}")
    for rank, x in enumerate(inputs):
        if x.shape[0] != schedule.count:
            raise SpecError(f"execute: rank {rank} input has {x.shape[0]} elements, expected count={schedule.count}")
    values = replay(schedule, _ArrayAlgebra(schedule, inputs, func))
    out = []
    for rank in range(schedule.p):
        buf = np.array(inputs[rank], copy=True)
        for (name, block), value in values[rank].items():
            if name == "data":
                buf[schedule.bounds[block]:schedule.bounds[block + 1]] = value
        out.append(buf)
    return out


def serial_reference(schedule: Schedule, inputs, op="sum") -> list[dict[int, np.ndarray]]:
    """What each rank's output blocks must hold, computed directly from the
    collective's definition: a left-to-right fold over the contributing ranks
    (in the schedule's depth order, if it has one)."""
    func = resolve_operator(op)
    order = schedule.depth_order or range(schedule.p)
    folds: dict = {}  # every rank of an allreduce expects the same fold: compute it once

    def fold(origin, seq):
        lo, hi = schedule.bounds[origin], schedule.bounds[origin + 1]
        acc = None
        for a, b in seq:
            for pos in range(a, b):
                x = inputs[order[pos]][lo:hi]
                acc = x.copy() if acc is None else func(acc, x)
        return acc

    out = []
    for rank in range(schedule.p):
        blocks = {}
        for position, contribution in expected_contributions(schedule, rank).items():
            if contribution not in folds:
                folds[contribution] = fold(*contribution)
            blocks[position] = folds[contribution]
        out.append(blocks)
    return out
