"""What every generator reports, computed from its round summary alone.

The round summary (:meth:`~topocoll.schedules.ir.Schedule.rounds`, one
:class:`~topocoll.schedules.ops.RoundArrays` per round: messages and
reductions) is derived from the op program and streamed round by round.

Rounds, messages and bytes per rank, the split-phase property (every rank
sends and receives in every round, End et al. 2016 §I) and the α-β-γ cost of
Chan et al. ("Collective communication: theory, practice, and experience",
CCPE 2007), the model all five papers use: a round costs
``max_msgs·α + max_bytes·β + max_reduced·γ`` with each maximum taken over
ranks (a rank's bytes are the larger of what it sends and receives: links
are full duplex), and a schedule costs the sum of its rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import Schedule


@dataclass(frozen=True)
class CostTerms:
    """Coefficients of α (latencies), β (bytes) and γ (bytes reduced)."""

    alpha: float
    beta: float
    gamma: float

    def time(self, alpha: float, beta: float, gamma: float = 0.0) -> float:
        """Seconds for latency ``alpha`` (s), inverse bandwidth ``beta``
        (s/B) and reduction cost ``gamma`` (s/B)."""
        return self.alpha * alpha + self.beta * beta + self.gamma * gamma

    def __str__(self) -> str:
        return f"{self.alpha:g}·α + {self.beta:g}·β + {self.gamma:g}·γ"


@dataclass(frozen=True)
class ScheduleReport:
    rounds: int
    messages: int
    bytes_total: int
    max_messages_per_rank: int
    max_bytes_per_rank: int
    all_ranks_active_every_round: bool
    cost: CostTerms

    def as_dict(self) -> dict:
        return {
            "rounds": self.rounds, "messages": self.messages, "bytes_total": self.bytes_total,
            "max_messages_per_rank": self.max_messages_per_rank,
            "max_bytes_per_rank": self.max_bytes_per_rank,
            "all_ranks_active_every_round": self.all_ranks_active_every_round,
            "cost": str(self.cost),
        }


def report(schedule: Schedule) -> ScheduleReport:
    """Measure ``schedule`` from its round summaries, streaming round by round."""
    p = schedule.p
    msgs_per_rank = np.zeros(p, dtype=np.int64)
    bytes_per_rank = np.zeros(p, dtype=np.int64)
    rounds = messages = total = 0
    all_active = True
    a = b = g = 0.0
    for rnd in schedule.rounds():
        g += float(rnd.reduced_per_rank(p).max()) if len(rnd.reduce_rank) else 0.0
        if len(rnd) == 0:   # a round of local work only: no latency, no bytes
            continue
        rounds += 1
        messages += len(rnd)
        total += int(rnd.nbytes.sum())
        sent_msgs = np.bincount(rnd.src, minlength=p)
        sent = np.bincount(rnd.src, weights=rnd.nbytes, minlength=p)
        recv = np.bincount(rnd.dst, weights=rnd.nbytes, minlength=p)
        msgs_per_rank += sent_msgs
        bytes_per_rank += sent.astype(np.int64)
        if all_active:
            recv_msgs = np.bincount(rnd.dst, minlength=p)
            all_active = bool((sent_msgs > 0).all() and (recv_msgs > 0).all())
        a += float(sent_msgs.max())
        b += float(np.maximum(sent, recv).max())
    if rounds == 0:
        all_active = True
    return ScheduleReport(
        rounds=rounds, messages=messages, bytes_total=total,
        max_messages_per_rank=int(msgs_per_rank.max()) if p else 0,
        max_bytes_per_rank=int(bytes_per_rank.max()) if p else 0,
        all_ranks_active_every_round=all_active, cost=CostTerms(a, b, g),
    )

