"""Real MPI runs (mpich wheel + mpi4py) under mpiexec at P = 1, 2, 3, 4, 5, 8
(oversubscribed above 2 on this machine: no timing here).

One launch per P runs ``python -m topocoll.mpi.check --suite``: every
algorithm of every collective against the serial reference (sum, max,
non-commutative affine), empty blocks and counts not divisible by P, both
transports (persistent two-sided requests and one-sided put + notify), a plan
reused 100 times with new data each run, the mpi4py-shaped calls against the
library's own collectives (MPI_Allreduce, MPI_Reduce_scatter_block,
MPI_Alltoall, MPI_Bcast), compositing against the serial over, and
split-phase round counts. Then the failure paths: a failing rank aborts the
whole job with its one line within a time bound, and ranks that disagree all
get the same error before data moves.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

from mpi_launch import MPIEXEC, mpirun


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_suite_matches_serial_reference_and_the_library(n):
    seed = 100 + n
    proc = mpirun(n, "--suite", "--seed", str(seed))
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert lines and all(line.startswith("OK ") for line in lines), "\n".join(l for l in lines if not l.startswith("OK"))
    assert all(f"seed={seed}" in line for line in lines)
    text = proc.stdout
    # the suite really covered what it claims (a silently skipped part would pass otherwise)
    for part in ("transport=rma", "progress=dataflow", "runs=100", "op=affine (non-commutative)", "== MPI_Allreduce",
                 "== MPI_Alltoall", "== MPI_Reduce_scatter_block", "== MPI_Bcast", "iallreduce(",
                 "api composite(", "alltoall/randomized", "reduce_scatter/radix_k", "MPI_TAG_UB",
                 "plan misuse", "identical=True"):
        assert part in text, part
    assert len(lines) > 60


def test_parameters_reach_the_schedule_and_randomized_packets_work_at_any_count():
    proc = mpirun(3, "--collective", "alltoall", "--algorithm", "randomized", "--param", "packets=3",
                  "--param", "burst=2", "--count", "37", "--runs", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("OK alltoall/randomized(p=3, seed=0, packets=3, burst=2)"), proc.stdout
    assert "count=111" in proc.stdout


@pytest.mark.parametrize("where, line", [
    ("start", "topocoll: rank 1: error: --fail-rank=1: failing on purpose"),
    ("op", "topocoll: rank 1: error: allreduce/ring(p=3): ValueError: the reduction operator failed on purpose"),
])
def test_failing_rank_aborts_the_job_with_one_clear_line(where, line):
    began = time.monotonic()
    proc = mpirun(3, "--fail-rank", "1", "--fail-in", where, timeout=60)
    took = time.monotonic() - began
    assert took < 30, f"took {took:.1f} s"   # ended by MPI_Abort, not by the timeout
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert line in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_fail_rank_beyond_p_is_an_error():
    proc = mpirun(2, "--fail-rank", "2", timeout=60)
    assert proc.returncode != 0
    assert "--fail-rank 2, expected a rank in 0..1 (the job has 2 ranks)" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("field, message", [
    ("count", "allreduce: ranks disagree on count: rank 0 has 8, rank 2 has 7"),
    ("algorithm", "allreduce: ranks disagree on algorithm: rank 0 has pairwise_exchange, rank 2 has binomial"),
    ("op", "allreduce: ranks disagree on operator: rank 0 has sum, rank 2 has max"),
    ("p", "plan: rank 2: schedule is for p=4 ranks, the communicator has 3"),
])
def test_ranks_that_disagree_all_get_the_same_error_before_data_moves(field, message):
    proc = mpirun(3, "--disagree", field, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"DETECTED {message}; expected every rank to call the same collective" \
        or proc.stdout.strip() == f"DETECTED {message}", proc.stdout


OPERATOR_LINE = re.compile(r"^(OK|MISMATCH\S*.*?) operators (\w+) (\w+) params=(\{.*?\}) op=(\w+) (ran|refused)")


@pytest.mark.parametrize("n", [2, 3, 4, 5, pytest.param(8, marks=pytest.mark.exhaustive)])   # P = 8: 11-16 s
def test_every_algorithm_with_every_operator_equals_the_library_or_is_refused_as_the_verifier_decides(n):
    """Under mpiexec: each (reduction algorithm, operator) pair either returns
    exactly MPI_Allreduce's / MPI_Reduce_scatter_block's result with that
    operator or is refused on every rank; here every decision is held against
    the symbolic verifier's proof for the same schedule and operator."""
    from topocoll.errors import VerificationError
    from topocoll.mpi.operator_check import PREDEFINED, VERIFIER_OP
    from topocoll.schedules import generate
    from topocoll.verify import verify

    proc = mpirun(n, "--operators", "--seed", str(300 + n))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    decisions = [OPERATOR_LINE.match(line) for line in lines]
    assert all(decisions), [line for line, m in zip(lines, decisions) if not m][:3]
    assert all(m.group(1) == "OK" for m in decisions), [l for l in lines if not l.startswith("OK")][:5]
    seen_ops = {m.group(5) for m in decisions}
    assert seen_ops == set(VERIFIER_OP) and {name for name, _, _ in PREDEFINED} <= seen_ops
    outcomes = {m.group(6) for m in decisions}
    assert outcomes == {"ran", "refused"}, outcomes   # both paths were reached
    schedules = {}
    disagreements = []
    for m in decisions:
        collective, name, params, op, outcome = m.group(2), m.group(3), json.loads(m.group(4)), m.group(5), m.group(6)
        if name == "auto":   # skips what the operator does not allow: never refused
            if outcome != "ran":
                disagreements.append(f"{collective}/auto op={op}: refused")
            continue
        key = (collective, name, m.group(4))
        if key not in schedules:
            count = 3 * n if collective == "reduce_scatter" else 3
            schedules[key] = generate(collective, name, n, count=count, **params)
        try:
            verify(schedules[key], op=VERIFIER_OP[op])
            proved = "ran"
        except VerificationError:
            proved = "refused"
        if proved != outcome:
            disagreements.append(f"{collective}/{name} {params} op={op}: MPI layer {outcome}, verifier {proved}")
    assert not disagreements, disagreements[:5]


def test_start_then_polling_test_completes_at_every_size():
    """MPI_Start then MPI_Test polling: ``Plan.start()`` and ``test()`` until True, at 8 B, 4 KiB,
    256 KiB (scripted runs, which test() once ended with an internal AttributeError aborting the job)
    and 1 MiB (P = 3: 349 KiB messages, the dataflow engine); each result against the serial sum."""
    proc = mpirun(3, "--start-test", "--seed", "5")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("OK start() + test() polling") for line in lines), proc.stdout
    assert [line.rsplit(" B ", 1)[0].rsplit(" ", 1)[1] for line in lines] == ["8", "4096", "262144", "1048576"]


@pytest.mark.parametrize("args, line", [
    (["--collective", "Allreduce"], "collective 'Allreduce', expected one of allgather, allreduce"),
    (["--collective", "allreduce", "--algorithm", "Ring"], "algorithm 'Ring' for allreduce, expected one of"),
])
def test_a_misspelt_name_is_refused_not_a_check_of_nothing(args, line):
    """A typo once checked nothing and exited 0."""
    proc = mpirun(1, *args)
    assert proc.returncode != 0 and proc.stdout == "", proc.stdout
    assert f"topocoll: rank 0: error: {line}" in proc.stderr, proc.stderr
