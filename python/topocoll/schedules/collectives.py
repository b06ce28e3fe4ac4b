"""What each collective promises: inputs before, contributions after.

A contribution is described as ``(origin_block, ranks)`` where ``ranks`` is a
tuple of half-open rank intervals in depth order (rank order): the value of
block ``origin_block`` reduced over those ranks' inputs, left to right.
The verifier checks schedules against these definitions (MPI-3.1 §5 for
the semantics of each collective); the reference executor
(:mod:`topocoll.verify.reference`) writes them down again on its own, without
the schedule's ``result_blocks`` / ``input_blocks``.
"""

from __future__ import annotations

from typing import Iterable

from ..errors import ScheduleError
from .ir import Schedule

COLLECTIVES = (
    "allreduce", "reduce", "bcast", "reduce_scatter", "allgather", "gather", "barrier", "alltoall",
)

Contribution = tuple[int, tuple[tuple[int, int], ...]]


def input_blocks(schedule: Schedule, rank: int) -> Iterable[int]:
    """Blocks of ``data`` that hold rank's own input when the collective starts."""
    c = schedule.collective
    if c == "bcast":
        return range(schedule.nblocks) if rank == schedule.root else ()
    if c in ("allgather", "gather"):
        return schedule.input_blocks(rank) if schedule.input_blocks else (rank,)
    if c in COLLECTIVES:
        return range(schedule.nblocks)
    raise ScheduleError(f"collective={c!r}, expected one of {', '.join(COLLECTIVES)}")


def block_owner(schedule: Schedule) -> list[int]:
    """For gather-like collectives: which rank contributes each block."""
    owner = [-1] * schedule.nblocks
    for r in range(schedule.p):
        for b in input_blocks(schedule, r):
            owner[b] = r
    return owner


def expected_contributions(schedule: Schedule, rank: int) -> dict[int, Contribution]:
    """Block position of ``data`` -> contribution it must hold at the end."""
    c, p, nb = schedule.collective, schedule.p, schedule.nblocks
    everyone = ((0, p),)
    if c in ("allreduce", "barrier"):
        return {b: (b, everyone) for b in range(nb)}
    if c == "reduce":
        return {b: (b, everyone) for b in range(nb)} if rank == schedule.root else {}
    if c == "reduce_scatter":
        return {b: (b, everyone) for b in schedule.result_blocks(rank)}
    if c == "bcast":
        root = schedule.root
        return {b: (b, ((root, root + 1),)) for b in range(nb)}
    if c in ("allgather", "gather"):
        if c == "gather" and rank != schedule.root:
            return {}
        return {b: (b, ((o, o + 1),)) for b, o in enumerate(block_owner(schedule))}
    if c == "alltoall":
        # rank d's block s holds what rank s's block d carried; with S packets
        # per destination (nblocks = P·S) block s·S + j holds packet j of it
        segs = nb // p
        return {s * segs + j: (rank * segs + j, ((s, s + 1),)) for s in range(p) for j in range(segs)}
    raise ScheduleError(f"collective={c!r}, expected one of {', '.join(COLLECTIVES)}")
