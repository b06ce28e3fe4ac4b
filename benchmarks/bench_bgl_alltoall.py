"""Blue Gene/L's randomized all-to-all in the packet model with the BG/L endpoint (issue 27, BG/L part).

Kumar & Heidelberger (``../shared/seeds/alltoall-blue-gene-torus.txt``) measured the percent of eq. 2's peak
(``T = P·(M/8)·m·β``) of their randomized all-to-all: AR (adaptive routing) 99.0 % on 8×8×8 (Table 1), 81.0 %
on 8×8×16 (Table 2); deterministic routing (DR) "greater than 90 %" on 2n×n×n partitions such as 16×8×8 and
worse than AR on symmetric tori (Fig. 4, §3.2); the Two Phase Schedule (TPS) 77.2 % on 8×8×8, 97.9 % on
8×8×16 and 99.0 % on 16×8×8 (Table 3). This script runs each on the packet model and writes
``benchmarks/results/bgl_alltoall.md`` with every command and the paper's number beside the model's.

Configuration, each value from the paper or BG/L's hardware description (never fitted to a percentage):

- links 175 MB/s per direction (§2 via ``topology.torus``: BG/L's 1.4 Gb/s serial links), 100 ns per hop,
  router delay 0 (the hop's 100 ns is in the link);
- packets 240 B of payload + 16 B ("a full-sized 256-byte packet ... contains 240 bytes of payload", §3);
- VC buffers of 4 packets (1 KiB; ``sim/packet.py``: BG/L's 32 chunks of 32 B);
- AR: ``adaptive``, two dynamic VCs + the bubble escape VC (3 VCs; "two dynamic, one 'bubble normal'", §2; the
  high-priority VC is unused by applications, §2); DR-bubble: ``dor-bubble``, one VC: dimension order on the
  bubble VC ("for deterministic routing the packets have to be routed on the bubble normal VC", §2);
  DR-dateline: ``dor`` with 2 VCs and a dateline (not BG/L's; the comparison the model had before);
- the k/2 tie of the escape route: ``+`` (``tie=positive``) or a draw per packet (``tie=random,seed=1``);
- the endpoint ``nic="bgl"``: 6 injection FIFOs of 4 packets, a core copying at 4 links' bandwidth (§2: "can
  only keep about four links busy"), one packet per destination before the next (``bgl_burst=1``, §3: "usually
  1 or 2"); TPS sends whole messages (``bgl_burst=0``), adaptive on both phases (§4.1), its linear dimension as
  Table 3 says;
- m = 960 B per destination (4 packets): AR on 8×8×8 measured 67.9 % at 960 B and 67.7 % at 4,096 B with tie
  ``+`` (this script's ``--m 4096``), so the smaller size keeps each run to seconds.

"% of eq. 2" uses β = 1/175 MB/s: 240 B of payload in 256 B caps it at 93.75 %. "% of eq. 2, β ping-pong" uses
the β the paper's own method gives (§2.1: "measured from ping-pong"; its β = 6.48 ns/B is above 1/175 MB/s =
5.71 ns/B): the model's per-byte time of one message between neighbours, measured here on the same network.

Usage: ``PYTHONPATH=python .venv/bin/python benchmarks/bench_bgl_alltoall.py [--quick] [--m BYTES]``, or
``.venv/bin/python benchmarks/run.py --only bgl_alltoall`` (its BENCHMARKS.md section); either writes
``benchmarks/results/bgl_alltoall.md`` (about 6 minutes on one core).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np

from topocoll.schedules import generate
from topocoll.schedules.alltoall_cost import percent_of_peak
from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate
from topocoll.sim.packet import PacketOptions

LINK = "175MB/s"
BETA_LINK = 1 / 175e6
PACKET = dict(packet_bytes=240, header_bytes=16, buffer_packets=4, router_delay=0.0, nic="bgl")
SEED = 1
#: (shape, what) -> the paper's % of peak, where it has one (Tables 1-3, Fig. 4)
PAPER = {("8x8x8", "AR"): ("99.0", "Table 1"), ("8x8x16", "AR"): ("81.0", "Table 2"),
         ("16x8x8", "DR"): ("> 90", "Fig. 4, §3.2 (2n×n×n)"),
         ("8x8x8", "DR"): ("below AR", "Fig. 4, §3.2 (symmetric)"),
         ("8x8x8", "TPS"): ("77.2", "Table 3"), ("8x8x16", "TPS"): ("97.9", "Table 3"),
         ("16x8x8", "TPS"): ("99.0", "Table 3")}
#: TPS's linear dimension per shape (Table 3)
LINEAR = {"8x8x8": "z", "8x8x16": "z", "16x8x8": "x"}
#: (label, what, routing, VCs, extra packet options, algorithm)
CASES = [
    ("AR, tie +", "AR", "adaptive", 3, {}, "randomized"),
    ("AR, tie random", "AR", f"adaptive:tie=random,seed={SEED}", 3, {}, "randomized"),
    ("DR-bubble, tie +", "DR", "dor-bubble", 1, {}, "randomized"),
    ("DR-bubble, tie random", "DR", f"dor-bubble:tie=random,seed={SEED}", 1, {}, "randomized"),
    ("DR-dateline (2 VCs)", "DR", "dor", 2, {}, "randomized"),
    ("TPS, tie random", "TPS", f"adaptive:tie=random,seed={SEED}", 3, {"bgl_burst": 0}, "two_phase_schedule"),
]
#: one thing changed at a time on AR, tie random, 8×8×8: endpoint, then router
ABLATIONS = [
    ("core copies free (bgl_cpu_links=0)", {"bgl_cpu_links": 0.0}),
    ("32-packet injection FIFOs", {"bgl_fifo_packets": 32}),
    ("any FIFO (bgl_placement=any)", {"bgl_placement": "any"}),
    ("2 packets per destination (bgl_burst=2)", {"bgl_burst": 2}),
    ("64-packet VC buffers", {"buffer_packets": 64}),
    ("virtual output queues (queues=voq)", {"queues": "voq"}),
    ("oldest first (allocator=age)", {"allocator": "age"}),
    ("voq + 64-packet buffers + age", {"queues": "voq", "buffer_packets": 64, "allocator": "age"}),
]
#: the same for DR-bubble (tie random) on 16×8×8, Fig. 4's 2n×n×n case
DR_ABLATIONS = [
    ("core copies free (bgl_cpu_links=0)", {"bgl_cpu_links": 0.0}),
    ("64-packet VC buffer", {"buffer_packets": 64}),
    ("virtual output queues (queues=voq)", {"queues": "voq"}),
    ("oldest first (allocator=age)", {"allocator": "age"}),
    ("voq + 64-packet buffer + age", {"queues": "voq", "buffer_packets": 64, "allocator": "age"}),
]


def _p(shape: str) -> int:
    return math.prod(int(x) for x in shape.split("x"))


def measured_beta(shape: str) -> float:
    """The model's β the way the paper measured its own (§2.1, ping-pong): the per-byte time of one message
    between two neighbours on ``shape``, ``(T(2m) − T(m)) / m``, with the page's packets and endpoint."""
    # ranks 0 and 1 on nodes 0 and 1 (x neighbours) send each other one message at once: the two directions
    # use different links, so each is a ping alone
    net = make_network(f"torus:{shape}@bw={LINK}", 2, routing="dor-bubble", order="identity")
    cfg = EngineConfig("packet", EngineOptions(packet=PacketOptions(vcs=1, **PACKET)))
    times = []
    for m in (240 * 256, 240 * 512):
        sched = generate("alltoall", "shift", 2, count=2 * m, itemsize=1)
        times.append(simulate(sched, Platform(alpha=0.0, network=net), cfg).time)
    return (times[1] - times[0]) / (240 * 256)


def run_case(shape: str, routing: str, vcs: int, extra: dict, algorithm: str, m: int):
    """One all-to-all: (% of eq. 2 at the link's β, seconds simulated, link utilisation mean/max, wall s)."""
    p = _p(shape)
    params = {"seed": SEED} if algorithm == "randomized" else {"shape": shape, "linear": LINEAR[shape]}
    sched = generate("alltoall", algorithm, p, count=p * m, itemsize=1, **params)
    net = make_network(f"torus:{shape}@bw={LINK}", p, routing=routing, order="identity")
    cfg = EngineConfig("packet", EngineOptions(packet=PacketOptions(vcs=vcs, **{**PACKET, **extra})))
    t0 = time.perf_counter()
    sim = simulate(sched, Platform(alpha=0.0, network=net), cfg)
    wall = time.perf_counter() - t0
    util = np.asarray(sim.link_bytes) / (sim.time * 175e6)
    # x+ and x− links: the escape route's k/2 tie decides how they share the ring's load
    k = int(shape.split("x")[0])
    src, dst = np.asarray(net.topology.src), np.asarray(net.topology.dst)
    step = (dst % k - src % k) % k
    xs = (util[step == 1].mean(), util[step == k - 1].mean())
    return percent_of_peak(sim.time, shape, m, beta=BETA_LINK), sim.time, util.mean(), util.max(), wall, xs


def command(shape, routing, vcs, extra, algorithm, m):
    opts = ", ".join(f"{k}={v!r}" for k, v in {**PACKET, "vcs": vcs, **extra}.items())
    params = f"seed={SEED}" if algorithm == "randomized" else f"shape={shape!r}, linear={LINEAR[shape]!r}"
    return (f"simulate(generate('alltoall', '{algorithm}', {_p(shape)}, count={_p(shape)}*{m}, itemsize=1, {params}), "
            f"Platform(alpha=0, network=make_network('torus:{shape}@bw={LINK}', {_p(shape)}, routing='{routing}', "
            f"order='identity')), EngineConfig('packet', EngineOptions(packet=PacketOptions({opts}))))")


OUT = pathlib.Path(__file__).parent / "results" / "bgl_alltoall.md"


def run() -> str:
    """BENCHMARKS.md's section (``benchmarks/run.py``), also written to ``results/bgl_alltoall.md``."""
    return section(argparse.Namespace(quick=False, m=960, out=str(OUT)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="8×8×8 only, no ablations")
    ap.add_argument("--m", type=int, default=960, help="bytes per destination (default 960: 4 packets)")
    ap.add_argument("--out", default=str(OUT))
    section(ap.parse_args(argv))
    return 0


def section(a) -> str:
    """Run the cases of ``a`` (quick, m, out), write ``a.out`` and return its text."""
    shapes = ["8x8x8"] if a.quick else ["8x8x8", "8x8x16", "16x8x8"]
    t_all = time.perf_counter()
    beta = measured_beta("8x8x8")
    print(f"β measured (ping-pong, 8×8×8): {beta * 1e9:.3f} ns/B", file=sys.stderr, flush=True)
    lines = ["## Blue Gene/L randomized all-to-all, packet model with the BG/L endpoint (issue 27)", "",
             "Generated by `PYTHONPATH=python .venv/bin/python benchmarks/bench_bgl_alltoall.py"
             + (" --quick" if a.quick else "") + (f" --m {a.m}" if a.m != 960 else "") + "` "
             "(module doc: configuration and sources). Seeds: schedule and ties "
             f"{SEED}. m = {a.m} B per destination.", "",
             f"β (the paper's §2.1 method, ping-pong of one message between neighbours in the model): "
             f"{beta * 1e9:.3f} ns/B, against the link's 1/175 MB/s = {BETA_LINK * 1e9:.3f} ns/B and the "
             "paper's measured 6.48 ns/B.", "",
             "| shape | case | % of eq. 2 (β link) | % of eq. 2 (β ping-pong) | paper | link util. mean / max | "
             "x+ / x− util. | wall s |", "|---|---|---|---|---|---|---|---|"]
    rows = {}
    for shape in shapes:
        for label, what, routing, vcs, extra, algorithm in CASES:
            pct, t, um, ux, wall, xs = run_case(shape, routing, vcs, extra, algorithm, a.m)
            rows[(shape, label)] = pct
            paper, where = PAPER.get((shape, what), ("—", ""))
            pp = 100 * (beta / BETA_LINK) * pct / 100
            lines.append(f"| {shape} | {label} | {pct:.1f} | {pp:.1f} | {paper}{' (' + where + ')' if where else ''}"
                         f" | {um:.3f} / {ux:.3f} | {xs[0]:.3f} / {xs[1]:.3f} | {wall:.1f} |")
            print(f"{shape} {label}: {pct:.1f} % (β ping-pong {pp:.1f} %), util {um:.3f}/{ux:.3f}, "
                  f"{wall:.1f} s", file=sys.stderr, flush=True)
    if not a.quick:
        lines += ["", "### What moves AR on 8×8×8 (tie random), one change at a time", "",
                  "| change | % of eq. 2 (β link) | link util. mean / max | wall s |", "|---|---|---|---|",
                  f"| none | {rows[('8x8x8', 'AR, tie random')]:.1f} | | |"]
        for label, extra in ABLATIONS:
            pct, t, um, ux, wall, _ = run_case("8x8x8", f"adaptive:tie=random,seed={SEED}", 3, extra, "randomized",
                                            a.m)
            lines.append(f"| {label} | {pct:.1f} | {um:.3f} / {ux:.3f} | {wall:.1f} |")
            print(f"ablation {label}: {pct:.1f} %, util {um:.3f}/{ux:.3f}, {wall:.1f} s", file=sys.stderr, flush=True)
    if not a.quick:
        lines += ["", "### What moves DR-bubble on 16×8×8 (tie random), one change at a time", "",
                  "| change | % of eq. 2 (β link) | link util. mean / max | wall s |", "|---|---|---|---|",
                  f"| none | {rows[('16x8x8', 'DR-bubble, tie random')]:.1f} | | |"]
        for label, extra in DR_ABLATIONS:
            pct, t, um, ux, wall, _ = run_case("16x8x8", f"dor-bubble:tie=random,seed={SEED}", 1, extra,
                                            "randomized", a.m)
            lines.append(f"| {label} | {pct:.1f} | {um:.3f} / {ux:.3f} | {wall:.1f} |")
            print(f"DR ablation {label}: {pct:.1f} %, util {um:.3f}/{ux:.3f}, {wall:.1f} s", file=sys.stderr,
                  flush=True)
    lines += ["", "### Commands", "", "Each row is one call (Python; `from topocoll.schedules import generate`, "
              "`from topocoll.sim import EngineConfig, EngineOptions, Platform, make_network, simulate`, "
              "`from topocoll.sim.packet import PacketOptions`); % of eq. 2 = "
              "`percent_of_peak(sim.time, shape, m, beta=1/175e6)`:", ""]
    for shape in shapes:
        for label, what, routing, vcs, extra, algorithm in CASES:
            lines.append(f"- {shape}, {label}: `{command(shape, routing, vcs, extra, algorithm, a.m)}`")
    lines += ["", f"Total wall time: {time.perf_counter() - t_all:.0f} s (one core).", ""]
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines)
    out.write_text(text)
    print(f"wrote {out}", file=sys.stderr)
    return text


if __name__ == "__main__":
    sys.exit(main())
