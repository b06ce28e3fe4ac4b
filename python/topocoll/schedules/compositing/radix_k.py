"""Radix-k compositing: rounds of direct send within groups of ``k_i`` ranks (radix-k §3).

References
----------
T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A configurable
algorithm for parallel image-compositing applications", SC 2009
(``../shared/seeds/radix-k-compositing.txt``).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import SpecError
from ..common import check_p
from ..ir import RankBuilder, Schedule
from ..registry import algorithm
from .common import (
    PIXEL_BYTES, RADIX_K_PAPER, _check_common, _frame, _group_ops, _positions, check_depth_order, check_k,
)


# ---- radix-k ---------------------------------------------------------------------------------

def radix_k_groups(p: int, k, round: int, *, depth_order=None) -> list[list[int]]:
    """The groups of radix-k round ``round`` (0-based), as lists of ranks.

    Processes are laid out on a virtual lattice of shape ``k`` in row-major
    order (the first radix varies fastest, so round-0 groups are the rows of
    Fig. 2 and round-``i`` members are ``Π_{j<i} k_j`` apart), by depth
    position: the lattice point at position ``v`` is rank ``depth_order[v]``.

    Examples
    --------
    Fig. 2 of the radix-k paper, ``p = 12``, ``k = [4, 3]``:

    >>> radix_k_groups(12, [4, 3], 0)
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    >>> radix_k_groups(12, [4, 3], 1)
    [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
    """
    ks = check_k(check_p("radix_k_groups", p), k)
    order = check_depth_order("radix_k_groups", p, depth_order)
    if not 0 <= round < len(ks):
        raise SpecError(f"radix_k_groups: round={round!r}, expected 0..{len(ks) - 1} for k={ks}")
    stride, radix = math.prod(ks[:round]), ks[round]
    return [[int(order[v + c * stride]) for c in range(radix)]
            for v in range(p) if (v // stride) % radix == 0]


def _radix_final_blocks(p: int, ks: list[int]) -> np.ndarray:
    """Block each depth position ends with: digit ``c_i`` picks sub-piece
    ``c_i`` of the round-``i`` piece (so binary swap ends bit-reversed)."""
    v = np.arange(p, dtype=np.int64)
    base = np.zeros(p, dtype=np.int64)
    stride = 1
    for k in ks:
        sub = p // stride // k
        base += ((v // stride) % k) * sub
        stride *= k
    return base


@algorithm(collective="reduce_scatter", name="radix_k",
           params={"k": "eights", "depth_order": None, "gather_root": None}, needs="associative",
           rounds="Σ(k_i − 1) steps in r rounds", paper=f"{RADIX_K_PAPER} §3.1",
           sweep=({}, {"k": "primes"}, {"gather_root": 0}),
           supports=lambda p, params: isinstance(params["k"], str) or math.prod(np.atleast_1d(params["k"])) == p,
           supports_text="product of k = P")
def radix_k(p: int, *, k="eights", depth_order=None, gather_root=None, count: int | None = None,
            itemsize: int = PIXEL_BYTES) -> Schedule:
    """Radix-k compositing: rounds of direct send within groups of ``k_i``.

    Parameters
    ----------
    p : int
        Number of ranks (any).
    k : list of int or {"eights", "primes"}
        The k-vector, radices ≥ 2 with product ``p``; or a rule for it:
        ``"eights"`` (default, §4.1) or ``"primes"`` (§4.4); see
        :func:`default_k`.
    depth_order, gather_root, count, itemsize
        As for :func:`direct_send`.

    Returns
    -------
    Schedule
        Every rank ends with one contiguous block of the ``p`` blocks.

    Raises
    ------
    SpecError
        If ``k`` is not a valid k-vector for ``p`` (the message lists valid
        vectors near it).

    Notes
    -----
    Radix-k paper §3.1: in round ``i`` the ranks form ``p/k_i`` groups of
    ``k_i``: the rows, then the columns, … of a virtual lattice of shape ``k``
    filled in row-major order (:func:`radix_k_groups`), so round-``i`` members
    are ``Π_{j<i} k_j`` apart in depth order. The current piece is split into
    ``k_i`` sub-pieces (in block units: each round-``i`` piece is exactly
    ``Π_{j>i} k_j`` blocks, so neither the image nor a piece need divide
    evenly in pixels); member ``c`` composites sub-piece ``c`` from the other
    ``k_i − 1`` members, by the out-of-order rule (§3.1, :class:`OutOfOrder`).
    The lattice runs over depth positions, so a group always holds adjacent
    depth intervals. One IR round per message step: round ``i`` spans
    ``k_i − 1`` of them, all posted at once.

    Cost (§3.2, with Cavin & Demengeon's correction of the latency term):
    α·Σ(k_i − 1) + nβ Σ(k_i − 1) Π_{j≤i} 1/k_j = α·Σ(k_i − 1) + βn(p − 1)/p.
    Every rank composites the bytes it receives; the round-synchronous γ of
    :func:`topocoll.schedules.report` adds the piece ``n/(k_1⋯k_i)`` of each
    round with ``k_i ≥ 3``, where a group buffers a run and the step that
    joins it composites two pieces (``k = [4, 3]``: γ(n(p − 1)/p + n/4 +
    n/12)). ``k = [2, …, 2]`` is binary swap,
    ``k = [p]`` direct send.

    References
    ----------
    .. [1] T. Peterka, D. Goodell, R. Ross, H.-W. Shen and R. Thakur, "A
       configurable algorithm for parallel image-compositing applications",
       SC 2009, §3.1, §3.2, §4.1, §4.4, Fig. 2 —
       ``../shared/seeds/radix-k-compositing.txt``.
    .. [2] X. Cavin and O. Demengeon, EGPGV 2012, §4, Table 1.

    Examples
    --------
    The worked example of Fig. 2: ``p = 12``, ``k = [4, 3]``; the first
    round's messages stay within the lattice rows.

    >>> from topocoll.verify import verify
    >>> from topocoll.schedules.metrics import report
    >>> s = radix_k(12, k=[4, 3], count=12)
    >>> verify(s), report(s).cost.alpha, report(s).rounds
    ('noncommutative', 5.0, 5)
    >>> first = [r for r in s.rounds() if r.round < 3]
    >>> all(src // 4 == dst // 4 for r in first for src, dst in zip(r.src, r.dst))
    True
    >>> [s.result_blocks(r)[0] for r in range(12)]
    [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    """
    p, count, itemsize, order, gather_root = _check_common("radix_k", p, count, itemsize,
                                                           depth_order, gather_root)
    ks = check_k(p, k)
    final = _radix_final_blocks(p, ks)
    result = np.empty(p, dtype=np.int64)
    result[order] = final
    ranks, position = order.tolist(), _positions(order).tolist()

    def rank_ops(rank: int, b: RankBuilder) -> None:
        # round i: lattice digit c of position v picks member c of the group {v + (d − c)·stride};
        # the group's piece [base, base + radix·sub) splits into radix sub-pieces of sub blocks
        v, base, stride, step0 = position[rank], 0, 1, 0
        for radix in ks:
            sub = p // stride // radix
            c = (v // stride) % radix
            first = v - c * stride
            _group_ops(b, c, ranks=[ranks[first + d * stride] for d in range(radix)], step0=step0,
                       pieces=[range(base + d * sub, base + (d + 1) * sub) for d in range(radix)])
            base += c * sub
            stride *= radix
            step0 += radix - 1

    return _frame("radix_k", p, count, itemsize, order, gather_root, {"k": ks}, rank_ops, result,
                  sum(x - 1 for x in ks))
