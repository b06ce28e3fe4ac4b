"""Bruck's all-to-all: ⌈log_{k+1} p⌉ rounds with ``k`` ports, local rotations as Copy operations.

References
----------
J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient
algorithms for all-to-all communications in multiport message-passing
systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..common import ceil_log, check_p
from ..ir import Schedule
from ..pattern import ADD, Circulant
from ..registry import algorithm
from .common import PAPER, check_sizes, _int_param, _make


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
            if pos.size:
                steps.append(BruckStep(x, z, z * r ** x, pos))
    return steps


def _bruck_template(p: int, k: int) -> Circulant:
    """Rank 0's ops; rank ``i`` runs them moved by ``i`` (peers and block
    labels ``+ i`` mod P).

    Rank ``i``'s rotated position ``j`` is stored at label ``(i + j) mod P``
    of ``"rot"`` and ``"fwd"``, so every rank runs the same ops and the
    rotations are the relabelling itself: the first copy moves block
    ``i + j`` of ``data`` to position ``j`` (label ``i + j``), the last moves
    position ``j`` (label ``i + j``), the block of rank ``i − j``, to block
    ``i − j`` of ``data``. Positions ``j`` are rank 0's labels.
    """
    tpl = Circulant(group=ADD, block_shift=1)
    plan = bruck_plan(p, k)
    rotated = range(1, p)
    if p > 1:
        tpl.copy(0, dst="rot", src="data", blocks=rotated)
    for rnd in sorted({st.round for st in plan}):
        steps = [st for st in plan if st.round == rnd]
        for st in steps:
            tpl.send(rnd, st.offset, "rot", blocks=st.positions.tolist())
        for st in steps:
            tpl.recv(rnd, st.offset, "fwd", blocks=st.positions.tolist())
        for st in steps:
            tpl.copy(rnd, dst="rot", src="fwd", blocks=st.positions.tolist())
    if p > 1:
        tpl.copy(plan[-1].round, dst="data", src="rot", blocks=[p - j for j in rotated], src_blocks=rotated)
    return tpl


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

    Every rank runs the same ops moved by its rank: one
    :class:`~topocoll.schedules.pattern.Circulant` template, whose op program
    streams vectorised with exact dependencies. Position ``j`` of rank ``i``
    is therefore stored at label ``(i + j) mod P`` of ``"rot"`` and
    ``"fwd"`` (the rotation is in the labels; :func:`_bruck_template`).

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

    Rank 2 of 5 rotates with its first op and unrotates with its last:

    >>> ops = bruck_alltoall(5).ops_for(2)
    >>> ops[0].src_blocks, ops[-1].blocks
    ((3, 4, 0, 1), (1, 0, 4, 3))
    """
    p = check_p("alltoall/bruck", p)
    k = _int_param("alltoall/bruck", "k", k, minimum=1)
    count, itemsize, _ = check_sizes("alltoall/bruck", p, count, itemsize)
    return _make("bruck", p, count, itemsize, {"k": k}, _bruck_template(p, k).pattern(p, p))
