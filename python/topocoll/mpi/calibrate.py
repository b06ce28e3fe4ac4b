"""``topocoll calibrate``: measure this machine's cost parameters with MPI and
write the machine profile the simulator loads (:mod:`topocoll.sim.profile`).

    topocoll calibrate -o profile.json [--quick] [--reps N] [--seed S]
    topocoll simulate allreduce ring -P 8 --size 1M --profile profile.json

Run without ``mpiexec`` it relaunches itself as ``mpiexec -n 2 python -m
topocoll.mpi.calibrate ...`` with the ``mpiexec`` next to the Python
interpreter (the ``mpich`` wheel's); under ``mpiexec`` it needs exactly 2 ranks.

What is measured (medians over repetitions — the quietest of three blocks of
them, :func:`_median`; every timed loop is preceded by warm-up iterations; a
quantity both ranks time takes the slower rank):

- **α, β**: half round trips of a blocking ping-pong over a range of sizes,
  fitted by least squares to ``t(m) = α + m·β`` (relative residuals, so the
  8-byte and the 4-MiB points weigh alike; :func:`fit_alpha_beta`). The fit's
  root-mean-square relative residual is reported: it says how far the one-line
  α-β model is from this machine.
- **eager threshold**: a break of the ping-pong curve, where a two-segment fit
  with a jump up (the rendezvous handshake) explains the points much better
  than one line (:func:`find_break`); None when no break is visible.
- **streaming bandwidth**: a window of nonblocking sends of one large size,
  completed by a zero-byte acknowledgement.
- **LogGP** (Culler et al., "LogP: towards a realistic model of parallel
  computation", PPoPP 1993; Alexandrov et al., "LogGP", SPAA 1995), after the
  method of Netgauge (Hoefler, Lichei & Rehm, "Low-overhead LogGP parameter
  assessment for modern interconnection networks", IPDPS 2007): with
  ``PRTT(n, d, s)`` the time for ``n`` back-to-back sends of ``s`` bytes
  (delay ``d`` between them) answered by one message of ``s`` bytes,
  ``g + (s−1)·G = (PRTT(n, 0, s) − PRTT(1, 0, s)) / (n − 1)``, fitted over
  ``s`` for ``g`` and ``G``. The overheads are timed directly (Netgauge
  derives ``o_s`` from ``PRTT(n, d, s)`` with a delay ``d`` instead; here the
  call's own cost, Python included, is what the executor pays): ``o_s`` (and
  ``O``, per byte) is the time of an ``Isend`` call whose receive is already
  posted, ``o_r`` the time of a receive whose message has arrived (the
  receiver polls ``Iprobe`` until it has).
  ``L = t_pingpong(8 B) − o_s − o_r`` (LogP's round trip of a small message
  is ``2(o_s + L + o_r)``; ``PRTT(1, 0, 8)`` is that ping-pong).
- **the executor** (topocoll's :func:`topocoll.mpi.plan` over mpi4py):
  exchange rounds (both ranks send to each other at once, the Intel MPI
  Benchmarks' "Exchange"/``Sendrecv`` pattern, :func:`exchange_schedule`)
  of 8 B, 64 KiB and 1 MiB run as a schedule, 1 and 5 rounds per call:
  ``executor_alpha``/``executor_beta`` per round and ``executor_call`` per
  call. A ping-pong misses two things collectives pay for here: the
  executor's Python per operation, and both directions sharing the memory
  system (the engine's links are full duplex).
- **γ**: ``np.add(src, dst, out=dst)`` on float64 (bytes of one operand per
  second, the unit of the α-β-γ model's γ), the over kernel
  :func:`topocoll.imaging.over` on float32 RGBA, and a plain copy, each
  fitted as ``t(m) = c + m·γ`` over three sizes so the Python call cost ``c``
  does not leak into the slope. Both ranks run them at once, as ranks do in a
  collective.

All of it is timed from Python through mpi4py, so the overheads include
mpi4py's per-call cost: the profile describes what topocoll's executor sees,
not the bare MPI library.

**A cluster from its OSU results** (no MPI here)::

    topocoll calibrate --from-osu intra:lat.txt inter:lat.txt inter:bw.txt inter:mbw_mr.txt \
        p=64,ppn=32:allreduce.txt -o cluster.json

reads the text of the OSU Micro-Benchmarks (:mod:`topocoll.mpi.osu`) and
writes a profile with costs per level (:func:`profile_from_osu`): α, β from
``osu_latency`` (:func:`fit_alpha_beta`, eager threshold by
:func:`find_break`), streaming and both-ways bandwidth from ``osu_bw`` and
``osu_bibw``, message rate from ``osu_mbw_mr``. The inter-node level becomes
the profile's network parameters (the NIC's and the wire's, charged to
messages between hosts); on a ``SPEC+ppn=N`` network the intra-node level
prices messages within a host (the node's latency and copy bandwidth,
:meth:`~topocoll.sim.profile.MachineProfile.node_options`). γ is not
identifiable from OSU output and is kept (``--local PROFILE`` or the
simulator's default), said so in the summary; collective tables are kept in
the profile's meta for comparing predictions (docs/calibration.md).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform as host_platform
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import SpecError, TopocollError
from ..outputs import check_outputs, input_files, json_output, write_json
from ..sim.profile import LevelCosts, MachineProfile, load_profile, save_profile
from .bench_cli import run_launcher
from .osu import LEVELS, POINT_TO_POINT, OsuSpec, OsuTable, parse_spec, read_osu

__all__ = ["Fit", "fit_alpha_beta", "find_break", "calibrate", "exchange_schedule", "measure_pingpong",
           "measure_loggp", "measure_kernels", "measure_executor", "add_calibrate_parser", "main",
           "profile_from_osu", "OsuCalibration", "SIZES", "QUICK_SIZES"]

#: ping-pong sizes, bytes: 8 B to 4 MiB, about a factor 4 apart
SIZES = (8, 64, 512, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20)
#: --quick: enough points for a two-parameter fit
QUICK_SIZES = (8, 4096, 65536, 1 << 20)
#: sizes of the PRTT (g, G) and kernel (γ) fits, bytes
GAP_SIZES = (8, 4096, 65536)
EXECUTOR_SIZES = (8, 65536, 1 << 20)
KERNEL_SIZES = (16384, 262144, 1 << 20)
#: streaming: messages in flight and their size
STREAM_WINDOW, STREAM_BYTES = 16, 1 << 20
#: PRTT(n, ·, ·): back-to-back messages per measurement
PRTT_N = 16
#: how long the sender waits after the barrier before timing an Isend (the receive is posted by then), s
SETTLE = 50e-6
#: a two-segment fit must cut the squared residual by this factor to count as a break
BREAK_GAIN = 4.0
#: γ kept when OSU output is all there is and no --local profile is given:
#: the simulator's default reduce_bandwidth (sim/cli.py, B/s)
DEFAULT_REDUCE_BANDWIDTH = 4e9
#: at most this many warnings printed by --from-osu (the rest counted)
MAX_WARNINGS_SHOWN = 20
_CHILD_ENV = "TOPOCOLL_CALIBRATE_COMMAND"
_LAUNCHER_ENV = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


# ---- fits (pure) -------------------------------------------------------------

@dataclass(frozen=True)
class Fit:
    """``t(m) = alpha + m·beta`` and its root-mean-square relative residual."""

    alpha: float
    beta: float
    residual: float

    def __call__(self, m):
        return self.alpha + np.asarray(m, dtype=np.float64) * self.beta


def fit_alpha_beta(sizes, times, *, relative: bool = True) -> Fit:
    """Least-squares fit of ``t(m) = α + m·β``.

    Parameters
    ----------
    sizes : sequence of float
        Message sizes, bytes (at least two distinct).
    times : sequence of float
        Measured times, s, > 0 where ``relative``.
    relative : bool
        Minimise the relative residuals ``(α + mβ − t)/t`` (default): with
        sizes over six decades an absolute fit would ignore the small ones,
        which carry α.

    Returns
    -------
    Fit
        ``alpha`` and ``beta`` may come out negative on data no line
        explains; callers clamp where the model needs ``≥ 0``.

    Examples
    --------
    >>> f = fit_alpha_beta([8, 1024, 1 << 20], [2e-6 + 8e-10, 2e-6 + 1024e-10, 2e-6 + (1 << 20) * 1e-10])
    >>> round(f.alpha * 1e6, 9), round(1 / f.beta / 1e9, 9), f.residual < 1e-12
    (2.0, 10.0, True)
    """
    m = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if m.shape != t.shape or m.ndim != 1 or len(np.unique(m)) < 2:
        raise SpecError(f"fit_alpha_beta: {len(m)} sizes and {len(t)} times, expected two or more distinct "
                        "sizes with one time each")
    if relative and not np.all(t > 0):
        raise SpecError("fit_alpha_beta: a time <= 0, expected positive times for a relative fit")
    w = 1.0 / t if relative else np.ones_like(t)
    design = np.stack([w, m * w], axis=1)
    (alpha, beta), *_ = np.linalg.lstsq(design, t * w, rcond=None)
    err = (alpha + m * beta - t) / (t if relative else 1.0)
    return Fit(float(alpha), float(beta), float(np.sqrt(np.mean(err ** 2))))


def find_break(sizes, times) -> int | None:
    """The eager/rendezvous threshold a ping-pong curve shows, or None.

    Tries every split with at least two points on each side, fits a line to
    each side (:func:`fit_alpha_beta`), and keeps the split whose summed
    squared relative residual is lowest. It is a break when that is
    :data:`BREAK_GAIN` times lower than one line's and the curve jumps up
    there (the large side's line lies above the small side's at the split:
    the rendezvous handshake adds a round trip). Returns the largest size on
    the small (eager) side.

    Examples
    --------
    >>> sizes = [8, 64, 512, 4096, 32768, 65536, 262144, 1 << 20]
    >>> eager = [1e-6 + m * 1e-10 for m in sizes[:5]]
    >>> rendezvous = [4e-6 + m * 1e-10 for m in sizes[5:]]
    >>> find_break(sizes, eager + rendezvous)
    32768
    >>> find_break(sizes, [1e-6 + m * 1e-10 for m in sizes]) is None
    True
    """
    m = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    one = fit_alpha_beta(m, t)
    best, where = np.inf, None
    for k in range(2, len(m) - 1):
        lo, hi = fit_alpha_beta(m[:k], t[:k]), fit_alpha_beta(m[k:], t[k:])
        sse = lo.residual ** 2 * k + hi.residual ** 2 * (len(m) - k)
        if sse < best and hi(m[k - 1]) > lo(m[k - 1]) and hi(m[k]) > lo(m[k]):
            best, where = sse, k
    if where is None or best * BREAK_GAIN > one.residual ** 2 * len(m):
        return None
    return int(m[where - 1])


# ---- measurements (2 ranks) ----------------------------------------------------

def _median(samples, blocks: int = 3) -> float:
    """The smallest of the medians of ``blocks`` consecutive runs of samples.

    Another process taking a core for a while only ever adds time, so the
    quietest block's median is the estimate least disturbed by it (on a
    quiet machine the blocks agree and this is the median).
    """
    samples = np.asarray(samples, dtype=np.float64)
    if len(samples) < 3 * blocks:
        return float(np.median(samples))
    return float(min(np.median(part) for part in np.array_split(samples, blocks)))


def _slowest(comm, samples) -> np.ndarray:
    """Per repetition, the slowest rank's time (every rank gets them): the
    convention of the benchmarks this profile predicts (each repetition
    starts after a barrier; the collective ends when its last rank does)."""
    return np.max(np.array(comm.allgather(list(samples))), axis=0)


def _spin(seconds: float) -> None:
    """Busy-wait (a sleep would hand the core to the other rank and take ms to come back)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def pingpong(comm, sizes, reps: int, warmup: int) -> list[float]:
    """Median half round trip per size (rank 0's clock; rank 1 echoes)."""
    from mpi4py import MPI

    rank, out = comm.Get_rank(), []
    # the first exchanges of a job are slow (connections, page faults): one
    # untimed pass of the smallest size first
    for size in (sizes[0], *sizes):
        buf = np.zeros(size, np.uint8)
        spec, samples = [buf, MPI.BYTE], []
        comm.Barrier()
        for i in range(warmup + reps):
            start = time.perf_counter()
            if rank == 0:
                comm.Send(spec, 1, 1)
                comm.Recv(spec, 1, 1)
            else:
                comm.Recv(spec, 0, 1)
                comm.Send(spec, 0, 1)
            if i >= warmup:
                samples.append((time.perf_counter() - start) / 2)
        out.append(_median(samples))
    return comm.bcast(out[1:], root=0)


def prtt(comm, n: int, size: int, reps: int, warmup: int, *, delay: float = 0.0) -> float:
    """Netgauge's ``PRTT(n, d, s)``: rank 0 sends ``n`` messages of ``size``
    bytes (blocking, ``delay`` s apart), rank 1 answers the last with one;
    median on rank 0's clock."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    spec = [np.zeros(size, np.uint8), MPI.BYTE]
    samples = []
    comm.Barrier()
    for i in range(warmup + reps):
        start = time.perf_counter()
        if rank == 0:
            for j in range(n):
                comm.Send(spec, 1, 2)
                if delay and j < n - 1:
                    _spin(delay)
            comm.Recv(spec, 1, 2)
        else:
            for _ in range(n):
                comm.Recv(spec, 0, 2)
            comm.Send(spec, 0, 2)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return comm.bcast(_median(samples), root=0)


def send_overhead(comm, size: int, reps: int, warmup: int) -> float:
    """LogGP ``o_s``: the time of an ``Isend`` call whose receive is posted (rank 0)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    buf = np.zeros(size, np.uint8)
    samples = []
    for i in range(warmup + reps):
        if rank == 1:
            req = comm.Irecv([buf, MPI.BYTE], 0, 3)
            comm.Barrier()
            req.Wait()
            continue
        comm.Barrier()
        _spin(SETTLE)   # let rank 1's receive be posted and its barrier exit settle
        start = time.perf_counter()
        req = comm.Isend([buf, MPI.BYTE], 1, 3)
        elapsed = time.perf_counter() - start
        req.Wait()
        if i >= warmup:
            samples.append(elapsed)
    return comm.bcast(_median(samples) if rank == 0 else None, root=0)


def recv_overhead(comm, size: int, reps: int, warmup: int) -> float:
    """LogGP ``o_r``: the time of a receive (``Irecv`` + ``Wait``) whose
    message has arrived: rank 1 polls ``Iprobe`` until it is there (a fixed
    wait is not enough on a loaded 2-core machine: the sender may not have
    run yet)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    buf = np.zeros(size, np.uint8)
    samples = []
    for i in range(warmup + reps):
        comm.Barrier()
        if rank == 0:
            comm.Send([buf, MPI.BYTE], 1, 4)
            comm.Recv([buf[:0], MPI.BYTE], 1, 5)   # the next round starts after the receive
            continue
        while not comm.Iprobe(0, 4):
            pass
        start = time.perf_counter()
        comm.Irecv([buf, MPI.BYTE], 0, 4).Wait()
        elapsed = time.perf_counter() - start
        comm.Send([buf[:0], MPI.BYTE], 0, 5)
        if i >= warmup:
            samples.append(elapsed)
    return comm.bcast(_median(samples) if rank == 1 else None, root=1)


def streaming(comm, size: int, window: int, reps: int, warmup: int) -> float:
    """Bytes per second of ``window`` nonblocking sends in flight, closed by a
    zero-byte acknowledgement (its few µs are left in: negligible against the
    window's megabytes)."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    bufs = [np.zeros(size, np.uint8) for _ in range(window)]
    ack = [np.zeros(0, np.uint8), MPI.BYTE]
    samples = []
    comm.Barrier()
    for i in range(warmup + reps):
        start = time.perf_counter()
        if rank == 0:
            MPI.Request.Waitall([comm.Isend([b, MPI.BYTE], 1, 6) for b in bufs])
            comm.Recv(ack, 1, 7)
        else:
            MPI.Request.Waitall([comm.Irecv([b, MPI.BYTE], 0, 6) for b in bufs])
            comm.Send(ack, 0, 7)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return comm.bcast(window * size / _median(samples), root=0)


def kernel_times(comm, kernel: str, sizes, reps: int, warmup: int, rng) -> list[float]:
    """Median times of a local kernel at ``sizes`` bytes (of one operand),
    run on both ranks at once; the slower rank's (to fit ``t(m) = c + m·γ``)."""
    medians = []
    for size in sizes:
        call = _kernel(kernel, size, rng)
        samples = []
        comm.Barrier()
        for i in range(warmup + reps):
            start = time.perf_counter()
            call()
            if i >= warmup:
                samples.append(time.perf_counter() - start)
        medians.append(max(comm.allgather(_median(samples))))
    return medians


def _kernel(kernel: str, size: int, rng):
    """A no-argument call that runs ``kernel`` once on ``size`` bytes."""
    if kernel == "sum":
        src, dst = rng.random(size // 8), rng.random(size // 8)
        return lambda: np.add(src, dst, out=dst)
    if kernel == "over":
        from ..imaging import over

        pixels = size // 16
        front = (rng.random((pixels, 4)) * 0.5).astype(np.float32)
        back = rng.random((pixels, 4)).astype(np.float32)
        return lambda: over(front, back, out=back)
    if kernel == "copy":
        src, dst = rng.random(size // 8), np.empty(size // 8)
        return lambda: np.copyto(dst, src)
    raise SpecError(f"calibrate: kernel {kernel!r}, expected sum, over or copy")


def exchange_schedule(rounds: int, nbytes: int):
    """A 2-rank schedule of ``rounds`` exchanges of ``nbytes`` bytes: in each
    round both ranks send their own block to each other at once, each round
    waiting for the previous one's receive — the "Exchange"/``Sendrecv``
    pattern of the Intel MPI Benchmarks, and a round of a pairwise or
    dissemination collective without its reduction. Written in the IR (an
    allgather: the verifier checks it) so that the plan executor runs it like
    any collective. The first round receives into ``data``, later ones into
    scratch rows, as collectives receive what they then reduce."""
    from ..schedules.ir import Recv, Schedule, Send

    ops = [[], []]
    for rank, peer in ((0, 1), (1, 0)):
        for j in range(rounds):
            before = (2 * j - 1,) if j else ()
            into = "data" if j == 0 else "tmp"
            ops[rank] += [Send(peer, "data", (rank,), j, j, before), Recv(peer, into, (peer,), (peer,), j, j, before)]
    return Schedule.from_ops("allgather", ops, algorithm="exchange", count=2 * max(1, nbytes // 8), itemsize=8,
                             nblocks=2)


def executor_exchange(comm, sizes, reps: int, warmup: int, *, rounds: int = 5) -> tuple[list[float], list[float]]:
    """Seconds per exchange round of the plan executor
    (:func:`topocoll.mpi.plan`) at each of ``sizes`` bytes, and its cost per
    call (``start`` + ``wait``) there: ``t(k) = call + k·round`` from
    exchange schedules of 1 and ``rounds`` rounds (:func:`exchange_schedule`),
    the slowest rank per repetition, medians."""
    from .plan import plan

    per_round, calls = [], []
    for size in sizes:
        medians = []
        for k in (1, rounds):
            sched = exchange_schedule(k, size)
            x = np.zeros(sched.count)
            pl = plan(sched, x, np.empty_like(x), comm=comm)
            samples = []
            for i in range(warmup + reps):
                comm.Barrier()
                start = time.perf_counter()
                pl.run()
                if i >= warmup:
                    samples.append(time.perf_counter() - start)
            pl.free()
            medians.append(_median(_slowest(comm, samples)))
        per_round.append((medians[1] - medians[0]) / (rounds - 1))
        calls.append(medians[0] - per_round[-1])
    return per_round, calls


def _rate(sizes, times, where: str, notes: list) -> tuple[float, Fit]:
    """Bytes per second of ``times`` over ``sizes`` (1 / the fitted slope).

    On a loaded machine a few outliers can tilt the least-squares line to a
    slope <= 0; the slope between the smallest and the largest size is used
    then, and a note says so. A one-line SpecError if even that is not > 0.
    """
    fit = fit_alpha_beta(sizes, times)
    if fit.beta > 0:
        return 1.0 / fit.beta, fit
    slope = (times[-1] - times[0]) / (sizes[-1] - sizes[0])
    if not slope > 0:
        raise SpecError(f"calibrate: {where}: {times[-1]:.3g} s at {sizes[-1]} B is not slower than "
                        f"{times[0]:.3g} s at {sizes[0]} B, expected time to grow with size (is the machine "
                        "busy? see the load average)")
    notes.append(f"{where}: least-squares slope {fit.beta:.3g} s/B <= 0, used the end points' slope")
    return 1.0 / slope, Fit(times[0] - sizes[0] * slope, slope, fit.residual)


def calibrate(comm=None, *, quick: bool = False, reps: int | None = None, seed: int = 0,
              command: str = "") -> MachineProfile:
    """Measure the :class:`~topocoll.sim.profile.MachineProfile` of this
    machine on a 2-rank communicator (collective over ``comm``; every rank
    returns the same profile).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        Exactly 2 ranks (default ``MPI.COMM_WORLD``).
    quick : bool
        Few sizes and repetitions (about a second; for tests).
    reps : int, optional
        Timed repetitions per point (default 100, or 10 with ``quick``).
    seed : int
        Seed of the kernels' random operands (recorded).
    command : str
        The command line to record.
    """
    from mpi4py import MPI

    comm = MPI.COMM_WORLD if comm is None else comm
    if comm.Get_size() != 2:
        raise SpecError(f"calibrate: {comm.Get_size()} ranks, expected 2 (run `topocoll calibrate` without "
                        "mpiexec, or under `mpiexec -n 2`)")
    reps = reps or (10 if quick else 100)
    warmup = max(2, reps // 10)
    sizes = QUICK_SIZES if quick else SIZES
    rng = np.random.default_rng([seed, comm.Get_rank()])
    load, notes = os.getloadavg()[0], []
    pp = measure_pingpong(comm, sizes, reps, warmup, notes, find_eager=not quick)
    values = {**pp,
              **measure_loggp(comm, reps, warmup, notes, small_half_rtt=pp["pingpong"][0][1]),
              **measure_kernels(comm, max(5, reps // 4), rng, notes),
              **measure_executor(comm, EXECUTOR_SIZES, max(10, reps // 2), warmup, notes),
              "stream_bandwidth": streaming(comm, STREAM_BYTES, 4 if quick else STREAM_WINDOW, max(3, reps // 2), 1)}
    extra = {k: values.pop(k) for k in ("prtt_gaps", "kernel_call_overhead", "kernel_fit_residual",
                                        "executor_exchange")}
    meta = dict(library=" ".join(MPI.Get_library_version().splitlines()[0].split()),
                mpi4py=__import__("mpi4py").__version__, host=host_platform.node(),
                date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                procs=comm.Get_size(), cores=os.cpu_count(), load_average=round(load, 2), seed=seed,
                command=command, quick=quick, repetitions=reps, warmup=warmup, sizes=list(sizes),
                method="ping-pong least squares (relative); LogGP after Netgauge (Hoefler, Lichei & Rehm "
                       "2007): g, G from PRTT(n,0,s); o_s, o_r timed directly; L = t_pingpong(8 B) - o_s - o_r; "
                       "executor: IMB-style exchange rounds run by topocoll.mpi.plan; executor_exchange "
                       "rows are [bytes, s per round, s per call]",
                **extra, notes=notes)
    return MachineProfile(**values, meta=meta)


def measure_pingpong(comm, sizes, reps: int, warmup: int, notes: list, *, find_eager: bool = True) -> dict:
    """α, β, the fit's residual, the eager threshold and the raw points."""
    half_rtt = pingpong(comm, sizes, reps, warmup)
    bandwidth, fit = _rate(sizes, half_rtt, "ping-pong", notes)
    return dict(alpha=max(0.0, fit.alpha), beta=1.0 / bandwidth, fit_residual=fit.residual,
                eager=find_break(sizes, half_rtt) if find_eager else None,
                pingpong=[[int(s), t] for s, t in zip(sizes, half_rtt)])


def measure_loggp(comm, reps: int, warmup: int, notes: list, *, small_half_rtt: float) -> dict:
    """LogGP o_s, O, o_r, g, G, L after Netgauge (module docstring)."""
    gaps = [(prtt(comm, PRTT_N, s, reps, warmup) - prtt(comm, 1, s, reps, warmup)) / (PRTT_N - 1)
            for s in GAP_SIZES]
    gap_rate, gap_fit = _rate(GAP_SIZES, np.maximum(gaps, 1e-9), "PRTT gaps", notes)
    o_sizes = GAP_SIZES[:2]
    o_fit = fit_alpha_beta(o_sizes, [send_overhead(comm, s, reps, warmup) for s in o_sizes])
    o_send = max(0.0, o_fit(1).item())
    o_recv = recv_overhead(comm, GAP_SIZES[0], reps, warmup)
    # LogP: a small message's round trip is 2(o_s + L + o_r); the ping-pong's
    # smallest size is that round trip, measured with the most care
    latency = max(0.0, small_half_rtt - o_send - o_recv)
    return dict(o_send=o_send, o_recv=o_recv, o_per_byte=max(0.0, o_fit.beta), g=max(0.0, gap_fit.alpha),
                G=1.0 / gap_rate, L=latency, prtt_gaps=[[s, g] for s, g in zip(GAP_SIZES, gaps)])


def measure_executor(comm, sizes, reps: int, warmup: int, notes: list) -> dict:
    """The plan executor's own exchange rounds: ``t(m) = executor_alpha +
    m·executor_beta`` per round, and its cost per call."""
    rounds, calls = executor_exchange(comm, sizes, reps, warmup)
    bandwidth, fit = _rate(sizes, np.maximum(rounds, 1e-9), "executor exchange", notes)
    # the per-call cost is taken where messages are small; at larger sizes a
    # call's first exchange costs more than later ones (kept in the meta)
    return dict(executor_alpha=max(0.0, fit.alpha), executor_beta=1.0 / bandwidth, executor_call=max(0.0, calls[0]),
                executor_exchange=[[int(s), t, c] for s, t, c in zip(sizes, rounds, calls)])


def measure_kernels(comm, reps: int, rng, notes: list) -> dict:
    """γ of the reduction (np.add, float64), the over kernel and a copy, B/s."""
    rates, fits = {}, {}
    for kernel in ("sum", "over", "copy"):
        times = kernel_times(comm, kernel, KERNEL_SIZES, reps, 2, rng)
        rates[kernel], fits[kernel] = _rate(KERNEL_SIZES, times, f"{kernel} kernel", notes)
    return dict(reduce_bandwidth=rates["sum"], over_bandwidth=rates["over"], copy_bandwidth=rates["copy"],
                kernel_call_overhead={k: f.alpha for k, f in fits.items()},
                kernel_fit_residual={k: f.residual for k, f in fits.items()})


# ---- a cluster from its OSU results (pure) ------------------------------------------

@dataclass(frozen=True)
class OsuCalibration:
    """What :func:`profile_from_osu` made: the profile, the summary lines
    it prints, and the warnings (``file:line: ...``) of what it did not use."""

    profile: MachineProfile
    summary: list
    warnings: list


def profile_from_osu(specs, *, local: MachineProfile | None = None, local_path: str = "",
                     command: str = "") -> OsuCalibration:
    """A :class:`~topocoll.sim.profile.MachineProfile` with costs per level
    from OSU Micro-Benchmarks output files.

    Parameters
    ----------
    specs : sequence of str or OsuSpec
        ``LEVEL:FILE`` for the point-to-point benchmarks (``intra`` or
        ``inter``: OSU output does not say whether the two ranks shared a
        node), ``p=N[,ppn=N]:FILE`` for ``osu_allreduce`` / ``osu_alltoall``
        (:func:`topocoll.mpi.osu.parse_spec`). At most one file per
        benchmark and level.
    local : MachineProfile, optional
        A profile from ``topocoll calibrate`` on one of the cluster's nodes:
        its γ, copy and over throughputs are kept (OSU output has none).
    local_path : str
        Where ``local`` came from (recorded).
    command : str
        The command line to record.

    Notes
    -----
    Per level: ``osu_latency`` → α, β by :func:`fit_alpha_beta` over all
    its sizes (relative residuals), the eager threshold by
    :func:`find_break`; ``osu_bw`` → ``stream_bandwidth`` (its largest
    value: the plateau); ``osu_bibw`` → ``bidirectional_bandwidth``;
    ``osu_mbw_mr`` → ``message_rate`` (largest messages/s, all pairs),
    ``message_rate_bandwidth`` (largest MB/s).

    The top-level fields, which every model reads, are the ``inter``
    level's (``intra``'s when only it was measured, with a note): ``alpha``,
    ``beta``, ``stream_bandwidth``; for the event models ``G = 1 /
    stream_bandwidth`` (``β`` when there is no ``osu_bw``), ``g`` = pairs /
    message rate (one pair's gap between messages), ``L = α`` and
    ``o_send = o_recv = 0`` (OSU does not split a message's latency into
    overheads and wire: with these the engine charges a small message
    exactly α, :meth:`MachineProfile.loggops`).

    γ is not identifiable from OSU output: an allreduce's time mixes it with
    the library's algorithm (unknown: it changes with size) and with the
    ranks sharing each NIC and memory system. It is kept — ``local``'s, or
    :data:`DEFAULT_REDUCE_BANDWIDTH` — and the summary says which.

    Raises
    ------
    SpecError
        One line: a file's problem (``file:line``, :mod:`topocoll.mpi.osu`),
        a point-to-point file without its level, a collective without ``p``,
        two files for one benchmark and level, or no ``osu_latency`` at all.
    """
    tables: dict[tuple[str, str], OsuTable] = {}
    collectives, warnings, files = [], [], []
    for spec in specs:
        spec = parse_spec(spec) if isinstance(spec, str) else spec
        if _is_imb_file(spec.path):
            _add_imb(spec, tables, files, warnings)
            continue
        table = read_osu(spec.path)
        warnings += table.warnings
        _check_qualifiers(spec, table)
        files.append(dict(path=spec.path, benchmark=f"osu_{table.benchmark}", title=table.title,
                          level=spec.level, p=spec.p, ppn=spec.ppn, rows=len(table.sizes)))
        if table.benchmark in POINT_TO_POINT:
            _keep_table(tables, spec.level, table)
        else:
            collectives.append(dict(benchmark=f"osu_{table.benchmark}", path=spec.path, p=spec.p, ppn=spec.ppn,
                                    points=table.points()))
    levels, lines, notes = {}, [], []
    for level in LEVELS:
        if any(key[0] == level for key in tables):
            levels[level] = _level_costs(level, tables, notes)
    network = "inter" if levels.get("inter", LevelCosts()).beta else "intra" if levels.get("intra", LevelCosts()).beta \
        else None
    if network is None:
        raise SpecError("--from-osu: no osu_latency file, expected at least one (intra:FILE or inter:FILE): "
                        "α and β come from its ping-pong times")
    if network == "intra":
        notes.append("no inter-node osu_latency: the network parameters are the intra-node level's")
    net = levels[network]
    if local is not None:
        gamma_from = f"kept from --local {local_path}: 1/({local.reduce_bandwidth / 1e9:.3g} GB/s)"
    else:
        gamma_from = (f"kept the simulator's default 1/({DEFAULT_REDUCE_BANDWIDTH / 1e9:.3g} GB/s) (give --local "
                      "PROFILE from `topocoll calibrate` on a compute node for its own)")
    gamma_line = ("not identifiable from OSU output (an allreduce's time mixes γ with the library's algorithm and "
                  "with the ranks sharing each NIC and memory system); " + gamma_from)
    rate_pairs = net.message_rate_pairs
    profile = MachineProfile(
        alpha=net.alpha, beta=net.beta, fit_residual=net.fit_residual,
        reduce_bandwidth=local.reduce_bandwidth if local is not None else DEFAULT_REDUCE_BANDWIDTH,
        stream_bandwidth=net.stream_bandwidth,
        over_bandwidth=local.over_bandwidth if local is not None else 0.0,
        copy_bandwidth=local.copy_bandwidth if local is not None else 0.0,
        G=1.0 / net.stream_bandwidth if net.stream_bandwidth else 0.0,
        g=rate_pairs / net.message_rate if net.message_rate else 0.0,
        L=net.alpha, eager=net.eager, pingpong=net.pingpong, levels=levels,
        meta=dict(source="osu", network_level=network, files=files, collectives=collectives,
                  gamma=gamma_line, local_profile=local_path or None, command=command,
                  date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                  method="OSU Micro-Benchmarks output: alpha, beta least squares (relative) on osu_latency; "
                         "streaming bandwidth = max of osu_bw; message rate = max of osu_mbw_mr; network "
                         "parameters = the network_level's; L = alpha, o_send = o_recv = 0, G = 1/stream, "
                         "g = pairs/message rate",
                  notes=notes))
    lines.append(f"calibrate: {len(files)} OSU files ({', '.join(sorted({f['benchmark'] for f in files}))}); "
                 f"network parameters from the {network}-node level")
    for level in LEVELS:
        if level in levels:
            lines.append(f"{level + '-node':<10} {levels[level].describe()}"
                         + (f", fit residual {levels[level].fit_residual * 100:.1f} % (RMS, relative)"
                            if levels[level].beta else ""))
    eager = f"{net.eager} B (break of the {network}-node ping-pong curve)" if net.eager is not None \
        else "no break visible"
    lines.append(f"eager      {eager}")
    lines.append(f"γ          {gamma_line}")
    if "intra" in levels and levels["intra"].beta:
        lines.append("intra-node level: on SPEC+ppn=N networks the node's shared-memory latency and copy "
                     "bandwidth (where the spec leaves them out)")
    for c in collectives:
        lines.append(f"kept       {c['benchmark']} on {c['p']} ranks" + (f", {c['ppn']} per node" if c["ppn"] else "")
                     + f" ({len(c['points'])} sizes) in the profile's meta, to compare predictions with")
    lines += [f"note       {n}" for n in notes]
    return OsuCalibration(profile, lines, warnings)


def _keep_table(tables: dict, level: str, table: OsuTable) -> None:
    """``tables[(level, benchmark)] = table``, refusing a second table of one benchmark at one level (an OSU
    file or an IMB block: ``table.path`` names which)."""
    key = (level, table.benchmark)
    if key in tables:
        raise SpecError(f"--from-osu: two osu_{table.benchmark} files for level {level} ({tables[key].path}, "
                        f"{table.path}), expected at most one")
    tables[key] = table


def _is_imb_file(path) -> bool:
    """Whether ``path`` starts like IMB-MPI1 output (unreadable files go on to :func:`read_osu`, which
    says why in one line)."""
    from .imb import is_imb
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return is_imb(head.decode("utf-8", errors="replace"))


def _add_imb(spec: OsuSpec, tables: dict, files: list, warnings: list) -> None:
    """An IMB-MPI1 file (``LEVEL,ppn=K:FILE``): its blocks whose pairs ran at ``LEVEL`` as the OSU tables
    they correspond to (:mod:`topocoll.mpi.imb`)."""
    from .imb import imb_tables, read_imb
    if spec.level is None or spec.ppn is None or spec.p is not None:
        raise SpecError(f"--from-osu {spec.path}: IMB output, expected intra,ppn=K:{spec.path} or "
                        f"inter,ppn=K:{spec.path} (which pairs to read, and the job's ranks per node: IMB's "
                        "output says neither)")
    blocks, read_warnings = read_imb(spec.path)
    warnings += read_warnings
    made = imb_tables(blocks, spec.level, spec.ppn, warnings)
    if not made:
        raise SpecError(f"--from-osu {spec.path}: no PingPong, Uniband or Biband block of this file has its pairs "
                        f"{spec.level}-node with ppn={spec.ppn} (block placement), expected at least one")
    for kind, table in made.items():
        _keep_table(tables, spec.level, table)
        files.append(dict(path=table.path, benchmark=f"osu_{kind}", title=table.title, level=spec.level, p=None,
                          ppn=spec.ppn, rows=len(table.sizes)))


def _check_qualifiers(spec: OsuSpec, table: OsuTable) -> None:
    """A point-to-point file needs its level and takes no p; a collective the reverse."""
    if table.benchmark in POINT_TO_POINT:
        if spec.level is None:
            raise SpecError(f"--from-osu {spec.path}: osu_{table.benchmark} output without a level, expected "
                            f"intra:{spec.path} or inter:{spec.path} (OSU output does not say whether both "
                            "ranks shared a node)")
        if spec.p is not None or spec.ppn is not None:
            raise SpecError(f"--from-osu {spec.path}: p/ppn for osu_{table.benchmark} output, expected them only "
                            "for osu_allreduce / osu_alltoall / osu_allgather")
        return
    if spec.level is not None:
        raise SpecError(f"--from-osu {spec.path}: level {spec.level} for osu_{table.benchmark} output, expected "
                        f"p=N[,ppn=N]:{spec.path} (how many ranks ran it)")
    if spec.p is None:
        raise SpecError(f"--from-osu {spec.path}: osu_{table.benchmark} output without p, expected "
                        f"p=N[,ppn=N]:{spec.path} (OSU output does not say how many ranks ran it)")


def _level_costs(level: str, tables: dict, notes: list) -> LevelCosts:
    """One level's :class:`LevelCosts` from its OSU tables."""
    values: dict = {"source": [t.path for (lv, _), t in sorted(tables.items()) if lv == level]}
    lat = tables.get((level, "latency"))
    if lat is not None:
        if len(lat.sizes) < 2:
            raise SpecError(f"{lat.path}: {len(lat.sizes)} row, expected at least two sizes to fit α and β")
        fit = fit_alpha_beta(lat.sizes, lat.values)
        if not fit.beta > 0:
            # as _rate does for this machine's ping-pong: the end points' slope, said in a note
            sizes, times = lat.sizes.astype(float), lat.values
            slope = (times[-1] - times[0]) / (sizes[-1] - sizes[0])
            if not slope > 0:
                raise SpecError(f"{lat.path}: {times[-1] * 1e6:.3g} µs at {lat.sizes[-1]} B is not slower than "
                                f"{times[0] * 1e6:.3g} µs at {lat.sizes[0]} B, expected osu_latency times that grow "
                                "with the message size")
            notes.append(f"{lat.path}: least-squares slope {fit.beta:.3g} s/B <= 0, used the end points' slope")
            fit = Fit(times[0] - sizes[0] * slope, slope, fit.residual)
        values.update(alpha=max(0.0, fit.alpha), beta=fit.beta, fit_residual=fit.residual,
                      eager=find_break(lat.sizes, lat.values), pingpong=lat.points())
    if (bw := tables.get((level, "bw"))) is not None:
        values["stream_bandwidth"] = float(bw.values.max())
    if (bibw := tables.get((level, "bibw"))) is not None:
        values["bidirectional_bandwidth"] = float(bibw.values.max())
    if (mr := tables.get((level, "mbw_mr"))) is not None:
        if mr.rates is None or mr.pairs is None:
            raise SpecError(f"{mr.path}: osu_mbw_mr output without "
                            + ("a Messages/s column" if mr.rates is None else "'# [ pairs: N ] [ window size: W ]'")
                            + ", expected both (OSU prints them unless run with -r=0)")
        values.update(message_rate=float(mr.rates.max()), message_rate_pairs=int(mr.pairs),
                      message_rate_bandwidth=float(mr.values.max()))
    return LevelCosts(**values)


# ---- command line ------------------------------------------------------------------

def _under_launcher() -> bool:
    """True when a process manager (mpiexec, srun) started us: its environment
    says so before MPI is initialised, so the relaunching parent never
    initialises MPI itself."""
    return any(name in os.environ for name in _LAUNCHER_ENV)


def _mpiexec() -> str:
    """The ``mpiexec`` next to this Python (the mpich wheel's), else on PATH."""
    here = Path(sys.executable).parent
    found = shutil.which("mpiexec", path=str(here)) or shutil.which("mpiexec")
    if found is None:
        raise SpecError(f"calibrate: no mpiexec in {here} or on PATH, expected the mpich wheel "
                        "(`make` installs it into .venv)")
    return found


def _child_argv(args) -> list[str]:
    argv = ["-o", str(args.output), "--seed", str(args.seed)] + ([f"--json={args.json}"] if args.json else [])
    if args.quick:
        argv.append("--quick")
    if args.reps:
        argv += ["--reps", str(args.reps)]
    return argv


def _relaunch(args) -> int:
    """``mpiexec -n 2 python -m topocoll.mpi.calibrate ...``; its exit status."""
    command = [_mpiexec(), "-n", "2", sys.executable, "-m", "topocoll.mpi.calibrate", *_child_argv(args)]
    env = dict(os.environ, **{_CHILD_ENV: args.command or "topocoll calibrate " + shlex.join(_child_argv(args))})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return run_launcher(command, env=env)      # own session; Ctrl-C ends it and both ranks


def cmd_calibrate(args) -> int:
    """The verb: relaunch under mpiexec, or measure, print and write (or,
    with ``--from-osu``, read OSU results: :func:`cmd_from_osu`; with
    ``--spec``, print the network that goes with a profile: :func:`cmd_spec`;
    with ``--check``, compare a profile's kept collectives with predictions:
    :mod:`topocoll.mpi.osu_check`)."""
    from .osu_check import cmd_check, refuse_check_options
    if getattr(args, "check_profile", None) is not None:
        if getattr(args, "spec_profile", None) is not None:
            raise SpecError("--check with --spec, expected one of them")
        return cmd_check(args)
    refuse_check_options(args)
    if getattr(args, "spec_profile", None) is not None:
        return cmd_spec(args)
    spec_only = [flag for flag, dest in _SPEC_ONLY if getattr(args, dest, None) is not None]
    if spec_only and not getattr(args, "from_osu", None):
        raise SpecError(f"{spec_only[0]} without --spec or --from-osu, expected it only with --spec PROFILE or "
                        "--from-osu FILES (the network written with the profile)")
    if getattr(args, "output", None) is None:
        raise SpecError("calibrate needs -o FILE (where to write the profile), or --spec PROFILE, or --check PROFILE")
    if getattr(args, "from_osu", None):
        return cmd_from_osu(args)
    if getattr(args, "local", None):
        raise SpecError("--local without --from-osu, expected --local only with --from-osu (measuring here "
                        "takes this machine's own γ)")
    if args.seed is None:
        args.seed = 0
    args.command = os.environ.get(_CHILD_ENV) or getattr(args, "command", None) or \
        "topocoll calibrate " + shlex.join(_child_argv(args))
    _check_writable(args)
    if not _under_launcher():
        return _relaunch(args)
    from mpi4py import MPI

    profile = calibrate(MPI.COMM_WORLD, quick=args.quick, reps=args.reps, seed=args.seed, command=args.command)
    if MPI.COMM_WORLD.Get_rank() == 0:
        save_profile(profile, args.output)
        if not write_json(args, profile.as_dict()):
            print(_summary(profile))
        print(f"wrote {args.output}", flush=True, file=sys.stderr if args.json == "-" else sys.stdout)
    return 0


#: the options of ``calibrate --spec`` alone: flag, argparse dest
_SPEC_ONLY = (("--nodes", "spec_nodes"), ("--ppn", "spec_ppn"), ("--topology", "topology"), ("--mem", "spec_mem"),
              ("--dist", "spec_dist"))


def cmd_spec(args) -> int:
    """``calibrate --spec PROFILE``: the ``SPEC+ppn=K`` network for ``--topology`` beside
    ``--profile PROFILE`` (:meth:`MachineProfile.network_spec`), printed (``--json``: with its values)."""
    given = [flag for flag, on in (("-o", args.output), ("--from-osu", args.from_osu), ("--local", args.local),
                                   ("--quick", args.quick), ("--reps", args.reps),
                                   ("--seed", args.seed is not None)) if on]
    if given:
        raise SpecError(f"{given[0]} with --spec, expected --spec PROFILE [--nodes N] [--ppn K] [--topology SPEC] "
                        "[--mem BW] [--dist block|cyclic] [--json [FILE]] (it measures and writes no profile)")
    if args.spec_nodes is not None and args.topology is not None:
        raise SpecError(f"--nodes {args.spec_nodes} with --topology {args.topology}, expected one of them (the "
                        "topology's endpoints are the nodes)")
    check_outputs(json_output(args), input_files(args) + [("--spec", args.spec_profile)], stdout=("--json",))
    profile = load_profile(args.spec_profile)
    result, why = _network_of(profile, args)
    if write_json(args, {"profile": args.spec_profile, **result.as_dict()}):
        return 0
    print(result.spec)
    print(f"# for --topology beside --profile {args.spec_profile}{why}: links at the NIC's "
          f"{result.nic_bandwidth / 1e9:.3g} GB/s and no latency of their own (the profile's L holds it)",
          file=sys.stderr)
    for note in result.notes:
        print(f"# note: {note}", file=sys.stderr)
    return 0


def _network_of(profile: MachineProfile, args):
    """The ``SPEC+ppn=K`` network of ``profile`` for the ``--nodes/--ppn/--topology/--mem/--dist`` options
    (:meth:`MachineProfile.network_spec`; nodes and ranks per node default to the profile's stored
    collectives when it has one layout), and the words saying where the layout came from."""
    from ..topology.network import parse_bandwidth
    nodes, ppn, why = args.spec_nodes, args.spec_ppn, ""
    stored = {(c.get("p"), c.get("ppn")) for c in profile.meta.get("collectives", [])}
    if len(stored) == 1 and None not in next(iter(stored)) and nodes is None and ppn is None and \
            args.topology is None:
        p, ppn = next(iter(stored))
        nodes, why = -(-p // ppn), f" (the profile's stored collectives: {p} ranks, {ppn} per node)"
    try:
        memory = None if args.spec_mem is None else parse_bandwidth(args.spec_mem)
    except SpecError as exc:
        raise SpecError(f"--mem {args.spec_mem!r}: {exc}") from None
    result = profile.network_spec(topology=args.topology, nodes=nodes or 2, ppn=ppn or 1,
                                  memory_bandwidth=memory, distribution=args.spec_dist or "block")
    return result, why


def cmd_from_osu(args) -> int:
    """``calibrate --from-osu``: read, fit, print, write; warnings on stderr
    (at most :data:`MAX_WARNINGS_SHOWN`, the rest counted)."""
    given = [flag for flag, on in (("--quick", args.quick), ("--reps", args.reps),
                                                  ("--seed", args.seed is not None)) if on]
    if given:
        raise SpecError(f"{given[0]} with --from-osu, expected it only when measuring this machine (OSU results "
                        "are read, not measured)")
    _check_writable(args)
    command = "topocoll calibrate " + shlex.join(["--from-osu", *args.from_osu, "-o", str(args.output)]
                                                 + (["--local", args.local] if args.local else []))
    local = load_profile(args.local) if args.local else None
    result = profile_from_osu(args.from_osu, local=local, local_path=args.local or "", command=command)
    # the +ppn network written with the profile (what `calibrate --spec` prints for it), so the two travel together
    network, why = _network_of(result.profile, args)
    meta = dict(result.profile.meta, network={**network.as_dict(), "layout": why.strip(" ()") or "the defaults"})
    result = replace(result, profile=replace(result.profile, meta=meta),
                     summary=result.summary + [f"network    {network.spec}{why}"]
                     + [f"note       {n}" for n in network.notes])
    for warning in result.warnings[:MAX_WARNINGS_SHOWN]:
        print(f"topocoll: warning: {warning}", file=sys.stderr)
    if len(result.warnings) > MAX_WARNINGS_SHOWN:
        print(f"topocoll: warning: … and {len(result.warnings) - MAX_WARNINGS_SHOWN} more", file=sys.stderr)
    save_profile(result.profile, args.output)
    if not write_json(args, result.profile.as_dict()):
        print("\n".join(result.summary))
    print(f"wrote {args.output}", flush=True, file=sys.stderr if args.json == "-" else sys.stdout)
    return 0


def _check_writable(args) -> None:
    """Refuse an unwritable -o, or one that is an input (an OSU file, --local), before any work (one
    line; :func:`topocoll.outputs.check_outputs`)."""
    inputs = input_files(args)
    for text in getattr(args, "from_osu", None) or ():
        spec = parse_spec(text)
        inputs.append((f"--from-osu {text}", spec.path))
    check_outputs([("-o", args.output), *json_output(args)], inputs, stdout=("--json",))


def _summary(p: MachineProfile) -> str:
    m = p.meta
    eager = f"{p.eager} B (break of the ping-pong curve)" if p.eager is not None else "no break visible"
    return "\n".join([
        f"calibrate: {m['procs']} ranks on {m['host']} ({m['cores']} cores), {m['library']}; "
        f"{len(m['sizes'])} sizes × {m['repetitions']} repetitions, medians",
        f"ping-pong  α = {p.alpha * 1e6:.3f} µs, β = 1/({1 / p.beta / 1e9:.3g} GB/s), "
        f"fit residual {p.fit_residual * 100:.1f} % (RMS, relative)",
        f"streaming  {p.stream_bandwidth / 1e9:.3g} GB/s",
        f"LogGP      o_s = {p.o_send * 1e6:.3f} µs (+ {p.o_per_byte * 1e12:.3g} ps/B), "
        f"o_r = {p.o_recv * 1e6:.3f} µs, g = {p.g * 1e6:.3f} µs, "
        f"G = 1/({(1 / p.G / 1e9) if p.G else float('inf'):.3g} GB/s), L = {p.L * 1e6:.3f} µs",
        f"executor   {p.executor_alpha * 1e6:.3f} µs + m/({1 / p.executor_beta / 1e9:.3g} GB/s) per exchange "
        f"round, {p.executor_call * 1e6:.3f} µs per call (topocoll.mpi.plan)",
        f"γ          sum float64 {p.reduce_bandwidth / 1e9:.3g} GB/s, over float32 RGBA "
        f"{p.over_bandwidth / 1e9:.3g} GB/s, copy {p.copy_bandwidth / 1e9:.3g} GB/s",
        f"eager      {eager}",
    ] + [f"note       {n}" for n in m.get("notes", [])] + _load_warning(m))


def _load_warning(meta: dict) -> list[str]:
    """A line when other processes were competing for the cores."""
    load, cores = meta.get("load_average", 0.0), meta.get("cores") or 1
    if load <= 0.5 * cores:
        return []
    return [f"warning    load average {load:g} on {cores} cores when calibration began: other processes compete "
            "for the CPUs and the numbers are noisy; calibrate on a quiet machine"]


def _add_arguments(p) -> None:
    from ..argtypes import positive_int, seed

    from ..argtypes import bounded_int
    from ..outputs import add_json_argument
    from ..topology.nodes import DISTRIBUTIONS, MAX_PPN

    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the profile (JSON); required unless --spec or --check")
    p.add_argument("--quick", action="store_true",
                   help="few sizes and repetitions (about a second; for tests, not for predictions)")
    p.add_argument("--reps", type=positive_int, default=None,
                   help="timed repetitions per point (default 100; 10 with --quick)")
    p.add_argument("--seed", type=seed, default=None, help="seed of the kernels' random operands (default 0)")
    p.add_argument("--from-osu", nargs="+", metavar="SPEC",
                   help="instead of measuring, read OSU Micro-Benchmarks output: LEVEL:FILE for osu_latency, "
                        "osu_bw, osu_bibw, osu_mbw_mr (LEVEL intra or inter: where the two ranks ran), "
                        "p=N[,ppn=N]:FILE for osu_allreduce, osu_alltoall (docs/calibration.md)")
    p.add_argument("--local", metavar="PROFILE",
                   help="with --from-osu: a profile from `topocoll calibrate` on a compute node, whose γ, copy "
                        "and over throughputs are kept (OSU output has none)")
    g = p.add_argument_group("the network of a profile (--spec prints it; --from-osu stores it)")
    g.add_argument("--spec", dest="spec_profile", metavar="PROFILE",
                   help="print the SPEC+ppn=K network to give --topology beside --profile PROFILE: links at the "
                        "NIC's bandwidth with no latency of their own, the node's lat and bw from the intra-node "
                        "level (docs/calibration.md)")
    g.add_argument("--nodes", dest="spec_nodes", type=bounded_int(1, 1 << 20, what="nodes"), default=None,
                   metavar="N", help="nodes of the default fabric crossbar:N (default: the profile's stored "
                                     "collectives' ranks / ppn, else 2)")
    g.add_argument("--ppn", dest="spec_ppn", type=bounded_int(1, MAX_PPN, what="ranks per node"), default=None,
                   metavar="K", help="ranks per node (default: the profile's stored collectives', else 1)")
    g.add_argument("--topology", metavar="SPEC",
                   help="the fabric instead of crossbar:N (kary:12,2, torus:8x8x8, ...; its own @ options win)")
    g.add_argument("--mem", dest="spec_mem", default=None, metavar="BW",
                   help="the node's memory bandwidth, mem= (e.g. 80GB/s: STREAM; not in OSU output; default the "
                        "node's)")
    g.add_argument("--dist", dest="spec_dist", choices=DISTRIBUTIONS, default=None,
                   help="rank placement, dist= (default block)")
    add_json_argument(p, "the result (the profile written to -o; with --spec the network and its values)")
    from .osu_check import add_check_arguments   # --check PROFILE (topocoll.mpi.osu_check)
    add_check_arguments(p)


def add_calibrate_parser(sub) -> None:
    """Register ``topocoll calibrate`` on the CLI's subparsers."""
    p = sub.add_parser(
        "calibrate", help="measure α, β, γ and LogGP parameters with MPI (or read OSU results) and write a machine profile",
        description="Measure this machine with MPI on 2 ranks (ping-pong α-β fit, streaming bandwidth, "
                    "LogGP o, g, G, L after Netgauge, γ of the reduction and over kernels) and write a JSON "
                    "profile for `topocoll simulate --profile FILE`. Without mpiexec it relaunches itself "
                    "under `mpiexec -n 2`. With --from-osu it measures nothing: it reads a cluster's OSU "
                    "Micro-Benchmarks results and writes a profile with intra- and inter-node levels "
                    "(docs/calibration.md). With --spec PROFILE it prints the SPEC+ppn=K network to give "
                    "--topology beside --profile PROFILE in simulate, compare and tune.")
    _add_arguments(p)
    p.set_defaults(func=cmd_calibrate)


class _Parser(argparse.ArgumentParser):
    """argparse with the project's one-line errors (a SpecError, like the CLI's)."""

    def error(self, message):
        raise SpecError(message.replace("\n", " "))


def main(argv=None) -> int:
    """``python -m topocoll.mpi.calibrate`` (what the relaunch runs under
    mpiexec; without mpiexec it relaunches itself, like ``topocoll calibrate``)."""
    parser = _Parser(prog="python -m topocoll.mpi.calibrate", description=__doc__.splitlines()[0])
    _add_arguments(parser)
    return cmd_calibrate(parser.parse_args(argv))


if __name__ == "__main__":
    if _under_launcher():
        from .abort import run_or_abort

        sys.exit(run_or_abort(main))
    try:
        sys.exit(main())
    except TopocollError as exc:
        print(f"topocoll: error: {exc}", file=sys.stderr)
        sys.exit(2)
