"""What every compositing schedule shares: depth order, k-vectors, Table 1 and the group machinery.

:func:`check_depth_order`, :func:`default_k`, :func:`near_k_vectors` and
:func:`check_k` validate the inputs; :func:`table1_costs` is Table 1 of the
shift-based paper; :class:`OutOfOrder` and ``_group_ops`` apply the radix-k
out-of-order rule (§3.1) for one member of a group of ranks; ``_frame`` cuts
the image into blocks, records the result pieces, appends the optional gather
and wraps a generator's one description — ``rank_ops(rank, builder)``, which
records that rank's operations only — as a
:class:`~topocoll.schedules.pattern.RankwisePattern`; ``_shift_pattern`` is
the rank-order shift pattern of direct send and shift-based compositing.

None of these patterns is a :class:`~topocoll.schedules.pattern.Circulant`,
not even direct send and shift-based in rank order: under the out-of-order
rule rank ``r`` composites the pieces of ``r − 1, …, 0`` into its result at
once but buffers those of ``p − 1, …, r + 1`` (they wrap around), so buffers,
sides and the number of reductions differ from rank to rank.

References
----------
T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A configurable
algorithm for parallel image-compositing applications", SC 2009
(``../shared/seeds/radix-k-compositing.txt``).
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ...errors import SpecError
from ..common import check_count, check_p, check_root
from ..ir import LEFT, RIGHT, OperatorNeeds, RankBuilder, Schedule, block_bounds
from ..pattern import RankwisePattern


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
    combines, so it starts as soon as both are there, plus the ``after`` of
    :meth:`arrive` where a pattern holds its composites back (shift-based).
    """

    def __init__(self, b: RankBuilder, blocks: Sequence[int], own_key: int):
        self.b, self.blocks = b, blocks
        self.accum = [own_key, own_key, "data"]          # [lo key, hi key, buffer]
        self.end: dict[int, list] = {own_key: self.accum}  # run endpoints -> run

    def arrive(self, key: int, buf: str, rnd: int, after: tuple[int, ...] = ()) -> None:
        b, blocks, accum, end = self.b, self.blocks, self.accum, self.end
        left, right = end.get(key - 1), end.get(key + 1)
        if left is accum:
            b.reduce(blocks, dst="data", src=buf, side=RIGHT, round=rnd, after=after)
            accum[1] = key
            if right is not None:
                b.reduce(blocks, dst="data", src=right[2], side=RIGHT, round=rnd, after=after)
                accum[1] = right[1]
            run = accum
        elif right is accum:
            b.reduce(blocks, dst="data", src=buf, side=LEFT, round=rnd, after=after)
            accum[0] = key
            if left is not None:
                b.reduce(blocks, dst="data", src=left[2], side=LEFT, round=rnd, after=after)
                accum[0] = left[0]
            run = accum
        elif left is not None and right is not None:
            b.reduce(blocks, dst=left[2], src=buf, side=RIGHT, round=rnd, after=after)
            b.reduce(blocks, dst=left[2], src=right[2], side=RIGHT, round=rnd, after=after)
            run = [left[0], right[1], left[2]]
        elif left is not None:
            b.reduce(blocks, dst=left[2], src=buf, side=RIGHT, round=rnd, after=after)
            run = [left[0], key, left[2]]
        elif right is not None:
            b.reduce(blocks, dst=right[2], src=buf, side=LEFT, round=rnd, after=after)
            run = [key, right[1], right[2]]
        else:
            run = [key, key, buf]
        end[run[0]] = end[run[1]] = run


def _group_ops(b: RankBuilder, c: int, *, ranks: Sequence[int], pieces: Sequence[range], step0: int,
               keys: Sequence[int] | None = None, lockstep: bool = False) -> None:
    """Member ``c``'s part of one direct-send exchange inside a group: a
    radix-k round, a binary-swap pair, or the whole machine (direct send,
    shift-based). Records that member's operations only, on its builder.

    ``ranks`` lists the members front to back; member ``d < len(pieces)``
    composites ``pieces[d]`` (a block range), members past the end composite
    nothing (the eliminated members of a 3-2 step). Member ``c`` sends the
    piece of each responsible member ``d`` at step ``s = (d − c) mod g`` (IR
    round ``step0 + s − 1``), so responsible ``d`` hears from ``d − 1, d − 2,
    …`` (mod g) in turn and composites them by :class:`OutOfOrder` on depth
    ``keys`` (default: member index). ``lockstep`` makes the send of step
    ``s`` wait for the send and the receive of step ``s − 1``: the stages of
    shift-based. It also makes the composites of what arrived in step ``s``
    wait for the send of step ``s``: they run during step ``s + 1`` (shift-based
    §3.2, each node "composes the pixels received during previous stage s − 1
    while it does the send and receive operations"), released at the same
    instant as the send of step ``s + 1`` (both wait for the send and the
    receive of step ``s``), which the simulator posts first. Without it,
    a piece that arrives a moment before the rank's own send completes (blocks
    differ by a pixel) starts a composite that the rank's one CPU cannot
    interrupt, and the next send waits for the whole composite.
    """
    g, held = len(ranks), len(pieces)
    keys = range(g) if keys is None else keys
    state = OutOfOrder(b, pieces[c], keys[c]) if c < held else None
    prev: tuple[int, ...] = ()
    for s in range(1, g):
        rnd = step0 + s - 1
        d = (c + s) % g
        now = []
        if d < held:
            now.append(b.send(ranks[d], pieces[d], round=rnd, after=prev if lockstep else ()))
        sent = tuple(now) if lockstep else ()
        if state is not None:
            src = (c - s) % g
            buf = f"s{rnd}"
            now.append(b.recv(ranks[src], pieces[c], buf=buf, round=rnd))
            state.arrive(keys[src], buf, rnd, after=sent)
        prev = tuple(now)


# ---- the common frame: blocks, result pieces, optional gather --------------------------------

def _frame(name: str, p: int, count: int, itemsize: int, order: np.ndarray, gather_root, params: dict,
           rank_ops: Callable[[int, RankBuilder], None], result: np.ndarray, nrounds: int) -> Schedule:
    """Wrap a reduce-scatter's one description into a :class:`Schedule`.

    ``rank_ops(rank, b)`` records rank ``rank``'s operations on ``b`` (and
    nothing of any other rank); ``result[rank]`` is the block it ends with.
    With ``gather_root`` the final gather follows (IR round ``nrounds``:
    every other rank sends its piece to the root, which receives them in rank
    order) and the schedule becomes an ordered ``reduce``.
    """
    identity = _identity(order)
    shown = dict(params)
    if not identity:
        shown["depth_order"] = tuple(order.tolist())   # kept whole: params round-trip through generate
    if gather_root is not None:
        shown["gather_root"] = gather_root
    final = result.tolist()

    def piece(rank: int) -> range:
        return range(final[rank], final[rank] + 1)

    def with_gather(rank: int, b: RankBuilder) -> None:
        rank_ops(rank, b)
        if gather_root is None:
            return
        if rank != gather_root:
            b.send(gather_root, piece(rank), round=nrounds)
            return
        for r in range(p):
            if r != gather_root:
                b.recv(r, piece(r), round=nrounds)

    return Schedule(
        collective="reduce_scatter" if gather_root is None else "reduce", algorithm=name, p=p,
        count=count, itemsize=itemsize, bounds=block_bounds(count, p), params=shown, needs=OperatorNeeds(),
        pattern=RankwisePattern(p, with_gather), root=gather_root,
        result_blocks=lambda rank: (final[rank],),
        depth_order=None if identity else tuple(int(x) for x in order),
    )


# ---- direct send and shift-based: the rank-order shift pattern --------------------------------

def _shift_pattern(name: str, p: int, count: int, itemsize: int, order: np.ndarray, gather_root,
                   *, lockstep: bool) -> Schedule:
    """Rank ``i`` composites block ``i``; at step ``s`` it sends block
    ``(i + s) mod p`` to rank ``(i + s) mod p`` (the shift permutation, in
    physical rank order whatever the depth order)."""
    keys = None if _identity(order) else _positions(order).tolist()

    def rank_ops(rank: int, b: RankBuilder) -> None:
        _group_ops(b, rank, ranks=range(p), pieces=[range(d, d + 1) for d in range(p)], step0=0,
                   keys=keys, lockstep=lockstep)

    return _frame(name, p, count, itemsize, order, gather_root, {}, rank_ops,
                  np.arange(p, dtype=np.int64), max(p - 1, 0))
