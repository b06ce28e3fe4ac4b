"""The event loop's speed, whole program and streamed (issue 26 item 1).

One engine call per case, the op program compiled beforehand (whole) or
streamed from a schedule (streamed): CPU seconds of the ``simulate`` call
(``time.process_time``: one thread, so the machine's other load does not
count) and engine events per CPU second. Each case runs ``REPEAT`` times;
the median is reported. Reproduce:
``.venv/bin/python benchmarks/bench_core.py`` (or ``run.py --only core``).
"""

import statistics
import time

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only core"
REPEAT = 3

CASES = [
    # (label, collective, algorithm, P, params, topology, model, sync)
    ("shift all-to-all 4 KiB", "alltoall", "shift", 1024, dict(count=1024 * 512, itemsize=8),
     "kary:32,2", "loggops", "rounds"),
    ("ring allreduce 1 MiB", "allreduce", "ring", 512, dict(count=1 << 17, itemsize=8),
     "torus:8x8x8", "loggops", "deps"),
    ("pairwise all-to-all 4 KiB", "alltoall", "pairwise_exchange", 256, dict(count=256 * 512, itemsize=8),
     "torus:8x8x4", "flow", "rounds"),
    ("recursive-doubling allreduce 64 KiB", "allreduce", "pairwise_exchange", 1024, dict(count=8192, itemsize=8),
     "kary:32,2", "congestion", "rounds"),
    ("shift all-to-all 4 KiB", "alltoall", "shift", 64, dict(count=64 * 512, itemsize=8),
     "torus:4x4x4", "packet", "rounds"),
]


def measure():
    from topocoll.schedules import generate
    from topocoll.sim.engine import EngineConfig, EngineOptions, compile_program, simulate
    from topocoll.sim.model import Platform, make_network

    rows = []
    for label, coll, algo, p, params, topo, model, sync in CASES:
        sched = generate(coll, algo, p, **params)
        plat = Platform(network=make_network(topo, p))
        for loop in ("whole", "streamed"):
            prog = compile_program(sched) if loop == "whole" else None
            cpus = []
            for _ in range(REPEAT):
                cfg = EngineConfig(model, EngineOptions(sync=sync), stream="never" if loop == "whole" else "always")
                c0 = time.process_time()
                sim = simulate(sched, plat, cfg, program=prog) if prog is not None else simulate(sched, plat, cfg)
                cpus.append(time.process_time() - c0)
            cpu = statistics.median(cpus)
            rows.append((label, p, topo, model, sync, loop, sim.time, sim.events, cpu))
    return rows


def run() -> str:
    rows = measure()
    out = ["## Event loop speed, whole program and streamed (issue 26)", "",
           f"Command: `{COMMAND}`. CPU seconds of one `simulate` call (median of {REPEAT}; the whole program "
           "compiled beforehand, the streamed one produced round by round inside the call), and engine events "
           "per CPU second.", "",
           "| case | P | network | model | sync | loop | simulated (µs) | events | CPU (s) | M events/s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for label, p, topo, model, sync, loop, t, ev, cpu in rows:
        out.append(f"| {label} | {p:,} | {topo} | {model} | {sync} | {loop} | {t * 1e6:,.3f} | {ev:,} | "
                   f"{cpu:.3f} | {ev / cpu / 1e6:.2f} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(run())
