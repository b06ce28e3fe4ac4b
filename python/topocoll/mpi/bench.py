"""Benchmark topocoll's algorithms beside the MPI library's own collectives.

Every rank of a communicator calls :func:`bench` (or :func:`bench_composite`);
it returns the same :class:`BenchResult` on every rank. Per message size, each
topocoll algorithm of the collective (those that exist for this ``P``) and the
library's collective (``MPI_Allreduce``, ``MPI_Alltoall``, ...) run on the same
buffers, one after the other, in one run, so a ratio names the library it was
measured against (``MPI.Get_library_version()``).

Each contender is timed in two ways:

1. **OSU style** (the OSU Micro-Benchmarks' ``osu_allreduce`` and friends):
   ``warmup`` untimed calls, then ``iterations`` calls, each timed on its own
   and followed by a barrier; a rank's latency is its mean; reported are the
   average, minimum and maximum of that mean over ranks.
2. **ReproMPI style** (Hunold & Carpen-Amarie, "Reproducible MPI
   benchmarking is still not as easy as you think", IEEE TPDS 2016): every
   repetition starts with a barrier, then rank 0 broadcasts a common start
   time a window in the future and every rank spins until its clock reaches
   it (window-based synchronisation); the repetition's time is the latest
   finish over ranks minus the common start. Reported are the median and the
   quartiles over repetitions. The repetitions of all contenders of one size
   are interleaved, one of each in turn, so that a change in the load of a
   shared machine affects them alike. A repetition where some rank reached the
   start time late (it was still in the barrier or the broadcast) is invalid
   and left out, as ReproMPI does; the number of valid ones is reported (if
   none is valid, all are used). The window is four times the upper quartile
   of this run's barrier + broadcast times, at least 100 µs, and at least 5 %
   of the contender's OSU mean (a scheduling hiccup should not invalidate a
   repetition of 80 ms). On a shared or oversubscribed machine, invalid
   repetitions mean a rank was descheduled while it waited.

Clocks: ``MPI.Wtime`` need not be synchronised across ranks. Unless the
library sets ``MPI_WTIME_IS_GLOBAL``, each rank estimates its offset to rank
0's clock once, by ping-pongs with rank 0 (Cristian's method: the remote
reading is taken to be at the midpoint of the round trip with the smallest
round-trip time, error at most half that time). Drift is ignored: ReproMPI
fits a linear drift model (HCA), which matters for runs of minutes on
separate nodes, not for one run of seconds here. Global time is rank 0's.

Before any timing each algorithm's result is checked once against the serial
reference (:func:`topocoll.verify.serial_reference`) and against the
library's collective on the same inputs; a mismatch raises
:class:`ResultMismatch` on every rank, naming algorithm, size and rank.

Compositing (:func:`bench_composite`) reports frames per second, the
shift-based paper's metric (``../shared/seeds/shift-based-compositing-fat-tree.txt``),
with ``MPI_Reduce_scatter_block`` over a user-defined non-commutative
*over* operator as the baseline.

Executor: :func:`make_plan` uses ``topocoll.mpi.plan`` (compiled once,
bound to the buffers like an MPI-4 persistent collective).
"""

from __future__ import annotations

import csv
import json
import math
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

import numpy as np

from ..errors import SpecError
from ..outputs import atomic, write_text

__all__ = ["BenchError", "BenchResult", "Clock", "ResultMismatch", "Row", "agreed", "bench", "bench_composite",
           "clock_offset", "library_name", "make_plan", "osu_summary", "output_mismatch", "quartiles",
           "repetition_times", "select_algorithms", "window_length", "window_repetition", "write_csv", "write_json"]

#: OSU's LARGE_MESSAGE_SIZE: above it OSU runs fewer iterations
LARGE_MESSAGE = 8192
#: default iterations / warm-up for messages up to LARGE_MESSAGE and above it (OSU's collectives: 1000/200
#: and 100/10; fewer here, since every algorithm of a collective runs in one job)
ITERATIONS = (100, 20)
WARMUP = (10, 2)
REPETITIONS = 30
#: composite: frames timed, warm-up frames, repetitions
FRAME_ITERATIONS, FRAME_WARMUP, FRAME_REPETITIONS = 10, 2, 10
#: shortest start window (s); the measured barrier + broadcast time sets it above this
MIN_WINDOW = 100e-6
#: ping-pongs with rank 0 per rank for the clock offset
CLOCK_ROUNDS = 20
#: barrier + broadcast rounds that size the window
SYNC_ROUNDS = 20
#: the window is at least this fraction of the contender's slowest OSU mean
WINDOW_FRACTION = 0.05

COMPOSITE = "composite"
#: collectives that reduce (summed here, in float64 holding integers, so the check is exact)
REDUCTIONS = ("allreduce", "reduce", "reduce_scatter")
LIBRARY_CALLS = {"allreduce": "MPI_Allreduce", "reduce": "MPI_Reduce", "bcast": "MPI_Bcast",
                 "barrier": "MPI_Barrier", "allgather": "MPI_Allgather", "alltoall": "MPI_Alltoall",
                 "reduce_scatter": "MPI_Reduce_scatter_block"}
CSV_FIELDS = ("library", "p", "collective", "algorithm", "params", "size_bytes", "iterations", "warmup",
              "avg_us", "min_us", "max_us", "repetitions", "valid_repetitions", "median_us", "q1_us", "q3_us",
              "ratio", "ratio_avg", "baseline", "checked", "fps")


class BenchError(SpecError):
    """A benchmark error raised identically on every rank (the ranks agreed on it):
    the CLI prints it once, on rank 0, and no rank is left waiting."""


class ResultMismatch(BenchError):
    """An algorithm's result differs from the serial reference or the library's."""


# ---- statistics and clock arithmetic (pure, no MPI) -------------------------------------------

def quartiles(samples) -> tuple[float, float, float]:
    """``(q1, median, q3)`` of ``samples`` (linear interpolation, NumPy's default).

    >>> quartiles([4.0, 1.0, 3.0, 2.0, 5.0])
    (2.0, 3.0, 4.0)
    """
    values = np.asarray(samples, dtype=float)
    if values.size == 0:
        raise SpecError("quartiles: no samples, expected at least one")
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(median), float(q3)


def osu_summary(per_rank_means) -> tuple[float, float, float]:
    """OSU's report of one message size: ``(avg, min, max)`` over ranks of each
    rank's mean latency (``osu_allreduce``: MPI_Reduce of the per-rank mean
    with SUM/P, MIN and MAX).

    >>> osu_summary([2.0, 4.0])
    (3.0, 2.0, 4.0)
    """
    values = np.asarray(per_rank_means, dtype=float)
    return float(values.mean()), float(values.min()), float(values.max())


def clock_offset(samples) -> float:
    """Offset to add to the local clock to read the reference clock.

    ``samples`` are ping-pongs ``(t_send, t_remote, t_recv)``: local send time,
    the reference clock's reading when it answered, local receive time.
    Cristian's method: the reading is taken at the midpoint of the round trip
    with the smallest round-trip time (the least delayed one).

    >>> clock_offset([(10.0, 15.5, 11.0), (20.0, 30.0, 24.0)])   # RTT 1 s wins: 15.5 - 10.5
    5.0
    """
    rows = np.asarray(samples, dtype=float).reshape(-1, 3)
    if rows.shape[0] == 0:
        raise SpecError("clock_offset: no ping-pongs, expected at least one")
    best = rows[np.argmin(rows[:, 2] - rows[:, 0])]
    return float(best[1] - (best[0] + best[2]) / 2)


def window_length(sync_times, *, minimum: float = MIN_WINDOW) -> float:
    """The start window (s) from one rank's barrier + broadcast times: four
    times their upper quartile, so that a rank is nearly always spinning
    before the common start (a rare slow one makes its repetition invalid
    rather than every window long), and at least ``minimum``. The ranks use
    the largest of their windows.

    >>> window_length([1e-5, 2e-5, 3e-5]), window_length([1e-3, 1e-3, 1e-3, 1e-3, 5e-2])
    (0.0001, 0.004)
    """
    if not len(sync_times):
        return minimum
    return max(minimum, 4.0 * quartiles(sync_times)[2])


def repetition_times(starts, ends, late) -> tuple[np.ndarray, np.ndarray]:
    """Per repetition, the latest finish over ranks minus the common start
    (global clock), and whether the repetition is valid (no rank late).

    Parameters
    ----------
    starts : array of shape (repetitions,)
        Common start times.
    ends : array of shape (ranks, repetitions)
        Each rank's finish times, global clock.
    late : bool array of shape (ranks, repetitions)
        Whether the rank reached the start time after it had passed.

    >>> t, ok = repetition_times([0.0, 1.0], [[0.5, 1.2], [0.7, 1.1]], [[False, True], [False, False]])
    >>> t.round(6).tolist(), ok.tolist()
    ([0.7, 0.2], [True, False])
    """
    starts = np.asarray(starts, dtype=float)
    ends = np.atleast_2d(np.asarray(ends, dtype=float))
    late = np.atleast_2d(np.asarray(late, dtype=bool))
    return ends.max(axis=0) - starts, ~late.any(axis=0)


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``; ``inf`` when the baseline took no measurable time."""
    return value / baseline if baseline > 0 else math.inf


def output_mismatch(out: np.ndarray, bounds, expected: dict, library=None, *, library_name: str = "the library",
                    tolerance: float | None = None) -> str | None:
    """Why ``out`` is wrong, or None.

    Parameters
    ----------
    out : ndarray
        One rank's output vector.
    bounds : array of int
        Block boundaries (``schedule.bounds``).
    expected : dict
        Block position -> the value it must hold (the serial reference).
    library : ndarray, optional
        The library collective's output in the same layout: every expected
        block must equal it too.
    tolerance : float, optional
        Relative error accepted (``max |got − want| / max |want|``); exact
        comparison when None.

    >>> out = np.array([1, 2, 3, 4])
    >>> output_mismatch(out, [0, 2, 4], {1: np.array([3, 4])}) is None
    True
    >>> output_mismatch(out, [0, 2, 4], {0: np.array([1, 9])})
    'block 0 differs from the serial reference (elements 0..2)'
    >>> output_mismatch(out, [0, 2, 4], {0: np.array([1, 2])}, np.array([1, 5, 3, 4]), library_name="MPI_Bcast")
    'block 0 differs from MPI_Bcast (elements 0..2)'
    """
    for block, want in sorted(expected.items()):
        lo, hi = int(bounds[block]), int(bounds[block + 1])
        got = out[lo:hi]
        if not _close(got, want, tolerance):
            return f"block {block} differs from the serial reference (elements {lo}..{hi})"
        if library is not None and not _close(got, library[lo:hi], tolerance):
            return f"block {block} differs from {library_name} (elements {lo}..{hi})"
    return None


def _close(got, want, tolerance) -> bool:
    if got.shape != np.shape(want):
        return False
    if tolerance is None:
        return bool(np.array_equal(got, want))
    got, want = got.reshape(-1), np.asarray(want).reshape(-1)
    diff = scale = 0.0
    for lo in range(0, got.size, _CHUNK):        # in cache-sized pieces: a frame is 128 MiB
        g, w = got[lo:lo + _CHUNK].astype(np.float64), want[lo:lo + _CHUNK].astype(np.float64)
        diff = max(diff, float(np.abs(g - w).max()))
        scale = max(scale, float(np.abs(w).max()))
    return diff <= tolerance * (scale if scale > 0 else 1.0)


#: elements compared at a time
_CHUNK = 1 << 16


# ---- rows and results -------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One contender at one message size; times in µs.

    ``ratio`` is the median over ``ratio``-style repetitions divided by the
    library collective's median at the same size (ReproMPI's statistic);
    ``ratio_avg`` the same with OSU's average. ``fps`` (compositing only) is
    frames per second from the median, ``1e6 / median_us``.
    """

    library: str
    p: int
    collective: str
    algorithm: str
    params: dict
    size_bytes: int
    iterations: int
    warmup: int
    avg_us: float
    min_us: float
    max_us: float
    repetitions: int
    valid_repetitions: int
    median_us: float
    q1_us: float
    q3_us: float
    baseline: str
    ratio: float = 1.0
    ratio_avg: float = 1.0
    checked: bool = True
    fps: float | None = None

    @property
    def is_library(self) -> bool:
        return self.algorithm == self.baseline

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Clock:
    """How this run synchronises: ``offset`` (s) to add to this rank's
    ``MPI.Wtime`` to read rank 0's, the start ``window`` (s), and the method."""

    offset: float
    window: float
    method: str


@dataclass(frozen=True)
class BenchResult:
    """What :func:`bench` measured (identical on every rank)."""

    library: str
    mpi_version: str
    p: int
    collective: str
    seed: int
    clock_method: str
    window_s: float
    rows: list = field(default_factory=list)
    image: tuple | None = None         # (width, height, pattern) for compositing

    def to_dict(self) -> dict:
        out = asdict(self)
        out["rows"] = [r.to_dict() for r in self.rows]
        return out


def write_json(result: BenchResult, path) -> None:
    """``bench --json [FILE]``: the result whole into ``path``, or on stdout for ``-``."""
    write_text(path, json.dumps(result.to_dict(), indent=1, default=_json_default) + "\n", option="--json")


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {value!r}")


def write_csv(result: BenchResult, path) -> None:
    with atomic(path, option="--csv", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in result.rows:
            d = row.to_dict()
            d["params"] = " ".join(f"{k}={v}" for k, v in row.params.items())
            writer.writerow({k: d[k] for k in CSV_FIELDS})


# ---- agreement across ranks -------------------------------------------------------------------

def agreed(comm, func: Callable, *args, **kwargs):
    """``func(*args, **kwargs)`` on every rank; if it raised a
    :class:`~topocoll.errors.TopocollError` on any rank, every rank raises
    :class:`BenchError` with the lowest such rank's message, so the ranks
    take the same decision and none waits for the others."""
    from ..errors import TopocollError

    try:
        value, error = func(*args, **kwargs), None
    except TopocollError as exc:
        value, error = None, str(exc)
    errors = comm.allgather(error)
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise BenchError(first)
    return value


def library_name() -> str:
    """The first line of ``MPI_Get_library_version``, whitespace collapsed
    (``MPICH Version: 5.0.2``, ``Open MPI v5.0.8, ...``)."""
    from mpi4py import MPI

    lines = MPI.Get_library_version().strip().splitlines() or ["unknown MPI"]
    return " ".join(lines[0].split(",")[0].split())   # "Open MPI v5.0.11, package: ...": the name only


# ---- the executor ------------------------------------------------------------------------------

def make_plan(schedule, sendbuf, recvbuf=None, *, op="sum", comm=None):
    """A plan of ``schedule`` bound to the buffers (:func:`topocoll.mpi.plan`):
    ``run()``, ``recvbuf``, ``free()``."""
    from .plan import plan

    return plan(schedule, sendbuf, recvbuf, op=op, comm=comm)


# ---- choosing what runs -----------------------------------------------------------------------

def _family(collective: str) -> str:
    return "reduce_scatter" if collective == COMPOSITE else collective


def _operator_of(collective: str) -> str:
    """The reduction the benchmark runs: sum, or max for the barrier (its
    dissemination schedules need an idempotent operator)."""
    return "max" if collective == "barrier" else "sum"


def select_algorithms(collective: str, p: int, *, algorithms=None, params=None) -> list[tuple[str, dict]]:
    """``(name, params)`` of every algorithm to run: those named (each must
    exist for ``p`` and take the parameters), or every algorithm of the
    collective that exists for ``p`` with its first parameter set merged with
    ``params`` (an algorithm that does not take them is left out).

    >>> [name for name, _ in select_algorithms("composite", 3)]
    ['direct_send', 'parallel_pipeline', 'radix_k', 'shift_based', 'two_three_swap']
    >>> select_algorithms("allreduce", 4, algorithms=["ring"])
    [('ring', {})]
    """
    from ..schedules.compositing.common import ALGORITHMS as COMPOSITING
    from ..schedules.registry import catalogue, check_collective, lookup, needs_text, operator_allows

    params = dict(params or {})
    for generic in ("count", "itemsize"):
        if generic in params:
            raise SpecError(f"--param {generic}=...: the message size sets it, expected --sizes instead")
    if collective != COMPOSITE:
        check_collective(collective)
    family = _family(collective)
    idempotent = _operator_of(collective) == "max"

    def usable(info) -> bool:
        return (collective != COMPOSITE or info.name in COMPOSITING) and \
            operator_allows(info.needs, commutative=collective != COMPOSITE, idempotent=idempotent)

    if algorithms:
        chosen = []
        for name in dict.fromkeys(algorithms):
            info = lookup(family, name)
            if not usable(info):
                if collective == COMPOSITE:
                    raise SpecError(f"{info.label}: needs a commutative operator, expected a compositing algorithm "
                                    f"({', '.join(COMPOSITING)}): over is not commutative")
                raise SpecError(f"{info.label}: needs a {needs_text(info.needs)} operator, expected an algorithm "
                                f"correct for {_operator_of(collective)}, which the benchmark reduces with")
            merged = {**info.sweep[0], **params}
            info.check(p, merged)
            if not info.supports(p, merged):
                raise SpecError(f"{info.label}: not available for P={p}, expected P: {info.p_rule_text}")
            chosen.append((name, merged))
        return chosen
    chosen = [(info.name, {**info.sweep[0], **params}) for info in catalogue().values()
              if info.collective == family and usable(info) and info.supports(p, {**info.sweep[0], **params})]
    if not chosen:
        shown = " ".join(f"{k}={v}" for k, v in params.items())
        raise SpecError(f"{collective}: no algorithm exists for P={p}{' with ' + shown if shown else ''}, "
                        "expected another P or --param")
    return chosen


def _dtype(collective: str) -> np.dtype:
    """float64 for reductions (OSU times floating-point sums; integer values keep the check exact),
    bytes for data movement."""
    return np.dtype(np.float64 if collective in REDUCTIONS or collective == "barrier" else np.uint8)


def _vector(collective: str, p: int, nbytes: int) -> dict:
    from ..schedules.sizes import from_bytes

    return from_bytes(collective, p, nbytes, itemsize=_dtype(collective).itemsize)


def default_counts(nbytes: int, iterations, warmup, repetitions) -> tuple[int, int, int]:
    """OSU's defaults by message size (fewer iterations above 8 KiB), unless given.

    >>> default_counts(8, None, None, None), default_counts(1 << 20, 5, None, 7)
    ((100, 10, 30), (5, 2, 7))
    """
    large = nbytes > LARGE_MESSAGE
    return (ITERATIONS[large] if iterations is None else iterations,
            WARMUP[large] if warmup is None else warmup,
            REPETITIONS if repetitions is None else repetitions)


# ---- synchronisation and timing (MPI) ---------------------------------------------------------

def synchronise(comm, *, rounds: int = CLOCK_ROUNDS) -> Clock:
    """This rank's :class:`Clock` (collective over ``comm``)."""
    from mpi4py import MPI

    rank, p = comm.Get_rank(), comm.Get_size()
    is_global = bool(comm.Get_attr(MPI.WTIME_IS_GLOBAL))
    offset = 0.0
    if is_global or p == 1:
        method = "MPI_WTIME_IS_GLOBAL" if is_global else "one rank, one clock"
    else:
        method = f"offset to rank 0 by ping-pong (min round trip of {rounds})"
        buf = np.zeros(1)
        for peer in range(1, p):       # one rank at a time, so rank 0 answers at once
            if rank == 0:
                for _ in range(rounds):
                    comm.Recv(buf, source=peer, tag=1)
                    buf[0] = MPI.Wtime()
                    comm.Send(buf, dest=peer, tag=1)
            elif rank == peer:
                samples = []
                for _ in range(rounds):
                    t_send = MPI.Wtime()
                    comm.Send(buf, dest=0, tag=1)
                    comm.Recv(buf, source=0, tag=1)
                    samples.append((t_send, buf[0], MPI.Wtime()))
                offset = clock_offset(samples)
    sync = []
    start = np.zeros(1)
    for i in range(SYNC_ROUNDS + 5):             # the first rounds warm the paths up: not counted
        comm.Barrier()
        t = MPI.Wtime()
        comm.Bcast(start, root=0)
        if i >= 5:
            sync.append(MPI.Wtime() - t)
    comm.Barrier()
    window = comm.allreduce(window_length(sync), op=MPI.MAX)
    return Clock(offset=offset, window=window, method=method)


def osu_time(comm, run: Callable, iterations: int, warmup: int) -> float:
    """This rank's mean time of ``run`` (s), OSU's loop: each call timed on
    its own, a barrier after each, the first ``warmup`` not counted."""
    from mpi4py import MPI

    total = 0.0
    comm.Barrier()
    for i in range(warmup + iterations):
        t0 = MPI.Wtime()
        run()
        t1 = MPI.Wtime()
        if i >= warmup:
            total += t1 - t0
        comm.Barrier()
    return total / iterations


def window_repetition(comm, clock: Clock, run: Callable) -> tuple[float, float, bool]:
    """One ReproMPI window-based repetition: ``(start, end, late)`` of this
    rank, times on the global clock (see the module docstring)."""
    from mpi4py import MPI

    start = np.zeros(1)
    comm.Barrier()
    if comm.Get_rank() == 0:
        start[0] = MPI.Wtime() + clock.offset + clock.window
    comm.Bcast(start, root=0)
    target = start[0] - clock.offset            # the common start on this rank's clock
    late = MPI.Wtime() > target
    while MPI.Wtime() < target:
        pass
    run()
    return float(start[0]), MPI.Wtime() + clock.offset, bool(late)


@dataclass(frozen=True)
class _Counts:
    iterations: int
    warmup: int
    repetitions: int


def _measure(comm, clock: Clock, runs: list, counts: list) -> list:
    """OSU and ReproMPI statistics (µs) of each of ``runs`` on rank 0 (Nones elsewhere).

    The OSU loops run one contender after the other; the window repetitions
    are interleaved, one of each contender in turn, so that a change in the
    machine's load during the run (this one is shared) affects every
    contender alike instead of the one timed at that moment (ReproMPI's
    advice against measuring one configuration in one block)."""
    from mpi4py import MPI

    means, windows = [], []
    for run, c in zip(runs, counts):
        mean = osu_time(comm, run, c.iterations, c.warmup)
        means.append(comm.gather(mean, root=0))
        # a long operation gets a longer window: a scheduling hiccup of a fraction of a millisecond
        # should not invalidate a repetition of 80 ms
        windows.append(replace(clock, window=max(clock.window, WINDOW_FRACTION * comm.allreduce(mean, op=MPI.MAX))))
    samples = [[] for _ in runs]
    for rep in range(max(c.repetitions for c in counts)):
        for i, (run, c) in enumerate(zip(runs, counts)):
            if rep < c.repetitions:
                samples[i].append(window_repetition(comm, windows[i], run))
    gathered = [comm.gather(np.array(s), root=0) for s in samples]
    if comm.Get_rank() != 0:
        return [None] * len(runs)
    return [_statistics(m, g, c) for m, g, c in zip(means, gathered, counts)]


def _statistics(means, samples, c: _Counts) -> dict:
    """Row fields from the per-rank OSU means and every rank's ``(start, end, late)`` samples."""
    avg, low, high = osu_summary(means)
    samples = np.array(samples)                      # (ranks, repetitions, 3)
    times, valid = repetition_times(samples[0, :, 0], samples[:, :, 1], samples[:, :, 2] > 0)
    kept = times[valid] if valid.any() else times    # all late: keep them rather than report nothing
    q1, median, q3 = quartiles(kept)
    return dict(iterations=c.iterations, warmup=c.warmup, avg_us=avg * 1e6, min_us=low * 1e6,
                max_us=high * 1e6, repetitions=c.repetitions, valid_repetitions=int(valid.sum()),
                median_us=median * 1e6, q1_us=q1 * 1e6, q3_us=q3 * 1e6)


# ---- the library's collectives ----------------------------------------------------------------

@dataclass
class _LibraryCall:
    name: str
    run: Callable[[], None]
    result: Callable[[], np.ndarray | None]   # the output as a full vector (collective call), or None
    free: Callable[[], None] = lambda: None


def _library_call(collective: str, comm, sendbuf: np.ndarray, *, root: int = 0) -> _LibraryCall:
    """The library's own collective on a copy of ``sendbuf`` (topocoll's vector layout, MPI's counts)."""
    from mpi4py import MPI

    from ..schedules.ir import block_bounds

    rank, p, count = comm.Get_rank(), comm.Get_size(), sendbuf.shape[0]
    send = sendbuf.copy()
    recv = np.zeros_like(send)
    if collective == "allreduce":
        return _LibraryCall("MPI_Allreduce", lambda: comm.Allreduce(send, recv, op=MPI.SUM), lambda: recv)
    if collective == "reduce":
        return _LibraryCall("MPI_Reduce", lambda: comm.Reduce(send, recv if rank == root else None, op=MPI.SUM,
                                                              root=root),
                            lambda: recv if rank == root else None)
    if collective == "bcast":
        return _LibraryCall("MPI_Bcast", lambda: comm.Bcast(send, root=root), lambda: send)
    if collective == "barrier":
        return _LibraryCall("MPI_Barrier", comm.Barrier, lambda: None)
    m = count // p
    if collective == "allgather":
        mine = send[rank * m:(rank + 1) * m]
        return _LibraryCall("MPI_Allgather", lambda: comm.Allgather(mine, recv), lambda: recv)
    if collective == "alltoall":
        return _LibraryCall("MPI_Alltoall", lambda: comm.Alltoall(send, recv), lambda: recv)
    if collective == "reduce_scatter":
        counts = np.diff(block_bounds(count, p))
        block = np.zeros(int(counts[rank]), dtype=send.dtype)
        if count % p == 0:
            name, run = "MPI_Reduce_scatter_block", lambda: comm.Reduce_scatter_block(send, block, op=MPI.SUM)
        else:
            name, run = "MPI_Reduce_scatter", lambda: comm.Reduce_scatter(send, block, counts.tolist(), op=MPI.SUM)

        def result():    # every rank's block, for comparing with topocoll's blocks wherever they are
            comm.Allgatherv(block, [recv, counts.tolist()])
            return recv
        return _LibraryCall(name, run, result)
    raise SpecError(f"collective {collective!r}, expected one of {', '.join(LIBRARY_CALLS)}")


def _mpi_layout(schedule) -> bool:
    """Whether the schedule's output blocks sit where MPI's call puts them
    (always, except an all-to-all whose packets split destinations unevenly)."""
    if schedule.collective not in ("alltoall", "allgather"):
        return True
    p, bounds = schedule.p, np.asarray(schedule.bounds)
    per_rank = schedule.nblocks // p
    if schedule.nblocks % p or schedule.count % p:
        return False
    sizes = np.diff(bounds).reshape(p, per_rank)
    return bool(np.array_equal(bounds[::per_rank], np.arange(p + 1) * (schedule.count // p))
                and (sizes == sizes[0]).all())


# ---- the benchmark ----------------------------------------------------------------------------

def _check_inputs(collective: str, p: int, count: int, seed: int) -> list[np.ndarray]:
    """Every rank's input (every rank computes all of them, for the serial reference)."""
    from ..verify import integer_inputs

    dtype = _dtype(collective)
    if dtype == np.uint8:
        rng = np.random.default_rng(seed)
        return [rng.integers(0, 256, count, dtype=np.uint8) for _ in range(p)]
    return [x.astype(dtype) for x in integer_inputs(p, count, seed)]


def _agree_on_check(comm, where: str, problem: str | None) -> None:
    """Raise :class:`ResultMismatch` on every rank if any rank found a problem."""
    problems = comm.allgather(problem)
    for rank, text in enumerate(problems):
        if text is not None:
            raise ResultMismatch(f"{where}: rank {rank}: {text}")


def _with_ratios(rows: list[Row], *, fps: bool = False) -> list[Row]:
    """Each row's ratios to the library row of its size (and fps for compositing)."""
    base = {r.size_bytes: r for r in rows if r.is_library}
    out = []
    for r in rows:
        lib = base[r.size_bytes]
        out.append(replace(r, ratio=ratio(r.median_us, lib.median_us), ratio_avg=ratio(r.avg_us, lib.avg_us),
                           fps=(1e6 / r.median_us if r.median_us > 0 else math.inf) if fps else None))
    return out


def _validate_counts(**counts) -> None:
    for name, value in counts.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise SpecError(f"bench: {name}={value!r}, expected a positive integer")


def _prepare(collective, sizes, p, algorithms, params, counts):
    """Everything that can be wrong with the arguments, checked before any data moves."""
    _validate_counts(**counts)
    chosen = select_algorithms(collective, p, algorithms=algorithms, params=params)
    if collective == "barrier":
        sizes = [0]
    if not sizes:
        raise SpecError(f"bench {collective}: no message sizes, expected at least one")
    vectors = {}
    for size in sizes:
        if collective != "barrier" and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise SpecError(f"bench {collective}: message size {size!r}, expected a positive number of bytes")
        itemsize = _dtype(collective).itemsize
        if collective != "barrier" and size % itemsize:
            raise SpecError(f"bench {collective}: message size {size} B is not a multiple of {itemsize}, expected "
                            f"whole {_dtype(collective).name} elements (the benchmark reduces float64)")
        vectors[size] = _vector(collective, p, size)
    return chosen, vectors


def bench(collective: str, sizes, *, algorithms=None, params=None, iterations: int | None = None,
          warmup: int | None = None, repetitions: int | None = None, seed: int = 0, comm=None,
          progress: Callable[[str], None] | None = None) -> BenchResult:
    """Time every algorithm of ``collective`` beside the library's collective.

    Collective over ``comm``: call it on every rank with the same arguments.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``reduce``, ``reduce_scatter``, ``bcast``, ``barrier``,
        ``allgather`` or ``alltoall``.
    sizes : list of int
        Message sizes in bytes, MPI's convention
        (:mod:`topocoll.schedules.sizes`: per destination for alltoall, per
        rank for allgather, the whole vector otherwise); ignored for barrier.
        Reductions sum float64, so their sizes are multiples of 8.
    algorithms : list of str, optional
        Only these (default: every algorithm that exists for this P).
    params : dict, optional
        Generator parameters (``--param``), e.g. ``{"n": 2}`` or ``{"root": 1}``
        (the root also applies to the library's call).
    iterations, warmup : int, optional
        OSU loop; default 100 and 10 up to 8 KiB, 20 and 2 above.
    repetitions : int, optional
        Window-synchronised repetitions (default 30).
    seed : int
        Seed of the check's inputs.
    comm : mpi4py.MPI.Comm
        Default ``MPI.COMM_WORLD``; the benchmark works on a duplicate.
    progress : callable, optional
        Called on rank 0 with a line before each contender is timed.

    Returns
    -------
    BenchResult
        Rows ordered by size, the library's row first; the same on every rank.

    Raises
    ------
    BenchError
        Bad arguments, on every rank alike.
    ResultMismatch
        A result differed from the serial reference or the library's.
    """
    from mpi4py import MPI

    world = MPI.COMM_WORLD if comm is None else comm
    p = world.Get_size()
    counts = dict(iterations=iterations, warmup=warmup, repetitions=repetitions)
    chosen, vectors = agreed(world, _prepare, collective, list(sizes), p, algorithms, params, counts)
    comm = world.Dup()           # our barriers and broadcasts never meet the caller's traffic
    try:
        clock = synchronise(comm)
        root = int((params or {}).get("root", 0))
        rows = []
        for size, vector in vectors.items():
            with ExitStack() as plans:               # each size's plans are freed before the next
                timed = _checked_contenders(comm, collective, size, vector, chosen, seed=seed, root=root,
                                            plans=plans)
                if progress and comm.Get_rank() == 0:
                    progress(f"{collective} {size} B: {len(timed)} contenders")
                rows += _timed_rows(comm, clock, timed, _Counts(*default_counts(size, iterations, warmup,
                                                                                repetitions)),
                                    collective=collective, size=size)
        return _result(comm, clock, collective, rows, seed=seed)
    finally:
        comm.Free()


def _checked_contenders(comm, collective: str, size: int, vector: dict, chosen, *, seed: int, root: int,
                        plans: ExitStack) -> list:
    """``[(name, params, run)]``: the library's collective, then a plan per
    algorithm, each run once and checked against the serial reference and the
    library's result on the same seeded inputs (every rank holds every rank's
    input for the reference)."""
    from ..schedules.registry import generate
    from ..verify import serial_reference

    p, rank = comm.Get_size(), comm.Get_rank()
    op = _operator_of(collective)
    inputs = _check_inputs(collective, p, vector["count"], seed)
    lib = _library_call(collective, comm, inputs[rank], root=root)
    plans.callback(lib.free)
    lib.run()
    lib_full = lib.result()
    timed = [(lib.name, {}, lib.run)]
    for name, params in chosen:
        schedule = generate(collective, name, p, **vector, **params)
        plan = make_plan(schedule, inputs[rank].copy(), np.zeros_like(inputs[rank]), op=op, comm=comm)
        plans.callback(plan.free)
        plan.run()
        want = serial_reference(schedule, inputs, op)[rank]
        problem = output_mismatch(plan.recvbuf, schedule.bounds, want, lib_full if _mpi_layout(schedule) else None,
                                  library_name=lib.name)
        _agree_on_check(comm, f"{collective}/{name} at {size} B", problem)
        timed.append((name, params, plan.run))
    return timed


def _timed_rows(comm, clock: Clock, timed: list, counts: _Counts, *, collective: str, size: int) -> list:
    """Rows of ``timed`` (library first) on rank 0, empty elsewhere."""
    stats = _measure(comm, clock, [run for _, _, run in timed], [counts] * len(timed))
    if comm.Get_rank() != 0:
        return []
    library, baseline = library_name(), timed[0][0]
    return [Row(library=library, p=comm.Get_size(), collective=collective, algorithm=name, params=dict(params),
                size_bytes=size, baseline=baseline, **st) for (name, params, _), st in zip(timed, stats)]


def _result(comm, clock: Clock, collective: str, rows: list, *, seed: int, image=None) -> BenchResult:
    """The same :class:`BenchResult` on every rank, ratios included."""
    from mpi4py import MPI

    rows = comm.bcast(_with_ratios(rows, fps=collective == COMPOSITE) if comm.Get_rank() == 0 else None, root=0)
    return BenchResult(library=library_name(), mpi_version=MPI.Get_library_version().strip(), p=comm.Get_size(),
                       collective=collective, seed=seed, clock_method=clock.method,
                       window_s=comm.allreduce(clock.window, op=MPI.MAX), rows=rows, image=image)


# ---- compositing: frames per second -----------------------------------------------------------

def over_user_function(inbuf, inoutbuf, datatype=None) -> None:
    """MPI user function of the over operator on premultiplied RGBA float32:
    ``inoutbuf = inbuf over inoutbuf``.

    MPI calls ``f(invec, inoutvec)`` with ``invec`` from the lower ranks for a
    non-commutative operator (MPI-3.1 §5.9.5), so rank 0 is the front.

    >>> front = np.array([0.5, 0, 0, 0.5], np.float32)
    >>> back = np.array([0, 0, 1, 1], np.float32)
    >>> over_user_function(front, back); back.tolist()
    [0.5, 0.0, 0.5, 1.0]
    """
    from ..imaging import over

    front = np.frombuffer(inbuf, dtype=np.float32).reshape(-1, 4)
    back = np.frombuffer(inoutbuf, dtype=np.float32).reshape(-1, 4)
    over(front, back, out=back)


def _library_over(comm, sendbuf: np.ndarray) -> _LibraryCall:
    """``MPI_Reduce_scatter_block`` (``MPI_Reduce_scatter`` when P does not
    divide the pixels) over a user-defined non-commutative over operator."""
    from mpi4py import MPI

    from ..schedules.ir import block_bounds

    rank, p, n = comm.Get_rank(), comm.Get_size(), sendbuf.shape[0]
    pixel = MPI.FLOAT.Create_contiguous(4).Commit()
    op = MPI.Op.Create(over_user_function, commute=False)
    counts = np.diff(block_bounds(n, p))
    block = np.zeros((int(counts[rank]), 4), dtype=np.float32)
    send = sendbuf.copy()
    if n % p == 0:
        name = "MPI_Reduce_scatter_block"
        run = lambda: comm.Reduce_scatter_block([send, pixel], [block, pixel], op=op)  # noqa: E731
    else:
        name = "MPI_Reduce_scatter"
        run = lambda: comm.Reduce_scatter([send, pixel], [block, pixel], counts.tolist(), op=op)  # noqa: E731

    def free():
        op.Free()
        pixel.Free()
    return _LibraryCall(name, run, lambda: block, free)


def _composite_reference(comm, image: np.ndarray, ranges_of: list) -> dict:
    """The serial over-composition in float64, front (rank 0) to back, of this
    rank's pixel ranges ``ranges_of[rank]`` (each a list of ``(lo, hi)``).

    Every rank's pixels in those ranges are gathered here first (a plain
    gather, no reduction: regenerating every rank's test image would take
    longer than the benchmark)."""
    from ..imaging import over_numpy

    rank, p = comm.Get_rank(), comm.Get_size()
    mine = None
    for dest, ranges in enumerate(ranges_of):
        send = np.concatenate([image[lo:hi] for lo, hi in ranges]) if ranges else np.empty((0, 4), image.dtype)
        recv = np.empty((p,) + send.shape, send.dtype) if rank == dest else None
        comm.Gather(send, recv, root=dest)
        if rank == dest:
            mine = recv
    out, offset = {}, 0
    for lo, hi in ranges_of[rank]:
        acc = mine[p - 1, offset:offset + hi - lo].astype(np.float64)
        for q in range(p - 2, -1, -1):
            acc = over_numpy(mine[q, offset:offset + hi - lo].astype(np.float64), acc)
        out[(lo, hi)] = acc
        offset += hi - lo
    return out


def bench_composite(width: int, height: int, *, algorithms=None, params=None, pattern: str = "checker",
                    iterations: int | None = None, warmup: int | None = None, repetitions: int | None = None,
                    seed: int = 0, comm=None, progress: Callable[[str], None] | None = None) -> BenchResult:
    """Frames per second of every compositing algorithm beside the library's
    ``MPI_Reduce_scatter_block`` with a non-commutative over operator.

    Every rank renders its test image (:func:`topocoll.imaging.make_pattern`,
    premultiplied RGBA float32, rank 0 in front); a frame is the ordered
    reduce-scatter of the images over ``width × height`` pixels of 16 B
    (:func:`topocoll.composite.composite` runs the same schedules in one
    process). Results are checked against a serial over-composition in float64
    (tolerance :func:`topocoll.composite.tolerance_for`). Defaults: 10 frames
    after 2 of warm-up, 10 repetitions. Other parameters as :func:`bench`.

    Notes
    -----
    The shift-based paper reports frames per second of compositing on a fat
    tree (``../shared/seeds/shift-based-compositing-fat-tree.txt``); radix-k
    (Peterka et al., SC 2009) compares against the same baselines.
    """
    from mpi4py import MPI

    from ..imaging import PATTERNS
    from ..schedules.compositing.common import PIXEL_BYTES

    world = MPI.COMM_WORLD if comm is None else comm

    def prepare():
        _validate_counts(width=width, height=height, iterations=iterations, warmup=warmup, repetitions=repetitions)
        if pattern not in PATTERNS:
            raise SpecError(f"bench composite: pattern {pattern!r}, expected one of {', '.join(PATTERNS)}")
        return select_algorithms(COMPOSITE, world.Get_size(), algorithms=algorithms, params=params)

    chosen = agreed(world, prepare)
    comm = world.Dup()
    try:
        clock = synchronise(comm)
        counts = _Counts(FRAME_ITERATIONS if iterations is None else iterations,
                         FRAME_WARMUP if warmup is None else warmup,
                         FRAME_REPETITIONS if repetitions is None else repetitions)
        with ExitStack() as plans:
            timed = _checked_compositing(comm, width, height, pattern, seed, chosen, plans=plans)
            if progress and comm.Get_rank() == 0:
                progress(f"composite {width}x{height}: {len(timed)} contenders")
            rows = _timed_rows(comm, clock, timed, counts, collective=COMPOSITE,
                               size=width * height * PIXEL_BYTES)
        return _result(comm, clock, COMPOSITE, rows, seed=seed, image=(width, height, pattern))
    finally:
        comm.Free()


def _pixel_ranges(schedules, p: int, n: int) -> list:
    """Per rank, the sorted ``(lo, hi)`` pixel ranges it ends with: its
    ``MPI_Reduce_scatter`` block and its result blocks of every schedule."""
    from ..schedules.ir import block_bounds

    lib = block_bounds(n, p)
    return [sorted({(int(lib[r]), int(lib[r + 1]))}
                   | {(int(s.bounds[b]), int(s.bounds[b + 1])) for s in schedules for b in s.result_blocks(r)})
            for r in range(p)]


def _checked_compositing(comm, width: int, height: int, pattern: str, seed: int, chosen, *, plans: ExitStack) -> list:
    """``[(name, params, run)]`` of the library's over reduce-scatter and each
    algorithm's plan, each run once and checked against a serial
    over-composition in float64."""
    from ..composite import tolerance_for
    from ..imaging import make_pattern
    from ..schedules.compositing.common import PIXEL_BYTES
    from ..schedules.ir import block_bounds
    from ..schedules.registry import generate

    p, rank, n = comm.Get_size(), comm.Get_rank(), width * height
    where, tolerance = f"{width}x{height}", tolerance_for(np.float32, p)
    image = make_pattern(pattern, rank, p, width, height, seed=seed).reshape(-1, 4)
    schedules = [generate("reduce_scatter", name, p, count=n, itemsize=PIXEL_BYTES, **params)
                 for name, params in chosen]
    reference = _composite_reference(comm, image, _pixel_ranges(schedules, p, n))
    lib = _library_over(comm, image)
    plans.callback(lib.free)
    lib.run()
    bounds = block_bounds(n, p)
    mine = (int(bounds[rank]), int(bounds[rank + 1]))
    problem = output_mismatch(lib.result(), [0, mine[1] - mine[0]], {0: reference[mine]}, tolerance=tolerance)
    _agree_on_check(comm, f"composite/{lib.name} at {where}", problem)
    timed = [(lib.name, {}, lib.run)]
    for (name, params), schedule in zip(chosen, schedules):
        plan = make_plan(schedule, image, np.zeros_like(image), op="over", comm=comm)
        plans.callback(plan.free)
        plan.run()
        want = {b: reference[(int(schedule.bounds[b]), int(schedule.bounds[b + 1]))]
                for b in schedule.result_blocks(rank)}
        problem = output_mismatch(plan.recvbuf, schedule.bounds, want, tolerance=tolerance)
        _agree_on_check(comm, f"composite/{name} at {where}", problem)
        timed.append((name, params, plan.run))
    return timed
