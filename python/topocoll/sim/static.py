"""Round-synchronous static contention: a schedule's round summary on a network.

Every round's messages are routed with the network's static routing (after
mapping ranks to endpoints by a node order). Flows that share a link share
its bandwidth, so a round lasts as long as its most loaded link needs to
carry its bytes, plus the software overhead of the busiest rank and the
longest path's wire latency:

    T_round = α·max_msgs + max_path_latency + max_link(bytes_link / bw_link) + γ·max_reduced

This is the contention-factor view of Kumar & Heidelberger (all-to-all on
BG/L, §3, eq. 3: the busiest link bounds the time) and of Cavin & Demengeon's
fat-tree analysis (§2.2, §5: static routing plus node order decide whether a
shift permutation is contention free), applied round by round. The rounds
are :meth:`~topocoll.schedules.ir.Schedule.rounds`: each round's messages
and reductions (:class:`~topocoll.schedules.ops.RoundArrays`), summarised
from the op program and streamed. It ignores overlap between rounds, the
program's exact dependencies and per-packet effects; it ranks algorithms and
node orders and names the hot links in one pass over the rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..schedules.ir import Schedule
from ..topology import route


@dataclass(frozen=True)
class RoundCost:
    round: int
    time: float            # s
    max_link_bytes: float  # bytes on the busiest link
    hot_link: int          # its id, -1 if the round used no link
    congestion: float      # busiest link's bytes / largest single message (1 = no sharing)


@dataclass(frozen=True)
class StaticEstimate:
    time: float                   # s, sum of the rounds
    rounds: list[RoundCost]
    link_bytes: np.ndarray        # bytes per directed link over the whole schedule
    hot_links: list[tuple[int, float]]   # (link id, bytes) of the busiest links overall

    @property
    def max_congestion(self) -> float:
        return max((r.congestion for r in self.rounds), default=0.0)


def static_contention(schedule: Schedule, router, order=None, *, alpha: float = 1e-6,
                      gamma: float = 0.0, top: int = 5) -> StaticEstimate:
    """Estimate ``schedule`` on ``router``'s network under static routing.

    Parameters
    ----------
    schedule : Schedule
    router : topocoll.topology.Router
        Topology plus routing engine (``make_router``).
    order : array_like of int, optional
        ``order[rank]`` = endpoint of the rank (``node_order``); identity if
        omitted.
    alpha : float
        Software overhead per message sent, s.
    gamma : float
        Reduction time per byte, s/B.
    top : int
        How many hot links to report.

    Raises
    ------
    SpecError
        More ranks than endpoints, or an order of the wrong length.
    """
    topo = router.topology
    p = schedule.p
    if order is None:
        if p > topo.n_endpoints:
            raise SpecError(f"static_contention: p={p} ranks, but {topo.spec} has only "
                            f"{topo.n_endpoints} endpoints")
        order = np.arange(p, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    if order.shape != (p,):
        raise SpecError(f"static_contention: order has {order.shape[0]} entries, expected p={p}")
    bandwidth = np.asarray(topo.bandwidth, dtype=np.float64)
    latency = np.asarray(topo.latency, dtype=np.float64)
    link_bytes = np.zeros(topo.n_links, dtype=np.float64)
    rounds, total = [], 0.0
    for rnd in schedule.rounds():
        reduced = float(rnd.reduced_per_rank(p).max()) if len(rnd.reduce_rank) else 0.0
        if len(rnd) == 0:   # local work only (as in metrics.report): its reductions still cost γ
            total += gamma * reduced
            continue
        src, dst = order[rnd.src], order[rnd.dst]
        remote = src != dst
        nbytes = rnd.nbytes.astype(np.float64)
        msgs = np.bincount(rnd.src, minlength=p).max()
        wire = link_time = 0.0
        busiest, hot, congestion = 0.0, -1, 1.0
        if remote.any():
            indptr, links, weights = route(router, src[remote], dst[remote], weights=True)
            lengths = np.diff(indptr)
            per_link = np.repeat(nbytes[remote], lengths) * weights
            loads = np.bincount(links, weights=per_link, minlength=topo.n_links)
            link_bytes += loads
            times = loads / bandwidth
            hot = int(np.argmax(times))
            link_time, busiest = float(times[hot]), float(loads[hot])
            path_latency = np.add.reduceat(latency[links] * weights, indptr[:-1]) if len(links) else [0.0]
            wire = float(np.max(path_latency))
            biggest = float(nbytes[remote].max())
            congestion = busiest / biggest if biggest > 0 else 1.0
        t = alpha * msgs + wire + link_time + gamma * reduced
        total += t
        rounds.append(RoundCost(rnd.round, t, busiest, hot, congestion))
    order_links = np.argsort(link_bytes)[::-1][:top]
    hot_links = [(int(l), float(link_bytes[l])) for l in order_links if link_bytes[l] > 0]
    return StaticEstimate(total, rounds, link_bytes, hot_links)
