"""Rank the algorithms of a collective by a model's estimate.

For every algorithm registered for the collective (with the parameters the
registry declares for comparisons, :attr:`AlgorithmInfo.compare
<topocoll.schedules.registry.AlgorithmInfo.compare>`) that exists at ``p``,
whose schedule is correct for the operator and has at most
:data:`~topocoll.schedules.registry.MAX_MODEL_MESSAGES` messages, build the
schedule for each message size (MPI's convention, :mod:`topocoll.schedules.sizes`) and ask the
model for its time. The α-β-γ model is Chan et al. (CCPE 2007), the one all
five papers rank algorithms by; the static contention model adds the
network's routing and node order (Cavin & Demengeon 2012 §5).

The (algorithm, size) evaluations are independent: :func:`rank` runs them on
worker processes (``workers``, default every CPU this process may use) when
the work is large enough to repay starting them (:data:`SERIAL_BELOW`), and
hands each one to ``on_result`` as it finishes. A worker gets a small spec
(collective, algorithm, ``p``, parameters, size) and builds the schedule and
runs the model itself; the model and platform reach it once, when it starts.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pickle
import signal
import sys
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from ..errors import SpecError, TopocollError
from ..schedules.metrics import ScheduleReport, report
from ..schedules.registry import MAX_MODEL_MESSAGES, catalogue, check_collective, check_procs, lookup, \
    operator_allows
from ..schedules.sizes import CONVENTION, from_bytes
from ..sim.model import AlphaBetaGamma, Estimate, Model, Network, Platform
from ..verify import OPERATORS

#: collectives whose result depends on the reduction operator
REDUCTIONS = ("allreduce", "reduce", "reduce_scatter")

#: most worker processes :func:`rank` starts (``topocoll compare --jobs``)
MAX_WORKERS = 256

#: :func:`rank` runs in-process when the candidates' messages, summed over
#: every (algorithm, size) by :meth:`~topocoll.schedules.registry.AlgorithmInfo.message_bound`,
#: are fewer than this. Measured on a quiet 2-core machine (α-β-γ model,
#: best of 3, in-process → 2 forked workers): forking and collecting cost
#: ≈ 10 ms; allreduce P=8 (328 messages) 9 → 19 ms, allgather P=64 (8,064)
#: 23 → 23 ms, bcast P=1024 (30,720) 44 → 40 ms, alltoall P=64 (21,504)
#: 282 → 170 ms, reduce_scatter P=128 (168,704) 2.6 → 1.4 s. Models spend
#: 0.6–30 µs a message, so below 20,000 processes save at most tens of ms
#: and can cost ≈ 10 ms.
SERIAL_BELOW = 20_000

__all__ = ["MAX_WORKERS", "REDUCTIONS", "SERIAL_BELOW", "Evaluated", "Ranked", "rank"]


@dataclass(frozen=True)
class Ranked:
    """One algorithm's place for one message size.

    Attributes
    ----------
    size : int
        Message size in bytes (MPI's convention for the collective).
    position : int
        1 for the fastest at this size.
    algorithm : str
    params : dict
        The schedule's parameters, resolved (``n="auto"`` → the ``n`` chosen).
    report : ScheduleReport
        Rounds, messages and bytes per rank, α-β-γ terms.
    estimate : Estimate
        The model's prediction.
    """

    size: int
    position: int
    algorithm: str
    params: dict
    report: ScheduleReport
    estimate: Estimate

    @property
    def time(self) -> float:
        return self.estimate.time


@dataclass(frozen=True)
class Evaluated:
    """One (algorithm, size) evaluation, handed to :func:`rank`'s ``on_result``
    as soon as it finishes (in completion order, before the ranking).

    Attributes
    ----------
    size : int
        Message size in bytes, as in :class:`Ranked`.
    algorithm : str
    params : dict or None
        The schedule's resolved parameters (None when left out).
    report : ScheduleReport or None
    estimate : Estimate or None
        The model's prediction (None when left out).
    left_out : str or None
        Why the algorithm takes no part at this size (no schedule for these
        parameters, not correct for the operator); None when estimated.
    done, total : int
        Evaluations finished so far, this one included, and in all.
    """

    size: int
    algorithm: str
    params: dict | None
    report: ScheduleReport | None
    estimate: Estimate | None
    left_out: str | None
    done: int
    total: int

    @property
    def time(self) -> float:
        """The estimate's time, s (NaN when left out)."""
        return self.estimate.time if self.estimate is not None else math.nan


def _operator(collective: str, op: str) -> tuple[bool, bool]:
    try:
        properties = OPERATORS[op]
    except (KeyError, TypeError):
        raise SpecError(f"rank: op={op!r}, expected one of {', '.join(OPERATORS)}") from None
    return properties if collective in REDUCTIONS else (True, True)   # data movement: any algorithm


def _check_workers(workers) -> int:
    if workers is None:
        return _cpus()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise SpecError(f"rank: workers={workers!r}, expected an integer in 1..{MAX_WORKERS} (1: in-process)")
    return workers


def _cpus() -> int:
    """The CPUs this process may run on (``os.cpu_count()`` where affinity is unknown)."""
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        return counter() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1



def compare_params(info, p: int, platform: Platform | None) -> dict:
    """The parameters ``info`` is compared with at ``p`` on ``platform``: the
    registry's comparison set, with the ranks' nodes filled in where the
    algorithm takes them (``hierarchical``'s ``ppn=None``) and the network
    has nodes (``SPEC+ppn=N``): ``ppn`` from it, and the node of every rank
    from the placement when ranks are not node-major (e.g. ``dist=cyclic``)."""
    params = dict(info.compare)
    if "ppn" not in params or params["ppn"] is not None:
        return params
    net = platform.network if platform is not None else None
    topo = getattr(net, "topology", None)
    if topo is None or topo.family != "nodes":
        return params
    ppn = topo.params["nodes"].ppn
    hosts = np.asarray(net.order[:p], dtype=np.int64) // ppn
    dense = {}
    nodes = tuple(dense.setdefault(int(h), len(dense)) for h in hosts)
    params["ppn"] = ppn
    if nodes != tuple(r // ppn for r in range(p)):
        params["nodes"] = nodes
    return params

def rank(collective: str, p: int, sizes: Iterable[int], *, model: Model | None = None,
         platform: Platform | None = None, op: str = "sum", itemsize: int = 1, workers: int | None = None,
         on_result: Callable[[Evaluated], None] | None = None, serial_below: int | None = None,
         on_plan: Callable[[int, int, int], None] | None = None) -> list[Ranked]:
    """Every algorithm of ``collective`` on ``p`` ranks, fastest first, per size.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``alltoall``, ...
    p : int
        Number of ranks, ``1 .. MAX_P``.
    sizes : iterable of int
        Message sizes in bytes, MPI's convention (per destination for
        alltoall, per rank for allgather, the whole vector otherwise); one
        table for barrier whatever the sizes.
    model : Model, optional
        Default :class:`~topocoll.sim.AlphaBetaGamma`.
    platform : Platform, optional
        Default :class:`~topocoll.sim.Platform` (α = 1 µs, 2 GB/s links,
        4 GB/s reduction).
    op : str
        Reduction operator the algorithms must be correct for (``sum``,
        ``max``, ``noncommutative``, ...; see :data:`topocoll.verify.OPERATORS`);
        ignored for collectives that only move data.
    itemsize : int
        Bytes per element (blocks split on element boundaries).
    workers : int, optional
        Worker processes, ``1 .. MAX_WORKERS``; default every CPU this
        process may use (``os.cpu_count()`` where affinity is unknown), at
        most one per evaluation. ``1`` runs in this process. Processes are
        forked on Linux (started fresh elsewhere, where the model must pickle,
        else it runs in-process).
    on_result : callable, optional
        Called in this process with an :class:`Evaluated` for every
        (algorithm, size) as it finishes, in completion order; an exception
        it raises stops the ranking and is raised by ``rank``.
    serial_below : int, optional
        Run in-process, whatever ``workers``, when the candidates' message
        bounds summed over all (algorithm, size) are fewer than this (default
        :data:`SERIAL_BELOW`, measured: below it starting processes costs more
        than it saves; the α-β-γ model on a few dozen ranks stays
        in-process). ``0`` always uses processes when ``workers > 1``.
    on_plan : callable, optional
        ``on_plan(evaluations, messages, processes)`` once, before any
        evaluation: the (algorithm, size) evaluations, their messages (the
        registry's bounds, summed) and the processes they will run on.

    Returns
    -------
    list of Ranked
        Sizes in the order given, fastest first within a size (ties by
        name); the same rows, with the same numbers, whatever ``workers``.
        From worker processes an event model's
        :class:`~topocoll.sim.engine.Simulation` (``estimate.detail``) comes
        back with the platform's network attached again in this process.

    Raises
    ------
    SpecError
        Unknown collective or operator, ``p``, a size or ``workers`` out of
        range, or no algorithm at all for ``p`` (the message says why each
        was left out).
    TopocollError
        A worker process died (e.g. killed for memory); ``workers=1`` runs
        in-process.

    Examples
    --------
    >>> rows = rank("allreduce", 8, [8, 4 << 20])
    >>> [(r.size, r.algorithm, f"{r.time * 1e6:.2f} µs") for r in rows if r.position == 1]
    [(8, 'butterfly_virtual', '3.02 µs'), (4194304, 'rabenseifner', '4593.52 µs')]
    """
    check_collective(collective)
    p = check_procs(f"rank {collective}", p)
    commutative, idempotent = _operator(collective, op)
    workers = _check_workers(workers)
    if serial_below is None:
        serial_below = SERIAL_BELOW
    model = AlphaBetaGamma() if model is None else model
    platform = Platform() if platform is None else platform
    sizes = [0] if CONVENTION[collective] == "none" else list(sizes)
    if not sizes:
        raise SpecError("rank: no message sizes, expected at least one")
    args = {size: from_bytes(collective, p, size, itemsize=itemsize) for size in sizes}

    entries, left_out, work = [], [], 0
    for info in catalogue().values():
        if info.collective != collective:
            continue
        params = compare_params(info, p, platform)
        if not info.supports(p, params):
            left_out.append(f"{info.name} (not for P={p}: {info.p_rule_text})")
            continue
        try:
            work += info.check_size(p, params, limit=MAX_MODEL_MESSAGES, purpose="a model")
        except SpecError as exc:
            left_out.append(f"{info.name} ({exc})")
            continue
        entries.append((info, params))

    # one evaluation per (size, algorithm), size-major in the registry's order
    tasks = [(i, j, _Task(collective, info.name, p, dict(params), args[size], commutative, idempotent, op))
             for i, size in enumerate(sizes) for j, (info, params) in enumerate(entries)]
    total = len(tasks)
    done = 0

    def notify(i, j, outcome) -> None:
        nonlocal done
        done += 1
        if on_result is not None:
            found, why = outcome
            name = entries[j][0].name
            if found is None:
                on_result(Evaluated(sizes[i], name, None, None, None, why, done, total))
            else:
                on_result(Evaluated(sizes[i], name, found[2], found[3], found[4], None, done, total))

    def ranked(i, outcomes) -> list[Ranked]:
        """Size ``i``'s rows from its outcomes in registry order (the serial error if none ran)."""
        found = []
        for j, (row, why) in enumerate(outcomes):
            if row is None:
                left_out.append(f"{entries[j][0].name} ({why})")
            else:
                found.append(row)
        if not found:
            why = "; ".join(dict.fromkeys(left_out)) or "none registered"
            raise SpecError(f"rank: no {collective} algorithm runs on P={p} with {sizes[i]} B messages: {why}")
        found.sort(key=lambda row: (row[0], row[1]))
        return [Ranked(sizes[i], k, name, params, rep, est) for k, (_, name, params, rep, est) in enumerate(found, 1)]

    workers = min(workers, total)
    shipped = _Shipped(model, platform)
    parallel = workers > 1 and work * len(sizes) >= serial_below and _can_ship(shipped)
    if on_plan is not None:
        on_plan(total, work * len(sizes), workers if parallel else 1)
    if parallel:
        outcomes = _run_parallel(tasks, workers, shipped, notify, platform, p)
        return [row for i in range(len(sizes)) for row in ranked(i, [outcomes[i, j] for j in range(len(entries))])]

    rows: list[Ranked] = []
    for i in range(len(sizes)):
        outcomes = []
        for i_, j, task in tasks:
            if i_ == i:
                outcomes.append(_evaluate(task, model, platform))
                notify(i, j, outcomes[-1])
        rows.extend(ranked(i, outcomes))
    return rows


# ---- one evaluation ------------------------------------------------------------

@dataclass(frozen=True)
class _Task:
    """What a worker needs to evaluate one (algorithm, size): no schedule, no network."""

    collective: str
    algorithm: str
    p: int
    params: dict
    args: dict
    commutative: bool
    idempotent: bool
    op: str


def _evaluate(task: _Task, model, platform):
    """``((time, name, params, report, estimate), None)``, or ``(None, why)``
    when the algorithm takes no part at this size."""
    info = lookup(task.collective, task.algorithm)
    try:
        sched = info.generate(task.p, **task.params, **task.args)
    except TopocollError as exc:
        return None, str(exc)
    if not operator_allows(sched.needs, commutative=task.commutative, idempotent=task.idempotent):
        return None, f"not correct for op={task.op} at P={task.p}"
    est = model.estimate(sched, platform)
    rep = est.detail if isinstance(est.detail, ScheduleReport) else report(sched)
    return (est.time, info.name, sched.params, rep, est), None


# ---- worker processes ----------------------------------------------------------

def _start_method() -> str:
    """``fork`` on Linux (a worker is ready in milliseconds and inherits the
    model and platform without pickling; the Rust core keeps no thread pool
    across calls), ``spawn`` elsewhere."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


class _Shipped:
    """The model and platform a worker receives once, at start. Forked workers
    inherit them as they are; a spawned worker unpickles them, the network as
    its recipe (topology, routing engine name and options, node order): the
    routing engine itself lives in Rust and does not pickle."""

    def __init__(self, model, platform: Platform):
        self.model, self.platform = model, platform

    def __reduce__(self):
        net = self.platform.network
        recipe = None if net is None else (net.router.topology, net.router.name, dict(net.router.options),
                                           net.order, net.label)
        values = {f.name: getattr(self.platform, f.name) for f in dataclasses.fields(self.platform)
                  if f.name != "network"}
        return _unship, (self.model, values, recipe)


def _unship(model, values: dict, recipe) -> _Shipped:
    network = None
    if recipe is not None:
        from ..topology import make_router
        topology, name, options, order, label = recipe
        network = Network(make_router(topology, name, **options), order, label)
    return _Shipped(model, Platform(**values, network=network))


def _can_ship(shipped: _Shipped) -> bool:
    """Whether workers can receive the model and platform (always when forked)."""
    if _start_method() == "fork":
        return True
    try:
        pickle.dumps(shipped)
    except Exception:         # a model defined in a script, an ad-hoc router: run in-process
        return False
    return True


_WORKER: _Shipped | None = None


def _init_worker(shipped: _Shipped) -> None:
    global _WORKER
    _WORKER = shipped
    # Ctrl-C reaches the whole process group: the parent stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _work(task: _Task):
    """In a worker: one evaluation, its result slimmed to what pickles cheaply."""
    (row, why) = _evaluate(task, _WORKER.model, _WORKER.platform)
    if row is None:
        return None, why
    time, name, params, rep, est = row
    return (time, name, params, rep, dataclasses.replace(est, detail=_detach(est.detail))), None


def _network_field(detail) -> bool:
    return (dataclasses.is_dataclass(detail) and not isinstance(detail, type)
            and any(f.name == "network" for f in dataclasses.fields(detail)))


def _detach(detail):
    """An event model's Simulation without its Network (whose routing engine
    does not pickle, and which the parent has already)."""
    return dataclasses.replace(detail, network=None) if _network_field(detail) else detail


def _run_parallel(tasks, workers: int, shipped: _Shipped, notify, platform: Platform, p: int) -> dict:
    import multiprocessing

    context = multiprocessing.get_context(_start_method())
    outcomes, network = {}, []

    def attach(detail):
        if not _network_field(detail) or detail.network is not None:
            return detail
        if not network:      # the network the model ran on: the platform's, or the engine's ideal crossbar
            if platform.network is not None:
                network.append(platform.network)
            else:
                from ..sim.engine import platform_network
                network.append(platform_network(platform, p)[0])
        return dataclasses.replace(detail, network=network[0])

    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=(shipped,))
    finished = False
    try:
        with warnings.catch_warnings():
            # Python ≥ 3.12 warns when forking with native threads running (NumPy's BLAS
            # pool is idle here); the workers only compute and return results
            warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks", category=DeprecationWarning)
            pending = {executor.submit(_work, task): (i, j, task) for i, j, task in tasks}
        while pending:
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(ready, key=lambda f: pending[f][:2]):
                i, j, task = pending.pop(future)
                try:
                    row, why = future.result()
                except BrokenProcessPool:
                    raise TopocollError(f"rank {task.collective} on P={task.p}: a worker process died (killed, out "
                                        "of memory?); workers=1 (topocoll compare --jobs 1) runs in-process") from None
                if row is not None:
                    time, name, params, rep, est = row
                    row = (time, name, params, rep, dataclasses.replace(est, detail=attach(est.detail)))
                outcomes[i, j] = (row, why)
                notify(i, j, outcomes[i, j])
        finished = True
    finally:
        if not finished:       # an error, a callback's exception or Ctrl-C: stop what still runs
            _stop(executor)
        executor.shutdown(wait=True, cancel_futures=True)
    return outcomes


def _stop(executor: ProcessPoolExecutor) -> None:
    terminate = getattr(executor, "terminate_workers", None)     # Python ≥ 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
