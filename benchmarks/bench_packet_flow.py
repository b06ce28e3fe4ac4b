"""The packet model against ``flow`` on the SMPI comparison's crossbar and fat-tree cases (issue 17).

Issue 17's test "at low load the packet model agrees with ``flow`` within
2 % on the crossbar and fat-tree cases of the SMPI comparison", measured on
every such case of ``bench_smpi.py`` (its :func:`~bench_smpi.cases`, torus
rows left out): the same schedule, network and options as that benchmark's
``flow`` column (CM02 sharing, ``eager`` 65,535 B, α = 0, free reductions,
its ``sync``), then ``--model packet`` with the default
:class:`~topocoll.sim.packet.PacketOptions` (2 KiB packets, 26 B headers,
100 ns per switch, 2 VCs of 8 packets, round-robin, input FIFOs) and with
the mechanisms removed one at a time: header 0, router delay 0, both, both
with 64-packet buffers.

On the crossbar, a round of these algorithms is a permutation (one send and
one receive per rank, every route its own two links), so nothing is shared
and each round costs ``2λ + m/B`` in ``flow`` and ``2λ + router_delay +
Σ_packets (payload + header)/B`` in ``packet``: the "expected" column sums
that over the schedule's rounds (:meth:`Schedule.rounds`), independently of
either engine. The cases off by more than 2 % with header 0 and router delay
0 get a second table that isolates why (sharing rule, synchronisation,
queueing discipline, posting order).

Reproduce: ``.venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only packet_flow``
(or ``.venv/bin/python benchmarks/bench_packet_flow.py``).
"""

import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_smpi as smpi  # noqa: E402  (the SMPI comparison's cases and settings)

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only packet_flow"
HEADING = "## Packet model against flow on the SMPI comparison's crossbar and fat-tree cases (issue 17)"
TOLERANCE = 0.02
#: header 0 and router delay 0: what is left is packetisation, finite buffers and arbitration
BARE = dict(header_bytes=0, router_delay=0.0)
VARIANTS = (
    ("defaults", {}),
    ("header 0", dict(header_bytes=0)),
    ("router delay 0", dict(router_delay=0.0)),
    ("header 0, router delay 0", BARE),
    ("same, 64-packet buffers", dict(BARE, buffer_packets=64)),
)


def _setup(case, schedule_case=None):
    from topocoll.schedules import generate
    from topocoll.schedules.sizes import from_bytes
    from topocoll.sim import Platform, make_network

    c = schedule_case or case
    sched = generate(c.collective, c.algorithm, c.p, **from_bytes(c.collective, c.p, c.nbytes))
    net = make_network(case.machine.spec, case.p, routing=case.machine.routing, order="routing")
    platform = Platform(alpha=0.0, reduce_bandwidth=smpi.REDUCE_BANDWIDTH, network=net)
    return sched, platform


def _options(case, **kw):
    from topocoll.sim.engine import EngineOptions

    return EngineOptions(sync=case.sync, sharing="cm02", eager=smpi.SMPI_EAGER_BELOW - 1, **kw)


def _time(sched, platform, model, options) -> tuple[float, float]:
    """(simulated time s, wall s)."""
    from topocoll.sim.engine import EngineConfig, simulate

    start = time.perf_counter()
    t = simulate(sched, platform, EngineConfig(model, options)).time
    return t, time.perf_counter() - start


def _packet(sched, platform, options, **packet) -> float:
    from topocoll.sim.packet import PacketOptions

    return _time(sched, platform, "packet", replace(options, packet=PacketOptions(**packet)))[0]


def expected_crossbar_ratio(sched) -> float | None:
    """packet / flow on a crossbar when every round is a permutation run in
    lockstep, from the defaults' semantics: per round, flow ``2λ + m/B``,
    packet ``2λ + router_delay + Σ_k (payload_k + header)/B`` (one switch,
    cut-through, the injection link never idles because 8 packets of credit
    cover the 2λ + router_delay + one packet loop). None if a round mixes sizes."""
    from topocoll.sim.packet import PacketOptions

    pk = PacketOptions()
    lat, bw = smpi.LATENCY, smpi.BANDWIDTH
    flow = packet = 0.0
    for rnd in sched.rounds():
        if not len(rnd):
            continue
        sizes = set(int(b) for b in rnd.nbytes)
        if len(sizes) != 1:
            return None
        m = sizes.pop()
        flow += 2 * lat + m / bw
        packet += 2 * lat + pk.router_delay + (m + pk.packets(m) * pk.header_bytes) / bw
    return packet / flow


def _tag(case) -> str:
    return f"{case.collective} `{case.algorithm}`"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


#: packets small enough that a shared link alternates among its messages almost as a fluid would
#: (64 B: 64 packets per 4 KiB message); 128 packets of buffer cover the 2λ credit loop at 2 GB/s
FINE = dict(BARE, packet_bytes=64, buffer_packets=128)


def ablation(case, flow: float) -> dict:
    """Ratios that isolate the mechanism behind a disagreement (the second
    table's row), each packet run with header 0 and router delay 0."""
    sched, platform = _setup(case)
    opts = _options(case)
    out = {"case": case, "maxmin": _time(sched, platform, "flow", replace(opts, sharing="maxmin"))[0] / flow,
           "bare": _packet(sched, platform, opts, **BARE) / flow,
           "voq": _packet(sched, platform, opts, **BARE, queues="voq", buffer_packets=64) / flow,
           "age": _packet(sched, platform, opts, **BARE, allocator="age") / flow,
           "barrier": None, "fine": None, "order": None}
    if case.sync == "rounds":
        b_opts = replace(opts, sync="barrier")
        out["barrier"] = _packet(sched, platform, b_opts, **BARE) / _time(sched, platform, "flow", b_opts)[0]
        out["fine"] = _packet(sched, platform, opts, **FINE) / flow
    else:
        # SMPI's basic_linear posts to rank − 1, rank − 2, …: a shift order, every message posted at once
        s_sched, _ = _setup(case, replace(case, algorithm="shift"))
        out["order"] = _packet(s_sched, platform, opts, **BARE) / _time(s_sched, platform, "flow", opts)[0]
    return out


def _ablation_row(a: dict) -> str:
    case = a["case"]
    return (f"| {_tag(case)} | {case.machine.name} | {case.p} | {smpi._size(case.nbytes)} | {a['maxmin']:.4f} | "
            f"{a['bare']:.4f} | {a['bare'] / a['maxmin']:.4f} | {_ratio(a['barrier'])} | {_ratio(a['fine'])} | "
            f"{a['voq']:.4f} | {a['age']:.4f} | {_ratio(a['order'])} |")


def _tiny(x: float) -> str:
    return "0" if x == 0 else f"{x:.0e}"


def _names(ablations) -> str:
    return ", ".join(f"{_tag(a['case'])} {smpi._size(a['case'].nbytes)}" for a in ablations)


def _span(values) -> str:
    values = sorted(v for v in values if v is not None)
    if not values:
        return "-"
    return f"{values[0]:.2f}" if f"{values[0]:.2f}" == f"{values[-1]:.2f}" else f"{values[0]:.2f}–{values[-1]:.2f}"


def run() -> str:
    from topocoll.sim.packet import PacketOptions

    start_all = time.perf_counter()
    rows = ["| case | machine | P | size | sync | flow (cm02) | packet (defaults) | ratio | expected "
            "| header 0 | router delay 0 | header 0, router delay 0 | same, 64-packet buffers "
            "| wall flow / packet (s) |",
            "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    off, results = [], []
    for case in smpi.cases():
        if case.machine is smpi.TORUS:
            continue
        print(f"[bench] packet_flow: {_tag(case)} on {case.machine.name}, {smpi._size(case.nbytes)}",
              file=sys.stderr, flush=True)
        sched, platform = _setup(case)
        opts = _options(case)
        flow, flow_wall = _time(sched, platform, "flow", opts)
        ratios, packet_time, packet_wall = [], None, None
        for _, kw in VARIANTS:
            t, wall = _time(sched, platform, "packet", replace(opts, packet=PacketOptions(**kw)))
            if packet_time is None:
                packet_time, packet_wall = t, wall
            ratios.append(t / flow)
        expected = (expected_crossbar_ratio(sched) if case.machine is smpi.CROSSBAR and case.sync == "rounds"
                    else None)
        results.append((case, ratios, expected))
        if abs(ratios[3] - 1) > TOLERANCE:
            off.append((case, flow))
        shown = [f"**{r:.4f}**" if abs(r - 1) > TOLERANCE else f"{r:.4f}" for r in ratios]
        rows.append(
            f"| {_tag(case)} | {case.machine.name} | {case.p} | {smpi._size(case.nbytes)} | {case.sync} | "
            f"{smpi._us(flow)} | {smpi._us(packet_time)} | {shown[0]} | {_ratio(expected)} | "
            f"{' | '.join(shown[1:])} | {flow_wall:.2f} / {packet_wall:.2f} |")
    abl_rows = ["| case | machine | P | size | flow max-min ÷ flow cm02 | packet† ÷ flow "
                "| packet† ÷ flow max-min | packet† ÷ flow, both `sync=barrier` | packet†, 64 B packets ÷ flow "
                "| packet†, VOQ + 64-packet buffers ÷ flow | packet†, oldest first ÷ flow "
                "| packet† ÷ flow, shift order |",
                "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    abl = []
    for case, flow in off:
        print(f"[bench] packet_flow: ablation {_tag(case)} on {case.machine.name}", file=sys.stderr, flush=True)
        abl.append(ablation(case, flow))
        abl_rows.append(_ablation_row(abl[-1]))
    wall = time.perf_counter() - start_all

    n = len(results)
    n_default = sum(abs(r[0] - 1) <= TOLERANCE for _, r, _ in results)
    n_bare = sum(abs(r[3] - 1) <= TOLERANCE for _, r, _ in results)
    cross = [(c, r, e) for c, r, e in results if c.machine is smpi.CROSSBAR and c.sync == "rounds"]
    cross_bare = max(abs(r[3] - 1) for _, r, _ in cross)
    cross_exp = max(abs(r[0] - e) for _, r, e in cross if e is not None)
    deeper = max(abs(r[4] - r[3]) for c, r, _ in results if c.sync == "rounds")
    fat_ok = [r[3] for c, r, _ in results
              if c.machine is smpi.FAT_TREE and c.sync == "rounds" and abs(r[3] - 1) <= TOLERANCE]
    # rounds cases still off against max-min flow: the order in which shared links serve messages
    order = [a for a in abl if a["barrier"] is not None and abs(a["bare"] / a["maxmin"] - 1) > TOLERANCE]
    # cases where flow's CM02 and max-min sharing differ
    weighted = [a for a in abl if a["barrier"] is not None and abs(a["maxmin"] - 1) > TOLERANCE / 2]
    deps = [a for a in abl if a["barrier"] is None]
    deps_deep = {c.machine.name: r[4] for c, r, _ in results if c.sync == "deps"}
    pk = PacketOptions()
    bw = smpi.BANDWIDTH
    ring_round = 2 * smpi.LATENCY + 512 / bw
    pair_round = 2 * smpi.LATENCY + 4096 / bw
    hdr = pk.header_bytes / bw

    notes = []
    if order:
        notes.append(
            f"- Rounds cases whose messages share links ({_names(order)} on the fat tree; d-mod-k sends several "
            "XOR partners' messages over one leaf uplink): packet† is *faster* than flow "
            f"({_span(a['bare'] for a in order)}; against max-min flow "
            f"{_span(a['bare'] / a['maxmin'] for a in order)}), "
            f"and run with `sync=barrier` the two agree ({_span(a['barrier'] for a in order)}): each round lasts as "
            "long as its busiest link needs in both, so bytes, headers, delays and buffers are accounted alike. "
            "What differs is *which* message on a shared link finishes first. Flow shares a link among its "
            "messages at every instant (max-min equally, CM02 in inverse proportion to route latency), so messages "
            "that share a link finish together at the end; the packet model's switch grants one packet at a time "
            "per output, by round-robin over input buffers (or oldest first), so some finish earlier, and under "
            "`sync=rounds` their ranks start the next round earlier. Finer packets (64 B, 64 per 4 KiB message) "
            f"give {_span(a['fine'] for a in order)}, the arbitration moves it more (oldest first "
            f"{_span(a['age'] for a in order)}, VOQ {_span(a['voq'] for a in order)}): the order in which switches "
            "serve messages decides it, not the packet size. Equal fluid sharing is an idealisation of that order, "
            "not a packet mechanism the packet model lacks.")
    if weighted:
        notes.append(
            f"- {_names(weighted)} on the fat tree: flow's own CM02 and max-min sharing differ (max-min ÷ CM02 "
            f"{_span(a['maxmin'] for a in weighted)}): CM02 weights a saturated link's share by inverse route "
            "latency (2-link and 4-link routes meet on leaf links), which no switch does; packet† ÷ flow max-min "
            f"is {_span(a['bare'] / a['maxmin'] for a in weighted)} (the rest, where there is one, is the order "
            "of service above).")
    if deps:
        notes.append(
            "- `direct` all-to-all (every message posted at t = 0: offered load 1 on every link, not low load): "
            "every rank posts to ranks 0, 1, 2, … in that order and a NIC sends its messages in order, so all "
            "senders first converge on rank 0, then on rank 1, …: incast into one ejection link, with "
            "head-of-line blocking in the switches' input FIFOs (VOQ with 64-packet buffers: "
            f"{_span(a['voq'] for a in deps)} instead of {_span(a['bare'] for a in deps)}). In a fluid model the "
            "order of simultaneous starts does not matter (bench_smpi's note); posted in shift order (as SMPI's "
            "`basic_linear` posts: rank − 1, rank − 2, …) packet† ÷ flow is "
            f"{_span(a['order'] for a in deps)} (last column). The time also depends strongly on buffer depth "
            f"(the main table's 64-packet column: {', '.join(f'{v:.2f} on the {k}' for k, v in deps_deep.items())}), "
            "as tree saturation does.")

    return "\n".join([
        HEADING,
        "",
        f"Command: `{COMMAND}` (or `.venv/bin/python benchmarks/bench_packet_flow.py`); {wall:.0f} s in all. "
        "Every crossbar and fat-tree case of the SMPI comparison (section \"SMPI (SimGrid) and topocoll's "
        "simulator side by side\"; `bench_smpi.cases()`), configured as its flow column: "
        "`EngineConfig(\"flow\", EngineOptions(sync=..., sharing=\"cm02\", eager=65535))`, α = 0, free "
        "reductions, the same networks (`crossbar:144@bw=2GB/s,lat=1us`; `kary:12,2@bw=2GB/s,lat=1us`, "
        "d-mod-k). Packet: `EngineConfig(\"packet\", EngineOptions(..., packet=PacketOptions(...)))`, defaults "
        f"{pk.packet_bytes:,} B packets, {pk.header_bytes} B headers, {pk.router_delay * 1e9:g} ns per switch, "
        f"{pk.vcs} VCs × {pk.buffer_packets} packets, round-robin, input FIFOs; then with header 0, router delay "
        "0, both, and both with 64-packet buffers. Ratios are packet time ÷ flow time; **bold**: off by more "
        "than 2 %. *Expected*: crossbar rounds cases, summed round by round from the model's semantics (every "
        "round a permutation run in lockstep: flow 2λ + m/B, packet 2λ + router delay + Σ(payload + header)/B), "
        "from neither engine. Wall: one `simulate` call each (flow; packet with the defaults).",
        "",
        *rows,
        "",
        f"Within 2 %: {n_default} of {n} cases with the defaults, {n_bare} of {n} with header 0 and router "
        "delay 0.",
        "",
        "**Where they agree, and what the defaults add.** On the crossbar every rounds case gives flow's time "
        f"once header and router delay are 0 (largest |ratio − 1|: {_tiny(cross_bare)}): a round is a permutation, "
        "no link carries two messages, and a lone message costs Σλ + m/B in both models (cut-through: "
        "serialisation once; 8 packets of credit cover the 2λ + router delay + one packet credit loop, so the "
        "injection link never idles). With the defaults each round pays one switch delay and a header per "
        f"packet, which is the *expected* column (largest difference: {_tiny(cross_exp)}): "
        f"{pk.header_bytes}/{pk.packet_bytes:,} = {pk.header_bytes / pk.packet_bytes:.2%} on bandwidth-bound "
        f"rounds (the 4 MiB rows), but on latency-bound ones the {pk.router_delay * 1e9:g} ns switch dominates: "
        f"a 64 KiB ring round moves 512 B in {ring_round * 1e6:.3f} µs in flow, + {pk.router_delay * 1e9:g} ns "
        f"+ {hdr * 1e9:.0f} ns in packet ({(pk.router_delay + hdr) / ring_round:.1%}); a 4 KiB all-to-all round "
        f"{pair_round * 1e6:.3f} µs + {pk.router_delay * 1e9:g} ns + {2 * hdr * 1e9:.0f} ns "
        f"({(pk.router_delay + 2 * hdr) / pair_round:.1%}). Flow has no switch delay (nor has SimGrid's "
        "`<cluster>` in the SMPI comparison: all latency is in the links), so that is a difference in what "
        "the platform describes, not an effect of load. On the fat "
        "tree the ring (no link shared: each cross-leaf message has its own leaves' uplink and downlink) and "
        f"the other cases within 2 % with header and router delay 0 ({_span(fat_ok)}) pay up to 3 switch delays "
        "per route with the defaults. Deeper buffers change no "
        f"rounds case by more than {_tiny(deeper)}: 8 packets already cover the credit loop.",
        "",
        "**Where they do not (still off by more than 2 % with header 0 and router delay 0).** † = header 0, "
        "router delay 0. Ratios are to flow (CM02) on the same case unless the column says otherwise; "
        "`sync=barrier` and the shift order change both models' runs; 64 B packets run with 128-packet "
        "buffers (the credit loop).",
        "",
        *abl_rows,
        "",
        *notes,
        "",
        "So the claim holds at low load in the sense that matters here, no two messages on one link at once: "
        "every crossbar rounds case (to rounding with header and router delay 0; within 2 % with the defaults "
        "where messages fill their packets and rounds are long: the 4 MiB rows), and the fat-tree ring and "
        "4 MiB cases. Where messages share links the two models share them differently (fluid fair sharing "
        "against packet-by-packet arbitration), and `direct` is an incast at full load. "
        "`python/topocoll/sim/tests/test_packet_flow.py` checks two of the agreeing cases.",
        "",
    ]) + "\n"


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the section to FILE instead of printing it")
    args = parser.parse_args(argv)
    text = run()
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
