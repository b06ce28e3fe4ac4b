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

import math
import re
from typing import Sequence

import numpy as np

from ...errors import SpecError
from ..arraypattern import TableBuilder, TablePattern
from ..common import check_p
from ..ir import Schedule
from ..registry import algorithm
from .common import PAPER, balanced_dims, check_sizes, _int_param, _make, _stage_table


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

    def coordinate(self, rank: int, k: int) -> int:
        return rank // self.strides[k] % self.dims[k]

    def positions(self, k: int, values) -> np.ndarray:
        """Positions whose coordinate ``k`` is ``values`` (each), the others in
        increasing order (the same order on sender and receiver): an array of
        shape ``values.shape + (p / P_k,)``."""
        others = np.arange(self.p, dtype=np.int64)
        others = others[(others // self.strides[k]) % self.dims[k] == 0]
        return others + np.asarray(values, dtype=np.int64)[..., None] * self.strides[k]


def _mesh_table(lay: MeshLayout):
    """The ranks ``b.ranks``' ops, phase by phase. Phase ``e`` exchanges
    along dimension ``k`` (of size ``n``) in rounds ``base … base + n − 2``:
    rank ``c`` copies the blocks it keeps (coordinate ``k`` its own) into the
    phase's buffer, then in round ``base + u − 1`` sends the blocks for
    coordinate ``c_k + u`` to the rank ``u`` ahead and receives from the rank
    ``u`` behind the blocks for coordinate ``c_k``, stored as it names them.
    The last phase writes ``data``; a single phase first stages the input in
    ``"send"``. Rows (rank, u) of NumPy arrays per phase."""
    p, phases = lay.p, lay.phases
    bases = [sum(lay.dims[k] - 1 for k in phases[:e]) for e in range(len(phases))]

    def record(b: TableBuilder) -> None:
        c = b.ranks
        if len(phases) == 1:
            _stage_table(b, p)
        prev = "send" if len(phases) == 1 else "data"
        for e, k in enumerate(phases):
            new = "data" if e == len(phases) - 1 else f"fwd{e}"
            base, n, stride = bases[e], lay.dims[k], lay.strides[k]
            ck = c // stride % n
            own = lay.positions(k, ck)                                  # (ranks, p / n)
            kept = own[own != c[:, None]].reshape(c.shape[0], own.shape[1] - 1)
            b.copy(c, kept, dst=new, src=prev, round=base, where=kept.shape[1] > 0)
            u = np.arange(1, n, dtype=np.int64)[None, :]
            to_k, from_k = (ck[:, None] + u) % n, (ck[:, None] - u) % n
            rnd = base + u - 1
            b.send(c[:, None], c[:, None] + (to_k - ck[:, None]) * stride, lay.positions(k, to_k), buf=prev,
                   round=rnd)
            b.recv(c[:, None], c[:, None] + (from_k - ck[:, None]) * stride, own[:, None, :], buf=new,
                   into=lay.positions(k, from_k), round=rnd)
            prev = new
    return record


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
                 TablePattern(p, p, _mesh_table(MeshLayout(mesh))))
