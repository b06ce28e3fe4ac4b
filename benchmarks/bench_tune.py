"""The tuner (``topocoll tune``) against the models: never slower than a fixed algorithm, its gain
over the best fixed algorithm and over Open MPI's and MPICH's default choice, and how long a run takes.

Validation of issue 20, as far as this machine allows:

- speed: allreduce, reduce_scatter, alltoall and bcast over P ∈ {16, 64, 144} and 12 sizes (8 B to
  32 MiB, ×4 steps) on the 144-node 12-ary 2-tree, static contention model, on every core of this
  machine (P = 512 needs several ranks per node, which topocoll's networks do not have yet);
- never slower: at every grid point, the tuned time against each algorithm with its fixed
  (comparison) parameters in the routing engine's order — the same model and network; "worst" is
  the largest tuned/fixed ratio (≤ 1 means never slower);
- gain over the best fixed algorithm (the fastest of them at that point) and over each library's
  default (its choice modelled as a topocoll schedule; points where it cannot be modelled are
  counted apart), as geometric mean and maximum over the grid;
- the same on smaller grids of the 8×8×8 torus (P = 64, where the blocked 2×2×2 order is searched
  too) and a dragonfly. The 8×32×16 torus and P = 512 are left out for time: the compositing
  and all-to-all schedules are built per size in Python, seconds each at P = 512.

Reproduce: ``.venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only tune``.
"""

import math
import os
import time

from topocoll.schedules.registry import lookup
from topocoll.tune.tuner import tune

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only tune"
COLLECTIVES = ["allreduce", "reduce_scatter", "alltoall", "bcast"]
SIZES = [8 << (2 * i) for i in range(12)]          # 8 B .. 32 MiB
CASES = (
    ("kary:12,2", [16, 64, 144], SIZES),
    ("torus:8x8x8", [64], [8, 4096, 1 << 20]),
    ("dragonfly:4,2,2", [16, 72], [8, 4096, 1 << 20]),
)


def _geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def _fixed(point):
    """Each algorithm with its comparison parameters in the routing engine's order (what
    ``topocoll compare`` ranks)."""
    first = {}
    for c in point.choices:
        if c.params == dict(lookup(point.collective, c.algorithm).compare) and c.order in ("routing", "-"):
            first.setdefault(c.algorithm, c)
    return first


def _summary(table) -> dict:
    worst, over_best_fixed, libs = 0.0, [], {lib: [] for lib in table.libraries}
    unmodelled = {lib: 0 for lib in table.libraries}
    violations = 0
    for point in table.points.values():
        fixed = _fixed(point)
        for c in fixed.values():
            ratio = point.best.time / c.time
            worst = max(worst, ratio)
            violations += ratio > 1 + 1e-12
        over_best_fixed.append(min(c.time for c in fixed.values()) / point.best.time)
        for lib in table.libraries:
            gain = point.gain(lib)
            if gain is None:
                unmodelled[lib] += 1
            else:
                libs[lib].append(gain)
    return {"points": len(table.points), "worst": worst, "violations": violations,
            "fixed_geo": _geomean(over_best_fixed), "fixed_max": max(over_best_fixed),
            "libs": {lib: (_geomean(g), max(g) if g else float("nan"), unmodelled[lib]) for lib, g in libs.items()}}


def run() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rows = ["| network | P | sizes | points | evaluations | time (s) | worst tuned/fixed | gain over best fixed "
            "(geo / max) | gain over Open MPI 5.0 default (geo / max, not modelled) | gain over MPICH 5.0 default "
            "(geo / max, not modelled) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    details = []
    for topology, procs, sizes in CASES:
        start = time.perf_counter()
        table = tune(COLLECTIVES, procs, sizes, topology=topology, workers=cpus)
        elapsed = time.perf_counter() - start
        s = _summary(table)
        om, mp = s["libs"]["openmpi-5.0"], s["libs"]["mpich-5.0"]
        rows.append(f"| {topology} | {','.join(map(str, procs))} | {len(sizes)} ({sizes[0]} B–{sizes[-1] >> 20 or 1} "
                    f"{'MiB' if sizes[-1] >= 1 << 20 else 'KiB'}) | {s['points']} | {table.evaluated} | {elapsed:.1f} | "
                    f"{s['worst']:.3f} ({s['violations']} slower) | {s['fixed_geo']:.2f}× / {s['fixed_max']:.2f}× | "
                    f"{om[0]:.2f}× / {om[1]:.2f}×, {om[2]} | {mp[0]:.2f}× / {mp[1]:.2f}×, {mp[2]} |")
        if topology.startswith("kary"):
            worst = max(table.points.values(), key=lambda pt: max((pt.gain(lib) or 0) for lib in table.libraries))
            details.append(f"Largest gain over a library default: {worst.collective} at P = {worst.p}, "
                           f"{worst.size} B:\n\n```\n" + table.explain(worst.collective, worst.p, worst.size)
                           + "\n```")
            if ("allreduce", 144, 8 << 20) in table.points:
                details.append("Allreduce at P = 144, 8 MiB (`topocoll tune allreduce -P 144 --sizes 8M "
                               "--topology kary:12,2 --explain 144 8M`):\n\n```\n"
                               + table.explain("allreduce", 144, 8 << 20) + "\n```")
    return (f"## Tuner: decision tables against fixed algorithms and library defaults\n\n"
            f"Command: `{COMMAND}` ({cpus} worker processes, static contention model, node orders routing, "
            "identity and blocked where they differ; collectives: " + ", ".join(COLLECTIVES) + "; sizes in MPI's "
            "convention). A gain is the other choice's modelled time over the tuned one (1.00×: the same).\n\n"
            + "\n".join(rows) + "\n\n" + "\n\n".join(details) + "\n")


if __name__ == "__main__":
    print(run())
