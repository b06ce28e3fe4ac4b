"""2-3 swap compositing: binary swap with a 3-2 elimination step, for any ``p``.

References
----------
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import RankBuilder, Schedule
from ..registry import algorithm
from .common import PIXEL_BYTES, RADIX_K_PAPER, _check_common, _frame, _group_ops, _positions


# ---- 2-3 swap: binary swap with a 3-2 elimination step -----------------------------------------

@dataclass(frozen=True)
class _SwapPlan:
    """Layout of :func:`two_three_swap` (all arrays vectorised over groups or
    survivors; positions are depth positions)."""

    q: int                 # binary-swap rounds over the 2^q survivors
    sizes: np.ndarray      # (2^(q-1),) group sizes, 2..4
    starts: np.ndarray     # first depth position of each group
    survivor: np.ndarray   # (2^q,) depth position of survivor u = 2·group + member
    slot: np.ndarray       # (2^q,) final slot of survivor u: bit-reversed u
    slot_start: np.ndarray  # (2^q + 1,) first block of each slot (slots weigh 1 or 2 blocks)
    dependent: np.ndarray  # depth positions of eliminated ranks
    carrier: np.ndarray    # survivor u that hands each of them its block
    final: np.ndarray      # (p,) block each depth position ends with

    @property
    def first_steps(self) -> int:
        return int(self.sizes.max()) - 1


def _bit_reverse(x: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(x)
    for j in range(bits):
        out |= ((x >> j) & 1) << (bits - 1 - j)
    return out


def _swap_plan(p: int) -> _SwapPlan:
    q = p.bit_length() - 1
    survivors, r = 1 << q, p - (1 << q)
    groups = survivors // 2
    j = np.arange(groups, dtype=np.int64)
    sizes = 2 + ((j + 1) * r) // groups - (j * r) // groups
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    u = np.arange(survivors, dtype=np.int64)
    survivor = starts[u >> 1] + (u & 1)
    # the third member is handed its block by member 0 or 1 of its group, alternately over the
    # groups of three (balancing the two halves); the fourth member by member 1
    threes = np.cumsum(sizes == 3) - 1
    carrier3 = 2 * j + np.where(sizes == 3, threes % 2, 0)
    dep3 = sizes >= 3
    dependent = np.concatenate((starts[dep3] + 2, starts[sizes == 4] + 3))
    carrier = np.concatenate((carrier3[dep3], 2 * j[sizes == 4] + 1))
    weight = 1 + np.bincount(carrier, minlength=survivors)
    slot = _bit_reverse(u, q)
    slot_weight = np.empty(survivors, dtype=np.int64)
    slot_weight[slot] = weight
    slot_start = np.concatenate(([0], np.cumsum(slot_weight))).astype(np.int64)
    final = np.empty(p, dtype=np.int64)
    final[survivor] = slot_start[slot]
    final[dependent] = slot_start[slot[carrier]] + 1
    return _SwapPlan(q, sizes, starts, survivor, slot, slot_start, dependent, carrier, final)


@algorithm(collective="reduce_scatter", name="two_three_swap",
           params={"depth_order": None, "gather_root": None}, needs="associative",
           rounds="log2 P (2^k) or ⌊log2 P⌋ + 2 or + 3",
           paper="binary swap with the 3-2 elimination of Rabenseifner & Träff 2004, for Yu et al. "
                 f"2008's 2-3 swap, as in {RADIX_K_PAPER} §2.2")
def two_three_swap(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                   itemsize: int = PIXEL_BYTES) -> Schedule:
    """Binary swap for any ``p``, with a 3-2 elimination step.

    Not Yu et al.'s 2-3 swap: neither paper here specifies it well enough to
    implement faithfully (the radix-k paper §2.2 and the shift-based paper
    §2.2.2 give only its cost), so, as issue 3 allows, this is binary swap
    with the 3-2 elimination step of Rabenseifner & Träff for non-powers of
    two; for ``p = 2^q`` it is exactly :func:`binary_swap`.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Every rank ends with one block.

    Notes
    -----
    With ``2^q ≤ p < 2^(q+1)`` and ``r = p − 2^q``, the ranks (in depth order)
    form ``2^(q−1)`` consecutive groups of 2, 3 or 4, the ``r`` extra ranks
    spread evenly. Round 0 is the first binary-swap round inside each group:
    members 0 and 1 composite the front and back halves of the image from
    every member (a group of three is the 3-2 elimination step: three ranks
    become two, each holding half of their composite; a group of four occurs
    only when ``r > 2^(q−2)``), as direct send in shift order with the
    out-of-order rule. Then ``q − 1`` binary-swap rounds over the ``2^q``
    survivors; their final slots weigh 2 blocks when they carry an
    eliminated rank, which receives its block from that survivor in one last
    round (as the eliminated processes of Rabenseifner & Träff receive their
    result at the end).

    Cost for ``p ≠ 2^q`` (IR rounds = message steps): latency
    α(q + g_max − 1) with ``g_max`` the largest group: 3 when
    ``p ≤ 1.5·2^q``, else 4. Bandwidth (measured by
    :func:`topocoll.schedules.report`, p < 300): 1.5βn to 1.8βn with groups
    of three (a survivor receives two halves in round 0, then n/4 + n/8 + …,
    and slots of 2 blocks make the halves uneven for small p), 2.0βn to 2.2βn
    with groups of four; γ (round-synchronous, the step that joins a
    buffered half composites two halves) 1.6γn to 2.2γn with groups of
    three, 3.0γn to 3.2γn with groups of four. Table 1 lists Yu et al.'s bound
    4α·log2 p + 1.3βn(p − 1)/p instead; :func:`radix_k` with ascending prime
    factors (§4.4) stays at βn(p − 1)/p for any p.

    References
    ----------
    .. [1] R. Rabenseifner and J. L. Träff, "More efficient reduction
       algorithms for non-power-of-two number of processors in
       message-passing parallel systems", EuroPVM/MPI 2004.
    .. [2] H. Yu, C. Wang and K.-L. Ma, "Massively parallel volume rendering
       using 2-3 swap image compositing", SC 2008.
    .. [3] Peterka et al. 2009, §2.2 — ``../shared/seeds/radix-k-compositing.txt``.

    Examples
    --------
    Three ranks: one group of three; rank 0 composites the front two
    blocks and hands block 1 to rank 2, rank 1 the last block.

    >>> from topocoll.verify import verify
    >>> s = two_three_swap(3, count=3)
    >>> verify(s), [s.result_blocks(r)[0] for r in range(3)]
    ('noncommutative', [0, 2, 1])
    """
    p, count, itemsize, order, gather_root = _check_common("two_three_swap", p, count, itemsize,
                                                           depth_order, gather_root)
    result = np.empty(p, dtype=np.int64)
    if p == 1:
        result[:] = 0
        return _frame("two_three_swap", p, count, itemsize, order, gather_root, {},
                      lambda rank, b: None, result, 0)
    plan = _swap_plan(p)
    q, survivors = plan.q, 1 << plan.q
    first = plan.first_steps
    result[order] = plan.final
    half0 = int(plan.slot_start[survivors // 2])
    halves = (range(0, half0), range(half0, p))
    last_round = first + q - 1 if plan.dependent.size else first + q - 2
    ranks, position = order.tolist(), _positions(order).tolist()
    sizes, starts, survivor = plan.sizes.tolist(), plan.starts.tolist(), plan.survivor.tolist()
    slot_start, final = plan.slot_start.tolist(), plan.final.tolist()
    group_of = np.repeat(np.arange(plan.sizes.size), plan.sizes).tolist()    # depth position -> group
    carried = dict(zip(plan.carrier.tolist(), plan.dependent.tolist()))     # survivor -> its dependent
    carrier = dict(zip(plan.dependent.tolist(), plan.carrier.tolist()))     # dependent -> its survivor

    def rank_ops(rank: int, b: RankBuilder) -> None:
        x = position[rank]
        g = group_of[x]
        c, start = x - starts[g], starts[g]
        # round 0: members 0 and 1 composite the two halves from every member of the group
        _group_ops(b, c, ranks=[ranks[start + m] for m in range(sizes[g])], pieces=halves, step0=0)
        if c >= 2:                      # eliminated: receives its block from its carrier at the end
            blk = range(final[x], final[x] + 1)
            b.recv(ranks[survivor[carrier[x]]], blk, round=first + q - 1)
            return
        # then binary swap over the survivors: u and u xor 2^j swap halves of their slots
        u = 2 * g + c
        lo = (u & 1) * (survivors // 2)
        for j in range(1, q):
            h, bit = survivors >> (j + 1), (u >> j) & 1
            front = u & ~(1 << j)
            a, m, z = slot_start[lo], slot_start[lo + h], slot_start[lo + 2 * h]
            _group_ops(b, bit, ranks=(ranks[survivor[front]], ranks[survivor[front | (1 << j)]]),
                       pieces=(range(a, m), range(m, z)), step0=first + j - 1)
            lo += bit * h
        if u in carried:
            dep = carried[u]
            b.send(ranks[dep], range(final[dep], final[dep] + 1), round=first + q - 1)

    return _frame("two_three_swap", p, count, itemsize, order, gather_root, {}, rank_ops, result,
                  last_round + 1)
