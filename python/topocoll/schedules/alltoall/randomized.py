"""Randomized all-to-all: each rank visits its peers in its own seeded random permutation.

:func:`randomized_alltoall` is the AR scheme of Kumar & Heidelberger 2008 §3,
at message granularity; :func:`permutation_keys` and
:func:`random_permutations` draw the per-rank orders.

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecError
from ..common import check_p
from ..ir import OperatorNeeds, Schedule, ScheduleBuilder, block_bounds
from ..registry import algorithm
from .common import PAPER, _Rows, check_sizes, _int_param


# ---- randomized order: a seeded pseudo-random permutation per rank -----------

_ROUNDS = 3


def permutation_keys(p: int, seed: int) -> np.ndarray:
    """Per-rank keys of :func:`random_permutations` (``2·rounds × p``, uint64),
    drawn from ``numpy.random.default_rng(seed)``; multipliers are odd."""
    keys = np.random.default_rng(seed).integers(0, 2**64, size=(2 * _ROUNDS, p), dtype=np.uint64,
                                                endpoint=False)
    keys[1::2] |= np.uint64(1)
    return keys


def _scramble(x: np.ndarray, keys: np.ndarray, bits: int) -> np.ndarray:
    """A bijection of ``[0, 2**bits)`` per column of ``keys``: rounds of add a
    key, multiply by an odd key (both mod ``2**bits``) and xor-shift."""
    mask = (1 << bits) - 1
    shift = bits // 2 + 1
    x = x.copy()
    for j in range(0, keys.shape[0], 2):
        x += keys[j]
        x *= keys[j + 1]
        x &= mask
        x ^= x >> shift
    return x


def random_permutations(keys: np.ndarray, t: int, n: int) -> np.ndarray:
    """Position ``t`` of one pseudo-random permutation of ``0 … n-1`` per column
    of ``keys`` (:func:`permutation_keys`): a keyed bijection of the next
    power of two, restricted to ``[0, n)`` by cycle walking.

    Each rank's permutation is evaluated one position at a time, so a round
    of the randomized all-to-all costs O(P) time and memory for every P (no
    P × P table).
    """
    bits = max(1, (n - 1).bit_length())
    x = _scramble(np.full(keys.shape[1], t, dtype=np.uint64), keys, bits)
    walking = np.flatnonzero(x >= n)
    while walking.size:
        y = _scramble(x[walking], keys[:, walking], bits)
        x[walking] = y
        walking = walking[y >= n]
    return x.astype(np.int64)


@algorithm(collective="alltoall", name="randomized", params={"seed": 0, "packets": 1, "burst": None},
           needs="associative", rounds="⌈packets/burst⌉·(P−1)",
           paper=f"{PAPER} §3 (AR: random injection order)",
           sweep=({"seed": 0}, {"seed": 5, "packets": 3, "burst": 2}))
def randomized_alltoall(p: int, *, seed: int = 0, packets: int = 1, burst: int | None = None,
                        count: int | None = None, itemsize: int = 8) -> Schedule:
    """Randomized-order all-to-all: rank ``i`` sends to its ``P − 1`` peers in
    its own pseudo-random order ``π_i``, seeded.

    The AR scheme of §3 injects packets "in a random permutation to smoothen
    the areas of link contention"; this is the same idea at message
    granularity. In round ``t`` rank ``i`` sends to ``(i + 1 + π_i(t)) mod P``,
    so a rank may receive several messages in one round and none in another.
    With ``packets = S`` each destination's data is ``S`` packets (blocks
    ``d·S … d·S + S − 1``) and a visit sends ``burst`` of them: the random
    order is walked ``⌈S / burst⌉`` times (the burst size is the MPI tuning
    parameter of §3: packets sent to one destination before moving on).

    Parameters
    ----------
    p : int
        Number of ranks.
    seed : int
        Seed of the permutations (shown in the schedule's params and label).
    packets : int
        Packets per destination (``count`` must be a multiple of ``p·packets``).
    burst : int, optional
        Packets per visit of a destination (default: all of them).
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p·packets``).
    itemsize : int
        Bytes per element.

    Notes
    -----
    Crossbar cost ``(P−1)α + m·β·Σ_t max_j load_t(j)`` where ``load_t(j)`` is
    the number of messages rank ``j`` receives in round ``t``: at least
    ``(P−1)(α + m·β)``; the expected largest load grows like ``ln P / ln ln P``
    (balls into bins): 7.0 times the shift's β term at P = 20,480, seed 0.

    References
    ----------
    Kumar & Heidelberger, §3, "MPI All-to-all" and "AR Strategy".

    Examples
    --------
    >>> s = randomized_alltoall(6, seed=3)
    >>> s.label()
    'alltoall/randomized(p=6, seed=3, packets=1, burst=1)'
    >>> from topocoll.verify import verify
    >>> verify(s)
    'noncommutative'
    >>> verify(randomized_alltoall(5, seed=1, packets=4, burst=3))
    'noncommutative'
    """
    where = "alltoall/randomized"
    p = check_p(where, p)
    seed = _int_param(where, "seed", seed, minimum=0)
    packets = _int_param(where, "packets", packets, minimum=1)
    burst = packets if burst is None else _int_param(where, "burst", burst, minimum=1)
    count, itemsize, m = check_sizes(where, p, p * packets if count is None else count, itemsize)
    if count % (p * packets):
        raise SpecError(f"{where}: count={count} is not a multiple of p·packets={p * packets}, "
                        "expected equal packets")
    keys = permutation_keys(p, seed)
    ranks = np.arange(p, dtype=np.int64)
    passes = -(-packets // burst)
    packet_bytes = m // packets

    def dst_of_round(t):
        return (ranks + 1 + random_permutations(keys, t, p - 1)) % p

    def packets_of_pass(q):
        return range(q * burst, min(packets, (q + 1) * burst))

    def ops():
        b = ScheduleBuilder(p)
        for i in range(p):
            others = tuple(d * packets + j for d in range(p) if d != i for j in range(packets))
            if others:
                b.copy(i, others, dst="send", src="data", round=0)
        events: list[list[tuple[int, int, int, int]]] = [[] for _ in range(p)]
        for q in range(passes):
            for t in range(p - 1):
                rnd = q * (p - 1) + t
                for i, d in enumerate(dst_of_round(t).tolist()):
                    events[i].append((rnd, 0, d, q))
                    events[d].append((rnd, 1, i, q))
        for rank, evs in enumerate(events):
            for rnd, kind, peer, q in sorted(evs):
                segs = packets_of_pass(q)
                if kind == 0:
                    b.send(rank, peer, [peer * packets + j for j in segs], buf="send", round=rnd)
                else:
                    b.recv(rank, peer, [rank * packets + j for j in segs], buf="data",
                           into=[peer * packets + j for j in segs], round=rnd)
        return b.build()

    def rounds():
        rows = _Rows(p)
        for q in range(passes):
            nbytes = len(packets_of_pass(q)) * packet_bytes
            for t in range(p - 1):
                yield rows.round(q * (p - 1) + t, dst_of_round(t), nbytes, -1)

    return Schedule("alltoall", "randomized", p, count, itemsize, block_bounds(count, p * packets),
                    {"seed": seed, "packets": packets, "burst": burst}, OperatorNeeds(), ops)
