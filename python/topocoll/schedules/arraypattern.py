"""Rank-wise patterns as arrays: one description, recorded for many ranks at once.

An :class:`ArrayPattern` is a rank-wise pattern (trees, folds, halving and
doubling) described once, vectorised over ranks:

- ``classify(ranks) -> keys``: an int64 class key per rank (NumPy), or a
  row of small integer codes per rank (classes are the distinct rows). Ranks
  of one class run the *same* operation list (kinds, buffers, rounds, tags,
  number of block runs) and differ only in peers, block positions and
  reduction sides;
- ``record(b)``: records the operations of one class on an
  :class:`ArrayBuilder` whose ``b.ranks`` are that class's ranks; peers,
  block run starts / lengths and sides are NumPy arrays over ``b.ranks``
  (or scalars, the same on every rank).

Views:

- ``ops_for(rank)``: ``record`` on the one rank, then that rank's data flow by
  :class:`~.dataflow.RankBuilder` (exact, one rank's work);
- ``chunks(block_bytes)``: each class recorded once for all its ranks; its
  dependencies are those of its first rank (data flow by ``RankBuilder``,
  once per class), which are every member's because the ranks of a class
  touch blocks related by a bijection that keeps every overlap between their
  operations (the generators say which, e.g. ``XOR bitreverse(n)`` for
  recursive halving); each round's :class:`~.program.OpChunk` is then
  scattered together with NumPy: no Python object per operation.

The views-equal tests (``verify.testing.assert_views_equal``) prove the
program equal to the one derived from every rank's ``ops_for`` at small P,
class invariance included. Patterns with O(P) rounds are not the target:
the program keeps one offset array of P entries per round.

Those (the direct, randomized, two-phase and virtual-mesh all-to-alls, whose
ranks post O(P) operations each in rank-specific orders) are a
:class:`TablePattern`: ``record(b)`` records the operations of any set of
ranks on a :class:`TableBuilder`, many per call as broadcast NumPy arrays;
one rank for ``ops_for``, every rank for the program, whose dependencies
come from :func:`table_dependencies` (``RankBuilder``'s rule, vectorised).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..errors import ScheduleError
from .dataflow import RankBuilder
from .ops import LEFT, RIGHT, Op
from .pattern import OpsPattern
from .program import (KIND_CODES, LEFT_SIDE, RIGHT_SIDE, OpChunk, block_runs, canonical_runs, run_bytes,
                      strided_runs)


@dataclass(frozen=True, slots=True)
class Run:
    """Blocks ``lo .. lo + n - 1`` on each rank: ``lo`` and ``n`` are ints
    or arrays over the builder's ranks (``n >= 1``); one rank's op gets
    ``range(lo, lo + n)``."""

    lo: object
    n: object


def lower_first(peer, ranks) -> np.ndarray:
    """Sides of reductions putting the lower rank's data in front."""
    return np.where(np.asarray(peer) < ranks, LEFT_SIDE, RIGHT_SIDE).astype(np.int8)


@dataclass(slots=True)
class _Step:
    kind: str
    round: int
    tag: int
    buf: str          # written (sent from, for a send)
    src_buf: str      # read by a reduction / copy; = buf for send / recv
    peer: object      # int or array over ranks; -1 for local ops
    side: object      # int8 code or array; -1 if not a reduction
    dst: list         # runs (lo, n) of the blocks written / sent, each lo/n int or array
    src: list         # runs of the blocks read (recv: as the sender names them)
    form: object      # None (ranges) or the constant block tuples (dst, src) as given


def _runs(blocks):
    """(runs, constant tuple or None) of a block argument."""
    if isinstance(blocks, Run):
        return [(blocks.lo, blocks.n)], None
    if isinstance(blocks, (list, tuple)) and blocks and all(isinstance(x, Run) for x in blocks):
        return [(x.lo, x.n) for x in blocks], None
    const = blocks if isinstance(blocks, range) else tuple(int(x) for x in blocks)
    return [(d, n) for d, _, n in block_runs(const, const)], const


class ArrayBuilder:
    """Records one class's operations for all its ``ranks`` at once (see
    module doc). The calls mirror :class:`~.dataflow.RankBuilder`'s, without
    dependencies: those come from data flow."""

    def __init__(self, ranks: np.ndarray):
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.steps: list[_Step] = []

    def _pair(self, dst_blocks, src_blocks):
        dst, dconst = _runs(dst_blocks)
        src, sconst = _runs(src_blocks)
        if dconst is not None and sconst is not None:   # constant: runs contiguous in both
            runs = block_runs(dconst, sconst)
            return [(d, n) for d, _, n in runs], [(s, n) for _, s, n in runs], (dconst, sconst)
        if len(dst) != len(src):
            raise ScheduleError(f"ArrayBuilder: {len(dst)} destination runs against {len(src)} source runs")
        if (dconst is None) != (sconst is None):
            raise ScheduleError("ArrayBuilder: mixed constant and per-rank blocks in one op")
        return dst, src, None if dconst is None else (dconst, sconst)

    def send(self, peer, blocks, *, buf="data", round, tag=None) -> None:
        dst, src, form = self._pair(blocks, blocks)
        self.steps.append(_Step("send", round, round if tag is None else tag, buf, buf, peer, -1, dst, src, form))

    def recv(self, peer, blocks, *, buf="data", into=None, round, tag=None) -> None:
        dst, src, form = self._pair(blocks if into is None else into, blocks)
        self.steps.append(_Step("recv", round, round if tag is None else tag, buf, buf, peer, -1, dst, src, form))

    def reduce(self, blocks, *, dst="data", src, side, round) -> None:
        if isinstance(side, str):
            if side not in (LEFT, RIGHT):
                raise ScheduleError(f"reduce: side={side!r}, expected 'left' or 'right'")
            side = LEFT_SIDE if side == LEFT else RIGHT_SIDE
        d, s, form = self._pair(blocks, blocks)
        self.steps.append(_Step("reduce", round, -1, dst, src, -1, side, d, s, form))

    def copy(self, blocks, *, dst, src, src_blocks=None, round) -> None:
        d, s, form = self._pair(blocks, blocks if src_blocks is None else src_blocks)
        self.steps.append(_Step("copy", round, -1, dst, src, -1, -1, d, s, form))

    def exchange(self, peer, blocks, *, send_buf="data", recv_buf, round) -> None:
        self.send(peer, blocks, buf=send_buf, round=round)
        self.recv(peer, blocks, buf=recv_buf, round=round)

    # ---- one rank's ops, dependencies by data flow
    def rank_ops(self, i: int) -> list[Op]:
        """The operations of ``self.ranks[i]``, dependencies derived by
        :class:`RankBuilder` (the one place the rules live)."""
        b = RankBuilder()
        for st in self.steps:
            if st.form is not None:
                dst, src = st.form
            else:
                dst = _blocks_at(st.dst, i)
                src = _blocks_at(st.src, i)
            if st.kind == "send":
                b.send(_at(st.peer, i), dst, buf=st.buf, round=st.round, tag=st.tag)
            elif st.kind == "recv":
                b.recv(_at(st.peer, i), src, buf=st.buf, into=dst, round=st.round, tag=st.tag)
            elif st.kind == "reduce":
                side = LEFT if _at(st.side, i) == LEFT_SIDE else RIGHT
                b.reduce(dst, dst=st.buf, src=st.src_buf, side=side, round=st.round)
            else:
                b.copy(dst, dst=st.buf, src=st.src_buf, src_blocks=src, round=st.round)
        return b.ops


def _at(x, i: int) -> int:
    return int(x[i]) if isinstance(x, np.ndarray) else int(x)


def _blocks_at(runs, i: int):
    if len(runs) == 1:
        lo, n = _at(runs[0][0], i), _at(runs[0][1], i)
        return range(lo, lo + n)
    out: list[int] = []
    for lo, n in runs:
        lo, n = _at(lo, i), _at(n, i)
        out.extend(range(lo, lo + n))
    return tuple(out)


def _step_runs(st: _Step, rows: int, nb: int):
    """The canonical strided runs (:func:`~.program.strided_runs`) of one
    step on the ``rows`` ranks of its class: ``(counts, mask, columns)``,
    the six run columns as ``(rows, width)`` arrays, ``mask`` marking the
    runs that exist. Constant blocks have one form for every rank; one
    ``Run`` is canonical as it is (contiguous, inside the blocks); several are
    grouped per rank with :func:`~.program.canonical_runs`."""
    if st.form is not None:
        runs = np.array(strided_runs(*st.form, nb), dtype=np.int64).reshape(-1, 6)
        cols = [np.broadcast_to(runs[:, c], (rows, runs.shape[0])) for c in range(6)]
        return np.full(rows, runs.shape[0], dtype=np.int64), np.ones((rows, runs.shape[0]), dtype=bool), cols
    full = [np.broadcast_to(np.asarray(x, dtype=np.int64), (rows,)) for x in
            (*(lo for lo, _ in st.dst), *(n for _, n in st.dst), *(lo for lo, _ in st.src))]
    u = len(st.dst)
    d, n, s = (np.stack(full[i * u:(i + 1) * u], axis=1) for i in range(3))
    if u == 1:
        zero = np.zeros((rows, 1), dtype=np.int64)
        return (np.ones(rows, dtype=np.int64), np.ones((rows, 1), dtype=bool),
                [d, s, n, np.ones((rows, 1), dtype=np.int64), zero, zero])
    counts, flat = canonical_runs(d, s, n, nb)
    width = int(counts.max())
    mask = np.arange(width)[None, :] < counts[:, None]
    cols = []
    for col in flat:
        padded = np.zeros((rows, width), dtype=np.int64)
        padded[mask] = col
        cols.append(padded)
    return counts, mask, cols


def _row_ids(codes: np.ndarray) -> np.ndarray:
    """Equal ids for equal rows of a 2-D integer array (packed into one int64
    when the columns fit in 62 bits, else by a lexicographic sort)."""
    codes = codes - codes.min(axis=0)
    codes = codes[:, codes.max(axis=0) > 0]   # constant columns tell no class apart
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], dtype=np.int64)
    width = int(codes.max()).bit_length()
    if width * codes.shape[1] <= 62:
        shifts = np.arange(codes.shape[1], dtype=np.int64) * width
        return (codes.astype(np.int64) << shifts).sum(axis=1)
    order = np.lexsort(codes.T[::-1])
    ordered = codes[order]
    new = np.concatenate(([0], (ordered[1:] != ordered[:-1]).any(axis=1)))
    ids = np.empty(codes.shape[0], dtype=np.int64)
    ids[order] = np.cumsum(new)
    return ids


class ArrayPattern:
    """A rank-wise pattern vectorised over classes of ranks (module doc)."""

    #: the op program is scattered round by round (classes recorded once)
    streams = True

    def __init__(self, p: int, classify: Callable[[np.ndarray], np.ndarray],
                 record: Callable[[ArrayBuilder], None]):
        self.p = p
        self._classify = classify
        self._record = record
        self._ops: list[list[Op]] | None = None
        self._classes = None

    # ---- one rank
    def ops_for(self, rank: int) -> list[Op]:
        if self._ops is not None:
            return self._ops[rank]
        b = ArrayBuilder(np.array([rank], dtype=np.int64))
        self._record(b)
        return b.rank_ops(0)

    def all_ops(self) -> list[list[Op]]:
        if self._ops is None:
            self._ops = [self.ops_for(r) for r in range(self.p)]
        return self._ops

    # ---- classes, recorded once for all their ranks
    def op_count(self) -> int:
        """Members × steps, summed over the classes of alike ranks (exact)."""
        return sum(len(members) * len(b.steps) for members, b, _ in self.classes())

    def round_sizes(self) -> list[int]:
        """Per round (in round order) the ops of every class's members in it."""
        per: dict[int, int] = {}
        for members, b, _ in self.classes():
            for st in b.steps:
                per[st.round] = per.get(st.round, 0) + len(members)
        return [per[r] for r in sorted(per)]

    def classes(self) -> list[tuple[np.ndarray, ArrayBuilder, list[tuple[int, ...]]]]:
        """``(ranks, builder, deps)`` per class, in order of its lowest rank;
        ``deps`` are the first rank's dependencies (local op indices)."""
        if self._classes is None:
            ranks = np.arange(self.p, dtype=np.int64)
            keys = np.asarray(self._classify(ranks), dtype=np.int64)
            if keys.ndim == 2:   # one row of codes per rank: classes are the distinct rows
                keys = _row_ids(keys)
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
            cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
            groups = np.split(order, cuts)
            groups.sort(key=lambda g: int(g[0]))
            out = []
            for members in groups:
                b = ArrayBuilder(members)
                self._record(b)
                ops = b.rank_ops(0)
                for st in b.steps:   # fields must be scalars or arrays over the class's ranks
                    for x in (st.peer, st.side, *(v for run in st.dst + st.src for v in run)):
                        if isinstance(x, np.ndarray) and x.shape != members.shape:
                            raise ScheduleError(f"ArrayPattern: a field of shape {x.shape} for {len(members)} ranks")
                out.append((members, b, [op.deps for op in ops]))
            self._classes = out
        return self._classes

    def buffers(self) -> tuple[str, ...]:
        """Buffer names in first-use order over ranks, ``data`` first (a
        class's steps are its lowest rank's, and classes come in that order)."""
        names = {"data": None}
        for _, b, _ in self.classes():
            for st in b.steps:
                names.setdefault(st.buf)
                names.setdefault(st.src_buf)
        return tuple(names)

    def chunks(self, block_bytes: np.ndarray) -> Iterator[OpChunk]:
        p = self.p
        nb = len(block_bytes)
        classes = self.classes()
        bufs = {name: k for k, name in enumerate(self.buffers())}
        rank_class = np.empty(p, dtype=np.int64)
        spans = []   # per class: round -> (first slot, end slot)
        for c, (members, b, _) in enumerate(classes):
            rank_class[members] = c
            span: dict[int, list[int]] = {}
            last = None
            for s, st in enumerate(b.steps):
                if last is not None and st.round < last:
                    raise ScheduleError(f"ArrayPattern: round {st.round} after round {last}, "
                                        "expected each rank's ops in non-decreasing round order")
                last = st.round
                span.setdefault(st.round, [s, s])[1] = s + 1
            spans.append(span)
        rounds = sorted({t for span in spans for t in span})
        offsets: dict[int, np.ndarray] = {}   # round -> first row of each rank (exclusive cumsum)
        base: dict[int, int] = {}
        first = 0
        for t in rounds:
            per_class = np.array([span[t][1] - span[t][0] if t in span else 0 for span in spans], dtype=np.int64)
            cnt = per_class[rank_class]
            off = np.zeros(p + 1, dtype=np.int64)
            np.cumsum(cnt, out=off[1:])
            offsets[t], base[t] = off, first
            first += int(off[-1])
        slot_round = [[st.round for st in b.steps] for _, b, _ in classes]
        for t in rounds:
            off = offsets[t]
            n = int(off[-1])
            rank = np.empty(n, dtype=np.int64)
            kind = np.empty(n, dtype=np.int8)
            peer = np.empty(n, dtype=np.int64)
            tag = np.empty(n, dtype=np.int64)
            buf = np.empty(n, dtype=np.int16)
            sbuf = np.empty(n, dtype=np.int16)
            side = np.empty(n, dtype=np.int8)
            runcnt = np.empty(n, dtype=np.int64)
            depcnt = np.empty(n, dtype=np.int64)
            todo = []
            for c, (members, b, deps) in enumerate(classes):
                if t not in spans[c]:
                    continue
                a, e = spans[c][t]
                row0 = off[members]
                for s in range(a, e):
                    st = b.steps[s]
                    rows = row0 + (s - a)
                    rank[rows] = members
                    kind[rows] = KIND_CODES[st.kind]
                    peer[rows] = st.peer
                    tag[rows] = st.tag
                    buf[rows] = bufs[st.buf]
                    sbuf[rows] = bufs[st.src_buf]
                    side[rows] = st.side
                    runs = _step_runs(st, len(members), nb)
                    runcnt[rows] = runs[0]
                    depcnt[rows] = len(deps[s])
                    todo.append((c, s, rows, runs))
            run_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(runcnt, out=run_ptr[1:])
            dep_ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(depcnt, out=dep_ptr[1:])
            m = int(run_ptr[-1])
            run_cols = [np.empty(m, dtype=np.int64) for _ in range(6)]
            dep_idx = np.empty(int(dep_ptr[-1]), dtype=np.int64)
            for c, s, rows, (_, mask, cols) in todo:
                members, b, deps = classes[c]
                at = run_ptr[rows]
                for u in range(mask.shape[1]):
                    sel = mask[:, u]
                    for out, col in zip(run_cols, cols):
                        out[at[sel] + u] = col[sel, u]
                at = dep_ptr[rows]
                for v, d in enumerate(deps[s]):
                    td = slot_round[c][d]
                    dep_idx[at + v] = base[td] + offsets[td][members] + (d - spans[c][td][0])
            nbytes = run_bytes(block_bytes, run_ptr, run_cols[0], run_cols[2], run_cols[3], run_cols[4])
            yield OpChunk(t, base[t], rank, kind, peer, tag, buf, sbuf, side, nbytes,
                          run_ptr, *run_cols, dep_ptr, dep_idx, nblocks=nb)


# ---- rank-wise patterns with O(P) rounds: one op table -----------------------------

class TableBuilder:
    """Records the operations of ``ranks`` as rows of NumPy arrays (issue 26).

    For rank-wise patterns whose ranks differ in *when* they do things, not
    only in peers and blocks: the direct, randomized and two-phase
    all-to-alls, whose ranks each post ``O(P)`` operations over ``O(P)``
    rounds in rank-specific orders, so no class of ranks shares one op list
    (:class:`ArrayPattern`). Each call records many operations at once:
    ``rank``, ``peer``, ``round`` and the blocks are arrays broadcast together
    (``where`` drops entries), so one call may hold every rank's sends over
    every round. A rank posts its operations by round, then call order, then
    position within the call (row-major after broadcasting).

    Blocks are a :class:`Run`, a list of runs (``n = 0`` drops a run on that
    entry), or an integer array whose last axis lists single blocks. A
    receive's ``blocks`` are the sender's naming, ``into`` where they land;
    when the two are laid out differently both must have a fixed number of
    blocks, paired in order (as :class:`~.dataflow.RankBuilder` pairs them).

    Reductions (``reduce``, issue 29: synthesized reduce-scatters) read
    ``src`` and read and write ``dst`` at the same blocks. ``chain`` (an int
    per entry, ``-1`` none) adds control dependencies: the operations of one
    rank with one chain number ``>= 0`` depend each on the one before it in
    posting order (``after=`` of :class:`~.dataflow.RankBuilder`), e.g. the
    sends leaving by one port, in the order a schedule planned them.
    """

    def __init__(self, ranks: np.ndarray, nblocks: int):
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.nblocks = int(nblocks)
        self.calls: list[_Call] = []

    def send(self, rank, peer, blocks, *, buf="data", round, tag=None, where=True, chain=-1) -> None:
        self._add("send", rank, peer, round, tag, buf, buf, blocks, blocks, where, chain=chain)

    def recv(self, rank, peer, blocks, *, buf="data", into=None, round, tag=None, where=True, chain=-1) -> None:
        self._add("recv", rank, peer, round, tag, buf, buf, blocks if into is None else into, blocks, where,
                  chain=chain)

    def copy(self, rank, blocks, *, dst, src, src_blocks=None, round, where=True, chain=-1) -> None:
        self._add("copy", rank, -1, round, -1, dst, src, blocks, blocks if src_blocks is None else src_blocks,
                  where, chain=chain)

    def reduce(self, rank, blocks, *, dst="data", src, side, round, where=True, chain=-1) -> None:
        """``dst = src ∘ dst`` (``side`` ``"left"``) or ``dst ∘ src`` (``"right"``) at ``blocks``;
        ``side`` may be an array of :data:`~.program.LEFT_SIDE` / :data:`~.program.RIGHT_SIDE` codes."""
        if isinstance(side, str):
            if side not in (LEFT, RIGHT):
                raise ScheduleError(f"reduce: side={side!r}, expected 'left' or 'right'")
            side = LEFT_SIDE if side == LEFT else RIGHT_SIDE
        self._add("reduce", rank, -1, round, -1, dst, src, blocks, blocks, where, side=side, chain=chain)

    def _add(self, kind, rank, peer, rnd, tag, buf, src_buf, dst_blocks, src_blocks, where, *, side=-1,
             chain=-1) -> None:
        dst, src = _table_runs(dst_blocks), _table_runs(src_blocks)
        fields = [rank, peer, rnd, rnd if tag is None else tag, side, chain, where]
        shape = np.broadcast_shapes(*(np.shape(x) for x in fields),
                                    *(np.shape(x)[:-1] for x in dst + src if isinstance(x, np.ndarray)),
                                    *(np.shape(v) for r in dst + src if isinstance(r, Run) for v in (r.lo, r.n)))
        keep = np.broadcast_to(np.asarray(where, dtype=bool), shape).ravel()
        flat = [np.broadcast_to(np.asarray(x, dtype=np.int64), shape).ravel()[keep] for x in fields[:6]]
        d_lo, d_n = _run_matrix(dst, shape, keep)
        s_lo, s_n = _run_matrix(src, shape, keep)
        if d_lo.shape[1] != s_lo.shape[1] or not np.array_equal(d_n, s_n):
            d_lo, d_n = _unit_blocks(d_lo, d_n, kind)
            s_lo, s_n = _unit_blocks(s_lo, s_n, kind)
            if d_lo.shape[1] != s_lo.shape[1]:
                raise ScheduleError(f"TableBuilder.{kind}: {d_lo.shape[1]} blocks written against "
                                    f"{s_lo.shape[1]} read, expected equal")
        self.calls.append(_Call(KIND_CODES[kind], flat[0], flat[1], flat[2], flat[3], buf, src_buf, d_lo, s_lo, d_n,
                                flat[4].astype(np.int8), flat[5]))


@dataclass(slots=True)
class _Call:
    """One :class:`TableBuilder` call: a row per op, runs as ``(rows, U)`` arrays."""

    kind: int
    rank: np.ndarray
    peer: np.ndarray
    round: np.ndarray
    tag: np.ndarray
    buf: str
    src_buf: str
    d: np.ndarray      # first block written (sent, for a send) of each run
    s: np.ndarray      # first block read of each run (a receive's: the sender's naming)
    n: np.ndarray      # blocks per run (0: no run)
    side: np.ndarray   # reduction side code; -1 for the other kinds
    chain: np.ndarray  # control chain number; -1: none


def _table_runs(blocks) -> list:
    if isinstance(blocks, Run):
        return [blocks]
    if isinstance(blocks, (list, tuple)) and all(isinstance(x, Run) for x in blocks):
        return list(blocks)
    return [np.asarray(blocks, dtype=np.int64)]


def _run_matrix(runs, shape, keep) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, n)`` as ``(rows, U)`` arrays of the kept entries."""
    los, ns = [], []
    for r in runs:
        if isinstance(r, Run):
            los.append(np.broadcast_to(np.asarray(r.lo, dtype=np.int64), shape).ravel()[keep][:, None])
            ns.append(np.broadcast_to(np.asarray(r.n, dtype=np.int64), shape).ravel()[keep][:, None])
        else:   # single blocks along the last axis
            a = np.broadcast_to(r, shape + r.shape[-1:]).reshape(keep.shape[0], r.shape[-1])[keep]
            los.append(a)
            ns.append(np.ones_like(a))
    return np.concatenate(los, axis=1), np.concatenate(ns, axis=1)


def _unit_blocks(lo: np.ndarray, n: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Runs of a fixed length per column, expanded into single blocks."""
    if lo.shape[0] == 0:
        return np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0), dtype=np.int64)
    if not (n == n[:1]).all():
        raise ScheduleError(f"TableBuilder.{kind}: runs of varying length laid out differently "
                            "in blocks and into, expected equal layouts or fixed lengths")
    cols = [lo[:, [u]] + np.arange(int(n[0, u]))[None, :] for u in range(lo.shape[1])]
    out = np.concatenate(cols, axis=1) if cols else lo[:, :0]
    return out, np.ones_like(out)


def _canonical_table_runs(d: np.ndarray, s: np.ndarray, n: np.ndarray, nb: int):
    """:func:`~.program.canonical_runs` of rows whose runs may be empty
    (``n = 0``): ``(counts, six columns)`` in row order."""
    rows = d.shape[0]
    nonempty = n > 0
    order = np.argsort(~nonempty, axis=1, kind="stable")   # non-empty runs first, in order
    d, s, n = (np.take_along_axis(x, order, axis=1) for x in (d, s, n))
    width = nonempty.sum(axis=1)
    counts = np.zeros(rows, dtype=np.int64)
    parts = []
    for k in np.unique(width):
        sel = np.flatnonzero(width == k)
        if k == 0:
            continue
        c, cols = canonical_runs(d[sel, :k], s[sel, :k], n[sel, :k], nb)
        counts[sel] = c
        parts.append((np.repeat(sel, c), cols))
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return counts, (z,) * 6
    row_of = np.concatenate([r for r, _ in parts])
    order = np.argsort(row_of, kind="stable")
    return counts, tuple(np.concatenate([cols[c] for _, cols in parts])[order] for c in range(6))


@dataclass(frozen=True)
class OpTable:
    """Operations of many ranks as columns in program order (round, rank,
    posting order): the columns of :class:`~.program.OpChunk` with ``round``
    per row and run CSR; dependencies are local (see :func:`table_dependencies`)."""

    round: np.ndarray
    rank: np.ndarray
    kind: np.ndarray
    peer: np.ndarray
    tag: np.ndarray
    buf: np.ndarray
    src_buf: np.ndarray
    run_ptr: np.ndarray
    runs: tuple   # run_dst, run_src, run_len, run_count, run_dst_stride, run_src_stride
    side: np.ndarray | None = None    # reduction sides (None: no reductions, every side -1)
    chain: np.ndarray | None = None   # control chain numbers (None: no chains)

    def __len__(self) -> int:
        return int(self.rank.shape[0])


def build_table(b: TableBuilder, buffers: dict[str, int]) -> OpTable:
    """The builder's rows in program order, blocks as canonical strided runs."""
    nb = b.nblocks
    cols = {k: [] for k in ("round", "rank", "kind", "peer", "tag", "buf", "src_buf", "seq", "pos", "cnt", "side",
                            "chain")}
    run_parts: list[tuple] = []
    for seq, call in enumerate(b.calls):
        rows = call.rank.shape[0]
        counts, runs = _canonical_table_runs(call.d, call.s, call.n, nb)
        cols["round"].append(call.round)
        cols["rank"].append(call.rank)
        cols["kind"].append(np.full(rows, call.kind, dtype=np.int8))
        cols["peer"].append(call.peer)
        cols["tag"].append(call.tag)
        cols["buf"].append(np.full(rows, buffers[call.buf], dtype=np.int16))
        cols["src_buf"].append(np.full(rows, buffers[call.src_buf], dtype=np.int16))
        cols["seq"].append(np.full(rows, seq, dtype=np.int64))
        cols["pos"].append(np.arange(rows, dtype=np.int64))
        cols["cnt"].append(counts)
        cols["side"].append(call.side.astype(np.int64))
        cols["chain"].append(call.chain)
        run_parts.append(runs)
    flat = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in cols.items()}
    order = np.lexsort((flat["pos"], flat["seq"], flat["rank"], flat["round"]))
    cnt = flat["cnt"]
    starts = np.concatenate(([0], np.cumsum(cnt)))[:-1]
    run_rows = _gather(starts[order], cnt[order])
    runs = tuple(np.concatenate([r[c] for r in run_parts])[run_rows] if run_parts else np.zeros(0, np.int64)
                 for c in range(6))
    run_ptr = np.concatenate(([0], np.cumsum(cnt[order]))).astype(np.int64)
    side, chain = flat["side"][order], flat["chain"][order]
    return OpTable(flat["round"][order], flat["rank"][order], flat["kind"][order].astype(np.int8),
                   flat["peer"][order], flat["tag"][order], flat["buf"][order].astype(np.int16),
                   flat["src_buf"][order].astype(np.int16), run_ptr, runs,
                   side.astype(np.int8) if (side >= 0).any() else None, chain if (chain >= 0).any() else None)


def _gather(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ptr = np.concatenate(([0], np.cumsum(counts)))[:-1]
    return np.repeat(starts - ptr, counts) + np.arange(total, dtype=np.int64)


def _expand_runs(tab: OpTable, ops: np.ndarray, which: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """``(op, block)`` of every block the runs of ``ops`` touch: ``which`` 0
    for the written / sent side (``run_dst``), 1 for the side read by a copy."""
    counts = tab.run_ptr[ops + 1] - tab.run_ptr[ops]
    runs = _gather(tab.run_ptr[ops], counts)
    run_op = np.repeat(ops, counts)
    start, length, pieces = tab.runs[which][runs], tab.runs[2][runs], tab.runs[3][runs]
    stride = tab.runs[4 + which][runs]
    size = length * pieces
    idx = _gather(np.zeros_like(size), size)
    r = np.repeat(np.arange(runs.shape[0]), size)
    block = (start[r] + (idx // length[r]) * stride[r] + idx % length[r]) % nb
    return run_op[r], block


def table_dependencies(tab: OpTable, nbuffers: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """The data-flow dependencies of every op of ``tab`` as a CSR of row ids
    (``dep_ptr``, ``dep_idx``, sorted per op): the rule of
    :class:`~.dataflow.RankBuilder`, vectorised over ranks.

    Every block an op touches is one access ``(rank, buffer, block)``; sorted
    by access key, then op, reads before writes, an op depends on the last
    earlier write of each block it reads or writes (read-after-write,
    write-after-write) and a write on every read since that write
    (write-after-read: each read gives one edge, to the next write of its
    block). A reduction reads ``src`` and reads and writes ``dst``, as
    ``RankBuilder.reduce`` records it. Control chains (``tab.chain``) add a
    dependency of each chained op on the one before it in its (rank, chain).
    The views-equal tests hold it equal to ``RankBuilder`` on every rank's
    ops (``schedules/tests/test_alltoall.py``, ``synth/tests``).
    """
    n = len(tab)
    ids = np.arange(n, dtype=np.int64)
    send, recv, copy, red = (tab.kind == KIND_CODES[k] for k in ("send", "recv", "copy", "reduce"))
    parts = []
    for ops, which, bufcol, write in ((ids[send], 0, tab.buf, 0), (ids[copy], 1, tab.src_buf, 0),
                                      (ids[red], 1, tab.src_buf, 0), (ids[red], 0, tab.buf, 0),
                                      (ids[recv], 0, tab.buf, 1), (ids[copy], 0, tab.buf, 1),
                                      (ids[red], 0, tab.buf, 1)):
        op, block = _expand_runs(tab, ops, which, nb)
        key = (tab.rank[op] * nbuffers + bufcol[op]) * nb + block
        parts.append((key, op, np.full(op.shape[0], write, dtype=np.int8)))
    key, op, write = (np.concatenate(x) for x in zip(*parts))
    order = np.lexsort((write, op, key))
    key, op, write = key[order], op[order], write[order].astype(bool)
    m = key.shape[0]
    chained = chain_dependencies(tab)
    if m == 0:
        key = op = np.zeros(1, dtype=np.int64)   # no block touched: one dummy access yields no edge
        write = np.zeros(1, dtype=bool)
        m = 1
    new = np.concatenate(([True], key[1:] != key[:-1]))
    seg = np.cumsum(new) - 1
    big = n + 1
    # last write at or before each access, per key (segmented running maximum)
    last = np.maximum.accumulate(seg * big + np.where(write, op + 1, 0)) - seg * big - 1
    prev = np.concatenate(([-1], last[:-1]))
    prev[new] = -1                          # strictly earlier in the same key
    # the next write strictly after each access, in the same key
    at = np.minimum.accumulate(np.where(write, np.arange(m), m)[::-1])[::-1]   # first write at or after
    after = np.concatenate((at[1:], [m]))
    valid = after < m
    valid[valid] = seg[after[valid]] == seg[valid]
    nxt = np.full(m, n, dtype=np.int64)
    nxt[valid] = op[after[valid]]
    dep_op = [op, op, nxt]
    dep_on = [prev, prev, op]
    keep = [(~write) & (prev >= 0), write & (prev >= 0) & (prev != op), (~write) & (nxt < n) & (nxt != op)]
    a = np.concatenate([x[k] for x, k in zip(dep_op, keep)] + [chained[0]])
    b = np.concatenate([x[k] for x, k in zip(dep_on, keep)] + [chained[1]])
    pairs = np.sort(a * big + b)
    if pairs.size:
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]   # np.unique, without its hash pass
    a, b = pairs // big, pairs % big
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=dep_ptr[1:])
    return dep_ptr, b


def chain_dependencies(tab: OpTable) -> tuple[np.ndarray, np.ndarray]:
    """``(op, depends_on)`` row pairs of the control chains: each op with a
    chain number ``>= 0`` on the op before it (in row order) of the same rank
    and chain."""
    if tab.chain is None:
        z = np.zeros(0, dtype=np.int64)
        return z, z
    rows = np.flatnonzero(tab.chain >= 0)
    order = np.lexsort((rows, tab.chain[rows], tab.rank[rows]))
    rows = rows[order]
    same = (tab.rank[rows[1:]] == tab.rank[rows[:-1]]) & (tab.chain[rows[1:]] == tab.chain[rows[:-1]])
    return rows[1:][same], rows[:-1][same]


#: Programs of at most this many ops stay cached in their pattern after the
#: first pass (a comparison reads one program twice: the model and the report).
TABLE_CACHE_OPS = 1 << 22


class TablePattern:
    """A rank-wise pattern recorded as one op table (:class:`TableBuilder`).

    ``record(b)`` records the operations of the ranks ``b.ranks`` (any subset)
    with NumPy; every view derives from it:

    - ``ops_for(rank)``: the table of that one rank, its dependencies by
      :class:`~.dataflow.RankBuilder` (exact, one rank's work: ``O(P)`` for
      the all-to-alls);
    - ``chunks(block_bytes)``: the table of every rank, its dependencies by
      :func:`table_dependencies` (the same rule, vectorised), split by round:
      no Python object per operation.

    The table holds the whole program (``O(P²)`` rows for an all-to-all), so
    this is the form for the P a comparison or the verifier reaches (a few
    thousand); the circulant all-to-alls stream any P.
    """

    #: the whole table is built before the first round is yielded
    streams = False

    # the Pattern protocol (pattern.py) from one rank's ops, without building the table: P × rank 0's
    # ops, and that spread over rank 0's rounds (ranks differ: direct's rank t receives in round t only)
    _rank0_shape = OpsPattern._rank0_shape
    op_count = OpsPattern.op_count
    round_sizes = OpsPattern.round_sizes

    def __init__(self, p: int, nblocks: int, record: Callable[[TableBuilder], None]):
        self.p, self.nblocks = p, nblocks
        self._record = record
        self._ops: list[list[Op]] | None = None
        self._program = None
        self._buffers: tuple[str, ...] | None = None

    def _builder(self, ranks) -> TableBuilder:
        b = TableBuilder(np.asarray(ranks, dtype=np.int64), self.nblocks)
        self._record(b)
        return b

    def buffers(self) -> tuple[str, ...]:
        """Buffer names in call order, ``data`` first (every call is recorded
        for any set of ranks, so the names do not depend on it)."""
        if self._buffers is None:
            names = {"data": None}
            for call in self._builder(np.zeros(0, dtype=np.int64)).calls:
                names.setdefault(call.buf)
                names.setdefault(call.src_buf)
            self._buffers = tuple(names)
        return self._buffers

    def _index(self) -> dict[str, int]:
        return {name: k for k, name in enumerate(self.buffers())}

    def ops_for(self, rank: int) -> list[Op]:
        if self._ops is not None:
            return self._ops[rank]
        names = self.buffers()
        tab = build_table(self._builder([rank]), self._index())
        b = RankBuilder()
        send, recv, red = KIND_CODES["send"], KIND_CODES["recv"], KIND_CODES["reduce"]
        runs = [c.tolist() for c in tab.runs]
        ptr = tab.run_ptr.tolist()
        sides = tab.side.tolist() if tab.side is not None else [-1] * len(tab)
        chains = tab.chain.tolist() if tab.chain is not None else [-1] * len(tab)
        last: dict[int, int] = {}   # chain -> this rank's previous op in it
        for row, (kind, rnd, peer, tag, buf, sbuf, side, chain) in enumerate(zip(
                tab.kind.tolist(), tab.round.tolist(), tab.peer.tolist(), tab.tag.tolist(), tab.buf.tolist(),
                tab.src_buf.tolist(), sides, chains)):
            dst, src = _row_blocks(runs, ptr[row], ptr[row + 1], self.nblocks)
            after = (last[chain],) if chain >= 0 and chain in last else ()
            if kind == send:
                b.send(peer, dst, buf=names[buf], round=rnd, tag=tag, after=after)
            elif kind == recv:
                b.recv(peer, src, buf=names[buf], into=dst, round=rnd, tag=tag, after=after)
            elif kind == red:
                b.reduce(dst, dst=names[buf], src=names[sbuf], side=LEFT if side == LEFT_SIDE else RIGHT,
                         round=rnd, after=after)
            else:
                b.copy(dst, dst=names[buf], src=names[sbuf], src_blocks=src, round=rnd, after=after)
            if chain >= 0:
                last[chain] = row
        return b.ops

    def all_ops(self) -> list[list[Op]]:
        if self._ops is None:
            self._ops = [self.ops_for(r) for r in range(self.p)]
        return self._ops

    def table(self) -> tuple[OpTable, np.ndarray, np.ndarray]:
        """Every rank's table and its dependencies ``(table, dep_ptr, dep_idx)``."""
        if self._program is not None:
            return self._program
        tab = build_table(self._builder(np.arange(self.p, dtype=np.int64)), self._index())
        out = (tab, *table_dependencies(tab, len(self.buffers()), self.nblocks))
        if len(tab) <= TABLE_CACHE_OPS:
            self._program = out
        return out

    def chunks(self, block_bytes: np.ndarray) -> Iterator[OpChunk]:
        nb = len(block_bytes)
        if nb != self.nblocks:
            raise ScheduleError(f"op table: {self.nblocks} blocks, block_bytes gives {nb}, expected equal")
        tab, dep_ptr, dep_idx = self.table()
        cuts = np.flatnonzero(np.diff(tab.round)) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(tab)]))):
            lo, hi = int(lo), int(hi)
            if hi <= lo:
                continue
            r0, r1 = int(tab.run_ptr[lo]), int(tab.run_ptr[hi])
            run_ptr = tab.run_ptr[lo:hi + 1] - r0
            runs = [c[r0:r1] for c in tab.runs]
            d0, d1 = int(dep_ptr[lo]), int(dep_ptr[hi])
            nbytes = run_bytes(block_bytes, run_ptr, runs[0], runs[2], runs[3], runs[4])
            yield OpChunk(int(tab.round[lo]), lo, tab.rank[lo:hi], tab.kind[lo:hi], tab.peer[lo:hi],
                          tab.tag[lo:hi], tab.buf[lo:hi], tab.src_buf[lo:hi],
                          np.full(hi - lo, -1, dtype=np.int8) if tab.side is None else tab.side[lo:hi],
                          nbytes, run_ptr, *runs,
                          dep_ptr[lo:hi + 1] - d0, dep_idx[d0:d1], nblocks=nb)


def _row_blocks(runs: list[list[int]], lo: int, hi: int, nb: int):
    """Blocks written and read by the op whose runs are ``lo:hi`` (run
    columns as lists), in order, as tuples (the per-rank descriptions these
    tables replaced gave tuples)."""
    if hi == lo + 1 and runs[3][lo] == 1:
        d, s, n = runs[0][lo], runs[1][lo], runs[2][lo]
        if d + n <= nb and s + n <= nb:
            return tuple(range(d, d + n)), tuple(range(s, s + n))
    dst: list[int] = []
    src: list[int] = []
    for j in range(lo, hi):
        d0, s0, n, count, sd, ss = (c[j] for c in runs)
        for c in range(count):
            d, s = d0 + c * sd, s0 + c * ss
            dst.extend((d + k) % nb for k in range(n))
            src.extend((s + k) % nb for k in range(n))
    return tuple(dst), tuple(src)
