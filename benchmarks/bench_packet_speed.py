"""The packet model's speed in packet-hops per second on the 8×8×8 torus under uniform traffic (issue 26).

Each load runs in its own process (``peak_rss.run_child``): ``topocoll.sim.traffic.traffic("uniform", [load],
"torus:8x8x8")`` with the default ``PacketOptions``, as ``topocoll simulate traffic uniform --topology
torus:8x8x8 --model packet --load L`` runs it, timed around the call alone (not the interpreter's start or the
network's construction). Wall time and CPU time of the process are both given, with the machine's load average:
on a shared machine the wall rate falls with the load while the CPU rate stays near the engine's own (the CPU
rate still loses some to the caches other processes evict). The target of issue 26 is 20 M packet-hops per
second on one core.
"""

from peak_rss import run_child

TIMEOUT_S = 600
MEMORY_LIMIT = 8 << 30
LOADS = (0.1, 0.3, 0.6)

CHILD = r"""
import json, os, sys, time
from topocoll.sim.packet import PacketOptions
from topocoll.sim.traffic import traffic, traffic_network
load = json.loads(sys.argv[1])["load"]
net = traffic_network("torus:8x8x8")
before = os.getloadavg()[0]
wall, cpu = time.perf_counter(), time.process_time()
row = traffic("uniform", [load], net, PacketOptions())[0]
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "hops": row.packet_hops, "accepted": row.accepted,
                  "saturated": row.saturated, "loadavg": [before, os.getloadavg()[0]], "rss": peak_rss()}))
"""


def run() -> str:
    rows = ["| offered load | accepted | saturated | packet-hops | wall (s) | CPU (s) | M packet-hops/s (wall) | "
            "M packet-hops/s (CPU) | load average (before, after) |", "|---|---|---|---|---|---|---|---|---|"]
    for load in LOADS:
        r, err = run_child(CHILD, {"load": load}, timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)
        if err:
            rows.append(f"| {load} | failed: {err} | | | | | | | |")
            continue
        rows.append(f"| {load} | {r['accepted']:.3f} | {'yes' if r['saturated'] else 'no'} | {r['hops']:,} | "
                    f"{r['wall']:.2f} | {r['cpu']:.2f} | {r['hops'] / r['wall'] / 1e6:.1f} | "
                    f"{r['hops'] / r['cpu'] / 1e6:.1f} | {r['loadavg'][0]:.2f}, {r['loadavg'][1]:.2f} |")
    return ("## Packet model: packet-hops per second, 8×8×8 torus, uniform traffic (issue 26)\n\n"
            "Command: `python benchmarks/run.py --only packet_speed` (one process per load; "
            "`traffic(\"uniform\", [L], \"torus:8x8x8\")`, default `PacketOptions`, as `topocoll simulate traffic "
            "uniform --topology torus:8x8x8 --model packet --load L`; timed around the call). Target: 20 M "
            "packet-hops/s on one core. The Rust engine alone: `cargo test --release --lib --no-default-features "
            "packet_hops_per_second -- --ignored --nocapture`.\n\n" + "\n".join(rows) + "\n")
