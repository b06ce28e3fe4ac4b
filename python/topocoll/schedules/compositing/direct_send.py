"""Direct-send compositing: every rank sends each piece straight to the rank that composites it.

Radix-k with a single round ``k = [p]`` (radix-k §2), posted in the shift
order and composited out of order (§3.1).

References
----------
T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A configurable
algorithm for parallel image-compositing applications", SC 2009
(``../shared/seeds/radix-k-compositing.txt``).
"""

from __future__ import annotations

from ..ir import Schedule
from ..registry import algorithm
from .common import PIXEL_BYTES, SHIFT_PAPER, _check_common, _shift_pattern


@algorithm(collective="reduce_scatter", name="direct_send", params={"depth_order": None, "gather_root": None},
           needs="associative", rounds="P−1 steps, all posted at once",
           paper=f"Neumann 1994, as in {SHIFT_PAPER} §2.2.1")
def direct_send(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Direct send: every rank composites ``1/p`` of the image from all others.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order : sequence of int, optional
        Ranks front to back (default rank order, rank 0 in front).
    gather_root : int, optional
        Gather the whole picture on this rank at the end (an ordered
        ``reduce`` instead of a ``reduce_scatter``).
    count : int, optional
        Pixels in the image (default 2^20); need not divide by ``p``.
    itemsize : int
        Bytes per pixel (16: RGBA float32).

    Returns
    -------
    Schedule
        Rank ``i`` ends with block ``i`` ("each node P_i is responsible of
        compositing the (n/p) pixels ranging from i(n/p) to (i + 1)(n/p) − 1").

    Notes
    -----
    Cavin & Demengeon 2012, §2.2.1 and Table 1: one stage of ``p − 1``
    messages of ``n/p`` pixels per rank, α(p − 1) + βn(p − 1)/p; blending
    overlaps communication. The messages are posted at once (no message
    depends on a received one), listed as ``p − 1`` IR rounds in shift order
    (rank ``i`` to ``i + s`` at step ``s``) so that no rank is everybody's
    first target; arrivals are composited by the out-of-order rule. Identical
    to :func:`radix_k` with ``k = [p]`` (radix-k §3.2).

    References
    ----------
    .. [1] U. Neumann, "Communication costs for parallel volume-rendering
       algorithms", IEEE CG&A 1994.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §2.2.1, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = direct_send(5, count=5)
    >>> verify(s), report(s).cost.alpha, s.result_blocks(3)
    ('noncommutative', 4.0, (3,))
    """
    p, count, itemsize, order, gather_root = _check_common("direct_send", p, count, itemsize,
                                                           depth_order, gather_root)
    return _shift_pattern("direct_send", p, count, itemsize, order, gather_root, lockstep=False)
