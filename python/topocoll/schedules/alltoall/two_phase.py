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

from typing import Iterator

import numpy as np

from ...errors import SpecError
from ..common import check_p
from ..ir import RoundArrays, Schedule, ScheduleBuilder
from ..registry import algorithm
from .common import (
    AXES, DEFAULT_MAPPING, PAPER, _Rows, TorusShape, balanced_dims, check_sizes, choose_linear_dimension,
    _make, parse_shape, _stage_input,
)


# ---- Two Phase Schedule (§4.1) ------------------------------------------------

class TorusLayout:
    """Ranks on an X×Y×Z partition split into a line and a plane (§4.1).

    ``coords[r]`` are rank ``r``'s coordinates; the *linear* axis has size
    ``L`` and line coordinate ``a[r]``; the other axes form a plane of ``Q =
    P/L`` nodes with index ``q[r]`` (first planar axis fastest).
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
        self._terms: list[np.ndarray] | None = None

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

    def translate(self, delta: np.ndarray) -> np.ndarray:
        """Rank at ``coords[r] + delta`` (mod the sizes) for every rank ``r``."""
        if self._terms is None:
            # terms[j][δ] = ((coords[:, j] + δ) mod n_j)·stride_j: a translation
            # is then d − 1 additions and one gather per round
            self._terms = [((self.coords[:, j][None, :] + np.arange(n, dtype=np.int64)[:, None]) % n) * stride
                           for j, (n, stride) in enumerate(zip(self.sizes.tolist(), self.node_strides.tolist()))]
        node = None
        for j, terms in enumerate(self._terms):
            part = terms[int(delta[j]) % terms.shape[0]]
            node = part if node is None else node + part
        return self.node_rank[node]


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


def _tps_round_phase1(lay: TorusLayout, r: int) -> int:
    """Round of the phase-1 message along line offset ``r`` (1 ≤ r < L)."""
    return (r - 1) * (lay.Q - 1) if lay.Q > 1 else r - 1


def _tps_round_phase2(lay: TorusLayout, r: int, u: int) -> int:
    """Round in which data from line offset ``r`` goes to planar offset ``u``."""
    return r * (lay.Q - 1) + u - 1


def _two_phase_ops(lay: TorusLayout) -> list:
    p, L, Q = lay.p, lay.L, lay.Q
    b = ScheduleBuilder(p)
    _stage_input(b, p)
    line_to = [lay.translate(lay.line_offset(r)) for r in range(L)]
    plane_to = [lay.translate(lay.plane_offset(u)) for u in range(Q)]
    plane_from = [lay.translate(-lay.plane_offset(u)) for u in range(Q)]
    # members[a][q]: rank at line coordinate a, plane index q
    members = np.empty((L, Q), dtype=np.int64)
    members[lay.a, lay.q] = np.arange(p)
    a_of, q_of = lay.a.tolist(), lay.q.tolist()
    for c in range(p):
        a, q = a_of[c], q_of[c]
        events = []   # (round, order, callable)
        for r in range(1, L):
            rnd = _tps_round_phase1(lay, r)
            t = int(line_to[r][c])                   # intermediate at line a + r
            s = int(line_to[(L - r) % L][c])         # source at line a − r
            a_t, a_s = (a + r) % L, (a - r) % L
            out_blocks = tuple(int(x) for x in members[a_t])       # destinations (a + r, ·)
            in_blocks = tuple(int(x) for x in members[a])          # as s names them
            into = tuple(a_s * Q + qq for qq in range(Q))
            events.append((rnd, 0, "send1", (t, out_blocks)))
            events.append((rnd, 2, "recv1", (s, in_blocks, into, a_s * Q + q)))
        for r in range(L):
            a_s = (a - r) % L
            for u in range(1, Q):
                rnd = _tps_round_phase2(lay, r, u)
                d = int(plane_to[u][c])
                frm = int(plane_from[u][c])
                q_d, q_frm = q_of[d], q_of[frm]
                if r == 0:
                    out = ("send", d)
                    named = c                                       # frm's send[c]
                else:
                    out = ("fwd", a_s * Q + q_d)
                    named = a_s * Q + q                             # frm's fwd[a_s·Q + q]
                source = int(members[a_s, q_frm])
                events.append((rnd, 1, "send2", (d, out)))
                events.append((rnd, 3, "recv2", (frm, named, source)))
        events.sort(key=lambda e: (e[0], e[1]))
        for rnd, _, kind, args in events:
            if kind == "send1":
                t, blocks = args
                b.send(c, t, blocks, buf="send", round=rnd)
            elif kind == "recv1":
                s, blocks, into, own = args
                b.recv(c, s, blocks, buf="fwd", into=into, round=rnd)
                b.copy(c, (s,), dst="data", src="fwd", src_blocks=(own,), round=rnd)
            elif kind == "send2":
                d, (buf, pos) = args
                b.send(c, d, (pos,), buf=buf, round=rnd)
            else:
                frm, named, source = args
                b.recv(c, frm, (named,), buf="data", into=(source,), round=rnd)
    return b.build()


def _two_phase_rounds(lay: TorusLayout, m: int) -> Iterator[RoundArrays]:
    p, L, Q = lay.p, lay.L, lay.Q
    rows = _Rows(p)
    if Q == 1:
        for r in range(1, L):
            yield rows.round(_tps_round_phase1(lay, r), lay.translate(lay.line_offset(r)), Q * m, -1)
        return
    for r in range(L):
        dep = _tps_round_phase1(lay, r) if r >= 1 else -1
        for u in range(1, Q):
            rnd = _tps_round_phase2(lay, r, u)
            dst2 = lay.translate(lay.plane_offset(u))
            if u == 1 and r + 1 < L:
                dst1 = lay.translate(lay.line_offset(r + 1))
                yield RoundArrays(rnd, np.concatenate((rows.ranks, rows.ranks)), np.concatenate((dst1, dst2)),
                                  np.concatenate((rows.full(Q * m), rows.full(m))),
                                  np.concatenate((rows.minus, rows.full(dep) if dep >= 0 else rows.minus)),
                                  np.concatenate((rows.zeros, rows.zeros)))
            else:
                yield rows.round(rnd, dst2, m, dep)


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
    count, itemsize, m = check_sizes("alltoall/two_phase_schedule", p, count, itemsize)
    lay = _two_phase_layout(p, shape, linear, mapping)
    params = {"shape": str(lay.shape), "linear": AXES[lay.linear],
              "mapping": mapping if isinstance(mapping, str) else tuple(int(x) for x in lay.rank_node)}
    return _make("two_phase_schedule", p, count, itemsize, params,
                 lambda: _two_phase_ops(lay), lambda: _two_phase_rounds(lay, m))
