"""The Two Phase Schedule for an X×Y×Z torus or mesh (Kumar & Heidelberger 2008 §4.1).

Phase 1 runs along the linear dimension to the intermediate node with the
destination's linear coordinate, phase 2 in the plane, pipelined.

References
----------
S. Kumar and P. Heidelberger, "Performance Analysis and Optimization of
All-to-All Communication on the Blue Gene/L Supercomputer", IBM Research
Report, 2008 (``../shared/seeds/alltoall-blue-gene-torus.txt``).
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecError
from ..arraypattern import Run, TableBuilder, TablePattern
from ..common import check_p
from ..ir import Schedule
from ..registry import algorithm
from .common import (
    AXES, DEFAULT_MAPPING, PAPER, TorusShape, balanced_dims, check_sizes, choose_linear_dimension,
    _make, parse_shape, _stage_table,
)


# ---- Two Phase Schedule (§4.1) ------------------------------------------------

class TorusLayout:
    """Ranks on an X×Y×Z partition split into a line and a plane (§4.1).

    ``coords[r]`` are rank ``r``'s coordinates; the *linear* axis has size
    ``L`` and line coordinate ``a[r]``; the other axes form a plane of ``Q =
    P/L`` nodes with index ``q[r]`` (first planar axis fastest);
    ``members[a, q]`` is the rank at line coordinate ``a`` and plane index ``q``.
    """

    def __init__(self, shape: TorusShape, linear: int, mapping):
        sizes = np.array(shape.sizes, dtype=np.int64)
        d, p = len(shape.sizes), shape.p
        self.shape, self.sizes, self.p = shape, sizes, p
        self.node_strides = np.cumprod(np.concatenate(([1], sizes[:-1]))).astype(np.int64)
        self.rank_node = _rank_nodes(shape, mapping)
        self.node_rank = np.empty(p, dtype=np.int64)
        self.node_rank[self.rank_node] = np.arange(p, dtype=np.int64)
        self.coords = (self.rank_node[:, None] // self.node_strides[None, :]) % sizes[None, :]
        self.linear = linear
        self.plane_axes = [j for j in range(d) if j != linear]
        self.L = int(sizes[linear])
        self.Q = p // self.L
        plane_sizes = sizes[self.plane_axes]
        self.plane_strides = np.cumprod(np.concatenate(([1], plane_sizes[:-1]))).astype(np.int64)
        self.a = self.coords[:, linear].copy()
        self.q = (self.coords[:, self.plane_axes] * self.plane_strides).sum(axis=1) \
            if self.plane_axes else np.zeros(p, dtype=np.int64)
        self.members = np.empty((self.L, self.Q), dtype=np.int64)
        self.members[self.a, self.q] = np.arange(p, dtype=np.int64)

    def plane_offset(self, u: int) -> np.ndarray:
        """Translation vector (all axes) of planar offset index ``u``."""
        vec = np.zeros(len(self.sizes), dtype=np.int64)
        for axis, stride in zip(self.plane_axes, self.plane_strides):
            vec[axis] = (u // stride) % self.sizes[axis]
        return vec

    def line_offset(self, r: int) -> np.ndarray:
        vec = np.zeros(len(self.sizes), dtype=np.int64)
        vec[self.linear] = r
        return vec

    def move(self, rank: int, delta: np.ndarray) -> int:
        """The rank at ``coords[rank] + delta`` (mod the sizes)."""
        return int(self.node_rank[int((((self.coords[rank] + delta) % self.sizes) * self.node_strides).sum())])

    def moves(self, ranks: np.ndarray, deltas: np.ndarray) -> np.ndarray:
        """:meth:`move` of every rank by every translation: ``(ranks, deltas)``."""
        at = (self.coords[ranks][:, None, :] + np.asarray(deltas, dtype=np.int64)[None, :, :]) % self.sizes
        return self.node_rank[at @ self.node_strides]


def _rank_nodes(shape: TorusShape, mapping) -> np.ndarray:
    """Node index (X fastest) of every rank under ``mapping``."""
    p, d = shape.p, len(shape.sizes)
    sizes = np.array(shape.sizes, dtype=np.int64)
    strides = np.cumprod(np.concatenate(([1], sizes[:-1]))).astype(np.int64)
    if isinstance(mapping, str):
        order = mapping.lower()
        if sorted(order) != sorted(AXES[:d]):
            raise SpecError(f"alltoall/two_phase_schedule: mapping={mapping!r}, expected a permutation of "
                            f"{AXES[:d]!r} (fastest axis first) or a list of {p} node indices")
        axes = [AXES.index(c) for c in order]
        ranks = np.arange(p, dtype=np.int64)
        coords = np.zeros((p, d), dtype=np.int64)
        rest = ranks.copy()
        for axis in axes:
            coords[:, axis] = rest % sizes[axis]
            rest //= sizes[axis]
        return coords @ strides
    nodes = np.asarray(mapping)
    if nodes.shape != (p,) or not np.issubdtype(nodes.dtype, np.integer) or \
            not np.array_equal(np.sort(nodes), np.arange(p)):
        raise SpecError(f"alltoall/two_phase_schedule: mapping of length {nodes.size}, expected an axis order "
                        f"like 'xyz' or a permutation of the {p} node indices (X fastest)")
    return nodes.astype(np.int64)


def _two_phase_layout(p: int, shape, linear, mapping) -> TorusLayout:
    where = "alltoall/two_phase_schedule"
    parsed = TorusShape(balanced_dims(p, 3), (True,) * 3) if shape is None else parse_shape(where, shape, p)
    d = len(parsed.sizes)
    if linear is None:
        axis = choose_linear_dimension(parsed.sizes)
    elif isinstance(linear, str) and linear.lower() in AXES[:d]:
        axis = AXES.index(linear.lower())
    elif isinstance(linear, (int, np.integer)) and not isinstance(linear, bool) and 0 <= linear < d:
        axis = int(linear)
    else:
        raise SpecError(f"{where}: linear={linear!r}, expected one of {', '.join(AXES[:d])} or None (§4.1 rule)")
    return TorusLayout(parsed, axis, mapping)


def _two_phase_table(lay: TorusLayout):
    """The ranks ``b.ranks``' ops, slot by slot (§4.1).

    Slot ``r = 0 … L−1`` has ``max(Q − 1, 1)`` rounds. In its first round
    rank ``c`` sends its phase-1 message along line offset ``r + 1`` (its
    blocks for the plane at line ``a + r + 1``) and receives the one from
    line offset ``−(r + 1)`` into ``"fwd"``, copying its own block to
    ``data``; in round ``u`` (``1 ≤ u < Q``) it forwards to planar offset
    ``u`` the block that came from line offset ``−r`` (its own block when
    ``r = 0``) and receives the block planar offset ``−u`` forwards.
    Dependencies come from the data flow, so a forward waits only for the
    phase-1 receive that brought its block: the two phases pipeline. Every
    (rank, slot, offset) is one row of NumPy arrays, no Python loop over them.
    """
    p, L, Q = lay.p, lay.L, lay.Q
    per_slot = max(Q - 1, 1)
    line = np.array([lay.line_offset(r) for r in range(1, L)], dtype=np.int64).reshape(-1, len(lay.sizes))
    back = np.array([lay.line_offset(L - r) for r in range(1, L)], dtype=np.int64).reshape(-1, len(lay.sizes))
    plane = np.array([lay.plane_offset(u) for u in range(1, Q)], dtype=np.int64).reshape(-1, len(lay.sizes))
    members, q_of = lay.members, lay.q

    def record(b: TableBuilder) -> None:
        c = b.ranks
        _stage_table(b, p)
        a, q = lay.a[c], q_of[c]
        # phase 1, rows (rank, slot = r - 1): the line message along offset r
        r = np.arange(1, L, dtype=np.int64)[None, :]
        rnd1 = (r - 1) * per_slot
        a_from = (a[:, None] - r) % L
        line_from = lay.moves(c, back)
        b.send(c[:, None], lay.moves(c, line), members[(a[:, None] + r) % L], buf="send", round=rnd1)
        # phase 2 from "send" (slot 0), rows (rank, u)
        u = np.arange(1, Q, dtype=np.int64)
        to_plane, from_plane = lay.moves(c, plane), lay.moves(c, -plane)
        b.send(c[:, None], to_plane, to_plane[:, :, None], buf="send", round=u[None, :] - 1)
        # phase 2 forwards from "fwd" (slot ≥ 1), rows (rank, slot, u)
        slot = np.arange(1, L, dtype=np.int64)[None, :, None]
        a_s = (a[:, None, None] - slot) % L
        rnd2 = slot * per_slot + u[None, None, :] - 1
        d3 = to_plane[:, None, :]
        b.send(c[:, None, None], d3, (a_s * Q + q_of[d3])[..., None], buf="fwd", round=rnd2)
        # phase 1 receive into "fwd" and the copy of the rank's own block
        b.recv(c[:, None], line_from, members[a][:, None, :], buf="fwd", into=Run(a_from * Q, Q), round=rnd1)
        b.copy(c[:, None], line_from[..., None], dst="data", src="fwd", src_blocks=(a_from * Q + q[:, None])[..., None],
               round=rnd1)
        # phase 2 receives, every slot, rows (rank, slot, u)
        slot0 = np.arange(L, dtype=np.int64)[None, :, None]
        a_s0 = (a[:, None, None] - slot0) % L
        frm = from_plane[:, None, :]
        named = np.where(slot0 == 0, c[:, None, None], a_s0 * Q + q[:, None, None])
        b.recv(c[:, None, None], frm, named[..., None], buf="data", into=members[a_s0, q_of[frm]][..., None],
               round=slot0 * per_slot + u[None, None, :] - 1)
    return record


@algorithm(collective="alltoall", name="two_phase_schedule",
           params={"shape": None, "linear": None, "mapping": DEFAULT_MAPPING}, needs="associative",
           rounds="P − L (L: size of the linear dimension; L − 1 if P = L)",
           paper=f"{PAPER} §4.1 (Two Phase Schedule), Table 3")
def two_phase_schedule(p: int, *, shape=None, linear=None, mapping=DEFAULT_MAPPING,
                       count: int | None = None, itemsize: int = 8) -> Schedule:
    """Two Phase Schedule (TPS) all-to-all on an X×Y×Z torus or mesh (§4.1).

    Phase 1 runs along the *linear* dimension: source ``(x1, y1, z1)`` sends
    one combined message to the intermediate ``(x2, y1, z1)`` carrying its
    blocks for every destination ``(x2, ·, ·)``. Phase 2 runs in the plane:
    the intermediate forwards each block to its destination ``(x2, y2, z2)``.
    The phases are pipelined: in slot ``r`` every rank sends its phase-1
    message along line offset ``r + 1`` while forwarding, one block per
    message, what arrived from line offset ``r``; a phase-2 forward depends
    only on the phase-1 message that brought its block. Blocks for the
    intermediate itself are copied from ``"fwd"`` into ``data``.

    Parameters
    ----------
    p : int
        Number of ranks.
    shape : str or tuple, optional
        Partition ``"XxYxZ"`` (suffix ``M`` marks a mesh dimension), whose
        product must be ``p``; default: the most cubic factorisation of ``p``.
    linear : {"x", "y", "z"} or int, optional
        The linear (phase-1) dimension; default: the paper's rule
        (:func:`choose_linear_dimension`).
    mapping : str or sequence of int
        Rank to coordinates: an axis order, fastest first (default ``"xyz"``:
        rank = x + X·(y + Y·z)), or the node index (X fastest) of each rank.
    count : int, optional
        Elements per rank in total, a multiple of ``p`` (default ``p``).
    itemsize : int
        Bytes per element.

    Raises
    ------
    SpecError
        If the shape's product differs from ``p``, or for a bad ``linear`` or
        ``mapping``.

    Notes
    -----
    Every rank sends ``L − 1`` phase-1 messages of ``(P/L)·m`` bytes and
    ``P − L`` phase-2 messages of ``m`` bytes: crossbar cost ``(P−1)·α +
    ((L−1)·P/L + P − L)·m·β``, about twice the direct β term. On the torus
    phase 1 uses only the linear links and phase 2 only the planar ones; the
    phase costs are in :func:`.alltoall_cost.two_phase_torus_time` (eq. 2 and
    3 applied to the line and to the plane). With the longest dimension ``n``
    linear and the second longest ``m``, phase 2 needs only ``m/n`` of its
    peak for the whole to run at peak (§4.1).

    References
    ----------
    Kumar & Heidelberger, §4.1 and Table 3 (``alltoall-blue-gene-torus.txt``).

    Examples
    --------
    >>> s = two_phase_schedule(8 * 4 * 2, shape="8x4x2")
    >>> s.params
    {'shape': '8x4x2', 'linear': 'x', 'mapping': 'xyz'}
    >>> from topocoll.verify import verify
    >>> verify(s)
    'noncommutative'
    """
    p = check_p("alltoall/two_phase_schedule", p)
    count, itemsize, _ = check_sizes("alltoall/two_phase_schedule", p, count, itemsize)
    lay = _two_phase_layout(p, shape, linear, mapping)
    params = {"shape": str(lay.shape), "linear": AXES[lay.linear],
              "mapping": mapping if isinstance(mapping, str) else tuple(int(x) for x in lay.rank_node)}
    return _make("two_phase_schedule", p, count, itemsize, params, TablePattern(p, p, _two_phase_table(lay)))
