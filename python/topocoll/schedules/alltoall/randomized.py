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

from ..arraypattern import Run, TableBuilder, TablePattern
from ..common import check_p
from ..ir import Schedule
from ..registry import algorithm
from .common import PAPER, check_sizes, _int_param, _make, _stage_table


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


def _unscramble(x: np.ndarray, keys: np.ndarray, bits: int) -> np.ndarray:
    """The inverse of :func:`_scramble`: its rounds undone in reverse order.

    The xor-shift by more than half the width is its own inverse, and an odd
    multiplier ``a`` has an inverse mod ``2**64`` (Newton: ``y ← y(2 − a·y)``
    doubles the correct low bits, from 3 for ``y = a``).
    """
    mask = (1 << bits) - 1
    shift = bits // 2 + 1
    x = x.copy()
    two = np.uint64(2)
    for j in range(keys.shape[0] - 2, -1, -2):
        a = keys[j + 1]
        inverse = a.copy()
        for _ in range(5):
            inverse *= two - a * inverse
        x ^= x >> shift
        x *= inverse
        x -= keys[j]
        x &= mask
    return x


def _walk(x: np.ndarray, keys: np.ndarray, bits: int, n: int, step) -> np.ndarray:
    """Apply ``step`` to every entry of ``x`` until it lies in ``[0, n)``
    (cycle walking: a bijection of ``[0, 2**bits)`` restricted to ``[0, n)``)."""
    x = step(x, keys, bits)
    walking = np.flatnonzero(x >= n)
    while walking.size:
        y = step(x[walking], keys[:, walking], bits)
        x[walking] = y
        walking = walking[y >= n]
    return x.astype(np.int64)


def _positions(keys: np.ndarray, t) -> np.ndarray:
    """``t`` (a scalar or one value per column of ``keys``) as uint64 entries."""
    return np.broadcast_to(np.asarray(t, dtype=np.uint64), (keys.shape[1],)).copy()


def random_permutations(keys: np.ndarray, t, n: int) -> np.ndarray:
    """Position ``t`` of one pseudo-random permutation ``π`` of ``0 … n-1`` per
    column of ``keys`` (:func:`permutation_keys`): a keyed bijection of the
    next power of two, restricted to ``[0, n)`` by cycle walking.

    ``t`` is one position for every column or one per column. Each
    permutation is evaluated one position at a time, so a round of the
    randomized all-to-all costs O(P) time and memory for every P (no P × P
    table).
    """
    return _walk(_positions(keys, t), keys, max(1, (n - 1).bit_length()), n, _scramble)


def inverse_permutations(keys: np.ndarray, value, n: int) -> np.ndarray:
    """The position ``t`` at which each column's permutation of
    :func:`random_permutations` takes ``value`` (one for every column or one
    per column): ``π^{-1}(value)``, by walking the cycle backwards.

    Examples
    --------
    >>> keys = permutation_keys(5, seed=2)
    >>> pi = random_permutations(keys, 3, 7)
    >>> inverse_permutations(keys, pi, 7).tolist()
    [3, 3, 3, 3, 3]
    """
    return _walk(_positions(keys, value), keys, max(1, (n - 1).bit_length()), n, _unscramble)


def _randomized_table(p: int, keys: np.ndarray, packets: int, burst: int):
    """The randomized order for the ranks ``b.ranks``: rank ``j`` stages every
    packet but its own into ``"send"``; in round ``q·(P−1) + t`` of pass ``q``
    it sends packets ``q·burst …`` to ``j + 1 + π_j(t)`` and receives the
    same packets of every rank ``i`` whose ``π_i`` reaches ``j`` at ``t``,
    lowest rank first.

    Those senders are found by inverting each ``π_i`` at ``j − i − 1``, so
    one rank's table costs O(P), not the O(P²) of evaluating every
    permutation; every rank's, O(P²) NumPy work and no Python object per op.
    """
    passes = -(-packets // burst)

    def record(b: TableBuilder) -> None:
        j = b.ranks
        _stage_table(b, p, packets)
        if p == 1:
            return
        n = j.shape[0]
        t = np.arange(p - 1, dtype=np.int64)
        mine = np.repeat(keys[:, j], p - 1, axis=1)
        dst = ((j[:, None] + 1 + random_permutations(mine, np.tile(t, n), p - 1).reshape(n, p - 1)) % p)
        senders = (j[:, None] + 1 + t[None, :]) % p                  # every other rank, sorted below
        senders.sort(axis=1)
        when = inverse_permutations(keys[:, senders.ravel()], ((j[:, None] - senders - 1) % p).ravel(),
                                    p - 1).reshape(n, p - 1)
        q = np.arange(passes, dtype=np.int64)[None, :, None]          # (ranks, passes, peers)
        first = q * burst
        size = np.minimum(packets, first + burst) - first
        r3 = j[:, None, None]
        d3, s3, w3 = dst[:, None, :], senders[:, None, :], when[:, None, :]
        b.send(r3, d3, Run(d3 * packets + first, size), buf="send", round=q * (p - 1) + t[None, None, :])
        b.recv(r3, s3, Run(r3 * packets + first, size), buf="data", into=Run(s3 * packets + first, size),
               round=q * (p - 1) + w3)
    return record


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
        Packets per destination; a destination's ``count / p`` elements are
        split into near-equal packets (some empty when ``count / p < packets``).
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
    Every rank's order is its own, so the pattern is one op table over
    ranks; one rank's ops cost O(P) (:func:`inverse_permutations` finds its
    senders), every rank's O(P²) NumPy rows.

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
    count, itemsize, _ = check_sizes(where, p, p * packets if count is None else count, itemsize)
    pattern = TablePattern(p, p * packets, _randomized_table(p, permutation_keys(p, seed), packets, burst))
    return _make("randomized", p, count, itemsize, {"seed": seed, "packets": packets, "burst": burst}, pattern,
                 nblocks=p * packets)
