"""Network layer performance targets of issue 5 (topology, routing, metrics).

1. Link loads of one shift-permutation round on the 20,736-endpoint fat tree
   (Table 1 of the network-noise paper), d-mod-k: target <= 50 ms.
2. Effective bisection bandwidth of the 3,456-endpoint fat tree with 1,000
   random bisections: target <= 30 s.
3. Min-hop routing tables for the 20,736-endpoint fat tree read as a generic
   graph: target <= 60 s and <= 4 GiB (peak resident memory of a child
   process doing only that).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from peak_rss import CHILD_PRELUDE

COMMAND = "python benchmarks/run.py --only topology"

_MINHOP_CHILD = r"""
import json, time
from topocoll.topology import parse_topology, make_router, node_order, pattern_pairs, link_loads
t = parse_topology("table1:20736")
start = time.perf_counter()
r = make_router(t, "min-hop")
seconds = time.perf_counter() - start
loads = link_loads(r, *pattern_pairs("shift:1", node_order(t, "routing")))
rss = peak_rss()
print(json.dumps({"seconds": seconds, "peak_rss": rss, "table_bytes": int(t.n_switches) * int(t.n_endpoints) * 4,
                  "shift1_max_load": float(loads.max())}))
"""


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), sorted(times)[len(times) // 2], value


def run() -> str:
    from topocoll.topology import (effective_bisection_bandwidth, link_loads, make_router, node_order,
                                   parse_topology, pattern_pairs)

    rows = []
    big = parse_topology("table1:20736")
    router = make_router(big, "d-mod-k")
    order = node_order(big, "routing")
    src, dst = pattern_pairs("shift:1729", order)
    best, median, loads = _best(lambda: link_loads(router, src, dst), 20)
    rows.append(("shift round link loads, table1:20736, d-mod-k (shift 1729)", f"{best * 1e3:.2f} ms (median {median * 1e3:.2f} ms)",
                 "<= 50 ms", f"max link load {loads.max():g}"))
    ecmp = make_router(big, "random", seed=1)
    best, median, loads = _best(lambda: link_loads(ecmp, src, dst), 10)
    rows.append(("same, random ECMP-like routing (seed 1)", f"{best * 1e3:.2f} ms (median {median * 1e3:.2f} ms)",
                 "", f"max link load {loads.max():g}"))

    mid = parse_topology("table1:3456")
    r = make_router(mid, "d-mod-k")
    start = time.perf_counter()
    e = effective_bisection_bandwidth(r, 1000, seed=0)
    seconds = time.perf_counter() - start
    rows.append(("effective bisection bandwidth, table1:3456, d-mod-k, 1,000 bisections (seed 0)",
                 f"{seconds:.2f} s", "<= 30 s", f"eBB {100 * e.mean:.1f}% (std {100 * e.std:.1f}%)"))

    proc = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + _MINHOP_CHILD], capture_output=True, text=True, check=True)
    m = json.loads(proc.stdout)
    rows.append(("min-hop tables, table1:20736 as a generic graph", f"{m['seconds']:.2f} s", "<= 60 s",
                 f"peak RSS {m['peak_rss'] / 2**30:.2f} GiB (<= 4 GiB); tables {m['table_bytes'] / 2**20:.0f} MiB; "
                 f"shift-1 max load {m['shift1_max_load']:g}"))

    lines = [
        "## Network layer (topology, routing, metrics)",
        "",
        f"Command: `{COMMAND}` (module `benchmarks/bench_topology.py`). Wall-clock times on this machine; "
        "loads are routed in Rust with the interpreter released.",
        "",
        "| measurement | time | target | result |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
