"""Real execution of schedules over MPI (mpi4py).

- :func:`plan`: one rank's part compiled once, bound to buffers, run many
  times (``start``/``wait``, split-phase ``start_split``/``test``), over
  two-sided persistent requests or one-sided puts with notifications;
- :class:`Operator`: a user operator that says what it is
  (``commutative=``, ``idempotent=``); an algorithm that needs more of its
  operator than it is is refused on every rank before data moves;
- calls shaped like mpi4py's: :func:`allreduce`, :func:`iallreduce`,
  :func:`reduce_scatter`, :func:`alltoall`, :func:`bcast`, :func:`barrier`,
  :func:`composite`, and :func:`execute` for any schedule;
- the safety net: ranks that disagree raise the same error before data
  moves; a rank failing once data moves aborts the whole job with one line.

``docs/mpi.md`` is the design note.
"""

from .api import (DEFAULTS, NATIVE, Piece, SplitRequest, allreduce, alltoall, barrier, bcast, cache_info, choose,
                  composite, execute, free_plans, iallreduce, reduce_scatter)
from .compile import RankProgram, compile_rank
from .operators import Operator
from .plan import Plan, plan

__all__ = ["plan", "Plan", "execute", "allreduce", "iallreduce", "SplitRequest", "reduce_scatter", "alltoall",
           "bcast", "barrier", "composite", "Piece", "choose", "DEFAULTS", "NATIVE", "free_plans", "cache_info",
           "compile_rank", "RankProgram", "Operator"]
