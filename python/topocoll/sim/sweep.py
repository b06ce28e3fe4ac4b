"""Sweeps of simulations over P, message sizes and noise seeds, on local
processes or, under ``mpiexec``, on MPI ranks through ``mpi4py.futures``
(the same code grows from one machine to a cluster).

A task is a plain, picklable :class:`SimTask`; :func:`run_task` builds the
schedule and the network in the worker, so nothing large crosses processes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import SpecError
from ..schedules.registry import lookup
from ..schedules.sizes import from_bytes
from .engine import EngineConfig, EngineOptions, NetworkNoise, OsNoise, lockstep_applies, simulate
from .model import Platform, make_network

__all__ = ["SimTask", "SimRow", "run_task", "run_sweep", "executor_named"]


@dataclass(frozen=True)
class SimTask:
    """One simulation: what to run, where, with which model."""

    collective: str
    algorithm: str
    p: int
    size: int
    params: dict = field(default_factory=dict)
    topology: str | None = None
    routing: str | None = None
    order: str = "routing"
    order_seed: int = 0
    model: str = "loggops"
    rail: str | None = None
    alpha: float = 1e-6
    bandwidth: float = 2e9
    reduce_bandwidth: float = 4e9
    options: EngineOptions = EngineOptions()
    noise: NetworkNoise | None = None
    os_noise: OsNoise | None = None

    def config(self, *, noise: bool = True, trace: bool = False) -> EngineConfig:
        """The engine input of this task (``noise=False``: its clean twin)."""
        return EngineConfig(self.model, self.options, self.noise if noise else None, self.os_noise, trace)


@dataclass(frozen=True)
class SimRow:
    task: SimTask
    label: str
    time: float
    clean: float | None        # without network noise (noise runs only)
    bandwidth: float
    hot_link: str | None
    seed: int | None

    @property
    def slowdown(self) -> float | None:
        return self.time / self.clean if self.clean else None


def platform_for(p: int, *, topology: str | None, routing: str | None = None, order: str = "routing",
                 order_seed: int = 0, alpha: float = 1e-6, bandwidth: float = 2e9,
                 reduce_bandwidth: float = 4e9, rail: str | None = None) -> Platform:
    """A platform for ``p`` ranks: on ``topology`` if given, else an ideal crossbar."""
    network = None
    if topology is not None:
        network = make_network(topology, p, routing=routing, order=order, seed=order_seed, rail=rail)
    return Platform(alpha=alpha, bandwidth=bandwidth, reduce_bandwidth=reduce_bandwidth, network=network)


def build(task: SimTask, *, trace: bool = False):
    """(schedule, platform) of a task; ``trace``: the run records a timeline.

    A simulation reads the op program only, so the schedule is asked for that
    view (:meth:`~topocoll.schedules.registry.AlgorithmInfo.program_schedule`):
    a program that streams is bounded by the simulator's memory estimate
    alone (``simulate`` refuses, before any work, a run that would not fit),
    one built whole by the per-rank views' bound, unless the congestion
    model's lockstep path (:func:`.engine.lockstep_applies`), which builds no
    program, takes the run."""
    info = lookup(task.collective, task.algorithm)
    params = {**from_bytes(task.collective, task.p, task.size), **task.params}
    try:
        sched = info.program_schedule(task.p, params)
    except SpecError as too_large:
        sched = _lockstep_schedule(task, info, params, trace=trace)
        if sched is None:
            raise too_large from None
    platform = platform_for(task.p, topology=task.topology, routing=task.routing, order=task.order,
                            order_seed=task.order_seed, alpha=task.alpha, bandwidth=task.bandwidth,
                            reduce_bandwidth=task.reduce_bandwidth, rail=task.rail)
    if task.algorithm == "synthesized" and params.get("file") and platform.network is not None:
        from ..synth.fileformat import check_file   # a schedule file runs only on the routes it was made for
        check_file(params["file"], platform.network)
    return sched, platform


def _lockstep_schedule(task: SimTask, info, params: dict, *, trace: bool):
    """The schedule of ``task`` if its run takes the lockstep path, else None.
    Generating is cheap (patterns build ops on first use); the guard keeps
    every other model from generating a schedule it will refuse."""
    if task.model != "congestion" or trace or task.os_noise is not None:
        return None
    sched = info.generate(task.p, **params)
    return sched if lockstep_applies(sched, task.model, task.options) else None


def run_task(task: SimTask) -> SimRow:
    sched, platform = build(task)
    sim = simulate(sched, platform, task.config())
    clean = None
    if task.noise is not None:
        clean = simulate(sched, platform, task.config(noise=False)).time
    hot = sim.hot_links(1)
    return SimRow(task, sched.label(), sim.time, clean, sim.bandwidth, hot[0][0] if hot else None, sim.seed)


def executor_named(kind: str, workers: int | None = None) -> "concurrent.futures.Executor | None":
    """``serial`` (None), ``process`` (local processes) or ``mpi``
    (``mpi4py.futures.MPIPoolExecutor``; run under ``mpiexec -n N python -m
    mpi4py.futures -m topocoll ...``)."""
    if kind == "serial":
        return None
    if kind == "process":
        from concurrent.futures import ProcessPoolExecutor
        return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    if kind == "mpi":
        from mpi4py.futures import MPIPoolExecutor
        return MPIPoolExecutor(max_workers=workers)
    raise SpecError(f"executor {kind!r}, expected serial, process or mpi")


def run_sweep(tasks: list[SimTask], *, executor: str = "serial", workers: int | None = None,
              progress=None) -> list[SimRow]:
    """Run every task; rows in task order. ``progress(done, total)`` after each."""
    pool = executor_named(executor, workers)
    rows: list[SimRow] = []
    if pool is None:
        for t in tasks:
            rows.append(run_task(t))
            if progress:
                progress(len(rows), len(tasks))
        return rows
    with pool:
        for row in pool.map(run_task, tasks):
            rows.append(row)
            if progress:
                progress(len(rows), len(tasks))
    return rows
