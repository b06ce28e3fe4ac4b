"""Synthesized schedules against the best fixed algorithm (issue 29 item 3), and synthesis time against P (item 4).

    .venv/bin/python benchmarks/bench_synth.py ratios [--model flow] [--budget 15] [--out synth.json] [CASE ...]
    .venv/bin/python benchmarks/bench_synth.py scale [--procs 64,256,1024]

``ratios``: for each case (network, P) and collective, at each size,
:func:`topocoll.synth.synthesize` with the model given (its variants judged
by that model, the registry's fixed algorithms ranked by the same model on
the same platform) prints the best synthesized time, the best fixed
algorithm and time, and their ratio (before the fixed fallback: the
returned schedule's ratio is min(ratio, 1)). ``scale``: CPU seconds and peak
memory of one plan (routes, greedy, op program) for the all-gather of 1 MiB
per rank on a fat tree and a torus at each P, one process per point.
Every random choice takes seed 0 (printed).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

PLAFRIM = "/work/shared/inputs/routing/plafrim"
CASES = {
    "torus8x4": ("torus:8x4", 32, None),
    "mesh8x4": ("mesh:8x4", 32, None),
    "torus4x4x2": ("torus:4x4x2", 32, None),
    "tapered": ("xgft:2;16,8;1,4", 128, None),
    "dragonfly": ("dragonfly:4,2,2", 72, None),
    "plafrim": (f"ibnet:{PLAFRIM}/ib-subnet-fe80_0000_0000_0000.txt", 125,
                f"ibroute:path={PLAFRIM}/ibroutes-fe80_0000_0000_0000"),
    "ppn": ("kary:4,2+ppn=4", 64, None),
}
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "bcast", "alltoall")
SIZES = (1 << 10, 64 << 10, 1 << 20)


def ratios(args) -> None:
    from topocoll.sim import make_network
    from topocoll.synth import synthesize
    rows = []
    for name in args.cases or list(CASES):
        spec, p, routing = CASES[name]
        net = make_network(spec, p, routing=routing)
        for coll in args.collectives.split(","):
            for size in SIZES:
                cpu = time.process_time()
                r = synthesize(coll, net, p, size, budget=args.budget, model=args.model, seed=0, progress=False)
                best = min(r.tried, key=lambda t: t.time)
                row = {"case": name, "network": spec, "P": p, "collective": coll, "size": size, "model": r.model,
                       "synthesized_s": r.synthesized_time, "fixed": r.best_fixed[0], "fixed_s": r.best_fixed[2],
                       "ratio": r.synthesized_ratio, "variant": best.variant.text(), "tried": len(r.tried),
                       "cpu_s": time.process_time() - cpu, "link_test": not r.link_test}
                rows.append(row)
                print(f"{name:10s} P={p:4d} {coll:14s} {size:>8d} B  synth {r.synthesized_time * 1e6:11.2f} µs  "
                      f"fixed {r.best_fixed[0]:18s} {r.best_fixed[2] * 1e6:11.2f} µs  ratio {r.synthesized_ratio:6.3f}"
                      f"  [{best.variant.text()}; {len(r.tried)} tried, {row['cpu_s']:.0f} s CPU]", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


ONE = r'''
import resource, sys, time
import numpy as np
from topocoll.sim import make_network
from topocoll.synth.routes import pair_routes
from topocoll.synth.plan import make_plan
from topocoll.synth.schedule import to_schedule
spec, p = sys.argv[1], int(sys.argv[2])
t0 = time.process_time()
pr = pair_routes(make_network(spec, p), p)
t1 = time.process_time()
plan = make_plan("allgather", pr, c=1, block_bytes=1 << 20, alpha=1e-6, gamma=0.0, agg=1, order="near",
                 rng=np.random.default_rng(0))
t2 = time.process_time()
ops = sum(len(ch) for ch in to_schedule(plan, p << 20, 1).program())
t3 = time.process_time()
print(f"{spec} P={p}: routes {t1 - t0:.1f} s, greedy {t2 - t1:.1f} s ({plan.transfers:,} transfers, "
      f"{plan.phases[0].rounds} steps), op program {t3 - t2:.1f} s ({ops:,} ops); total {t3 - t0:.1f} s CPU, "
      f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
'''


def scale(args) -> None:
    shapes = {64: ("kary:8,2", "torus:8x8"), 256: ("kary:16,2", "torus:16x16"), 1024: ("kary:32,2", "torus:32x32")}
    for p in (int(x) for x in args.procs.split(",")):
        for spec in shapes.get(p, (f"crossbar:{p}",)):
            out = subprocess.run([sys.executable, "-c", ONE, spec, str(p)], capture_output=True, text=True)
            print(out.stdout.strip() or out.stderr.strip()[-500:], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("ratios")
    r.add_argument("cases", nargs="*", help=", ".join(CASES))
    r.add_argument("--model", default="flow")
    r.add_argument("--budget", type=float, default=15.0)
    r.add_argument("--collectives", default=",".join(COLLECTIVES))
    r.add_argument("--out")
    s = sub.add_parser("scale")
    s.add_argument("--procs", default="64,256,1024")
    args = parser.parse_args()
    if args.what == "ratios":
        bad = [c for c in args.cases if c not in CASES]
        if bad:
            parser.error(f"case {bad[0]!r}, expected one of {', '.join(CASES)}")
        ratios(args)
    else:
        scale(args)


if __name__ == "__main__":
    main()
