"""The network-noise benchmark over real MPI (network-noise paper §2, Netgauge).

Hoefler, Schneider & Lumsdaine measure how much background traffic slows a
collective down with a benchmark they built into Netgauge (§2, Fig. 2):

1. every repetition splits ``MPI_COMM_WORLD`` *at random* into an
   application communicator and a perturbation communicator (a new random
   split per repetition; the share of perturbation ranks is the
   *perturbation ratio*);
2. both communicators are warmed up, then a global synchronisation;
3. the perturbation ranks exchange large messages with random peers while
   the application ranks time the collective;
4. the collective is timed again without the perturbing traffic;
5. the slowdown (perturbed over clean time) of many repetitions is analysed
   statistically: notched box plots (§2.1, Fig. 3).

:func:`noise_benchmark` does this for one collective, algorithm and message
size, with a topocoll schedule run by :func:`topocoll.mpi.plan` or with the
MPI library's own collective (``algorithm="mpi"``);
:func:`run_from_args` is ``topocoll bench --perturb RATIO``.

Run under ``mpiexec``; every function that takes ``comm`` is collective over
it. The random choices (the split, the perturbers' peers) come from the seed
alone, so every rank draws the same ones without communicating and a run can
be repeated.
"""

from __future__ import annotations

import csv
import json
import math
import numbers
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import SpecError, TopocollError
from ..outputs import atomic, check_outputs, write_text
from ..text import human_bytes as _bytes

__all__ = ["DEFAULT_ALGORITHM", "DEFAULT_ITERATIONS", "DEFAULT_REPETITIONS", "LIBRARY", "NoiseResult", "NoiseSample",
           "exchange_partners", "noise_benchmark", "perturber_count", "run_from_args", "slowdown_summary",
           "split_roles", "write_csv", "write_json"]

#: the name that selects the MPI library's own collective instead of a schedule
LIBRARY = "mpi"
#: the topocoll algorithm timed beside the library's collective when none is named:
#: one per collective that exists for every P (the application communicator's
#: size changes from repetition to repetition); the binomial tree is the
#: paper's own small-message pattern (§3, Fig. 6)
DEFAULT_ALGORITHM = {
    "allreduce": "binomial", "reduce": "binomial", "bcast": "binomial", "barrier": "dissemination",
    "alltoall": "shift", "allgather": "ring", "reduce_scatter": "ring",
}
#: timed runs of the collective per phase and repetition (after one warm-up run)
DEFAULT_ITERATIONS = 10
#: random splits when the command line names none (the paper ran 128 per point, §2.1)
DEFAULT_REPETITIONS = 30
_TAG = 7                       # perturbation messages, on their own communicator


# ---- the random choices (pure: no MPI) --------------------------------------

def perturber_count(p: int, ratio: float) -> int:
    """How many of ``p`` ranks perturb at perturbation ratio ``ratio``.

    ``round(ratio · p)``, but at least 2 when ``ratio > 0`` (one perturbation
    rank has no peer to exchange with; as the simulator's
    :class:`~topocoll.sim.engine.NetworkNoise`) and at most ``p − 1`` (the
    application keeps a rank); 0 when ``ratio == 0``.

    Examples
    --------
    >>> [perturber_count(8, r) for r in (0.0, 0.1, 0.5, 0.9)]
    [0, 2, 4, 7]
    >>> perturber_count(2, 0.5)           # one application rank and one (idle) perturber
    1
    """
    if ratio <= 0:
        return 0
    return max(0, min(p - 1, max(2, int(math.floor(ratio * p + 0.5)))))


def split_roles(p: int, ratio: float, seed: int, repetition: int) -> np.ndarray:
    """Which ranks perturb in repetition ``repetition``: a random subset.

    Every rank calls this with the same arguments and gets the same answer:
    the split of the network-noise paper §2 ("the selection of
    MPI_COMM_WORLD ranks for each communicator is completely randomized"),
    drawn from ``numpy.random.default_rng([seed, repetition])``.

    Returns
    -------
    ndarray of bool, shape (p,)
        ``True`` for the :func:`perturber_count` perturbation ranks.

    Examples
    --------
    >>> split_roles(6, 0.5, seed=1, repetition=0).astype(int).tolist()
    [1, 0, 1, 0, 1, 0]
    >>> split_roles(6, 0.0, seed=1, repetition=0).any()
    np.False_
    """
    mask = np.zeros(p, dtype=bool)
    k = perturber_count(p, ratio)
    if k:
        mask[np.random.default_rng([seed, repetition]).permutation(p)[:k]] = True
    return mask


def exchange_partners(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One step of the perturbation pattern among ``n`` perturbation ranks.

    A random permutation: rank ``i`` sends to ``dst[i]`` and receives from
    ``src[i]``, so every send has exactly one matching receive (the paper's
    random pattern, §3: "each process picks a random peer to send data to,
    so that each process is receiving from exactly one peer"). A rank the
    permutation maps to itself sits the step out.

    Examples
    --------
    >>> dst, src = exchange_partners(5, np.random.default_rng(3))
    >>> sorted(dst.tolist()) == list(range(5)) and all(src[dst[i]] == i for i in range(5))
    True
    """
    dst = rng.permutation(n)
    src = np.empty_like(dst)
    src[dst] = np.arange(n)
    return dst, src


# ---- results ----------------------------------------------------------------

def slowdown_summary(values) -> dict | None:
    """Median, quartiles, notch, mean, minimum and maximum of ``values``.

    The statistics of :class:`topocoll.sim.noise.NoiseRuns` (quartiles by
    linear interpolation, notch ``median ± 1.57·IQR/√n``), so a measured
    and a simulated slowdown are summarised alike; ``None`` for no values.

    Examples
    --------
    >>> s = slowdown_summary([1.0, 1.5, 2.0, 4.0])
    >>> s["median"], s["q1"], s["q3"], s["n"]
    (1.75, 1.375, 2.5, 4)
    """
    from ..sim.noise import NoiseRuns

    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        return None
    runs = NoiseRuns(clean=1.0, times=v, seeds=(), model="mpi", ratio=0.0)   # clean 1: times are slowdowns
    q1, q3 = runs.quartiles
    lo, hi = runs.notch
    return {"n": int(v.size), "median": runs.median, "q1": q1, "q3": q3, "notch": [float(lo), float(hi)],
            "mean": runs.mean, "min": float(v.min()), "max": float(v.max())}


@dataclass(frozen=True)
class NoiseSample:
    """One repetition: the split, the two times and the perturbing traffic.

    ``perturbed_s`` and ``clean_s`` are seconds per collective (the mean over
    the iterations, the maximum over the application ranks); NaN when the
    algorithm does not exist for ``app_procs`` ranks. ``exchanges`` counts
    the perturbation steps during the perturbed phase.
    """

    repetition: int
    app_procs: int
    perturbers: int
    perturbed_s: float
    clean_s: float
    exchanges: int

    @property
    def status(self) -> str:
        return "ok" if math.isfinite(self.perturbed_s) and math.isfinite(self.clean_s) else "unsupported"

    @property
    def slowdown(self) -> float:
        if self.status != "ok" or self.clean_s <= 0:
            return math.nan
        return self.perturbed_s / self.clean_s


_CSV_FIELDS = ("collective", "algorithm", "size_bytes", "ratio", "seed", "procs", "perturb_bytes", "iterations",
               "repetition", "app_procs", "perturbers", "exchanges", "perturbed_s", "clean_s", "slowdown", "status")


@dataclass(frozen=True)
class NoiseResult:
    """Raw samples and slowdown distribution of one :func:`noise_benchmark`."""

    collective: str
    algorithm: str
    size: int
    ratio: float
    seed: int
    procs: int
    perturb_size: int
    iterations: int
    params: dict = field(default_factory=dict)
    samples: tuple[NoiseSample, ...] = ()

    @property
    def slowdowns(self) -> np.ndarray:
        """Slowdowns of the repetitions the algorithm ran in (not ``unsupported``)."""
        return np.array([s.slowdown for s in self.samples if s.status == "ok"], dtype=np.float64)

    def summary(self) -> dict | None:
        """:func:`slowdown_summary` of :attr:`slowdowns` (``None``: no repetition ran)."""
        return slowdown_summary(self.slowdowns)

    def label(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.collective}/{self.algorithm}" + (f"({params})" if params else "")

    def rows(self) -> list[dict]:
        """One flat dict per repetition, the columns of :meth:`write_csv`."""
        head = {"collective": self.collective, "algorithm": self.algorithm, "size_bytes": self.size,
                "ratio": self.ratio, "seed": self.seed, "procs": self.procs, "perturb_bytes": self.perturb_size,
                "iterations": self.iterations}
        return [{**head, "repetition": s.repetition, "app_procs": s.app_procs, "perturbers": s.perturbers,
                 "exchanges": s.exchanges, "perturbed_s": s.perturbed_s, "clean_s": s.clean_s,
                 "slowdown": s.slowdown, "status": s.status} for s in self.samples]

    def as_dict(self) -> dict:
        """Configuration, summary and raw samples (JSON-ready; NaN as ``null``)."""
        samples = [{k: _json_number(v) for k, v in row.items() if k in (
            "repetition", "app_procs", "perturbers", "exchanges", "perturbed_s", "clean_s", "slowdown", "status")}
            for row in self.rows()]
        return {"collective": self.collective, "algorithm": self.algorithm, "params": dict(self.params),
                "size_bytes": self.size, "ratio": self.ratio, "seed": self.seed, "procs": self.procs,
                "perturb_bytes": self.perturb_size, "iterations": self.iterations,
                "repetitions": len(self.samples), "summary": self.summary(), "samples": samples}

    def write_csv(self, path) -> Path:
        return write_csv([self], path)

    def write_json(self, path) -> Path:
        return write_json([self], path)


def _json_number(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def write_csv(results, path) -> Path:
    """Every repetition of every result, one CSV row each (:data:`_CSV_FIELDS`)."""
    path = Path(path)
    with atomic(path, option="--csv", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=_CSV_FIELDS)
        writer.writeheader()
        for result in results:
            writer.writerows(result.rows())
    return path


def write_json(results, path) -> Path:
    """``{"benchmark": "network-noise", "results": [NoiseResult.as_dict(), ...]}``."""
    path = Path(path)
    doc = {"benchmark": "network-noise", "reference": "network-noise paper §2 (Netgauge)",
           "results": [r.as_dict() for r in results]}
    return write_text(path, json.dumps(doc, indent=1) + "\n", option="--json")


# ---- checks every rank agrees on ---------------------------------------------

def _decide(comm, problem: str | None) -> None:
    """Collective: raise the first rank's problem on every rank, or return.

    Every rank gets the same answer, so an error on one rank (say, a path it
    cannot write) cannot leave the others waiting in a collective."""
    problems = comm.allgather(problem)
    first = next((p for p in problems if p), None)
    if first is None:
        return
    if all(p == first for p in problems):
        raise SpecError(first)
    raise SpecError(f"rank {problems.index(first)}: {first}")


def _whole(where: str, name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise SpecError(f"{where}: {name}={value!r}, expected a whole number >= {minimum}")
    return int(value)


def _ratio(where: str, ratio) -> float:
    try:
        r = float(ratio)
    except (TypeError, ValueError):
        r = math.nan
    if isinstance(ratio, bool) or not (0.0 <= r < 1.0):
        raise SpecError(f"{where}: perturbation ratio {ratio!r}, expected 0 <= ratio < 1 "
                        "(the share of ranks that perturb)")
    return r


def _check_algorithm(collective: str, algorithm: str, params: dict):
    """The catalogue entry (``None`` for the library's collective); unknown names are errors."""
    from ..schedules.registry import check_collective, lookup

    check_collective(collective)
    if algorithm == LIBRARY:
        if collective not in DEFAULT_ALGORITHM:
            raise SpecError(f"algorithm {LIBRARY!r}: no MPI collective for {collective!r}, expected one of "
                            f"{', '.join(sorted(DEFAULT_ALGORITHM))}")
        return None
    info = lookup(collective, algorithm)
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        accepted = ", ".join(sorted(info.params)) or "none"
        raise SpecError(f"{info.label}: unknown parameter {unknown[0]!r}, expected one of: {accepted}")
    return info


def _check_size(collective: str, size) -> int:
    """``size`` in bytes, whole elements of ``topocoll bench``'s element type."""
    from .bench import _vector

    if collective == "barrier":
        return 0 if size is None else _whole(collective, "message size", size, 0)
    size = _whole(collective, "message size", size, 1)
    _vector(collective, 1, size)                     # whole elements, within the documented limits
    return size


# ---- the collective the application times ------------------------------------

def _supports(info, p: int, params: dict) -> bool:
    if info is None:
        return params.get("root", 0) < p
    return info.supports(p, {**info.compare, **params})


def _make_runner(collective: str, info, size: int, params: dict, comm):
    """A plan, or the library's own collective, for this communicator's size,
    with ``run()`` and ``free()``.

    The schedule is generated for ``comm``'s size, which the random split
    changes from repetition to repetition. Element type, vector and library
    call are ``topocoll bench``'s (:mod:`.bench`), so both benchmarks time
    the same thing."""
    from .bench import _dtype, _library_call, _vector
    from .plan import plan

    p = comm.Get_size()
    vector = _vector(collective, p, size)
    sendbuf = np.ones(vector["count"], _dtype(collective))
    if info is None:
        return _library_call(collective, comm, sendbuf, root=int(params.get("root", 0)))
    schedule = info.generate(p, **{**info.compare, **params, **vector})
    # sum, unless the algorithm is only correct for an idempotent operator
    # (butterfly_virtual, the unadapted dissemination): then max
    op = "max" if schedule.needs.idempotent else "sum"
    return plan(schedule, sendbuf, np.empty_like(sendbuf), op=op, comm=comm)


def _time_collective(runner, comm, iterations: int) -> float:
    """Mean seconds per run, maximum over ``comm``'s ranks (the last rank to
    finish is what the application waits for, §3)."""
    from mpi4py import MPI

    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iterations):
        runner.run()
    return comm.allreduce((MPI.Wtime() - start) / iterations, op=MPI.MAX)


# ---- one repetition -----------------------------------------------------------

def _application(world, app, make, iterations: int) -> tuple[float, float]:
    """The application ranks' side: warm up, time with perturbation, signal the
    perturbers to stop, time again without."""
    problem, runner = None, None
    try:
        runner = make(app)
        runner.run()                                 # warm-up (Gropp & Lusk, cited in §2)
    except TopocollError as exc:
        problem = str(exc)
    try:
        _decide(world, problem)                      # the perturbers learn of it too: nobody hangs
        world.Barrier()                              # global synchronisation: both sides start together
        perturbed = _time_collective(runner, app, iterations)
        world.Ibarrier().Wait()                      # "done": the perturbers see it complete
        world.Barrier()                              # ... and have drained their last exchange
        clean = _time_collective(runner, app, iterations)
    finally:
        if runner is not None:
            runner.free()
    return perturbed, clean


def _start_exchange(pert, dst: int, src: int, sendbuf, recvbuf) -> list:
    """Post one perturbation step: send to ``dst``, receive from ``src``."""
    if dst == pert.Get_rank():                       # a fixed point of the permutation sits out
        return []
    return [pert.Irecv(recvbuf, source=src, tag=_TAG), pert.Isend(sendbuf, dest=dst, tag=_TAG)]


def _perturbation(world, pert, rng: np.random.Generator, perturb_size: int) -> int:
    """The perturbation ranks' side: exchange ``perturb_size``-byte messages
    with random peers until every application rank has timed the collective;
    return the number of steps.

    Stopping: the application ranks enter an ``Ibarrier`` over the world when
    done; the perturbers entered it before their first step and test it after
    each step. All perturbers must stop after the *same* step (a peer that
    stopped one step early would leave a send unmatched), so they OR their
    test results over the perturbation communicator before deciding, and
    complete every step they started."""
    from mpi4py import MPI

    sendbuf = np.ones(perturb_size, np.uint8)
    recvbuf = np.empty(perturb_size, np.uint8)
    n, me = pert.Get_size(), pert.Get_rank()

    def start() -> list:
        dst, src = exchange_partners(n, rng)          # the same permutation on every perturber
        return _start_exchange(pert, int(dst[me]), int(src[me]), sendbuf, recvbuf)

    MPI.Request.Waitall(start())                     # warm-up
    _decide(world, None)
    requests = start()                               # in flight when the application starts its clock
    world.Barrier()
    done = world.Ibarrier()
    steps = 0
    while True:
        MPI.Request.Waitall(requests)
        steps += 1
        if pert.allreduce(bool(done.Test()), op=MPI.LOR):
            break
        requests = start()
    done.Wait()
    world.Barrier()                                  # drained: the clean phase runs without us
    return steps


def _repetition(world, roles: np.ndarray, make, *, rng_seed: list[int], perturb_size: int,
                iterations: int) -> tuple[float, float, int]:
    """Split, run both sides, share (perturbed, clean, steps) with every rank."""
    from mpi4py import MPI

    rank = world.Get_rank()
    perturber = bool(roles[rank])
    sub = world.Split(int(perturber), rank)
    try:
        mine = np.zeros(3)
        if perturber:
            steps = _perturbation(world, sub, np.random.default_rng(rng_seed), perturb_size)
            if sub.Get_rank() == 0:
                mine[2] = steps
        else:
            perturbed, clean = _application(world, sub, make, iterations)
            if sub.Get_rank() == 0:
                mine[:2] = perturbed, clean
        # the clean phase ends here for the perturbers too: they idle in this call
        out = np.empty(3)
        world.Allreduce(mine, out, op=MPI.MAX)
    finally:
        sub.Free()
    return float(out[0]), float(out[1]), int(out[2])


# ---- the library call ----------------------------------------------------------

def noise_benchmark(collective: str, algorithm: str, size: int, *, ratio: float, repetitions: int, seed: int,
                    perturb_size: int = 1 << 20, params: dict | None = None, comm=None,
                    iterations: int = DEFAULT_ITERATIONS) -> NoiseResult:
    """Slowdown of a collective under network noise, measured (network-noise paper §2).

    Collective over ``comm``: every rank calls it with the same arguments and
    gets the same :class:`NoiseResult`.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``reduce``, ``bcast``, ``barrier``, ``alltoall``,
        ``allgather`` or ``reduce_scatter``.
    algorithm : str
        A topocoll algorithm of that collective (run as a plan,
        :func:`topocoll.mpi.plan`, its schedule generated for the
        application communicator's size), or ``"mpi"`` for the MPI library's
        own collective.
    size : int
        Message size in bytes, MPI's convention (:mod:`topocoll.schedules.sizes`:
        per destination for alltoall, per rank for allgather, the whole
        vector otherwise; ignored for barrier). Elements as ``topocoll
        bench`` has them: float64 for reductions (a multiple of 8 bytes),
        bytes for data movement.
    ratio : float
        Perturbation ratio, ``0 <= ratio < 1``: the share of ranks that
        perturb (:func:`perturber_count`); 0 times the collective twice
        without perturbation (a control).
    repetitions : int
        Random splits, each timed with and without perturbation.
    seed : int
        Seeds the splits (:func:`split_roles`) and the perturbers' peers.
    perturb_size : int
        Bytes of every perturbation message (default 1 MiB: "large-message
        perturbation pattern").
    params : dict, optional
        Generator parameters (over the catalogue's comparison defaults); for
        ``"mpi"`` only ``root`` (reduce, bcast) is read.
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``; duplicated, so the benchmark's messages
        never mix with the caller's.
    iterations : int
        Timed runs per phase and repetition, after one warm-up run.

    Returns
    -------
    NoiseResult
        Per repetition: the application's size, the perturbed and the clean
        time per collective (mean over ``iterations``, maximum over the
        application ranks) and their ratio; a repetition whose application
        size the algorithm does not exist for is ``unsupported`` (NaN times).

    Raises
    ------
    SpecError
        On every rank alike: a bad argument, ranks that disagree on the
        arguments, a perturbation (``ratio > 0``) on fewer than 2 ranks, or a
        plan that cannot be built.

    Notes
    -----
    One repetition, as Netgauge's benchmark (§2, Fig. 2):

    1. ``comm.Split``: the ranks :func:`split_roles` names perturb, the
       others form the application communicator (in rank order);
    2. warm-up: one run of the collective, one perturbation exchange; the
       perturbers post their first perturbing exchange, then a barrier over
       ``comm`` (the global synchronisation), so traffic is in flight when
       the application starts its clock;
    3. perturbed: each perturbation rank exchanges ``perturb_size`` bytes
       with a random perturbation rank per step (nonblocking ``Isend``/
       ``Irecv``, a permutation shared through the seed, so every send is
       matched) while the application times ``iterations`` runs; when done,
       the application enters an ``Ibarrier`` over ``comm`` that the
       perturbers test between steps; they agree to stop after the same step
       and complete it (no message is left unmatched);
    4. clean: after a barrier over ``comm`` the application times the
       collective again while the perturbation ranks wait in the closing
       reduction.

    The application synchronises with a barrier before timing (not the
    window scheme of Hoefler et al., IPDPS 2008, that Netgauge uses).

    References
    ----------
    T. Hoefler, T. Schneider, A. Lumsdaine, "The Impact of Network Noise at
    Large-Scale Communication Performance", IPDPS workshops 2009, §2 —
    seed ``network-noise-large-scale.txt``, §2; T. Hoefler, T. Mehlan,
    A. Lumsdaine, W. Rehm, "Netgauge: A Network Performance Measurement
    Framework", HPCC 2007.

    Examples
    --------
    ``mpiexec -n 8 python -c "..."``::

        r = noise_benchmark("allreduce", "binomial", 8, ratio=0.5, repetitions=32, seed=1)
        r.summary()["median"]        # typical slowdown of an 8-byte allreduce
        r.write_csv("noise.csv")
    """
    from mpi4py import MPI

    comm = MPI.COMM_WORLD if comm is None else comm
    params = dict(params or {})
    world = comm.Dup()
    try:
        p = world.Get_size()
        problem, info = None, None
        where = "noise_benchmark"
        try:
            info = _check_algorithm(collective, algorithm, params)
            size = _check_size(collective, size)
            ratio = _ratio(where, ratio)
            repetitions = _whole(where, "repetitions", repetitions, 1)
            seed = _whole(where, "seed", seed, 0)
            perturb_size = _whole(where, "perturb_size", perturb_size, 1)
            iterations = _whole(where, "iterations", iterations, 1)
            if ratio > 0 and p < 2:
                raise SpecError(f"{where}: perturbation ratio {ratio} on P={p}: a perturbation needs at least 2 "
                                "ranks (one application, one perturbation rank), expected mpiexec -n 2 or more")
        except TopocollError as exc:
            problem = str(exc)
        _decide(world, problem)
        from .plan import agree

        signature = tuple((name, repr(value)) for name, value in (
            ("collective", collective), ("algorithm", algorithm), ("size", size), ("ratio", ratio),
            ("repetitions", repetitions), ("seed", seed), ("perturb_size", perturb_size),
            ("iterations", iterations), ("params", sorted(params.items()))))
        agree(world, signature, None, where=where)

        def make(app):
            return _make_runner(collective, info, size, params, app)

        samples = []
        for rep in range(repetitions):
            roles = split_roles(p, ratio, seed, rep)
            app_procs, perturbers = int(p - roles.sum()), int(roles.sum())
            if not _supports(info, app_procs, params):    # the same decision on every rank
                samples.append(NoiseSample(rep, app_procs, perturbers, math.nan, math.nan, 0))
                continue
            perturbed, clean, steps = _repetition(world, roles, make, rng_seed=[seed, rep, 1],
                                                  perturb_size=perturb_size, iterations=iterations)
            samples.append(NoiseSample(rep, app_procs, perturbers, perturbed, clean, steps))
    finally:
        world.Free()
    return NoiseResult(collective, algorithm, size, ratio, seed, p, perturb_size, iterations, params,
                       tuple(samples))


# ---- the command line: topocoll bench --perturb RATIO -------------------------


def _algorithms(args) -> list[str]:
    """The algorithms named, or the library's collective and a default: with
    ``--param`` given, every topocoll algorithm that takes all of them (as
    ``topocoll bench`` leaves out the algorithms without a parameter)."""
    from ..schedules.registry import catalogue

    if args.algorithm:
        return list(dict.fromkeys(args.algorithm))
    params = set(args.params or {})
    if not params:
        return [LIBRARY, DEFAULT_ALGORITHM[args.collective]]
    taking = [info.name for info in catalogue().values()
              if info.collective == args.collective and params <= set(info.params)]
    if not taking:
        raise SpecError(f"--param {', '.join(sorted(params))}: no {args.collective} algorithm takes "
                        f"{'it' if len(params) == 1 else 'them all'}, expected parameters listed by "
                        f"`topocoll algorithms {args.collective}`")
    return [LIBRARY, *taking]


def _params_for(name: str, params: dict) -> dict:
    """The library's collective reads only ``root``; a schedule reads them all."""
    if name == LIBRARY:
        return {k: v for k, v in params.items() if k == "root"}
    return dict(params)


def _check_args(args, p: int, rank: int) -> None:
    """Everything the command line names, checked before any data moves."""
    if not args.algorithm and args.collective not in DEFAULT_ALGORITHM:
        from ..schedules.registry import check_collective

        check_collective(args.collective)
        raise SpecError(f"{args.collective}: no network-noise benchmark for it, expected one of "
                        f"{', '.join(sorted(DEFAULT_ALGORITHM))}")
    params = dict(args.params or {})
    for name in _algorithms(args):
        _check_algorithm(args.collective, name, _params_for(name, params))
    if args.collective != "barrier":                # a barrier has no size: --sizes is ignored
        if not args.sizes:
            raise SpecError("--sizes: no message size, expected sizes such as 8,64K")
        for size in args.sizes:
            _check_size(args.collective, size)
    _ratio("--perturb", args.perturb)
    _whole("bench", "--perturb-size", args.perturb_size, 1)
    if args.repetitions is not None:
        _whole("bench", "--repetitions", args.repetitions, 1)
    _whole("bench", "--seed", args.seed, 0)
    if args.iterations is not None:
        _whole("bench", "--iterations", args.iterations, 1)
    if args.perturb > 0 and p < 2:
        raise SpecError(f"--perturb {args.perturb} on P={p}: the network-noise benchmark needs at least 2 ranks "
                        "(one application, one perturbation rank), expected mpiexec -n 2 or more")
    if rank == 0:                                   # only rank 0 writes
        check_outputs([("--plot", args.plot), ("--csv", args.csv), ("--json", args.json)], stdout=("--json",))


def _us(seconds) -> str:
    return f"{float(seconds) * 1e6:.2f} µs"


def _table_rows(results: list[NoiseResult]) -> list[list[str]]:
    rows = [["algorithm", "size", "runs", "app P", "median", "q1", "q3", "notch (95%)", "min", "max",
             "clean median", "perturbed median"]]
    for r in results:
        ok = [s for s in r.samples if s.status == "ok"]
        name = r.algorithm + (f" ({', '.join(f'{k}={v}' for k, v in sorted(r.params.items()))})"
                              if r.params and r.algorithm != LIBRARY else "")
        size = _bytes(r.size) if r.collective != "barrier" else "-"
        app = sorted({s.app_procs for s in r.samples})
        app_text = str(app[0]) if len(app) == 1 else f"{app[0]}..{app[-1]}"
        s = r.summary()
        if s is None:
            rows.append([name, size, f"0/{len(r.samples)}", app_text, "unsupported"] + [""] * 7)
            continue
        rows.append([name, size, f"{len(ok)}/{len(r.samples)}", app_text, f"{s['median']:.3f}",
                     f"{s['q1']:.3f}", f"{s['q3']:.3f}", f"{s['notch'][0]:.3f}..{s['notch'][1]:.3f}",
                     f"{s['min']:.3f}", f"{s['max']:.3f}", _us(np.median([x.clean_s for x in ok])),
                     _us(np.median([x.perturbed_s for x in ok]))])
    return rows


def _plot(results: list[NoiseResult], path, title: str) -> bool:
    """One notched box per algorithm and size; False if no repetition ran."""
    from ..viz.boxplot import write_boxplot_png   # the CLI draws; the library only measures

    series = [(f"{r.algorithm}\n{_bytes(r.size) if r.collective != 'barrier' else ''}", r.slowdowns)
              for r in results if r.slowdowns.size]
    if not series:
        return False
    write_boxplot_png(series, path, title=title, ylabel="slowdown", reference=1.0)
    return True


def run_from_args(args) -> int:
    """``topocoll bench --perturb RATIO``: the network-noise benchmark per
    algorithm and size; rank 0 prints the slowdown table and the seed and
    writes the box plot and the raw samples.

    ``args`` (an :class:`argparse.Namespace` from ``topocoll bench``):
    ``collective``; ``algorithm`` (list, or ``None``: the library's
    collective and :data:`DEFAULT_ALGORITHM`, or with ``params`` every
    algorithm that takes them); ``sizes`` (ints, bytes; ignored for barrier);
    ``params`` (dict; the library's collective reads only ``root``);
    ``perturb`` (float ratio); ``perturb_size`` (int, bytes); ``repetitions``
    (int, ``None``: :data:`DEFAULT_REPETITIONS`); ``plot``, ``csv``, ``json``
    (paths or ``None``); ``seed`` (int >= 0); ``iterations`` (int, ``None``:
    :data:`DEFAULT_ITERATIONS`).

    Raises
    ------
    SpecError
        On every rank alike, before any data moves.
    """
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    p, rank = world.Get_size(), world.Get_rank()
    problem = None
    try:
        _check_args(args, p, rank)
    except TopocollError as exc:
        problem = str(exc)
    _decide(world, problem)
    iterations = DEFAULT_ITERATIONS if args.iterations is None else args.iterations
    algorithms = _algorithms(args)
    repetitions = DEFAULT_REPETITIONS if args.repetitions is None else args.repetitions
    params = dict(args.params or {})
    title = (f"network noise: {args.collective} on P={p}, perturbation ratio {args.perturb:g}, "
             f"{_bytes(args.perturb_size)} messages, {repetitions} repetitions, seed {args.seed}")
    # --json alone (or -): the JSON on stdout instead of the text (topocoll.outputs.add_json_argument)
    say = print if args.json != "-" else (lambda *a, **k: None)
    if rank == 0:
        library = MPI.Get_library_version().strip().splitlines()[0]
        say(f"{title} (network-noise paper §2, Netgauge's scheme), {iterations} iterations per phase; "
              f"MPI: {library}", flush=True)
    results = []
    for size in ([0] if args.collective == "barrier" else args.sizes):   # a barrier has no size
        for name in algorithms:
            results.append(noise_benchmark(args.collective, name, size, ratio=args.perturb,
                                           repetitions=repetitions, seed=args.seed,
                                           perturb_size=args.perturb_size,
                                           params=_params_for(name, params), comm=world,
                                           iterations=iterations))
    if rank != 0:
        return 0
    from ..text import table as _table

    say("slowdown = perturbed / clean time per repetition (median, quartiles, notch = median ± 1.57·IQR/√n)")
    say(_table(_table_rows(results)))
    if any(s.perturbers == 1 for r in results for s in r.samples):
        say(f"note: at P={p} one rank perturbs and has no peer to exchange with: nothing perturbs the network")
    if args.plot is not None:
        say(f"box plot: {args.plot}" if _plot(results, args.plot, title)
              else "box plot: not written, no repetition ran")
    if args.csv is not None:
        say(f"raw samples: {write_csv(results, args.csv)}")
    if args.json is not None:
        say(f"raw samples and summary: {write_json(results, args.json)}")
    print(f"seed {args.seed}", file=sys.stdout if args.json != "-" else sys.stderr)   # stdout keeps the JSON alone
    return 0
