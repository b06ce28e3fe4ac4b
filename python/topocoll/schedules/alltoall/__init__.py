"""Personalized all-to-all: direct, shift, randomized, Bruck, Two Phase Schedule, virtual mesh.

Every rank ``s`` holds ``p`` blocks in ``data``; block ``d`` is addressed to
rank ``d`` and must end on rank ``d`` at block position ``s`` (MPI_Alltoall,
MPI-3.1 §5.8; :mod:`.collectives`). ``count`` is the whole per-rank vector, so
every destination gets ``count / p`` elements: ``m = count/p · itemsize``
bytes, the paper's per-destination message size.

Generators (collective ``"alltoall"``):

- :func:`direct_alltoall` — every rank sends to 0, 1, 2, … in order: the
  hot-spot baseline (round ``j`` funnels ``p - 1`` messages into rank ``j``);
- :func:`shift_alltoall` — round ``S``: send to ``(i + S) mod p``, receive from
  ``(i - S) mod p`` (the shift permutation, Cavin & Demengeon 2012 §2.1.4);
- :func:`pairwise_exchange_alltoall` — round ``S``: exchange with ``i XOR S``
  (``p`` a power of two);
- :func:`randomized_alltoall` — each rank visits its peers in its own seeded
  random permutation (the AR scheme of Kumar & Heidelberger §3, at message
  granularity);
- :func:`bruck_alltoall` — Bruck's ⌈log_{k+1} p⌉-round algorithm with ``k``
  ports, local rotations as Copy operations;
- :func:`two_phase_schedule` — the Two Phase Schedule for an X×Y×Z torus or
  mesh (§4.1): phase 1 along the linear dimension to the intermediate node
  with the destination's linear coordinate, phase 2 in the plane, pipelined;
- :func:`virtual_mesh_alltoall` — the 2D virtual mesh message-combining scheme
  (§4.2) and its d-dimensional generalisation (d = 3: the HPCC RandomAccess
  scheme of Garg & Sabharwal, cited as [5]).

Forwarding is explicit in the IR. An intermediate rank receives forwarded
blocks into a scratch buffer (``"fwd"``, ``"fwd0"``, …) at distinct positions,
then sends them on; combined messages are one :class:`~.ir.Send` carrying many
blocks. Every rank holds exactly ``p`` blocks at every stage of these
algorithms, so scratch positions are numbered ``0 … p-1`` too (a position's
size is then the size of any block, as the op program's byte counts assume).
The direct algorithms copy the input into a ``"send"`` buffer (MPI's
separate ``sendbuf``): receiving straight into ``data`` in place would make a
pair of ranks wait on each other under rendezvous semantics.

Each generator has one description (:mod:`topocoll.schedules.pattern`), every
view derives from it and dependencies come from the data flow alone
(:class:`~topocoll.schedules.ir.RankBuilder`). The rank-symmetric ones — shift,
XOR pairwise exchange and Bruck — are :class:`~topocoll.schedules.pattern.Circulant`
templates: rank 0's operations, moved by each rank, whose op program streams
vectorised over ranks. The others — direct (round ``j`` goes to rank ``j``
itself), randomized, the Two Phase Schedule and the virtual mesh — record
their operations as one op table over ranks with NumPy
(:class:`~topocoll.schedules.arraypattern.TablePattern`): any set of ranks at
once, one rank for ``ops_for``, every rank for the op program, whose
dependencies come from the same data-flow rule vectorised
(:func:`~topocoll.schedules.arraypattern.table_dependencies`).

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012, §2.1.4
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient
algorithms for all-to-all communications in multiport message-passing
systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

from .common import (
    AXES, DEFAULT_MAPPING, PAPER, TorusShape, balanced_dims, check_sizes, choose_linear_dimension,
    linear_candidates, parse_shape,
)
from .direct import direct_alltoall, pairwise_exchange_alltoall, shift_alltoall
from .randomized import inverse_permutations, permutation_keys, random_permutations, randomized_alltoall
from .bruck import BruckStep, bruck_alltoall, bruck_plan
from .two_phase import TorusLayout, two_phase_schedule
from .virtual_mesh import MeshLayout, resolve_mesh_dims, virtual_mesh_alltoall

ALGORITHMS = {
    "direct": direct_alltoall,
    "shift": shift_alltoall,
    "pairwise_exchange": pairwise_exchange_alltoall,
    "randomized": randomized_alltoall,
    "bruck": bruck_alltoall,
    "two_phase_schedule": two_phase_schedule,
    "virtual_mesh": virtual_mesh_alltoall,
}

__all__ = [
    "AXES", "DEFAULT_MAPPING", "PAPER", "TorusShape", "balanced_dims", "check_sizes",
    "choose_linear_dimension", "linear_candidates", "parse_shape", "direct_alltoall",
    "pairwise_exchange_alltoall", "shift_alltoall", "inverse_permutations", "permutation_keys",
    "random_permutations", "randomized_alltoall", "BruckStep", "bruck_alltoall", "bruck_plan", "TorusLayout",
    "two_phase_schedule", "MeshLayout", "resolve_mesh_dims", "virtual_mesh_alltoall", "ALGORITHMS",
]
