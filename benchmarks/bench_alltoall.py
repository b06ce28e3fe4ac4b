"""All-to-all op programs at the paper's largest partition (issue 4).

Every all-to-all generator at P = 20,480 (Blue Gene/L's 40×32×16 partition,
Kumar & Heidelberger 2008 §4.1, Table 3), messages of m = 1 B per
destination. Each case runs in its own Python process so its peak RSS is its
own, under an address-space limit so that a program too large for the
machine fails with ``MemoryError`` instead of swapping it out:

- Circulant patterns (shift, Bruck): ``schedule.program()`` streamed round by
  round until an op budget, counting ops and block runs. Every rank of a
  Circulant runs rank 0's ops moved by its rank, so the whole program holds
  exactly P × ``len(ops_for(0))`` ops and at least P × (rank 0's block runs).
- Rank-wise patterns (direct, randomized, Two Phase Schedule, virtual mesh):
  ``schedule.ops_for(rank)`` for one rank, what one MPI process builds; their
  op program is merged from every rank's ops (``RankwisePattern.chunks``
  builds ``all_ops()`` first).

Reproduce: ``.venv/bin/python benchmarks/run.py --only alltoall``
(or ``.venv/bin/python benchmarks/bench_alltoall.py``).
"""

from __future__ import annotations

from peak_rss import run_child

COMMAND = ".venv/bin/python benchmarks/run.py --only alltoall"
P = 20480
#: the Two Phase Schedule on the paper's partition, not the default factorisation
PARAMS = {"two_phase_schedule": {"shape": "40x32x16"}}
#: pairwise exchange needs P = 2^k: measured at the power of two below 20,480
P_OF = {"pairwise_exchange": 16384}
OP_BUDGET = 20_000_000
ONE_RANK = 12345
MEMORY_LIMIT = 8 << 30     # address space of one case
TIMEOUT_S = 300

CHILD = r"""
import json, sys, time
from topocoll.schedules import generate
from topocoll.schedules.program import block_runs
name, p, params, budget, rank = json.loads(sys.argv[1])
start = time.perf_counter()
sched = generate("alltoall", name, p, count=p, itemsize=1, **params)
out = {"build": time.perf_counter() - start, "pattern": type(sched.pattern).__name__, "label": sched.label()}
if out["pattern"] == "CirculantPattern":
    ops = rounds = runs = 0
    complete, error = True, None
    start = time.perf_counter()
    try:
        for chunk in sched.program():
            ops += len(chunk)
            runs += len(chunk.run_len)
            rounds += 1
            if ops >= budget:
                complete = False
                break
    except MemoryError:
        complete, error = False, "MemoryError in its first round" if rounds == 0 else \
            f"MemoryError after {rounds} rounds"
    out.update(wall=time.perf_counter() - start, rss=peak_rss(), ops=ops, runs=runs, rounds=rounds,
               complete=complete, error=error)
    rank0 = sched.ops_for(0)   # every rank runs these, moved by its rank
    def runs_of(op):
        if op.kind == "recv":
            return block_runs(op.into, op.blocks)
        if op.kind == "copy":
            return block_runs(op.blocks, op.src_blocks)
        return block_runs(op.blocks, op.blocks)
    per_round = {}
    for op in rank0:
        per_round[op.round] = per_round.get(op.round, 0) + len(runs_of(op))
    out.update(total_ops=p * len(rank0), total_rounds=len(per_round), total_runs=p * sum(per_round.values()),
               max_round_runs=p * max(per_round.values()))
else:
    start = time.perf_counter()
    ops = sched.ops_for(rank)
    out.update(wall=time.perf_counter() - start, rss=peak_rss(), ops=len(ops),
               sends=sum(op.kind == "send" for op in ops), rounds=len({op.round for op in ops}))
print(json.dumps(out))
"""


def measure(name: str, p: int, params: dict) -> tuple[dict | None, str | None]:
    """One case in a fresh process: its result, or why there is none."""
    return run_child(CHILD, [name, p, params, OP_BUDGET, ONE_RANK], timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)


def _cases():
    from topocoll.schedules import catalogue

    for (collective, name), info in catalogue().items():
        if collective == "alltoall":
            yield name, P_OF.get(name, P), PARAMS.get(name, {}), info


def run() -> str:
    circulant = [
        "| generator | P | params | rounds streamed | ops streamed | block runs streamed | complete "
        "| build (s) | stream (s) | ops/s | peak RSS (MiB) | whole program: rounds, ops, block runs "
        "| largest round: block runs |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|",
    ]
    rankwise = [
        "| generator | P | params | rank | ops | sends | rounds | build (s) | `ops_for` (s) | peak RSS (MiB) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for name, p, params, info in _cases():
        if p != P:
            notes.append(f"`{name}` is built for P = 2^k only (P = {P:,}: "
                         f"{'supported' if info.supports(P, params) else 'not supported'}); measured at P = {p:,}.")
        r, err = measure(name, p, params)
        if err:
            notes.append(f"`{name}` at P = {p:,}: failed: {err}.")
            continue
        shown = ", ".join(r["label"].split("(", 1)[1].rstrip(")").split(", ")[1:]) or "-"   # drop p=
        if r["pattern"] == "CirculantPattern":
            status = "yes" if r["complete"] else (r["error"] or "no (op budget)")
            rate = f"{r['ops'] / r['wall']:,.0f}" if r["ops"] else "-"
            circulant.append(
                f"| {name} | {p:,} | {shown} | {r['rounds']:,} | {r['ops']:,} | {r['runs']:,} | {status} | "
                f"{r['build']:.2f} | {r['wall']:.2f} | {rate} | {r['rss'] / 2**20:.0f} | "
                f"{r['total_rounds']:,}, {r['total_ops']:,}, ≥ {r['total_runs']:,} | ≥ {r['max_round_runs']:,} |")
        else:
            rankwise.append(
                f"| {name} ({r['pattern']}) | {p:,} | {shown} | {ONE_RANK:,} | {r['ops']:,} | {r['sends']:,} | "
                f"{r['rounds']:,} | {r['build']:.2f} | {r['wall']:.2f} | {r['rss'] / 2**20:.0f} |")
    return "\n".join([
        f"## All-to-all op programs at {P:,} ranks (issue 4)",
        "",
        f"Command: `{COMMAND}`. Every all-to-all generator at P = {P:,} (the Two Phase Schedule on the paper's "
        "40×32×16 partition, §4.1), count = P elements of 1 B (m = 1 B per destination). Each row is one fresh "
        "Python process (peak RSS is the whole process, interpreter and NumPy included) limited to "
        f"{MEMORY_LIMIT >> 30} GiB of address space and {TIMEOUT_S} s; *build* is `generate(...)`.",
        "",
        "**Circulant patterns** (`type(schedule.pattern).__name__ == \"CirculantPattern\"`): `schedule.program()` "
        f"streamed round by round, stopping after {OP_BUDGET:,} ops. Every rank runs rank 0's ops moved by its "
        "rank, so the last two columns are exact for rounds and ops (P × `len(ops_for(0))`) and lower bounds "
        "for block runs (P × rank 0's runs; a run that wraps past the last block splits in two or three). A "
        "round's chunk is built whole, so its memory grows with its block runs, not its ops. Ops/s is ops "
        "streamed over stream time.",
        "",
        *circulant,
        "",
        f"**Rank-wise patterns** (`RankwisePattern`): `schedule.ops_for({ONE_RANK})`, what one MPI process "
        "builds. Their ranks differ, so their whole op program needs every rank's ops (`all_ops()`, P lists) "
        "before it can be merged into rounds; it is not streamed here.",
        "",
        *rankwise,
        "",
        *notes,
        "",
    ]) + "\n"


if __name__ == "__main__":
    print(run())
