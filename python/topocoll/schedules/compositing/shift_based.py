"""Shift-based compositing: direct send in lock-step shift rounds (Cavin & Demengeon 2012).

References
----------
S. Cavin and X. Demengeon, "Shift-Based Parallel Image Compositing on
InfiniBand Fat-Trees", EGPGV 2012
(``../shared/seeds/shift-based-compositing-fat-tree.txt``).
"""

from __future__ import annotations

from ..ir import Schedule
from ..registry import algorithm
from .common import PIXEL_BYTES, SHIFT_PAPER, _check_common, _shift_pattern


@algorithm(collective="reduce_scatter", name="shift_based", params={"depth_order": None, "gather_root": None},
           needs="associative", rounds="P−1 stages", paper=f"{SHIFT_PAPER} §3.2")
def shift_based(p: int, *, depth_order=None, gather_root=None, count: int | None = None,
                itemsize: int = PIXEL_BYTES) -> Schedule:
    """Shift-based compositing: ``p − 1`` stages of the shift permutation.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Rank ``i`` ends with block ``i``.

    Notes
    -----
    Cavin & Demengeon 2012, §3.2: "During each stage s (0 < s < p), each
    processing node P_i sends (n/p) pixels to processing node P_(i+s) mod p
    and receives (n/p) pixels from processing node P_(i−s+p) mod p", and
    "composes the pixels received during previous stage s − 1 while it does
    the send and receive operations"; pieces that arrive non-contiguous are
    buffered. In the IR the send of stage ``s`` waits for the send and the
    receive of stage ``s − 1`` (stages in lockstep, the shift permutation of
    eq. (1) on the wire at every moment), while each composite depends on the
    pieces it combines and on its rank's send of the same stage: it is released
    with the next stage's send, which the simulator posts first, and runs
    during that transfer (docs/simulator.md, "Overlap"). Table 1:
    α(p − 1) + βn(p − 1)/p, overlap yes. The shift runs over physical ranks
    whatever the depth order, as its contention-freedom on fat trees requires.

    References
    ----------
    .. [1] X. Cavin and O. Demengeon, EGPGV 2012, §3.2, Fig. 1, Table 1 —
       ``../shared/seeds/shift-based-compositing-fat-tree.txt``.

    Examples
    --------
    Rank 0 of four hears ranks 3, 2, 1 in stages 1, 2, 3 (Fig. 1): 3 is
    buffered, 2 is composited under it, 1 joins both to the result.

    >>> from topocoll.verify import verify
    >>> s = shift_based(4, count=8)
    >>> verify(s), [(op.kind, op.peer) for op in s.ops[0] if op.kind != "reduce"][:4]
    ('noncommutative', [('send', 1), ('recv', 3), ('send', 2), ('recv', 2)])
    """
    p, count, itemsize, order, gather_root = _check_common("shift_based", p, count, itemsize,
                                                           depth_order, gather_root)
    return _shift_pattern("shift_based", p, count, itemsize, order, gather_root, lockstep=True)
