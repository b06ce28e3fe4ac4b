"""Check real MPI execution against the serial reference, under mpiexec.

    mpiexec -n 4 python -m topocoll.mpi.check [--collective C] [--algorithm A]
        [--param n=2 ...] [--count N] [--op sum|max|affine|...] [--seed S]
        [--transport p2p|rma] [--progress auto|dataflow|script] [--runs N] [--suite] [--fail-rank R [--fail-in start|op]]
        [--disagree FIELD] [--operators] [--oneshot] [--mismatch FIELD]

Every rank derives every rank's input from the seed, runs its part through a
plan (:func:`topocoll.mpi.plan`) ``--runs`` times with new data each run,
and compares its output blocks with the collective's serial definition.
Rank 0 prints one line per case (``OK ...`` or ``MISMATCH ...``) with the
seed; the exit status is 1 if any case mismatched.

``--suite`` checks everything this P allows: every algorithm of every
collective with every operator kind it supports, counts not divisible by P
and zero, both transports, a plan reused 100 times, the mpi4py-shaped calls
against the library's own collectives, split-phase round counts and
compositing. ``--operators`` runs every reduction algorithm with every
operator against the MPI library (:mod:`.operator_check`). ``--fail-rank R`` makes rank R fail (before the collective, or
inside a reduction with ``--fail-in op``) to show that the job aborts with
one line instead of hanging; ``--disagree FIELD`` makes rank P-1 call with
another count, algorithm or operator, to show that every rank gets the same
error before data moves. ``--oneshot`` checks the one-shot calls' plan cache
and ``--mismatch FIELD`` a mismatch on a cached call (:mod:`.oneshot_check`).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import SpecError
from .abort import run_or_abort
from .oneshot_check import check_oneshot, mismatch
from .operator_check import check_operators
from .operators import Operator

OPS = ["sum", "max", "prod", "xor", "affine"]


def _parse(argv):
    from ..argtypes import parse_params, positive_int

    parser = argparse.ArgumentParser(prog="python -m topocoll.mpi.check", description=__doc__.splitlines()[0])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--algorithm", default=None)
    parser.add_argument("--param", action="append")
    parser.add_argument("--count", type=int, default=37)
    parser.add_argument("--op", default="sum", choices=OPS)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--transport", default="p2p", choices=["p2p", "rma"])
    parser.add_argument("--runs", type=positive_int, default=1)
    parser.add_argument("--progress", default="auto", choices=["auto", "dataflow", "script"])
    parser.add_argument("--suite", action="store_true")
    parser.add_argument("--operators", action="store_true",
                        help="every reduction algorithm with every operator, against the MPI library")
    parser.add_argument("--fail-rank", type=int, default=None)
    parser.add_argument("--fail-in", default="start", choices=["start", "op"])
    parser.add_argument("--disagree", default=None, choices=["count", "algorithm", "op", "p"])
    parser.add_argument("--oneshot", action="store_true",
                        help="the one-shot calls' plan cache: repeated calls, changing buffers, bound, freed")
    parser.add_argument("--start-test", action="store_true",
                        help="Plan.start() then polling Plan.test() (MPI_Start/MPI_Test), 8 B to 1 MiB")
    parser.add_argument("--mismatch", default=None, choices=["count", "algorithm", "new"],
                        help="rank P-1 makes another cached call (or a new one): the job must end, not hang")
    args = parser.parse_args(argv)
    if args.count < 0:
        raise SpecError(f"--count {args.count}, expected a count >= 0")
    return args, parse_params(args.param)


class Report:
    """Rank 0 prints; every rank learns the failure count."""

    def __init__(self, comm, seed):
        self.comm, self.seed, self.failures, self.lines = comm, seed, 0, 0

    def case(self, what: str, bad) -> None:
        everyone = self.comm.gather(bad, root=0)
        if self.comm.Get_rank() == 0:
            wrong = {r: b for r, b in enumerate(everyone) if b}
            status = "OK" if not wrong else f"MISMATCH at ranks {wrong}"
            print(f"{status} {what} seed={self.seed}", flush=True)
            self.failures += bool(wrong)
            self.lines += 1


def _inputs(op: str, p: int, count: int, seed: int):
    from ..verify import affine, affine_inputs, integer_inputs

    if op == "affine":
        return affine_inputs(p, count, seed), affine
    return integer_inputs(p, count, seed), op


def check_schedule(report: Report, sched, op: str, *, seed: int, runs: int = 1, transport: str = "p2p",
                   progress: str = "auto") -> None:
    """Run ``sched`` through one plan ``runs`` times with new data each run."""
    from ..verify import serial_reference
    from .plan import plan

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    inputs, func = _inputs(op, p, sched.count, seed)
    x = np.array(inputs[rank], copy=True)
    y = np.zeros_like(x)
    pl = plan(sched, x, y, op=func, comm=comm, transport=transport, progress=progress)
    bad = []
    for run in range(runs):
        if run:
            inputs, _ = _inputs(op, p, sched.count, seed + run)
            x[...] = inputs[rank]
        pl.run()
        want = serial_reference(sched, inputs, func)[rank]
        bad += [(run, b) for b, v in want.items() if not np.array_equal(y[sched.bounds[b]:sched.bounds[b + 1]], v)]
    pl.free()
    shown = op if op != "affine" else "affine (non-commutative)"
    how = f"transport={transport}" + (f" progress={progress}" if progress != "auto" else "")
    report.case(f"{sched.label()} op={shown} count={sched.count} {how} runs={runs}", bad[:3])


def _cases(collective: str, p: int, params: dict, op: str):
    from ..schedules import catalogue

    for info in catalogue().values():
        if info.collective != collective:
            continue
        merged = {**info.sweep[0], **params}
        if not info.supports(p, merged):
            continue
        if op == "affine" and info.needs.commutative:
            continue
        if info.needs.idempotent and op not in ("max",):
            continue
        yield info.name, merged


def _count(collective: str, count: int, p: int) -> int:
    return count * p if collective == "alltoall" else count


def run_cases(report, collective, algorithm, params, op, count, seed, runs, transport, progress="auto") -> None:
    from ..schedules import generate
    from ..schedules.registry import check_collective, lookup

    p = report.comm.Get_size()
    check_collective(collective)           # a misspelt name must not check nothing and pass
    if algorithm:
        lookup(collective, algorithm)
    cases = [(algorithm, params)] if algorithm else list(_cases(collective, p, params, op))
    if not cases:
        raise SpecError(f"--collective {collective} --op {op}: no algorithm runs on P={p} with this operator, "
                        "expected at least one case to check")
    for name, case_params in cases:
        sched = generate(collective, name, p, count=_count(collective, count, p), **case_params)
        check_schedule(report, sched, op, seed=seed, runs=runs, transport=transport, progress=progress)


#: "gather" was listed here too, but the catalogue has no gather: it checked nothing (now refused)
SUITE_OPS = {"allreduce": ["sum", "affine", "max"], "reduce": ["affine"], "bcast": ["sum"], "barrier": ["max"],
             "reduce_scatter": ["sum", "affine"], "allgather": ["sum"], "alltoall": ["sum"]}


def suite(report: Report, seed: int) -> None:
    """Everything this P allows (see the module docstring)."""
    from ..schedules import generate
    from .api_check import check_api, check_identical, check_split

    comm = report.comm
    p = comm.Get_size()
    for collective, ops in SUITE_OPS.items():
        for op in ops:
            run_cases(report, collective, None, {}, op, 37, seed, 2, "p2p")
    for collective in ("allreduce", "reduce_scatter", "alltoall", "bcast"):
        for count in (1, 2 * p + 1):   # empty blocks (count < P) and not divisible by P
            run_cases(report, collective, None, {}, "sum", count, seed, 1, "p2p")
        run_cases(report, collective, None, {}, "sum", 11, seed, 2, "rma")
    run_cases(report, "allreduce", None, {}, "affine", 13, seed, 1, "rma")
    for collective, op in (("allreduce", "affine"), ("reduce_scatter", "affine"), ("alltoall", "sum"),
                           ("allgather", "sum")):   # the dataflow engine on small messages too
        run_cases(report, collective, None, {}, op, 2 * p + 1, seed, 2, "p2p", "dataflow")
    sched = generate("allreduce", "ring" if p > 1 else "binomial", p, count=5 * p + 3)
    check_schedule(report, sched, "sum", seed=seed, runs=100)
    check_api(report, seed)
    check_identical(report, seed)
    check_split(report, seed)
    check_tag_bound(report)
    check_misuse(report)


def check_misuse(report: Report) -> None:
    """Misusing a plan is this rank's own error (a :class:`StateError`
    raised here), not a job abort: the suite goes on after each one."""
    from ..errors import StateError
    from ..schedules import generate
    from .plan import plan

    comm = report.comm
    p = comm.Get_size()
    pl = plan(generate("allreduce", "pairwise_exchange", p, count=4), np.ones(4), comm=comm)
    pl_split = plan(generate("allreduce", "pairwise_exchange", p, count=4), np.ones(4), comm=comm)
    heard = []

    def expect(what, call, words):
        try:
            call()
            heard.append(f"{what}: accepted")
        except StateError as exc:
            if words not in str(exc):
                heard.append(f"{what}: {exc}")

    expect("wait() before start()", pl.wait, "wait() with no run in progress, expected start() first")
    pl.start()
    expect("start() twice", pl.start, "start() while a run is in progress")
    expect("free() while running", pl.free, "free() while a run is in progress")
    expect("start_split() while running", pl.start_split, "start_split() while a run is in progress")
    result = pl.wait()
    if not np.array_equal(result, np.full(4, float(p))):
        heard.append(f"the run after the refused calls gave {result}")
    pl_split.start_split()
    expect("start() during a split-phase run", pl_split.start, "start() while a run is in progress")
    pl_split.wait()
    pl.free()
    pl_split.free()
    expect("start() after free()", pl.start, "start() after free()")
    expect("wait() after free()", pl.wait, "wait() after free()")
    expect("test() after free()", pl.test, "test() after free()")
    report.case("plan misuse (wait before start, start twice, free while running, start/wait/test after free) "
                "raises StateError on the calling rank", heard)


def check_tag_bound(report: Report) -> None:
    """A schedule whose tags exceed ``MPI_TAG_UB`` is refused on every rank
    with one line, before anything is posted."""
    from mpi4py import MPI

    from ..schedules.ir import Recv, Schedule, Send
    from .plan import plan

    comm = report.comm
    p = comm.Get_size()
    tag = comm.Get_attr(MPI.TAG_UB) + 1
    ops = [[Send((r + 1) % p, "data", (0,), tag, 0), Recv((r - 1) % p, "data", (0,), (0,), tag, 0)]
           for r in range(p)]
    sched = Schedule.from_ops("allreduce", ops, count=1)
    try:
        plan(sched, np.zeros(1), comm=comm).free()
        bad = ["accepted"]
    except SpecError as exc:
        bad = [] if f"exceeds MPI_TAG_UB={tag - 1}" in str(exc) else [str(exc)]
    report.case("a tag beyond MPI_TAG_UB is refused on every rank", bad)
    # a malformed schedule (rank r's input block r of a 1-block vector): one error everywhere, no hang
    broken = Schedule.from_ops("allgather", [[] for _ in range(p)], count=1)
    try:
        plan(broken, np.zeros(1), comm=comm).free()
        bad = [] if p == 1 else ["accepted"]
    except SpecError as exc:
        bad = [] if "IndexError" in str(exc) else [str(exc)]
    report.case("a malformed schedule is refused on every rank", bad)


def disagree(comm, field: str) -> None:
    """Rank P-1 calls with another ``field``; every rank must raise the same error."""
    from ..schedules import generate
    from .api import allreduce
    from .plan import plan

    rank, p = comm.Get_rank(), comm.Get_size()
    odd = rank == p - 1
    x = np.arange(8, dtype=np.float64)
    try:
        if field == "p":   # a schedule for another P: plan() refuses it on that rank, everyone hears
            pl = plan(generate("allreduce", "binomial", p + 1 if odd else p, count=8), x, comm=comm)
            pl.run()
        else:
            kwargs = {"count": dict(sendbuf=x[:7] if odd else x),
                      "algorithm": dict(sendbuf=x, algorithm="binomial" if odd else "pairwise_exchange"),
                      "op": dict(sendbuf=x, op="max" if odd else "sum")}[field]
            sendbuf = kwargs.pop("sendbuf")
            kwargs.setdefault("algorithm", "pairwise_exchange")
            allreduce(sendbuf, comm=comm, **kwargs)
    except SpecError as exc:
        messages = comm.gather(str(exc), root=0)
        if rank == 0:
            same = len(set(messages)) == 1
            print(f"{'DETECTED' if same else 'DIFFERENT'} {messages[0]}", flush=True)
        return
    if rank == 0:
        print("UNDETECTED: every rank completed", flush=True)


def main(argv=None) -> int:
    from mpi4py import MPI

    args, params = _parse(argv)
    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    if args.fail_rank is not None and not 0 <= args.fail_rank < p:
        raise SpecError(f"--fail-rank {args.fail_rank}, expected a rank in 0..{p - 1} (the job has {p} ranks)")
    report = Report(comm, args.seed)
    if args.disagree:
        disagree(comm, args.disagree)
        return 0
    if args.mismatch:
        mismatch(comm, args.mismatch)
        return 0
    if args.fail_rank is not None:
        return fail(comm, args.fail_rank, args.fail_in)
    if args.start_test:
        check_start_test(report, args.seed)
    elif args.operators:
        check_operators(report, args.seed)
    elif args.oneshot:
        check_oneshot(report, args.seed)
    elif args.suite:
        suite(report, args.seed)
    else:
        run_cases(report, args.collective, args.algorithm, params, args.op, args.count, args.seed, args.runs,
                  args.transport, args.progress)
    failures = comm.bcast(report.failures, root=0)
    return 1 if failures else 0


#: message sizes of :func:`check_start_test`: both sides of the scripted runs' 256 KiB bound (plan.SCRIPT_BYTES)
START_TEST_BYTES = (8, 4096, 1 << 18, 1 << 20)


def check_start_test(report: Report, seed: int) -> None:
    """``start()`` then ``test()`` until True, the MPI_Start / MPI_Test pattern, for an allreduce of
    every size of :data:`START_TEST_BYTES` (float64), twice on one plan; the result against the
    serial sum. Small messages run as a script by default, which ``test()`` once could not advance."""
    from ..schedules import generate
    from ..verify import integer_inputs
    from .plan import plan

    comm = report.comm
    rank, p = comm.Get_rank(), comm.Get_size()
    for nbytes in START_TEST_BYTES:
        count = nbytes // 8
        inputs = integer_inputs(p, count, seed)
        want = np.sum([np.asarray(x, np.float64) for x in inputs], axis=0)
        x = np.asarray(inputs[rank], np.float64).copy()
        y = np.zeros_like(x)
        pl = plan(generate("allreduce", "ring" if count >= p else "nway_dissemination", p, count=count), x, y,
                  comm=comm)
        bad, polls = [], 0
        for run in range(2):
            y[...] = 0
            pl.start()
            while not pl.test():
                polls += 1
                if polls > 10_000_000:
                    bad.append((run, "test() never returned True"))
                    break
            if not np.array_equal(y, want):
                bad.append((run, "result differs from the serial sum"))
        pl.free()
        report.case(f"start() + test() polling, {pl.program.label} {nbytes} B", bad)


def fail(comm, fail_rank: int, where: str) -> int:
    """Rank ``fail_rank`` fails; the job must end with its one line."""
    from ..schedules import generate
    from .plan import plan

    rank, p = comm.Get_rank(), comm.Get_size()
    if where == "start" and rank == fail_rank:
        raise SpecError(f"--fail-rank={rank}: failing on purpose to show the job aborts")

    def add(left, right):
        if rank == fail_rank:
            raise ValueError("the reduction operator failed on purpose (--fail-in op)")
        return left + right

    op = Operator(add, commutative=True)   # ring needs a commutative operator above P = 2
    pl = plan(generate("allreduce", "ring", p, count=4), np.ones(4), op=op, comm=comm)   # every rank reduces
    pl.run()
    comm.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(run_or_abort(main))
