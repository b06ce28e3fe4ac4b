"""Synthesized schedules over real MPI (issue 29): four ranks on a 2×2 torus.

Each collective is synthesized here (no fixed fallback), saved, and every
rank loads the same file (the routes' fingerprint checked on loading) and
runs it through a plan against the serial reference (the collective's
definition, not the schedule), over both transports, then once more on
plain float64 vectors against the MPI library's own collective
(``MPI_Allgather``, ``MPI_Reduce_scatter_block``, ``MPI_Allreduce``,
``MPI_Bcast``, ``MPI_Alltoall``). One launch (oversubscribed on this
machine: no timing here)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from topocoll.synth import synthesize

pytestmark = pytest.mark.mpi

BIN = str(Path(sys.executable).parent)
MPIEXEC = next((found for name in ("mpiexec", "mpiexec.hydra")
                for found in (shutil.which(name, path=BIN), shutil.which(name)) if found), None)

SCRIPT = r'''
import sys
import numpy as np
from mpi4py import MPI
import topocoll.mpi as tc
from topocoll.mpi.check import Report, check_schedule
from topocoll.schedules import generate

comm = MPI.COMM_WORLD
p, rank = comm.Get_size(), comm.Get_rank()
report = Report(comm, 11)
for arg in sys.argv[1:]:
    collective, path = arg.split("=", 1)
    count = 6 * p if collective == "alltoall" else 37
    sched = generate(collective, "synthesized", p, file=path, count=count,
                     **({"root": 2} if collective == "bcast" else {}))
    assert sched.algorithm == "synthesized", sched.label()
    for transport in ("p2p", "rma"):
        check_schedule(report, sched, "sum", seed=11, runs=2, transport=transport)
    # the library's own collective on float64 vectors of the same length
    n = sched.count
    x = (np.arange(n, dtype=np.float64) + 1) * (rank + 1)
    if collective == "allgather":
        mine = np.array_split(np.arange(n), p)[rank]    # the blocks this rank contributes
        want = np.empty(n)
        counts = [len(a) for a in np.array_split(np.arange(n), p)]
        comm.Allgatherv(x[mine].copy(), [want, counts])
        got = np.zeros(n)
        got[mine] = x[mine]
        got = tc.execute(sched, MPI.IN_PLACE, got)
    elif collective == "reduce_scatter":
        got = tc.execute(sched, x, np.zeros(n), op="sum")
        want = np.empty(n)
        comm.Allreduce(x, want, op=MPI.SUM)           # every rank then compares its own blocks
        own = np.concatenate([np.arange(sched.bounds[b], sched.bounds[b + 1]) for b in sched.result_blocks(rank)])
        got, want = got[own], want[own]
    elif collective == "allreduce":
        got = tc.execute(sched, x, np.zeros(n), op="sum")
        want = np.empty(n)
        comm.Allreduce(x, want, op=MPI.SUM)
    elif collective == "bcast":
        got = x.copy() if rank == sched.root else np.zeros(n)
        got = tc.execute(sched, MPI.IN_PLACE, got)
        want = x.copy() if rank == sched.root else np.zeros(n)
        comm.Bcast(want, root=sched.root)
    else:
        got = tc.execute(sched, x, np.zeros(n))
        want = np.empty(n)
        comm.Alltoall(x, want)
    report.case(f"{sched.label()} == MPI library's {collective}", [] if np.array_equal(got, want) else ["differs"])
'''

CASES = {"allgather": 64 << 10, "reduce_scatter": 256 << 10, "allreduce": 256 << 10, "bcast": 1 << 20,
         "alltoall": 16 << 10}


def test_four_ranks_match_the_serial_reference_and_the_library(tmp_path):
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    files = []
    for collective, size in CASES.items():
        res = synthesize(collective, "torus:2x2", 4, size, budget=0, compare_fixed=False, progress=False,
                         root=2 if collective == "bcast" else 0)
        assert res.plan.transfers > 0 and not res.link_test
        path = tmp_path / f"{collective}.json"
        res.save(path)
        files.append(f"{collective}={path}")
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    proc = subprocess.run([MPIEXEC, "-n", "4", sys.executable, "-c", SCRIPT, *files], capture_output=True,
                          text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(CASES) * 3, proc.stdout
    assert all(line.startswith("OK ") for line in lines), proc.stdout
    for collective in CASES:
        assert f"{collective}/synthesized(p=4, file=" in proc.stdout, collective
    assert proc.stdout.count("transport=rma") == len(CASES)


AUTO = r'''
import sys
import numpy as np
from mpi4py import MPI
import topocoll.mpi as tc

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
x = (np.arange(int(sys.argv[2]), dtype=np.float64) + 1) * (rank + 1)
got = tc.allreduce(x, algorithm="auto", tuning=sys.argv[1])
want = np.empty_like(x)
comm.Allreduce(x, want, op=MPI.SUM)
labels = tc.cache_info()["labels"]
line = f"{'OK' if np.array_equal(got, want) else 'FAIL'} rank {rank}: {labels[0]}"
lines = comm.gather(line)      # printed by one rank: four ranks' prints may interleave
if rank == 0:
    print("\n".join(lines), flush=True)
'''


def test_auto_with_a_tuning_file_runs_the_synthesized_schedule_at_its_p(tmp_path):
    """``tune --synthesize`` on the 2×2 torus writes a tuning table naming a synthesized allreduce for
    P = 4; ``allreduce(algorithm="auto", tuning=FILE)`` on four ranks runs that file's schedule and
    its result equals ``MPI_Allreduce``'s (sums of small integers: exact in any order)."""
    from topocoll.sim import model_named
    from topocoll.tune import emit
    from topocoll.tune.tuner import tune
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    size = 1 << 20
    table = tune(["allreduce"], [4], [size], topology="torus:2x2", model=model_named("flow"), libraries=[],
                 synthesize=tmp_path / "schedules", synth_budget=0, seed=0)
    best = table.point("allreduce", 4, size).best
    assert best.algorithm == "synthesized", f"the tuner chose {best.label()}, the case needs a synthesized winner"
    tuning = tmp_path / "tuning.json"
    tuning.write_text(emit.emit(table, "topocoll"))
    row = next(r for r in json.loads(tuning.read_text())["allreduce"] if r["algorithm"] == "synthesized")
    assert row["min_p"] == row["max_p"] == 4
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    proc = subprocess.run([MPIEXEC, "-n", "4", sys.executable, "-c", AUTO, str(tuning), str(size // 8)],
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 4 and all(line.startswith("OK ") for line in lines), proc.stdout
    assert all(f"allreduce/synthesized(p=4, file={row['params']['file']}" in line for line in lines), proc.stdout
