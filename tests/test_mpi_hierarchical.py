"""Node-aware (hierarchical) schedules over real MPI: 4 ranks as 2 nodes of 2
(``ppn=2``), every collective against the serial reference (the
collective's definition, not the schedule), both transports, a
non-commutative operator where the composition keeps rank order, the
mpi4py-shaped call against ``MPI_Allreduce``, and the refusal of a
non-commutative callable where the leaders' algorithm needs a commutative
one. One launch (oversubscribed on this machine: no timing here)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

BIN = str(Path(sys.executable).parent)
MPIEXEC = next((found for name in ("mpiexec", "mpiexec.hydra")
                for found in (shutil.which(name, path=BIN), shutil.which(name)) if found), None)

SCRIPT = r'''
import numpy as np
from mpi4py import MPI
import topocoll.mpi as tc
from topocoll.errors import TopocollError
from topocoll.mpi.check import Report, check_schedule
from topocoll.schedules import generate

comm = MPI.COMM_WORLD
p, rank = comm.Get_size(), comm.Get_rank()
report = Report(comm, 7)
cases = [("allreduce", {"inter": "rabenseifner"}, "affine"),
         ("allreduce", {"inter": "ring", "leaders": 2}, "sum"),
         ("reduce_scatter", {"inter": "binary_swap"}, "affine"),
         ("reduce_scatter", {"inter": "direct_send"}, "sum"),
         ("alltoall", {"inter": "bruck"}, "sum"),
         ("bcast", {"root": 3}, "sum")]
for collective, params, op in cases:
    count = 37 * p if collective == "alltoall" else 37
    sched = generate(collective, "hierarchical", p, count=count, ppn=2, **params)
    for transport in ("p2p", "rma"):
        check_schedule(report, sched, op, seed=7, runs=2, transport=transport)
x = np.arange(10, dtype=np.float64) * (rank + 1)
y = tc.allreduce(x, op=MPI.SUM, algorithm="hierarchical", ppn=2, inter="rabenseifner")
want = np.empty_like(x)
comm.Allreduce(x, want, op=MPI.SUM)
report.case("api allreduce(hierarchical) == MPI_Allreduce", [] if np.array_equal(y, want) else ["differs"])
try:
    # one leader per rank: the ring runs on 4 leaders, where it needs a commutative operator
    tc.allreduce(x, op=lambda a, b: a - b, algorithm="hierarchical", ppn=2, leaders=2, inter="ring")
    heard = "no error"
except TopocollError as err:
    heard = str(err)
everyone = comm.gather(heard, root=0)
if rank == 0:
    same = len(set(everyone)) == 1 and "\n" not in heard and heard != "no error"
    print(("OK" if same else "MISMATCH") + " refused on every rank: " + heard, flush=True)
'''


def test_four_ranks_on_two_nodes_match_the_serial_reference_and_the_library():
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    env = dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")
    proc = subprocess.run([MPIEXEC, "-n", "4", sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 6 * 2 + 2, proc.stdout
    assert all(line.startswith("OK ") for line in lines), proc.stdout
    for part in ("allreduce/hierarchical(p=4, ppn=2, leaders=1, inter=rabenseifner) op=affine (non-commutative)",
                 "reduce_scatter/hierarchical(p=4, ppn=2, leaders=1, inter=binary_swap) op=affine",
                 "alltoall/hierarchical(p=4, ppn=2, leaders=1, inter=bruck)", "transport=rma",
                 "bcast/hierarchical(p=4, ppn=2, leaders=1, inter=binomial, root=3)"):
        assert part in proc.stdout, part
    refusal = lines[-1]
    assert "inter=ring" in refusal and "commutative" in refusal, refusal
