"""The virtual mesh message-combining all-to-all (Kumar & Heidelberger 2008 §4.2).

The 2D scheme and its d-dimensional generalisation (d = 3: the HPCC
RandomAccess scheme of Garg & Sabharwal, cited as [5]).

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Sequence

import numpy as np

from ...errors import SpecError
from ..common import check_p
from ..ir import RankBuilder, Schedule
from ..pattern import RankwisePattern
from ..registry import algorithm
from .common import PAPER, balanced_dims, check_sizes, _int_param, _make, _stage_input


# ---- virtual mesh (§4.2) and its d-dimensional generalisation --------------------

class MeshLayout:
    """Ranks as points of a ``P_0 × P_1 × …`` virtual mesh, dimension 0 fastest.

    Positions follow the invariant of the mesh algorithm: after phase ``k``
    a rank ``c`` holds the blocks from sources ``s`` to destinations ``d`` with
    ``d_j = c_j`` for ``j ≤ k`` and ``s_j = c_j`` for ``j > k``, stored at the
    position whose coordinates are ``s_j`` (``j ≤ k``) and ``d_j`` (``j > k``):
    ``p`` blocks at ``p`` distinct positions, the destination index before
    phase 0 and the source index after the last phase.
    """

    def __init__(self, dims: Sequence[int]):
        self.dims = tuple(int(n) for n in dims)
        self.p = math.prod(self.dims)
        self.strides = tuple(int(s) for s in np.cumprod((1,) + self.dims[:-1]))
        self.phases = [k for k, n in enumerate(self.dims) if n > 1]
        self.with_coordinate = functools.lru_cache(maxsize=None)(self._with_coordinate)

    def coordinate(self, rank: int, k: int) -> int:
        return rank // self.strides[k] % self.dims[k]

    def _with_coordinate(self, k: int, value: int) -> tuple[int, ...]:
        """Positions whose coordinate ``k`` is ``value``, the others in
        increasing order (the same order on sender and receiver)."""
        others = np.arange(self.p, dtype=np.int64)
        others = others[(others // self.strides[k]) % self.dims[k] == 0]
        return tuple((others + value * self.strides[k]).tolist())


def _mesh_rank_ops(lay: MeshLayout):
    """Rank ``c``'s ops, phase by phase. Phase ``e`` exchanges along
    dimension ``k`` (of size ``n``) in rounds ``base … base + n − 2``: copy the
    blocks ``c`` keeps (coordinate ``k`` its own) into the phase's buffer,
    then in round ``base + u − 1`` send the blocks for coordinate
    ``c_k + u`` to the rank ``u`` ahead and receive from the rank ``u``
    behind the blocks for coordinate ``c_k``, stored as it names them. The
    last phase writes ``data``; a single phase first stages the input in
    ``"send"``."""
    p, phases = lay.p, lay.phases
    bases = [sum(lay.dims[k] - 1 for k in phases[:e]) for e in range(len(phases))]

    def rank_ops(c: int, b: RankBuilder) -> None:
        if len(phases) == 1:
            _stage_input(b, c, p)
        prev = "send" if len(phases) == 1 else "data"
        for e, k in enumerate(phases):
            new = "data" if e == len(phases) - 1 else f"fwd{e}"
            base, n, ck = bases[e], lay.dims[k], lay.coordinate(c, k)
            kept = tuple(h for h in lay.with_coordinate(k, ck) if h != c)
            if kept and prev != new:
                b.copy(kept, dst=new, src=prev, round=base)
            for u in range(1, n):
                to_k, from_k = (ck + u) % n, (ck - u) % n
                b.send(c + (to_k - ck) * lay.strides[k], lay.with_coordinate(k, to_k), buf=prev,
                       round=base + u - 1)
                b.recv(c + (from_k - ck) * lay.strides[k], lay.with_coordinate(k, ck), buf=new,
                       into=lay.with_coordinate(k, from_k), round=base + u - 1)
            prev = new
    return rank_ops


def resolve_mesh_dims(where: str, p: int, dims, d) -> tuple[int, ...]:
    """``dims`` given (``"32x16"`` or a tuple, product ``p``) or the most
    balanced ``d`` factors of ``p`` (:func:`balanced_dims`)."""
    if dims is None:
        d = _int_param(where, "d", d, minimum=1)
        return balanced_dims(p, d)
    if isinstance(dims, str):
        try:
            parsed = tuple(int(s) for s in re.split(r"[x×*,]", dims.strip().lower()))
        except ValueError:
            raise SpecError(f"{where}: dims={dims!r}, expected sizes like '32x16'") from None
    elif isinstance(dims, (tuple, list)) and all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims):
        parsed = tuple(int(n) for n in dims)
    else:
        raise SpecError(f"{where}: dims={dims!r}, expected sizes like '32x16' or (32, 16)")
    if not parsed or any(n < 1 for n in parsed):
        raise SpecError(f"{where}: dims={dims!r}, expected positive sizes")
    if math.prod(parsed) != p:
        raise SpecError(f"{where}: dims {'x'.join(map(str, parsed))} have {math.prod(parsed)} points, expected p={p}")
    return parsed


@algorithm(collective="alltoall", name="virtual_mesh", params={"dims": None, "d": 2}, needs="associative",
           rounds="Σ_k (P_k − 1)  (2D: Pvx + Pvy − 2)",
           paper=f"{PAPER} §4.2 eq. 4 (2D virtual mesh); d = 3: Garg & Sabharwal [5]",
           sweep=({"d": 2}, {"d": 3}))
def virtual_mesh_alltoall(p: int, *, dims=None, d: int = 2, count: int | None = None,
                          itemsize: int = 8) -> Schedule:
    """Message-combining all-to-all over a virtual mesh ``P = P_0 × P_1 × …``.

    With two dimensions this is the 2D virtual mesh of §4.2 (``P_0 = Pvx``
    columns per row, ``P_1 = Pvy`` rows): in phase 1 each rank combines its
    blocks for the ``Pvy`` destinations of column ``j`` into one message to
    its ``j``-th row neighbour (``Pvx − 1`` messages of ``Pvy·m`` bytes); in
    phase 2 the intermediates sort what they received by destination and
    send one message to each column neighbour (``Pvy − 1`` messages of
    ``Pvx·m`` bytes). In ``d`` dimensions phase ``k`` exchanges along
    dimension ``k`` (d = 3: the HPCC RandomAccess scheme, [5]). The blocks a
    rank keeps in a phase are copied into that phase's buffer (the γ term of
    eq. 4), so every message is one Send.

    Parameters
    ----------
    p : int
        Number of ranks.
    dims : str or tuple, optional
        Mesh sizes, dimension 0 (the row, phase 1) first, product ``p``;
        default: ``d`` factors of ``p`` as equal as possible, largest first
        (512 → 32×16, the paper's choice).
    d : int
        Number of mesh dimensions when ``dims`` is not given.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Raises
    ------
    SpecError
        If the product of ``dims`` differs from ``p``.

    Notes
    -----
    Crossbar cost ``Σ_k (P_k − 1)(α + (P/P_k)·m·β)``; in 2D ``(Pvx + Pvy −
    2)·α`` and about ``2P·m·β``: each block crosses the network twice. The
    paper's torus model is eq. 4, ``(Pvx + Pvy)·α + 2P·(m + proto)·((M/8)·β +
    γ)`` (:func:`.alltoall_cost.virtual_mesh_torus_time`); it beats eq. 3 below
    ``m = h − 2·proto`` = 32 bytes on the β terms (§4.2).

    References
    ----------
    Kumar & Heidelberger, §4.2, eq. 4; Garg & Sabharwal, SC'06 ([5]).

    Examples
    --------
    The paper's 32×16 virtual mesh on a 512-node midplane (§4.2):

    >>> s = virtual_mesh_alltoall(512, count=512, itemsize=1)
    >>> s.params
    {'dims': '32x16'}
    >>> from topocoll.schedules.metrics import report
    >>> r = report(s)
    >>> r.rounds, r.max_messages_per_rank, r.max_bytes_per_rank
    (46, 46, 976)
    """
    where = "alltoall/virtual_mesh"
    p = check_p(where, p)
    count, itemsize, _ = check_sizes(where, p, count, itemsize)
    mesh = resolve_mesh_dims(where, p, dims, d)
    return _make("virtual_mesh", p, count, itemsize, {"dims": "x".join(map(str, mesh))},
                 RankwisePattern(p, _mesh_rank_ops(MeshLayout(mesh))))
