"""Rank-wise patterns as arrays (issue 18 item 2): whole op programs and one rank's MPI compile at P = 65,536.

Targets: the whole op program of Rabenseifner, binomial and pairwise exchange
(allreduce) at P = 65,536 in <= 3 s and <= 1 GiB; one rank's MPI compile
(``topocoll.mpi.compile.compile_rank``: ``ops_for(rank)``, then the plan's
layout) in <= 1 s for every algorithm at P = 65,536. Each case runs in its
own process (``peak_rss.run_child``), so its peak RSS is its own; the other
rank-wise patterns' whole programs are listed too, for the record.

Reproduce: ``.venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only patterns``.
"""

from peak_rss import run_child

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only patterns"
P = 2**16
RANK = 12345
TIMEOUT_S = 300
MEMORY_LIMIT = 8 << 30
PROGRAM_TARGET_S, PROGRAM_TARGET_B = 3.0, 1 << 30
COMPILE_TARGET_S = 1.0

# whole programs measured: the three targets, then the other rank-wise
# patterns whose program is O(P log P) ops (the O(P^2) ones are too big whole)
TARGETS = (("allreduce", "rabenseifner", {}), ("allreduce", "binomial", {}),
           ("allreduce", "pairwise_exchange", {"leftover": "neighbours"}))
OTHERS = (("allreduce", "butterfly_virtual", {}), ("barrier", "butterfly", {"leftover": "neighbours"}),
          ("bcast", "binomial", {"root": 0}), ("reduce", "binomial", {"root": 0, "order": "rank"}),
          ("reduce_scatter", "binary_swap", {}), ("reduce_scatter", "two_three_swap", {}),
          ("reduce_scatter", "radix_k", {}))

# the same command on the tree before issue 18 item 2 (scalar RankwisePattern for all of these), run
# 2026-11-25 on this 2-core machine while a pytest session shared it: (wall s, peak RSS MiB). The quieter
# run of "Op program at scale (issue 8)" had Rabenseifner 45.6 s / 3,494 MiB, binomial 2.63 s / 222 MiB,
# pairwise exchange 23.3 s / 1,760 MiB.
BEFORE = {"rabenseifner": (95.63, 3495), "binomial": (9.50, 222), "pairwise_exchange": (82.52, 1760),
          "butterfly_virtual": (73.92, 1760), "butterfly": (28.16, 1760), "binary_swap": (30.61, 1930),
          "two_three_swap": (30.93, 1808), "radix_k": (71.13, 3985)}
BEFORE_SMALL = {("bcast", "binomial"): (1.17, 114), ("reduce", "binomial"): (1.97, 151)}

PROGRAM = r"""
import json, sys, time
from topocoll.schedules import generate
collective, name, p, params = json.loads(sys.argv[1])
start = time.perf_counter()
sched = generate(collective, name, p, count=p, **params)
ops = rounds = 0
for chunk in sched.program():
    ops += len(chunk)
    rounds += 1
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "rss": peak_rss(), "ops": ops, "rounds": rounds,
                  "pattern": type(sched.pattern).__name__}))
"""

COMPILE = r"""
import json, sys, time
from topocoll.mpi.compile import compile_rank
from topocoll.schedules import generate
collective, name, p, params, rank = json.loads(sys.argv[1])
alltoall = collective == "alltoall"
start = time.perf_counter()
sched = generate(collective, name, p, count=p if alltoall else 4 * p, itemsize=1 if alltoall else 8, **params)
gen = time.perf_counter() - start
start = time.perf_counter()
ops = sched.ops_for(rank)
ops_for = time.perf_counter() - start
sched = generate(collective, name, p, count=p if alltoall else 4 * p, itemsize=1 if alltoall else 8, **params)
start = time.perf_counter()
prog = compile_rank(sched, rank)
wall = time.perf_counter() - start
print(json.dumps({"generate": gen, "ops_for": ops_for, "compile": wall, "rss": peak_rss(), "ops": len(prog),
                  "pattern": type(sched.pattern).__name__}))
"""


def _child(code, args):
    return run_child(code, args, timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)


def _shown(params):
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "-"


def _program_rows(cases, targets: bool):
    rows = []
    for collective, name, params in cases:
        r, err = _child(PROGRAM, [collective, name, P, params])
        before = BEFORE_SMALL.get((collective, name)) or BEFORE.get(name)
        if collective == "allreduce" and name == "binomial":
            before = BEFORE["binomial"]
        was = f"{before[0]:.2f} s, {before[1]:,} MiB" if before else "-"
        head = f"| {collective} | {name} | {_shown(params)} |"
        if err:
            rows.append(f"{head} - | - | - | - | - | {was} | failed: {err} |")
            continue
        mark = "-"
        if targets:
            ok = r["wall"] <= PROGRAM_TARGET_S and r["rss"] <= PROGRAM_TARGET_B
            mark = "met" if ok else "MISSED"
        rows.append(f"{head} {r['pattern']} | {r['rounds']} | {r['ops']:,} | {r['wall']:.2f} | "
                    f"{r['rss'] / 2**20:.0f} | {was} | {mark} |")
    return rows


def _compile_rows():
    from topocoll.schedules import catalogue

    rows, met, total = [], 0, 0
    for (collective, name), info in catalogue().items():
        params = info.sweep[0]
        if not info.supports(P, params):
            continue
        total += 1
        r, err = _child(COMPILE, [collective, name, P, params, RANK])
        head = f"| {collective} | {name} | {_shown(params)} |"
        if err:
            rows.append(f"{head} - | - | - | - | - | - | failed: {err} |")
            continue
        ok = r["compile"] <= COMPILE_TARGET_S
        met += ok
        rows.append(f"{head} {r['pattern']} | {r['ops']:,} | {r['generate']:.3f} | {r['ops_for']:.3f} | "
                    f"{r['compile']:.3f} | {r['rss'] / 2**20:.0f} | {'met' if ok else 'MISSED'} |")
    return rows, met, total


def run() -> str:
    head = ("| collective | algorithm | params | pattern | rounds | ops | wall (s) | peak RSS (MiB) | before | target |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    targets = _program_rows(TARGETS, True)
    others = _program_rows(OTHERS, False)
    compiles, met, total = _compile_rows()
    return (
        "## Rank-wise patterns as arrays: whole programs and one rank's compile at P = 65,536 (issue 18)\n\n"
        f"Command: `{COMMAND}`. One process per case. Whole program: `generate(..., count=P)` then "
        "iterating `schedule.program()` to the end (wall includes generation; peak RSS is the process's "
        f"VmHWM). Target: <= {PROGRAM_TARGET_S:g} s and <= 1 GiB. \"before\": the same command on the tree "
        "before the array patterns (scalar `RankwisePattern`s); its first cases shared the machine with a test "
        "session, so their walls are 2-4x a quiet run's (\"Op program at scale (issue 8)\": Rabenseifner 45.6 s, "
        "pairwise exchange 23.3 s, binomial 2.6 s).\n\n"
        + head + "\n" + "\n".join(targets) + "\n\n"
        "Other rank-wise patterns, whole program (no target):\n\n"
        + head + "\n" + "\n".join(others) + "\n\n"
        f"One rank's MPI compile: `compile_rank(schedule, {RANK})` on a freshly generated schedule "
        "(all-to-all: 1 byte per destination; the others: 4 elements per rank; first parameter set of each "
        "generator's sweep), as `benchmarks/bench_executor.py` measures it; `ops_for` is "
        "`schedule.ops_for(rank)` alone on another fresh schedule, `generate` the generator call. "
        f"Target: compile <= {COMPILE_TARGET_S:g} s.\n\n"
        f"**{met} of {total}** algorithms within the target (before the array patterns: 14 of 27, the same 14). "
        "Those above it have O(P) operations per rank: their `ops_for` is still one Python object and one "
        "data-flow step per operation (rank-wise all-to-alls and compositing: not array patterns yet; "
        "circulant patterns: rank 0's data flow), and `compile_rank` itself walks every operation and block in "
        "Python (about 0.6 s for direct all-to-all's 131,071 operations alone).\n\n"
        "| collective | algorithm | params | pattern | ops of the rank | generate (s) | ops_for (s) | compile (s) "
        "| peak RSS (MiB) | target |\n|---|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(compiles) + "\n")


if __name__ == "__main__":
    print(run())
