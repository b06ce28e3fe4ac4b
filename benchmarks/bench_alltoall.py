"""All-to-all array views at the paper's largest partition (issue 4).

The shift all-to-all for P = 20,480 (40×32×16, Kumar & Heidelberger §3.1):
all P − 1 rounds, 419 million transfers, streamed round by round; and the
Two Phase Schedule on 40×32×16 (§4.1, linear dimension X). Each case runs in
its own Python process so its peak RSS is its own: once only streaming the
rounds (counting transfers and bytes), once through ``metrics.report`` (the
α-β cost, four ``bincount`` per round). Target: under 60 s and 2 GiB each.

Reproduce: ``.venv/bin/python benchmarks/run.py --only alltoall``
(or ``.venv/bin/python benchmarks/bench_alltoall.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from peak_rss import CHILD_PRELUDE

COMMAND = ".venv/bin/python benchmarks/run.py --only alltoall"
P = 20480
CASES = {
    "shift, P = 20,480": f"shift_alltoall({P}, count={P}, itemsize=1)",
    "Two Phase Schedule, 40×32×16": f"two_phase_schedule({P}, shape='40x32x16', count={P}, itemsize=1)",
    "randomized (seed 0), P = 20,480": f"randomized_alltoall({P}, seed=0, count={P}, itemsize=1)",
}
CHILD = """
import json, time
from topocoll.schedules.alltoall import shift_alltoall, two_phase_schedule, randomized_alltoall
from topocoll.schedules.metrics import report
start = time.perf_counter()
sched = {expr}
if {use_report}:
    r = report(sched)
    out = dict(rounds=r.rounds, transfers=r.messages, bytes=r.bytes_total, cost=str(r.cost))
else:
    rounds = transfers = nbytes = 0
    for rnd in sched.rounds():
        rounds += 1
        transfers += len(rnd)
        nbytes += int(rnd.nbytes.sum())
    out = dict(rounds=rounds, transfers=transfers, bytes=nbytes, cost="")
out["wall_s"] = time.perf_counter() - start
out["peak_rss_bytes"] = peak_rss()
out["params"] = sched.label()
print(json.dumps(out))
"""


def measure(expr: str, use_report: bool) -> dict:
    code = CHILD_PRELUDE + CHILD.format(expr=expr, use_report=use_report)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run() -> str:
    lines = [
        "## All-to-all array views at 20,480 ranks",
        "",
        f"Command: `{COMMAND}`. Each row is one fresh Python process (peak RSS is the whole process, "
        "interpreter and NumPy included); *stream* consumes every round's arrays, *report* also computes "
        "the α-β cost with `metrics.report`. Messages of m = 1 B per destination. Target (issue 4): "
        "< 60 s and < 2 GiB.",
        "",
        "| case | consumer | rounds | transfers | bytes | wall time (s) | peak RSS (MiB) | α-β cost |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, expr in CASES.items():
        for use_report in (False, True):
            r = measure(expr, use_report)
            lines.append(
                f"| {name} | {'report' if use_report else 'stream'} | {r['rounds']:,} | {r['transfers']:,} | "
                f"{r['bytes']:,} | {r['wall_s']:.1f} | {r['peak_rss_bytes'] / 2**20:.0f} | {r['cost']} |")
    lines.append("")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
