"""The one-shot calls' plan cache under real MPI (mpich wheel + mpi4py): no timing here.

``python -m topocoll.mpi.check --oneshot`` at P = 1, 2, 3: repeated
``allreduce`` calls with changing contents, buffers (the same, new, more
pairs than a key keeps bound, in place, none) and counts, for ``auto``, the
library's own collective and topocoll algorithms, against the serial sum;
no call writes a buffer of an earlier call; reduce_scatter, alltoall and
bcast through the cache; a tuning row naming the library's collective; the
cache bounded and freed with its communicator. ``--mismatch``: after calls
every rank has cached, one rank makes another call (a cached one or a new
one): the job ends with one line naming both calls within a time bound,
instead of hanging (``topocoll.mpi.cache``).
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

from mpi_launch import MPIEXEC, mpirun


@pytest.mark.parametrize("n", [1, 2, 3])
def test_repeated_one_shot_calls_match_the_serial_reference_and_the_cache_is_bounded_and_freed(n):
    seed = 300 + n
    proc = mpirun(n, "--oneshot", "--seed", str(seed))
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines and all(line.startswith("OK ") for line in lines), \
        "\n".join(line for line in lines if not line.startswith("OK"))
    text = proc.stdout
    for part in ("oneshot allreduce(auto) count=8197", "oneshot allreduce(mpi) count=0", "count=37",
                 "cycling", "oneshot reduce_scatter, alltoall, bcast",
                 "tuning row 'mpi'", "freed with the communicator", "free_plans(comm)"):
        assert part in text, part
    assert len(lines) >= 30


@pytest.mark.parametrize("field, named", [
    ("count", ("count=16", "count=8")),               # both calls named: this rank's and its peer's
    ("algorithm", ("rabenseifner", "pairwise_exchange")),
    ("new", ("count=",)),                             # the peer's call is new: named from one side or the other
])
@pytest.mark.parametrize("n", [2, 3])
def test_a_rank_making_another_call_after_cached_ones_ends_the_job_with_one_line(n, field, named):
    began = time.monotonic()
    proc = mpirun(n, "--mismatch", field, timeout=60)
    took = time.monotonic() - began
    assert took < 30, f"took {took:.1f} s"   # ended by the guard's abort, not by the timeout
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "UNDETECTED" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("topocoll: rank ")]
    assert errors, proc.stderr
    line = errors[0]
    assert "which has gone on to" in line and "the ranks' calls differ" in line, line
    assert "Traceback" not in proc.stderr, proc.stderr
    assert all(part in line for part in named), line
