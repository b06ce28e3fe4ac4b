"""Binary-swap compositing: ``log2 p`` rounds of pairwise half-image exchanges.

Radix-k with ``k = [2, …, 2]`` (radix-k §2); ``p`` a power of two.

References
----------
T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A configurable
algorithm for parallel image-compositing applications", SC 2009
(``../shared/seeds/radix-k-compositing.txt``).
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecError
from ..ir import RankBuilder, Schedule
from ..registry import algorithm
from .common import PIXEL_BYTES, RADIX_K_PAPER, _check_common, _frame, _group_ops, _positions


# ---- binary swap -----------------------------------------------------------------------------

def _check_power_of_two(where: str, p: int) -> int:
    if p & (p - 1):
        raise SpecError(f"{where}: p={p}, expected a power of two (two_three_swap and radix_k "
                        "take any p)")
    return p.bit_length() - 1


@algorithm(collective="reduce_scatter", name="binary_swap", params={"depth_order": None, "gather_root": None},
           needs="associative", rounds="log2 P", paper=f"Ma et al. 1994, as in {RADIX_K_PAPER} §2.2",
           supports="power_of_two")
def binary_swap(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Binary swap: distance doubling and vector halving, power-of-two ``p``.

    Parameters
    ----------
    p : int
        Number of ranks, a power of two.
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        The rank at depth position ``v`` ends with block ``bitreverse(v)``.

    Notes
    -----
    Round ``j`` pairs depth positions ``v`` and ``v xor 2^j``; the front one
    keeps the first half of the current piece and sends the second, the back
    one the reverse; each composites the arriving half over (or under) its
    own. ``log2 p`` rounds, one message each way per round: α log2 p +
    βn(p − 1)/p (Σ n/2^i, radix-k paper §2.2; Table 1), no overlap (each
    round's send needs the previous round's composite). Written
    independently of :func:`radix_k`, which equals it for ``k = [2, …, 2]``
    (tested).

    References
    ----------
    .. [1] K.-L. Ma, J. S. Painter, C. D. Hansen and M. F. Krogh, "Parallel
       volume rendering using binary-swap compositing", IEEE CG&A 1994.
    .. [2] Peterka et al. 2009, §2.2 — ``../shared/seeds/radix-k-compositing.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> s = binary_swap(8, count=8)
    >>> verify(s), [s.result_blocks(r)[0] for r in range(8)]
    ('noncommutative', [0, 4, 2, 6, 1, 5, 3, 7])
    """
    p, count, itemsize, order, gather_root = _check_common("binary_swap", p, count, itemsize,
                                                           depth_order, gather_root)
    q = _check_power_of_two("binary_swap", p)
    v = np.arange(p, dtype=np.int64)
    final = np.zeros(p, dtype=np.int64)
    for j in range(q):
        final |= ((v >> j) & 1) << (q - 1 - j)
    result = np.empty(p, dtype=np.int64)
    result[order] = final
    ranks, position = order.tolist(), _positions(order).tolist()

    def rank_ops(rank: int, b: RankBuilder) -> None:
        # round j: positions v and v xor 2^j swap halves of their common piece [lo, lo + 2·half)
        v, lo = position[rank], 0
        for j in range(q):
            half, bit = p >> (j + 1), (v >> j) & 1
            front = v & ~(1 << j)
            _group_ops(b, bit, ranks=(ranks[front], ranks[front | (1 << j)]), step0=j,
                       pieces=(range(lo, lo + half), range(lo + half, lo + 2 * half)))
            lo += bit * half

    return _frame("binary_swap", p, count, itemsize, order, gather_root, {}, rank_ops, result, q)
