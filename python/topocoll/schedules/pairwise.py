"""Butterfly allreduce and barrier, with both adaptions to P ≠ 2^k.

End et al. 2016 §III-A (``../shared/seeds/butterfly-allreduce-gaspi.txt``):
in the butterfly of Brooks (1986), round ``l`` pairs rank ``p`` with
``p ± 2^(l-1)``, i.e. relative rank ``n`` with ``n XOR 2^(l-1)``; for
``P = 2^k`` every rank holds the full reduction after ``k = log2 P`` rounds.
Two adaptions exist for other ``P`` (Fig. 1):

- *virtual processes* (Fig. 1 left, :func:`butterfly_virtual`): ranks
  ``0 .. 2^⌈log2 P⌉ - P - 1`` also play the missing ranks ``P, P + 1, ...``
  of the next power of two, carrying a copy of their own input. Their input
  then enters the result twice, so it is correct only for idempotent
  operators (max, min, and, or) -- the verifier shows it is wrong for sum;
- *pairwise exchange* (Fig. 1 right, :func:`pairwise_exchange`): for
  ``P = 2^k + q`` the ``q`` leftover ranks first hand their input to a
  partner, the ``2^k`` survivors run the butterfly and the partners hand the
  result back: ``⌊log2 P⌋ + 2`` rounds (§III-D) with every input counted once.

Which ranks are leftover is a choice. The paper's figure folds the last
``q`` ranks into the first ``q`` (``leftover="last"``: commutative operators
only). By default the even ranks ``0, 2, .., 2q - 2`` fold into their odd
right neighbours (``leftover="neighbours"``, as MPICH and Rabenseifner &
Träff do): every survivor then stands for a contiguous interval of ranks in
rank order, and with each reduction putting the lower rank's data in front
the result is correct for non-commutative operators too.
"""

from __future__ import annotations

import numpy as np

from .common import ceil_log, check_count, check_p, floor_log2
from .ir import LEFT, RIGHT, OperatorNeeds, RoundArrays, Schedule, ScheduleBuilder, block_bounds
from .registry import algorithm
from ..errors import SpecError

LEFTOVERS = ("neighbours", "last")

PAPER = "End et al. 2016 §III-A, Fig. 1 right, §III-D (butterfly-allreduce-gaspi)"


def _check_leftover(where: str, leftover) -> str:
    if leftover not in LEFTOVERS:
        raise SpecError(f"{where}: leftover={leftover!r}, expected one of {', '.join(LEFTOVERS)}")
    return leftover


def fold_plan(p: int, leftover: str = "neighbours") -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The 2^k + q fold: who leaves, who takes over, who runs the butterfly.

    Returns ``(k, survivors, folded, partners)``: ``survivors[n]`` is the real
    rank that acts as rank ``n`` of the power-of-two butterfly (``2^k``
    entries, increasing), and leftover rank ``folded[i]`` hands its input to
    ``partners[i]`` before the butterfly and gets the result back after it.

    Examples
    --------
    >>> k, survivors, folded, partners = fold_plan(6)
    >>> k, survivors.tolist(), folded.tolist(), partners.tolist()
    (2, [1, 3, 4, 5], [0, 2], [1, 3])
    >>> fold_plan(6, "last")[1:]  # the paper's Fig. 1: 4, 5 fold into 0, 1
    (array([0, 1, 2, 3]), array([4, 5]), array([0, 1]))
    """
    k = floor_log2(p)
    pof2 = 1 << k
    q = p - pof2
    n = np.arange(pof2, dtype=np.int64)
    j = np.arange(q, dtype=np.int64)
    if leftover == "neighbours":
        return k, np.where(n < q, 2 * n + 1, n + q), 2 * j, 2 * j + 1
    return k, n, pof2 + j, j


def _side(peer: int, me: int) -> str:
    """Lower rank's data in front: ``dst = src ∘ dst`` when the peer is lower."""
    return LEFT if peer < me else RIGHT


def pairwise_ops(b: ScheduleBuilder, p: int, leftover: str, blocks: tuple[int, ...]) -> int:
    """Append the pairwise exchange on ``blocks`` of ``data``; return its rounds."""
    k, survivors, folded, partners = fold_plan(p, leftover)
    survivors, folded, partners = survivors.tolist(), folded.tolist(), partners.tolist()
    rnd = 0
    if folded:
        for src, dst in zip(folded, partners):
            b.send(src, dst, blocks, round=rnd)
            b.recv(dst, src, blocks, buf="tmp", round=rnd)
            b.reduce(dst, blocks, src="tmp", side=_side(src, dst), round=rnd)
        rnd += 1
    for level in range(k):
        mask = 1 << level
        for n, me in enumerate(survivors):
            peer = survivors[n ^ mask]
            b.exchange(me, peer, blocks, recv_buf="tmp", round=rnd)
            b.reduce(me, blocks, src="tmp", side=_side(peer, me), round=rnd)
        rnd += 1
    if folded:
        for src, dst in zip(folded, partners):
            b.send(dst, src, blocks, round=rnd)
            b.recv(src, dst, blocks, round=rnd)
        rnd += 1
    return rnd


def pairwise_rounds(p: int, leftover: str, nbytes: int):
    """The array view of :func:`pairwise_ops`, vectorised over ranks."""
    k, survivors, folded, partners = fold_plan(p, leftover)
    q = folded.shape[0]
    rnd = 0
    if q:
        nb = np.full(q, nbytes, dtype=np.int64)
        yield RoundArrays(0, folded, partners, nb, np.full(q, -1, dtype=np.int64), nb.copy())
        rnd = 1
    n = np.arange(1 << k, dtype=np.int64)
    nb = np.full(n.shape, nbytes, dtype=np.int64)
    heard = np.zeros(p, dtype=bool)
    heard[partners] = True
    for level in range(k):
        if level == 0:
            dep = np.where(heard[survivors], 0, -1).astype(np.int64)
        else:
            dep = np.full(n.shape, rnd - 1, dtype=np.int64)
        yield RoundArrays(rnd, survivors, survivors[n ^ (1 << level)], nb, dep, nb.copy())
        rnd += 1
    if q:
        nb = np.full(q, nbytes, dtype=np.int64)
        yield RoundArrays(rnd, partners, folded, nb, np.full(q, rnd - 1, dtype=np.int64),
                          np.zeros(q, dtype=np.int64))


def _pairwise_schedule(collective: str, name: str, p, leftover, count, itemsize) -> Schedule:
    """The one-block pairwise-exchange schedule, as an allreduce or a barrier
    (the barrier is the same exchange of a token)."""
    p = check_p(name, p)
    leftover = _check_leftover(name, leftover)
    count, itemsize = check_count(name, count, itemsize)
    nbytes = count * itemsize

    def ops():
        b = ScheduleBuilder(p)
        pairwise_ops(b, p, leftover, (0,))
        return b.build()

    needs = OperatorNeeds(commutative=leftover == "last" and p & (p - 1) != 0)
    return Schedule(collective, name, p, count, itemsize, block_bounds(count, 1),
                    {"leftover": leftover}, needs, ops)


@algorithm(collective="allreduce", name="pairwise_exchange", params={"leftover": "neighbours"},
           needs="associative", rounds="log2 P for P = 2^k, else ⌊log2 P⌋ + 2", paper=PAPER,
           sweep=({"leftover": "neighbours"}, {"leftover": "last"}))
def pairwise_exchange(p: int, *, leftover: str = "neighbours", count: int = 1, itemsize: int = 8) -> Schedule:
    """Pairwise exchange (recursive doubling) allreduce for any P.

    Parameters
    ----------
    p : int
        Number of ranks, ``P = 2^k + q`` with ``0 <= q < 2^k``.
    leftover : {"neighbours", "last"}
        Which ``q`` ranks fold away. ``"neighbours"`` (default): ranks
        ``0, 2, .., 2q - 2`` into ``1, 3, .., 2q - 1``, correct for
        non-commutative operators; ``"last"``: ranks ``2^k .. P - 1`` into
        ``0 .. q - 1`` as drawn in Fig. 1 (right), commutative operators only.
    count, itemsize : int
        Vector length (elements) and element size (bytes); one block.

    Returns
    -------
    Schedule
        ``log2 P`` rounds for ``P = 2^k``, else ``⌊log2 P⌋ + 2``.

    Raises
    ------
    SpecError
        On a bad ``p``, ``count``, ``itemsize`` or ``leftover``.

    Notes
    -----
    In butterfly round ``l`` survivor ``n`` exchanges its whole vector with
    survivor ``n XOR 2^l`` and reduces, the lower rank's data in front. With
    ``n = count·itemsize`` bytes the α-β-γ cost is ``log2 P·(α + nβ + nγ)``
    for ``P = 2^k`` and ``(⌊log2 P⌋ + 2)(α + nβ) + (⌊log2 P⌋ + 1)nγ``
    otherwise; ``q`` ranks idle during the butterfly (§III-D), so it is not
    split-phase for ``q > 0``.

    References
    ----------
    D. End, C. Simmendinger, T. Alrutz et al., "Butterfly-like Algorithms for
    GASPI Split Phase Allreduce", Int. J. Adv. Syst. Meas. 9(3&4), 2016,
    §III-A (Fig. 1) and §III-D; ``../shared/seeds/butterfly-allreduce-gaspi.txt``.
    R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
    Communication Operations in MPICH", IJHPCA 19, 2005 (their [17]).

    Examples
    --------
    The paper's Fig. 1 (right), P = 5: ⌊log2 5⌋ + 2 = 4 rounds.

    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> report(pairwise_exchange(5)).rounds
    4
    >>> verify(pairwise_exchange(5))
    'noncommutative'
    >>> verify(pairwise_exchange(5, leftover="last"))
    'sum'
    """
    return _pairwise_schedule("allreduce", "pairwise_exchange", p, leftover, count, itemsize)


@algorithm(collective="barrier", name="butterfly", params={"leftover": "neighbours"}, needs="associative",
           rounds="log2 P for P = 2^k, else ⌊log2 P⌋ + 2",
           sweep=({"leftover": "neighbours"}, {"leftover": "last"}),
           paper="Brooks 1986 [6]; End et al. 2016 §III-A (butterfly-allreduce-gaspi)")
def butterfly(p: int, *, leftover: str = "neighbours", count: int = 1, itemsize: int = 0) -> Schedule:
    """Butterfly barrier (Brooks 1986) for any P, via the pairwise-exchange fold.

    Parameters
    ----------
    p : int
        Number of ranks.
    leftover : {"neighbours", "last"}
        Which ranks fold away for ``P ≠ 2^k``, as in :func:`pairwise_exchange`.
    count, itemsize : int
        The token: one block of ``count`` elements of ``itemsize`` bytes
        (default one element of 0 bytes: a pure synchronisation).

    Returns
    -------
    Schedule
        Collective ``"barrier"``: after it every rank has heard, transitively,
        from every rank.

    Notes
    -----
    The schedule of :func:`pairwise_exchange` on the token; cost
    ``log2 P·α`` for ``P = 2^k``, ``(⌊log2 P⌋ + 2)α`` otherwise (End et al.
    2016 §III-A; Brooks, "The Butterfly Barrier", IJPP 15(4), 1986, their [6]).

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> from topocoll.verify import verify
    >>> [report(butterfly(p)).rounds for p in (4, 5, 8)]
    [2, 4, 3]
    >>> verify(butterfly(6))
    'noncommutative'
    """
    return _pairwise_schedule("barrier", "butterfly", p, leftover, count, itemsize)


def _virtual_roles(p: int) -> tuple[int, np.ndarray]:
    """``(k, real)``: role ``v`` of the ``2^k``-process butterfly is played by
    rank ``real[v]`` (``v`` itself, or ``v - P`` for a virtual process)."""
    k = ceil_log(p, 2)
    v = np.arange(1 << k, dtype=np.int64)
    return k, np.where(v < p, v, v - p)


@algorithm(collective="allreduce", name="butterfly_virtual", params={}, needs="commutative, idempotent",
           rounds="⌈log2 P⌉", paper="End et al. 2016 §III-A, Fig. 1 left (butterfly-allreduce-gaspi)")
def butterfly_virtual(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Butterfly allreduce with virtual processes (idempotent operators only).

    Parameters
    ----------
    p : int
        Number of ranks; ``k = ⌈log2 P⌉``.
    count, itemsize : int
        Vector length (elements) and element size (bytes); one block.

    Returns
    -------
    Schedule
        ``⌈log2 P⌉`` rounds. For ``P ≠ 2^k`` it needs an idempotent operator
        (``needs.idempotent``); for ``P = 2^k`` it is the plain butterfly.

    Notes
    -----
    Rank ``r < 2^k - P`` also plays virtual process ``r + P`` (Fig. 1 left:
    for P = 5, ranks 0, 1, 2 act as 5, 6, 7), which starts with a copy of
    rank ``r``'s input; in round ``l`` role ``v`` exchanges with role
    ``v XOR 2^l``. Those ranks send, receive and reduce twice per round:
    ``⌈log2 P⌉·(2α + 2nβ + 2nγ)`` for ``n = count·itemsize`` bytes, and the
    inputs of ranks ``0 .. 2^k - P - 1`` are counted more than once (§III-A:
    "a repeated inclusion of initial data from the virtual processes").

    References
    ----------
    D. End et al., "Butterfly-like Algorithms for GASPI Split Phase
    Allreduce", 2016, §III-A, Fig. 1 (left);
    ``../shared/seeds/butterfly-allreduce-gaspi.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(butterfly_virtual(5), op="max")
    'max'
    >>> verify(butterfly_virtual(5), op="sum")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topocoll.errors.VerificationError: allreduce/butterfly_virtual(p=5) with op=sum: rank 0 ... twice...
    """
    p = check_p("butterfly_virtual", p)
    count, itemsize = check_count("butterfly_virtual", count, itemsize)
    nbytes = count * itemsize
    k, real = _virtual_roles(p)

    def ops():
        b = ScheduleBuilder(p)
        blocks = (0,)
        roles = real.tolist()
        for v in range(p, 1 << k):
            b.copy(roles[v], blocks, dst="virt", src="data", round=0)
        for level in range(k):
            # roles in increasing order: a rank posts for its real role first,
            # so two messages between the same ranks match in posting order
            for v in range(1 << k):
                w = v ^ (1 << level)
                buf, tmp = ("data", "tmp") if v < p else ("virt", "vtmp")
                b.send(roles[v], roles[w], blocks, buf=buf, round=level)
                b.recv(roles[v], roles[w], blocks, buf=tmp, round=level)
                b.reduce(roles[v], blocks, dst=buf, src=tmp, side=_side(w, v), round=level)
        return b.build()

    def rounds():
        v = np.arange(1 << k, dtype=np.int64)
        nb = np.full(v.shape, nbytes, dtype=np.int64)
        for level in range(k):
            yield RoundArrays(level, real, real[v ^ (1 << level)], nb,
                              np.full(v.shape, level - 1, dtype=np.int64), nb.copy())

    virtual = p & (p - 1) != 0
    needs = OperatorNeeds(commutative=virtual, idempotent=virtual)
    return Schedule("allreduce", "butterfly_virtual", p, count, itemsize, block_bounds(count, 1), {},
                    needs, ops)
