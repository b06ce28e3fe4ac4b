"""The tuner's evaluations in batches: one schedule's op program derived once, every size and order from it.

The tuner asks, for every candidate (collective, algorithm, parameters, P),
the model's time at up to 64 sizes and several node orders. Profiled on
``tune allreduce,alltoall -P 64,256 --sizes 8..4M --topology kary:16,2``
(2-core machine): all but a few percent of the time went to deriving the
schedules of the rank-wise all-to-alls (direct, randomized, two-phase,
virtual mesh; :class:`~topocoll.schedules.pattern.RankwisePattern`), once
per (size, order) and, inside each evaluation, twice (the model's pass over
the rounds and :func:`~topocoll.schedules.metrics.report`'s): P = 256 took
0.5–2.5 s to build one schedule's ops and 0.7–1.4 s for each pass over its
op program, while the static contention model itself took milliseconds.

A :class:`Batch` is one candidate at all its sizes and orders. Its sizes
share one op program where the op structure is the same: the schedule at a
later size has the same parameters (resolved), block count and buffers as the
first, and the same operations on probe ranks 0, P/2 and P − 1; then its
program is the first one's with each operation's bytes recomputed from its
block runs (:func:`~topocoll.schedules.program.run_bytes`, the only part of
a program that depends on the block sizes). At each size the round summary
is derived once (:func:`rounds_once`), for the model at every node order and
for the report, which is made once per size, not once per order. Batches are
independent: :func:`run_batches` runs them on worker processes, largest
first (the engine and the routing release the GIL, ``py.allow_threads`` in
``src/bindings``, but the time here is Python's, building schedules, so
threads would not help).
"""

from __future__ import annotations

import dataclasses
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from ..errors import TopocollError
from ..schedules.ir import Schedule
from ..schedules.metrics import ScheduleReport, report
from ..schedules.pattern import RankwisePattern
from ..schedules.program import run_bytes
from ..schedules.registry import lookup, operator_allows
from .rank import _detach, _network_field, _Shipped, _start_method, _stop

__all__ = ["Batch", "Job", "estimate_seconds", "rounds_once", "run_batch", "run_batches", "share_program"]


@dataclass(frozen=True)
class Job:
    """One evaluation the tuner records: ``key`` (its grid point, or a library's), the size
    (an index into :attr:`Batch.args`) and the node order it runs on."""

    key: tuple
    size: int
    order: str


@dataclass(frozen=True)
class Batch:
    """One candidate (collective, algorithm, parameters, P) and the evaluations asked of it."""

    collective: str
    algorithm: str
    p: int
    params: dict
    args: tuple            # per size: the generator's vector arguments (``from_bytes``)
    commutative: bool
    idempotent: bool
    op: str
    tier: int              # 0: always evaluated; 1: extra values, skipped once the budget is spent
    jobs: tuple            # of Job
    work: int = 0          # messages of one schedule (the registry's bound): the cost estimate's unit
    rankwise: bool = False  # built rank by rank in Python (the estimate's costly kind)


# ---- one op program for many sizes -------------------------------------------------------------

class _KnownProgram:
    """A rank-wise pattern whose op program was derived once, at another size:
    ``chunks(block_bytes)`` is that program with each operation's bytes taken
    from ``block_bytes``; every other view is the schedule's own pattern's."""

    def __init__(self, pattern, buffers: tuple, chunks: list):
        self._pattern, self._buffers, self._chunks = pattern, buffers, chunks
        self.p = pattern.p

    def ops_for(self, rank: int):
        return self._pattern.ops_for(rank)

    def all_ops(self):
        return self._pattern.all_ops()

    def buffers(self):
        return self._buffers          # the program's (from the first schedule; the probes agree)

    def __getattr__(self, name):
        # every other view (op_count, round_sizes, streams, ...: the event models' estimates) is the
        # schedule's own pattern's, as the docstring says; without this `tune --model flow` failed
        if name.startswith("__") or name in ("_pattern", "_buffers", "_chunks"):
            raise AttributeError(name)
        return getattr(self._pattern, name)

    def chunks(self, block_bytes):
        for chunk in self._chunks:
            yield dataclasses.replace(chunk, nbytes=run_bytes(block_bytes, chunk.run_ptr, chunk.run_dst,
                                                              chunk.run_len, chunk.run_count, chunk.run_dst_stride))


def _signature(sched) -> tuple:
    probes = sorted({0, sched.p // 2, sched.p - 1})
    return ((sched.collective, sched.algorithm, sched.p, repr(sched.params), sched.nblocks, sched.needs,
             sched.root), tuple(tuple(sched.pattern.ops_for(r)) for r in probes))


class _RoundsOnce(Schedule):
    """A schedule whose round summary is derived once: the model's pass over the rounds, at
    every node order, and :func:`~topocoll.schedules.metrics.report` read the same list."""

    def rounds(self):
        cached = self.__dict__.get("_rounds")
        if cached is None:
            cached = self.__dict__["_rounds"] = list(Schedule.rounds(self))
        return iter(cached)


def rounds_once(sched) -> Schedule:
    return _RoundsOnce(**{f.name: getattr(sched, f.name) for f in dataclasses.fields(sched)})


def share_program(sched, known: dict):
    """``sched`` with the op program of an earlier schedule of the same structure (``known``
    holds it, keyed by signature), else with its own, derived now and kept there for the next."""
    if type(sched.pattern) is not RankwisePattern:       # circulant and array patterns: vectorised already
        return sched
    signature = _signature(sched)
    program = known.get(signature)
    if program is None:
        known.clear()                                     # one candidate at a time: keep one program
        program = known[signature] = (tuple(sched.pattern.buffers()),
                                      list(sched.pattern.chunks(sched.block_bytes)))
    return dataclasses.replace(sched, pattern=_KnownProgram(sched.pattern, *program))


# ---- evaluating a batch ------------------------------------------------------------------------

def run_batch(batch: Batch, model, platforms: dict) -> list:
    """Every job of ``batch`` (``platforms``: (P, node order) → Platform): a list, in job order, of ``(row, why)`` as
    :func:`topocoll.tune.rank._evaluate` returns them (``row`` =
    ``(time, name, resolved params, report, estimate)``; ``why`` when left out)."""
    info = lookup(batch.collective, batch.algorithm)
    known: dict = {}
    outcomes: list = [None] * len(batch.jobs)
    by_size: dict[int, list[int]] = {}
    for j, job in enumerate(batch.jobs):
        by_size.setdefault(job.size, []).append(j)
    for size, jobs in sorted(by_size.items()):
        try:
            sched = info.generate(batch.p, **batch.params, **batch.args[size])
        except TopocollError as exc:
            for j in jobs:
                outcomes[j] = (None, str(exc))
            continue
        if not operator_allows(sched.needs, commutative=batch.commutative, idempotent=batch.idempotent):
            for j in jobs:
                outcomes[j] = (None, f"not correct for op={batch.op} at P={batch.p}")
            continue
        sched = rounds_once(share_program(sched, known))
        rep, estimates = None, {}
        for j in jobs:
            order = batch.jobs[j].order
            if order not in estimates:
                estimates[order] = model.estimate(sched, platforms[batch.p, order])
            est = estimates[order]
            if isinstance(est.detail, ScheduleReport):
                this = est.detail
            else:
                rep = report(sched) if rep is None else rep
                this = rep
            outcomes[j] = ((est.time, info.name, sched.params, this, est), None)
    return outcomes


# ---- worker processes --------------------------------------------------------------------------

_WORKER: dict | None = None


def _init_worker(model, platforms: dict) -> None:
    import signal
    global _WORKER
    _WORKER = {"model": model, "platforms": platforms}
    signal.signal(signal.SIGINT, signal.SIG_IGN)         # Ctrl-C: the parent stops the workers


def _work(batch: Batch) -> list:
    out = []
    for row, why in run_batch(batch, _WORKER["model"], _WORKER["platforms"]):
        if row is not None:
            t, name, params, rep, est = row
            row = (t, name, params, rep, dataclasses.replace(est, detail=_detach(est.detail)))
        out.append((row, why))
    return out


def _attach(row, platform, p: int):
    if row is None:
        return row
    t, name, params, rep, est = row
    detail = est.detail
    if not _network_field(detail) or detail.network is not None:
        return row
    if platform.network is not None:
        network = platform.network
    else:
        from ..sim.engine import platform_network
        network = platform_network(platform, p)[0]
    return t, name, params, rep, dataclasses.replace(est, detail=dataclasses.replace(detail, network=network))


def run_batches(batches: list, model, platforms: dict, *, workers: int, on_done, skip=None) -> None:
    """Run ``batches`` (``platforms``: (P, node order) → Platform), calling
    ``on_done(batch, outcomes)`` in this process as each finishes; ``skip(batch)``, asked
    just before a batch would start, leaves it out (the tuner's budget) when true.
    ``workers > 1``: on that many processes (forked on Linux), largest batches first."""
    order = sorted(batches, key=lambda b: (b.tier, -b.work * len(b.jobs)))
    if workers <= 1 or len(order) <= 1 or not _shippable(model, platforms):
        for batch in order:
            if skip is not None and skip(batch):
                continue
            on_done(batch, run_batch(batch, model, platforms))
        return
    import multiprocessing
    context = multiprocessing.get_context(_start_method())
    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                   initargs=(model, platforms))
    queue, pending, finished = list(order), {}, False
    try:
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                batch = queue.pop(0)
                if skip is not None and skip(batch):
                    continue
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks",
                                            category=DeprecationWarning)
                    pending[executor.submit(_work, batch)] = batch
            if not pending:
                break
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in ready:
                batch = pending.pop(future)
                try:
                    outcomes = future.result()
                except BrokenProcessPool:
                    raise TopocollError(f"tune {batch.collective} on P={batch.p}: a worker process died (killed, "
                                        "out of memory?); --jobs 1 runs in-process") from None
                outcomes = [(_attach(row, platforms[batch.p, job.order], batch.p), why)
                            for (row, why), job in zip(outcomes, batch.jobs)]
                on_done(batch, outcomes)
        finished = True
    finally:
        if not finished:
            _stop(executor)
        executor.shutdown(wait=True, cancel_futures=True)


def _shippable(model, platforms: dict) -> bool:
    from .rank import _can_ship
    return all(_can_ship(_Shipped(model, platform)) for platform in platforms.values())


# ---- how long it will take ---------------------------------------------------------------------

#: CPU seconds per message to build a rank-wise schedule's ops and derive its op program, once per
#: batch; per message and evaluation (a size or an order: the model's pass over the rounds); per size
#: and per size and rank (generating the schedule, the report). Least squares over 255 batches of
#: three grids (``-P 16 --topology kary:4,2``, 18 sizes; ``-P 12,64`` α-β-γ, 7 sizes, five
#: collectives; ``-P 64,256 --topology kary:16,2``, 10 sizes; ``--jobs 1``), process time, on the
#: 2-core machine: 1.9e-5, 5.0e-7, 6.4e-4 and 3.1e-5 (rounded).
RANKWISE_S_PER_MESSAGE = 2e-5
EVALUATION_S_PER_MESSAGE = 5e-7
SIZE_S = 6e-4
SIZE_S_PER_RANK = 3e-5


def estimate_seconds(batches: list, workers: int) -> float:
    """Expected wall-clock seconds of :func:`run_batches` on ``workers`` processes: the CPU time
    the batches' message counts take at the rates above, spread over the processes on this machine
    as loaded now (:func:`topocoll.progress.wall_seconds`)."""
    from ..progress import wall_seconds
    cpu = 0.0
    for b in batches:
        sizes = len({job.size for job in b.jobs})
        cpu += (b.work * (RANKWISE_S_PER_MESSAGE * b.rankwise + EVALUATION_S_PER_MESSAGE * len(b.jobs))
                + (SIZE_S + SIZE_S_PER_RANK * b.p) * sizes)
    return wall_seconds(cpu, max(1, min(workers, len(batches))))
