"""Parallel-pipeline compositing: every piece travels the ring of ranks, ``p − 1`` steps.

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

from ..ir import LEFT, RIGHT, RankBuilder, Schedule
from ..registry import algorithm
from .common import PIXEL_BYTES, SHIFT_PAPER, _check_common, _frame, _positions


# ---- parallel pipeline -------------------------------------------------------------------------

@algorithm(collective="reduce_scatter", name="parallel_pipeline",
           params={"depth_order": None, "gather_root": None}, needs="associative", rounds="P−1 stages",
           paper=f"Lee et al. 1996, as in {SHIFT_PAPER} §2.2.4")
def parallel_pipeline(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                      itemsize: int = PIXEL_BYTES) -> Schedule:
    """Parallel pipeline on a ring in depth order, ``p − 1`` stages.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        The rank at depth position ``v`` ends with block ``v``.

    Notes
    -----
    Lee et al.'s pipeline (shift-based paper §2.2.4): "At each round, each
    processing node composes the (n/p) pixels it has received from its
    'previous' neighbor in the ring and sends these composed pixels to its
    'next' neighbor." For over this one-way ring is wrong: the partial result
    of block ``b`` collects positions ``b + 1, …, p − 1`` and then meets
    position 0, which is not adjacent in depth — no one-way ring can end each
    block at its owner without compositing non-adjacent pieces (only the
    blocks owned by the two ends can). So the ring, laid out in depth order,
    runs two pipelines that meet at each block's owner: block ``b`` travels
    front-to-back from position 0 to ``b`` (each hop composites the next rank
    under it) and back-to-front from ``p − 1`` to ``b``; position ``j`` sends
    block ``b > j`` forward at stage ``p − b + j`` and block ``b < j``
    backward at stage ``b + p − j``. Every rank sends ``p − 1`` messages of
    ``n/p`` pixels in ``p − 1`` stages, all blocks complete at stage
    ``p − 1``: Table 1's α(p − 1) + βn(p − 1)/p on bidirectional ring links
    (in stages past ``p/2`` a rank sends to both neighbours at once, so the
    single-port α-β-γ model of :func:`topocoll.schedules.report` charges up
    to two messages there). No overlap: each hop sends what it just
    composited.

    References
    ----------
    .. [1] T.-Y. Lee, C. S. Raghavendra and J. B. Nicholas, "Image
       composition schemes for sort-last polygon rendering on 2D mesh
       multicomputers", IEEE TVCG 1996.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §2.2.4, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = parallel_pipeline(6, count=6)
    >>> verify(s), report(s).rounds, report(s).max_messages_per_rank
    ('noncommutative', 5, 5)
    """
    p, count, itemsize, order, gather_root = _check_common("parallel_pipeline", p, count, itemsize,
                                                           depth_order, gather_root)
    result = _positions(order)
    ranks, position = order.tolist(), result.tolist()

    def rank_ops(rank: int, b: RankBuilder) -> None:
        # stage t (IR round t − 1): positions j < t send block p − t + j forward to j + 1,
        # positions j ≥ p − t send block t + j − p backward to j − 1; each receiver composites it
        x = position[rank]
        for t in range(1, p):
            rnd = t - 1
            if 1 <= x <= t:                         # forward, from x − 1: block p − t + x − 1
                blk = range(p - t + x - 1, p - t + x)
                b.recv(ranks[x - 1], blk, buf="forward", round=rnd)
                b.reduce(blk, dst="data", src="forward", side=LEFT, round=rnd)
            if x < t:                               # forward, to x + 1: block p − t + x
                b.send(ranks[x + 1], range(p - t + x, p - t + x + 1), round=rnd)
            if x >= p - t:                          # backward, to x − 1: block t + x − p
                b.send(ranks[x - 1], range(t + x - p, t + x - p + 1), round=rnd)
            if p - t - 1 <= x <= p - 2:             # backward, from x + 1: block t + x + 1 − p
                blk = range(t + x + 1 - p, t + x + 2 - p)
                b.recv(ranks[x + 1], blk, buf="backward", round=rnd)
                b.reduce(blk, dst="data", src="backward", side=RIGHT, round=rnd)

    return _frame("parallel_pipeline", p, count, itemsize, order, gather_root, {}, rank_ops, result,
                  max(p - 1, 0))
