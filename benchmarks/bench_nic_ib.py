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
            out[(p, order, label)] = d / s
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


def run() -> str:
    start = time.perf_counter()
    table, _ = main_table()
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
        + ablations + "\n"
    )


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--ablations"]:
        print(ablation_table())
    else:
        print(run())
