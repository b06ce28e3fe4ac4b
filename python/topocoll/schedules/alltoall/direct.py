"""Direct all-to-all: one message per (source, destination) pair.

:func:`direct_alltoall` (every rank sends to 0, 1, 2, … in order: the
hot-spot baseline), :func:`shift_alltoall` (round ``S``: send to
``(i + S) mod p``, the shift permutation of Cavin & Demengeon 2012 §2.1.4) and
:func:`pairwise_exchange_alltoall` (round ``S``: exchange with ``i XOR S``,
``p`` a power of two).

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012, §2.1.4
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ...errors import SpecError
from ..common import check_p
from ..ir import RoundArrays, Schedule, ScheduleBuilder
from ..registry import algorithm
from .common import PAPER, _Rows, check_sizes, _make, _stage_input


# ---- direct algorithms: one message per (source, destination) ---------------

def _direct_ops(p: int, nrounds: int, dst_of_round: Callable[[int], np.ndarray]) -> list:
    """Per-rank ops of a direct schedule; ``dst_of_round(t)[i]`` is the rank
    ``i`` sends its block to in round ``t`` (``-1``: none)."""
    b = ScheduleBuilder(p)
    _stage_input(b, p)
    events: list[list[tuple[int, int, int]]] = [[] for _ in range(p)]
    for t in range(nrounds):
        for i, d in enumerate(dst_of_round(t).tolist()):
            if d >= 0:
                events[i].append((t, 0, d))
                events[d].append((t, 1, i))
    for rank, evs in enumerate(events):
        for t, kind, peer in sorted(evs):
            if kind == 0:
                b.send(rank, peer, (peer,), buf="send", round=t)
            else:
                b.recv(rank, peer, (rank,), buf="data", into=(peer,), round=t)
    return b.build()


def _direct_rounds(p: int, m: int, nrounds: int, dst_of_round) -> Iterator[RoundArrays]:
    rows = _Rows(p)
    for t in range(nrounds):
        dst = dst_of_round(t)
        if (dst < 0).any():
            keep = dst >= 0
            n = int(keep.sum())
            yield RoundArrays(t, rows.ranks[keep], dst[keep], rows.full(m)[:n], rows.minus[:n], rows.zeros[:n])
        else:
            yield rows.round(t, dst, m, -1)


def _direct_schedule(name, p, count, itemsize, m, params, nrounds, dst_of_round) -> Schedule:
    return _make(name, p, count, itemsize, params,
                 lambda: _direct_ops(p, nrounds, dst_of_round),
                 lambda: _direct_rounds(p, m, nrounds, dst_of_round))


@algorithm(collective="alltoall", name="direct", params={}, needs="associative", rounds="P",
           paper=f"{PAPER} §3 eq. 3 (direct)")
def direct_alltoall(p: int, *, count: int | None = None, itemsize: int = 8) -> Schedule:
    """Direct linear all-to-all: every rank sends to ranks 0, 1, 2, … in order.

    Round ``j`` carries the messages of every rank ``i ≠ j`` to rank ``j``:
    the hot-spot baseline the other orders improve on.

    Parameters
    ----------
    p : int
        Number of ranks.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``); each
        destination gets ``count/p`` elements, ``m = count/p·itemsize`` bytes.
    itemsize : int
        Bytes per element.

    Returns
    -------
    Schedule

    Raises
    ------
    SpecError
        For a bad ``p``, ``count`` or ``itemsize``.

    Notes
    -----
    Crossbar α-β cost (:func:`.alltoall_cost.crossbar_cost`): ``P·α +
    P(P−1)·m·β``: the receiver of each round serialises ``P−1`` messages.
    On a torus the paper's direct model is eq. 3, ``T = P·α +
    P·(M/8)·(m+h)·β`` (:func:`.alltoall_cost.direct_torus_time`).

    References
    ----------
    Kumar & Heidelberger, §3, eq. 3 (``alltoall-blue-gene-torus.txt``).

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = direct_alltoall(5)
    >>> verify(s), report(s).rounds, str(report(s).cost)
    ('noncommutative', 5, '5·α + 160·β + 0·γ')
    """
    p = check_p("alltoall/direct", p)
    count, itemsize, m = check_sizes("alltoall/direct", p, count, itemsize)

    def dst_of_round(j):
        dst = np.full(p, j, dtype=np.int64)
        dst[j] = -1
        return dst

    return _direct_schedule("direct", p, count, itemsize, m, {}, p if p > 1 else 0, dst_of_round)


@algorithm(collective="alltoall", name="shift", params={}, needs="associative", rounds="P−1",
           paper="Cavin & Demengeon 2012 §2.1.4 eq. 1 (shift-based-compositing-fat-tree)")
def shift_alltoall(p: int, *, count: int | None = None, itemsize: int = 8) -> Schedule:
    """Shift (pairwise) all-to-all: in round ``S`` (1 ≤ S < P) rank ``i``
    sends to ``(i + S) mod P`` and receives from ``(i − S) mod P``.

    Every round is a permutation, so every rank sends and receives in every
    round, and d-mod-k / Fat-tree Unicast routing make each round
    non-blocking on a fat tree (Cavin & Demengeon §2.1.4).

    Parameters
    ----------
    p : int
        Number of ranks.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Notes
    -----
    Crossbar cost ``(P−1)(α + m·β)``; the array view streams ``P − 1`` rounds
    of ``P`` transfers without building per-rank objects (P = 20,480: 419
    million transfers, ``benchmarks/bench_alltoall.py``).

    References
    ----------
    Cavin & Demengeon, §2.1.4, eq. 1 (``shift-based-compositing-fat-tree.txt``).

    Examples
    --------
    >>> s = shift_alltoall(4, count=8, itemsize=1)
    >>> [(r.round, r.dst.tolist()) for r in s.rounds()]
    [(0, [1, 2, 3, 0]), (1, [2, 3, 0, 1]), (2, [3, 0, 1, 2])]
    """
    p = check_p("alltoall/shift", p)
    count, itemsize, m = check_sizes("alltoall/shift", p, count, itemsize)
    ranks = np.arange(p, dtype=np.int64)
    return _direct_schedule("shift", p, count, itemsize, m, {}, p - 1,
                            lambda t: (ranks + t + 1) % p)


def _is_power_of_two(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


@algorithm(collective="alltoall", name="pairwise_exchange", params={}, needs="associative", rounds="P−1",
           paper="Cavin & Demengeon 2012 §2.1.4 (XOR pairing for P = 2^n)", supports="power_of_two")
def pairwise_exchange_alltoall(p: int, *, count: int | None = None, itemsize: int = 8) -> Schedule:
    """XOR pairwise exchange: in round ``S`` rank ``i`` exchanges its blocks
    with ``i XOR S``; every round pairs the ranks up (``p`` a power of two).

    Parameters
    ----------
    p : int
        Number of ranks, a power of two.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Raises
    ------
    SpecError
        If ``p`` is not a power of two.

    Notes
    -----
    Crossbar cost ``(P−1)(α + m·β)``, as the shift.

    Examples
    --------
    >>> [r.dst.tolist() for r in pairwise_exchange_alltoall(4).rounds()]
    [[1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]]
    """
    p = check_p("alltoall/pairwise_exchange", p)
    if not _is_power_of_two(p):
        raise SpecError(f"alltoall/pairwise_exchange: p={p}, expected a power of two")
    count, itemsize, m = check_sizes("alltoall/pairwise_exchange", p, count, itemsize)
    ranks = np.arange(p, dtype=np.int64)
    return _direct_schedule("pairwise_exchange", p, count, itemsize, m, {}, p - 1,
                            lambda t: ranks ^ (t + 1))
