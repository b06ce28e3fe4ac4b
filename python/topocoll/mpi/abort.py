"""A failing rank ends the whole job with one clear line, never a hang.

Like ``python -m mpi4py``: an uncaught exception on any rank prints
``topocoll: rank R: error: <message>`` to stderr and calls ``MPI_Abort``,
which terminates every rank of the job (the others may be blocked in a
receive that would never complete).
"""

from __future__ import annotations

import os
import sys
import traceback

from ..errors import TopocollError


def run_or_abort(main, *args, **kwargs) -> int:
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    try:
        return main(*args, **kwargs)
    except TopocollError as exc:
        print(f"topocoll: rank {rank}: error: {exc}", file=sys.stderr, flush=True)
    except Exception as exc:  # a bug: keep the traceback, but still end the job
        traceback.print_exc()
        print(f"topocoll: rank {rank}: error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    MPI.COMM_WORLD.Abort(1)
    os._exit(1)   # MPICH's MPI_Abort may return before the launcher ends this process
