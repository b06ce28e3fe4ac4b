"""Sort-last image compositing as ordered (non-commutative) reduce-scatter schedules.

Every algorithm here takes ``p`` premultiplied RGBA images (``count`` pixels
of ``itemsize`` = 16 bytes) and leaves every rank with one contiguous piece
of the over-composition ``x[order[0]] over x[order[1]] over …`` (front to
back; rank order by default, as in the radix-k paper §4). The image is cut
into ``p`` near-equal contiguous blocks (MPI style: ``count`` need not divide
by ``p``); each rank ends with exactly one block (``result_blocks``).

Six generators, registered under ``reduce_scatter`` with
``noncommutative=True``: :func:`direct_send`, :func:`binary_swap`,
:func:`two_three_swap`, :func:`parallel_pipeline`, :func:`radix_k` and
:func:`shift_based`. ``gather_root=r`` appends IceT's final gather: every rank
sends its piece to ``r`` and the schedule becomes an ordered ``reduce``.

A *round* of the IR is one communication step: at most one message per rank
and direction. So the α coefficient that :func:`topocoll.schedules.report`
measures is the latency column of Table 1 of the shift-based paper (Cavin &
Demengeon 2012) and a radix-k round ``i`` spans ``k_i − 1`` IR rounds.

The out-of-order rule (radix-k §3.1): a rank that composites a piece keeps
an accumulated result (its own image, in ``data``); an arriving piece is
composited at once if it is adjacent in depth order to the accumulated result
or to an already-arrived piece, otherwise it is buffered. The IR records the
rule applied to the posting order (member ``c`` of a group sends to ``c + s``
at step ``s``, the shift order): every composite depends only on the two
pieces it combines, so the simulator sees compositing overlap the transfers
still in flight (direct send, radix-k within a round, shift-based).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import SpecError
from .common import check_count, check_p, check_root
from .ir import LEFT, RIGHT, OperatorNeeds, RoundArrays, Schedule, ScheduleBuilder, block_bounds
from .registry import algorithm

PIXEL_BYTES = 16                 # premultiplied RGBA float32 (radix-k §1.2; shift-based §4)
DEFAULT_PIXELS = 1 << 20         # a 1-megapixel image, the papers' smallest (radix-k §1.2)
K_RULES = ("eights", "primes")   # radix-k §4.1 and §4.4
ALGORITHMS = ("direct_send", "binary_swap", "two_three_swap", "parallel_pipeline", "radix_k",
              "shift_based")

RADIX_K_PAPER = ("Peterka, Goodell, Ross, Shen & Thakur, A configurable algorithm for parallel "
                 "image-compositing applications, SC 2009 (radix-k-compositing)")
SHIFT_PAPER = ("Cavin & Demengeon, Shift-based parallel image compositing on InfiniBand fat-trees, "
               "EGPGV 2012 (shift-based-compositing-fat-tree)")


# ---- validation --------------------------------------------------------------------------

def check_depth_order(where: str, p: int, depth_order) -> np.ndarray:
    """The ranks front to back as an int64 array: ``0..p-1`` by default, or a
    permutation of ``range(p)`` checked (one-line :class:`SpecError`)."""
    if depth_order is None:
        return np.arange(p, dtype=np.int64)
    try:
        values = [v for v in depth_order]
    except TypeError:
        raise SpecError(f"{where}: depth_order={depth_order!r}, expected a permutation of "
                        f"0..{p - 1}, front to back") from None
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise SpecError(f"{where}: depth_order contains {v!r}, expected integer ranks")
    order = np.asarray(values, dtype=np.int64).reshape(-1)
    if order.size != p:
        raise SpecError(f"{where}: depth_order has {order.size} ranks, expected p={p}")
    bad = order[(order < 0) | (order >= p)]
    if bad.size:
        raise SpecError(f"{where}: depth_order contains rank {int(bad[0])}, expected ranks 0..{p - 1}")
    counts = np.bincount(order, minlength=p)
    if (counts != 1).any():
        raise SpecError(f"{where}: depth_order repeats rank {int(np.flatnonzero(counts > 1)[0])}, "
                        f"expected each of 0..{p - 1} exactly once")
    return order


def _positions(order: np.ndarray) -> np.ndarray:
    pos = np.empty_like(order)
    pos[order] = np.arange(order.size, dtype=np.int64)
    return pos


def _identity(order: np.ndarray) -> bool:
    return bool((order == np.arange(order.size)).all())


def _prime_factors(p: int) -> list[int]:
    out, f = [], 2
    while f * f <= p:
        while p % f == 0:
            out.append(f)
            p //= f
        f += 1
    if p > 1:
        out.append(p)
    return out


def default_k(p: int, rule: str = "eights") -> list[int]:
    """The radix-k paper's default k-vectors.

    Parameters
    ----------
    p : int
        Number of ranks.
    rule : {"eights", "primes"}
        ``"eights"`` (§4.1): "we favored 8 whenever possible in early rounds
        and then used 4 or 2 as needed in later rounds"; the odd part of ``p``
        follows as ascending prime factors. ``"primes"`` (§4.4): the prime
        factors of ``p`` in ascending order (binary swap for powers of two).

    Returns
    -------
    list of int
        Radices ≥ 2 with product ``p`` (empty for ``p = 1``).

    Examples
    --------
    >>> default_k(12), default_k(256), default_k(64), default_k(12, "primes")
    ([4, 3], [8, 8, 4], [8, 8], [2, 2, 3])
    """
    if rule not in K_RULES:
        raise SpecError(f"radix_k: k={rule!r}, expected a list of radices or one of {', '.join(K_RULES)}")
    factors = _prime_factors(p)
    if rule == "primes":
        return factors
    twos = factors.count(2)
    head = [8] * (twos // 3) + {0: [], 1: [2], 2: [4]}[twos % 3]
    return head + [f for f in factors if f != 2]


def _ordered_factorizations(p: int, r: int, divisors: list[int] | None = None) -> Iterator[list[int]]:
    """Every k-vector of length ``r`` (radices ≥ 2) with product ``p``, lexicographically."""
    if divisors is None:
        divisors = [d for d in range(2, math.isqrt(p) + 1) if p % d == 0]
        divisors = sorted(set(divisors) | {p // d for d in divisors} | ({p} if p >= 2 else set()))
    if r == 1:
        if p >= 2:
            yield [p]
        return
    for d in divisors:
        if d * 2 > p:
            break
        if p % d == 0:
            for rest in _ordered_factorizations(p // d, r - 1, divisors):
                yield [d, *rest]


def near_k_vectors(p: int, k: Sequence, count: int = 4) -> list[list[int]]:
    """Valid k-vectors for ``p`` closest to ``k`` (same length ±1, nearest radices).

    Examples
    --------
    >>> near_k_vectors(12, [4, 4])
    [[4, 3], [3, 4], [2, 6], [6, 2]]
    """
    if p == 1:
        return [[]]
    want = [max(1.0, float(x)) if isinstance(x, (int, float, np.integer)) else 2.0 for x in k] or [2.0]
    cands = []
    for r in sorted({max(1, len(want) + d) for d in (0, -1, 1)}):
        cands.extend(itertools.islice(_ordered_factorizations(p, r), 5000))
    def score(f):
        dist = sum(abs(math.log(a) - math.log(b)) for a, b in itertools.zip_longest(f, want, fillvalue=1.0))
        prefix = next((i for i, (a, b) in enumerate(zip(f, want)) if a != b), min(len(f), len(want)))
        return (round(dist, 9), abs(len(f) - len(want)), -prefix, f)
    return sorted(cands, key=score)[:count]


def check_k(p: int, k) -> list[int]:
    """Resolve ``k`` (a rule name or radices) to a k-vector with product ``p``.

    Raises
    ------
    SpecError
        One line naming the bad vector and listing valid vectors near it.
    """
    if k is None:
        k = "eights"
    if isinstance(k, str):
        return default_k(p, k)
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        k = [k]
    try:
        ks = list(k)
    except TypeError:
        raise SpecError(f"radix_k: k={k!r}, expected a list of radices or one of {', '.join(K_RULES)}") from None
    shown = "[" + ", ".join(str(x) for x in ks) + "]"
    near = "; valid vectors near it: " + ", ".join(str(v) for v in near_k_vectors(p, ks))
    for x in ks:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 2:
            raise SpecError(f"radix_k: k={shown} has entry {x!r}, expected integers >= 2 with product p={p}{near}")
    ks = [int(x) for x in ks]
    if math.prod(ks) != p:
        raise SpecError(f"radix_k: k={shown} has product {math.prod(ks)}, expected p={p}{near}")
    return ks


def _check_common(where, p, count, itemsize, depth_order, gather_root):
    p = check_p(where, p)
    count = DEFAULT_PIXELS if count is None else count
    count, itemsize = check_count(where, count, itemsize)
    order = check_depth_order(where, p, depth_order)
    if gather_root is not None:
        gather_root = check_root(where, gather_root, p)
    return p, count, itemsize, order, gather_root


# ---- Table 1 -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Table1Row:
    """One row of Table 1 of the shift-based paper: α and β coefficients.

    ``latency`` counts message start-ups (coefficient of α), ``bandwidth``
    counts bytes (coefficient of β, seconds per byte); ``overlap`` says
    whether blending overlaps communication.
    """

    algorithm: str
    latency: float
    bandwidth: float
    overlap: str

    def time(self, alpha: float, beta: float) -> float:
        """Seconds for latency ``alpha`` (s) and inverse bandwidth ``beta`` (s/B)."""
        return self.latency * alpha + self.bandwidth * beta


def table1_costs(p: int, n_bytes: float, k=None) -> dict[str, Table1Row]:
    """Table 1 of Cavin & Demengeon 2012 (§4), with their corrected radix-k latency.

    Parameters
    ----------
    p : int
        Number of ranks.
    n_bytes : float
        Image size n in bytes (16 per pixel).
    k : list of int or str, optional
        Radix-k's k-vector (default: :func:`default_k`).

    Returns
    -------
    dict
        Algorithm name → :class:`Table1Row`. Latency α(p−1) for direct send,
        parallel pipeline and shift-based, α·log2 p for binary swap,
        4α·log2 p for 2-3 swap, α·Σ(k_i − 1) for radix-k (§4: "during each
        round, there are k_i − 1 messages exchanged"); bandwidth βn(p−1)/p for
        all but 2-3 swap (1.3βn(p−1)/p, the upper bound of Yu et al. 2008).

    Notes
    -----
    The radix-k bandwidth term is §3.2 of the radix-k paper:
    nβ Σ_i (k_i − 1) Π_{j≤i} 1/k_j = nβ(p − 1)/p. Our ``two_three_swap`` is
    binary swap with a 3-2 elimination step, not Yu et al.'s 2-3 swap; its own
    closed form is in its docstring (the row here is the paper's).

    Examples
    --------
    >>> rows = table1_costs(12, 12 * 16, k=[4, 3])
    >>> rows["radix_k"].latency, rows["radix_k"].bandwidth, rows["shift_based"].latency
    (5, 176.0, 11)
    """
    p = check_p("table1_costs", p)
    ks = check_k(p, k)
    frac = n_bytes * (p - 1) / p
    log = math.log2(p)
    return {
        "direct_send": Table1Row("direct_send", p - 1, frac, "yes"),
        "binary_swap": Table1Row("binary_swap", log, frac, "no"),
        "two_three_swap": Table1Row("two_three_swap", 4 * log, 1.3 * frac, "no"),
        "radix_k": Table1Row("radix_k", sum(x - 1 for x in ks), frac, "partially"),
        "parallel_pipeline": Table1Row("parallel_pipeline", p - 1, frac, "no"),
        "shift_based": Table1Row("shift_based", p - 1, frac, "yes"),
    }


# ---- the out-of-order rule, per rank ----------------------------------------------------------

class OutOfOrder:
    """One compositing rank's state under the out-of-order rule (radix-k §3.1).

    The rank's own contribution (depth key ``own_key``) is the accumulated
    result, kept in ``data``. :meth:`arrive` takes one received piece: "A
    message may be composited immediately if it is either directly over or
    directly under the accumulated result, or directly over or directly under
    another message that has already arrived"; otherwise it is buffered.

    Runs of arrived pieces not yet joined to the accumulated result live in
    the buffer of their first piece: a piece joining only such runs is
    composited into it (into the front run's buffer when it joins two runs).
    A piece adjacent to the accumulated result is composited into ``data``,
    then the run on its other side. Each composite is one ``Reduce`` whose
    dependencies (derived by the builder) are exactly the two pieces it
    combines, so it starts as soon as both are there.
    """

    def __init__(self, b: ScheduleBuilder, rank: int, blocks: tuple, own_key: int):
        self.b, self.rank, self.blocks = b, rank, blocks
        self.accum = [own_key, own_key, "data"]          # [lo key, hi key, buffer]
        self.end: dict[int, list] = {own_key: self.accum}  # run endpoints -> run

    def arrive(self, key: int, buf: str, rnd: int) -> None:
        b, rank, blocks, accum, end = self.b, self.rank, self.blocks, self.accum, self.end
        left, right = end.get(key - 1), end.get(key + 1)
        if left is accum:
            b.reduce(rank, blocks, dst="data", src=buf, side=RIGHT, round=rnd)
            accum[1] = key
            if right is not None:
                b.reduce(rank, blocks, dst="data", src=right[2], side=RIGHT, round=rnd)
                accum[1] = right[1]
            run = accum
        elif right is accum:
            b.reduce(rank, blocks, dst="data", src=buf, side=LEFT, round=rnd)
            accum[0] = key
            if left is not None:
                b.reduce(rank, blocks, dst="data", src=left[2], side=LEFT, round=rnd)
                accum[0] = left[0]
            run = accum
        elif left is not None and right is not None:
            b.reduce(rank, blocks, dst=left[2], src=buf, side=RIGHT, round=rnd)
            b.reduce(rank, blocks, dst=left[2], src=right[2], side=RIGHT, round=rnd)
            run = [left[0], right[1], left[2]]
        elif left is not None:
            b.reduce(rank, blocks, dst=left[2], src=buf, side=RIGHT, round=rnd)
            run = [left[0], key, left[2]]
        elif right is not None:
            b.reduce(rank, blocks, dst=right[2], src=buf, side=LEFT, round=rnd)
            run = [key, right[1], right[2]]
        else:
            run = [key, key, buf]
        end[run[0]] = end[run[1]] = run


def _group_ops(b: ScheduleBuilder, *, ranks: Sequence[int], pieces: dict[int, tuple], step0: int,
               keys: Sequence[int] | None = None, lockstep: bool = False) -> None:
    """One direct-send exchange inside a group: a radix-k round, a binary-swap
    pair, or the whole machine (direct send, shift-based).

    Member ``c`` sends the piece of each responsible member ``d`` at step
    ``s = (d − c) mod g`` (IR round ``step0 + s − 1``), so responsible ``d``
    hears from ``d − 1, d − 2, …`` (mod g) in turn and composites them by
    :class:`OutOfOrder` on depth ``keys`` (default: member index, members
    given front to back). ``lockstep`` makes the send of step ``s`` wait for
    the send and the receive of step ``s − 1``: the stages of shift-based.
    """
    g = len(ranks)
    keys = list(range(g)) if keys is None else keys
    for c in range(g):
        rank = ranks[c]
        state = OutOfOrder(b, rank, pieces[c], keys[c]) if c in pieces else None
        prev: tuple[int, ...] = ()
        for s in range(1, g):
            rnd = step0 + s - 1
            d = (c + s) % g
            now = []
            if d in pieces:
                now.append(b.send(rank, ranks[d], pieces[d], round=rnd, after=prev if lockstep else ()))
            if state is not None:
                src = (c - s) % g
                buf = f"s{rnd}"
                now.append(b.recv(rank, ranks[src], pieces[c], buf=buf, round=rnd))
                state.arrive(keys[src], buf, rnd)
            prev = tuple(now)


# ---- the common frame: blocks, result pieces, optional gather --------------------------------

def _block_bytes(count: int, p: int, itemsize: int) -> tuple[np.ndarray, np.ndarray]:
    bounds = block_bounds(count, p)
    return bounds, np.diff(bounds) * itemsize


def _frame(name: str, p: int, count: int, itemsize: int, order: np.ndarray, gather_root, params: dict,
           build: Callable[[], ScheduleBuilder], rounds: Callable[[], Iterator[RoundArrays]],
           result: np.ndarray, nrounds: int) -> Schedule:
    """Wrap a reduce-scatter's two views into a :class:`Schedule`; with
    ``gather_root`` add the final gather (one IR round: every other rank sends
    its piece to the root) and make it an ordered ``reduce``."""
    bounds, bb = _block_bytes(count, p, itemsize)
    identity = _identity(order)
    shown = dict(params)
    if not identity:
        shown["depth_order"] = "custom"
    if gather_root is not None:
        shown["gather_root"] = gather_root

    def ops():
        b = build()
        if gather_root is not None:
            for r in range(p):
                if r != gather_root:
                    piece = (int(result[r]),)
                    b.send(r, gather_root, piece, round=nrounds)
                    b.recv(gather_root, r, piece, round=nrounds)
        return b.build()

    def all_rounds():
        if gather_root is None:
            yield from rounds()
            return
        last = np.full(p, -1, dtype=np.int64)
        for rnd in rounds():
            last[rnd.dst] = rnd.round
            yield rnd
        src = np.delete(np.arange(p, dtype=np.int64), gather_root)
        if src.size:
            nb = bb[result[src]]
            yield RoundArrays(nrounds, src, np.full(src.size, gather_root, dtype=np.int64), nb,
                              last[src], np.zeros_like(nb))

    return Schedule(
        collective="reduce_scatter" if gather_root is None else "reduce", algorithm=name, p=p,
        count=count, itemsize=itemsize, bounds=bounds, params=shown, needs=OperatorNeeds(),
        build_ops=ops, build_rounds=all_rounds, root=gather_root,
        result_blocks=lambda rank: (int(result[rank]),),
        depth_order=None if identity else tuple(int(x) for x in order),
    )


def _rows(rnd, src, dst, nbytes, dep, reduced) -> RoundArrays:
    i64 = np.int64
    return RoundArrays(rnd, np.asarray(src, i64), np.asarray(dst, i64), np.asarray(nbytes, i64),
                       np.broadcast_to(np.asarray(dep, i64), np.shape(src)).copy(),
                       np.asarray(reduced, i64))


# ---- direct send and shift-based: the rank-order shift pattern --------------------------------

def _shift_pattern(name: str, p: int, count: int, itemsize: int, order: np.ndarray, gather_root,
                   *, lockstep: bool) -> Schedule:
    """Rank ``i`` composites block ``i``; at step ``s`` it sends block
    ``(i + s) mod p`` to rank ``(i + s) mod p`` (the shift permutation, in
    physical rank order whatever the depth order)."""
    pos = _positions(order)
    _, bb = _block_bytes(count, p, itemsize)

    def build():
        b = ScheduleBuilder(p)
        _group_ops(b, ranks=list(range(p)), pieces={r: (r,) for r in range(p)}, step0=0,
                   keys=pos.tolist(), lockstep=lockstep)
        return b

    def rounds():
        dst = np.arange(p, dtype=np.int64)
        for s in range(1, p):
            # every arriving piece is composited: γ counts all received bytes
            yield _rows(s - 1, (dst - s) % p, dst, bb, s - 2 if lockstep and s >= 2 else -1, bb)

    return _frame(name, p, count, itemsize, order, gather_root, {}, build, rounds,
                  np.arange(p, dtype=np.int64), max(p - 1, 0))


@algorithm(collective="reduce_scatter", name="direct_send",
           params={"depth_order": None, "gather_root": None}, rounds="P−1 steps, all posted at once",
           noncommutative=True, paper=f"Neumann 1994, as in {SHIFT_PAPER} §2.2.1",
           cost="Table 1: α(P−1) + βn(P−1)/P, overlap yes")
def direct_send(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Direct send: every rank composites ``1/p`` of the image from all others.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order : sequence of int, optional
        Ranks front to back (default rank order, rank 0 in front).
    gather_root : int, optional
        Gather the whole picture on this rank at the end (an ordered
        ``reduce`` instead of a ``reduce_scatter``).
    count : int, optional
        Pixels in the image (default 2^20); need not divide by ``p``.
    itemsize : int
        Bytes per pixel (16: RGBA float32).

    Returns
    -------
    Schedule
        Rank ``i`` ends with block ``i`` ("each node P_i is responsible of
        compositing the (n/p) pixels ranging from i(n/p) to (i + 1)(n/p) − 1").

    Notes
    -----
    Cavin & Demengeon 2012, §2.2.1 and Table 1: one stage of ``p − 1``
    messages of ``n/p`` pixels per rank, α(p − 1) + βn(p − 1)/p; blending
    overlaps communication. The messages are posted at once (no message
    depends on a received one), listed as ``p − 1`` IR rounds in shift order
    (rank ``i`` to ``i + s`` at step ``s``) so that no rank is everybody's
    first target; arrivals are composited by the out-of-order rule. Identical
    to :func:`radix_k` with ``k = [p]`` (radix-k §3.2).

    References
    ----------
    .. [1] U. Neumann, "Communication costs for parallel volume-rendering
       algorithms", IEEE CG&A 1994.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §2.2.1, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = direct_send(5, count=5)
    >>> verify(s), report(s).cost.alpha, s.result_blocks(3)
    ('noncommutative', 4.0, (3,))
    """
    p, count, itemsize, order, gather_root = _check_common("direct_send", p, count, itemsize,
                                                           depth_order, gather_root)
    return _shift_pattern("direct_send", p, count, itemsize, order, gather_root, lockstep=False)


@algorithm(collective="reduce_scatter", name="shift_based",
           params={"depth_order": None, "gather_root": None}, rounds="P−1 stages",
           noncommutative=True, paper=f"{SHIFT_PAPER} §3.2",
           cost="Table 1: α(P−1) + βn(P−1)/P, overlap yes")
def shift_based(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Shift-based compositing: ``p − 1`` stages of the shift permutation.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Rank ``i`` ends with block ``i``.

    Notes
    -----
    Cavin & Demengeon 2012, §3.2: "During each stage s (0 < s < p), each
    processing node P_i sends (n/p) pixels to processing node P_(i+s) mod p
    and receives (n/p) pixels from processing node P_(i−s+p) mod p", and
    "composes the pixels received during previous stage s − 1 while it does
    the send and receive operations"; pieces that arrive non-contiguous are
    buffered. In the IR the send of stage ``s`` waits for the send and the
    receive of stage ``s − 1`` (stages in lockstep, the shift permutation of
    eq. (1) on the wire at every moment), while each composite depends only on
    the pieces it combines: it runs during the next stage. Table 1:
    α(p − 1) + βn(p − 1)/p, overlap yes. The shift runs over physical ranks
    whatever the depth order, as its contention-freedom on fat trees requires.

    References
    ----------
    .. [1] X. Cavin and O. Demengeon, EGPGV 2012, §3.2, Fig. 1, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    Rank 0 of four hears ranks 3, 2, 1 in stages 1, 2, 3 (Fig. 1): 3 is
    buffered, 2 is composited under it, 1 joins both to the result.

    >>> from topocoll.verify import verify
    >>> s = shift_based(4, count=8)
    >>> verify(s), [(op.kind, op.peer) for op in s.ops[0] if op.kind != "reduce"][:4]
    ('noncommutative', [('send', 1), ('recv', 3), ('send', 2), ('recv', 2)])
    """
    p, count, itemsize, order, gather_root = _check_common("shift_based", p, count, itemsize,
                                                           depth_order, gather_root)
    return _shift_pattern("shift_based", p, count, itemsize, order, gather_root, lockstep=True)


# ---- radix-k ---------------------------------------------------------------------------------

def radix_k_groups(p: int, k, round: int, *, depth_order=None) -> list[list[int]]:
    """The groups of radix-k round ``round`` (0-based), as lists of ranks.

    Processes are laid out on a virtual lattice of shape ``k`` in row-major
    order (the first radix varies fastest, so round-0 groups are the rows of
    Fig. 2 and round-``i`` members are ``Π_{j<i} k_j`` apart), by depth
    position: the lattice point at position ``v`` is rank ``depth_order[v]``.

    Examples
    --------
    Fig. 2 of the radix-k paper, ``p = 12``, ``k = [4, 3]``:

    >>> radix_k_groups(12, [4, 3], 0)
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    >>> radix_k_groups(12, [4, 3], 1)
    [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
    """
    ks = check_k(check_p("radix_k_groups", p), k)
    order = check_depth_order("radix_k_groups", p, depth_order)
    if not 0 <= round < len(ks):
        raise SpecError(f"radix_k_groups: round={round!r}, expected 0..{len(ks) - 1} for k={ks}")
    stride, radix = math.prod(ks[:round]), ks[round]
    return [[int(order[v + c * stride]) for c in range(radix)]
            for v in range(p) if (v // stride) % radix == 0]


def _radix_final_blocks(p: int, ks: list[int]) -> np.ndarray:
    """Block each depth position ends with: digit ``c_i`` picks sub-piece
    ``c_i`` of the round-``i`` piece (so binary swap ends bit-reversed)."""
    v = np.arange(p, dtype=np.int64)
    base = np.zeros(p, dtype=np.int64)
    stride = 1
    for k in ks:
        sub = p // stride // k
        base += ((v // stride) % k) * sub
        stride *= k
    return base


@algorithm(collective="reduce_scatter", name="radix_k",
           params={"k": "eights", "depth_order": None, "gather_root": None},
           rounds="Σ(k_i − 1) steps in r rounds", noncommutative=True,
           paper=f"{RADIX_K_PAPER} §3.1",
           cost="Table 1 (corrected): α·Σ(k_i − 1) + βn(P−1)/P, overlap partially",
           valid_p=lambda p, params: isinstance(params.get("k", "eights"), str)
           or math.prod(params["k"]) == p,
           sweep=({}, {"k": "primes"}, {"gather_root": 0}))
def radix_k(p: int, *, k="eights", depth_order=None, gather_root=None, count: int | None = None,
            itemsize: int = PIXEL_BYTES) -> Schedule:
    """Radix-k compositing: rounds of direct send within groups of ``k_i``.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    k : list of int or {"eights", "primes"}
        The k-vector, radices ≥ 2 with product ``p``; or a rule for it:
        ``"eights"`` (default, §4.1) or ``"primes"`` (§4.4); see
        :func:`default_k`.
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Every rank ends with one contiguous block of the ``p`` blocks.

    Raises
    ------
    SpecError
        If ``k`` is not a valid k-vector for ``p`` (the message lists valid
        vectors near it).

    Notes
    -----
    Radix-k paper §3.1: in round ``i`` the ranks form ``p/k_i`` groups of
    ``k_i``: the rows, then the columns, … of a virtual lattice of shape ``k``
    filled in row-major order (:func:`radix_k_groups`), so round-``i`` members
    are ``Π_{j<i} k_j`` apart in depth order. The current piece is split into
    ``k_i`` sub-pieces (in block units: each round-``i`` piece is exactly
    ``Π_{j>i} k_j`` blocks, so neither the image nor a piece need divide
    evenly in pixels); member ``c`` composites sub-piece ``c`` from the other
    ``k_i − 1`` members, by the out-of-order rule (§3.1, :class:`OutOfOrder`).
    The lattice runs over depth positions, so a group always holds adjacent
    depth intervals. One IR round per message step: round ``i`` spans
    ``k_i − 1`` of them, all posted at once.

    Cost (§3.2, with Cavin & Demengeon's correction of the latency term):
    α·Σ(k_i − 1) + nβ Σ(k_i − 1) Π_{j≤i} 1/k_j = α·Σ(k_i − 1) + βn(p − 1)/p,
    and γ like β. ``k = [2, …, 2]`` is binary swap, ``k = [p]`` direct send.

    References
    ----------
    .. [1] T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A
       configurable algorithm for parallel image-compositing applications",
       SC 2009, §3.1, §3.2, §4.1, §4.4, Fig. 2 —
       ``../shared/seeds/radix-k-compositing.txt``.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §4, Table 1.

    Examples
    --------
    The worked example of Fig. 2: ``p = 12``, ``k = [4, 3]``; the first
    round's messages stay within the lattice rows.

    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = radix_k(12, k=[4, 3], count=12)
    >>> verify(s), report(s).cost.alpha, report(s).rounds
    ('noncommutative', 5.0, 5)
    >>> first = [r for r in s.rounds() if r.round < 3]
    >>> all(src // 4 == dst // 4 for r in first for src, dst in zip(r.src, r.dst))
    True
    >>> [s.result_blocks(r)[0] for r in range(12)]
    [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    """
    p, count, itemsize, order, gather_root = _check_common("radix_k", p, count, itemsize,
                                                           depth_order, gather_root)
    ks = check_k(p, k)
    _, bb = _block_bytes(count, p, itemsize)
    prefix = np.concatenate(([0], np.cumsum(bb)))
    final = _radix_final_blocks(p, ks)
    result = np.empty(p, dtype=np.int64)
    result[order] = final

    def build():
        b = ScheduleBuilder(p)
        base = np.zeros(p, dtype=np.int64)
        stride, step0 = 1, 0
        for radix in ks:
            sub = p // stride // radix
            for v in range(p):
                if (v // stride) % radix:
                    continue
                start = int(base[v])
                pieces = {d: tuple(range(start + d * sub, start + (d + 1) * sub)) for d in range(radix)}
                _group_ops(b, ranks=[int(order[v + c * stride]) for c in range(radix)], pieces=pieces,
                           step0=step0)
            base += ((np.arange(p) // stride) % radix) * sub
            stride *= radix
            step0 += radix - 1
        return b

    def rounds():
        v = np.arange(p, dtype=np.int64)
        base = np.zeros(p, dtype=np.int64)
        stride, step0 = 1, 0
        for radix in ks:
            sub = p // stride // radix
            c = (v // stride) % radix
            for s in range(1, radix):
                d = (c + s) % radix
                lo = base + d * sub
                nbytes = prefix[lo + sub] - prefix[lo]
                yield _rows(step0 + s - 1, order[v], order[v + (d - c) * stride], nbytes,
                            step0 - 1, nbytes)
            base += c * sub
            stride *= radix
            step0 += radix - 1

    return _frame("radix_k", p, count, itemsize, order, gather_root, {"k": ks}, build, rounds, result,
                  sum(x - 1 for x in ks))


# ---- binary swap -----------------------------------------------------------------------------

def _check_power_of_two(where: str, p: int) -> int:
    if p & (p - 1):
        raise SpecError(f"{where}: p={p}, expected a power of two (two_three_swap and radix_k "
                        "take any p)")
    return p.bit_length() - 1


@algorithm(collective="reduce_scatter", name="binary_swap",
           params={"depth_order": None, "gather_root": None}, rounds="log2 P", any_p=False,
           noncommutative=True, paper=f"Ma et al. 1994, as in {RADIX_K_PAPER} §2.2",
           cost="Table 1: α·log2 P + βn(P−1)/P, overlap no")
def binary_swap(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Binary swap: distance doubling and vector halving, power-of-two ``p``.

    Parameters
    ----------
    p : int
        Number of ranks, a power of two.
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        The rank at depth position ``v`` ends with block ``bitreverse(v)``.

    Notes
    -----
    Round ``j`` pairs depth positions ``v`` and ``v xor 2^j``; the front one
    keeps the first half of the current piece and sends the second, the back
    one the reverse; each composites the arriving half over (or under) its
    own. ``log2 p`` rounds, one message each way per round: α log2 p +
    βn(p − 1)/p (Σ n/2^i, radix-k paper §2.2; Table 1), no overlap (each
    round's send needs the previous round's composite). Written
    independently of :func:`radix_k`, which equals it for ``k = [2, …, 2]``
    (tested).

    References
    ----------
    .. [1] K.-L. Ma, J. S. Painter, C. D. Hansen and M. F. Krogh, "Parallel
       volume rendering using binary-swap compositing", IEEE CG&A 1994.
    .. [2] Peterka et al. 2009, §2.2 — ``../shared/seeds/radix-k-compositing.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> s = binary_swap(8, count=8)
    >>> verify(s), [s.result_blocks(r)[0] for r in range(8)]
    ('noncommutative', [0, 4, 2, 6, 1, 5, 3, 7])
    """
    p, count, itemsize, order, gather_root = _check_common("binary_swap", p, count, itemsize,
                                                           depth_order, gather_root)
    q = _check_power_of_two("binary_swap", p)
    _, bb = _block_bytes(count, p, itemsize)
    prefix = np.concatenate(([0], np.cumsum(bb)))
    v = np.arange(p, dtype=np.int64)
    final = np.zeros(p, dtype=np.int64)
    for j in range(q):
        final |= ((v >> j) & 1) << (q - 1 - j)
    result = np.empty(p, dtype=np.int64)
    result[order] = final

    def build():
        b = ScheduleBuilder(p)
        lo = [0] * p
        for j in range(q):
            half = p >> (j + 1)
            for front in range(p):
                if (front >> j) & 1:
                    continue
                back = front | (1 << j)
                start = lo[front]
                _group_ops(b, ranks=[int(order[front]), int(order[back])], step0=j,
                           pieces={0: tuple(range(start, start + half)),
                                   1: tuple(range(start + half, start + 2 * half))})
            lo = [lo[x] + ((x >> j) & 1) * half for x in range(p)]
        return b

    def rounds():
        lo = np.zeros(p, dtype=np.int64)
        for j in range(q):
            half = p >> (j + 1)
            bit = (v >> j) & 1
            start = lo + (1 - bit) * half           # the half the partner keeps
            nbytes = prefix[start + half] - prefix[start]
            yield _rows(j, order[v], order[v ^ (1 << j)], nbytes, j - 1, nbytes)
            lo = lo + bit * half

    return _frame("binary_swap", p, count, itemsize, order, gather_root, {}, build, rounds, result, q)


# ---- 2-3 swap: binary swap with a 3-2 elimination step -----------------------------------------

@dataclass(frozen=True)
class _SwapPlan:
    """Layout of :func:`two_three_swap` (all arrays vectorised over groups or
    survivors; positions are depth positions)."""

    q: int                 # binary-swap rounds over the 2^q survivors
    sizes: np.ndarray      # (2^(q-1),) group sizes, 2..4
    starts: np.ndarray     # first depth position of each group
    survivor: np.ndarray   # (2^q,) depth position of survivor u = 2·group + member
    slot: np.ndarray       # (2^q,) final slot of survivor u: bit-reversed u
    slot_start: np.ndarray  # (2^q + 1,) first block of each slot (slots weigh 1 or 2 blocks)
    dependent: np.ndarray  # depth positions of eliminated ranks
    carrier: np.ndarray    # survivor u that hands each of them its block
    final: np.ndarray      # (p,) block each depth position ends with

    @property
    def first_steps(self) -> int:
        return int(self.sizes.max()) - 1


def _bit_reverse(x: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(x)
    for j in range(bits):
        out |= ((x >> j) & 1) << (bits - 1 - j)
    return out


def _swap_plan(p: int) -> _SwapPlan:
    q = p.bit_length() - 1
    survivors, r = 1 << q, p - (1 << q)
    groups = survivors // 2
    j = np.arange(groups, dtype=np.int64)
    sizes = 2 + ((j + 1) * r) // groups - (j * r) // groups
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    u = np.arange(survivors, dtype=np.int64)
    survivor = starts[u >> 1] + (u & 1)
    # the third member is handed its block by member 0 or 1 of its group, alternately over the
    # groups of three (balancing the two halves); the fourth member by member 1
    threes = np.cumsum(sizes == 3) - 1
    carrier3 = 2 * j + np.where(sizes == 3, threes % 2, 0)
    dep3 = sizes >= 3
    dependent = np.concatenate((starts[dep3] + 2, starts[sizes == 4] + 3))
    carrier = np.concatenate((carrier3[dep3], 2 * j[sizes == 4] + 1))
    weight = 1 + np.bincount(carrier, minlength=survivors)
    slot = _bit_reverse(u, q)
    slot_weight = np.empty(survivors, dtype=np.int64)
    slot_weight[slot] = weight
    slot_start = np.concatenate(([0], np.cumsum(slot_weight))).astype(np.int64)
    final = np.empty(p, dtype=np.int64)
    final[survivor] = slot_start[slot]
    final[dependent] = slot_start[slot[carrier]] + 1
    return _SwapPlan(q, sizes, starts, survivor, slot, slot_start, dependent, carrier, final)


@algorithm(collective="reduce_scatter", name="two_three_swap",
           params={"depth_order": None, "gather_root": None},
           rounds="log2 P (2^k) or ⌊log2 P⌋ + 2 or + 3", noncommutative=True,
           paper=("binary swap with the 3-2 elimination of Rabenseifner & Träff 2004, for Yu et al. "
                  f"2008's 2-3 swap, as in {RADIX_K_PAPER} §2.2"),
           cost="Table 1 (Yu et al.): 4α·log2 P + 1.3βn(P−1)/P, overlap no")
def two_three_swap(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                   itemsize: int = PIXEL_BYTES) -> Schedule:
    """Binary swap for any ``p``, with a 3-2 elimination step.

    Not Yu et al.'s 2-3 swap: neither paper here specifies it well enough to
    implement faithfully (the radix-k paper §2.2 and the shift-based paper
    §2.2.2 give only its cost), so, as issue 3 allows, this is binary swap
    with the 3-2 elimination step of Rabenseifner & Träff for non-powers of
    two; for ``p = 2^q`` it is exactly :func:`binary_swap`.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Every rank ends with one block.

    Notes
    -----
    With ``2^q ≤ p < 2^(q+1)`` and ``r = p − 2^q``, the ranks (in depth order)
    form ``2^(q−1)`` consecutive groups of 2, 3 or 4, the ``r`` extra ranks
    spread evenly. Round 0 is the first binary-swap round inside each group:
    members 0 and 1 composite the front and back halves of the image from
    every member (a group of three is the 3-2 elimination step: three ranks
    become two, each holding half of their composite; a group of four occurs
    only when ``r > 2^(q−2)``), as direct send in shift order with the
    out-of-order rule. Then ``q − 1`` binary-swap rounds over the ``2^q``
    survivors; their final slots weigh 2 blocks when they carry an
    eliminated rank, which receives its block from that survivor in one last
    round (as the eliminated processes of Rabenseifner & Träff receive their
    result at the end).

    Cost for ``p ≠ 2^q`` (IR rounds = message steps): latency
    α(q + g_max − 1) with ``g_max`` the largest group: 3 when
    ``p ≤ 1.5·2^q``, else 4. Bandwidth (measured by
    :func:`topocoll.schedules.report`, p < 300): 1.5βn to 1.8βn with groups
    of three (a survivor receives two halves in round 0, then n/4 + n/8 + …,
    and slots of 2 blocks make the halves uneven for small p), 2.0βn to 2.2βn
    with groups of four; γ alike. Table 1 lists Yu et al.'s bound
    4α·log2 p + 1.3βn(p − 1)/p instead; :func:`radix_k` with ascending prime
    factors (§4.4) stays at βn(p − 1)/p for any p.

    References
    ----------
    .. [1] R. Rabenseifner and J. L. Träff, "More efficient reduction
       algorithms for non-power-of-two number of processors in
       message-passing parallel systems", EuroPVM/MPI 2004.
    .. [2] H. Yu, C. Wang and K.-L. Ma, "Massively parallel volume rendering
       using 2-3 swap image compositing", SC 2008.
    .. [3] Peterka et al. 2009, §2.2 — ``../shared/seeds/radix-k-compositing.txt``.

    Examples
    --------
    Three ranks: one group of three; rank 0 composites the front two
    blocks and hands block 1 to rank 2, rank 1 the last block.

    >>> from topocoll.verify import verify
    >>> s = two_three_swap(3, count=3)
    >>> verify(s), [s.result_blocks(r)[0] for r in range(3)]
    ('noncommutative', [0, 2, 1])
    """
    p, count, itemsize, order, gather_root = _check_common("two_three_swap", p, count, itemsize,
                                                           depth_order, gather_root)
    _, bb = _block_bytes(count, p, itemsize)
    prefix = np.concatenate(([0], np.cumsum(bb)))
    result = np.empty(p, dtype=np.int64)
    if p == 1:
        result[:] = 0
        return _frame("two_three_swap", p, count, itemsize, order, gather_root, {},
                      lambda: ScheduleBuilder(1), lambda: iter(()), result, 0)
    plan = _swap_plan(p)
    q, survivors = plan.q, 1 << plan.q
    first = plan.first_steps
    result[order] = plan.final
    half0 = int(plan.slot_start[survivors // 2])
    halves = {0: tuple(range(0, half0)), 1: tuple(range(half0, p))}
    last_round = first + q - 1 if plan.dependent.size else first + q - 2

    def build():
        b = ScheduleBuilder(p)
        for start, size in zip(plan.starts.tolist(), plan.sizes.tolist()):
            _group_ops(b, ranks=[int(order[start + c]) for c in range(size)], pieces=halves, step0=0)
        slot_lo = (np.arange(survivors) & 1) * (survivors // 2)
        for j in range(1, q):
            h = survivors >> (j + 1)
            for u in range(survivors):
                if (u >> j) & 1:
                    continue
                w = u | (1 << j)
                a, m, z = (int(plan.slot_start[x]) for x in (slot_lo[u], slot_lo[u] + h, slot_lo[u] + 2 * h))
                _group_ops(b, ranks=[int(order[plan.survivor[u]]), int(order[plan.survivor[w]])],
                           pieces={0: tuple(range(a, m)), 1: tuple(range(m, z))}, step0=first + j - 1)
            slot_lo = slot_lo + ((np.arange(survivors) >> j) & 1) * h
        for pos, u in zip(plan.dependent.tolist(), plan.carrier.tolist()):
            piece = (int(plan.final[pos]),)
            src, dst = int(order[plan.survivor[u]]), int(order[pos])
            b.send(src, dst, piece, round=first + q - 1)
            b.recv(dst, src, piece, round=first + q - 1)
        return b

    def rounds():
        sizes, starts = plan.sizes, plan.starts
        for s in range(1, first + 1):
            src, dst, nbytes, reduced = [], [], [], []
            for d in (0, 1):
                live = sizes > s
                c = (d - s) % sizes[live]
                nb = np.full(c.size, prefix[halves[d][-1] + 1] - prefix[halves[d][0]] if halves[d] else 0)
                src.append(order[starts[live] + c])
                dst.append(order[starts[live] + d])
                nbytes.append(nb)
                reduced.append(nb)
            yield _rows(s - 1, np.concatenate(src), np.concatenate(dst), np.concatenate(nbytes), -1,
                        np.concatenate(reduced))
        u = np.arange(survivors, dtype=np.int64)
        slot_lo = (u & 1) * (survivors // 2)
        for j in range(1, q):
            h = survivors >> (j + 1)
            bit = (u >> j) & 1
            start = slot_lo + (1 - bit) * h
            nbytes = prefix[plan.slot_start[start + h]] - prefix[plan.slot_start[start]]
            dep = sizes[u >> 1] - 2 if j == 1 else np.full(survivors, first + j - 2)
            yield _rows(first + j - 1, order[plan.survivor], order[plan.survivor[u ^ (1 << j)]], nbytes,
                        dep, nbytes)
            slot_lo = slot_lo + bit * h
        if plan.dependent.size:
            nbytes = bb[plan.final[plan.dependent]]
            dep = sizes[plan.carrier >> 1] - 2 if q == 1 else np.full(nbytes.size, first + q - 2)
            yield _rows(first + q - 1, order[plan.survivor[plan.carrier]], order[plan.dependent], nbytes,
                        dep, np.zeros_like(nbytes))

    return _frame("two_three_swap", p, count, itemsize, order, gather_root, {}, build, rounds, result,
                  last_round + 1)


# ---- parallel pipeline -------------------------------------------------------------------------

@algorithm(collective="reduce_scatter", name="parallel_pipeline",
           params={"depth_order": None, "gather_root": None}, rounds="P−1 stages",
           noncommutative=True, paper=f"Lee et al. 1996, as in {SHIFT_PAPER} §2.2.4",
           cost="Table 1: α(P−1) + βn(P−1)/P, overlap no")
def parallel_pipeline(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                      itemsize: int = PIXEL_BYTES) -> Schedule:
    """Parallel pipeline on a ring in depth order, ``p − 1`` stages.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        The rank at depth position ``v`` ends with block ``v``.

    Notes
    -----
    Lee et al.'s pipeline (shift-based paper §2.2.4): "At each round, each
    processing node composes the (n/p) pixels it has received from its
    'previous' neighbor in the ring and sends these composed pixels to its
    'next' neighbor." For over this one-way ring is wrong: the partial result
    of block ``b`` collects positions ``b + 1, …, p − 1`` and then meets
    position 0, which is not adjacent in depth — no one-way ring can end each
    block at its owner without compositing non-adjacent pieces (only the
    blocks owned by the two ends can). So the ring, laid out in depth order,
    runs two pipelines that meet at each block's owner: block ``b`` travels
    front-to-back from position 0 to ``b`` (each hop composites the next rank
    under it) and back-to-front from ``p − 1`` to ``b``; position ``j`` sends
    block ``b > j`` forward at stage ``p − b + j`` and block ``b < j``
    backward at stage ``b + p − j``. Every rank sends ``p − 1`` messages of
    ``n/p`` pixels in ``p − 1`` stages, all blocks complete at stage
    ``p − 1``: Table 1's α(p − 1) + βn(p − 1)/p on bidirectional ring links
    (in stages past ``p/2`` a rank sends to both neighbours at once, so the
    single-port α-β-γ model of :func:`topocoll.schedules.report` charges up
    to two messages there). No overlap: each hop sends what it just
    composited.

    References
    ----------
    .. [1] T.-Y. Lee, C. S. Raghavendra and J. B. Nicholas, "Image
       composition schemes for sort-last polygon rendering on 2D mesh
       multicomputers", IEEE TVCG 1996.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §2.2.4, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = parallel_pipeline(6, count=6)
    >>> verify(s), report(s).rounds, report(s).max_messages_per_rank
    ('noncommutative', 5, 5)
    """
    p, count, itemsize, order, gather_root = _check_common("parallel_pipeline", p, count, itemsize,
                                                           depth_order, gather_root)
    _, bb = _block_bytes(count, p, itemsize)
    result = _positions(order)

    def build():
        b = ScheduleBuilder(p)
        for t in range(1, p):
            rnd = t - 1
            for j in range(t):                      # forward: position j → j + 1, block p − t + j
                blk = (p - t + j,)
                b.send(int(order[j]), int(order[j + 1]), blk, round=rnd)
                b.recv(int(order[j + 1]), int(order[j]), blk, buf="forward", round=rnd)
                b.reduce(int(order[j + 1]), blk, dst="data", src="forward", side=LEFT, round=rnd)
            for j in range(p - t, p):               # backward: position j → j − 1, block t + j − p
                blk = (t + j - p,)
                b.send(int(order[j]), int(order[j - 1]), blk, round=rnd)
                b.recv(int(order[j - 1]), int(order[j]), blk, buf="backward", round=rnd)
                b.reduce(int(order[j - 1]), blk, dst="data", src="backward", side=RIGHT, round=rnd)
        return b

    def rounds():
        for t in range(1, p):
            fwd = np.arange(t, dtype=np.int64)
            bwd = np.arange(p - t, p, dtype=np.int64)
            src = np.concatenate((order[fwd], order[bwd]))
            dst = np.concatenate((order[fwd + 1], order[bwd - 1]))
            nbytes = np.concatenate((bb[p - t + fwd], bb[t + bwd - p]))
            dep = np.concatenate((np.where(fwd == 0, -1, t - 2), np.where(bwd == p - 1, -1, t - 2)))
            yield _rows(t - 1, src, dst, nbytes, dep, nbytes)

    return _frame("parallel_pipeline", p, count, itemsize, order, gather_root, {}, build, rounds, result,
                  max(p - 1, 0))
