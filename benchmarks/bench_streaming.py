"""Strided block runs and the streamed event loop (issue 18 items 3 and 4).

1. Bruck's all-to-all at P = 20,480 (a MemoryError before strided runs: its
   first round alone was P²/2 single-block runs): the whole op program
   streamed, rounds, ops, runs, wall and peak RSS.
2. The shift all-to-all, 4 KiB per destination, on the 20,736-endpoint
   fat tree (``table1:20736``, d-mod-k, routing order) with ``loggops`` and
   ``sync=rounds``: the whole program against the streamed loop where the
   whole one fits, then the streamed loop alone at larger P. Target (issue
   18): P = 20,736 streamed in <= 10 minutes and <= 4 GiB.

Each case runs in its own process (``peak_rss.run_child``). Reproduce:
``.venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only streaming``;
``TOPOCOLL_BENCH_STREAM_P=2048,4096,8192,20736`` picks the shift sizes (the
default stops at 8,192: the 20,736 case takes about 20 minutes on two cores).
"""

import os

from peak_rss import run_child

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only streaming"
TOPOLOGY = "table1:20736"
BRUCK_P = 20480
TIMEOUT_S = 3000
MEMORY_LIMIT = 16 << 30
TARGET_S, TARGET_B = 600.0, 4 << 30

BRUCK = r"""
import json, sys, time
from topocoll.schedules import generate
p = json.loads(sys.argv[1])
start = time.perf_counter()
sched = generate("alltoall", "bruck", p, k=1, count=p, itemsize=1)
ops = runs = rounds = largest = 0
for chunk in sched.program():
    ops += len(chunk); runs += len(chunk.run_len); rounds += 1; largest = max(largest, len(chunk.run_len))
print(json.dumps({"wall": time.perf_counter() - start, "rss": peak_rss(), "ops": ops, "runs": runs,
                  "rounds": rounds, "largest": largest}))
"""

SHIFT = r"""
import json, resource, sys, time
from topocoll.schedules import generate
from topocoll.sim.engine import EngineConfig, EngineOptions, simulate
from topocoll.sim.model import Platform, make_network
p, topology, stream = json.loads(sys.argv[1])
net = make_network(topology, p)
sched = generate("alltoall", "shift", p, count=p * 512, itemsize=8)
start, cpu = time.perf_counter(), time.process_time()
sim = simulate(sched, Platform(network=net), EngineConfig("loggops", EngineOptions(sync="rounds"), stream=stream))
print(json.dumps({"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu, "rss": peak_rss(), "time": sim.time,
                  "messages": sim.messages, "streamed": sim.streamed, "peak_ops": sim.peak_ops,
                  "ops": 2 * p * (p - 1) + p}))
"""


def _sizes():
    raw = os.environ.get("TOPOCOLL_BENCH_STREAM_P", "2048,4096,8192")
    return [int(x) for x in raw.split(",") if x.strip()]


def run() -> str:
    r, err = run_child(BRUCK, BRUCK_P, timeout_s=600, memory_bytes=MEMORY_LIMIT)
    bruck = (f"| {BRUCK_P:,} | failed: {err} |" if err else
             f"| {BRUCK_P:,} | {r['rounds']} | {r['ops']:,} | {r['runs']:,} | {r['largest']:,} | {r['wall']:.2f} | "
             f"{r['rss'] / 2**20:.0f} |")
    rows = []
    for p in _sizes():
        for stream in (("never", "always") if p <= 2048 else ("always",)):
            r, err = run_child(SHIFT, [p, TOPOLOGY, stream], timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)
            head = f"| {p:,} | {'streamed' if stream == 'always' else 'whole'} |"
            if err:
                rows.append(f"{head} - | - | - | - | - | - | - | failed: {err} |")
                continue
            mark = "-"
            if p == 20736:   # wall on a quiet machine is about the CPU time (one thread)
                wall_ok, cpu_ok = r["wall"] <= TARGET_S, r["cpu"] <= TARGET_S
                mark = ("met" if wall_ok else "CPU time met, wall missed (shared machine)" if cpu_ok else "MISSED")
                mark += "" if r["rss"] <= TARGET_B else ", memory MISSED"
            window = f"{r['peak_ops']:,}" if r["peak_ops"] else "all"
            rows.append(f"{head} {r['ops']:,} | {r['messages']:,} | {r['time'] * 1e3:.4f} | {window} | "
                        f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['rss'] / 2**20:.0f} | {mark} |")
    return (
        "## Strided block runs and the streamed event loop (issue 18 items 3 and 4)\n\n"
        f"Command: `{COMMAND}`. One process per case; peak RSS is its VmHWM.\n\n"
        "Bruck's all-to-all, k = 1, 1 B per destination: `generate(...)` then iterating `schedule.program()` "
        "to the end (strided runs: one run per op; before them a MemoryError in the first round, "
        "\"All-to-all op programs at 20,480 ranks\").\n\n"
        "| P | rounds | ops | block runs | largest round (runs) | wall (s) | peak RSS (MiB) |\n"
        "|---|---|---|---|---|---|---|\n" + bruck + "\n\n"
        f"Shift all-to-all, 4 KiB per destination, `{TOPOLOGY}` (d-mod-k, routing order), `loggops`, "
        "`sync=rounds`, `stream='never'` (whole program) or `'always'` (streamed); wall is `simulate` alone "
        "(the program is produced inside it, round by round when streamed). Simulated times of the two loops "
        "are equal to the last digit (the tests check them bit for bit). Window: the most ops the streamed "
        f"loop held at once; CPU is the process's CPU time during `simulate` (one thread: a quiet machine's "
        "wall), wall what this 2-core machine gave while other jobs ran. Target: P = 20,736 streamed in "
        f"<= {TARGET_S:.0f} s and <= 4 GiB.\n\n"
        "| P | loop | ops | messages | simulated (ms) | window (ops) | wall (s) | CPU (s) | peak RSS (MiB) | target |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    print(run())
