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
from .arraypattern import ArrayBuilder, ArrayPattern
from .arraypattern import lower_first as lower_first_sides
from .ir import LEFT, RIGHT, OperatorNeeds, Schedule, block_bounds
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
    ``partners[i]`` before the butterfly and gets the result back after it:
    the all-ranks view of :func:`survivor` and :func:`fold_role`, which the
    generators ask one rank at a time.

    Examples
    --------
    >>> k, survivors, folded, partners = fold_plan(6)
    >>> k, survivors.tolist(), folded.tolist(), partners.tolist()
    (2, [1, 3, 4, 5], [0, 2], [1, 3])
    >>> fold_plan(6, "last")[1:]  # the paper's Fig. 1: 4, 5 fold into 0, 1
    (array([0, 1, 2, 3]), array([4, 5]), array([0, 1]))
    """
    k = floor_log2(p)
    survivors = [survivor(p, leftover, n) for n in range(1 << k)]
    roles = [fold_role(p, leftover, rank) for rank in range(p)]
    folded = [rank for rank, (n, _) in enumerate(roles) if n < 0]
    partners = [mate for n, mate in roles if n < 0]
    return k, *(np.array(x, dtype=np.int64) for x in (survivors, folded, partners))


def survivor(p: int, leftover: str, n: int) -> int:
    """The real rank that plays rank ``n`` of the ``2^⌊log2 P⌋`` butterfly."""
    q = p - (1 << floor_log2(p))
    if leftover == "neighbours":
        return 2 * n + 1 if n < q else n + q
    return n


def fold_role(p: int, leftover: str, rank: int) -> tuple[int, int]:
    """``(n, mate)``: the butterfly rank ``rank`` plays (``-1`` if it folds
    away) and the rank it folds with (``-1`` if none): the survivor taking
    its input over, or the leftover rank whose input it takes over.

    Examples
    --------
    >>> [fold_role(6, "neighbours", r) for r in range(6)]
    [(-1, 1), (0, 0), (-1, 3), (1, 2), (2, -1), (3, -1)]
    """
    pof2 = 1 << floor_log2(p)
    q = p - pof2
    if leftover == "neighbours":
        if rank < 2 * q:
            return (-1, rank + 1) if rank % 2 == 0 else (rank // 2, rank - 1)
        return rank - q, -1
    if rank >= pof2:
        return -1, rank - pof2
    return rank, (rank + pof2 if rank < q else -1)


def lower_first(peer: int, me: int) -> str:
    """Lower rank's data in front: ``dst = src ∘ dst`` when the peer is lower."""
    return LEFT if peer < me else RIGHT


def fold_roles(p: int, leftover: str, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fold_role` of every rank in ``ranks`` (NumPy): arrays ``(n, mate)``."""
    ranks = np.asarray(ranks, dtype=np.int64)
    pof2 = 1 << floor_log2(p)
    q = p - pof2
    if leftover == "neighbours":
        low, even = ranks < 2 * q, ranks % 2 == 0
        n = np.where(low, np.where(even, -1, ranks // 2), ranks - q)
        mate = np.where(low, np.where(even, ranks + 1, ranks - 1), -1)
        return n, mate
    n = np.where(ranks >= pof2, -1, ranks)
    mate = np.where(ranks >= pof2, ranks - pof2, np.where(ranks < q, ranks + pof2, -1))
    return n, mate


def survivors(p: int, leftover: str, n: np.ndarray) -> np.ndarray:
    """:func:`survivor` of every butterfly rank in ``n`` (NumPy)."""
    n = np.asarray(n, dtype=np.int64)
    if leftover == "neighbours":
        q = p - (1 << floor_log2(p))
        return np.where(n < q, 2 * n + 1, n + q)
    return n


def fold_classes(p: int, leftover: str, ranks: np.ndarray) -> np.ndarray:
    """The class of each rank in the fold: 0 folds away, 1 takes a leftover
    rank's input over, 2 neither (every other rank-wise difference of the
    fold patterns is in peers, blocks and sides)."""
    n, mate = fold_roles(p, leftover, ranks)
    return np.where(n < 0, 0, np.where(mate >= 0, 1, 2))


def fold_in(b: ArrayBuilder, n: np.ndarray, mate: np.ndarray, blocks) -> None:
    """Round 0 of the fold on one class of ranks (``b.ranks``, with fold
    roles ``n``, ``mate``): a leftover rank (``n < 0``) sends ``blocks`` of
    its input to its mate, which reduces them into its own, the lower rank's
    data in front."""
    if n[0] < 0:
        b.send(mate, blocks, round=0)
    elif mate[0] >= 0:
        b.recv(mate, blocks, buf="tmp", round=0)
        b.reduce(blocks, src="tmp", side=lower_first_sides(mate, b.ranks), round=0)


def fold_out(b: ArrayBuilder, n: np.ndarray, mate: np.ndarray, blocks, *, round: int) -> None:
    """The last round of the fold: the mate hands the result back."""
    if n[0] < 0:
        b.recv(mate, blocks, round=round)
    elif mate[0] >= 0:
        b.send(mate, blocks, round=round)


def pairwise_pattern(p: int, leftover: str, blocks=(0,)) -> ArrayPattern:
    """The pairwise exchange on ``blocks`` of ``data`` as an array pattern:
    the fold, ``⌊log2 P⌋`` butterfly rounds in which survivor ``n`` exchanges
    with survivor ``n XOR 2^l`` and reduces (lower rank in front), the
    unfold. Three classes of ranks (:func:`fold_classes`); one block list,
    so every member of a class has its data flow."""
    k = floor_log2(p)
    r0 = int(p > 1 << k)                      # rounds taken by the fold

    def record(b: ArrayBuilder) -> None:
        n, mate = fold_roles(p, leftover, b.ranks)
        fold_in(b, n, mate, blocks)
        if n[0] >= 0:
            for level in range(k):
                peer = survivors(p, leftover, n ^ (1 << level))
                b.exchange(peer, blocks, recv_buf="tmp", round=r0 + level)
                b.reduce(blocks, src="tmp", side=lower_first_sides(peer, b.ranks), round=r0 + level)
        fold_out(b, n, mate, blocks, round=r0 + k)

    return ArrayPattern(p, lambda ranks: fold_classes(p, leftover, ranks), record)


def _pairwise_schedule(collective: str, name: str, p, leftover, count, itemsize) -> Schedule:
    """The one-block pairwise-exchange schedule, as an allreduce or a barrier
    (the barrier is the same exchange of a token)."""
    p = check_p(name, p)
    leftover = _check_leftover(name, leftover)
    count, itemsize = check_count(name, count, itemsize)
    needs = OperatorNeeds(commutative=leftover == "last" and p & (p - 1) != 0)
    return Schedule(collective, name, p, count, itemsize, block_bounds(count, 1),
                    {"leftover": leftover}, needs, pairwise_pattern(p, leftover))


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


def _virtual_pattern(p: int) -> ArrayPattern:
    """The virtual-process butterfly as an array pattern: rank ``r`` plays
    role ``r`` and, if ``r + P < 2^k``, virtual role ``r + P`` (in ``virt``,
    from a copy of its input); role ``v`` exchanges with role ``v XOR 2^l``
    in round ``l``, played by rank ``w`` or ``w - P``. Classes: whether a
    rank plays a virtual role, and whether the partner of each of its roles
    in the last round is virtual (one block, so the data flow is the class's)."""
    k = ceil_log(p, 2)
    blocks = (0,)
    top = 1 << max(k - 1, 0)

    def classify(ranks: np.ndarray) -> np.ndarray:
        virtual = ranks + p < 1 << k
        last_real = ((ranks ^ top) >= p) & (k > 0)
        last_virtual = virtual & (((ranks + p) ^ top) >= p) & (k > 0)
        return np.stack([virtual, last_real, last_virtual], axis=1).astype(np.int64)

    def record(b: ArrayBuilder) -> None:
        r = b.ranks
        roles = (r, r + p) if r[0] + p < 1 << k else (r,)
        if len(roles) > 1:
            b.copy(blocks, dst="virt", src="data", round=0)
        for level in range(k):
            # roles in increasing order: a rank posts for its real role first,
            # so two messages between the same ranks match in posting order
            for real, v in zip((True, False), roles):
                w = v ^ (1 << level)
                buf, tmp = ("data", "tmp") if real else ("virt", "vtmp")
                peer = np.where(w < p, w, w - p)
                last = level == k - 1
                # a virtual role's final result is never read: in the last
                # round it only sends, and its real partner sends it nothing
                if not (last and w[0] >= p):
                    b.send(peer, blocks, buf=buf, round=level)
                if not (last and not real):
                    b.recv(peer, blocks, buf=tmp, round=level)
                    b.reduce(blocks, dst=buf, src=tmp, side=lower_first_sides(w, v), round=level)

    return ArrayPattern(p, classify, record)


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
    virtual = p & (p - 1) != 0
    needs = OperatorNeeds(commutative=virtual, idempotent=virtual)
    return Schedule("allreduce", "butterfly_virtual", p, count, itemsize, block_bounds(count, 1), {},
                    needs, _virtual_pattern(p))
