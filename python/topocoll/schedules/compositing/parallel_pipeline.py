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

import numpy as np

from ..ir import LEFT, RIGHT, Schedule, ScheduleBuilder
from ..registry import algorithm
from .common import PIXEL_BYTES, SHIFT_PAPER, _block_bytes, _check_common, _frame, _positions, _rows


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
    _, bb = _block_bytes(count, p, itemsize)
    result = _positions(order)

    def build():
        b = ScheduleBuilder(p)
        for t in range(1, p):
            rnd = t - 1
            for j in range(t):                      # forward: position j → j + 1, block p − t + j
                blk = (p - t + j,)
                b.send(int(order[j]), int(order[j + 1]), blk, round=rnd)
                b.recv(int(order[j + 1]), int(order[j]), blk, buf="forward", round=rnd)
                b.reduce(int(order[j + 1]), blk, dst="data", src="forward", side=LEFT, round=rnd)
            for j in range(p - t, p):               # backward: position j → j − 1, block t + j − p
                blk = (t + j - p,)
                b.send(int(order[j]), int(order[j - 1]), blk, round=rnd)
                b.recv(int(order[j - 1]), int(order[j]), blk, buf="backward", round=rnd)
                b.reduce(int(order[j - 1]), blk, dst="data", src="backward", side=RIGHT, round=rnd)
        return b

    def rounds():
        for t in range(1, p):
            fwd = np.arange(t, dtype=np.int64)
            bwd = np.arange(p - t, p, dtype=np.int64)
            src = np.concatenate((order[fwd], order[bwd]))
            dst = np.concatenate((order[fwd + 1], order[bwd - 1]))
            nbytes = np.concatenate((bb[p - t + fwd], bb[t + bwd - p]))
            dep = np.concatenate((np.where(fwd == 0, -1, t - 2), np.where(bwd == p - 1, -1, t - 2)))
            yield _rows(t - 1, src, dst, nbytes, dep, nbytes)

    return _frame("parallel_pipeline", p, count, itemsize, order, gather_root, {}, build, rounds, result,
                  max(p - 1, 0))
