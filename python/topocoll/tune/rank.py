"""Rank the algorithms of a collective by a model's estimate.

For every algorithm registered for the collective (with the parameters the
registry declares for comparisons, :attr:`AlgorithmInfo.compare
<topocoll.schedules.registry.AlgorithmInfo.compare>`) that exists at ``p``,
whose schedule is correct for the operator and has at most
:data:`~topocoll.schedules.registry.MAX_MODEL_MESSAGES` messages, build the
schedule for each message size (MPI's convention, :mod:`topocoll.schedules.sizes`) and ask the
model for its time. The α-β-γ model is Chan et al. (CCPE 2007), the one all
five papers rank algorithms by; the static contention model adds the
network's routing and node order (Cavin & Demengeon 2012 §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..errors import SpecError, TopocollError
from ..schedules.metrics import ScheduleReport, report
from ..schedules.registry import MAX_MODEL_MESSAGES, catalogue, check_collective, check_procs, operator_allows
from ..schedules.sizes import CONVENTION, from_bytes
from ..sim.model import AlphaBetaGamma, Estimate, Model, Platform
from ..verify import OPERATORS

#: collectives whose result depends on the reduction operator
REDUCTIONS = ("allreduce", "reduce", "reduce_scatter")

__all__ = ["REDUCTIONS", "Ranked", "rank"]


@dataclass(frozen=True)
class Ranked:
    """One algorithm's place for one message size.

    Attributes
    ----------
    size : int
        Message size in bytes (MPI's convention for the collective).
    position : int
        1 for the fastest at this size.
    algorithm : str
    params : dict
        The schedule's parameters, resolved (``n="auto"`` → the ``n`` chosen).
    report : ScheduleReport
        Rounds, messages and bytes per rank, α-β-γ terms.
    estimate : Estimate
        The model's prediction.
    """

    size: int
    position: int
    algorithm: str
    params: dict
    report: ScheduleReport
    estimate: Estimate

    @property
    def time(self) -> float:
        return self.estimate.time


def _operator(collective: str, op: str) -> tuple[bool, bool]:
    try:
        properties = OPERATORS[op]
    except (KeyError, TypeError):
        raise SpecError(f"rank: op={op!r}, expected one of {', '.join(OPERATORS)}") from None
    return properties if collective in REDUCTIONS else (True, True)   # data movement: any algorithm


def rank(collective: str, p: int, sizes: Iterable[int], *, model: Model | None = None,
         platform: Platform | None = None, op: str = "sum", itemsize: int = 1) -> list[Ranked]:
    """Every algorithm of ``collective`` on ``p`` ranks, fastest first, per size.

    Parameters
    ----------
    collective : str
        ``allreduce``, ``alltoall``, ...
    p : int
        Number of ranks, ``1 .. MAX_P``.
    sizes : iterable of int
        Message sizes in bytes, MPI's convention (per destination for
        alltoall, per rank for allgather, the whole vector otherwise); one
        table for barrier whatever the sizes.
    model : Model, optional
        Default :class:`~topocoll.sim.AlphaBetaGamma`.
    platform : Platform, optional
        Default :class:`~topocoll.sim.Platform` (α = 1 µs, 2 GB/s links,
        4 GB/s reduction).
    op : str
        Reduction operator the algorithms must be correct for (``sum``,
        ``max``, ``noncommutative``, ...; see :data:`topocoll.verify.OPERATORS`);
        ignored for collectives that only move data.
    itemsize : int
        Bytes per element (blocks split on element boundaries).

    Returns
    -------
    list of Ranked
        Sizes in the order given, fastest first within a size.

    Raises
    ------
    SpecError
        Unknown collective or operator, ``p`` or a size out of range, or no
        algorithm at all for ``p`` (the message says why each was left out).

    Examples
    --------
    >>> rows = rank("allreduce", 8, [8, 4 << 20])
    >>> [(r.size, r.algorithm, f"{r.time * 1e6:.2f} µs") for r in rows if r.position == 1]
    [(8, 'butterfly_virtual', '3.02 µs'), (4194304, 'rabenseifner', '4593.52 µs')]
    """
    check_collective(collective)
    p = check_procs(f"rank {collective}", p)
    commutative, idempotent = _operator(collective, op)
    model = AlphaBetaGamma() if model is None else model
    platform = Platform() if platform is None else platform
    sizes = [0] if CONVENTION[collective] == "none" else list(sizes)
    if not sizes:
        raise SpecError("rank: no message sizes, expected at least one")
    args = {size: from_bytes(collective, p, size, itemsize=itemsize) for size in sizes}

    entries, left_out = [], []
    for info in catalogue().values():
        if info.collective != collective:
            continue
        if not info.supports(p, info.compare):
            left_out.append(f"{info.name} (not for P={p}: {info.p_rule_text})")
            continue
        try:
            info.check_size(p, info.compare, limit=MAX_MODEL_MESSAGES, purpose="a model")
        except SpecError as exc:
            left_out.append(f"{info.name} ({exc})")
            continue
        entries.append(info)

    rows: list[Ranked] = []
    for size in sizes:
        found = []
        for info in entries:
            try:
                sched = info.generate(p, **info.compare, **args[size])
            except TopocollError as exc:
                left_out.append(f"{info.name} ({exc})")
                continue
            if not operator_allows(sched.needs, commutative=commutative, idempotent=idempotent):
                left_out.append(f"{info.name} (not correct for op={op} at P={p})")
                continue
            est = model.estimate(sched, platform)
            rep = est.detail if isinstance(est.detail, ScheduleReport) else report(sched)
            found.append((est.time, info.name, sched.params, rep, est))
        if not found:
            why = "; ".join(dict.fromkeys(left_out)) or "none registered"
            raise SpecError(f"rank: no {collective} algorithm runs on P={p} with {size} B messages: {why}")
        found.sort(key=lambda row: (row[0], row[1]))
        rows.extend(Ranked(size, i, name, params, rep, est)
                    for i, (_, name, params, rep, est) in enumerate(found, 1))
    return rows
