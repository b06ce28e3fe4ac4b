"""Schedules made for the network (issue 29): ``topocoll synthesize``.

:func:`synthesize` builds an allgather, reduce-scatter, allreduce, broadcast
or all-to-all for a routed network (static routes, node order, ``+ppn``
nodes), minimising the time a model gives it: a greedy matching of rank
pairs whose routes fit the links together, step by step over a
time-expanded network (TACOS, Won et al., MICRO 2024, generalised to
routes: :mod:`.greedy`), variants tried within a budget, the registry's
fixed algorithms ranked beside it (the faster wins, and says so). The
result is an ordinary schedule (``synthesized`` in the registry, a
:class:`~topocoll.schedules.arraypattern.TablePattern`), saved and loaded
as a JSON document whose routes' fingerprint is checked on loading
(:mod:`.fileformat`). Design note: ``docs/synthesis.md``.

>>> r = synthesize("allgather", "torus:4x4", 16, 1 << 20, budget=0, compare_fixed=False, progress=False)
>>> r.schedule.algorithm, r.link_test
('synthesized', [])
"""

from .fileformat import load, load_schedule, save
from .plan import COLLECTIVES
from .search import Synthesized, synthesize

__all__ = ["COLLECTIVES", "Synthesized", "synthesize", "load", "load_schedule", "save"]
