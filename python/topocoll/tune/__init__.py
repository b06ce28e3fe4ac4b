"""Tuning: which algorithm, with which parameters, is fastest — as library calls.

:func:`rank` orders every algorithm of a collective by a model's estimate
(:mod:`topocoll.sim`), for a number of ranks and message sizes in MPI's
convention (:mod:`topocoll.schedules.sizes`). ``topocoll compare`` and
``topocoll demo`` print its rows. It evaluates the candidates on worker
processes when the work is large enough (``workers``) and hands each
:class:`Evaluated` to a callback as it finishes (``on_result``).

:func:`tune` (:mod:`.tuner`, ``topocoll tune``) searches algorithms,
parameters and node orders over a grid of P and sizes and returns a
:class:`DecisionTable`; :mod:`.libdefaults` emulates the default choice of
Open MPI 5.0.x and MPICH 5.0.x; :mod:`.emit` writes the tuning files of
Open MPI, MPICH and ``topocoll.mpi``'s ``algorithm="auto"``.
"""

from .libdefaults import LibraryChoice, library_default
from .rank import Evaluated, Ranked, rank
from .tuner import DecisionTable, tune

__all__ = ["DecisionTable", "Evaluated", "LibraryChoice", "Ranked", "library_default", "rank", "tune"]
