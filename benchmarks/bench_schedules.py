"""Array-view generation, streamed round by round, at P = 2^20 (ring: 2^14).

Issue 2 §8: each generator under 10 s and 2 GiB. Each case runs in its own
process so its peak RSS is its own; the workload is ``report(schedule)``,
which consumes every round's arrays (rounds, messages, bytes, α-β-γ cost).
"""

import json
import subprocess
import sys

from peak_rss import CHILD_PRELUDE

CASES = [
    ("allreduce", "binomial", 2**20, {}),
    ("reduce", "binomial", 2**20, {"root": 5}),
    ("bcast", "binomial", 2**20, {"root": 5}),
    ("allreduce", "pairwise_exchange", 2**20, {}),
    ("allreduce", "pairwise_exchange", 2**20 + 3, {}),
    ("allreduce", "nway_dissemination", 2**20, {"n": "auto"}),
    ("allreduce", "nway_dissemination_unadapted", 2**20, {"n": 3}),
    ("allreduce", "bruck", 2**20, {"n": 5}),
    ("allreduce", "rabenseifner", 2**20, {}),
    ("allreduce", "rabenseifner", 2**20 + 3, {}),
    ("allreduce", "ring", 2**14, {}),
    ("barrier", "dissemination", 2**20, {"n": 1}),
    ("barrier", "butterfly", 2**20, {}),
]

CHILD = r"""
import json, sys, time
from topocoll.schedules import generate, report
collective, name, p, params = json.loads(sys.argv[1])
start = time.perf_counter()
rep = report(generate(collective, name, p, count=p if name in ("ring", "rabenseifner") else 1024, **params))
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "rss": peak_rss(),
                  "rounds": rep.rounds, "messages": rep.messages}))
"""


def run() -> str:
    rows = ["| collective | algorithm | P | params | rounds | messages | wall (s) | peak RSS (MiB) | target |",
            "|---|---|---|---|---|---|---|---|---|"]
    for collective, name, p, params in CASES:
        proc = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + CHILD, json.dumps([collective, name, p, params])],
                              capture_output=True, text=True)
        shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "-"
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            rows.append(f"| {collective} | {name} | {p} | {shown} | - | - | - | - | failed: {last} |")
            continue
        r = json.loads(proc.stdout)
        ok = r["wall"] < 10 and r["rss"] < 2 * 1024**3
        rows.append(f"| {collective} | {name} | {p:,} | {shown} | {r['rounds']} | {r['messages']:,} | "
                    f"{r['wall']:.2f} | {r['rss'] / 2**20:.0f} | {'met' if ok else 'MISSED'} (< 10 s, < 2 GiB) |")
    return ("## Schedule array views at scale (issue 2)\n\n"
            "Command: `python benchmarks/run.py --only schedules` (one process per case; the workload is "
            "`report(generate(...))`, which streams every round's arrays; count = 1024 elements, "
            "ring/Rabenseifner count = P).\n\n" + "\n".join(rows) + "\n")
