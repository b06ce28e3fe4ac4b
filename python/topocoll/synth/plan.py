"""A synthesized plan: phases of planned transfers, per collective.

=================  ==========================================================
collective         plan
=================  ==========================================================
``allgather``      one ``gather`` phase: chunk ``b`` starts at rank
                   ``b // c`` (``c`` chunks per rank) and is copied to all
``bcast``          one ``gather`` phase from the root, which holds all ``c``
                   chunks (pipelined: a rank forwards a chunk once it has it)
``reduce_scatter`` one ``reduce`` phase: the time reversal of an all-gather
                   planned on the reversed routes. Where the all-gather copies
                   chunk ``b`` from ``s`` to ``d`` in steps ``[t, t + k)``,
                   ``d`` sends its partial sum of ``b`` to ``s`` in steps
                   ``[T − t − k, T − t)`` and ``s`` adds it to its own: every
                   rank's partial leaves after the partials of the ranks it
                   fed in the all-gather have arrived, and the owner
                   ``b // c`` ends with the sum over all ranks. The routes
                   used are ``d → s``, the ones the all-gather was checked on
                   (``transposed``), so the reversed plan meets the same
                   link test
``allreduce``      a ``reduce`` phase, then a ``gather`` phase from the owners
``alltoall``       one ``direct`` phase: every message on its own route
=================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import SpecError
from .greedy import Transfers, direct, spread
from .routes import PairRoutes

__all__ = ["COLLECTIVES", "Phase", "Plan", "make_plan", "capacity_violations"]

#: the collectives ``synthesize`` builds
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "bcast", "alltoall")
KINDS = ("gather", "reduce", "direct")


@dataclass
class Phase:
    """One phase: ``kind`` (``gather``, ``reduce`` or ``direct``), the
    transfers in their real direction (``src`` sends), the first link of each
    transfer's route (``port``: the sender's port, which orders its sends),
    the phase's first round (``offset``) and its step length (``tau``, s)."""

    kind: str
    transfers: Transfers
    port: np.ndarray
    offset: int = 0
    inport: np.ndarray | None = None   # last link of each route (the receiver's port)

    @property
    def rounds(self) -> int:
        return self.transfers.makespan


@dataclass
class Plan:
    """Everything a synthesized schedule is: phases of transfers over ``nblocks``
    blocks (``c`` per rank, or ``c`` in all for a broadcast)."""

    collective: str
    p: int
    nblocks: int
    c: int
    phases: list
    root: int | None = None
    settings: dict = field(default_factory=dict)

    @property
    def planned_seconds(self) -> float:
        """The plan's own estimate: each phase's steps times its step length."""
        return float(sum(ph.rounds * ph.transfers.tau for ph in self.phases))

    @property
    def transfers(self) -> int:
        return sum(ph.transfers.n for ph in self.phases)


def _reverse(tr: Transfers) -> Transfers:
    """The time reversal of a plan (module doc): directions swap, steps mirror."""
    end = tr.makespan
    step = end - tr.step - tr.steps
    order = np.argsort(step, kind="stable")
    n = np.diff(tr.chunk_ptr)[order]
    ptr = np.zeros(order.shape[0] + 1, dtype=np.int64)
    np.cumsum(n, out=ptr[1:])
    starts = tr.chunk_ptr[order]
    idx = np.repeat(starts - ptr[:-1], n) + np.arange(int(n.sum()), dtype=np.int64)
    return Transfers(tr.dst[order], tr.src[order], step[order], tr.steps[order], ptr, tr.chunks[idx], tr.tau)


def _phase(kind: str, tr: Transfers, pr: PairRoutes, offset: int = 0) -> Phase:
    pairs = tr.src * pr.p + tr.dst
    port = pr.first[pairs] if tr.n else np.zeros(0, dtype=np.int64)
    inport = pr.last[pairs] if tr.n else np.zeros(0, dtype=np.int64)
    return Phase(kind, tr, port.astype(np.int64), offset, inport.astype(np.int64))


def make_plan(collective: str, pr: PairRoutes, *, c: int, block_bytes: float, alpha: float, gamma: float,
              agg: int, order: str, rng: np.random.Generator, root: int = 0, progress=None,
              locality: str = "strict") -> Plan:
    """The plan of ``collective`` on the routes ``pr`` (module doc).

    ``c``: chunks per rank (all-gather, reduce-scatter, allreduce; 1 for the
    all-to-all) or in all (broadcast); ``block_bytes``: bytes of one block;
    ``alpha``/``gamma``: the platform's overhead per message and reduction
    time per byte; ``agg``: most chunks per transfer; ``order`` and
    ``rng``: the greedy's order (:func:`.greedy.spread`).
    """
    p = pr.p
    if collective not in COLLECTIVES:
        raise SpecError(f"synthesize: collective {collective!r}, expected one of {', '.join(COLLECTIVES)}")
    kw = dict(chunk_bytes=block_bytes, alpha=alpha, agg=agg, order=order, rng=rng, progress=progress,
              locality=locality)
    settings = dict(c=c, agg=agg, order=order, chains="both", locality=locality)
    if collective == "alltoall":
        tr = direct(pr, message_bytes=block_bytes * c, alpha=alpha, order=order, rng=rng, progress=progress)
        return Plan(collective, p, p * c, c, [_phase("direct", tr, pr)], settings=settings)
    if collective == "bcast":
        if not 0 <= root < p:
            raise SpecError(f"synthesize bcast: root={root}, expected a rank in 0..{p - 1}")
        holders = np.zeros((p, c), dtype=bool)
        holders[root] = True
        tr = spread(pr, holders, **kw)
        return Plan(collective, p, c, c, [_phase("gather", tr, pr)], root=root, settings=settings)
    owners = np.zeros((p, p * c), dtype=bool)
    owners[np.repeat(np.arange(p), c), np.arange(p * c)] = True
    phases = []
    if collective in ("reduce_scatter", "allreduce"):
        part = None if progress is None else (lambda f: progress(f / 2)) if collective == "allreduce" else progress
        rs = spread(pr, owners, transposed=True, gamma=gamma, **{**kw, "progress": part})
        phases.append(_phase("reduce", _reverse(rs), pr))
    if collective in ("allgather", "allreduce"):
        part = None if progress is None else (lambda f: progress(0.5 + f / 2)) if collective == "allreduce" \
            else progress
        ag = spread(pr, owners, **{**kw, "progress": part})
        offset = phases[0].rounds if phases else 0
        phases.append(_phase("gather", ag, pr, offset))
    return Plan(collective, p, p * c, c, phases, settings=settings)


def capacity_violations(plan: Plan, pr: PairRoutes) -> list[str]:
    """The link test, checked again on the finished plan from the routes
    alone: in every step, every link carries transfers whose route rates sum
    to at most its bandwidth (link-disjoint steps where links are alike).
    Returns one line per violation (empty: none)."""
    bad = []
    for ph in plan.phases:
        tr = ph.transfers
        if tr.n == 0:
            continue
        pairs = tr.src * pr.p + tr.dst
        owner, links = pr.links_of(pairs)
        rate = pr.rate[pairs][owner]
        k = tr.steps[owner]
        rep = np.repeat(np.arange(owner.shape[0]), k)
        step = tr.step[owner][rep] + (np.arange(rep.shape[0]) - np.repeat(np.cumsum(k) - k, k))
        keys, inverse = np.unique(step * pr.n_links + links[rep], return_inverse=True)
        load = np.bincount(inverse, weights=rate[rep])
        over = np.flatnonzero(load > pr.link_bw[keys % pr.n_links] * (1 + 1e-9))
        for i in over[:5]:
            x = int(keys[i])
            bad.append(f"{ph.kind} phase step {x // pr.n_links}: link {x % pr.n_links} carries "
                       f"{load[i]:.4g} B/s, bandwidth {pr.link_bw[x % pr.n_links]:.4g} B/s")
    return bad
