"""A plan as an ordinary topocoll schedule (one op table, :class:`~topocoll.schedules.arraypattern.TablePattern`).

A planned transfer ``s → d`` of chunks ``B`` starting in step ``t`` of a
phase is, in round ``offset + t`` (tag = round):

=========  ==================================================================
phase      operations
=========  ==================================================================
gather     ``s``: send ``data[B]``; ``d``: receive into ``data[B]``
reduce     ``s``: send ``data[B]`` (its partial sum); ``d``: receive into a
           scratch buffer ``tmp``/``tmp1``/… (one per transfer ``d`` takes in
           the same step) and reduce it into ``data[B]``
direct     ``s``: send ``send[d]`` (the input, copied first, as MPI's sendbuf);
           ``d``: receive into ``data[s]``
=========  ==================================================================

Each rank posts, per round, its receives, then its reductions, then its sends.
Dependencies come from data flow (a chunk is forwarded once received, a
partial sum sent once every partial it adds has been reduced) plus control
chains per port (``TableBuilder``'s ``chain``): the sends leaving a rank by
one link (the first link of their routes) run in the planned order, each
after the one before it, and so do the receives arriving by one link (the
last link; under rendezvous a transfer starts once both sides are posted).
Without them every send whose data is there would start at once and share
the port, undoing the plan (``settings["chains"]`` of the plan chooses the
ports: ``both``, ``send``, ``recv`` or ``none``; :mod:`.search` tries them on
the best plan, since a model may favour looser order). A chain links only transfers of different steps
(two transfers one link carries in the same step, where its bandwidth allows,
are on chains of their own), so every dependency points to an earlier round
and a matched send and receive share theirs: the dependencies cannot close a
cycle.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError
from ..schedules.arraypattern import Run, TableBuilder, TablePattern
from ..schedules.ir import OperatorNeeds, Schedule, block_bounds
from .plan import Plan

__all__ = ["to_schedule", "scratch_slots"]


def _pow2(n: np.ndarray) -> np.ndarray:
    out = np.ones_like(n)
    big = n > 1
    out[big] = 1 << np.ceil(np.log2(n[big])).astype(np.int64)
    return out


def scratch_slots(dst: np.ndarray, step: np.ndarray) -> np.ndarray:
    """For reduce transfers: the position of each among those its receiver
    takes in the same step (its scratch buffer, ``tmp`` for 0, ``tmp1`` …)."""
    n = dst.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(n), step, dst))
    d, s = dst[order], step[order]
    start = np.concatenate(([True], (d[1:] != d[:-1]) | (s[1:] != s[:-1])))
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n) - first
    return slot


#: chains per port: transfers one link carries in the same step beyond this share the last chain
CHAIN_SLOTS = 64
#: which ports order their transfers (a plan's ``settings["chains"]``): both ends (default), the
#: senders' only, the receivers' only, none (every transfer starts once its data is there)
CHAINS = ("both", "send", "recv", "none")


def _chains(rank: np.ndarray, port: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Chain numbers: the port's link id, times :data:`CHAIN_SLOTS`, plus the
    transfer's position among those of the same rank, port and step."""
    slot = scratch_slots(rank * (int(port.max(initial=0)) + 2) + port + 1, step)
    return port * CHAIN_SLOTS + np.minimum(slot, CHAIN_SLOTS - 1)


def _tmp(j: int) -> str:
    return "tmp" if j == 0 else f"tmp{j}"


class _Calls:
    """A phase's transfers grouped for the table: by chunk count (rounded up to
    a power of two, runs padded with empty ones) and, for reductions, scratch slot."""

    def __init__(self, phase, chains: str):
        tr = phase.transfers
        self.phase = phase
        self.n = np.diff(tr.chunk_ptr)
        self.width = _pow2(np.maximum(self.n, 1))
        self.slot = scratch_slots(tr.dst, tr.step) if phase.kind == "reduce" else np.zeros(tr.n, dtype=np.int64)
        none = np.full(tr.n, -1, dtype=np.int64)
        self.out_chain = _chains(tr.src, phase.port, tr.step) if chains in ("both", "send") else none
        self.in_chain = (_chains(tr.dst, phase.inport, tr.step)
                         if chains in ("both", "recv") and phase.inport is not None else none)
        self.groups = sorted({(int(w), int(j)) for w, j in zip(self.width.tolist(), self.slot.tolist())}) \
            if tr.n else []

    def runs(self, rows: np.ndarray, width: int) -> list:
        tr = self.phase.transfers
        n = self.n[rows]
        u = np.arange(width)[None, :]
        present = u < n[:, None]
        at = np.minimum(tr.chunk_ptr[rows][:, None] + u, max(tr.chunks.shape[0] - 1, 0))
        lo = np.where(present, tr.chunks[at] if tr.chunks.shape[0] else 0, 0)
        return [Run(lo[:, i], present[:, i].astype(np.int64)) for i in range(width)]


def _record(plan: Plan):
    p, c = plan.p, plan.c
    chains = plan.settings.get("chains", "both")
    if chains not in CHAINS:
        raise SpecError(f"synthesized schedule: chains={chains!r}, expected one of {', '.join(CHAINS)}")
    calls = [_Calls(ph, chains) for ph in plan.phases]

    def record(b: TableBuilder) -> None:
        ranks = b.ranks
        every = ranks.shape[0] == p
        if plan.collective == "alltoall" and p > 1:
            i = ranks
            b.copy(i, [Run(0, i * c), Run((i + 1) * c, (p - 1 - i) * c)], dst="send", src="data", round=0)
        for cl in calls:
            ph, tr = cl.phase, cl.phase.transfers
            rnd = ph.offset + tr.step
            mine_s = np.ones(tr.n, dtype=bool) if every else np.isin(tr.src, ranks)
            mine_d = np.ones(tr.n, dtype=bool) if every else np.isin(tr.dst, ranks)
            if ph.kind == "direct":
                rows = np.flatnonzero(mine_d)
                b.recv(tr.dst[rows], tr.src[rows], Run(tr.dst[rows] * c, c), buf="data",
                       into=Run(tr.src[rows] * c, c), round=rnd[rows], chain=cl.in_chain[rows])
                rows = np.flatnonzero(mine_s)
                b.send(tr.src[rows], tr.dst[rows], Run(tr.dst[rows] * c, c), buf="send", round=rnd[rows],
                       chain=cl.out_chain[rows])
                continue
            for w, j in cl.groups:
                rows = np.flatnonzero(mine_d & (cl.width == w) & (cl.slot == j))
                runs = cl.runs(rows, w)
                buf = "data" if ph.kind == "gather" else _tmp(j)
                b.recv(tr.dst[rows], tr.src[rows], runs, buf=buf, round=rnd[rows], chain=cl.in_chain[rows])
            if ph.kind == "reduce":
                for w, j in cl.groups:
                    rows = np.flatnonzero(mine_d & (cl.width == w) & (cl.slot == j))
                    b.reduce(tr.dst[rows], cl.runs(rows, w), dst="data", src=_tmp(j), side="right",
                             round=rnd[rows])
            for w in sorted({w for w, _ in cl.groups}):
                rows = np.flatnonzero(mine_s & (cl.width == w))
                b.send(tr.src[rows], tr.dst[rows], cl.runs(rows, w), buf="data", round=rnd[rows],
                       chain=cl.out_chain[rows])
    return record


def nested_bounds(count: int, p: int, c: int) -> np.ndarray:
    """Block offsets of ``p`` parts (MPI-style split of ``count``: each rank's
    part of an all-gather or reduce-scatter) of ``c`` blocks each (each part
    split MPI-style again): a rank's blocks are exactly its part whatever
    ``count``; ``c = 1`` is :func:`~topocoll.schedules.ir.block_bounds`."""
    parts = block_bounds(count, p)
    if c == 1:
        return parts
    inner = [parts[r] + block_bounds(int(parts[r + 1] - parts[r]), c)[:-1] for r in range(p)]
    return np.concatenate(inner + [parts[-1:]]).astype(np.int64)


def to_schedule(plan: Plan, count: int, itemsize: int, params: dict | None = None) -> Schedule:
    """The schedule of ``plan`` on a vector of ``count`` elements of ``itemsize`` bytes,
    named ``synthesized``: ``nblocks`` blocks, each rank's part (MPI's split) in ``c``
    (:func:`nested_bounds`; a broadcast's vector in ``c``)."""
    p, c = plan.p, plan.c
    if plan.collective == "alltoall" and count % plan.nblocks:
        raise SpecError(f"alltoall/synthesized: count={count} is not a multiple of {plan.nblocks} blocks, expected "
                        "equal blocks (count is the whole per-rank vector)")
    bounds = block_bounds(count, plan.nblocks) if plan.collective == "bcast" else nested_bounds(count, p, c)
    pattern = TablePattern(p, plan.nblocks, _record(plan))
    reduces = plan.collective in ("reduce_scatter", "allreduce")
    needs = OperatorNeeds(commutative=True) if reduces and p > 1 else OperatorNeeds()
    own = (lambda r: range(r * c, (r + 1) * c))
    return Schedule(plan.collective, "synthesized", p, count, itemsize, bounds, dict(params or {}), needs, pattern,
                    root=plan.root if plan.collective == "bcast" else None,
                    result_blocks=own if plan.collective == "reduce_scatter" else None,
                    input_blocks=own if plan.collective == "allgather" else None)
