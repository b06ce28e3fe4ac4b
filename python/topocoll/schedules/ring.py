"""Bandwidth-optimal allreduce: the ring and Rabenseifner's algorithm.

Both split the vector into blocks and run a reduce-scatter followed by an
allgather, so every rank sends about ``2n(P-1)/P`` bytes instead of
``n log2 P`` (Thakur, Rabenseifner & Gropp 2005, §4.4; cited as [17] in End
et al. 2016 §III-D, ``../shared/seeds/butterfly-allreduce-gaspi.txt``):

- the *ring* (:func:`ring_reduce_scatter`, :func:`ring_allgather`,
  :func:`ring_allreduce`): ``P`` blocks; in step ``s`` rank ``r`` passes
  block ``(r - s - 1) mod P`` to ``r + 1``. Each block's partial result
  travels once round the ring starting in the middle, so the reduce-scatter
  (and the allreduce) needs a commutative operator for ``P > 2``;
- *Rabenseifner* (:func:`rabenseifner`): recursive halving reduce-scatter and
  recursive doubling allgather over ``2^⌊log2 P⌋`` blocks, ``P = 2^k + q``
  handled by folding the even ranks ``0, 2, .., 2q - 2`` into their right
  neighbours first (Rabenseifner & Träff 2004; MPICH). As in MPICH the
  halving starts at distance 1, so a partial result always covers a
  contiguous interval of ranks, and with the lower rank's data in front the
  result is correct for non-commutative operators.

The ring is one :class:`~.pattern.Circulant` pattern (rank ``r`` runs rank
0's steps with block ``b`` read as ``(b + r) mod P``), so its op program is
vectorised over ranks; Rabenseifner's ranks differ and are described for a
class of ranks at a time, with NumPy arrays (:class:`~.arraypattern.ArrayPattern`).
"""

from __future__ import annotations

import numpy as np

from .arraypattern import ArrayBuilder, ArrayPattern, Run, lower_first
from .common import check_count, check_p, floor_log2
from .ir import OperatorNeeds, Schedule, block_bounds
from .pairwise import fold_classes, fold_in, fold_out, fold_roles, survivors
from .pattern import LOWER_FIRST, Circulant, CirculantPattern
from .registry import algorithm

PAPER_RING = ("Thakur, Rabenseifner & Gropp 2005 §4.4 ([17] in End et al. 2016 §III-D, "
              "butterfly-allreduce-gaspi)")
PAPER_RABENSEIFNER = ("Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005 §4.4 ([17] in End et al. "
                      "2016 §III-D, butterfly-allreduce-gaspi)")


# ---- ring --------------------------------------------------------------------

def _ring_reduce_scatter_steps(c: Circulant, p: int, round0: int = 0) -> None:
    """Rank 0's steps (rank ``r`` runs them with block ``b`` read as
    ``(b + r) mod P``): in step ``s`` rank ``r`` sends block ``(r-s-1) mod P``
    to ``r+1`` and reduces block ``(r-s-2) mod P`` from ``r-1`` into its own,
    the lower rank's data in front; rank ``r`` ends with block ``r``."""
    for s in range(p - 1):
        c.send(round0 + s, 1, blocks=((-s - 1) % p,))
        c.recv(round0 + s, 1, "tmp", blocks=((-s - 1) % p,), into=((-s - 2) % p,))
        c.reduce(round0 + s, dst="data", src="tmp", side=(LOWER_FIRST, 1), blocks=((-s - 2) % p,))


def _ring_allgather_steps(c: Circulant, p: int, round0: int = 0) -> None:
    """Rank 0's steps: in step ``s`` rank ``r`` sends block ``(r-s) mod P``
    to ``r+1`` and receives block ``(r-s-1) mod P`` from ``r-1``, starting
    from block ``r``."""
    for s in range(p - 1):
        c.send(round0 + s, 1, blocks=((-s) % p,))
        c.recv(round0 + s, 1, blocks=((-s) % p,), into=((-s - 1) % p,))


def _ring_pattern(p: int, *phases) -> CirculantPattern:
    """The ring phases as one circulant template over ``P`` blocks."""
    c = Circulant(block_shift=1)
    round0 = 0
    for phase in phases:
        phase(c, p, round0)
        round0 += p - 1
    return c.pattern(p, p)


def _own_block(rank: int) -> tuple[int]:
    return (rank,)


@algorithm(collective="reduce_scatter", name="ring", params={}, needs="commutative", rounds="P − 1",
           paper=PAPER_RING)
def ring_reduce_scatter(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Ring reduce-scatter: rank ``r`` ends with block ``r`` of the reduction.

    Parameters
    ----------
    p : int
        Number of ranks; the vector is split into ``P`` blocks (the first
        ``count mod P`` one element longer).
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Returns
    -------
    Schedule
        Collective ``"reduce_scatter"`` with ``result_blocks(r) = (r,)``;
        ``P - 1`` rounds; commutative operators for ``P > 2``.

    Notes
    -----
    In step ``s = 0 .. P-2`` rank ``r`` sends its partial result of block
    ``(r - s - 1) mod P`` to ``r + 1`` and reduces the partial of block
    ``(r - s - 2) mod P`` arriving from ``r - 1`` into its own. Cost
    ``(P - 1)α + ((P - 1)/P)nβ + ((P - 1)/P)nγ`` for ``n`` bytes divisible by
    ``P`` (Thakur, Rabenseifner & Gropp 2005, §4.4).

    References
    ----------
    R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
    Communication Operations in MPICH", IJHPCA 19(1), 2005, pp. 49-66; cited
    as [17] in End et al. 2016, ``../shared/seeds/butterfly-allreduce-gaspi.txt``.

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> s = ring_reduce_scatter(4, count=10)
    >>> verify(s), report(s).rounds, list(s.result_blocks(3))
    ('sum', 3, [3])
    """
    p = check_p("ring_reduce_scatter", p)
    count, itemsize = check_count("ring_reduce_scatter", count, itemsize)
    return Schedule("reduce_scatter", "ring", p, count, itemsize, block_bounds(count, p), {},
                    OperatorNeeds(commutative=p > 2), _ring_pattern(p, _ring_reduce_scatter_steps),
                    result_blocks=_own_block)


@algorithm(collective="allgather", name="ring", params={}, needs="associative", rounds="P − 1",
           paper=PAPER_RING)
def ring_allgather(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Ring allgather: rank ``r`` contributes block ``r``, every rank gets all.

    Parameters
    ----------
    p : int
        Number of ranks; the gathered vector has ``P`` blocks.
    count, itemsize : int
        Length of the *gathered* vector (elements) and element size (bytes).

    Returns
    -------
    Schedule
        Collective ``"allgather"`` with ``input_blocks(r) = (r,)``;
        ``P - 1`` rounds.

    Notes
    -----
    In step ``s`` rank ``r`` forwards block ``(r - s) mod P`` to ``r + 1``.
    Cost ``(P - 1)α + ((P - 1)/P)nβ`` for ``n`` gathered bytes divisible by
    ``P`` (Thakur, Rabenseifner & Gropp 2005, §4.1).

    References
    ----------
    R. Thakur, R. Rabenseifner, W. Gropp, IJHPCA 19(1), 2005; [17] in
    ``../shared/seeds/butterfly-allreduce-gaspi.txt``.

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> r = report(ring_allgather(5, count=10, itemsize=4))
    >>> r.rounds, r.messages, r.bytes_total
    (4, 20, 160)
    """
    p = check_p("ring_allgather", p)
    count, itemsize = check_count("ring_allgather", count, itemsize)
    return Schedule("allgather", "ring", p, count, itemsize, block_bounds(count, p), {}, OperatorNeeds(),
                    _ring_pattern(p, _ring_allgather_steps), input_blocks=_own_block)


@algorithm(collective="allreduce", name="ring", params={}, needs="commutative", rounds="2(P − 1)",
           paper=PAPER_RING)
def ring_allreduce(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Ring allreduce: ring reduce-scatter, then ring allgather.

    Parameters
    ----------
    p : int
        Number of ranks; ``P`` blocks.
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Returns
    -------
    Schedule
        ``2(P - 1)`` rounds, every rank sending and receiving in each (split
        phase); commutative operators for ``P > 2``.

    Notes
    -----
    Rounds ``0 .. P-2`` are :func:`ring_reduce_scatter`, after which rank
    ``r`` owns block ``r``; rounds ``P-1 .. 2P-3`` are :func:`ring_allgather`
    of those blocks. Cost ``2(P - 1)α + 2((P - 1)/P)nβ + ((P - 1)/P)nγ`` for
    ``n`` bytes divisible by ``P``: bandwidth-optimal, latency linear in P
    (Thakur, Rabenseifner & Gropp 2005, §4.4).

    References
    ----------
    R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
    Communication Operations in MPICH", IJHPCA 19(1), 2005; [17] in End et
    al. 2016, ``../shared/seeds/butterfly-allreduce-gaspi.txt``.

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> r = report(ring_allreduce(4, count=8, itemsize=1))
    >>> r.rounds, str(r.cost), r.all_ranks_active_every_round
    (6, '6·α + 12·β + 6·γ', True)
    >>> verify(ring_allreduce(4))
    'sum'
    """
    p = check_p("ring_allreduce", p)
    count, itemsize = check_count("ring_allreduce", count, itemsize)
    return Schedule("allreduce", "ring", p, count, itemsize, block_bounds(count, p), {},
                    OperatorNeeds(commutative=p > 2),
                    _ring_pattern(p, _ring_reduce_scatter_steps, _ring_allgather_steps))


# ---- Rabenseifner ------------------------------------------------------------

def _rabenseifner_pattern(p: int) -> ArrayPattern:
    """Rabenseifner's allreduce as an array pattern (one description for
    one rank's ops and the whole program).

    After the fold (:func:`~.pairwise.fold_in`) survivor ``n`` holds blocks
    ``[lo, lo + size)`` before halving step ``j`` (``mask = 2^j``,
    ``size = 2^(k-j)``); it keeps the lower half if bit ``j`` of ``n`` is 0,
    else the upper half (MPICH's order), so at the end of the halving it owns
    block ``bitreverse_k(n)``. The doubling retraces the steps backwards.
    ``lo`` is an array over the ranks of a class (:func:`~.pairwise.fold_classes`);
    survivor ``n``'s block ranges are survivor 0's moved by ``XOR
    bitreverse_k(n)``, a bijection that keeps every overlap between them, so
    a class has one data flow. Block lists are ``range`` objects (O(1)
    memory each).
    """
    k = floor_log2(p)
    pof2 = 1 << k
    every = range(pof2)
    r0 = int(p > pof2)                       # rounds taken by the fold

    def record(b: ArrayBuilder) -> None:
        ranks = b.ranks
        n, mate = fold_roles(p, "neighbours", ranks)
        fold_in(b, n, mate, every)
        if n[0] >= 0:
            steps = []                       # (peer, lo, half, upper) per halving step
            lo, size = np.zeros(len(ranks), dtype=np.int64), pof2
            for j in range(k):
                mask, half = 1 << j, size >> 1
                peer = survivors(p, "neighbours", n ^ mask)
                upper = (n & mask) != 0      # these ranks keep the upper half
                send = np.where(upper, lo, lo + half)
                keep = np.where(upper, lo + half, lo)
                b.send(peer, Run(send, half), round=r0 + j)
                b.recv(peer, Run(keep, half), buf="tmp", round=r0 + j)
                b.reduce(Run(keep, half), src="tmp", side=lower_first(peer, ranks), round=r0 + j)
                steps.append((peer, lo, half, upper))
                lo, size = keep, half
            for i, (peer, lo, half, upper) in enumerate(reversed(steps)):
                mine = np.where(upper, lo + half, lo)
                theirs = np.where(upper, lo, lo + half)
                b.send(peer, Run(mine, half), round=r0 + k + i)
                b.recv(peer, Run(theirs, half), round=r0 + k + i)
        fold_out(b, n, mate, every, round=r0 + 2 * k)

    return ArrayPattern(p, lambda ranks: fold_classes(p, "neighbours", ranks), record)


@algorithm(collective="allreduce", name="rabenseifner", params={}, needs="associative",
           rounds="2 log2 P for P = 2^k, else 2⌊log2 P⌋ + 2", paper=PAPER_RABENSEIFNER)
def rabenseifner(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Rabenseifner's allreduce: recursive halving, then recursive doubling.

    Parameters
    ----------
    p : int
        Number of ranks, ``P = P' + q`` with ``P' = 2^⌊log2 P⌋``; the
        vector is split into ``P'`` blocks (the first ``count mod P'`` one
        element longer).
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Returns
    -------
    Schedule
        ``2 log2 P`` rounds for ``P = 2^k``, else ``2⌊log2 P⌋ + 2``; correct
        for non-commutative operators.

    Notes
    -----
    For ``q > 0`` the even ranks ``0, 2, .., 2q - 2`` first send their vector
    to the odd rank on their right, which reduces it (lower rank in front).
    The ``P'`` survivors then run a reduce-scatter by recursive halving: in
    step ``j`` survivor ``n`` exchanges half of its current block range with
    survivor ``n XOR 2^j`` (distance 1 first, as MPICH does, so partial
    results cover contiguous rank intervals) and reduces the half it keeps;
    then an allgather by recursive doubling in the reverse order of steps,
    and finally the odd ranks send the result to the even ones. Cost with
    ``n`` bytes divisible by ``P'`` and ``f = [q > 0]``:
    ``(2 log2 P' + 2f)α + (2(P' - 1)/P' + 2f)nβ + ((P' - 1)/P' + f)nγ``
    (Thakur, Rabenseifner & Gropp 2005, §4.4).

    References
    ----------
    R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
    Communication Operations in MPICH", IJHPCA 19(1), 2005, pp. 49-66 ([17]
    in End et al. 2016, ``../shared/seeds/butterfly-allreduce-gaspi.txt``).
    R. Rabenseifner, J. L. Träff, "More Efficient Reduction Algorithms for
    Non-Power-of-Two Number of Processors in Message-Passing Parallel
    Systems", EuroPVM/MPI 2004.

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> r = report(rabenseifner(8, count=8, itemsize=1))
    >>> r.rounds, str(r.cost)
    (6, '6·α + 14·β + 7·γ')
    >>> verify(rabenseifner(7))
    'noncommutative'
    """
    p = check_p("rabenseifner", p)
    count, itemsize = check_count("rabenseifner", count, itemsize)
    return Schedule("allreduce", "rabenseifner", p, count, itemsize, block_bounds(count, 1 << floor_log2(p)), {},
                    OperatorNeeds(), _rabenseifner_pattern(p))
