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

import numpy as np

from ...errors import SpecError
from ..arraypattern import Run, TableBuilder, TablePattern
from ..common import check_p
from ..ir import Schedule
from ..pattern import ADD, XOR, Circulant
from ..registry import algorithm
from .common import PAPER, check_sizes, _make, _stage_table


# ---- direct algorithms: one message per (source, destination) ---------------

def _direct_table(p: int):
    """The direct order for the ranks ``b.ranks``: stage the outgoing blocks,
    then in round ``t ≠ i`` rank ``i`` sends block ``t`` to rank ``t``; in
    round ``i`` it receives block ``i`` of every other rank, lowest first,
    into its position.

    Not circulant: the destination of round ``t`` is rank ``t`` itself, not
    an offset of the sender; one table holds every rank's ``2(P − 1)``
    messages (:class:`~topocoll.schedules.arraypattern.TablePattern`).
    """
    def record(b: TableBuilder) -> None:
        i = b.ranks
        _stage_table(b, p)
        r, t = i[:, None], np.arange(p, dtype=np.int64)[None, :]
        b.send(r, t, Run(t, 1), buf="send", round=t, where=t != r)
        b.recv(r, t, Run(r, 1), buf="data", into=Run(t, 1), round=r, where=t != r)
    return record


def _shift_template(p: int) -> Circulant:
    """Rank 0's ops of the shift order; rank ``i`` runs them moved by ``i``
    (peers and blocks ``+ i`` mod P): stage every block but its own into
    ``"send"``, then in round ``S − 1`` send block ``i + S`` to rank ``i + S``
    and receive block ``i`` of rank ``i − S`` into position ``i − S``."""
    tpl = Circulant(group=ADD, block_shift=1)
    if p > 1:
        tpl.copy(0, dst="send", src="data", blocks=range(1, p))
    for s in range(1, p):
        tpl.send(s - 1, s, "send", blocks=(s,))
        tpl.recv(s - 1, s, "data", blocks=(s,), into=(p - s,))
    return tpl


def _xor_template(p: int) -> Circulant:
    """Rank 0's ops of the XOR pairing; rank ``i`` runs them moved by
    ``i XOR ·`` (peers and blocks): in round ``S − 1`` stage block ``i ⊕ S``
    into ``"send"``, send it to rank ``i ⊕ S`` and receive that rank's block
    ``i`` into position ``i ⊕ S``.

    Each block is staged in the round that sends it: the XOR image of a
    block range is no range, so one staging copy of ``P − 1`` blocks would be
    ``P − 1`` runs on every rank of the op program (``P²`` in all).
    """
    tpl = Circulant(group=XOR, block_shift=1)
    for s in range(1, p):
        tpl.copy(s - 1, dst="send", src="data", blocks=(s,))
        tpl.send(s - 1, s, "send", blocks=(s,))
        tpl.recv(s - 1, s, "data", blocks=(s,), into=(s,))
    return tpl


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
    The ranks differ (round ``t``'s destination is rank ``t`` itself), so the
    pattern is one op table over ranks: ``ops_for(rank)`` costs that rank's
    ``O(P)`` ops, the program ``O(P²)`` NumPy rows and no Python object per op.
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
    count, itemsize, _ = check_sizes("alltoall/direct", p, count, itemsize)
    return _make("direct", p, count, itemsize, {}, TablePattern(p, p, _direct_table(p)))


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
    Crossbar cost ``(P−1)(α + m·β)``. The schedule is one
    :class:`~topocoll.schedules.pattern.Circulant` template (rank 0's ops,
    moved by each rank), so the op program streams its ``P − 1`` rounds of
    ``P`` transfers vectorised, with exact dependencies and no per-rank
    objects (P = 20,480: 419 million transfers,
    ``benchmarks/bench_alltoall.py``).

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
    count, itemsize, _ = check_sizes("alltoall/shift", p, count, itemsize)
    return _make("shift", p, count, itemsize, {}, _shift_template(p).pattern(p, p))


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
    Crossbar cost ``(P−1)(α + m·β)``, as the shift. One
    :class:`~topocoll.schedules.pattern.Circulant` template over the XOR
    group; each block is copied into ``"send"`` in the round that sends it
    (not all at once, as the shift does), so every op of the streamed op
    program covers one block.

    Examples
    --------
    >>> [r.dst.tolist() for r in pairwise_exchange_alltoall(4).rounds()]
    [[1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]]
    """
    p = check_p("alltoall/pairwise_exchange", p)
    if not _is_power_of_two(p):
        raise SpecError(f"alltoall/pairwise_exchange: p={p}, expected a power of two")
    count, itemsize, _ = check_sizes("alltoall/pairwise_exchange", p, count, itemsize)
    return _make("pairwise_exchange", p, count, itemsize, {}, _xor_template(p).pattern(p, p))
