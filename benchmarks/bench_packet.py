"""The packet model (issue 17): its speed, and the all-to-all paper's percentages of peak beside the paper's.

Each case runs in its own process (``peak_rss.run_child``: wall time, peak RSS, a memory and time cap).
The BG/L parameters come from the all-to-all paper (Kumar & Heidelberger 2008, §2): 175 MB/s links,
packets of up to 256 B carrying 240 B of payload (so 16 B of header), input-queued routers, virtual
cut-through, deterministic routing in dimension order (X, then Y, then Z). The torus hop latency is
``topology.torus.BGL_LATENCY`` (100 ns, in the link; router delay 0 on top). The VC FIFO depth is an
assumption (4 full packets, 1 KiB, per VC and input): the seeds do not give it. Nothing is fitted to
the tables. Each shape runs twice: DR (dimension order, 2 VCs with a dateline) and AR (``--routing
adaptive``: JSQ over two dynamic VCs plus a dimension-order escape VC with bubble flow control, 3 VCs,
as §3.1 describes BG/L's router; its fourth, high-priority VC carries no all-to-all traffic).
Each runs with the simple endpoint (messages back to back into the injection FIFO of their first
link) and with Blue Gene/L's (``nic="bgl"``: 6 injection FIFOs of 4 packets per node, one per
direction, filled packet by packet by a core at 4 links' bandwidth, the messages interleaved one packet
each, reception drained at the same rate; ``src/engine/packet/bgl.rs``). The Two Phase Schedule also
runs adaptively (the paper's TPS uses adaptive routing for both phases, §4.1) with BG/L's endpoint
sending whole messages (``bgl_burst=0``): its phase-1 messages carry every block for one intermediate,
which forwards them only once the whole message is in, so interleaving them packet by packet would hold
every forward back to the end of phase 1.
"""

from peak_rss import run_child

TIMEOUT_S = 600
MEMORY_LIMIT = 16 << 30

CHILD = r"""
import json, sys, time
from topocoll.schedules import generate
from topocoll.schedules.alltoall_cost import peak_time
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions
case = json.loads(sys.argv[1])
T = time.perf_counter
shape = case["shape"]
p = 1
for k in shape.split("x"):
    p *= int(k.rstrip("m"))
net = make_network("torus:" + shape, p, routing=case.get("routing", "dor"), order="identity")
m = case["m"]
s = generate("alltoall", case["algorithm"], p, count=p * m, itemsize=1, **case.get("params", {}))
bgl = PacketOptions(packet_bytes=240, header_bytes=16, vcs=3 if case.get("routing") == "adaptive" else 2,
                    buffer_packets=4, router_delay=0.0, **case.get("nic", {}))
t, c = T(), time.process_time()
sim = simulate(s, Platform(alpha=case.get("alpha", 0.0), network=net), EngineConfig("packet", EngineOptions(packet=bgl)))
wall, cpu = T() - t, time.process_time() - c
peak = peak_time(shape, m, beta=1 / 175e6)
print(json.dumps({"wall": wall, "cpu": cpu, "time": sim.time, "peak": peak, "hops": sim.packet_hops,
                  "messages": sim.messages, "rss": peak_rss()}))
"""

#: (shape, the paper's number, what it is)
PAPER = {
    "8x8x8": (99.0, "Table 1, AR"),
    "8x8x16": (81.0, "Table 2, AR"),
    "16x8x8": (90.0, "Fig. 4, DR on 2n×n×n: \"greater than 90 %\""),
}
TPS_PAPER = {"8x8x16": (97.9, "Table 3, TPS (linear Z)"), "16x8x8": (99.0, "Table 3, TPS (linear X)"),
             "8x8x8": (77.2, "Table 3, TPS (linear Z)")}
#: the endpoints: (label, PacketOptions fields)
SIMPLE, BGL, BGL_WHOLE = ("simple", {}), ("bgl", {"nic": "bgl"}), ("bgl, whole messages", {"nic": "bgl", "bgl_burst": 0})


def _case(case):
    return run_child(CHILD, case, timeout_s=TIMEOUT_S, memory_bytes=MEMORY_LIMIT)


def run() -> str:
    rows = ["| shape | algorithm | routing | endpoint | m (B) | simulated time | eq. 2 peak | % of peak | paper | "
            "wall (s) | CPU (s) | peak RSS (MiB) | packet-hops/s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    cases = [(shape, "randomized", {"seed": 1}, routing, nic, PAPER[shape]) for shape in PAPER
             for routing in ("dor", "adaptive") for nic in (SIMPLE, BGL)]
    cases += [(shape, "two_phase_schedule", {"shape": shape}, "dor", SIMPLE, TPS_PAPER[shape])
              for shape in ("8x8x16", "16x8x8")]
    cases += [(shape, "two_phase_schedule", {"shape": shape}, "adaptive", nic, TPS_PAPER[shape])
              for shape in ("8x8x16", "8x8x8") for nic in (SIMPLE, BGL_WHOLE)]
    cases += [("8x8x16", "direct", {}, "dor", SIMPLE, (None, "speed: 1,024 ranks, 2 KiB per pair, target ≤ 60 s"))]
    for shape, algorithm, params, routing, (nic, fields), (paper, what) in cases:
        m = 2048 if algorithm == "direct" else 4096
        r, err = _case({"shape": shape, "algorithm": algorithm, "params": params, "m": m, "routing": routing,
                        "nic": fields})
        if err:
            rows.append(f"| {shape} | {algorithm} | {routing} | {nic} | {m} | failed: {err} | | | {what} | | | | |")
            continue
        pct = 100 * r["peak"] / r["time"]
        shown = f"{paper:.1f} % ({what})" if paper is not None else what
        rows.append(f"| {shape} | {algorithm} | {routing} | {nic} | {m} | {r['time'] * 1e3:.3f} ms | "
                    f"{r['peak'] * 1e3:.3f} ms | {pct:.1f} % | {shown} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                    f"{r['rss'] / 2**20:.0f} | {r['hops'] / r['wall'] / 1e6:.1f} M |")
    return ("## Packet model: speed and the all-to-all paper's % of peak (issue 17)\n\n"
            "Command: `python benchmarks/run.py --only packet` (one process per case; BG/L parameters and "
            "their sources in the module doc: 240 B payload + 16 B header per packet, 175 MB/s links, 2 VCs "
            "with a dateline, 4 packets per VC buffer (an assumption), dimension-order routing, identity "
            "order, α = 0; `adaptive` rows: 3 VCs, JSQ over the two dynamic ones, bubble escape VC; endpoint "
            "`simple` or Blue Gene/L's, `bgl`, whose parameters and sources are in `sim/packet.py`; TPS with "
            "`bgl` sends whole messages, `bgl_burst=0`, module doc). % of peak = eq. 2's time / the simulated "
            "time; eq. 2 counts payload at 175 MB/s, so 240 B of payload in 256 B packets caps it at 93.75 %. Paper: Tables 1–2 are AR (adaptive), Fig. 4 DR. Wall "
            "time includes generating the schedule and compiling its op program.\n\n" + "\n".join(rows) + "\n")
