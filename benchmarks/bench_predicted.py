"""Predicted against measured (issue 10): calibrate this machine, then run
every allreduce algorithm (and the reduce-scatter and all-to-all ones at
P = 2) for real over MPI and on the simulator loaded with the profile.

Measured: the plan executor (``topocoll.mpi.plan``) under ``mpiexec -n P``,
each repetition after a barrier, the slowest rank's time, median over the
repetitions. Predicted: ``topocoll.sim.engine.simulate`` on an ideal crossbar,
LogGOPS model with the calibrated parameters
(:meth:`~topocoll.sim.profile.MachineProfile.platform`,
:meth:`~topocoll.sim.profile.MachineProfile.engine_options`), ``sync=deps``
(the executor's semantics). The profile is measured in the same run.

The machine has 2 cores: above P = 2 the ranks share them and the time is
set by the operating system's scheduler, which the simulator (one dedicated
CPU per rank) does not model; the report says so next to the numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from topocoll.sim.profile import load_profile

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.25
PROCS = (2, 3, 4, 5, 6, 7, 8)
#: per P: (collective, message sizes in bytes); P = 2 runs in one job with the calibration
PLAN = {2: (("allreduce", (8, 65536, 1 << 20)), ("reduce_scatter", (16, 1 << 20)), ("alltoall", (8, 65536))),
        **{p: (("allreduce", (8, 1 << 20)),) for p in PROCS[1:]}}
#: per case: at most this many timed repetitions, and at most this much time
REPS, WARMUP, CASE_BUDGET_S = 60, 5, 1.0
JOB_TIMEOUT_S = 120

CHILD = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
from topocoll.schedules import generate
from topocoll.mpi import plan

comm = MPI.COMM_WORLD
cases, reps, warmup, budget, profile_path = json.loads(sys.argv[1])
if profile_path:   # calibrate in this job: the same placement of the ranks as the measurements below
    from topocoll.mpi.calibrate import calibrate
    from topocoll.sim.profile import save_profile
    profile = calibrate(comm, command="benchmarks/bench_predicted.py (in the P = 2 measurement job)")
    if comm.rank == 0:
        save_profile(profile, profile_path)
out = []
for case in cases:
    sched = generate(case["collective"], case["algorithm"], comm.size, count=case["count"], itemsize=8,
                     **case["params"])
    rng = np.random.default_rng(comm.rank)
    x = rng.random(sched.count)
    y = np.empty_like(x)
    pl = plan(sched, x, y, op=case["op"], comm=comm)
    times, began = [], time.perf_counter()
    for i in range(warmup + reps):
        comm.Barrier()
        t = time.perf_counter()
        pl.start()
        pl.wait()
        t = time.perf_counter() - t
        if i >= warmup:
            times.append(t)
        # every rank stops after the same repetition: rank 0's clock decides
        if comm.bcast(time.perf_counter() - began > budget and i >= warmup + 4, root=0):
            break
    pl.free()
    slowest = np.max(np.array(comm.allgather(times)), axis=0)   # slowest rank, per repetition
    if comm.rank == 0:
        out.append({**case, "median": float(np.median(slowest)), "q1": float(np.percentile(slowest, 25)),
                    "q3": float(np.percentile(slowest, 75)), "reps": len(slowest)})
if comm.rank == 0:
    print(json.dumps(out))
"""


def _mpiexec() -> str:
    here = Path(sys.executable).parent
    return shutil.which("mpiexec", path=str(here)) or shutil.which("mpiexec") or "mpiexec"


def _env() -> dict:
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _calibrate(path: Path) -> tuple[object, str]:
    """Run ``topocoll calibrate`` (it relaunches itself under mpiexec -n 2)."""
    cmd = [sys.executable, "-m", "topocoll", "calibrate", "-o", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, env=_env(), cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"calibrate failed: {proc.stderr.strip().splitlines()[-1:]}")
    return load_profile(path), proc.stdout


def _cases(collective: str, p: int, sizes) -> list[dict]:
    """Every algorithm of ``collective`` that supports ``p``, at each size
    (``max`` for the algorithms that need an idempotent operator, else ``sum``)."""
    from topocoll.schedules.registry import catalogue
    from topocoll.schedules.sizes import from_bytes

    out = []
    for info in catalogue().values():
        if info.collective != collective:
            continue
        params = dict(info.sweep[0])
        if not info.supports(p, params):
            continue
        for size in sizes:
            count = from_bytes(collective, p, size, itemsize=8)["count"]
            out.append({"collective": collective, "algorithm": info.name, "params": params, "size": size,
                        "count": count, "op": "max" if info.needs.idempotent else "sum"})
    return out


def _measure(p: int, cases: list[dict], profile_path: str | None = None) -> tuple[list[dict], str | None]:
    """Run ``cases`` under ``mpiexec -n p`` (calibrating first into
    ``profile_path`` if given); the measured rows, or why there are none."""
    args = json.dumps([cases, REPS, WARMUP, CASE_BUDGET_S, profile_path])
    cmd = [_mpiexec(), "-n", str(p), sys.executable, "-c", CHILD, args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, env=_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return [], f"P = {p}: over {JOB_TIMEOUT_S} s"
    if proc.returncode != 0:
        return [], f"P = {p}: {(proc.stderr.strip().splitlines() or ['exit %d' % proc.returncode])[-1]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def predict(case: dict, p: int, profile) -> float:
    """The simulator's time for one case, seconds."""
    from topocoll.schedules import generate
    from topocoll.sim.engine import simulate

    sched = generate(case["collective"], case["algorithm"], p, count=case["count"], itemsize=8, **case["params"])
    sim = simulate(sched, profile.platform(model="loggops"), model="loggops",
                   options=profile.engine_options(sync="deps"))
    return sim.time + profile.call_overhead()


def _fmt_time(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs" if seconds < 1e-2 else f"{seconds * 1e3:,.1f} ms"


def _fmt_size(size: int) -> str:
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def run() -> str:
    started = time.perf_counter()
    rows, errors = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cli_profile, cal_out = _calibrate(Path(tmp) / "cli_profile.json")
        in_job = Path(tmp) / "in_job_profile.json"
        for p, plan in PLAN.items():
            cases = [case for collective, sizes in plan for case in _cases(collective, p, sizes)]
            measured, err = _measure(p, cases, str(in_job) if p == 2 else None)
            if err:
                errors.append(err)
            rows += [(p, case) for case in measured]
        profile = load_profile(in_job) if in_job.exists() else cli_profile
    table = [(p, case, predict(case, p, profile), predict(case, p, cli_profile)) for p, case in rows]
    return _report(profile, cli_profile, cal_out, table, errors, time.perf_counter() - started)


def _within(measured: float, predicted: float) -> bool:
    return abs(measured / predicted - 1) <= TARGET


def _count(table, column: int, procs) -> str:
    cases = [row for row in table if row[0] in procs]
    return f"{sum(_within(row[1]['median'], row[column]) for row in cases)} of {len(cases)}"


def _profile_line(name: str, profile) -> str:
    e = profile.loggops()
    return (f"| {name} | {profile.alpha * 1e6:.2f} µs, 1/({1 / profile.beta / 1e9:.3g} GB/s), "
            f"{profile.fit_residual:.0%} | {profile.executor_alpha * 1e6:.2f} µs, "
            f"1/({1 / profile.executor_beta / 1e9:.3g} GB/s), {profile.executor_call * 1e6:.2f} µs | "
            f"{profile.o_send * 1e6:.2f} / {profile.o_recv * 1e6:.2f} / {profile.g * 1e6:.2f} / "
            f"{profile.L * 1e6:.2f} µs, 1/({1 / profile.G / 1e9:.3g} GB/s) | "
            f"{e['o_send'] * 1e6:.2f} / {e['o_recv'] * 1e6:.2f} / {e['g'] * 1e6:.2f} / {e['L'] * 1e6:.2f} µs | "
            f"{profile.reduce_bandwidth / 1e9:.3g} GB/s | {profile.meta.get('load_average', '?')} |")


def _summary_by_group(table) -> list[str]:
    """Measured / predicted per (P, size): median and range, cases within target."""
    import numpy as np

    groups: dict[tuple, list] = {}
    for p, case, pred, _ in table:
        groups.setdefault((p, case["size"]), []).append(case["median"] / pred)
    out = ["| P | size | cases | measured / predicted: median (min – max) | within 25 % |", "|---|---|---|---|---|"]
    for (p, size), ratios in sorted(groups.items()):
        r = np.array(ratios)
        out.append(f"| {p} | {_fmt_size(size)} | {len(r)} | {np.median(r):.2f} ({r.min():.2f} – {r.max():.2f}) | "
                   f"{int(np.sum(np.abs(r - 1) <= TARGET))} |")
    return out


def _explanations(profile) -> list[str]:
    """Why the misses happen, with this run's own numbers where it has them."""
    rows = profile.meta.get("executor_exchange") or []
    calls = ", ".join(f"{_fmt_size(int(r[0]))}: {r[2] * 1e6:.1f} µs" for r in rows if len(r) > 2)
    return [
        "Why predictions miss here:",
        "",
        "- **P ≥ 3 is oversubscribed** (2 cores): a waiting rank either spins in MPI (holding a core until "
        "the operating system preempts it) or, with the executor's polite polling when ranks outnumber cores "
        "(`topocoll.mpi.transport.oversubscribed`), sleeps between polls; either way the time is set by the "
        "scheduler (tens of µs to ms per wait), not by the transport, and the simulator gives every rank its "
        "own CPU. The P ≥ 3 rows measure that effect, not the model; a fair test needs one core per rank.",
        "- **One line for a curved transport**: MPICH's shared-memory transport switches protocol between 4 "
        "and 16 KiB (the ping-pong fit's residual is in the profile table); the engine has one per-byte cost.",
        f"- **A call's first exchange costs more at larger sizes** (executor cost per call by size in this "
        f"run: {calls or 'not measured'}); the engine prices every round alike and the profile keeps the "
        "small-message call cost, so one- and two-round collectives at 64 KiB come out low.",
        "- **Noise**: the VM's two vCPUs are shared with other work; the calibration and the measurements "
        "run in the same job at P = 2 to see the same placement, and the two profiles' table shows how far "
        "two calibrations minutes apart differ.",
    ]


def _report(profile, cli_profile, cal_out: str, table, errors, wall: float) -> str:
    m = profile.meta
    lines = [
        "## Predicted against measured (calibrated LogGOPS simulator vs real MPI)",
        "",
        "`python benchmarks/run.py --only predicted`. Measured: the plan executor (`topocoll.mpi.plan`) under "
        f"`mpiexec -n P`, float64 data; each repetition starts after a barrier and counts the slowest rank; "
        f"median of up to {REPS} repetitions (at most {CASE_BUDGET_S:g} s per case) after {WARMUP} warm-up runs. "
        "Predicted: `simulate(..., model='loggops', sync='deps')` on an ideal crossbar with the profile's "
        "executor-layer LogGOPS parameters (`MachineProfile.platform`, `.engine_options`), plus the executor's "
        "cost per call (`MachineProfile.call_overhead`). The profile is calibrated (`topocoll.mpi.calibrate."
        "calibrate`) inside the P = 2 job, before its measurements, so that both see the same placement of "
        "the two ranks on this VM's two vCPUs; `topocoll calibrate` also ran as its own job (second profile "
        f"below). {m.get('library', '?')}, host {m.get('host', '?')} ({m.get('cores', '?')} cores), "
        f"{m.get('date', '?')}. Target: within {TARGET:.0%}.",
        "",
        "| profile | ping-pong α, β, fit residual | executor α, β, call | LogGP o_s / o_r / g / L, G "
        "| engine o_s / o_r / g / L (executor layer) | γ (np.add) | load avg. |",
        "|---|---|---|---|---|---|---|",
        _profile_line("in the P = 2 job (used)", profile),
        _profile_line("`topocoll calibrate` job", cli_profile),
        "",
        "| collective | algorithm | P | size | measured (median) | quartiles | predicted | measured / predicted "
        "| within 25 %? |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p, case, pred, _ in table:
        params = ", ".join(f"{k}={v}" for k, v in case["params"].items() if v is not None)
        name = case["algorithm"] + (f" ({params})" if params else "")
        lines.append(f"| {case['collective']} | {name} | {p} | {_fmt_size(case['size'])} | "
                     f"{_fmt_time(case['median'])} | {_fmt_time(case['q1'])} – {_fmt_time(case['q3'])} | "
                     f"{_fmt_time(pred)} | {case['median'] / pred:.2f} | "
                     f"{'yes' if _within(case['median'], pred) else 'no'} |")
    lines += [
        "",
        f"Within {TARGET:.0%}: **{_count(table, 2, (2,))} cases at P = 2** (one rank per core); "
        f"{_count(table, 2, PROCS[1:])} at P = 3..8 (oversubscribed). With the separate `topocoll calibrate` "
        f"job's profile instead: {_count(table, 3, (2,))} at P = 2. Whole section: {wall:.0f} s.",
    ]
    lines += ["", *_summary_by_group(table), "", *_explanations(profile)]
    if errors:
        lines += ["", "Runs that failed: " + "; ".join(errors) + "."]
    lines += ["", "`topocoll calibrate` printed:", "", "```", cal_out.strip(), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
