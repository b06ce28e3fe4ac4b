"""Real MPI runs (mpich wheel + mpi4py) of every algorithm against the serial
reference, at 1..5 ranks (oversubscribed above 2 on this machine: no timing
here), and a failing rank aborting the whole job instead of hanging."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def mpirun(n, *args, timeout=120):
    if MPIEXEC is None:
        pytest.fail("mpiexec not found: `make test` installs the mpich wheel into .venv")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "topocoll.mpi.check", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


CASES = [
    ("allreduce", "sum"), ("allreduce", "affine"), ("allreduce", "max"),
    ("reduce", "affine"), ("bcast", "sum"), ("barrier", "max"),
    ("reduce_scatter", "sum"), ("reduce_scatter", "affine"), ("allgather", "sum"), ("alltoall", "sum"),
]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("collective, op", CASES)
def test_every_algorithm_matches_serial_reference(n, collective, op):
    proc = mpirun(n, "--collective", collective, "--op", op, "--seed", str(100 + n))
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert lines and all(l.startswith("OK ") for l in lines), proc.stdout
    assert all(f"seed={100 + n}" in l for l in lines)


def test_root_and_parameters_reach_the_schedule():
    proc = mpirun(4, "--collective", "reduce", "--param", "root=3", "--op", "affine")
    assert proc.returncode == 0, proc.stderr
    assert "root=3" in proc.stdout


def test_failing_rank_aborts_the_job_with_one_clear_line():
    proc = mpirun(3, "--fail-rank", "1", timeout=60)
    assert proc.returncode != 0
    assert "topocoll: rank 1: error: --fail-rank=1: failing on purpose" in proc.stderr
    assert "Traceback" not in proc.stderr
