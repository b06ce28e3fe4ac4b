"""Start-up, saying so first, and the tuner's run time (issue 26, item 4).

- start-up: ``topocoll --help`` against a bare ``python -c pass`` (target ≤ 1.5×), and a small
  ``topocoll simulate`` against ``python -c "import numpy, topocoll._core"`` (what any simulation
  needs), timed interleaved (each round runs every command once, in turn) so that the machine's
  load falls on all of them alike; wall-clock medians, and the CPU time (user + system) of the
  children, which the other engineers' load disturbs less;
- the tuner: ``topocoll tune allreduce,alltoall -P 64,256 --sizes 8..4M --topology kary:16,2`` on
  every core (target ≤ 5 minutes on 2 cores; it printed nothing for 21 minutes before), with the
  line it prints first (evaluations, processes, expected time) beside the time it took;
- ``topocoll topo aries:2 --export-simgrid``: the line it prints first (hosts, routes, links, file
  size, expected time) beside the time it took.

Reproduce: ``.venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only startup``.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ".venv/bin/python benchmarks/run.py --out BENCHMARKS.md --only startup"
ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ROUNDS = 30
SIMULATE = "simulate allreduce ring -P 16 --size 64K --topology kary:4,2"
TUNE = "tune allreduce,alltoall -P 64,256 --sizes 8..4M --topology kary:16,2"


def _run(argv: list[str]) -> tuple[float, float, str]:
    """(wall s, children's CPU s, stderr) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def _interleaved(commands: dict[str, list[str]], rounds: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command over ``rounds`` interleaved rounds (one warm-up)."""
    times = {name: ([], []) for name in commands}
    for r in range(rounds + 1):
        for name, argv in commands.items():
            wall, cpu, _ = _run(argv)
            if r:
                times[name][0].append(wall)
                times[name][1].append(cpu)
    return {name: (statistics.median(w), statistics.median(c)) for name, (w, c) in times.items()}


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _said(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if "expected about" in line]
    return lines[0].removeprefix("topocoll: ") if lines else "(nothing: expected ≤ 30 s)"


def run() -> str:
    py, topocoll = str(BIN / "python"), str(BIN / "topocoll")
    load_before = _load()
    startup = _interleaved({
        "python -c pass": [py, "-c", "pass"],
        "topocoll --help": [topocoll, "--help"],
        "python -m topocoll --help": [py, "-m", "topocoll", "--help"],
        'python -c "import numpy, topocoll._core"': [py, "-c", "import numpy, topocoll._core"],
        f"topocoll {SIMULATE}": [topocoll, *SIMULATE.split()],
    }, ROUNDS)
    base_wall, base_cpu = startup["python -c pass"]
    need_wall, need_cpu = startup['python -c "import numpy, topocoll._core"']
    rows = ["| command | median wall | × python -c pass | median CPU | × python -c pass |",
            "|---|---:|---:|---:|---:|"]
    for name, (wall, cpu) in startup.items():
        rows.append(f"| `{name}` | {wall * 1e3:.1f} ms | {wall / base_wall:.2f}× | {cpu * 1e3:.1f} ms | "
                    f"{cpu / base_cpu:.2f}× |")
    sim_wall, sim_cpu = startup[f"topocoll {SIMULATE}"]
    load_startup = _load()

    wall, cpu, err = _run([topocoll, *TUNE.split()])
    tune_row = f"| `topocoll {TUNE}` | {wall:.1f} s | {cpu:.1f} s | {_said(err)} | {_load()} |"
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "aries2.xml")
        e_wall, e_cpu, e_err = _run([topocoll, "topo", "aries:2", "--export-simgrid", out])
        size = os.path.getsize(out) / 1e6
    export_row = (f"| `topocoll topo aries:2 --export-simgrid FILE` ({size:.0f} MB) | {e_wall:.1f} s | {e_cpu:.1f} s | "
                  f"{_said(e_err)} | {_load()} |")
    return "\n".join([
        "## Start-up, saying so first, the tuner's time (issue 26 item 4)",
        "",
        f"Command: `{COMMAND}`. {ROUNDS} interleaved rounds after a warm-up; load average (1/5/15 min) "
        f"{load_before} before, {load_startup} after the start-up rounds. `PYTHONDONTWRITEBYTECODE` is "
        f"{'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not set'} (with it, modules without a "
        "`__pycache__` entry compile at every start).",
        "",
        *rows,
        "",
        f"`topocoll --help` {startup['topocoll --help'][0] / base_wall:.2f}× a bare interpreter (target ≤ 1.5×): "
        "answered by `topocoll.entry` from the verb table without importing argparse. A small simulation "
        f"takes {sim_wall / need_wall:.2f}× (wall; {sim_cpu / need_cpu:.2f}× CPU) the import of NumPy and the "
        "engine it cannot do without.",
        "",
        "| command | wall | CPU (all processes) | line printed first | load after |",
        "|---|---:|---:|---|---|",
        tune_row,
        export_row,
        "",
        "Target for the tuner: ≤ 5 minutes on 2 cores (it printed nothing for 21 minutes before). Estimates "
        "come from measured rates (`topocoll.tune.batch`, `topocoll.topology.io.simgrid`).",
    ])


if __name__ == "__main__":
    print(run())
