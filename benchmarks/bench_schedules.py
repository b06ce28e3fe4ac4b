"""The op program streamed at P = 2^16 for every generator, and one rank's ops.

Issue 8: op-program streaming at P = 2^16 for every generator (wall, peak
RSS, ops/s); Rabenseifner's ops for one rank at P = 2^16 in <= 1 s; the whole
program of nway_dissemination at P = 2^16 in <= 2 s and <= 1 GiB. Each case
runs in its own process so its peak RSS is its own. P² patterns (P - 1 rounds
of P messages) stream their first rounds up to an op budget: ops/s is the
measured rate, the total is what the whole program would hold.
"""

from peak_rss import run_child

P = 2**16
OP_BUDGET = 20_000_000
TIMEOUT_S = 300
MEMORY_LIMIT = 8 << 30   # address space of one case: a case over it fails, not the machine

CHILD = r"""
import json, sys, time
from topocoll.schedules import catalogue, generate
collective, name, p, params, budget = json.loads(sys.argv[1])
info = catalogue()[(collective, name)]
count = 3 * p if collective == "alltoall" else p
start = time.perf_counter()
sched = generate(collective, name, p, count=count, **params)
ops = rounds = 0
complete = True
kind = type(sched.pattern).__name__
if kind != "CirculantPattern" and len(sched.ops_for(p // 3)) * p > budget:
    # a rank-wise program is built from every rank's ops: over the budget,
    # measure what an MPI process builds instead, its own ops
    start = time.perf_counter()
    ops = len(sched.ops_for(p // 3))
    wall = time.perf_counter() - start
    print(json.dumps({"wall": wall, "rss": peak_rss(), "ops": ops, "rounds": 0, "complete": False,
                      "pattern": kind + " (ops_for one rank)"}))
    sys.exit(0)
for chunk in sched.program():
    ops += len(chunk)
    rounds += 1
    if ops >= budget:
        complete = False
        break
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "rss": peak_rss(), "ops": ops, "rounds": rounds, "complete": complete,
                  "pattern": kind}))
"""

ONE_RANK = r"""
import json, sys, time
from topocoll.schedules import generate
collective, name, p, params, rank = json.loads(sys.argv[1])
start = time.perf_counter()
sched = generate(collective, name, p, count=p, **params)
ops = sched.ops_for(rank)
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "rss": peak_rss(), "ops": len(ops)}))
"""


def _child(code, args):
    return run_child(code, args, timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)


def _cases():
    from topocoll.schedules import catalogue

    for (collective, name), info in catalogue().items():
        params = info.sweep[0]
        if not info.supports(P, params):
            continue
        yield collective, name, params


def run() -> str:
    rows = ["| collective | algorithm | pattern | params | rounds streamed | ops streamed | complete | wall (s) "
            "| ops/s | peak RSS (MiB) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for collective, name, params in _cases():
        shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
        r, err = _child(CHILD, [collective, name, P, params, OP_BUDGET])
        if err:
            rows.append(f"| {collective} | {name} | - | {shown} | - | - | - | - | - | failed: {err} |")
            continue
        rows.append(f"| {collective} | {name} | {r['pattern']} | {shown} | {r['rounds']} | {r['ops']:,} | "
                    f"{'yes' if r['complete'] else 'no (budget)'} | {r['wall']:.2f} | "
                    f"{r['ops'] / max(r['wall'], 1e-9):,.0f} | {r['rss'] / 2**20:.0f} |")
    targets = ["| case | wall (s) | peak RSS (MiB) | ops | target |", "|---|---|---|---|---|"]
    r, err = _child(ONE_RANK, ["allreduce", "rabenseifner", P, {}, 12345])
    targets.append("| rabenseifner `ops_for(12345)`, P = 2^16 | " + (
        f"{r['wall']:.2f} | {r['rss'] / 2**20:.0f} | {r['ops']:,} | {'met' if r['wall'] <= 1 else 'MISSED'} (<= 1 s) |"
        if r else f"- | - | - | failed: {err} |"))
    r, err = _child(CHILD, ["allreduce", "nway_dissemination", P, {"n": 1}, 10**12])
    ok = r and r["wall"] <= 2 and r["rss"] <= 2**30
    targets.append("| nway_dissemination whole program, P = 2^16 | " + (
        f"{r['wall']:.2f} | {r['rss'] / 2**20:.0f} | {r['ops']:,} | {'met' if ok else 'MISSED'} (<= 2 s, <= 1 GiB) |"
        if r else f"- | - | - | failed: {err} |"))
    return ("## Op program at scale (issue 8)\n\n"
            "Command: `python benchmarks/run.py --only schedules` (one process per case; the workload is "
            f"`generate(...)` then iterating `schedule.program()`; P = {P:,}, count = P elements "
            f"(all-to-all: 3P); first parameter set of each generator's sweep; streaming stops after "
            f"{OP_BUDGET:,} ops — the P² patterns — and says so; a rank-wise pattern whose whole program would "
            "exceed that budget is measured by one rank's `ops_for`, what one MPI process builds).\n\n"
            + "\n".join(targets) + "\n\n" + "\n".join(rows) + "\n")
