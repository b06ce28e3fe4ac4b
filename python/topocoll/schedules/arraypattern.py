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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..errors import ScheduleError
from .dataflow import RankBuilder
from .ops import LEFT, RIGHT, Op
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
