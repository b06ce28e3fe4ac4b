"""Binomial-tree reduce, broadcast and allreduce (binomial spanning tree, BST).

In round ``l`` (``mask = 2**l``) of the reduce, the rank whose relative rank
``v`` has ``v & (2*mask - 1) == mask`` sends its partial result to ``v - mask``,
which appends it on the right: a rank's partial result always covers the
contiguous ranks ``[v, v + 2**l)``, so the tree also serves non-commutative
operators when it is rooted at rank 0 (``order="rank"``; another root then
receives the result from rank 0 in one extra round, as MPICH does). The
broadcast runs the same tree backwards. The allreduce is a reduce to rank 0
followed by a broadcast: 2⌈log2 P⌉ rounds, End et al. 2016 §I ("BST", their
reference [4]).
"""

from __future__ import annotations

import numpy as np

from .arraypattern import ArrayBuilder, ArrayPattern
from .common import ceil_log, check_count, check_p, check_root
from .ir import RIGHT, OperatorNeeds, Schedule, block_bounds
from .registry import algorithm
from ..errors import SpecError

ORDERS = ("rank", "relative")


def _reduce_codes(p: int, root: int, order: str, ranks: np.ndarray) -> np.ndarray:
    """Per rank, what it does in each round of the binomial reduce (NumPy):
    ``1`` send, ``2`` receive and reduce, ``0`` nothing; a last column for
    the forward to another root in rank order (``1`` rank 0, ``2`` the root)."""
    shift = root if order == "relative" else 0
    k = ceil_log(p, 2)
    v = (ranks - shift) % p
    cols = []
    for level in range(k):
        mask = 1 << level
        low = v & (2 * mask - 1)
        cols.append(np.where(low == mask, 1, np.where((low == 0) & (v + mask < p), 2, 0)))
    forward = order == "rank" and root != 0
    cols.append(np.where(forward & (ranks == 0), 1, np.where(forward & (ranks == root), 2, 0)))
    return np.stack(cols, axis=1)


def _bcast_codes(p: int, root: int, ranks: np.ndarray) -> np.ndarray:
    """Per rank and round of the binomial broadcast: ``1`` send, ``2`` receive."""
    v = (ranks - root) % p
    cols = [np.where((v < (1 << level)) & (v + (1 << level) < p), 1,
                     np.where(((1 << level) <= v) & (v < (2 << level)), 2, 0))
            for level in range(ceil_log(p, 2))]
    return np.stack(cols, axis=1) if cols else np.zeros((len(ranks), 0), dtype=np.int64)


def _reduce_record(b: ArrayBuilder, p: int, root: int, order: str, round0: int = 0) -> None:
    """The binomial reduce on one class of ranks (those doing the same in
    every round: :func:`_reduce_codes`). In round ``l`` (``mask = 2^l``)
    relative rank ``v`` sends its partial result to ``v - mask`` if
    ``v & (2 mask - 1) == mask``, or receives from ``v + mask < P`` and
    appends it on the right if ``v & (2 mask - 1) == 0``; in rank order a
    root other than 0 then gets the result from rank 0 in round ``⌈log2 P⌉``."""
    shift = root if order == "relative" else 0
    k = ceil_log(p, 2)
    v = (b.ranks - shift) % p
    codes = _reduce_codes(p, root, order, b.ranks[:1])[0]
    for level in range(k):
        mask = 1 << level
        if codes[level] == 1:
            b.send((v - mask + shift) % p, (0,), round=round0 + level)
        elif codes[level] == 2:
            b.recv((v + mask + shift) % p, (0,), buf="tmp", round=round0 + level)
            b.reduce((0,), src="tmp", side=RIGHT, round=round0 + level)
    if codes[k] == 1:
        b.send(root, (0,), round=round0 + k)
    elif codes[k] == 2:
        b.recv(0, (0,), round=round0 + k)


def _bcast_record(b: ArrayBuilder, p: int, root: int, round0: int = 0) -> None:
    """The binomial broadcast on one class of ranks: in round ``l`` relative
    rank ``v < 2^l`` sends to ``v + 2^l < P``, which receives."""
    v = (b.ranks - root) % p
    codes = _bcast_codes(p, root, b.ranks[:1])[0]
    for level, code in enumerate(codes):
        mask = 1 << level
        if code == 1:
            b.send((v + mask + root) % p, (0,), round=round0 + level)
        elif code == 2:
            b.recv((v - mask + root) % p, (0,), round=round0 + level)


def _check_order(where, order):
    if order not in ORDERS:
        raise SpecError(f"{where}: order={order!r}, expected one of {', '.join(ORDERS)}")
    return order


@algorithm(collective="reduce", name="binomial", params={"root": 0, "order": "rank"}, needs="associative",
           rounds="⌈log2 P⌉ (+1 if order=rank and root≠0)",
           paper="End et al. 2016 §I [4] (butterfly-allreduce-gaspi)")
def binomial_reduce(p: int, *, root: int = 0, order: str = "rank", count: int = 1, itemsize: int = 8) -> Schedule:
    """Binomial-tree reduce to ``root``.

    Parameters
    ----------
    p : int
        Number of ranks.
    root : int
        Rank that receives the result.
    order : {"rank", "relative"}
        ``"rank"`` reduces in rank order towards rank 0 (non-commutative
        operators allowed; an extra round forwards to another root);
        ``"relative"`` roots the tree at ``root`` directly (⌈log2 P⌉ rounds,
        commutative operators only).
    count, itemsize : int
        Vector length (elements) and element size (bytes).

    Notes
    -----
    Cost ⌈log2 P⌉(α + nβ + nγ) for n = count·itemsize bytes.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(binomial_reduce(6, root=4))
    'noncommutative'
    """
    p = check_p("binomial_reduce", p)
    root = check_root("binomial_reduce", root, p)
    order = _check_order("binomial_reduce", order)
    count, itemsize = check_count("binomial_reduce", count, itemsize)
    return Schedule("reduce", "binomial", p, count, itemsize, block_bounds(count, 1),
                    {"root": root, "order": order},
                    OperatorNeeds(commutative=order == "relative" and root != 0),
                    ArrayPattern(p, lambda ranks: _reduce_codes(p, root, order, ranks),
                                 lambda b: _reduce_record(b, p, root, order)), root=root)


@algorithm(collective="bcast", name="binomial", params={"root": 0}, needs="associative", rounds="⌈log2 P⌉",
           paper="End et al. 2016 §I [4] (butterfly-allreduce-gaspi)")
def binomial_bcast(p: int, *, root: int = 0, count: int = 1, itemsize: int = 8) -> Schedule:
    """Binomial-tree broadcast from ``root``: in round ``l`` every relative
    rank ``v < 2**l`` that has the data sends it to ``v + 2**l``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> verify(binomial_bcast(5, root=2))
    'noncommutative'
    """
    p = check_p("binomial_bcast", p)
    root = check_root("binomial_bcast", root, p)
    count, itemsize = check_count("binomial_bcast", count, itemsize)
    return Schedule("bcast", "binomial", p, count, itemsize, block_bounds(count, 1), {"root": root},
                    OperatorNeeds(), ArrayPattern(p, lambda ranks: _bcast_codes(p, root, ranks),
                                                 lambda b: _bcast_record(b, p, root)),
                    root=root)


@algorithm(collective="allreduce", name="binomial", params={}, needs="associative", rounds="2⌈log2 P⌉",
           paper="End et al. 2016 §I, §IV (BST) (butterfly-allreduce-gaspi)")
def binomial_allreduce(p: int, *, count: int = 1, itemsize: int = 8) -> Schedule:
    """Binomial spanning tree allreduce: reduce to rank 0, then broadcast.

    Half the ranks idle in every round: the property the butterfly-like
    algorithms avoid (End et al. 2016 §I).

    Examples
    --------
    >>> from topocoll.schedules.metrics import report
    >>> report(binomial_allreduce(8)).rounds
    6
    """
    p = check_p("binomial_allreduce", p)
    count, itemsize = check_count("binomial_allreduce", count, itemsize)
    k = ceil_log(p, 2)

    def classify(ranks):
        return np.concatenate([_reduce_codes(p, 0, "rank", ranks), _bcast_codes(p, 0, ranks)], axis=1)

    def record(b: ArrayBuilder) -> None:
        _reduce_record(b, p, 0, "rank")
        _bcast_record(b, p, 0, round0=k)

    return Schedule("allreduce", "binomial", p, count, itemsize, block_bounds(count, 1), {},
                    OperatorNeeds(), ArrayPattern(p, classify, record))
