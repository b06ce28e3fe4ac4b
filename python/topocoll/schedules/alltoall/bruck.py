"""Bruck's all-to-all: ⌈log_{k+1} p⌉ rounds with ``k`` ports, local rotations as Copy operations.

References
----------
J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient
algorithms for all-to-all communications in multiport message-passing
systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..common import ceil_log, check_p
from ..ir import RoundArrays, Schedule, ScheduleBuilder
from ..registry import algorithm
from .common import PAPER, _Rows, check_sizes, _int_param, _make


# ---- Bruck ---------------------------------------------------------------

@dataclass(frozen=True)
class BruckStep:
    """One message of Bruck's algorithm: in round ``round`` every rank sends
    the rotated positions ``positions`` (digit ``round`` of the position in
    base k+1 equals ``digit``) to the rank ``offset`` ahead."""

    round: int
    digit: int
    offset: int
    positions: np.ndarray
    dep_round: int


def bruck_plan(p: int, k: int) -> list[BruckStep]:
    """The messages of Bruck's all-to-all with ``k`` ports (radix ``k + 1``).

    Round ``x`` (``0 ≤ x < ⌈log_{k+1} p⌉``) moves every rotated position ``j``
    whose base-(k+1) digit ``x`` is ``z ≠ 0`` by ``z·(k+1)^x`` ranks, on up to
    ``k`` ports at once.
    """
    r = k + 1
    j = np.arange(1, p, dtype=np.int64)
    steps = []
    for x in range(ceil_log(p, r)):
        digit = (j // r ** x) % r
        for z in range(1, r):
            pos = j[digit == z]
            if pos.size == 0:
                continue
            dep = -1
            for earlier in range(x - 1, -1, -1):
                if ((pos // r ** earlier) % r != 0).any():
                    dep = earlier
                    break
            steps.append(BruckStep(x, z, z * r ** x, pos, dep))
    return steps


def _bruck_ops(p: int, k: int) -> list:
    b = ScheduleBuilder(p)
    plan = bruck_plan(p, k)
    by_round: dict[int, list[BruckStep]] = {}
    for step in plan:
        by_round.setdefault(step.round, []).append(step)
    for i in range(p):
        # local rotation: rot[j] = data[(i + j) mod p], the block for rank i + j
        rotated = tuple(range(1, p))
        if rotated:
            b.copy(i, rotated, dst="rot", src="data", src_blocks=tuple((i + j) % p for j in rotated), round=0)
    for i in range(p):
        for rnd in sorted(by_round):
            steps = by_round[rnd]
            for st in steps:
                b.send(i, (i + st.offset) % p, tuple(st.positions.tolist()), buf="rot", round=rnd)
            for st in steps:
                pos = tuple(st.positions.tolist())
                b.recv(i, (i - st.offset) % p, pos, buf="fwd", into=pos, round=rnd)
            for st in steps:
                pos = tuple(st.positions.tolist())
                b.copy(i, pos, dst="rot", src="fwd", round=rnd)
        # inverse rotation: rot[j] now holds the block of rank i − j
        rotated = tuple(range(1, p))
        if rotated:
            last = plan[-1].round if plan else 0
            b.copy(i, tuple((i - j) % p for j in rotated), dst="data", src="rot", src_blocks=rotated, round=last)
    return b.build()


def _bruck_rounds(p: int, k: int, m: int) -> Iterator[RoundArrays]:
    rows = _Rows(p)
    plan = bruck_plan(p, k)
    for rnd in sorted({st.round for st in plan}):
        steps = [st for st in plan if st.round == rnd]
        src = np.concatenate([rows.ranks] * len(steps))
        dst = np.concatenate([(rows.ranks + st.offset) % p for st in steps])
        nbytes = np.concatenate([np.full(p, st.positions.size * m, dtype=np.int64) for st in steps])
        dep = np.concatenate([np.full(p, st.dep_round, dtype=np.int64) for st in steps])
        yield RoundArrays(rnd, src, dst, nbytes, dep, np.zeros_like(src))


@algorithm(collective="alltoall", name="bruck", params={"k": 1}, needs="associative", rounds="⌈log_{k+1} P⌉",
           paper="Bruck et al. 1997 (IEEE TPDS 8(11)); short messages, "
                 f"{PAPER} §3 indirect [3, 6]",
           sweep=({"k": 1}, {"k": 2}))
def bruck_alltoall(p: int, *, k: int = 1, count: int | None = None, itemsize: int = 8) -> Schedule:
    """Bruck's all-to-all in ⌈log_{k+1} P⌉ rounds with ``k`` ports.

    1. Local rotation (a Copy): ``rot[j] = data[(i + j) mod P]``, the block
       for rank ``i + j``.
    2. Round ``x``: for each digit value ``z = 1 … k``, send the positions
       whose base-(k+1) digit ``x`` is ``z`` to rank ``i + z·(k+1)^x`` and
       receive the same positions from ``i − z·(k+1)^x`` into ``"fwd"``;
       unpack them into ``rot`` (a Copy). A block travels ``j`` ranks in
       total, one digit at a time, combined with other blocks.
    3. Inverse rotation (a Copy): ``data[(i − j) mod P] = rot[j]``.

    Parameters
    ----------
    p : int
        Number of ranks.
    k : int
        Ports: messages a rank may send at once (radix ``k + 1``).
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Notes
    -----
    Trades bandwidth for latency: ⌈log_{k+1}P⌉ rounds instead of ``P − 1``,
    but every block is sent once per nonzero digit, about
    ``(P/(k+1))·m`` bytes per message. For ``P = (k+1)^n`` the single-port
    α-β cost is ``n·k·α + n·k·(P/(k+1))·m·β`` (each round sends ``k``
    messages); with ``k`` ports working at once, ``n·α + n·(P/(k+1))·m·β``
    (:func:`.alltoall_cost.crossbar_cost`).

    References
    ----------
    Bruck, Ho, Kipnis, Upfal & Weathersby, IEEE TPDS 8(11), 1997, §3.

    Examples
    --------
    >>> s = bruck_alltoall(8, k=1)
    >>> [(r.round, r.dst.tolist()[:2], int(r.nbytes[0])) for r in s.rounds()]
    [(0, [1, 2], 32), (1, [2, 3], 32), (2, [4, 5], 32)]
    """
    p = check_p("alltoall/bruck", p)
    k = _int_param("alltoall/bruck", "k", k, minimum=1)
    count, itemsize, m = check_sizes("alltoall/bruck", p, count, itemsize)
    return _make("bruck", p, count, itemsize, {"k": k},
                 lambda: _bruck_ops(p, k), lambda: _bruck_rounds(p, k, m))
