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

from .common import ceil_log, check_count, check_p, check_root
from .ir import RIGHT, OperatorNeeds, RoundArrays, Schedule, ScheduleBuilder, block_bounds
from .registry import algorithm
from ..errors import SpecError

ORDERS = ("rank", "relative")


def _reduce_ops(b: ScheduleBuilder, p: int, root: int, order: str, round0: int = 0) -> int:
    """Append the binomial reduce; return the number of rounds used."""
    shift = root if order == "relative" else 0
    k = ceil_log(p, 2)
    for level in range(k):
        mask = 1 << level
        for v in range(p):
            if v & (2 * mask - 1) == mask:
                me, parent = (v + shift) % p, (v - mask + shift) % p
                b.send(me, parent, (0,), round=round0 + level)
                b.recv(parent, me, (0,), buf="tmp", round=round0 + level)
                b.reduce(parent, (0,), src="tmp", side=RIGHT, round=round0 + level)
    if order == "rank" and root != 0:
        b.send(0, root, (0,), round=round0 + k)
        b.recv(root, 0, (0,), round=round0 + k)
        return k + 1
    return k


def _bcast_ops(b: ScheduleBuilder, p: int, root: int, round0: int = 0) -> int:
    k = ceil_log(p, 2)
    for level in range(k):
        mask = 1 << level
        for v in range(min(mask, p - mask)):
            me, child = (v + root) % p, (v + mask + root) % p
            b.send(me, child, (0,), round=round0 + level)
            b.recv(child, me, (0,), round=round0 + level)
    return k


def _reduce_rounds(p, root, order, nbytes, round0=0):
    shift = root if order == "relative" else 0
    k = ceil_log(p, 2)
    v = np.arange(p, dtype=np.int64)
    for level in range(k):
        mask = 1 << level
        senders = v[(v & (2 * mask - 1)) == mask]
        # latest child a sender heard from: the largest j < level with v + 2^j < p
        room = p - 1 - senders
        dep = np.where(room >= 1, np.minimum(level - 1, _floor_log2(np.maximum(room, 1))), -1)
        dep = np.where(dep >= 0, dep + round0, -1)
        src = (senders + shift) % p
        dst = (senders - mask + shift) % p
        nb = np.full(senders.shape, nbytes, dtype=np.int64)
        yield RoundArrays(round0 + level, src, dst, nb, dep, nb.copy())
    if order == "rank" and root != 0:
        one = np.ones(1, dtype=np.int64)
        yield RoundArrays(round0 + k, 0 * one, root * one, nbytes * one,
                          np.array([round0 + k - 1 if k else -1]), 0 * one)


def _bcast_rounds(p, root, nbytes, round0=0, first_dep=-1):
    k = ceil_log(p, 2)
    for level in range(k):
        mask = 1 << level
        v = np.arange(min(mask, p - mask), dtype=np.int64)
        dep = np.where(v > 0, _floor_log2(np.maximum(v, 1)) + round0, first_dep)
        nb = np.full(v.shape, nbytes, dtype=np.int64)
        yield RoundArrays(round0 + level, (v + root) % p, (v + mask + root) % p, nb, dep, 0 * nb)


def _floor_log2(x: np.ndarray) -> np.ndarray:
    return (np.frexp(x.astype(np.float64))[1] - 1).astype(np.int64)


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
    nbytes = count * itemsize

    def ops():
        b = ScheduleBuilder(p)
        _reduce_ops(b, p, root, order)
        return b.build()

    return Schedule("reduce", "binomial", p, count, itemsize, block_bounds(count, 1),
                    {"root": root, "order": order},
                    OperatorNeeds(commutative=order == "relative" and root != 0), ops, root=root)


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
    nbytes = count * itemsize

    def ops():
        b = ScheduleBuilder(p)
        _bcast_ops(b, p, root)
        return b.build()

    return Schedule("bcast", "binomial", p, count, itemsize, block_bounds(count, 1), {"root": root},
                    OperatorNeeds(), ops, root=root)


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
    nbytes = count * itemsize
    k = ceil_log(p, 2)

    def ops():
        b = ScheduleBuilder(p)
        _reduce_ops(b, p, 0, "rank")
        _bcast_ops(b, p, 0, round0=k)
        return b.build()

    def rounds():
        yield from _reduce_rounds(p, 0, "rank", nbytes)
        yield from _bcast_rounds(p, 0, nbytes, round0=k, first_dep=k - 1 if k else -1)

    return Schedule("allreduce", "binomial", p, count, itemsize, block_bounds(count, 1), {},
                    OperatorNeeds(), ops)
