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
from ..ir import Schedule, ScheduleBuilder
from ..registry import algorithm
from .common import PIXEL_BYTES, RADIX_K_PAPER, _block_bytes, _check_common, _frame, _group_ops, _rows


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
    _, bb = _block_bytes(count, p, itemsize)
    prefix = np.concatenate(([0], np.cumsum(bb)))
    v = np.arange(p, dtype=np.int64)
    final = np.zeros(p, dtype=np.int64)
    for j in range(q):
        final |= ((v >> j) & 1) << (q - 1 - j)
    result = np.empty(p, dtype=np.int64)
    result[order] = final

    def build():
        b = ScheduleBuilder(p)
        lo = [0] * p
        for j in range(q):
            half = p >> (j + 1)
            for front in range(p):
                if (front >> j) & 1:
                    continue
                back = front | (1 << j)
                start = lo[front]
                _group_ops(b, ranks=[int(order[front]), int(order[back])], step0=j,
                           pieces={0: tuple(range(start, start + half)),
                                   1: tuple(range(start + half, start + 2 * half))})
            lo = [lo[x] + ((x >> j) & 1) * half for x in range(p)]
        return b

    def rounds():
        lo = np.zeros(p, dtype=np.int64)
        for j in range(q):
            half = p >> (j + 1)
            bit = (v >> j) & 1
            start = lo + (1 - bit) * half           # the half the partner keeps
            nbytes = prefix[start + half] - prefix[start]
            yield _rows(j, order[v], order[v ^ (1 << j)], nbytes, j - 1, nbytes)
            lo = lo + bit * half

    return _frame("binary_swap", p, count, itemsize, order, gather_root, {}, build, rounds, result, q)
