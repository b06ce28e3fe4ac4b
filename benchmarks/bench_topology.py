"""Network layer performance targets of issue 5 (topology, routing, metrics).

1. Link loads of one shift-permutation round on the 20,736-endpoint fat tree
   (Table 1 of the network-noise paper), d-mod-k: target <= 50 ms.
2. Effective bisection bandwidth of the 3,456-endpoint fat tree with 1,000
   random bisections: target <= 30 s.
3. Min-hop routing tables for the 20,736-endpoint fat tree read as a generic
   graph: target <= 60 s and <= 4 GiB (peak resident memory of a child
   process doing only that).
4. ``topocoll topo ibnet:FILE`` end to end (a fresh process: import, parse,
   counts, diameter) on the 20,736-endpoint fat tree written as a plain
   ibnetdiscover file: target <= 10 s (issue 11; the diameter was a Python
   BFS from every endpoint, about 17 CPU-minutes at this size).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

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


def write_ibnetdiscover(topology, path, *, speed="4xDDR") -> Path:
    """Write a topology as plain ``ibnetdiscover`` output (adapters ``H-...``,
    switches ``S-...``, one port per link in link-table order, every port line
    with its link ``speed``). Parallel cables pair off in order."""
    t = topology
    n = t.n_endpoints
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    indptr = t.indptr
    port = np.arange(t.n_links) - indptr[src] + 1
    # the reverse of the j-th link a -> b is the j-th link b -> a
    key = src * t.n_nodes + dst
    order = np.argsort(key, kind="stable")
    first = np.searchsorted(key[order], key[order])
    occurrence = np.empty(t.n_links, dtype=np.int64)
    occurrence[order] = np.arange(t.n_links) - first
    rkey = dst * t.n_nodes + src
    rev = order[np.searchsorted(key[order], rkey) + occurrence]
    assert np.array_equal(src[rev], dst) and np.array_equal(dst[rev], src)
    rport = port[rev]
    guid = [f"H-{v + 1:016x}" if v < n else f"S-{v + 1:016x}" for v in range(t.n_nodes)]
    desc = [f"node{v:05d} mlx5_0" if v < n else f"switch{v - n:05d}" for v in range(t.n_nodes)]
    lid = [v + 1 for v in range(t.n_nodes)]
    out = ["#", "# Topology file: written by benchmarks/bench_topology.py", "#", "Non-Chassis Nodes", ""]
    for v in list(range(n, t.n_nodes)) + list(range(n)):
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        if v >= n:
            out += ["vendid=0x2c9", "devid=0xcf08", f"switchguid=0x{v + 1:016x}({v + 1:x})",
                    f'Switch\t{max(hi - lo, 1)} "{guid[v]}"\t\t# "{desc[v]}" base port 0 lid {lid[v]} lmc 0']
            for i in range(lo, hi):
                u = int(dst[i])
                out.append(f'[{port[i]}]\t"{guid[u]}"[{rport[i]}]\t\t# "{desc[u]}" lid {lid[u]} {speed}')
        else:
            out += ["vendid=0x2c9", "devid=0x1017", f"caguid=0x{v + 1:016x}",
                    f'Ca\t{max(hi - lo, 1)} "{guid[v]}"\t\t# "{desc[v]}"']
            for i in range(lo, hi):
                u = int(dst[i])
                out.append(f'[{port[i]}]({v + 1:x})\t"{guid[u]}"[{rport[i]}]\t\t# lid {lid[v]} lmc 0 '
                           f'"{desc[u]}" lid {lid[u]} {speed}')
        out.append("")
    path = Path(path)
    path.write_text("\n".join(out) + "\n")
    return path


def time_topo_ibnet(spec="table1:20736"):
    """Seconds of ``topocoll topo ibnet:FILE`` in a fresh process (best of 3)
    and its output, on ``spec`` written as an ibnetdiscover file."""
    from topocoll.topology import parse_topology

    topo = parse_topology(spec)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_ibnetdiscover(topo, Path(tmp) / "fabric.topo")
        cmd = [os.path.join(os.path.dirname(sys.executable), "topocoll"), "topo", f"ibnet:{path}", "--json"]
        times = []
        for _ in range(3):
            start = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            times.append(time.perf_counter() - start)
        return min(times), sorted(times)[1], json.loads(proc.stdout), path.stat().st_size


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

    best, median, out, size = time_topo_ibnet("table1:20736")
    rows.append(("`topocoll topo ibnet:FILE`, table1:20736 written as plain ibnetdiscover "
                 f"({size / 2**20:.0f} MiB), fresh process end to end", f"{best:.2f} s (median {median:.2f} s)",
                 "<= 10 s", f"{out['endpoints']} endpoints, {out['switches']} switches, diameter {out['diameter']} "
                 "(switch-level BFS in Rust)"))

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
