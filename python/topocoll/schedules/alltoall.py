"""Personalized all-to-all: direct, shift, randomized, Bruck, Two Phase Schedule, virtual mesh.

Every rank ``s`` holds ``p`` blocks in ``data``; block ``d`` is addressed to
rank ``d`` and must end on rank ``d`` at block position ``s`` (MPI_Alltoall,
MPI-3.1 §5.8; :mod:`.collectives`). ``count`` is the whole per-rank vector, so
every destination gets ``count / p`` elements: ``m = count/p · itemsize``
bytes, the paper's per-destination message size.

Generators (collective ``"alltoall"``):

- :func:`direct_alltoall` — every rank sends to 0, 1, 2, … in order: the
  hot-spot baseline (round ``j`` funnels ``p - 1`` messages into rank ``j``);
- :func:`shift_alltoall` — round ``S``: send to ``(i + S) mod p``, receive from
  ``(i - S) mod p`` (the shift permutation, Cavin & Demengeon 2012 §2.1.4);
- :func:`pairwise_exchange_alltoall` — round ``S``: exchange with ``i XOR S``
  (``p`` a power of two);
- :func:`randomized_alltoall` — each rank visits its peers in its own seeded
  random permutation (the AR scheme of Kumar & Heidelberger §3, at message
  granularity);
- :func:`bruck_alltoall` — Bruck's ⌈log_{k+1} p⌉-round algorithm with ``k``
  ports, local rotations as Copy operations;
- :func:`two_phase_schedule` — the Two Phase Schedule for an X×Y×Z torus or
  mesh (§4.1): phase 1 along the linear dimension to the intermediate node
  with the destination's linear coordinate, phase 2 in the plane, pipelined;
- :func:`virtual_mesh_alltoall` — the 2D virtual mesh message-combining scheme
  (§4.2) and its d-dimensional generalisation (d = 3: the HPCC RandomAccess
  scheme of Garg & Sabharwal, cited as [5]).

Forwarding is explicit in the IR. An intermediate rank receives forwarded
blocks into a scratch buffer (``"fwd"``, ``"fwd0"``, …) at distinct positions,
then sends them on; combined messages are one :class:`~.ir.Send` carrying many
blocks. Every rank holds exactly ``p`` blocks at every stage of these
algorithms, so scratch positions are numbered ``0 … p-1`` too (a position's
size is then the size of any block, as :func:`~.ir.rounds_from_ops` assumes).
The direct algorithms first copy the input into a ``"send"`` buffer (MPI's
separate ``sendbuf``): receiving straight into ``data`` in place would make a
pair of ranks wait on each other under rendezvous semantics.

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012, §2.1.4
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient
algorithms for all-to-all communications in multiport message-passing
systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import SpecError
from .common import ceil_log, check_count, check_p
from .ir import OperatorNeeds, RoundArrays, Schedule, ScheduleBuilder, block_bounds
from .registry import algorithm

PAPER = "Kumar & Heidelberger 2008 (alltoall-blue-gene-torus)"
AXES = "xyz"
DEFAULT_MAPPING = "xyz"


# ---- validation ------------------------------------------------------------

def _int_param(where: str, name: str, value, *, minimum: int) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError(f"{where}: {name}={value!r}, expected an integer >= {minimum}")
    return int(value)


def check_sizes(where: str, p: int, count, itemsize) -> tuple[int, int, int]:
    """Resolve ``count`` (default ``p``: one element per destination).

    Returns ``(count, itemsize, m)`` with ``m = count/p · itemsize`` bytes per
    destination; raises :class:`SpecError` unless ``count`` is a multiple of
    ``p`` (all-to-all blocks must have equal size).
    """
    count = p if count is None else count
    count, itemsize = check_count(where, count, itemsize)
    if count % p:
        raise SpecError(f"{where}: count={count} is not a multiple of p={p}, expected p blocks "
                        f"of count/p elements each (count is the whole per-rank vector)")
    return count, itemsize, count // p * itemsize


@dataclass(frozen=True)
class TorusShape:
    """Sizes of a torus or mesh partition, X first (``"8x8x2M"``: Z is a mesh).

    ``periodic[i]`` is False for a mesh dimension (the paper's "M" suffix,
    Table 2); it changes only the contention factor, not the schedules.
    """

    sizes: tuple[int, ...]
    periodic: tuple[bool, ...]

    @property
    def p(self) -> int:
        return math.prod(self.sizes)

    def __str__(self) -> str:
        return "x".join(f"{n}{'' if t else 'M'}" for n, t in zip(self.sizes, self.periodic))


def parse_shape(where: str, shape, p: int | None = None) -> TorusShape:
    """Parse ``"40x32x16"``, ``"8x8x2M"``, ``(40, 32, 16)`` or a :class:`TorusShape`.

    Raises :class:`SpecError` for a malformed shape, more than three
    dimensions, or one whose node count differs from ``p`` (naming both).
    """
    if isinstance(shape, TorusShape):
        parsed = shape
    elif isinstance(shape, str):
        parts = [s.strip() for s in re.split(r"[x×*,]", shape.strip().lower())]
        sizes, periodic = [], []
        for part in parts:
            m = re.fullmatch(r"(\d+)(m?)", part)
            if not m:
                raise SpecError(f"{where}: shape={shape!r}, expected sizes like '40x32x16' "
                                "(suffix M for a mesh dimension)")
            sizes.append(int(m.group(1)))
            periodic.append(m.group(2) == "")
        parsed = TorusShape(tuple(sizes), tuple(periodic))
    elif isinstance(shape, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
        parsed = TorusShape(tuple(int(n) for n in shape), (True,) * len(shape))
    else:
        raise SpecError(f"{where}: shape={shape!r}, expected sizes like '40x32x16' or (40, 32, 16)")
    if not 1 <= len(parsed.sizes) <= 3 or any(n < 1 for n in parsed.sizes):
        raise SpecError(f"{where}: shape={shape!r}, expected 1 to 3 positive sizes")
    if p is not None and parsed.p != p:
        raise SpecError(f"{where}: shape {parsed} has {parsed.p} nodes, expected p={p}")
    return parsed


def balanced_dims(p: int, d: int) -> tuple[int, ...]:
    """``d`` factors of ``p`` as equal as possible, largest first (as
    MPI_Dims_create): 512 → (32, 16) for d = 2, the paper's 32×16 virtual
    mesh (§4.2); 20480 → (32, 32, 20) for d = 3."""
    dims, rest = [], p
    for left in range(d, 0, -1):
        best = 1
        for f in range(1, rest + 1):
            if f ** left > rest:
                break
            if rest % f == 0:
                best = f
        dims.append(best)
        rest //= best
    dims[-1] *= rest
    return tuple(sorted(dims, reverse=True))


def linear_candidates(sizes: Sequence[int]) -> list[int]:
    """Axes whose removal leaves the planar dimensions symmetric (§4.1).

    Axes of size 1 do not count as dimensions: a line is symmetric.
    """
    active = [i for i, n in enumerate(sizes) if n > 1]
    return [i for i in active if len({sizes[j] for j in active if j != i}) <= 1]


def choose_linear_dimension(sizes: Sequence[int]) -> int:
    """The Two Phase Schedule's linear dimension, by the rule of §4.1.

    "Ideally we want to select it so that the remaining planar dimensions are
    symmetric, if possible. Otherwise, we select it to be the longest
    dimension." Among several candidates the longest is taken, X first on a
    tie (on a cube every choice is equivalent by symmetry).

    Examples
    --------
    >>> [AXES[choose_linear_dimension(s)] for s in [(16, 8, 8), (8, 16, 16), (8, 32, 16), (40, 32, 16)]]
    ['x', 'x', 'y', 'x']
    """
    active = [i for i, n in enumerate(sizes) if n > 1]
    if not active:
        return 0
    pool = linear_candidates(sizes) or active
    return max(pool, key=lambda i: (sizes[i], -i))


# ---- shared pieces of both views -------------------------------------------

def _make(name: str, p: int, count: int, itemsize: int, params: dict,
          ops: Callable[[], list], rounds: Callable[[], Iterator[RoundArrays]]) -> Schedule:
    return Schedule("alltoall", name, p, count, itemsize, block_bounds(count, p), params,
                    OperatorNeeds(), ops, rounds)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class _Rows:
    """Constant arrays reused by every round of a vectorised view."""

    def __init__(self, p: int):
        self.ranks = _frozen(np.arange(p, dtype=np.int64))
        self.minus = _frozen(np.full(p, -1, dtype=np.int64))
        self.zeros = _frozen(np.zeros(p, dtype=np.int64))
        self._full: dict[int, np.ndarray] = {}

    def full(self, value: int) -> np.ndarray:
        if value not in self._full:
            self._full[value] = _frozen(np.full(self.ranks.shape[0], value, dtype=np.int64))
        return self._full[value]

    def round(self, rnd: int, dst: np.ndarray, nbytes: int, dep: int) -> RoundArrays:
        """All ranks send one message of ``nbytes`` to ``dst``."""
        dep_arr = self.minus if dep < 0 else self.full(dep)
        return RoundArrays(rnd, self.ranks, dst, self.full(nbytes), dep_arr, self.zeros)


def _stage_input(b: ScheduleBuilder, p: int) -> None:
    """Copy every rank's outgoing blocks into ``"send"`` (MPI's sendbuf)."""
    for i in range(p):
        others = tuple(j for j in range(p) if j != i)
        if others:
            b.copy(i, others, dst="send", src="data", round=0)


# ---- direct algorithms: one message per (source, destination) ---------------

def _direct_ops(p: int, nrounds: int, dst_of_round: Callable[[int], np.ndarray]) -> list:
    """Per-rank ops of a direct schedule; ``dst_of_round(t)[i]`` is the rank
    ``i`` sends its block to in round ``t`` (``-1``: none)."""
    b = ScheduleBuilder(p)
    _stage_input(b, p)
    events: list[list[tuple[int, int, int]]] = [[] for _ in range(p)]
    for t in range(nrounds):
        for i, d in enumerate(dst_of_round(t).tolist()):
            if d >= 0:
                events[i].append((t, 0, d))
                events[d].append((t, 1, i))
    for rank, evs in enumerate(events):
        for t, kind, peer in sorted(evs):
            if kind == 0:
                b.send(rank, peer, (peer,), buf="send", round=t)
            else:
                b.recv(rank, peer, (rank,), buf="data", into=(peer,), round=t)
    return b.build()


def _direct_rounds(p: int, m: int, nrounds: int, dst_of_round) -> Iterator[RoundArrays]:
    rows = _Rows(p)
    for t in range(nrounds):
        dst = dst_of_round(t)
        if (dst < 0).any():
            keep = dst >= 0
            n = int(keep.sum())
            yield RoundArrays(t, rows.ranks[keep], dst[keep], rows.full(m)[:n], rows.minus[:n], rows.zeros[:n])
        else:
            yield rows.round(t, dst, m, -1)


def _direct_schedule(name, p, count, itemsize, m, params, nrounds, dst_of_round) -> Schedule:
    return _make(name, p, count, itemsize, params,
                 lambda: _direct_ops(p, nrounds, dst_of_round),
                 lambda: _direct_rounds(p, m, nrounds, dst_of_round))


@algorithm(collective="alltoall", name="direct", params={}, rounds="P",
           noncommutative=True, paper=f"{PAPER} §3 eq. 3 (direct)",
           cost="crossbar: P·α + P(P−1)·m·β (round j funnels P−1 messages into rank j); "
                "torus eq. 3: P·α + P·(M/8)·(m+h)·β")
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
    count, itemsize, m = check_sizes("alltoall/direct", p, count, itemsize)

    def dst_of_round(j):
        dst = np.full(p, j, dtype=np.int64)
        dst[j] = -1
        return dst

    return _direct_schedule("direct", p, count, itemsize, m, {}, p if p > 1 else 0, dst_of_round)


@algorithm(collective="alltoall", name="shift", params={}, rounds="P−1",
           noncommutative=True, paper="Cavin & Demengeon 2012 §2.1.4 eq. 1 (shift-based-compositing-fat-tree)",
           cost="crossbar: (P−1)(α + m·β); torus eq. 3: P·α + P·(M/8)·(m+h)·β")
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
    Crossbar cost ``(P−1)(α + m·β)``; the array view streams ``P − 1`` rounds
    of ``P`` transfers without building per-rank objects (P = 20,480: 419
    million transfers, ``benchmarks/bench_alltoall.py``).

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
    count, itemsize, m = check_sizes("alltoall/shift", p, count, itemsize)
    ranks = np.arange(p, dtype=np.int64)
    return _direct_schedule("shift", p, count, itemsize, m, {}, p - 1,
                            lambda t: (ranks + t + 1) % p)


def _is_power_of_two(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


@algorithm(collective="alltoall", name="pairwise_exchange", params={}, rounds="P−1", any_p=False,
           noncommutative=True, paper="Cavin & Demengeon 2012 §2.1.4 (XOR pairing for P = 2^n)",
           cost="crossbar: (P−1)(α + m·β); torus eq. 3")
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
    Crossbar cost ``(P−1)(α + m·β)``, as the shift.

    Examples
    --------
    >>> [r.dst.tolist() for r in pairwise_exchange_alltoall(4).rounds()]
    [[1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]]
    """
    p = check_p("alltoall/pairwise_exchange", p)
    if not _is_power_of_two(p):
        raise SpecError(f"alltoall/pairwise_exchange: p={p}, expected a power of two")
    count, itemsize, m = check_sizes("alltoall/pairwise_exchange", p, count, itemsize)
    ranks = np.arange(p, dtype=np.int64)
    return _direct_schedule("pairwise_exchange", p, count, itemsize, m, {}, p - 1,
                            lambda t: ranks ^ (t + 1))


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
           rounds="⌈packets/burst⌉·(P−1)",
           noncommutative=True, paper=f"{PAPER} §3 (AR: random injection order)",
           sweep=({"seed": 0}, {"seed": 5, "packets": 3, "burst": 2}),  # catalogue count 3p
           cost="crossbar: (P−1)α + m·β·Σ_t max_j |{i: π_i(t) = j}| ≥ (P−1)(α + m·β); "
                "torus eq. 3: P·α + P·(M/8)·(m+h)·β")
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
                    {"seed": seed, "packets": packets, "burst": burst}, OperatorNeeds(), ops, rounds)


# ---- Bruck ---------------------------------------------------------------

@dataclass(frozen=True)
class BruckStep:
    """One message of Bruck's algorithm: in round ``round`` every rank sends
    the rotated positions ``positions`` (digit ``round`` of the position in
    base k+1 equals ``digit``) to the rank ``offset`` ahead."""

    round: int
    digit: int
    offset: int
    positions: np.ndarray
    dep_round: int


def bruck_plan(p: int, k: int) -> list[BruckStep]:
    """The messages of Bruck's all-to-all with ``k`` ports (radix ``k + 1``).

    Round ``x`` (``0 ≤ x < ⌈log_{k+1} p⌉``) moves every rotated position ``j``
    whose base-(k+1) digit ``x`` is ``z ≠ 0`` by ``z·(k+1)^x`` ranks, on up to
    ``k`` ports at once.
    """
    r = k + 1
    j = np.arange(1, p, dtype=np.int64)
    steps = []
    for x in range(ceil_log(p, r)):
        digit = (j // r ** x) % r
        for z in range(1, r):
            pos = j[digit == z]
            if pos.size == 0:
                continue
            dep = -1
            for earlier in range(x - 1, -1, -1):
                if ((pos // r ** earlier) % r != 0).any():
                    dep = earlier
                    break
            steps.append(BruckStep(x, z, z * r ** x, pos, dep))
    return steps


def _bruck_ops(p: int, k: int) -> list:
    b = ScheduleBuilder(p)
    plan = bruck_plan(p, k)
    by_round: dict[int, list[BruckStep]] = {}
    for step in plan:
        by_round.setdefault(step.round, []).append(step)
    for i in range(p):
        # local rotation: rot[j] = data[(i + j) mod p], the block for rank i + j
        rotated = tuple(range(1, p))
        if rotated:
            b.copy(i, rotated, dst="rot", src="data", src_blocks=tuple((i + j) % p for j in rotated), round=0)
    for i in range(p):
        for rnd in sorted(by_round):
            steps = by_round[rnd]
            for st in steps:
                b.send(i, (i + st.offset) % p, tuple(st.positions.tolist()), buf="rot", round=rnd)
            for st in steps:
                pos = tuple(st.positions.tolist())
                b.recv(i, (i - st.offset) % p, pos, buf="fwd", into=pos, round=rnd)
            for st in steps:
                pos = tuple(st.positions.tolist())
                b.copy(i, pos, dst="rot", src="fwd", round=rnd)
        # inverse rotation: rot[j] now holds the block of rank i − j
        rotated = tuple(range(1, p))
        if rotated:
            last = plan[-1].round if plan else 0
            b.copy(i, tuple((i - j) % p for j in rotated), dst="data", src="rot", src_blocks=rotated, round=last)
    return b.build()


def _bruck_rounds(p: int, k: int, m: int) -> Iterator[RoundArrays]:
    rows = _Rows(p)
    plan = bruck_plan(p, k)
    for rnd in sorted({st.round for st in plan}):
        steps = [st for st in plan if st.round == rnd]
        src = np.concatenate([rows.ranks] * len(steps))
        dst = np.concatenate([(rows.ranks + st.offset) % p for st in steps])
        nbytes = np.concatenate([np.full(p, st.positions.size * m, dtype=np.int64) for st in steps])
        dep = np.concatenate([np.full(p, st.dep_round, dtype=np.int64) for st in steps])
        yield RoundArrays(rnd, src, dst, nbytes, dep, np.zeros_like(src))


@algorithm(collective="alltoall", name="bruck", params={"k": 1}, rounds="⌈log_{k+1} P⌉",
           noncommutative=True, paper="Bruck et al. 1997 (IEEE TPDS 8(11)); short messages, "
                                      f"{PAPER} §3 indirect [3, 6]",
           sweep=({"k": 1}, {"k": 2}),
           cost="⌈log_{k+1}P⌉ rounds of ≤ k messages; for P = (k+1)^n: n·k·α + n·k·(P/(k+1))·m·β "
                "single-port (k-port: n·α + n·(P/(k+1))·m·β)")
def bruck_alltoall(p: int, *, k: int = 1, count: int | None = None, itemsize: int = 8) -> Schedule:
    """Bruck's all-to-all in ⌈log_{k+1} P⌉ rounds with ``k`` ports.

    1. Local rotation (a Copy): ``rot[j] = data[(i + j) mod P]``, the block
       for rank ``i + j``.
    2. Round ``x``: for each digit value ``z = 1 … k``, send the positions
       whose base-(k+1) digit ``x`` is ``z`` to rank ``i + z·(k+1)^x`` and
       receive the same positions from ``i − z·(k+1)^x`` into ``"fwd"``;
       unpack them into ``rot`` (a Copy). A block travels ``j`` ranks in
       total, one digit at a time, combined with other blocks.
    3. Inverse rotation (a Copy): ``data[(i − j) mod P] = rot[j]``.

    Parameters
    ----------
    p : int
        Number of ranks.
    k : int
        Ports: messages a rank may send at once (radix ``k + 1``).
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Notes
    -----
    Trades bandwidth for latency: ⌈log_{k+1}P⌉ rounds instead of ``P − 1``,
    but every block is sent once per nonzero digit, about
    ``(P/(k+1))·m`` bytes per message. For ``P = (k+1)^n`` the single-port
    α-β cost is ``n·k·α + n·k·(P/(k+1))·m·β`` (each round sends ``k``
    messages); with ``k`` ports working at once, ``n·α + n·(P/(k+1))·m·β``
    (:func:`.alltoall_cost.crossbar_cost`).

    References
    ----------
    Bruck, Ho, Kipnis, Upfal & Weathersby, IEEE TPDS 8(11), 1997, §3.

    Examples
    --------
    >>> s = bruck_alltoall(8, k=1)
    >>> [(r.round, r.dst.tolist()[:2], int(r.nbytes[0])) for r in s.rounds()]
    [(0, [1, 2], 32), (1, [2, 3], 32), (2, [4, 5], 32)]
    """
    p = check_p("alltoall/bruck", p)
    k = _int_param("alltoall/bruck", "k", k, minimum=1)
    count, itemsize, m = check_sizes("alltoall/bruck", p, count, itemsize)
    return _make("bruck", p, count, itemsize, {"k": k},
                 lambda: _bruck_ops(p, k), lambda: _bruck_rounds(p, k, m))


# ---- Two Phase Schedule (§4.1) ------------------------------------------------

class TorusLayout:
    """Ranks on an X×Y×Z partition split into a line and a plane (§4.1).

    ``coords[r]`` are rank ``r``'s coordinates; the *linear* axis has size
    ``L`` and line coordinate ``a[r]``; the other axes form a plane of ``Q =
    P/L`` nodes with index ``q[r]`` (first planar axis fastest).
    """

    def __init__(self, shape: TorusShape, linear: int, mapping):
        sizes = np.array(shape.sizes, dtype=np.int64)
        d, p = len(shape.sizes), shape.p
        self.shape, self.sizes, self.p = shape, sizes, p
        self.node_strides = np.cumprod(np.concatenate(([1], sizes[:-1]))).astype(np.int64)
        self.rank_node = _rank_nodes(shape, mapping)
        self.node_rank = np.empty(p, dtype=np.int64)
        self.node_rank[self.rank_node] = np.arange(p, dtype=np.int64)
        self.coords = (self.rank_node[:, None] // self.node_strides[None, :]) % sizes[None, :]
        self.linear = linear
        self.plane_axes = [j for j in range(d) if j != linear]
        self.L = int(sizes[linear])
        self.Q = p // self.L
        plane_sizes = sizes[self.plane_axes]
        self.plane_strides = np.cumprod(np.concatenate(([1], plane_sizes[:-1]))).astype(np.int64)
        self.a = self.coords[:, linear].copy()
        self.q = (self.coords[:, self.plane_axes] * self.plane_strides).sum(axis=1) \
            if self.plane_axes else np.zeros(p, dtype=np.int64)
        self._terms: list[np.ndarray] | None = None

    def plane_offset(self, u: int) -> np.ndarray:
        """Translation vector (all axes) of planar offset index ``u``."""
        vec = np.zeros(len(self.sizes), dtype=np.int64)
        for axis, stride in zip(self.plane_axes, self.plane_strides):
            vec[axis] = (u // stride) % self.sizes[axis]
        return vec

    def line_offset(self, r: int) -> np.ndarray:
        vec = np.zeros(len(self.sizes), dtype=np.int64)
        vec[self.linear] = r
        return vec

    def translate(self, delta: np.ndarray) -> np.ndarray:
        """Rank at ``coords[r] + delta`` (mod the sizes) for every rank ``r``."""
        if self._terms is None:
            # terms[j][δ] = ((coords[:, j] + δ) mod n_j)·stride_j: a translation
            # is then d − 1 additions and one gather per round
            self._terms = [((self.coords[:, j][None, :] + np.arange(n, dtype=np.int64)[:, None]) % n) * stride
                           for j, (n, stride) in enumerate(zip(self.sizes.tolist(), self.node_strides.tolist()))]
        node = None
        for j, terms in enumerate(self._terms):
            part = terms[int(delta[j]) % terms.shape[0]]
            node = part if node is None else node + part
        return self.node_rank[node]


def _rank_nodes(shape: TorusShape, mapping) -> np.ndarray:
    """Node index (X fastest) of every rank under ``mapping``."""
    p, d = shape.p, len(shape.sizes)
    sizes = np.array(shape.sizes, dtype=np.int64)
    strides = np.cumprod(np.concatenate(([1], sizes[:-1]))).astype(np.int64)
    if isinstance(mapping, str):
        order = mapping.lower()
        if sorted(order) != sorted(AXES[:d]):
            raise SpecError(f"alltoall/two_phase_schedule: mapping={mapping!r}, expected a permutation of "
                            f"{AXES[:d]!r} (fastest axis first) or a list of {p} node indices")
        axes = [AXES.index(c) for c in order]
        ranks = np.arange(p, dtype=np.int64)
        coords = np.zeros((p, d), dtype=np.int64)
        rest = ranks.copy()
        for axis in axes:
            coords[:, axis] = rest % sizes[axis]
            rest //= sizes[axis]
        return coords @ strides
    nodes = np.asarray(mapping)
    if nodes.shape != (p,) or not np.issubdtype(nodes.dtype, np.integer) or \
            not np.array_equal(np.sort(nodes), np.arange(p)):
        raise SpecError(f"alltoall/two_phase_schedule: mapping of length {nodes.size}, expected an axis order "
                        f"like 'xyz' or a permutation of the {p} node indices (X fastest)")
    return nodes.astype(np.int64)


def _two_phase_layout(p: int, shape, linear, mapping) -> TorusLayout:
    where = "alltoall/two_phase_schedule"
    parsed = TorusShape(balanced_dims(p, 3), (True,) * 3) if shape is None else parse_shape(where, shape, p)
    d = len(parsed.sizes)
    if linear is None:
        axis = choose_linear_dimension(parsed.sizes)
    elif isinstance(linear, str) and linear.lower() in AXES[:d]:
        axis = AXES.index(linear.lower())
    elif isinstance(linear, (int, np.integer)) and not isinstance(linear, bool) and 0 <= linear < d:
        axis = int(linear)
    else:
        raise SpecError(f"{where}: linear={linear!r}, expected one of {', '.join(AXES[:d])} or None (§4.1 rule)")
    return TorusLayout(parsed, axis, mapping)


def _tps_round_phase1(lay: TorusLayout, r: int) -> int:
    """Round of the phase-1 message along line offset ``r`` (1 ≤ r < L)."""
    return (r - 1) * (lay.Q - 1) if lay.Q > 1 else r - 1


def _tps_round_phase2(lay: TorusLayout, r: int, u: int) -> int:
    """Round in which data from line offset ``r`` goes to planar offset ``u``."""
    return r * (lay.Q - 1) + u - 1


def _two_phase_ops(lay: TorusLayout) -> list:
    p, L, Q = lay.p, lay.L, lay.Q
    b = ScheduleBuilder(p)
    _stage_input(b, p)
    line_to = [lay.translate(lay.line_offset(r)) for r in range(L)]
    plane_to = [lay.translate(lay.plane_offset(u)) for u in range(Q)]
    plane_from = [lay.translate(-lay.plane_offset(u)) for u in range(Q)]
    # members[a][q]: rank at line coordinate a, plane index q
    members = np.empty((L, Q), dtype=np.int64)
    members[lay.a, lay.q] = np.arange(p)
    a_of, q_of = lay.a.tolist(), lay.q.tolist()
    for c in range(p):
        a, q = a_of[c], q_of[c]
        events = []   # (round, order, callable)
        for r in range(1, L):
            rnd = _tps_round_phase1(lay, r)
            t = int(line_to[r][c])                   # intermediate at line a + r
            s = int(line_to[(L - r) % L][c])         # source at line a − r
            a_t, a_s = (a + r) % L, (a - r) % L
            out_blocks = tuple(int(x) for x in members[a_t])       # destinations (a + r, ·)
            in_blocks = tuple(int(x) for x in members[a])          # as s names them
            into = tuple(a_s * Q + qq for qq in range(Q))
            events.append((rnd, 0, "send1", (t, out_blocks)))
            events.append((rnd, 2, "recv1", (s, in_blocks, into, a_s * Q + q)))
        for r in range(L):
            a_s = (a - r) % L
            for u in range(1, Q):
                rnd = _tps_round_phase2(lay, r, u)
                d = int(plane_to[u][c])
                frm = int(plane_from[u][c])
                q_d, q_frm = q_of[d], q_of[frm]
                if r == 0:
                    out = ("send", d)
                    named = c                                       # frm's send[c]
                else:
                    out = ("fwd", a_s * Q + q_d)
                    named = a_s * Q + q                             # frm's fwd[a_s·Q + q]
                source = int(members[a_s, q_frm])
                events.append((rnd, 1, "send2", (d, out)))
                events.append((rnd, 3, "recv2", (frm, named, source)))
        events.sort(key=lambda e: (e[0], e[1]))
        for rnd, _, kind, args in events:
            if kind == "send1":
                t, blocks = args
                b.send(c, t, blocks, buf="send", round=rnd)
            elif kind == "recv1":
                s, blocks, into, own = args
                b.recv(c, s, blocks, buf="fwd", into=into, round=rnd)
                b.copy(c, (s,), dst="data", src="fwd", src_blocks=(own,), round=rnd)
            elif kind == "send2":
                d, (buf, pos) = args
                b.send(c, d, (pos,), buf=buf, round=rnd)
            else:
                frm, named, source = args
                b.recv(c, frm, (named,), buf="data", into=(source,), round=rnd)
    return b.build()


def _two_phase_rounds(lay: TorusLayout, m: int) -> Iterator[RoundArrays]:
    p, L, Q = lay.p, lay.L, lay.Q
    rows = _Rows(p)
    if Q == 1:
        for r in range(1, L):
            yield rows.round(_tps_round_phase1(lay, r), lay.translate(lay.line_offset(r)), Q * m, -1)
        return
    for r in range(L):
        dep = _tps_round_phase1(lay, r) if r >= 1 else -1
        for u in range(1, Q):
            rnd = _tps_round_phase2(lay, r, u)
            dst2 = lay.translate(lay.plane_offset(u))
            if u == 1 and r + 1 < L:
                dst1 = lay.translate(lay.line_offset(r + 1))
                yield RoundArrays(rnd, np.concatenate((rows.ranks, rows.ranks)), np.concatenate((dst1, dst2)),
                                  np.concatenate((rows.full(Q * m), rows.full(m))),
                                  np.concatenate((rows.minus, rows.full(dep) if dep >= 0 else rows.minus)),
                                  np.concatenate((rows.zeros, rows.zeros)))
            else:
                yield rows.round(rnd, dst2, m, dep)


@algorithm(collective="alltoall", name="two_phase_schedule",
           params={"shape": None, "linear": None, "mapping": DEFAULT_MAPPING},
           rounds="P − L (L: size of the linear dimension; L − 1 if P = L)",
           noncommutative=True, paper=f"{PAPER} §4.1 (Two Phase Schedule), Table 3",
           cost="crossbar: (P−1)·α + ((L−1)·P/L + P−L)·m·β; "
                "torus: phase 1 (L−1)·α + P·(L/8)·(m + h·L/P)·β, "
                "phase 2 (P−L)·α + P·(M_plane/8)·(m+h)·β, pipelined: network terms overlap")
def two_phase_schedule(p: int, *, shape=None, linear=None, mapping=DEFAULT_MAPPING,
                       count: int | None = None, itemsize: int = 8) -> Schedule:
    """Two Phase Schedule (TPS) all-to-all on an X×Y×Z torus or mesh (§4.1).

    Phase 1 runs along the *linear* dimension: source ``(x1, y1, z1)`` sends
    one combined message to the intermediate ``(x2, y1, z1)`` carrying its
    blocks for every destination ``(x2, ·, ·)``. Phase 2 runs in the plane:
    the intermediate forwards each block to its destination ``(x2, y2, z2)``.
    The phases are pipelined: in slot ``r`` every rank sends its phase-1
    message along line offset ``r + 1`` while forwarding, one block per
    message, what arrived from line offset ``r``; a phase-2 forward depends
    only on the phase-1 message that brought its block. Blocks for the
    intermediate itself are copied from ``"fwd"`` into ``data``.

    Parameters
    ----------
    p : int
        Number of ranks.
    shape : str or tuple, optional
        Partition ``"XxYxZ"`` (suffix ``M`` marks a mesh dimension), whose
        product must be ``p``; default: the most cubic factorisation of ``p``.
    linear : {"x", "y", "z"} or int, optional
        The linear (phase-1) dimension; default: the paper's rule
        (:func:`choose_linear_dimension`).
    mapping : str or sequence of int
        Rank to coordinates: an axis order, fastest first (default ``"xyz"``:
        rank = x + X·(y + Y·z)), or the node index (X fastest) of each rank.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Raises
    ------
    SpecError
        If the shape's product differs from ``p``, or for a bad ``linear`` or
        ``mapping``.

    Notes
    -----
    Every rank sends ``L − 1`` phase-1 messages of ``(P/L)·m`` bytes and
    ``P − L`` phase-2 messages of ``m`` bytes: crossbar cost ``(P−1)·α +
    ((L−1)·P/L + P − L)·m·β``, about twice the direct β term. On the torus
    phase 1 uses only the linear links and phase 2 only the planar ones; the
    phase costs are in :func:`.alltoall_cost.two_phase_torus_time` (eq. 2 and
    3 applied to the line and to the plane). With the longest dimension ``n``
    linear and the second longest ``m``, phase 2 needs only ``m/n`` of its
    peak for the whole to run at peak (§4.1).

    References
    ----------
    Kumar & Heidelberger, §4.1 and Table 3 (``alltoall-blue-gene-torus.txt``).

    Examples
    --------
    >>> s = two_phase_schedule(8 * 4 * 2, shape="8x4x2")
    >>> s.params
    {'shape': '8x4x2', 'linear': 'x', 'mapping': 'xyz'}
    >>> from topocoll.verify import verify
    >>> verify(s)
    'noncommutative'
    """
    p = check_p("alltoall/two_phase_schedule", p)
    count, itemsize, m = check_sizes("alltoall/two_phase_schedule", p, count, itemsize)
    lay = _two_phase_layout(p, shape, linear, mapping)
    params = {"shape": str(lay.shape), "linear": AXES[lay.linear],
              "mapping": mapping if isinstance(mapping, str) else tuple(int(x) for x in lay.rank_node)}
    return _make("two_phase_schedule", p, count, itemsize, params,
                 lambda: _two_phase_ops(lay), lambda: _two_phase_rounds(lay, m))


# ---- virtual mesh (§4.2) and its d-dimensional generalisation --------------------

class MeshLayout:
    """Ranks as points of a ``P_0 × P_1 × …`` virtual mesh, dimension 0 fastest.

    Positions follow the invariant of the mesh algorithm: after phase ``k``
    a rank ``c`` holds the blocks from sources ``s`` to destinations ``d`` with
    ``d_j = c_j`` for ``j ≤ k`` and ``s_j = c_j`` for ``j > k``, stored at the
    position whose coordinates are ``s_j`` (``j ≤ k``) and ``d_j`` (``j > k``):
    ``p`` blocks at ``p`` distinct positions, the destination index before
    phase 0 and the source index after the last phase.
    """

    def __init__(self, dims: Sequence[int]):
        self.dims = tuple(int(n) for n in dims)
        self.p = math.prod(self.dims)
        self.strides = tuple(int(s) for s in np.cumprod((1,) + self.dims[:-1]))
        ranks = np.arange(self.p, dtype=np.int64)
        self.coords = np.stack([(ranks // s) % n for s, n in zip(self.strides, self.dims)], axis=1) \
            if self.dims else np.zeros((self.p, 0), dtype=np.int64)
        self.phases = [k for k, n in enumerate(self.dims) if n > 1]

    def with_coordinate(self, k: int, value: int) -> np.ndarray:
        """Positions whose coordinate ``k`` is ``value``, the others in
        increasing order (the same order on sender and receiver)."""
        others = np.arange(self.p, dtype=np.int64)
        others = others[(others // self.strides[k]) % self.dims[k] == 0]
        return others + value * self.strides[k]

    def shifted(self, k: int, u: int) -> np.ndarray:
        """For every rank, the rank ``u`` ahead in dimension ``k`` (cyclic)."""
        c = self.coords[:, k]
        return np.arange(self.p, dtype=np.int64) + ((c + u) % self.dims[k] - c) * self.strides[k]


def _mesh_round_bases(lay: MeshLayout) -> list[int]:
    bases, rnd = [], 0
    for k in lay.phases:
        bases.append(rnd)
        rnd += lay.dims[k] - 1
    return bases


def _mesh_ops(lay: MeshLayout) -> list:
    p, phases = lay.p, lay.phases
    b = ScheduleBuilder(p)
    if not phases:
        return b.build()
    if len(phases) == 1:
        _stage_input(b, p)
    first_buf = "send" if len(phases) == 1 else "data"
    bases = _mesh_round_bases(lay)
    coords = lay.coords.tolist()
    for c in range(p):
        prev = first_buf
        for e, k in enumerate(phases):
            last = e == len(phases) - 1
            new = "data" if last else f"fwd{e}"
            base, n, ck = bases[e], lay.dims[k], coords[c][k]
            kept = tuple(h for h in lay.with_coordinate(k, ck).tolist() if h != c)
            if kept and prev != new:
                b.copy(c, kept, dst=new, src=prev, round=base)
            for u in range(1, n):
                to_k, from_k = (ck + u) % n, (ck - u) % n
                peer = c + (to_k - ck) * lay.strides[k]
                frm = c + (from_k - ck) * lay.strides[k]
                rnd = base + u - 1
                b.send(c, peer, tuple(lay.with_coordinate(k, to_k).tolist()), buf=prev, round=rnd)
                b.recv(c, frm, tuple(lay.with_coordinate(k, ck).tolist()), buf=new,
                       into=tuple(lay.with_coordinate(k, from_k).tolist()), round=rnd)
            prev = new
    return b.build()


def _mesh_rounds(lay: MeshLayout, m: int) -> Iterator[RoundArrays]:
    rows = _Rows(lay.p)
    dep = -1
    for base, k in zip(_mesh_round_bases(lay), lay.phases):
        n = lay.dims[k]
        for u in range(1, n):
            yield rows.round(base + u - 1, lay.shifted(k, u), (lay.p // n) * m, dep)
        dep = base + n - 2


def resolve_mesh_dims(where: str, p: int, dims, d) -> tuple[int, ...]:
    """``dims`` given (``"32x16"`` or a tuple, product ``p``) or the most
    balanced ``d`` factors of ``p`` (:func:`balanced_dims`)."""
    if dims is None:
        d = _int_param(where, "d", d, minimum=1)
        return balanced_dims(p, d)
    if isinstance(dims, str):
        try:
            parsed = tuple(int(s) for s in re.split(r"[x×*,]", dims.strip().lower()))
        except ValueError:
            raise SpecError(f"{where}: dims={dims!r}, expected sizes like '32x16'") from None
    elif isinstance(dims, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims):
        parsed = tuple(int(n) for n in dims)
    else:
        raise SpecError(f"{where}: dims={dims!r}, expected sizes like '32x16' or (32, 16)")
    if not parsed or any(n < 1 for n in parsed):
        raise SpecError(f"{where}: dims={dims!r}, expected positive sizes")
    if math.prod(parsed) != p:
        raise SpecError(f"{where}: dims {'x'.join(map(str, parsed))} have {math.prod(parsed)} points, expected p={p}")
    return parsed


@algorithm(collective="alltoall", name="virtual_mesh", params={"dims": None, "d": 2},
           rounds="Σ_k (P_k − 1)  (2D: Pvx + Pvy − 2)",
           noncommutative=True, paper=f"{PAPER} §4.2 eq. 4 (2D virtual mesh); d = 3: Garg & Sabharwal [5]",
           sweep=({"d": 2}, {"d": 3}),
           cost="crossbar: Σ_k (P_k−1)·(α + (P/P_k)·m·β) (2D: (Pvx+Pvy−2)α + ≈2P·m·β); "
                "torus eq. 4: (Pvx+Pvy)·α + 2P·(m+proto)·((M/8)·β + γ)")
def virtual_mesh_alltoall(p: int, *, dims=None, d: int = 2, count: int | None = None,
                          itemsize: int = 8) -> Schedule:
    """Message-combining all-to-all over a virtual mesh ``P = P_0 × P_1 × …``.

    With two dimensions this is the 2D virtual mesh of §4.2 (``P_0 = Pvx``
    columns per row, ``P_1 = Pvy`` rows): in phase 1 each rank combines its
    blocks for the ``Pvy`` destinations of column ``j`` into one message to
    its ``j``-th row neighbour (``Pvx − 1`` messages of ``Pvy·m`` bytes); in
    phase 2 the intermediates sort what they received by destination and
    send one message to each column neighbour (``Pvy − 1`` messages of
    ``Pvx·m`` bytes). In ``d`` dimensions phase ``k`` exchanges along
    dimension ``k`` (d = 3: the HPCC RandomAccess scheme, [5]). The blocks a
    rank keeps in a phase are copied into that phase's buffer (the γ term of
    eq. 4), so every message is one Send.

    Parameters
    ----------
    p : int
        Number of ranks.
    dims : str or tuple, optional
        Mesh sizes, dimension 0 (the row, phase 1) first, product ``p``;
        default: ``d`` factors of ``p`` as equal as possible, largest first
        (512 → 32×16, the paper's choice).
    d : int
        Number of mesh dimensions when ``dims`` is not given.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Raises
    ------
    SpecError
        If the product of ``dims`` differs from ``p``.

    Notes
    -----
    Crossbar cost ``Σ_k (P_k − 1)(α + (P/P_k)·m·β)``; in 2D ``(Pvx + Pvy −
    2)·α`` and about ``2P·m·β``: each block crosses the network twice. The
    paper's torus model is eq. 4, ``(Pvx + Pvy)·α + 2P·(m + proto)·((M/8)·β +
    γ)`` (:func:`.alltoall_cost.virtual_mesh_torus_time`); it beats eq. 3 below
    ``m = h − 2·proto`` = 32 bytes on the β terms (§4.2).

    References
    ----------
    Kumar & Heidelberger, §4.2, eq. 4; Garg & Sabharwal, SC'06 ([5]).

    Examples
    --------
    The paper's 32×16 virtual mesh on a 512-node midplane (§4.2):

    >>> s = virtual_mesh_alltoall(512, count=512, itemsize=1)
    >>> s.params
    {'dims': '32x16'}
    >>> from topocoll.schedules.metrics import report
    >>> r = report(s)
    >>> r.rounds, r.max_messages_per_rank, r.max_bytes_per_rank
    (46, 46, 976)
    """
    where = "alltoall/virtual_mesh"
    p = check_p(where, p)
    count, itemsize, m = check_sizes(where, p, count, itemsize)
    mesh = resolve_mesh_dims(where, p, dims, d)
    lay = MeshLayout(mesh)
    return _make("virtual_mesh", p, count, itemsize, {"dims": "x".join(map(str, mesh))},
                 lambda: _mesh_ops(lay), lambda: _mesh_rounds(lay, m))


ALGORITHMS = {
    "direct": direct_alltoall,
    "shift": shift_alltoall,
    "pairwise_exchange": pairwise_exchange_alltoall,
    "randomized": randomized_alltoall,
    "bruck": bruck_alltoall,
    "two_phase_schedule": two_phase_schedule,
    "virtual_mesh": virtual_mesh_alltoall,
}
