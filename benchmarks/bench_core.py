"""The event loop's speed, whole program and streamed (issue 26 item 1).

One engine call per case: the op program compiled beforehand (whole) or
streamed from the schedule inside the call (streamed). Reported: CPU
seconds of the ``simulate`` call (``time.process_time``: one thread, so
the machine's other load counts less than in wall time) and engine events
per CPU second, the best of ``REPEAT`` runs.

*Before and after.* With ``TOPOCOLL_BENCH_BASE=DIR`` (a checkout of an
earlier commit whose extension is built in ``DIR/python/topocoll``, e.g.
``git worktree add /tmp/base c8cdd7a`` then ``cargo build --release --lib
--features pyo3/extension-module`` and copying ``target/release/lib_core.so``
to ``python/topocoll/_core.abi3.so``), each case also runs on that build, the
two builds alternating in child processes, so both see the same machine load.
Reproduce: ``TOPOCOLL_BENCH_BASE=/tmp/base .venv/bin/python benchmarks/run.py
--out BENCHMARKS.md --only core``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

COMMAND = ("TOPOCOLL_BENCH_BASE=/tmp/base .venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only core "
           "(base: c8cdd7a, the two loops before issue 26)")
REPEAT = 5
ROUNDS = 3
HERE = Path(__file__).resolve().parent

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
    ("shift all-to-all 4 KiB", "alltoall", "shift", 128, dict(count=128 * 512, itemsize=8),
     "torus:8x4x4", "packet", "rounds"),
]

CHILD = r"""
import json, sys, time
from topocoll.schedules import generate
from topocoll.sim.engine import EngineConfig, EngineOptions, compile_program, simulate
from topocoll.sim.model import Platform, make_network
cases, repeat = json.loads(sys.argv[1])
out = []
for label, coll, algo, p, params, topo, model, sync in cases:
    sched = generate(coll, algo, p, **params)
    plat = Platform(network=make_network(topo, p))
    for loop in ("whole", "streamed"):
        prog = compile_program(sched) if loop == "whole" else None
        cfg = EngineConfig(model, EngineOptions(sync=sync), stream="never" if loop == "whole" else "always")
        best = None
        for _ in range(repeat):
            c0 = time.process_time()
            sim = simulate(sched, plat, cfg, program=prog) if prog is not None else simulate(sched, plat, cfg)
            cpu = time.process_time() - c0
            best = cpu if best is None else min(best, cpu)
        out.append([loop, sim.time, sim.events, best])
print(json.dumps(out))
"""


def _child(python_path: str | None) -> list:
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = python_path
    cwd = Path(python_path).parent if python_path else HERE.parent
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps([CASES, REPEAT])], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=1800)
    if res.returncode:
        raise RuntimeError(res.stderr.strip().splitlines()[-1])
    return json.loads(res.stdout)


def measure():
    base = os.environ.get("TOPOCOLL_BENCH_BASE")
    base_py = str(Path(base) / "python") if base else None
    now, before = None, None
    for _ in range(ROUNDS if base else 1):
        got = _child(None)
        now = got if now is None else [a if a[3] <= b[3] else b for a, b in zip(now, got)]
        if base_py:
            got = _child(base_py)
            before = got if before is None else [a if a[3] <= b[3] else b for a, b in zip(before, got)]
    return now, before


def run() -> str:
    now, before = measure()
    load = os.getloadavg()[0]
    rows = ["## Event loop: one loop over two op stores, before and after (issue 26)", "",
            f"Command: `{COMMAND}`. CPU seconds of one `simulate` call, the best of {REPEAT} (and of {ROUNDS} "
            "alternating rounds of the two builds); the whole program compiled beforehand, the streamed one "
            "produced round by round inside the call (its Python generation counts); engine events per CPU "
            f"second. Load average while measuring: {load:.1f} on 2 cores (parallel work of this session). "
            "Simulated times and event counts of the two builds are equal in every row (the benchmark stops otherwise).", "",
            "| case | P | network | model | sync | loop | simulated (µs) | events | CPU before (s) | CPU after (s) "
            "| M events/s before | after | after ÷ before (CPU) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    i = 0
    for label, _, _, p, _, topo, model, sync in CASES:
        for _ in ("whole", "streamed"):
            loop, t, ev, cpu = now[i]
            b = before[i] if before else None
            if b is not None and (b[1] != t or b[2] != ev):
                raise AssertionError(f"{label} {loop}: before {b[1]} s / {b[2]} events, after {t} s / {ev}")
            bcpu = f"{b[3]:.3f}" if b else "-"
            bev = f"{ev / b[3] / 1e6:.2f}" if b else "-"
            ratio = f"{cpu / b[3]:.2f}" if b else "-"
            rows.append(f"| {label} | {p:,} | {topo} | {model} | {sync} | {loop} | {t * 1e6:,.3f} | {ev:,} | {bcpu} | "
                        f"{cpu:.3f} | {bev} | {ev / cpu / 1e6:.2f} | {ratio} |")
            i += 1
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(run())
