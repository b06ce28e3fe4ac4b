"""MPI executor set-up (issue 10): compiling one rank's part of a schedule at
P = 65,536, without communication (``topocoll.mpi.compile_rank``: ops_for
of that rank, data flow, memory layout). Target: <= 1 s.

Every algorithm of the catalogue that exists at that P, with its default
parameters (all-to-all: 1 byte per destination; the others: 4 elements per
rank), one rank (12,345), best of 2 runs, each on a freshly generated schedule (as a
new process has it; generation itself is outside the timing: O(1) to O(P),
done by every rank of a job alike).
"""

from __future__ import annotations

import time

COMMAND = "python benchmarks/run.py --only executor"
P = 65536
RANK = 12345


def _compile_times():
    from topocoll.mpi.compile import compile_rank
    from topocoll.schedules import catalogue, generate

    rows = []
    for info in catalogue().values():
        params = info.sweep[0]
        if not info.supports(P, params):
            continue
        alltoall = info.collective == "alltoall"
        best, ops = float("inf"), 0
        for _ in range(2):
            # a fresh schedule each time, as a new process has: nothing the
            # pattern caches (a circulant's rank-0 data flow) is reused
            sched = generate(info.collective, info.name, P, count=P if alltoall else 4 * P,
                             itemsize=1 if alltoall else 8, **params)
            start = time.perf_counter()
            program = compile_rank(sched, RANK)
            best = min(best, time.perf_counter() - start)
            ops = len(program)
        rows.append((info.collective, info.name, ops, best))
    return rows


def run() -> str:
    rows = _compile_times()
    met = sum(1 for *_, t in rows if t <= 1.0)
    lines = [
        "## MPI executor: one rank's plan compile at P = 65,536 (issue 10)",
        "",
        f"Command: `{COMMAND}`. `compile_rank(schedule, {RANK})` per algorithm with default parameters "
        "(no communication; best of 2, each on a freshly generated schedule, so a circulant pattern's rank-0 data flow "
        "is paid as a new process pays it). Target: <= 1 s.",
        "",
        f"**{met} of {len(rows)}** algorithms within the target. Those above it have O(P) operations per rank "
        "(one per peer or per ring step); their cost is one Python object per operation plus its data flow "
        "(docs/mpi.md, Limits).",
        "",
        "| collective | algorithm | ops of the rank | compile | target |",
        "|---|---|---|---|---|",
    ]
    for coll, name, ops, t in rows:
        lines.append(f"| {coll} | {name} | {ops:,} | {t:.3f} s | {'met' if t <= 1.0 else 'missed'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
