"""Direct send against shift-based with the packet model's InfiniBand HCA endpoint (issue 27).

The shift-based paper (Cavin & Demengeon, EGPGV 2012; ``../shared/seeds/shift-based-compositing-fat-tree.txt``)
measured direct send 2.27× slower than shift-based on 12 nodes of one 24-port DDR switch (§5.1: 6.4 vs 14.5
frames/s), 2.45× on 144 nodes of a 12-ary 2-tree in routing order (§5.2, Fig. 5: 4.7 vs 11.5), 1.54× on 64
(Fig. 9: 5.2 vs 8) and 1.38× on 144 in alphabetical order (Fig. 6: 4.7 vs 6.5). The configuration is the
reproduction page's (``topocoll.reproduce.shift_based``): ``kary:12,2@bw=1800MB/s``, ``ftree`` routing, α = 1 µs,
image 4096×2048×16 B, compositing free, random order seed 1 for the alphabetical one; shift-based under
``sync="rounds"`` and direct send under ``sync="deps"`` (the page's module doc says why). Models:

- ``flow``: max-min fair sharing (a fluid);
- ``packet simple``: the packet model with ``shift_based.DDR_IB`` but ``nic="simple"`` (messages of one link
  sent one after another in posting order);
- ``packet ib``: ``shift_based.DDR_IB``: the HCA endpoint (every message its own queue pair, the packets of all
  of them interleaved by a random arbiter, seed 0), one VL, 200 ns per switch, 2 KiB MTU + 26 B header, 8
  packets per input buffer.

Nothing is fitted to the ratios. The ablations vary one thing of ``packet ib`` at a time, to name what makes
direct send slow (and what is missing where the paper's factor is not reached).

Findings (numbers in the section):

- With the HCA interleaving its queue pairs, direct send slows down by head-of-line blocking: 1.64× shift-based's
  time on one 24-port switch and 1.72× on 144 nodes in routing order (``simple``: 1.00×, 0.99×). On one switch
  that is direct send at 0.61 of the link, Karol et al.'s saturation throughput of an input-queued switch under
  uniform traffic (0.6184 at N = 8, → 2 − √2 = 0.586). Virtual output queues take it back to 1.15×/1.13×, two
  FIFOs per input (2 VCs) to 1.42×; a round-robin arbiter (every node rotating in posting order, in step) or one
  QP at a time gives 1.00×: the lockstep, not the NIC's ability to interleave, is what hid the incast before.
- The paper's 2.27× and 2.45× are not reached (70 % of them; issue 27's target was within 25 %). The packet
  model's shift-based matches the paper on one switch (69 ms, 14.4 frames/s) and on 64 nodes (124 vs 125 ms);
  its direct send is 43–82 ms faster than the paper's in every case. Unoverlapped compositing is the candidate
  the section measures: with every queue pair interleaved, every message of a direct send ends with the last
  packets, so its p − 1 composites run after the transfer, while shift-based composites under the next stage.
  At 4 GB/s (topocoll's default reduction rate; the paper gives no compositing rate) the ratios become 1.92× and
  2.14×, inside the target; the rate that would close each gap alone is 1.6–2.9 GB/s, not one constant, so
  compositing is at most part of it. Other candidates, not modelled: an HCA quantum of several packets per QP
  turn (correlated destinations lower an input-queued switch's throughput below Karol's 0.586), and the HCA's
  per-QP context cache with 63–143 active QPs.
- Where shift-based meets routing hot spots (64 nodes: a partly filled leaf switch; 144 in random order), the
  interleaved direct send spreads its load over all pairs and beats it (0.95×, 0.69×; the paper: 1.54×,
  1.38×), and its time does not depend on the node order (130.45 vs 130.44 ms on 144 nodes), as the paper
  observed (§5.2: 4.7 frames/s in both orders). ``packet simple`` at 64 nodes (1.71×) is close to the paper's
  1.54× for another reason: its direct send is the shift sequence without the per-stage coupling, whose stages
  drift and collide at the hot spots.
"""

import time

COMMAND = ".venv/bin/python benchmarks/run.py --only nic_ib"
#: (nodes, order) → (direct send fps, shift-based fps, where)
PAPER = {
    (12, "routing"): (6.4, 14.5, "§5.1, Fig. 4"),
    (144, "routing"): (4.7, 11.5, "§5.2, Fig. 5"),
    (64, "routing"): (5.2, 8.0, "§5.2, Fig. 9"),
    (144, "random"): (4.7, 6.5, "§5.2, Fig. 6"),
}
FREE = 1e18
#: ablations of ``packet ib``: label → (PacketOptions changes, reduce bandwidth B/s, shift-based's sync)
ABLATIONS = {
    "packet ib (reference)": ({}, FREE, "rounds"),
    "2 VCs (two input FIFOs per port)": ({"vcs": 2}, FREE, "rounds"),
    "32 packets per input buffer": ({"buffer_packets": 32}, FREE, "rounds"),
    "128 packets per input buffer": ({"buffer_packets": 128}, FREE, "rounds"),
    "virtual output queues (no HOL blocking)": ({"queues": "voq"}, FREE, "rounds"),
    "round-robin arbiter": ({"ib_arbiter": "round-robin"}, FREE, "rounds"),
    "one QP at a time (= simple)": ({"ib_qps": 1}, FREE, "rounds"),
    "arbiter seed 1": ({"ib_seed": 1}, FREE, "rounds"),
    "arbiter seed 2": ({"ib_seed": 2}, FREE, "rounds"),
    "100 ns per switch": ({"router_delay": 100e-9}, FREE, "rounds"),
    # the engine's rounds would also hold each stage for the previous stage's composite, which the paper
    # overlaps (§3.2); deps keeps the overlap and, in routing order, moves the same bytes as rounds
    "compositing at 4 GB/s (not a paper number), shift-based under deps": ({}, 4e9, "deps"),
}


def _run(algorithm, p, order, model, packet, reduce_bandwidth=FREE, sync=None):
    from topocoll.reproduce import shift_based as sb
    from topocoll.schedules import generate
    from topocoll.sim import EngineOptions, Platform, make_network, simulate
    from topocoll.sim.engine import EngineConfig
    from topocoll.sim.packet import PacketOptions
    sched = generate("reduce_scatter", algorithm, p, count=sb.W * sb.H, itemsize=sb.PIXEL)
    net = make_network(sb.TOPOLOGY, p, routing=sb.ROUTING, order=order, seed=sb.SEED)
    options = EngineOptions(sync=sync or sb.SYNC[algorithm], packet=PacketOptions(**packet))
    cpu = time.process_time()
    sim = simulate(sched, Platform(alpha=sb.ALPHA, reduce_bandwidth=reduce_bandwidth, network=net),
                   EngineConfig(model, options))
    return sim.time, time.process_time() - cpu


def _models():
    from topocoll.reproduce.shift_based import DDR_IB
    simple = {k: v for k, v in DDR_IB.items() if k != "nic"}
    return {"flow": ("flow", {}), "packet simple": ("packet", simple), "packet ib": ("packet", dict(DDR_IB))}


def main_table():
    rows = ["| nodes | order | model | direct send | shift-based | direct/shift | paper | CPU s (direct, shift) |",
            "|---|---|---|---|---|---|---|---|"]
    out = {}
    for (p, order), (d_fps, s_fps, where) in PAPER.items():
        for label, (model, packet) in _models().items():
            d, dc = _run("direct_send", p, order, model, packet)
            s, sc = _run("shift_based", p, order, model, packet)
            out[(p, order, label)] = (d, s)
            rows.append(f"| {p} | {order} | {label} | {d * 1e3:.2f} ms | {s * 1e3:.2f} ms | **{d / s:.2f}×** | "
                        f"{s_fps / d_fps:.2f}× ({d_fps} vs {s_fps} fps, {where}) | {dc:.1f}, {sc:.1f} |")
    return "\n".join(rows), out


def ablation_table(cases=((12, "routing"), (144, "routing"))):
    from topocoll.reproduce.shift_based import DDR_IB
    rows = ["| change to packet ib | " + " | ".join(f"{p} nodes, {o}: direct, shift, ratio" for p, o in cases)
            + " | CPU s |", "|---" * (len(cases) + 2) + "|"]
    for label, (change, gamma, shift_sync) in ABLATIONS.items():
        cells, cpu = [], 0.0
        for p, order in cases:
            packet = {**DDR_IB, **change}
            d, dc = _run("direct_send", p, order, "packet", packet, gamma)
            s, sc = _run("shift_based", p, order, "packet", packet, gamma, shift_sync)
            cpu += dc + sc
            cells.append(f"{d * 1e3:.1f}, {s * 1e3:.1f} ms, **{d / s:.2f}×**")
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {cpu:.1f} |")
    return "\n".join(rows)


def _gap_lines(out) -> str:
    """Per case: the paper's direct-send time against packet ib's, and the compositing rate the difference
    would be if it were all unoverlapped compositing of the n(p − 1)/p pixels bytes a rank receives."""
    from topocoll.reproduce.shift_based import H, PIXEL, W
    lines = []
    for (p, order), (d_fps, s_fps, where) in PAPER.items():
        d, s = out[(p, order, "packet ib")]
        gap = 1 / d_fps - d
        nbytes = W * H * PIXEL * (p - 1) / p
        lines.append(f"- {p} nodes, {order} order ({where}): the paper's direct send {1e3 / d_fps:.0f} ms, packet ib "
                     f"{d * 1e3:.0f} ms (shift-based: paper {1e3 / s_fps:.0f} ms, packet ib {s * 1e3:.0f} ms); the "
                     f"{gap * 1e3:.0f} ms left would be unoverlapped compositing of {nbytes / 1e6:.0f} MB at "
                     f"{nbytes / gap / 1e9:.2f} GB/s")
    return "\n".join(lines)


def run() -> str:
    start = time.perf_counter()
    table, out = main_table()
    ablations = ablation_table()
    return (
        "## Packet model with the InfiniBand HCA: direct send against shift-based (issue 27)\n\n"
        f"Command: `{COMMAND}` ({time.perf_counter() - start:.0f} s; CPU seconds per simulation in the tables). "
        "Configuration and the models' parameters: `benchmarks/bench_nic_ib.py`'s module doc and "
        "`topocoll.reproduce.shift_based` (`DDR_IB`, `SYNC`); the HCA: `src/engine/packet/nic.rs`. Shift-based "
        "runs under `sync=rounds` (its per-stage exchange, §3.2), direct send under `sync=deps` (one stage, "
        "§2.2.1); ratio = direct send's time / shift-based's.\n\n"
        + table + "\n\n"
        "Ablations of `packet ib`, one change at a time (arbiter seed 0 unless named):\n\n"
        + ablations + "\n\n"
        "What the paper measured that the model lacks, case by case:\n\n" + _gap_lines(out) + "\n"
    )


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--ablations"]:
        print(ablation_table())
    else:
        print(run())
