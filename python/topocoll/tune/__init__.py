"""Tuning: which algorithm, with which parameters, is fastest — as library calls.

:func:`rank` orders every algorithm of a collective by a model's estimate
(:mod:`topocoll.sim`), for a number of ranks and message sizes in MPI's
convention (:mod:`topocoll.schedules.sizes`). ``topocoll compare`` and
``topocoll demo`` print its rows; the tuner calls it directly. It evaluates
the candidates on worker processes when the work is large enough (``workers``)
and hands each :class:`Evaluated` to a callback as it finishes (``on_result``).
"""

from .rank import Evaluated, Ranked, rank

__all__ = ["Evaluated", "Ranked", "rank"]
