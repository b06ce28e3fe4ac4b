"""Check the MPI executor against the serial reference, under mpiexec.

    mpiexec -n 4 python -m topocoll.mpi.check [--collective C] [--algorithm A]
        [--param n=2 ...] [--count N] [--op sum|max|affine] [--seed S] [--fail-rank R]

Every rank derives every rank's input from the seed, runs its part of the
schedule with :func:`execute_mpi`, and compares its output blocks with the
collective's serial definition. Rank 0 prints one line per schedule
(``OK ...`` or ``MISMATCH ...``) and the seed; the exit status is 1 if any
schedule mismatched. Without ``--algorithm`` every algorithm of the
collective that supports this P is checked. ``--fail-rank R`` makes rank R
raise, to demonstrate that the job aborts instead of hanging.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import SpecError
from .abort import run_or_abort


def _parse(argv):
    from ..argtypes import parse_params, positive_int

    parser = argparse.ArgumentParser(prog="python -m topocoll.mpi.check", description=__doc__.splitlines()[0])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--algorithm", default=None)
    parser.add_argument("--param", action="append")
    parser.add_argument("--count", type=positive_int, default=37)
    parser.add_argument("--op", default="sum", choices=["sum", "max", "prod", "xor", "affine"])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--fail-rank", type=int, default=None)
    args = parser.parse_args(argv)
    return args, parse_params(args.param)


def main(argv=None) -> int:
    from mpi4py import MPI

    from ..schedules import catalogue, generate
    from ..verify import affine, affine_inputs, integer_inputs, serial_reference
    from .executor import execute_mpi

    args, params = _parse(argv)
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    if args.fail_rank is not None and rank == args.fail_rank:
        raise SpecError(f"--fail-rank={rank}: failing on purpose to show the job aborts")
    if args.algorithm:
        cases = [(args.algorithm, params)]
    else:
        cases = [(info.name, {**info.sweep[0], **params}) for info in catalogue().values()
                 if info.collective == args.collective and info.supports(p, {**info.sweep[0], **params})
                 and (args.op != "affine" or not info.needs.commutative)
                 and (not info.needs.idempotent or args.op == "max")]
    failures = 0
    for name, case_params in cases:
        count = args.count * p if args.collective == "alltoall" else args.count
        sched = generate(args.collective, name, p, count=count, **case_params)
        if args.op == "affine":
            inputs, op = affine_inputs(p, sched.count, args.seed), affine
        else:
            inputs, op = integer_inputs(p, sched.count, args.seed), args.op
        out = execute_mpi(sched, inputs[rank], op=op, comm=comm)
        want = serial_reference(sched, inputs, op)[rank]
        bad = [b for b, v in want.items()
               if not np.array_equal(out[sched.bounds[b]:sched.bounds[b + 1]], v)]
        all_bad = comm.gather(bad[:3], root=0)
        if rank == 0:
            wrong = {r: blocks for r, blocks in enumerate(all_bad) if blocks}
            status = "OK" if not wrong else f"MISMATCH at ranks/blocks {wrong}"
            print(f"{status} {sched.label()} op={args.op if args.op != 'affine' else 'affine (non-commutative)'} "
                  f"count={sched.count} seed={args.seed}", flush=True)
            failures += bool(wrong)
    failures = comm.bcast(failures, root=0)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run_or_abort(main))
